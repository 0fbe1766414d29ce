// The GPU buffers of a partition: one storage buffer per arena tensor (the reshape family aliases its input's),
// weights uploaded once as float32, per-op data and uniforms, and where each output lands in the readback buffer.

import { product } from "./webgpu_geometry.js";
import { weightFloats } from "./webgpu_weights.js";

const VECTOR_BYTES = 16;
const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** Buffer sizes are whole vec4s, so vec4 kernels may touch the padding past a tensor's last element. */
function bufferSize(bytes) {
  return Math.max(VECTOR_BYTES, Math.ceil(bytes / VECTOR_BYTES) * VECTOR_BYTES);
}

/** Owns every GPU buffer of a partition: arena tensors (Copy outputs alias their input), weights, per-op data. */
export class BufferTable {
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

/** Output copies into one readback buffer: [{index, offset, bytes}], total bytes. */
export function readbackLayout(plan) {
  let total = 0;
  const layout = plan.outputs.map((index) => {
    const bytes = product(plan.tensors[index].dims) * 4;
    const entry = { index, offset: total, bytes };
    total += bufferSize(bytes);
    return entry;
  });
  return { layout, total: bufferSize(total) };
}
