// @MODEL@: an edgepack web bundle (edgepack @VERSION@, profile @PROFILE@). Usage: README.md; types: index.d.ts.
import { openSession } from "./runtime/session.js";

/** The bundle: inputs and outputs at the shapes it was built for, the wasm core, and the partitions in run order. */
export const model = @MODEL_JSON@;

/**
 * Opens the model. options.providers: "auto" (the default: WebGPU where the browser has a hardware adapter, wasm
 * for the rest and where the only adapter is a software fallback such as SwiftShader) or a list of "webgpu" and
 * "wasm" (a software adapter included); options.cache: keep the plans in the Cache API; options.baseUrl: where the
 * bundle's files are served, when not beside this module; options.threads: the wasm core's threads (default half
 * the logical cores, at most 4; more than one needs a cross-origin isolated page).
 */
export function createSession(options = {}) {
  return openSession(model, new URL("./", import.meta.url), options);
}
