// ep_run for the wasm32 build, in node: the same command line as the native ep_run.
// usage: node ep_run.mjs CORE.wasm PLAN.epk OUT_DIR INPUT.npy...
import { readFileSync, writeFileSync } from "node:fs";

const DTYPES = { 1: ["<f4", 4], 2: ["|u1", 1], 3: ["|i1", 1], 6: ["<i4", 4], 7: ["<i8", 8], 9: ["|b1", 1] };
const INFO_BYTES = 88; // ep_tensor_info on wasm32: name, name_len, dtype, rank, dims[8] (int64), bytes, data

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

const [corePath, planPath, outDir, ...inputPaths] = process.argv.slice(2);
const { instance } = await WebAssembly.instantiate(readFileSync(corePath), {});
const core = instance.exports;
const memory = core.memory;
const align = (value, to) => Math.ceil(value / to) * to;
const plan = readFileSync(planPath);

const planAt = align(core.__heap_base.value, 64);
const scratchAt = align(planAt + plan.length, 64); // 8 bytes for results, then an info record
const sessionAt = align(scratchAt + 16 + INFO_BYTES, 64);
const grow = (end) => {
  if (end > memory.buffer.byteLength) memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
};
grow(sessionAt);
new Uint8Array(memory.buffer, planAt, plan.length).set(plan);
const fail = (code, message) => { process.stderr.write(`ep_run.mjs: ${message}\n`); process.exit(code); };
const text = (ptr) => {
  const bytes = new Uint8Array(memory.buffer, ptr);
  return Buffer.from(bytes.subarray(0, bytes.indexOf(0))).toString();
};

let status = core.ep_required_bytes(planAt, plan.length, scratchAt);
if (status !== 0) fail(3, `status ${status}`);
const needed = new DataView(memory.buffer).getUint32(scratchAt, true);
grow(sessionAt + needed);
status = core.ep_open(planAt, plan.length, sessionAt, needed, scratchAt);
if (status !== 0) fail(3, `status ${status}: ${text(core.ep_open_error(sessionAt, needed))}`);
const session = new DataView(memory.buffer).getUint32(scratchAt, true);

function info(getter, index) {
  const at = scratchAt + 16;
  getter(session, index, at);
  const view = new DataView(memory.buffer);
  const rank = view.getInt32(at + 12, true);
  const dims = [];
  for (let d = 0; d < rank; d++) dims.push(Number(view.getBigInt64(at + 16 + 8 * d, true)));
  return { dtype: view.getInt32(at + 8, true), dims, bytes: view.getUint32(at + 80, true), data: view.getUint32(at + 84, true) };
}

if (inputPaths.length !== core.ep_input_count(session)) fail(2, "wrong number of inputs");
inputPaths.forEach((path, index) => {
  const tensor = info(core.ep_input, index);
  const { descr, data } = readNpy(path);
  if (descr !== DTYPES[tensor.dtype][0] || data.length !== tensor.bytes) fail(2, `input ${index} does not fit`);
  new Uint8Array(memory.buffer, tensor.data, tensor.bytes).set(data);
});
status = core.ep_run(session);
if (status !== 0) fail(4, `status ${status}: ${text(core.ep_error(session))}`);
for (let index = 0; index < core.ep_output_count(session); index++) {
  const tensor = info(core.ep_output, index);
  const bytes = new Uint8Array(memory.buffer, tensor.data, tensor.bytes).slice();
  writeNpy(`${outDir}/${index}.npy`, DTYPES[tensor.dtype][0], tensor.dims, bytes);
}
