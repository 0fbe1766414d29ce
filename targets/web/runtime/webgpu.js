// The WebGPU executor: runs one parsed .epk plan (epk.js) op by op on a GPUDevice, float32 only. Every arena
// tensor gets its own storage buffer (the reshape family aliases its input's), weights are uploaded once
// (quantized and float16 ones widened to float32 first, as runtime/native/kernels/quant.c computes them), and each
// op becomes one or more dispatches whose pipelines, uniform words and bind groups are built at creation. A run
// writes the inputs, encodes every dispatch into one compute pass, submits once and reads the outputs back once.
// This module builds and runs a partition; its parts are webgpu_support.js (which plans run), webgpu_weights.js,
// webgpu_buffers.js, webgpu_pipelines.js and the op lowerings (webgpu_lowerings.js, webgpu_conv_gemm.js, both over
// webgpu_geometry.js). The bundle ships them all (GPU_RUNTIME_FILES in bundle.py).

import { BufferTable, readbackLayout } from "./webgpu_buffers.js";
import { MAX_GROUPS, UNIFORM_BYTES, product } from "./webgpu_geometry.js";
import { LOWERINGS } from "./webgpu_lowerings.js";
import { PipelineCache } from "./webgpu_pipelines.js";
import { F32, gpuRefusal, quantizedSlot } from "./webgpu_support.js";
import { dequantize, weightFloats } from "./webgpu_weights.js";

export { parsePlan } from "./epk.js";
export { GPU_OPS, gpuRefusal, kernelFiles } from "./webgpu_support.js";

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
