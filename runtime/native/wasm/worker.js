// A worker of the threaded wasm core, in a page (a module Worker) or in node (worker_threads): an instance of the
// core on the plan's shared memory, with a stack of its own, that runs its share of every parallel loop
// (ep_wasm_worker) until its host terminates it.
const port = globalThis.WorkerGlobalScope ? globalThis : (await import("node:worker_threads")).parentPort;

port.addEventListener("message", async ({ data: { module, memory, number, stackTop, pool } }) => {
  const { exports } = await WebAssembly.instantiate(module, { env: { memory } });
  exports.__stack_pointer.value = stackTop;
  port.postMessage("ready");
  exports.ep_wasm_worker(pool, number);
}, { once: true });
