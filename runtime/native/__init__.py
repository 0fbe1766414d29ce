"""The compact C runtime core: the `.epk` plan format (EPK.md), its lowering from ONNX, and the host build."""
