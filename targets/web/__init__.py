"""The web target: an npm-style ES module bundle with the compact wasm core and WebGPU kernels."""

from . import bundle  # noqa: F401  (registration)
