// edgepack's side: the wasm32 build of the C core, instantiated afresh per session (the same host calls as
// runtime/native/wasm/ep_run.mjs, without its .npy files: inputs are copied into the arena, outputs copied out).
const INFO_BYTES = 88; // ep_tensor_info on wasm32: name, name_len, dtype, rank, dims[8] (int64), bytes, data
const ARRAYS = { 1: Float32Array, 2: Uint8Array, 3: Int8Array, 6: Int32Array, 7: BigInt64Array, 9: Uint8Array };

const align = (value, to) => Math.ceil(value / to) * to;

// One plan opened in a fresh instance of `module` (a compiled WebAssembly.Module of the core).
export function openPlan(module, plan) {
  const core = new WebAssembly.Instance(module, {}).exports;
  const memory = core.memory;
  const planAt = align(core.__heap_base.value, 64);
  const scratchAt = align(planAt + plan.length, 64); // 8 bytes for results, then an info record
  const sessionAt = align(scratchAt + 16 + INFO_BYTES, 64);
  const grow = (end) => {
    if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
  };
  const text = (ptr) => {
    const bytes = new Uint8Array(memory.buffer, ptr);
    return Buffer.from(bytes.subarray(0, bytes.indexOf(0))).toString();
  };
  grow(sessionAt);
  new Uint8Array(memory.buffer, planAt, plan.length).set(plan);
  let status = core.ep_required_bytes(planAt, plan.length, scratchAt);
  if (status !== 0) throw new Error(`ep_required_bytes: status ${status}`);
  const needed = new DataView(memory.buffer).getUint32(scratchAt, true);
  grow(sessionAt + needed);
  status = core.ep_open(planAt, plan.length, sessionAt, needed, scratchAt);
  if (status !== 0) throw new Error(`ep_open: status ${status}: ${text(core.ep_open_error(sessionAt, needed))}`);
  const session = new DataView(memory.buffer).getUint32(scratchAt, true);

  const info = (getter, index) => {
    const at = scratchAt + 16;
    getter(session, index, at);
    const view = new DataView(memory.buffer);
    const rank = view.getInt32(at + 12, true);
    const dims = [];
    for (let d = 0; d < rank; d++) dims.push(Number(view.getBigInt64(at + 16 + 8 * d, true)));
    const name = Buffer.from(new Uint8Array(memory.buffer, view.getUint32(at, true), view.getUint32(at + 4, true)))
      .toString();
    return { name, dtype: view.getInt32(at + 8, true), dims, bytes: view.getUint32(at + 80, true),
             data: view.getUint32(at + 84, true) };
  };
  const inputs = Array.from({ length: core.ep_input_count(session) }, (_, i) => info(core.ep_input, i));
  const outputs = Array.from({ length: core.ep_output_count(session) }, (_, i) => info(core.ep_output, i));
  const heap = new Uint8Array(memory.buffer); // the memory never grows after ep_open

  // feeds: name -> { bytes: Uint8Array } (raw little-endian data); returns name -> typed array (a copy)
  return (feeds) => {
    for (const tensor of inputs) {
      const { bytes } = feeds[tensor.name];
      if (bytes.length !== tensor.bytes) throw new Error(`input ${tensor.name} has ${bytes.length} bytes`);
      heap.set(bytes, tensor.data);
    }
    const code = core.ep_run(session);
    if (code !== 0) throw new Error(`ep_run: status ${code}: ${text(core.ep_error(session))}`);
    const results = {};
    for (const tensor of outputs) {
      const Typed = ARRAYS[tensor.dtype];
      results[tensor.name] = new Typed(memory.buffer, tensor.data, tensor.bytes / Typed.BYTES_PER_ELEMENT).slice();
    }
    return results;
  };
}
