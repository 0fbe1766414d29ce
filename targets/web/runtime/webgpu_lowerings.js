// The op dispatch table: each plan op's lowering to the dispatches that compute it, {file, entry, words, operands,
// groups, constants} (see loweringContext in webgpu.js). The matrix ops live in webgpu_conv_gemm.js.

import { convSteps, convTransposeSteps, gemmSteps, matmulSteps } from "./webgpu_conv_gemm.js";
import {
  broadcastStrides, contiguousStrides, floatBits, linearGroups, mergeBroadcast, paramWords, product, putWords, spatial,
  strideGroups,
} from "./webgpu_geometry.js";

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

export const LOWERINGS = {
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
