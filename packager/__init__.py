"""The packager: slim, quantize and partition passes over ONNX graphs."""
