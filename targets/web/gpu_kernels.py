"""The WGSL files (targets/web/runtime/kernels/) each plan op needs on WebGPU; mirrors OP_FILES in webgpu_support.js."""

COMMON = "common.wgsl"

KERNEL_FILES: dict[str, tuple[str, ...]] = {
    "Copy": (),
    "Binary": (COMMON, "binary.wgsl"),
    "Unary": (COMMON, "unary.wgsl"),
    "Conv": (COMMON, "conv.wgsl", "gemm.wgsl"),
    "ConvTranspose": (COMMON, "conv.wgsl"),
    "MatMul": (COMMON, "gemm.wgsl"),
    "Gemm": (COMMON, "gemm.wgsl"),
    "Pool": (COMMON, "pool.wgsl"),
    "Softmax": (COMMON, "softmax.wgsl"),
    "Reduce": (COMMON, "reduce.wgsl"),
    "Transpose": (COMMON, "layout.wgsl"),
    "Concat": (COMMON, "layout.wgsl"),
    "Split": (COMMON, "layout.wgsl"),
    "Slice": (COMMON, "layout.wgsl"),
    "Resize": (COMMON, "resize.wgsl"),
    "ChannelAffine": (COMMON, "normalize.wgsl"),
    "LayerNorm": (COMMON, "normalize.wgsl"),
}
