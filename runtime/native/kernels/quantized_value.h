/* QuantizeLinear of one float with one scale and zero point, shared by Quantize and Int8MatMul (which must give the
   same bytes). */
#ifndef EP_QUANTIZED_VALUE_H
#define EP_QUANTIZED_VALUE_H

/* ROUND_MAGIC added then taken away rounds a float of magnitude below 2^22 half to even, in any vector unit. */
#define ROUND_MAGIC 12582912.0f

/* x quantized with one scale and zero point into [low, high], the byte as a float: x / scale is clamped into
   [-2^21, 2^21] first (NaN to the low end, as store_quantized), so the rounding trick holds and the saturation bounds
   it. Inline, for the loops that call it to vectorize. */
static inline float quantized_value(float x, float scale, float zero, float low, float high) {
    float v = x / scale;
    v = v == v ? v : -2097152.0f;
    v = v < -2097152.0f ? -2097152.0f : (v > 2097152.0f ? 2097152.0f : v);
    v = (v + ROUND_MAGIC) - ROUND_MAGIC + zero;
    return v < low ? low : (v > high ? high : v);
}

#endif
