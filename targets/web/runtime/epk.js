// Reads an .epk plan (runtime/native/EPK.md) into plain objects for the WebGPU executor. The wasm core checks a
// plan fully when it opens it; this reader checks every count, offset and index it follows, and throws an Error
// naming the field otherwise.

import { DTYPE_NAMES, OPS } from "./ops.js";

export { DTYPE_NAMES, OPS };
const ELEMENT_BYTES = { 1: 4, 2: 1, 3: 1, 6: 4, 7: 8, 9: 1, 10: 2 };
const HEADER_BYTES = 96;
const TENSOR_BYTES = 48;
const OP_BYTES = 16;
const ABSENT = 0xffffffff;

function tensorBytes(dtype, dims) {
  const count = dims.reduce((a, b) => a * b, 1);
  if (dtype === 22) return Math.ceil(count / 2);
  return dtype in ELEMENT_BYTES ? count * ELEMENT_BYTES[dtype] : -1;
}

/** Parses `buffer` (an ArrayBuffer holding one .epk plan); `label` names it in errors. */
export function parsePlan(buffer, label = "the plan") {
  const planError = (what) => new Error(`edgepack: ${label} is not a valid .epk plan (${what}); rebuild the bundle or re-copy its model folder`);
  const section = (offset, count, recordBytes, what) => {
    if (offset % 4 !== 0 || offset + count * recordBytes > buffer.byteLength) throw planError(`${what} section outside the file`);
    return offset;
  };
  if (buffer.byteLength < HEADER_BYTES) throw planError(`${buffer.byteLength} bytes, shorter than its header`);
  const view = new DataView(buffer);
  const word = (index) => view.getUint32(4 * index, true);
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
  if (magic !== "EPK1" || word(1) !== 1 || word(2) !== HEADER_BYTES) throw planError(`magic ${JSON.stringify(magic)}, version ${word(1)}`);
  const [nTensors, nOps, nIo, nInputs, nOutputs] = [word(4), word(6), word(8), word(10), word(11)];
  const tensorsAt = section(word(5), nTensors, TENSOR_BYTES, "tensor");
  const opsAt = section(word(7), nOps, OP_BYTES, "op");
  const ioAt = section(word(9), nIo, 4, "op tensor list");
  const portsAt = section(word(12), nInputs + nOutputs, 4, "port");
  const paramsAt = section(word(13), word(14) / 4, 4, "parameter");
  const namesAt = section(word(15), word(16), 1, "name");
  const weightsAt = word(17);
  const weightsBytes = word(18);
  if (weightsAt + weightsBytes > buffer.byteLength) throw planError("weight section outside the file");
  const weights = new Uint8Array(buffer, weightsAt, weightsBytes);
  const decoder = new TextDecoder();

  const tensors = [];
  for (let i = 0; i < nTensors; i++) {
    const at = tensorsAt + i * TENSOR_BYTES;
    const dtype = view.getUint8(at);
    const rank = view.getUint8(at + 1);
    const location = view.getUint8(at + 2);
    const nameOffset = view.getUint32(at + 4, true);
    const nameLength = view.getUint32(at + 8, true);
    if (rank > 8 || location > 1 || nameOffset + nameLength > word(16)) throw planError(`tensor ${i} record`);
    const dims = [];
    for (let d = 0; d < rank; d++) dims.push(view.getUint32(at + 16 + 4 * d, true));
    const offset = view.getUint32(at + 12, true);
    const bytes = tensorBytes(dtype, dims);
    if (bytes < 0) throw planError(`tensor ${i} has unknown dtype ${dtype}`);
    if (location === 1 && offset + bytes > weightsBytes) throw planError(`weight tensor ${i} outside the weights`);
    const name = decoder.decode(new Uint8Array(buffer, namesAt + nameOffset, nameLength));
    tensors.push({ name, dtype, rank, dims, location, offset, bytes });
  }
  const tensorIndex = (value, what) => {
    if (value === ABSENT) return -1;
    if (value >= nTensors) throw planError(`${what} reads tensor ${value} of ${nTensors}`);
    return value;
  };
  const paramWords = word(14) / 4;
  const ops = [];
  for (let i = 0; i < nOps; i++) {
    const at = opsAt + i * OP_BYTES;
    const kind = view.getUint16(at, true);
    const nIn = view.getUint8(at + 2);
    const nOut = view.getUint8(at + 3);
    const first = view.getUint32(at + 4, true);
    const firstParam = view.getUint32(at + 8, true);
    const nParams = view.getUint32(at + 12, true);
    if (kind >= OPS.length) throw planError(`op ${i} has unknown id ${kind}`);
    if (first + nIn + nOut > nIo || firstParam + nParams > paramWords) throw planError(`op ${i} (${OPS[kind]}) record`);
    const io = [];
    for (let k = 0; k < nIn + nOut; k++) io.push(tensorIndex(view.getUint32(ioAt + 4 * (first + k), true), `op ${i}`));
    const paramsOffset = paramsAt + 4 * firstParam;
    ops.push({
      kind, op: OPS[kind], inputs: io.slice(0, nIn), outputs: io.slice(nIn),
      params: new Int32Array(buffer.slice(paramsOffset, paramsOffset + 4 * nParams)),
      floats: new Float32Array(buffer.slice(paramsOffset, paramsOffset + 4 * nParams)),
    });
  }
  const ports = [];
  for (let k = 0; k < nInputs + nOutputs; k++) ports.push(tensorIndex(view.getUint32(portsAt + 4 * k, true), "port list"));
  return {
    tensors, ops, inputs: ports.slice(0, nInputs), outputs: ports.slice(nInputs), weights,
    arenaBytes: word(19), scratchBytes: word(20),
  };
}
