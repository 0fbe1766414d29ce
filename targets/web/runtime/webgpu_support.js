// Which plans the WebGPU executor runs: the WGSL files each plan op needs (gpu_kernels.py mirrors OP_FILES), the
// dtypes each op slot accepts, the quantized weight slot of an op, and one line naming why a plan cannot run.

import { DTYPE_NAMES } from "./epk.js";

export const COMMON = "common.wgsl";
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

export const F32 = 1;
export const I8 = 3;
export const F16 = 10;
const I4 = 22;
const BINARY_KINDS = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual",
  "GreaterOrEqual", "And", "Or", "Xor", "Mod"];
const FLOAT_BINARY_KINDS = 7;
const UNARY_NOT = 20;
/** Own inputs and parameter words of the ops with a quantizable weight slot (input 1); EPK.md "Quantized weights". */
const WEIGHT_SLOT_OPS = { Conv: [3, 15], ConvTranspose: [3, 17], MatMul: [2, 0], Gemm: [3, 7] };

/** The quantized weight slot of `op`: {axis, block, scale (tensor index)}, or null when it has none. */
export function quantizedSlot(op) {
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
