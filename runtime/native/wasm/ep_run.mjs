// ep_run for the wasm32 build, in node: the same command line as the native ep_run. With --threads N (N > 1, the
// threaded core), the plan's parallel loops run on this thread and N - 1 worker threads (worker.js). With --serve (one
// thread), the core is compiled once and runs one plan per line of stdin, on a fresh instance each, as the native
// ep_run --serve does: the line's fields PLAN.epk, OUT_DIR and the inputs separated by tabs, the answer a line
// holding the run's exit status (a failure's message on stderr).
// usage: node ep_run.mjs [--threads N] CORE.wasm PLAN.epk OUT_DIR INPUT.npy...
//        node ep_run.mjs CORE.wasm --serve
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
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

/** A failure of one run: `code` is ep_run's exit status for it (2 bad arguments or inputs, 3 plan, 4 run). */
class RunFailure extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const startWorker = (module, core) => (number, stackTop, pool) => new Promise((resolve, reject) => {
  const worker = new Worker(new URL("./worker.js", import.meta.url));
  worker.once("message", () => resolve(worker.unref())).once("error", reject);
  worker.postMessage({ module, memory: core.memory, number, stackTop, pool });
});

/** Runs the plan at planPath on a fresh instance of `module` (on `threads` threads), inputs and outputs as .npy. */
async function runPlan(module, threads, planPath, outDir, inputPaths) {
  const core = await instantiateCore(module);
  let plan;
  try {
    plan = openPlan(core.exports, new Uint8Array(readFileSync(planPath)), core.memory);
    if (threads > 1) await plan.addWorkers(threads, startWorker(module, core));
  } catch (error) {
    throw new RunFailure(3, error.message);
  }
  if (inputPaths.length !== plan.inputs.length) throw new RunFailure(2, "wrong number of inputs");
  inputPaths.forEach((path, index) => {
    const tensor = plan.inputs[index];
    const { descr, data } = readNpy(path);
    if (descr !== (NPY_CODES[tensor.dtype] ?? "|u1") || data.length !== tensor.bytes) {
      throw new RunFailure(2, `input ${index} does not fit`);
    }
    plan.bytes(tensor).set(data);
  });
  try {
    plan.run();
  } catch (error) {
    throw new RunFailure(4, error.message);
  }
  plan.outputs.forEach((tensor, index) => {
    const code = NPY_CODES[tensor.dtype];
    writeNpy(`${outDir}/${index}.npy`, code ?? "|u1", code ? tensor.dims : [tensor.bytes], plan.bytes(tensor).slice());
  });
}

/** Runs one request per line of stdin until it closes, answering each on stdout. */
async function serve(module) {
  for await (const line of createInterface({ input: process.stdin })) {
    let code = 0;
    try {
      const [planPath, outDir, ...inputPaths] = line.split("\t").filter((field) => field !== "");
      if (outDir === undefined) throw new RunFailure(2, "a request is PLAN.epk, OUT_DIR and the inputs, by tabs");
      await runPlan(module, 1, planPath, outDir, inputPaths);
    } catch (error) {
      code = error.code ?? 2;
      process.stderr.write(`ep_run.mjs: ${error.message}\n`);
    }
    process.stdout.write(`${code}\n`);
  }
}

const args = process.argv.slice(2);
const fail = (code, message) => { process.stderr.write(`ep_run.mjs: ${message}\n`); process.exit(code); };
if (args[1] === "--serve") {
  if (args.length !== 2) fail(2, "--serve takes the core alone: node ep_run.mjs CORE.wasm --serve");
  await serve(await WebAssembly.compile(readFileSync(args[0])));
} else {
  const threads = args[0] === "--threads" ? Number(args.splice(0, 2)[1]) : 1;
  const [corePath, planPath, outDir, ...inputPaths] = args;
  if (!(threads >= 1)) fail(2, "--threads takes a number of threads, 1 or more");
  const module = await WebAssembly.compile(readFileSync(corePath));
  if (threads > 1 && !isThreaded(module)) fail(2, `--threads ${threads} needs the threaded core, and ${corePath} is not`);
  try {
    await runPlan(module, threads, planPath, outDir, inputPaths);
  } catch (error) {
    if (!(error instanceof RunFailure)) throw error;
    fail(error.code, error.message);
  }
}
