// onnxruntime-web's side: its wasm backend with one thread, a fresh InferenceSession per open.
const ARRAYS = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array, bool: Uint8Array };

// `entry`: the file URL that `import "onnxruntime-web"` resolves to in node.
export async function loadOrt(entry) {
  const ort = await import(entry);
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  return ort;
}

// A session of `model` (ONNX bytes) as an async call: feeds name -> { dtype, dims, bytes } -> name -> typed array.
export async function openModel(ort, model) {
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ["wasm"], graphOptimizationLevel: "all", intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const run = async (feeds) => {
    const tensors = {};
    for (const [name, { dtype, dims, bytes }] of Object.entries(feeds)) {
      const Typed = ARRAYS[dtype];
      tensors[name] = new ort.Tensor(dtype, new Typed(bytes.buffer, bytes.byteOffset,
        bytes.byteLength / Typed.BYTES_PER_ELEMENT), dims);
    }
    const results = await session.run(tensors);
    return Object.fromEntries(Object.entries(results).map(([name, tensor]) => [name, tensor.data]));
  };
  return { run, release: () => session.release() };
}
