// The wasm provider: the edgepack C core (edgepack.wasm, clang wasm32 + SIMD128, no imports) runs one .epk plan
// per instance, in the instance's own memory: plan, then the session and its arena (EPK.md, edgepack.h).

const ALIGN = 64;
const INFO_BYTES = 88; // ep_tensor_info on wasm32: name, name_len, dtype, rank, dims[8] (int64), bytes, data
const ARRAYS = { 1: Float32Array, 2: Uint8Array, 3: Int8Array, 6: Int32Array, 7: BigInt64Array, 9: Uint8Array };

const align = (value) => Math.ceil(value / ALIGN) * ALIGN;

function cString(memory, pointer) {
  const bytes = new Uint8Array(memory.buffer, pointer);
  return new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(0)));
}

/** Compiles the core once; every wasm partition instantiates it. */
export function compileCore(bytes) {
  return WebAssembly.compile(bytes);
}

/** Opens `planBytes` (an ArrayBuffer) in a new instance of `module`; `label` names the plan in errors. */
export async function openWasmPartition(module, planBytes, label) {
  const instance = await WebAssembly.instantiate(module, {});
  const core = instance.exports;
  const memory = core.memory;
  const planAt = align(core.__heap_base.value);
  const scratchAt = align(planAt + planBytes.byteLength);
  const sessionAt = align(scratchAt + 16 + INFO_BYTES);
  const grow = (end) => {
    if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
  };
  const word = (at) => new DataView(memory.buffer).getUint32(at, true);
  grow(sessionAt);
  new Uint8Array(memory.buffer, planAt, planBytes.byteLength).set(new Uint8Array(planBytes));
  let status = core.ep_required_bytes(planAt, planBytes.byteLength, scratchAt);
  if (status !== 0) {
    throw new Error(`edgepack: ${label} is not a valid .epk plan (${cString(memory, core.ep_status_name(status))}); rebuild the bundle or re-copy its model folder`);
  }
  const needed = word(scratchAt);
  grow(sessionAt + needed);
  status = core.ep_open(planAt, planBytes.byteLength, sessionAt, needed, scratchAt);
  if (status !== 0) {
    throw new Error(`edgepack: ${label} is not a valid .epk plan: ${cString(memory, core.ep_open_error(sessionAt, needed))}; rebuild the bundle or re-copy its model folder`);
  }
  const session = word(scratchAt);

  function info(getter, index) {
    const at = scratchAt + 16;
    getter(session, index, at);
    const view = new DataView(memory.buffer);
    const rank = view.getInt32(at + 12, true);
    const dims = [];
    for (let d = 0; d < rank; d++) dims.push(Number(view.getBigInt64(at + 16 + 8 * d, true)));
    const nameAt = view.getUint32(at, true);
    const name = new TextDecoder().decode(new Uint8Array(memory.buffer, nameAt, view.getUint32(at + 4, true)).slice());
    return { name, dtype: view.getInt32(at + 8, true), dims, bytes: view.getUint32(at + 80, true), data: view.getUint32(at + 84, true) };
  }
  const inputs = Array.from({ length: core.ep_input_count(session) }, (_, i) => info(core.ep_input, i));
  const outputs = Array.from({ length: core.ep_output_count(session) }, (_, i) => info(core.ep_output, i));

  return {
    inputs,
    outputs,
    /** feeds: { name: TypedArray } of the plan's dtypes and sizes; resolves to { name: { data, dims } }. */
    async run(feeds) {
      for (const tensor of inputs) {
        const data = feeds[tensor.name];
        new Uint8Array(memory.buffer, tensor.data, tensor.bytes).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      }
      const code = core.ep_run(session);
      if (code !== 0) throw new Error(`edgepack: ${label} failed while running: ${cString(memory, core.ep_error(session))}`);
      const results = {};
      for (const tensor of outputs) {
        const Array = ARRAYS[tensor.dtype];
        results[tensor.name] = { data: new Array(memory.buffer.slice(tensor.data, tensor.data + tensor.bytes)), dims: tensor.dims };
      }
      return results;
    },
    destroy() {},
  };
}
