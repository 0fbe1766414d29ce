/* QuantizeLinear of one float with one scale and zero point, and the float round trip of a QDQ pair, shared by
   Quantize, Int8MatMul, RoundTripMatMul and the products' fused round trip (which must give the same bytes and
   floats). */
#ifndef EP_QUANTIZED_VALUE_H
#define EP_QUANTIZED_VALUE_H

#include "../ep_internal.h"

/* One scale and one int8 or uint8 zero point, and the bounds of the zero point's dtype. */
typedef struct ep_byte_quantization {
    float scale, zero, low, high;
} ep_byte_quantization;

/* A per-tensor quantization read from its scale (float32, one) and zero point (int8 or uint8, one) tensors. */
static inline ep_byte_quantization ep_byte_quantization_of(const ep_tensor *scale, const ep_tensor *zero) {
    int is_signed = zero->dtype == EP_I8;
    float z = is_signed ? (float)*(const int8_t *)zero->data : (float)*(const uint8_t *)zero->data;
    return (ep_byte_quantization){*(const float *)scale->data, z, is_signed ? -128.0f : 0.0f,
                                  is_signed ? 127.0f : 255.0f};
}

/* ROUND_MAGIC added then taken away rounds a float of magnitude below 2^22 half to even, in any vector unit. */
#define ROUND_MAGIC 12582912.0f

/* x quantized with one scale and zero point into [low, high], the byte as a float: x / scale is clamped into
   [low - zero, high - zero] first (NaN to the low end, as store_quantized; the bounds are integers, so clamping
   before rounding gives the same), so the rounding trick holds. Inline, for the loops that call it to vectorize:
   two selects each compared unconditionally, which GCC if-converts under its default -ftrapping-math (a clamp to
   +-2^21 before a clamp to the bounds kept every such loop scalar). */
static inline float quantized_value(float x, float scale, float zero, float low, float high) {
    float v = x / scale;
    v = v >= low - zero ? v : low - zero;
    v = v <= high - zero ? v : high - zero;
    return (v + ROUND_MAGIC) - ROUND_MAGIC + zero;
}

/* The round trip (QuantizeLinear then DequantizeLinear, one scale and an int8 or uint8 zero point) of x, as
   DequantizeLinear gives it: x / scale clamped into [low, high], the dtype's bounds less the zero point (NaN to low),
   rounded half to even, times the scale. That is quantized_value less the zero point (the bounds are integers, so
   clamping before rounding gives the same), in half its vector instructions. */
static inline float round_trip_value(float x, float scale, float low, float high) {
    float v = x / scale;
    v = v >= low ? v : low;
    v = v <= high ? v : high;
    return ((v + ROUND_MAGIC) - ROUND_MAGIC) * scale;
}

/* round_trip_value's low bound for an int8 (is_signed) or uint8 zero point; the high one is 255 above it. */
static inline float round_trip_low(int is_signed, float zero) { return (is_signed ? -128.0f : 0.0f) - zero; }

/* round_trip_value of count floats, with an int8 (is_signed) or uint8 zero point. */
static inline void ep_round_trip_per_tensor(const float *x, float *y, int is_signed, int64_t count, float scale,
                                            float zero) {
    float low = round_trip_low(is_signed, zero);
    for (int64_t i = 0; i < count; i++) y[i] = round_trip_value(x[i], scale, low, low + 255.0f);
}

#endif
