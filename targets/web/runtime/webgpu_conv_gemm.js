// Lowerings of the matrix ops (Conv, ConvTranspose, MatMul, Gemm) to dispatches of conv.wgsl and gemm.wgsl; each
// returns the op's steps {file, entry, words, operands, groups, constants} (see loweringContext in webgpu.js).

import {
  CONV_TILE_ROWS, GEMM_TILE_COLUMNS, TILE, contiguousStrides, floatBits, linearGroups, paramWords, product, spatial,
  tiledGroups, vectorAligned,
} from "./webgpu_geometry.js";

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

export function convSteps(ctx, op) {
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

export function convTransposeSteps(ctx, op) {
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

export function matmulSteps(ctx, op) {
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

export function gemmSteps(ctx, op) {
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
