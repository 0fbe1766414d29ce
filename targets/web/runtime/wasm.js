// The wasm provider: the edgepack C core (edgepack.wasm, clang wasm32 + SIMD128, no imports) runs one .epk plan
// per instance, in the instance's own memory (core.js decodes the core's ABI).

import { openPlan } from "./core.js";

/** Compiles the core once; every wasm partition instantiates it. */
export function compileCore(bytes) {
  return WebAssembly.compile(bytes);
}

/** Opens `planBytes` (an ArrayBuffer) in a new instance of `module`; `label` names the plan in errors. */
export async function openWasmPartition(module, planBytes, label) {
  const instance = await WebAssembly.instantiate(module, {});
  let plan;
  try {
    plan = openPlan(instance.exports, new Uint8Array(planBytes));
  } catch (error) {
    const detail = error.stage === "plan" ? ` (${error.message})` : `: ${error.message}`;
    throw new Error(`edgepack: ${label} is not a valid .epk plan${detail}; rebuild the bundle or re-copy its model folder`);
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
    destroy() {},
  };
}
