"""The compiler from ONNX to the C core's `.epk` plans: shapes fixed, shape subgraphs folded, every node through
its emitter (`emitters/`), buffers planned into one arena (`arena.py`). The runtime reads plans and finds this
package through the `edgepack.plan_compilers` entry point when it must run plain ONNX on the core."""
