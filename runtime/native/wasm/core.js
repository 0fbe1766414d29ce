// The wasm core's ABI, decoded in this one module: where a plan, the result words and the session go in an
// instance's memory, the layout of ep_tensor_info on wasm32 (edgepack.h), and opening, running and reading one plan.
// The web runtime (its wasm.js), node's ep_run.mjs and the node benchmark all go through it.

const ALIGN = 64;
const INFO_BYTES = 88; // ep_tensor_info on wasm32: name, name_len, dtype, rank, dims[8] (int64), bytes, data
const RESULT_BYTES = 16; // the out-words ep_required_bytes and ep_open write, before the info record
// Typed arrays of each dtype; float16, bfloat16, float8 and the packed sub-byte dtypes read as their raw codes.
export const ARRAYS = { 1: Float32Array, 2: Uint8Array, 3: Int8Array, 4: Uint16Array, 5: Int16Array, 6: Int32Array,
                        7: BigInt64Array, 9: Uint8Array, 10: Uint16Array, 11: Float64Array, 12: Uint32Array,
                        13: BigUint64Array, 16: Uint16Array, 17: Uint8Array, 18: Uint8Array, 19: Uint8Array,
                        20: Uint8Array, 21: Uint8Array, 22: Uint8Array, 23: Uint8Array, 25: Uint8Array, 26: Uint8Array };

const align = (value) => Math.ceil(value / ALIGN) * ALIGN;

/** An error of the core: `stage` is "plan" (refused before opening), "open" or "run". */
export class CoreError extends Error {
  constructor(stage, message) {
    super(message);
    this.stage = stage;
  }
}

/** Opens `plan` (a Uint8Array of .epk bytes) in `core`, the exports of a fresh instance of the core module. */
export function openPlan(core, plan) {
  const memory = core.memory;
  const planAt = align(core.__heap_base.value);
  const resultAt = align(planAt + plan.length);
  const sessionAt = align(resultAt + RESULT_BYTES + INFO_BYTES);
  const grow = (end) => {
    if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
  };
  const word = (at) => new DataView(memory.buffer).getUint32(at, true);
  const text = (pointer, length) => {
    const bytes = new Uint8Array(memory.buffer, pointer);
    return new TextDecoder().decode(bytes.slice(0, length ?? bytes.indexOf(0)));
  };
  grow(sessionAt);
  new Uint8Array(memory.buffer, planAt, plan.length).set(plan);
  let status = core.ep_required_bytes(planAt, plan.length, resultAt);
  if (status !== 0) throw new CoreError("plan", text(core.ep_status_name(status)));
  const needed = word(resultAt);
  grow(sessionAt + needed);
  status = core.ep_open(planAt, plan.length, sessionAt, needed, resultAt);
  if (status !== 0) throw new CoreError("open", text(core.ep_open_error(sessionAt, needed)));
  const session = word(resultAt);

  const info = (getter, index) => {
    const at = resultAt + RESULT_BYTES;
    getter(session, index, at);
    const view = new DataView(memory.buffer);
    const rank = view.getInt32(at + 12, true);
    const dims = [];
    for (let d = 0; d < rank; d++) dims.push(Number(view.getBigInt64(at + 16 + 8 * d, true)));
    return { name: text(view.getUint32(at, true), view.getUint32(at + 4, true)), dtype: view.getInt32(at + 8, true),
             dims, bytes: view.getUint32(at + 80, true), data: view.getUint32(at + 84, true) };
  };
  const inputs = Array.from({ length: core.ep_input_count(session) }, (_, i) => info(core.ep_input, i));
  const outputs = Array.from({ length: core.ep_output_count(session) }, (_, i) => info(core.ep_output, i));
  return {
    inputs,
    outputs,
    /** The bytes of `tensor` (an entry of inputs or outputs) in the instance's memory, to fill or to copy. */
    bytes: (tensor) => new Uint8Array(memory.buffer, tensor.data, tensor.bytes),
    /** A copy of an output as its typed array. */
    read: (tensor) => new ARRAYS[tensor.dtype](memory.buffer.slice(tensor.data, tensor.data + tensor.bytes)),
    run() {
      const code = core.ep_run(session);
      if (code !== 0) throw new CoreError("run", text(core.ep_error(session)));
    },
  };
}
