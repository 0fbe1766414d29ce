// Numbers every op lowering uses: element counts and strides, broadcast and merged axes, the uniform parameter
// words of a dispatch, and its workgroup counts.

const PARAM_WORDS = 64;
export const UNIFORM_BYTES = PARAM_WORDS * 4;
const GROUP_SIZE = 64;
export const MAX_GROUPS = 65535;
export const TILE = 4;
export const GEMM_TILE_COLUMNS = 8;
export const CONV_TILE_ROWS = 8;
const STRIDE_ITEMS = 16;
const TILED_GROUP = [16, 4];

const bitsView = new DataView(new ArrayBuffer(4));

export function floatBits(value) {
  bitsView.setFloat32(0, value, true);
  return bitsView.getUint32(0, true);
}

export function product(dims) {
  return dims.reduce((a, b) => a * b, 1);
}

export function contiguousStrides(dims) {
  const strides = new Array(dims.length);
  let stride = 1;
  for (let d = dims.length - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= dims[d];
  }
  return strides;
}

/** One invocation per item, the groups spread over x then y (maxComputeWorkgroupsPerDimension). */
export function linearGroups(count) {
  const groups = Math.ceil(count / GROUP_SIZE);
  const x = Math.min(groups, MAX_GROUPS);
  return x ? [x, Math.ceil(groups / x), 1] : [0, 1, 1];
}

/** Groups for a grid-stride kernel: enough to keep every core busy, each invocation taking several items. */
export function strideGroups(count) {
  return [Math.max(1, Math.min(Math.ceil(count / GROUP_SIZE / STRIDE_ITEMS), MAX_GROUPS)), 1, 1];
}

export function tiledGroups(columns, rows, batches, tileColumns = TILE, tileRows = TILE) {
  return [Math.ceil(columns / tileColumns / TILED_GROUP[0]), Math.ceil(rows / tileRows / TILED_GROUP[1]), batches];
}

export function paramWords(values) {
  const words = new Uint32Array(PARAM_WORDS);
  values.forEach((v, i) => { words[i] = v >>> 0; });
  return words;
}

/** Words at `at`: up to 8 values (dims or strides). */
export function putWords(words, at, values) {
  values.forEach((v, i) => { words[at + i] = v >>> 0; });
  return words;
}

export function spatial(dims) {
  return dims.length === 4 ? [dims[2], dims[3]] : [1, dims[2]];
}

/** Per-input element strides over the output dims, right-aligned, 0 where the input broadcasts. */
export function broadcastStrides(out, dims) {
  const own = contiguousStrides(dims);
  return out.map((_, i) => {
    const j = i - (out.length - dims.length);
    return j < 0 || dims[j] === 1 ? 0 : own[j];
  });
}

/** Output dims and input strides with size-1 axes dropped and adjacent axes merged where every input allows. */
export function mergeBroadcast(out, inputStrides) {
  const dims = [];
  const strides = inputStrides.map(() => []);
  out.forEach((d, i) => {
    if (d === 1) return;
    const last = dims.length - 1;
    if (last >= 0 && inputStrides.every((s, k) => strides[k][last] === s[i] * d)) {
      dims[last] *= d;
      inputStrides.forEach((s, k) => { strides[k][last] = s[i]; });
      return;
    }
    dims.push(d);
    inputStrides.forEach((s, k) => strides[k].push(s[i]));
  });
  return { dims, strides };
}

/** Whether 4 consecutive elements along a unit-stride axis are always one aligned vec4. */
export function vectorAligned(unitStride, otherStride, bases) {
  return unitStride === 1 && otherStride % 4 === 0 && bases.every((base) => base % 4 === 0);
}
