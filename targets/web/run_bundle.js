// Evaluated in a page by chromium.py: imports a bundle's index.js, runs it on base64-encoded feeds and returns the
// outputs (base64), the provider per partition, the adapter, the wasm core's threads and the timings.
async ({ module, providers, threads, feeds, repeat }) => {
  const decode = (text, Type) => { const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    return new Type(bytes.buffer); };
  const encode = (array) => { const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    let text = ""; for (let i = 0; i < bytes.length; i += 32768) text += String.fromCharCode(...bytes.subarray(i, i + 32768));
    return btoa(text); };
  const TYPES = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, int8: Int8Array, bool: Uint8Array };
  const started = performance.now();
  const { createSession, model } = await import(module);
  const session = await createSession({ providers, threads: threads ?? undefined });
  const inputs = Object.fromEntries(model.inputs.map((i) => [i.name, { data: decode(feeds[i.name], TYPES[i.dtype]), dims: i.dims }]));
  const firstStart = performance.now();
  let outputs = await session.run(inputs);
  const coldStart = performance.now() - started;
  const first = performance.now() - firstStart;
  const times = [];
  for (let i = 0; i < repeat; i++) { const t = performance.now(); outputs = await session.run(inputs); times.push(performance.now() - t); }
  const result = { providers: session.providers, partitions: session.partitions, adapter: session.adapter, threads: session.threads,
    coldStartMs: coldStart, firstRunMs: first, runMs: times, outputs: {} };
  for (const [name, { data, dims }] of Object.entries(outputs)) result.outputs[name] = { data: encode(data), dims };
  session.release();
  return result;
}
