"""The WGSL files (targets/web/runtime/kernels/) each plan op needs on WebGPU, from the op contract (ops.toml)."""

from edgepack.runtime.native.op_contract import contract

COMMON = "common.wgsl"

KERNEL_FILES: dict[str, tuple[str, ...]] = {
    op.name: (COMMON, *op.wgsl) if op.wgsl else () for op in contract().ops if op.gpu}
