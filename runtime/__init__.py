"""The runtime: Session and execution providers (reference, cpu, neon, wasm, webgpu, openvino, coreml)."""
