// Which plans the WebGPU executor runs: the WGSL files each plan op needs and the kinds it runs (ops.js, made from
// the op contract), the dtypes each op slot accepts, the quantized weight slot of an op, and one line naming why a
// plan cannot run.

import { DTYPE_NAMES } from "./epk.js";
import { BINARY_KINDS, GPU_KINDS, OP_FILES, UNARY_KINDS, WEIGHT_SLOTS } from "./ops.js";

export const COMMON = "common.wgsl";

/** The plan ops this executor runs. */
export const GPU_OPS = new Set(Object.keys(OP_FILES));

export const F32 = 1;
export const I8 = 3;
export const F16 = 10;
const I4 = 22;

/** The quantized weight slot of `op`: {axis, block, scale (tensor index)}, or null when it has none. */
export function quantizedSlot(op) {
  const form = WEIGHT_SLOTS[op.op];
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
  if (op.op === "Binary" && !GPU_KINDS.Binary.includes(op.params[0])) {
    return `Binary ${BINARY_KINDS[op.params[0]] ?? op.params[0]} has no WebGPU kernel`;
  }
  if (op.op === "Unary" && !GPU_KINDS.Unary.includes(op.params[0])) {
    return `Unary ${UNARY_KINDS[op.params[0]] ?? op.params[0]} has no WebGPU kernel`;
  }
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
