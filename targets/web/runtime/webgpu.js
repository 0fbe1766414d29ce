// The WebGPU executor: runs one parsed .epk plan (epk.js) op by op on a GPUDevice, float32 only. Every arena
// tensor gets its own storage buffer (the reshape family aliases its input's), weights are uploaded once
// (quantized and float16 ones widened to float32 first, as runtime/native/kernels/quant.c computes them), and each
// op becomes one or more dispatches whose pipelines, uniform words and bind groups are built at creation. A run
// writes the inputs, encodes every dispatch into one compute pass, submits once and reads the outputs back once.

import { DTYPE_NAMES } from "./epk.js";

const COMMON = "common.wgsl";
const OP_FILES = {
  Copy: [],
  Binary: ["binary.wgsl"],
  Unary: ["unary.wgsl"],
  Conv: ["conv.wgsl", "gemm.wgsl"],
  ConvTranspose: ["conv.wgsl"],
  MatMul: ["gemm.wgsl"],
  Gemm: ["gemm.wgsl"],
  Pool: ["pool.wgsl"],
  Softmax: ["softmax.wgsl"],
  Reduce: ["reduce.wgsl"],
  Transpose: ["layout.wgsl"],
  Concat: ["layout.wgsl"],
  Split: ["layout.wgsl"],
  Slice: ["layout.wgsl"],
  Resize: ["resize.wgsl"],
  ChannelAffine: ["normalize.wgsl"],
  LayerNorm: ["normalize.wgsl"],
};

/** The plan ops this executor runs. */
export const GPU_OPS = new Set(Object.keys(OP_FILES));

const F32 = 1;
const I8 = 3;
const F16 = 10;
const I4 = 22;
const BINARY_KINDS = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual",
  "GreaterOrEqual", "And", "Or", "Xor", "Mod"];
const FLOAT_BINARY_KINDS = 7;
const UNARY_NOT = 20;
/** Own inputs and parameter words of the ops with a quantizable weight slot (input 1); EPK.md "Quantized weights". */
const WEIGHT_SLOT_OPS = { Conv: [3, 15], ConvTranspose: [3, 17], MatMul: [2, 0], Gemm: [3, 7] };
const PARAM_WORDS = 64;
const UNIFORM_BYTES = PARAM_WORDS * 4;
const GROUP_SIZE = 64;
const MAX_GROUPS = 65535;
const TILE = 4;
const GEMM_TILE_COLUMNS = 8;
const CONV_TILE_ROWS = 8;
const STRIDE_ITEMS = 16;
const VECTOR_BYTES = 16;
const TILED_GROUP = [16, 4];

/** The quantized weight slot of `op`: {axis, block, scale (tensor index)}, or null when it has none. */
function quantizedSlot(op) {
  const form = WEIGHT_SLOT_OPS[op.op];
  if (!form) return null;
  const [ownInputs, ownParams] = form;
  if (op.inputs.length !== ownInputs + 1 || op.params.length !== ownParams + 2) return null;
  if (op.inputs[ownInputs] < 0) return null;
  return { scale: op.inputs[ownInputs], axis: op.params[ownParams], block: op.params[ownParams + 1] };
}

function tensorRefusal(plan, index, allowed) {
  const t = plan.tensors[index];
  if (allowed.includes(t.dtype)) return null;
  return `tensor "${t.name}" is ${DTYPE_NAMES[t.dtype] ?? `dtype ${t.dtype}`}, not float32`;
}

function opRefusal(plan, op) {
  if (!GPU_OPS.has(op.op)) return "no WebGPU kernel for this op";
  if (op.op === "Binary" && op.params[0] >= FLOAT_BINARY_KINDS) {
    return `Binary ${BINARY_KINDS[op.params[0]] ?? op.params[0]} is not float arithmetic`;
  }
  if (op.op === "Unary" && op.params[0] === UNARY_NOT) return "Unary Not works on bool";
  if (op.op === "Conv" && plan.tensors[op.inputs[1]].location !== 1) return "weights computed at run time";
  const slot = quantizedSlot(op);
  for (let k = 0; k < op.inputs.length; k++) {
    const index = op.inputs[k];
    if (index < 0) continue;
    const weight = plan.tensors[index].location === 1;
    let allowed = weight ? [F32, F16] : [F32];
    if (slot && k === 1) allowed = [F32, I8, I4];
    const why = tensorRefusal(plan, index, allowed);
    if (why) return why;
  }
  for (const index of op.outputs) {
    const why = index < 0 ? null : tensorRefusal(plan, index, [F32]);
    if (why) return why;
  }
  return null;
}

/** null when every op of `plan` runs on the GPU, else one line naming the first op that does not and why. */
export function gpuRefusal(plan) {
  for (const index of [...plan.inputs, ...plan.outputs]) {
    const why = tensorRefusal(plan, index, [F32]);
    if (why) return `model port: ${why}`;
  }
  for (let i = 0; i < plan.ops.length; i++) {
    const why = opRefusal(plan, plan.ops[i]);
    if (why) return `op ${i} (${plan.ops[i].op}): ${why}`;
  }
  return null;
}

/** The .wgsl files `plan` needs, sorted and unique. */
export function kernelFiles(plan) {
  const files = new Set();
  for (const op of plan.ops) {
    for (const file of OP_FILES[op.op] ?? []) files.add(file);
  }
  if (files.size) files.add(COMMON);
  return [...files].sort();
}

// ---- numbers ----

const bitsView = new DataView(new ArrayBuffer(4));

function floatBits(value) {
  bitsView.setFloat32(0, value, true);
  return bitsView.getUint32(0, true);
}

function product(dims) {
  return dims.reduce((a, b) => a * b, 1);
}

function contiguousStrides(dims) {
  const strides = new Array(dims.length);
  let stride = 1;
  for (let d = dims.length - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= dims[d];
  }
  return strides;
}

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** floor(log2(m)) for m > 0, exact at powers of two (Math.log2 may round across them); -Infinity for 0. */
function binaryExponent(m) {
  if (m === 0) return -Infinity;
  let e = Math.floor(Math.log2(m));
  if (2 ** e > m) e--;
  if (2 ** (e + 1) <= m) e++;
  return e;
}

/** `x` rounded to the nearest float16 value (ties to even), as a float32 (quant.c to_half_precision). */
function roundToHalf(x) {
  const magnitude = Math.abs(x);
  if (!(magnitude < 65520)) return Number.isNaN(x) ? x : Math.sign(x) * Infinity;
  const quantum = 2 ** (Math.max(binaryExponent(magnitude), -14) - 10);
  let q = magnitude / quantum;
  const whole = Math.floor(q);
  const rest = q - whole;
  q = rest > 0.5 || (rest === 0.5 && whole % 2 === 1) ? whole + 1 : whole;
  return Math.fround(Math.sign(x) * q * quantum);
}

function weightBytes(plan, t) {
  return plan.weights.subarray(t.offset, t.offset + t.bytes);
}

/** A weight tensor's values as float32 (float16 widened). */
function weightFloats(plan, t) {
  const bytes = weightBytes(plan, t);
  const copy = bytes.slice();
  if (t.dtype === F32) return new Float32Array(copy.buffer, 0, product(t.dims));
  const halves = new Uint16Array(copy.buffer, 0, product(t.dims));
  return Float32Array.from(halves, halfToFloat);
}

/** The integers of an int8 or int4 weight, in flat order (int4: low nibble first, signed). */
function widenIntegers(plan, t) {
  const bytes = weightBytes(plan, t);
  const count = product(t.dims);
  const out = new Float32Array(count);
  if (t.dtype === I8) {
    const values = new Int8Array(bytes.buffer, bytes.byteOffset, count);
    out.set(values);
    return out;
  }
  for (let i = 0; i < count; i++) {
    const nibble = i % 2 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0xf;
    out[i] = (nibble ^ 8) - 8;
  }
  return out;
}

/** DequantizeLinear of a quantized weight slot (EPK.md): value x scale in float32, float16-rounded for f16 scales. */
function dequantize(plan, weight, slot) {
  const scaleTensor = plan.tensors[slot.scale];
  const scales = weightFloats(plan, scaleTensor);
  const values = widenIntegers(plan, weight);
  const dims = weight.dims;
  const outer = product(dims.slice(0, slot.axis));
  const inner = slot.block ? scaleTensor.dims[2] : product(dims.slice(slot.axis + 1));
  const length = outer && inner ? values.length / (outer * inner) : 0;
  const blocks = slot.block ? scaleTensor.dims[1] : 1;
  const half = scaleTensor.dtype === F16;
  for (let i = 0; i < values.length; i++) {
    const along = Math.floor(i / inner) % length;
    const o = Math.floor(i / (inner * length));
    const block = Math.floor(along / slot.block);
    const scale = slot.block ? scales[(o * blocks + block) * inner + (i % inner)] : scales[along];
    const v = Math.fround(values[i] * scale);
    values[i] = half ? roundToHalf(v) : v;
  }
  return values;
}

// ---- dispatch geometry ----

/** One invocation per item, the groups spread over x then y (maxComputeWorkgroupsPerDimension). */
function linearGroups(count) {
  const groups = Math.ceil(count / GROUP_SIZE);
  const x = Math.min(groups, MAX_GROUPS);
  return x ? [x, Math.ceil(groups / x), 1] : [0, 1, 1];
}

/** Groups for a grid-stride kernel: enough to keep every core busy, each invocation taking several items. */
function strideGroups(count) {
  return [Math.max(1, Math.min(Math.ceil(count / GROUP_SIZE / STRIDE_ITEMS), MAX_GROUPS)), 1, 1];
}

function tiledGroups(columns, rows, batches, tileColumns = TILE, tileRows = TILE) {
  return [Math.ceil(columns / tileColumns / TILED_GROUP[0]), Math.ceil(rows / tileRows / TILED_GROUP[1]), batches];
}

function paramWords(values) {
  const words = new Uint32Array(PARAM_WORDS);
  values.forEach((v, i) => { words[i] = v >>> 0; });
  return words;
}

/** Words at `at`: up to 8 values (dims or strides). */
function putWords(words, at, values) {
  values.forEach((v, i) => { words[at + i] = v >>> 0; });
  return words;
}

function spatial(dims) {
  return dims.length === 4 ? [dims[2], dims[3]] : [1, dims[2]];
}

// ---- op lowering: each returns the op's dispatches {file, entry, words, buffers, groups} ----

/** Per-input element strides over the output dims, right-aligned, 0 where the input broadcasts. */
function broadcastStrides(out, dims) {
  const own = contiguousStrides(dims);
  return out.map((_, i) => {
    const j = i - (out.length - dims.length);
    return j < 0 || dims[j] === 1 ? 0 : own[j];
  });
}

/** Output dims and input strides with size-1 axes dropped and adjacent axes merged where every input allows. */
function mergeBroadcast(out, inputStrides) {
  const dims = [];
  const strides = inputStrides.map(() => []);
  out.forEach((d, i) => {
    if (d === 1) return;
    const last = dims.length - 1;
    if (last >= 0 && inputStrides.every((s, k) => strides[k][last] === s[i] * d)) {
      dims[last] *= d;
      inputStrides.forEach((s, k) => { strides[k][last] = s[i]; });
      return;
    }
    dims.push(d);
    inputStrides.forEach((s, k) => strides[k].push(s[i]));
  });
  return { dims, strides };
}

function binarySteps(ctx, op) {
  const out = ctx.dims(op.outputs[0]);
  const count = product(out);
  if (count === 0) return [];
  const merged = mergeBroadcast(out, op.inputs.slice(0, 2).map((index) => broadcastStrides(out, ctx.dims(index))));
  const last = merged.dims.length - 1;
  const steps = merged.strides.map((s) => (last >= 0 ? s[last] : 0));
  const rowsOf4 = last >= 0 && merged.dims[last] % 4 === 0 && steps.every((s) => s <= 1);
  const vectors = Math.ceil(count / 4);
  const words = paramWords([0, count, merged.dims.length, vectors]);
  putWords(words, 4, merged.dims);
  putWords(words, 12, merged.strides[0]);
  putWords(words, 20, merged.strides[1]);
  const constants = { KIND: op.params[0], RANK: merged.dims.length, ROWS_OF_4: rowsOf4 ? 1 : 0, A_STEP: steps[0],
    B_STEP: steps[1] };
  const operands = [...op.inputs.slice(0, 2), op.outputs[0]];
  return [ctx.step("binary.wgsl", "binary", words, operands, strideGroups(vectors), constants)];
}

function unarySteps(ctx, op) {
  const vectors = Math.ceil(product(ctx.dims(op.outputs[0])) / 4);
  const words = paramWords([0, vectors, op.params[1], op.params[2]]);
  const operands = [op.inputs[0], op.outputs[0]];
  return [ctx.step("unary.wgsl", "unary", words, operands, strideGroups(vectors), { KIND: op.params[0] })];
}

function convShape(ctx, op) {
  const p = op.params;
  const x = ctx.dims(op.inputs[0]);
  const y = ctx.dims(op.outputs[0]);
  const [h, w] = spatial(x);
  const [oh, ow] = spatial(y);
  const group = p[1];
  const m = y[1];
  const shape = { n: x[0], c: x[1], h, w, oh, ow, m, group, cg: x[1] / group, mg: m / group, kh: p[2], kw: p[3] };
  shape.depth = shape.cg * shape.kh * shape.kw;
  shape.paddedMg = Math.ceil(shape.mg / CONV_TILE_ROWS) * CONV_TILE_ROWS;
  shape.hasBias = op.inputs.length > 2 && op.inputs[2] >= 0;
  return shape;
}

function convWords(op, s, count) {
  const p = op.params;
  return paramWords([s.n, s.c, s.h, s.w, s.m, s.oh, s.ow, s.group, s.cg, s.mg, p[2], p[3], p[4], p[5], p[6], p[7],
    p[10], p[11], 0, p[13], p[14], s.hasBias ? 1 : 0, count, s.paddedMg / 4]);
}

function isPointwise(s, p) {
  return p[2] === 1 && p[3] === 1 && p[4] === 1 && p[5] === 1 && s.oh === s.h && s.ow === s.w;
}

/** Conv weights [group][mg][depth] packed as [group][depth][mg rounded up to 8], so 4 output channels are a vec4. */
function packConvWeights(ctx, op, s) {
  const values = ctx.weightValues(op);
  const packed = new Float32Array(s.group * s.depth * s.paddedMg);
  for (let g = 0; g < s.group; g++) {
    for (let m = 0; m < s.mg; m++) {
      for (let k = 0; k < s.depth; k++) {
        packed[(g * s.depth + k) * s.paddedMg + m] = values[(g * s.mg + m) * s.depth + k];
      }
    }
  }
  return ctx.upload(packed);
}

/** Whether 4 consecutive elements along a unit-stride axis are always one aligned vec4. */
function vectorAligned(unitStride, otherStride, bases) {
  return unitStride === 1 && otherStride % 4 === 0 && bases.every((base) => base % 4 === 0);
}

/** A pointwise conv as a batched product: per image and group, W[mg, cg] x X[cg, h w] + bias. */
function pointwiseSteps(ctx, op, s) {
  const plane = s.h * s.w;
  const offsets = [];
  for (let b = 0; b < s.n; b++) {
    for (let g = 0; g < s.group; g++) {
      offsets.push(g * s.cg * s.paddedMg, (b * s.c + g * s.cg) * plane, g * s.mg, (b * s.m + g * s.mg) * plane);
    }
  }
  const p = op.params;
  const words = paramWords([s.mg, plane, s.cg, s.n * s.group, 1, s.paddedMg, plane, 1, 1, 0, floatBits(1), floatBits(1),
    0, p[13], p[14], s.hasBias ? 1 : 0]);
  const columns4 = vectorAligned(1, plane, offsets.filter((_, i) => i % 4 === 1));
  const constants = { ACT: p[12], A_ROWS_4: 1, B_COLUMNS_4: columns4 ? 1 : 0 };
  const operands = [packConvWeights(ctx, op, s), op.inputs[0], s.hasBias ? op.inputs[2] : -1,
    ctx.upload(new Uint32Array(offsets)), op.outputs[0]];
  const groups = tiledGroups(plane, s.mg, s.n * s.group, GEMM_TILE_COLUMNS);
  return [ctx.step("gemm.wgsl", "gemm", words, operands, groups, constants)];
}

function convSteps(ctx, op) {
  const s = convShape(ctx, op);
  if (isPointwise(s, op.params)) return pointwiseSteps(ctx, op, s);
  const constants = { ACT: op.params[12] };
  const bias = s.hasBias ? op.inputs[2] : -1;
  if (s.cg === 1 && s.mg === 1) {
    const quads = s.n * s.m * s.oh * Math.ceil(s.ow / 4);
    const operands = [op.inputs[0], ctx.weight(op), bias, op.outputs[0]];
    return [ctx.step("conv.wgsl", "conv_depthwise", convWords(op, s, quads), operands, linearGroups(quads), constants)];
  }
  const operands = [op.inputs[0], packConvWeights(ctx, op, s), bias, op.outputs[0]];
  const groups = tiledGroups(s.oh * s.ow, s.mg, s.n * s.group, TILE, CONV_TILE_ROWS);
  return [ctx.step("conv.wgsl", "conv_tiled", convWords(op, s, 0), operands, groups, constants)];
}

function convTransposeSteps(ctx, op) {
  const s = convShape(ctx, op);
  const count = product(ctx.dims(op.outputs[0]));
  const operands = [op.inputs[0], ctx.weight(op), s.hasBias ? op.inputs[2] : -1, op.outputs[0]];
  return [ctx.step("conv.wgsl", "conv_transpose", convWords(op, s, count), operands, linearGroups(count),
    { ACT: op.params[12] })];
}

/** Per-batch offsets of a broadcast batched product: A and B strides per batch axis (0 where broadcast). */
function batchOffsets(aDims, bDims, m, k, n) {
  const aBatch = aDims.length > 2 ? aDims.slice(0, -2) : [];
  const bBatch = bDims.length > 2 ? bDims.slice(0, -2) : [];
  const rank = Math.max(aBatch.length, bBatch.length);
  const dims = [];
  const aStrides = [];
  const bStrides = [];
  let aStride = m * k;
  let bStride = k * n;
  for (let i = rank - 1; i >= 0; i--) {
    const da = aBatch[i - (rank - aBatch.length)] ?? 1;
    const db = bBatch[i - (rank - bBatch.length)] ?? 1;
    dims[i] = da === 0 || db === 0 ? 0 : Math.max(da, db);
    aStrides[i] = da === 1 ? 0 : aStride;
    bStrides[i] = db === 1 ? 0 : bStride;
    aStride *= da;
    bStride *= db;
  }
  const batches = product(dims);
  const offsets = [];
  for (let t = 0; t < batches; t++) {
    let rest = t;
    let ao = 0;
    let bo = 0;
    for (let i = rank - 1; i >= 0; i--) {
      const coord = rest % dims[i];
      rest = Math.floor(rest / dims[i]);
      ao += coord * aStrides[i];
      bo += coord * bStrides[i];
    }
    offsets.push(ao, bo, 0, t * m * n);
  }
  return { batches, offsets };
}

function matmulSteps(ctx, op) {
  const aDims = ctx.dims(op.inputs[0]);
  const bDims = ctx.dims(op.inputs[1]);
  const m = aDims.length === 1 ? 1 : aDims[aDims.length - 2];
  const k = aDims[aDims.length - 1];
  const n = bDims.length === 1 ? 1 : bDims[bDims.length - 1];
  const { batches, offsets } = batchOffsets(aDims, bDims, m, k, n);
  if (batches === 0 || m * n === 0) return [];
  const words = paramWords([m, n, k, batches, k, 1, n, 1, 0, 0, floatBits(1), 0, 0, 0, 0, 0]);
  const operands = [op.inputs[0], ctx.weight(op), -1, ctx.upload(new Uint32Array(offsets)), op.outputs[0]];
  const constants = { B_COLUMNS_4: vectorAligned(1, n, offsets.filter((_, i) => i % 4 === 1)) ? 1 : 0 };
  return [ctx.step("gemm.wgsl", "gemm", words, operands, tiledGroups(n, m, batches, GEMM_TILE_COLUMNS), constants)];
}

/** C's element strides over the [M, N] output, broadcasting right-aligned. */
function broadcastStrides2d(dims) {
  const own = contiguousStrides(dims);
  const stride = (axis) => {
    const j = axis - (2 - dims.length);
    return j < 0 || dims[j] === 1 ? 0 : own[j];
  };
  return [stride(0), stride(1)];
}

function gemmSteps(ctx, op) {
  const p = op.params;
  const a = ctx.dims(op.inputs[0]);
  const b = ctx.dims(op.inputs[1]);
  const [m, n] = ctx.dims(op.outputs[0]);
  const k = p[0] ? a[0] : a[1];
  const beta = op.floats[3];
  const cIndex = op.inputs.length > 2 ? op.inputs[2] : -1;
  const hasC = cIndex >= 0 && beta !== 0;
  const [cRow, cColumn] = hasC ? broadcastStrides2d(ctx.dims(cIndex)) : [0, 0];
  const strides = [p[0] ? 1 : a[1], p[0] ? a[1] : 1, p[1] ? 1 : b[1], p[1] ? b[1] : 1];
  const words = paramWords([m, n, k, 1, ...strides, cRow, cColumn, p[2], p[3], 0, p[5], p[6], hasC ? 1 : 0]);
  const operands = [op.inputs[0], ctx.weight(op), hasC ? cIndex : -1, ctx.upload(new Uint32Array(4)), op.outputs[0]];
  const constants = { ACT: p[4], A_ROWS_4: vectorAligned(strides[0], strides[1], [0]) ? 1 : 0,
    B_COLUMNS_4: vectorAligned(strides[3], strides[2], [0]) ? 1 : 0 };
  if (m * n === 0) return [];
  return [ctx.step("gemm.wgsl", "gemm", words, operands, tiledGroups(n, m, 1, GEMM_TILE_COLUMNS), constants)];
}

function poolSteps(ctx, op) {
  const [h, w] = spatial(ctx.dims(op.inputs[0]));
  const y = ctx.dims(op.outputs[0]);
  const [oh, ow] = spatial(y);
  const count = product(y);
  const words = paramWords([...op.params.slice(0, 12), h, w, oh, ow, count]);
  return [ctx.step("pool.wgsl", "pool", words, [op.inputs[0], op.outputs[0]], linearGroups(count))];
}

function softmaxSteps(ctx, op) {
  const dims = ctx.dims(op.inputs[0]);
  const [axis, flatten, log] = op.params;
  const outer = product(dims.slice(0, axis));
  const length = flatten ? product(dims.slice(axis)) : dims[axis];
  const inner = flatten ? 1 : product(dims.slice(axis + 1));
  const rows = outer * inner;
  const words = paramWords([rows, length, inner, log]);
  return [ctx.step("softmax.wgsl", "softmax", words, [op.inputs[0], op.outputs[0]], linearGroups(rows))];
}

function reduceSteps(ctx, op) {
  const dims = ctx.dims(op.inputs[0]);
  const strides = contiguousStrides(dims);
  const kept = dims.map((_, d) => d).filter((d) => !op.params[1 + d]);
  const reduced = dims.map((_, d) => d).filter((d) => op.params[1 + d]);
  const count = product(kept.map((d) => dims[d]));
  const words = paramWords([op.params[0], count, kept.length, reduced.length, product(reduced.map((d) => dims[d]))]);
  putWords(words, 8, kept.map((d) => dims[d]));
  putWords(words, 16, kept.map((d) => strides[d]));
  putWords(words, 24, reduced.map((d) => dims[d]));
  putWords(words, 32, reduced.map((d) => strides[d]));
  return [ctx.step("reduce.wgsl", "reduce", words, [op.inputs[0], op.outputs[0]], linearGroups(count))];
}

/** One strided copy of `dims` elements from source to destination, axes merged where both sides allow. */
function copyStep(ctx, from, to, dims, source, destination) {
  const count = product(dims);
  if (count === 0) return [];
  const merged = mergeBroadcast(dims, [source.strides, destination.strides]);
  const last = merged.dims.length - 1;
  const rowsOf4 = last >= 0 && merged.dims[last] % 4 === 0 && merged.strides.every((s) => s[last] === 1) &&
    source.base % 4 === 0 && destination.base % 4 === 0;
  const words = paramWords([count, merged.dims.length, source.base, destination.base]);
  putWords(words, 4, merged.dims);
  putWords(words, 12, merged.strides[0]);
  putWords(words, 20, merged.strides[1]);
  return [ctx.step("layout.wgsl", "strided_copy", words, [from, to], strideGroups(rowsOf4 ? count / 4 : count),
    { ROWS_OF_4: rowsOf4 ? 1 : 0, RANK: merged.dims.length })];
}

function transposeSteps(ctx, op) {
  const inStrides = contiguousStrides(ctx.dims(op.inputs[0]));
  const out = ctx.dims(op.outputs[0]);
  const source = { base: 0, strides: Array.from(op.params, (axis) => inStrides[axis]) };
  return copyStep(ctx, op.inputs[0], op.outputs[0], out, source, { base: 0, strides: contiguousStrides(out) });
}

function sliceSteps(ctx, op) {
  const inStrides = contiguousStrides(ctx.dims(op.inputs[0]));
  const out = ctx.dims(op.outputs[0]);
  const base = inStrides.reduce((sum, stride, d) => sum + op.params[2 * d] * stride, 0);
  const source = { base, strides: inStrides.map((stride, d) => op.params[2 * d + 1] * stride) };
  return copyStep(ctx, op.inputs[0], op.outputs[0], out, source, { base: 0, strides: contiguousStrides(out) });
}

/** Concat (parts are inputs) or Split (parts are outputs): one strided copy per part, at its place along the axis. */
function stackSteps(ctx, op, partsAreInputs) {
  const axis = op.params[0];
  const whole = partsAreInputs ? op.outputs[0] : op.inputs[0];
  const wholeStrides = contiguousStrides(ctx.dims(whole));
  const steps = [];
  let at = 0;
  for (const part of partsAreInputs ? op.inputs : op.outputs) {
    const dims = ctx.dims(part);
    const partSide = { base: 0, strides: contiguousStrides(dims) };
    const wholeSide = { base: at * wholeStrides[axis], strides: wholeStrides };
    steps.push(...(partsAreInputs ? copyStep(ctx, part, whole, dims, partSide, wholeSide)
      : copyStep(ctx, whole, part, dims, wholeSide, partSide)));
    at += dims[axis];
  }
  return steps;
}

/** Resize axes as {from, to, scale, resized}, adjacent axes that keep their size and scale 1 merged into one. */
function mergeUnchangedAxes(x, y, scales) {
  const axes = [];
  x.forEach((from, d) => {
    const resized = from !== y[d] || scales[d] !== 1;
    const previous = axes[axes.length - 1];
    if (!resized && previous && !previous.resized) {
      previous.from *= from;
      previous.to *= from;
      return;
    }
    axes.push({ from, to: y[d], scale: scales[d], resized });
  });
  return axes;
}

function resizeSteps(ctx, op) {
  const axes = mergeUnchangedAxes(ctx.dims(op.inputs[0]), ctx.dims(op.outputs[0]), op.floats.slice(3));
  const count = product(ctx.dims(op.outputs[0]));
  const words = paramWords([0, 0, 0, axes.length, count]);
  putWords(words, 8, axes.map((a) => a.from));
  putWords(words, 16, axes.map((a) => a.to));
  putWords(words, 24, axes.map((a) => floatBits(a.scale)));
  putWords(words, 32, axes.map((a) => (a.resized ? 1 : 0)));
  const constants = { MODE: op.params[0], TRANSFORM: op.params[1], NEAREST: op.params[2] };
  return [ctx.step("resize.wgsl", "resize", words, [op.inputs[0], op.outputs[0]], strideGroups(count), constants)];
}

function channelAffineSteps(ctx, op) {
  const dims = ctx.dims(op.inputs[0]);
  const count = product(dims);
  const words = paramWords([count, dims.length >= 2 ? dims[1] : 1, product(dims.slice(2))]);
  return [ctx.step("normalize.wgsl", "channel_affine", words, [...op.inputs, op.outputs[0]], linearGroups(count))];
}

function layerNormSteps(ctx, op) {
  const dims = ctx.dims(op.inputs[0]);
  const inner = product(dims.slice(op.params[0]));
  const rows = inner ? product(dims) / inner : 0;
  const hasBias = op.inputs.length > 2 && op.inputs[2] >= 0;
  const words = paramWords([rows, inner, op.params[1], hasBias ? 1 : 0]);
  const buffers = [op.inputs[0], op.inputs[1], hasBias ? op.inputs[2] : -1, op.outputs[0]];
  return [ctx.step("normalize.wgsl", "layer_norm", words, buffers, linearGroups(rows))];
}

const LOWERINGS = {
  Copy: () => [],
  Binary: binarySteps,
  Unary: unarySteps,
  Conv: convSteps,
  ConvTranspose: convTransposeSteps,
  MatMul: matmulSteps,
  Gemm: gemmSteps,
  Pool: poolSteps,
  Softmax: softmaxSteps,
  Reduce: reduceSteps,
  Transpose: transposeSteps,
  Concat: (ctx, op) => stackSteps(ctx, op, true),
  Split: (ctx, op) => stackSteps(ctx, op, false),
  Slice: sliceSteps,
  Resize: resizeSteps,
  ChannelAffine: channelAffineSteps,
  LayerNorm: layerNormSteps,
};

// ---- buffers and pipelines ----

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** Buffer sizes are whole vec4s, so vec4 kernels may touch the padding past a tensor's last element. */
function bufferSize(bytes) {
  return Math.max(VECTOR_BYTES, Math.ceil(bytes / VECTOR_BYTES) * VECTOR_BYTES);
}

/** Owns every GPU buffer of a partition: arena tensors (Copy outputs alias their input), weights, per-op data. */
class BufferTable {
  constructor(device, plan) {
    this.device = device;
    this.plan = plan;
    this.owned = [];
    this.byTensor = new Map();
    this.alias = new Map();
    for (const op of plan.ops) {
      if (op.op === "Copy") this.alias.set(op.outputs[0], this.root(op.inputs[0]));
    }
    this.empty = this.create(16);
  }

  root(index) {
    return this.alias.get(index) ?? index;
  }

  create(bytes, usage = STORAGE()) {
    const buffer = this.device.createBuffer({ size: bufferSize(bytes), usage });
    this.owned.push(buffer);
    return buffer;
  }

  upload(values) {
    const buffer = this.create(values.byteLength);
    if (values.byteLength) this.device.queue.writeBuffer(buffer, 0, values);
    return buffer;
  }

  /** The buffer holding tensor `index` (-1: an empty placeholder for an absent optional input). */
  tensor(index) {
    if (index < 0) return this.empty;
    const root = this.root(index);
    if (!this.byTensor.has(root)) {
      const t = this.plan.tensors[root];
      const buffer = t.location === 1 ? this.upload(weightFloats(this.plan, t)) : this.create(product(t.dims) * 4);
      this.byTensor.set(root, buffer);
    }
    return this.byTensor.get(root);
  }

  destroy() {
    for (const buffer of this.owned) buffer.destroy();
    this.owned = [];
  }
}

/** Loads and compiles each kernel file once (common.wgsl prepended), and each entry point's pipeline once per set of
 * pipeline constants. */
class PipelineCache {
  constructor(device, loadKernel) {
    this.device = device;
    this.loadKernel = loadKernel;
    this.sources = new Map();
    this.modules = new Map();
    this.pipelines = new Map();
  }

  source(file) {
    if (!this.sources.has(file)) this.sources.set(file, this.loadKernel(file));
    return this.sources.get(file);
  }

  async module(file) {
    if (!this.modules.has(file)) {
      this.modules.set(file, Promise.all([this.source(COMMON), this.source(file)])
        .then(([common, source]) => this.device.createShaderModule({ label: file, code: `${common}\n${source}` })));
    }
    return this.modules.get(file);
  }

  async pipeline(file, entry, constants) {
    const key = `${file}:${entry}:${JSON.stringify(constants)}`;
    if (!this.pipelines.has(key)) {
      this.pipelines.set(key, this.module(file).then((module) => this.compile(module, file, entry, constants)));
    }
    return this.pipelines.get(key);
  }

  async compile(module, file, entry, constants) {
    try {
      const compute = { module, entryPoint: entry, constants };
      return await this.device.createComputePipelineAsync({ layout: "auto", compute });
    } catch (error) {
      const info = await module.getCompilationInfo();
      const messages = info.messages.map((m) => `${file}:${m.lineNum}:${m.linePos} ${m.message}`).join("; ");
      throw new Error(`edgepack: WebGPU kernel ${file}:${entry} did not compile: ${messages || error.message}`);
    }
  }
}

/** What the op lowerings see: dims, weight buffers (dequantized), per-op storage and step records. */
function loweringContext(plan, buffers) {
  return {
    dims: (index) => plan.tensors[index].dims,
    weight(op) {
      const slot = quantizedSlot(op);
      const index = op.inputs[1];
      if (!slot || plan.tensors[index].dtype === F32) return index;
      return buffers.upload(dequantize(plan, plan.tensors[index], slot));
    },
    weightValues(op) {
      const slot = quantizedSlot(op);
      const t = plan.tensors[op.inputs[1]];
      return slot && t.dtype !== F32 ? dequantize(plan, t, slot) : weightFloats(plan, t);
    },
    upload: (values) => buffers.upload(values),
    step: (file, entry, words, operands, groups, constants = {}) => ({
      file, entry, words, operands, groups, constants,
    }),
  };
}

function operandBuffer(buffers, operand) {
  return typeof operand === "number" ? buffers.tensor(operand) : operand;
}

async function buildDispatch(device, pipelines, buffers, step) {
  if (step.groups.some((n) => n > MAX_GROUPS)) {
    const groups = step.groups.join("x");
    throw new Error(`edgepack: ${step.file}:${step.entry} needs ${groups} workgroups, over ${MAX_GROUPS} per dimension`);
  }
  const pipeline = await pipelines.pipeline(step.file, step.entry, step.constants);
  const uniform = buffers.create(UNIFORM_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
  device.queue.writeBuffer(uniform, 0, step.words);
  const entries = [{ binding: 0, resource: { buffer: uniform } }];
  step.operands.forEach((operand, i) => {
    entries.push({ binding: i + 1, resource: { buffer: operandBuffer(buffers, operand) } });
  });
  const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  return { pipeline, bindGroup, groups: step.groups };
}

function checkFeed(plan, index, data) {
  const t = plan.tensors[index];
  const count = product(t.dims);
  if (!(data instanceof Float32Array) || data.length !== count) {
    throw new Error(`edgepack: input "${t.name}" needs a Float32Array of ${count} values (dims ${t.dims.join("x")})`);
  }
}

/** Output copies into one readback buffer: [{index, offset, bytes}], total bytes. */
function readbackLayout(plan) {
  let total = 0;
  const layout = plan.outputs.map((index) => {
    const bytes = product(plan.tensors[index].dims) * 4;
    const entry = { index, offset: total, bytes };
    total += bufferSize(bytes);
    return entry;
  });
  return { layout, total: bufferSize(total) };
}

/** Every dispatch of `plan`, with device validation and out-of-memory errors turned into one thrown Error. */
async function buildAll(device, plan, buffers, loadKernel) {
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let dispatches = null;
  let failure = null;
  try {
    const context = loweringContext(plan, buffers);
    const steps = plan.ops.flatMap((op) => LOWERINGS[op.op](context, op));
    const pipelines = new PipelineCache(device, loadKernel);
    dispatches = await Promise.all(steps.map((step) => buildDispatch(device, pipelines, buffers, step)));
    for (const index of [...plan.inputs, ...plan.outputs]) buffers.tensor(index);
  } catch (error) {
    failure = error;
  }
  const deviceErrors = [await device.popErrorScope(), await device.popErrorScope()].filter(Boolean);
  if (!failure && deviceErrors.length) failure = new Error(`edgepack: WebGPU setup failed: ${deviceErrors[0].message}`);
  if (failure) {
    buffers.destroy();
    throw failure;
  }
  return dispatches;
}

/**
 * Builds everything `plan` needs on `device` (pipelines compiled once, weights uploaded once) and returns
 * { run(feeds) -> Promise<{name: {data, dims}}>, destroy() }. Runs are serialized.
 */
export async function createGpuPartition(device, plan, loadKernel) {
  const refusal = gpuRefusal(plan);
  if (refusal) throw new Error(`edgepack: the plan cannot run on WebGPU: ${refusal}`);
  const buffers = new BufferTable(device, plan);
  const dispatches = await buildAll(device, plan, buffers, loadKernel);
  const { layout, total } = readbackLayout(plan);
  let queue = Promise.resolve();

  async function runOnce(feeds) {
    for (const index of plan.inputs) {
      const data = feeds[plan.tensors[index].name];
      checkFeed(plan, index, data);
      if (data.length) device.queue.writeBuffer(buffers.tensor(index), 0, data);
    }
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const d of dispatches) {
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(...d.groups);
    }
    pass.end();
    const readback = device.createBuffer({ size: total, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    for (const entry of layout) {
      if (entry.bytes) encoder.copyBufferToBuffer(buffers.tensor(entry.index), 0, readback, entry.offset, entry.bytes);
    }
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const mapped = readback.getMappedRange();
    const results = {};
    for (const entry of layout) {
      const t = plan.tensors[entry.index];
      const data = new Float32Array(mapped.slice(entry.offset, entry.offset + entry.bytes));
      results[t.name] = { data, dims: [...t.dims] };
    }
    readback.unmap();
    readback.destroy();
    return results;
  }

  return {
    run(feeds) {
      const result = queue.then(() => runOnce(feeds));
      queue = result.catch(() => undefined);
      return result;
    },
    destroy() {
      buffers.destroy();
    },
  };
}
