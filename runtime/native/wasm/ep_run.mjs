// ep_run for the wasm32 build, in node: the same command line as the native ep_run. With --threads N (N > 1, the
// threaded core), the plan's parallel loops run on this thread and N - 1 worker threads (worker.js).
// usage: node ep_run.mjs [--threads N] CORE.wasm PLAN.epk OUT_DIR INPUT.npy...
import { readFileSync, writeFileSync } from "node:fs";
import { Worker } from "node:worker_threads";

import { instantiateCore, isThreaded, openPlan } from "./core.js";

// numpy's codes of the dtypes it has; the others (bfloat16, float8, packed sub-byte) travel as raw bytes, 1-D '|u1'.
const NPY_CODES = { 1: "<f4", 2: "|u1", 3: "|i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "|b1", 10: "<f2", 11: "<f8",
                    12: "<u4", 13: "<u8" };

function readNpy(path) {
  const file = readFileSync(path);
  const major = file[6];
  const headerLength = major >= 2 ? file.readUInt32LE(8) : file.readUInt16LE(8);
  const start = (major >= 2 ? 12 : 10) + headerLength;
  const header = file.subarray(major >= 2 ? 12 : 10, start).toString("latin1");
  const descr = /'descr': '([^']+)'/.exec(header)[1];
  return { descr, data: file.subarray(start) };
}

function writeNpy(path, descr, dims, bytes) {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += " ".repeat((64 - (total % 64)) % 64) + "\n";
  const prefix = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(prefix);
  prefix.writeUInt16LE(header.length, 8);
  writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, "latin1"), Buffer.from(bytes)]));
}

const args = process.argv.slice(2);
const threads = args[0] === "--threads" ? Number(args.splice(0, 2)[1]) : 1;
const [corePath, planPath, outDir, ...inputPaths] = args;
const fail = (code, message) => { process.stderr.write(`ep_run.mjs: ${message}\n`); process.exit(code); };
if (!(threads >= 1)) fail(2, "--threads takes a number of threads, 1 or more");
const module = await WebAssembly.compile(readFileSync(corePath));
if (threads > 1 && !isThreaded(module)) fail(2, `--threads ${threads} needs the threaded core, and ${corePath} is not`);
const core = await instantiateCore(module);
const startWorker = (number, stackTop, pool) => new Promise((resolve, reject) => {
  const worker = new Worker(new URL("./worker.js", import.meta.url));
  worker.once("message", () => resolve(worker.unref())).once("error", reject);
  worker.postMessage({ module, memory: core.memory, number, stackTop, pool });
});
let plan;
try {
  plan = openPlan(core.exports, new Uint8Array(readFileSync(planPath)), core.memory);
  if (threads > 1) await plan.addWorkers(threads, startWorker);
} catch (error) {
  fail(3, error.message);
}
if (inputPaths.length !== plan.inputs.length) fail(2, "wrong number of inputs");
inputPaths.forEach((path, index) => {
  const tensor = plan.inputs[index];
  const { descr, data } = readNpy(path);
  if (descr !== (NPY_CODES[tensor.dtype] ?? "|u1") || data.length !== tensor.bytes) fail(2, `input ${index} does not fit`);
  plan.bytes(tensor).set(data);
});
try {
  plan.run();
} catch (error) {
  fail(4, error.message);
}
plan.outputs.forEach((tensor, index) => {
  const code = NPY_CODES[tensor.dtype];
  writeNpy(`${outDir}/${index}.npy`, code ?? "|u1", code ? tensor.dims : [tensor.bytes], plan.bytes(tensor).slice());
});
