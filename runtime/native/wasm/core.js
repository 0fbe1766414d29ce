// The wasm core's ABI, decoded in this one module: where a plan, the result words and the session go in an
// instance's memory, the layout of ep_tensor_info on wasm32 (edgepack.h), and opening, running and reading one plan.
// The web runtime (its wasm.js), node's ep_run.mjs and the node benchmark all go through it. The threaded core
// (build.py's wasm_core(threads=True)) imports a shared memory and runs its parallel loops on workers (worker.js).

const ALIGN = 64;
const INFO_BYTES = 88; // ep_tensor_info on wasm32: name, name_len, dtype, rank, dims[8] (int64), bytes, data
const RESULT_BYTES = 16; // the out-words ep_required_bytes and ep_open write, before the info record
// Typed arrays of each dtype; float16, bfloat16, float8 and the packed sub-byte dtypes read as their raw codes.
export const ARRAYS = { 1: Float32Array, 2: Uint8Array, 3: Int8Array, 4: Uint16Array, 5: Int16Array, 6: Int32Array,
                        7: BigInt64Array, 9: Uint8Array, 10: Uint16Array, 11: Float64Array, 12: Uint32Array,
                        13: BigUint64Array, 16: Uint16Array, 17: Uint8Array, 18: Uint8Array, 19: Uint8Array,
                        20: Uint8Array, 21: Uint8Array, 22: Uint8Array, 23: Uint8Array, 25: Uint8Array, 26: Uint8Array };

// The threaded core's memory, as build.py's WASM_THREADS_LINK declares it: 16 to 32768 pages, shared.
const THREADED_MEMORY = { initial: 16, maximum: 32768, shared: true };

const align = (value) => Math.ceil(value / ALIGN) * ALIGN;
const grow = (memory, end) => {
  if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
};

/** Whether `module` (a compiled core) is the threaded core: it imports its memory. */
export const isThreaded = (module) => WebAssembly.Module.imports(module).some((entry) => entry.kind === "memory");

/** A fresh instance of `module` for one plan: { exports, memory }; the threaded core's on a new shared memory. */
export async function instantiateCore(module) {
  const memory = isThreaded(module) ? new WebAssembly.Memory(THREADED_MEMORY) : undefined;
  const instance = await WebAssembly.instantiate(module, memory ? { env: { memory } } : {});
  return { exports: instance.exports, memory: memory ?? instance.exports.memory };
}

/** An error of the core: `stage` is "plan" (refused before opening), "open" or "run". */
export class CoreError extends Error {
  constructor(stage, message) {
    super(message);
    this.stage = stage;
  }
}

/** Opens `plan` (a Uint8Array of .epk bytes) in `core`, the exports of a fresh instance of the core module, whose
    memory is `memory`. */
export function openPlan(core, plan, memory = core.memory) {
  const planAt = align(core.__heap_base.value);
  const resultAt = align(planAt + plan.length);
  const sessionAt = align(resultAt + RESULT_BYTES + INFO_BYTES);
  const word = (at) => new DataView(memory.buffer).getUint32(at, true);
  const text = (pointer, length) => {
    const bytes = new Uint8Array(memory.buffer, pointer);
    return new TextDecoder().decode(bytes.slice(0, length ?? bytes.indexOf(0)));
  };
  grow(memory, sessionAt);
  new Uint8Array(memory.buffer, planAt, plan.length).set(plan);
  let status = core.ep_required_bytes(planAt, plan.length, resultAt);
  if (status !== 0) throw new CoreError("plan", text(core.ep_status_name(status)));
  const needed = word(resultAt);
  grow(memory, sessionAt + needed);
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
    /** A copy of an output as its typed array (on an ArrayBuffer of its own, never the shared memory's). */
    read: (tensor) => new ARRAYS[tensor.dtype](new Uint8Array(memory.buffer, tensor.data, tensor.bytes).slice().buffer),
    /** Runs the plan's parallel loops on `workers` threads (the threaded core only): this one, and workers - 1 that
        `start(number, stackTop, pool)` starts, each an instance of the same module on the same memory that sets its
        __stack_pointer to stackTop and calls ep_wasm_worker(pool, number); it resolves when the worker is about to. */
    async addWorkers(workers, start) {
      const stack = align(core.__heap_base.value - core.__data_end.value);
      const pool = align(sessionAt + needed);
      const poolBytes = ALIGN + align(core.ep_worker_scratch_bytes(session)) * (workers - 1);
      const stacksAt = align(pool + poolBytes);
      grow(memory, stacksAt + stack * (workers - 1));
      const started = [];
      for (let number = 1; number < workers; number++) started.push(start(number, stacksAt + stack * number, pool));
      await Promise.all(started);
      const code = core.ep_wasm_threads(session, workers, pool, poolBytes);
      if (code !== 0) throw new CoreError("open", text(core.ep_error(session)));
    },
    run() {
      const code = core.ep_run(session);
      if (code !== 0) throw new CoreError("run", text(core.ep_error(session)));
    },
  };
}
