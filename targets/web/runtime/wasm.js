// The wasm provider: the edgepack C core (edgepack.wasm, clang wasm32 + SIMD128, no imports) runs one .epk plan
// per instance, in the instance's own memory (core.js decodes the core's ABI). On more than one thread, the threaded
// core (edgepack-threads.wasm) runs it on a shared memory with module Workers (wasm_worker.js) beside the page's.

import { instantiateCore, openPlan } from "./core.js";

/** Compiles the core once; every wasm partition instantiates it. */
export function compileCore(bytes) {
  return WebAssembly.compile(bytes);
}

/** Opens `planBytes` (an ArrayBuffer) in a new instance of `module` (the threaded core where `threads` > 1, its
    loops then split over this thread and threads - 1 Workers); `label` names the plan in errors. */
export async function openWasmPartition(module, planBytes, label, threads = 1) {
  const core = await instantiateCore(module);
  let plan;
  try {
    plan = openPlan(core.exports, new Uint8Array(planBytes), core.memory);
  } catch (error) {
    const detail = error.stage === "plan" ? ` (${error.message})` : `: ${error.message}`;
    throw new Error(`edgepack: ${label} is not a valid .epk plan${detail}; rebuild the bundle or re-copy its model folder`);
  }
  const workers = [];
  const startWorker = (number, stackTop, pool) => new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./wasm_worker.js", import.meta.url), { type: "module" });
    workers.push(worker);
    worker.onmessage = () => resolve();
    worker.onerror = (event) => reject(new Error(`edgepack: worker ${number} of ${label} did not start (${event.message ?? "no message"}); serve runtime/wasm_worker.js from the page's origin, or open the session with threads: 1`));
    worker.postMessage({ module, memory: core.memory, number, stackTop, pool });
  });
  if (threads > 1) {
    try {
      await plan.addWorkers(threads, startWorker);
    } catch (error) {
      for (const worker of workers) worker.terminate();
      throw error;
    }
  }
  return {
    inputs: plan.inputs,
    outputs: plan.outputs,
    /** feeds: { name: TypedArray } of the plan's dtypes and sizes; resolves to { name: { data, dims } }. */
    async run(feeds) {
      for (const tensor of plan.inputs) {
        const data = feeds[tensor.name];
        plan.bytes(tensor).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      }
      try {
        plan.run();
      } catch (error) {
        throw new Error(`edgepack: ${label} failed while running: ${error.message}`);
      }
      const results = {};
      for (const tensor of plan.outputs) results[tensor.name] = { data: plan.read(tensor), dims: tensor.dims };
      return results;
    },
    destroy() {
      for (const worker of workers) worker.terminate();
    },
  };
}
