// createSession for an edgepack web bundle: fetches the plans, opens each partition on WebGPU (when asked for and an
// adapter exists, and its kernels cover the plan) or on the wasm core, and runs them in order. A page fetches only
// what it runs: the WebGPU executor (webgpu.js and its modules, the WGSL kernels) once a device is open, the wasm
// core once a partition runs on it.

import { compileCore, openWasmPartition } from "./wasm.js";

const PROVIDERS = ["webgpu", "wasm"];
// float16, bfloat16 and float8 values are their bit patterns (targets/web/typings.py declares the same).
const ARRAY_TYPES = {
  float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, int8: Int8Array, bool: Uint8Array,
  float64: Float64Array, int16: Int16Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  float16: Uint16Array, bfloat16: Uint16Array, float8_e4m3fn: Uint8Array, float8_e4m3fnuz: Uint8Array,
  float8_e5m2: Uint8Array, float8_e5m2fnuz: Uint8Array,
};

function providerList(providers) {
  if (providers === undefined || providers === "auto") return PROVIDERS;
  if (!Array.isArray(providers) || providers.length === 0 || providers.some((p) => !PROVIDERS.includes(p))) {
    throw new Error(`edgepack: providers must be "auto" or a list of ${PROVIDERS.map((p) => JSON.stringify(p)).join(", ")}; got ${JSON.stringify(providers)}`);
  }
  return providers;
}

function fileLoader(base, cacheName) {
  return async (path) => {
    const url = new URL(path, base);
    const cache = cacheName && globalThis.caches ? await caches.open(cacheName) : null;
    let response = cache ? await cache.match(url) : undefined;
    if (!response) {
      try {
        response = await fetch(url);
      } catch (error) {
        throw new Error(`edgepack: could not fetch ${path} from ${url} (${error.message}); serve the whole bundle folder over http(s)`);
      }
      if (!response.ok) {
        throw new Error(`edgepack: could not load ${path}: ${url} answered HTTP ${response.status}; copy the whole bundle folder, ${path} included`);
      }
      if (cache) await cache.put(url, response.clone());
    }
    return response;
  };
}

// A software adapter (SwiftShader, a CPU rasterizer) runs a plan slower than the wasm core on the same CPU:
// ppocr-cls in headless Chromium took 1,131 ms for its first run there, 92 to 146 ms on wasm.
function softwareAdapter(info, adapter) {
  const fallback = Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter);
  const names = `${info.vendor ?? ""} ${info.architecture ?? ""} ${info.description ?? ""}`.toLowerCase();
  return fallback || names.includes("swiftshader") || names.includes("llvmpipe") || names.includes("lavapipe");
}

async function openGpu(auto) {
  if (!globalThis.navigator?.gpu) return { reason: "this browser has no navigator.gpu" };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { reason: "navigator.gpu.requestAdapter() gave no adapter" };
  const info = adapter.info ?? {};
  if (auto && softwareAdapter(info, adapter)) {
    return { reason: `the WebGPU adapter is a software fallback (${info.vendor ?? ""} ${info.architecture ?? ""}), slower than wasm on this CPU; "auto" skips it (providers ["webgpu", "wasm"] uses it)` };
  }
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
      maxBufferSize: adapter.limits.maxBufferSize,
      maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
    },
  });
  const adapterInfo = {
    vendor: info.vendor ?? "", architecture: info.architecture ?? "", device: info.device ?? "",
    description: info.description ?? "", isFallbackAdapter: Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter),
  };
  return { device, adapterInfo };
}

function checkFeeds(model, feeds) {
  if (feeds === null || typeof feeds !== "object") throw new Error("edgepack: run() takes an object of inputs: { name: { data, dims } }");
  const names = model.inputs.map((input) => input.name);
  const unknown = Object.keys(feeds).filter((name) => !names.includes(name));
  const missing = names.filter((name) => !(name in feeds));
  if (unknown.length || missing.length) {
    throw new Error(`edgepack: the inputs do not match the model's: missing ${JSON.stringify(missing)}, unknown ${JSON.stringify(unknown)}; feed exactly ${JSON.stringify(names)}`);
  }
  const values = {};
  for (const input of model.inputs) {
    const { data, dims } = feeds[input.name] ?? {};
    const Array = ARRAY_TYPES[input.dtype];
    if (!(data instanceof Array)) {
      throw new Error(`edgepack: input "${input.name}" must be a ${Array.name} (${input.dtype}), got ${data?.constructor?.name ?? typeof data}`);
    }
    if (!globalThis.Array.isArray(dims) || dims.length !== input.dims.length || dims.some((d, i) => d !== input.dims[i])) {
      throw new Error(`edgepack: input "${input.name}" must have dims ${JSON.stringify(input.dims)} (the shape the bundle was built for), got ${JSON.stringify(dims)}`);
    }
    const count = input.dims.reduce((a, b) => a * b, 1);
    if (data.length !== count) throw new Error(`edgepack: input "${input.name}" has ${data.length} elements; dims ${JSON.stringify(input.dims)} need ${count}`);
    values[input.name] = { data, dims };
  }
  return values;
}

// The wasm core's threads: `threads` when given, else half the logical cores, at most 4 (onnxruntime-web's
// default). More than one needs shared memory, which a page has only when cross-origin isolated (served with
// Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp); without it the session runs
// on one thread and says why.
function wasmThreads(threads) {
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new Error(`edgepack: threads must be a whole number, 1 or more; got ${JSON.stringify(threads)}`);
  }
  const wanted = threads ?? Math.min(4, Math.ceil((globalThis.navigator?.hardwareConcurrency ?? 1) / 2));
  if (wanted > 1 && !(globalThis.crossOriginIsolated && typeof SharedArrayBuffer === "function")) {
    return { count: 1, reason: `the page is not cross-origin isolated, so the wasm core has no shared memory for ${wanted} threads; serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp` };
  }
  return { count: wanted };
}

/** Opens the bundle described by `model` (index.js) whose files live under `base`. */
export async function openSession(model, base, options = {}) {
  const auto = options.providers === undefined || options.providers === "auto";
  const wanted = providerList(options.providers);
  const load = fileLoader(options.baseUrl ? new URL(options.baseUrl, base) : base, options.cache ? `edgepack-${model.name}` : null);
  const wantsGpu = wanted.includes("webgpu") && model.partitions.some((p) => p.provider === "webgpu");
  const threads = wasmThreads(options.threads);
  let core = null;
  const corePath = threads.count > 1 ? model.threadedCore : model.core;
  const wasmCore = () => (core ??= load(corePath).then((r) => r.arrayBuffer()).then(compileCore));
  // fetched now where a partition is sure to run on wasm (a failure surfaces where that partition opens)
  if (!wantsGpu || model.partitions.some((p) => p.provider !== "webgpu")) wasmCore().catch(() => {});
  const plans = Promise.all(model.partitions.map((p) => load(p.plan).then((r) => r.arrayBuffer())));
  const gpu = wantsGpu ? await openGpu(auto) : { reason: "webgpu was not asked for" };
  const gpuModule = gpu.device ? await import("./webgpu.js") : null;
  const partitions = [];
  for (const [index, part] of model.partitions.entries()) {
    const label = `${part.plan} (partition ${part.id})`;
    const planBytes = (await plans)[index];
    let reason = part.provider === "webgpu" ? gpu.reason : undefined;
    if (part.provider === "webgpu" && gpuModule) {
      const plan = gpuModule.parsePlan(planBytes, label);
      reason = gpuModule.gpuRefusal(plan) ?? undefined;
      if (!reason) {
        const loadKernel = (file) => load(`${model.kernels}/${file}`).then((r) => r.text());
        const runner = await gpuModule.createGpuPartition(gpu.device, plan, loadKernel);
        partitions.push({ id: part.id, provider: "webgpu", planned: part.provider, inputs: part.inputs, runner });
        continue;
      }
    }
    if (!wanted.includes("wasm")) {
      throw new Error(`edgepack: partition ${part.id} cannot run on ${wanted.join(", ")} (${reason ?? `it was built for ${part.provider}`}); add "wasm" to providers`);
    }
    const runner = await openWasmPartition(await wasmCore(), planBytes, label, threads.count);
    partitions.push({ id: part.id, provider: "wasm", planned: part.provider, reason, inputs: part.inputs, runner });
  }
  return {
    inputs: model.inputs,
    outputs: model.outputs,
    providers: partitions.map((p) => p.provider),
    partitions: partitions.map(({ id, provider, planned, reason }) => ({ id, provider, planned, reason })),
    adapter: partitions.some((p) => p.provider === "webgpu") ? gpu.adapterInfo : null,
    threads: partitions.some((p) => p.provider === "wasm") ? { ...threads } : null,
    async run(feeds) {
      const values = checkFeeds(model, feeds);
      for (const part of partitions) {
        const inputs = Object.fromEntries(part.inputs.map((name) => [name, values[name].data]));
        Object.assign(values, await part.runner.run(inputs));
      }
      return Object.fromEntries(model.outputs.map((output) => [output.name, values[output.name]]));
    },
    release() {
      for (const part of partitions) part.runner.destroy();
      gpu.device?.destroy();
    },
  };
}
