// The compute pipelines of a partition, each kernel file fetched and compiled once.

import { COMMON } from "./webgpu_support.js";

/** Loads and compiles each kernel file once (common.wgsl prepended), and each entry point's pipeline once per set of
 * pipeline constants. */
export class PipelineCache {
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
