/* QuantizeLinear of one float with one scale and zero point, and the float round trip of a QDQ pair, shared by
   Quantize and Int8MatMul (which must give the same bytes and floats). */
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

/* The round trip (QuantizeLinear then DequantizeLinear, one scale and an int8 or uint8 zero point) of count floats:
   the byte less the zero point, times the scale, as DequantizeLinear gives it (the difference of two integers below
   2^24 is exact in float32). */
static inline void ep_round_trip_per_tensor(const float *x, float *y, int is_signed, int64_t count, float scale,
                                            float zero) {
    float low = is_signed ? -128.0f : 0.0f, high = is_signed ? 127.0f : 255.0f;
    for (int64_t i = 0; i < count; i++) y[i] = (quantized_value(x[i], scale, zero, low, high) - zero) * scale;
}

#endif
