// edgepack's side: the wasm32 build of the C core, instantiated afresh per session through the core's one ABI module
// (runtime/native/wasm/core.js): inputs are copied into the arena, outputs copied out.
import { openPlan as openCorePlan } from "../../runtime/native/wasm/core.js";

// One plan opened in a fresh instance of `module` (a compiled WebAssembly.Module of the core).
export function openPlan(module, plan) {
  const opened = openCorePlan(new WebAssembly.Instance(module, {}).exports, plan);
  // feeds: name -> { bytes: Uint8Array } (raw little-endian data); returns name -> typed array (a copy)
  return (feeds) => {
    for (const tensor of opened.inputs) {
      const { bytes } = feeds[tensor.name];
      if (bytes.length !== tensor.bytes) throw new Error(`input ${tensor.name} has ${bytes.length} bytes`);
      opened.bytes(tensor).set(bytes);
    }
    opened.run();
    const results = {};
    for (const tensor of opened.outputs) results[tensor.name] = opened.read(tensor);
    return results;
  };
}
