// Weight tensors as the float32 values the kernels read: float16 widened, int8 and int4 weight slots dequantized
// as runtime/native/kernels/quant.c computes them.

import { product } from "./webgpu_geometry.js";
import { F16, F32, I8 } from "./webgpu_support.js";

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** floor(log2(m)) for m > 0, exact at powers of two (Math.log2 may round across them); -Infinity for 0. */
function binaryExponent(m) {
  if (m === 0) return -Infinity;
  let e = Math.floor(Math.log2(m));
  if (2 ** e > m) e--;
  if (2 ** (e + 1) <= m) e++;
  return e;
}

/** `x` rounded to the nearest float16 value (ties to even), as a float32 (quant.c to_half_precision). */
function roundToHalf(x) {
  const magnitude = Math.abs(x);
  if (!(magnitude < 65520)) return Number.isNaN(x) ? x : Math.sign(x) * Infinity;
  const quantum = 2 ** (Math.max(binaryExponent(magnitude), -14) - 10);
  let q = magnitude / quantum;
  const whole = Math.floor(q);
  const rest = q - whole;
  q = rest > 0.5 || (rest === 0.5 && whole % 2 === 1) ? whole + 1 : whole;
  return Math.fround(Math.sign(x) * q * quantum);
}

function weightBytes(plan, t) {
  return plan.weights.subarray(t.offset, t.offset + t.bytes);
}

/** A weight tensor's values as float32 (float16 widened). */
export function weightFloats(plan, t) {
  const bytes = weightBytes(plan, t);
  const copy = bytes.slice();
  if (t.dtype === F32) return new Float32Array(copy.buffer, 0, product(t.dims));
  const halves = new Uint16Array(copy.buffer, 0, product(t.dims));
  return Float32Array.from(halves, halfToFloat);
}

/** The integers of an int8 or int4 weight, in flat order (int4: low nibble first, signed). */
function widenIntegers(plan, t) {
  const bytes = weightBytes(plan, t);
  const count = product(t.dims);
  const out = new Float32Array(count);
  if (t.dtype === I8) {
    const values = new Int8Array(bytes.buffer, bytes.byteOffset, count);
    out.set(values);
    return out;
  }
  for (let i = 0; i < count; i++) {
    const nibble = i % 2 ? bytes[i >> 1] >> 4 : bytes[i >> 1] & 0xf;
    out[i] = (nibble ^ 8) - 8;
  }
  return out;
}

/** DequantizeLinear of a quantized weight slot (EPK.md): value x scale in float32, float16-rounded for f16 scales. */
export function dequantize(plan, weight, slot) {
  const scaleTensor = plan.tensors[slot.scale];
  const scales = weightFloats(plan, scaleTensor);
  const values = widenIntegers(plan, weight);
  const dims = weight.dims;
  const outer = product(dims.slice(0, slot.axis));
  const inner = slot.block ? scaleTensor.dims[2] : product(dims.slice(slot.axis + 1));
  const length = outer && inner ? values.length / (outer * inner) : 0;
  const blocks = slot.block ? scaleTensor.dims[1] : 1;
  const half = scaleTensor.dtype === F16;
  for (let i = 0; i < values.length; i++) {
    const along = Math.floor(i / inner) % length;
    const o = Math.floor(i / (inner * length));
    const block = Math.floor(along / slot.block);
    const scale = slot.block ? scales[(o * blocks + block) * inner + (i % inner)] : scales[along];
    const v = Math.fround(values[i] * scale);
    values[i] = half ? roundToHalf(v) : v;
  }
  return values;
}
