/* Quantized weights as floats, as ONNX DequantizeLinear computes them: int8 or packed int4 values with float32 or
   float16 scales (per index along an axis, or in blocks along it), and float16 values widened exactly. Shared by the
   ops that dequantize their weights per call (quant.c) and by ExpandWeight, which does it once when a session
   opens (expand_weight.c). */
#include "dequantize.h"
#include "vector_math.h"
#if defined(__F16C__)
#include <immintrin.h>
#elif defined(__aarch64__)
/* Eight float16 values and eight floats, which ARM64 converts between in vector registers. */
typedef _Float16 halves __attribute__((vector_size(16)));
typedef float floats __attribute__((vector_size(32)));
#endif

ep_status ep_check_quantized_weight(const ep_node *n, const ep_tensor *w, const ep_tensor *scale, int32_t axis,
                                    int32_t block, char *error) {
    if (!w) return scale || axis || block ? ep_fail(error, n, ": scales for an absent weight") : EP_OK;
    if (w->dtype == EP_F32 || w->dtype == EP_F16)
        return scale || axis || block ? ep_fail(error, n, ": scales for a float weight") : EP_OK;
    if (w->dtype != EP_I8 && w->dtype != EP_I4)
        return ep_fail(error, n, ": weights must be float32, float16, int8 or int4");
    if (!scale || (scale->dtype != EP_F32 && scale->dtype != EP_F16))
        return ep_fail(error, n, ": quantized weights need float32 or float16 scales");
    if (axis < 0 || axis >= w->rank || block < 0) return ep_fail(error, n, ": bad quantization axis or block size");
    if (block == 0) {
        if (scale->count != w->dims[axis]) return ep_fail(error, n, ": one scale per index along the axis");
        return EP_OK;
    }
    int64_t outer = 1;
    for (int32_t d = 0; d < axis; d++) outer *= w->dims[d];
    if (scale->rank != 3 || scale->dims[0] != outer || scale->dims[2] < 1 || outer < 1 ||
        w->count % (outer * scale->dims[2]))
        return ep_fail(error, n, ": blocked scales must be [outer, blocks, inner] of the weight");
    int64_t length = w->count / (outer * scale->dims[2]);
    if (scale->dims[1] != (length + block - 1) / block) return ep_fail(error, n, ": blocked scales miss a block");
    return EP_OK;
}

/* Values float16 cannot keep 13 mantissa bits of: its subnormals (below 2^-14) and what rounds to infinity. */
static float to_half_rare(float x) {
    union { float f; uint32_t u; } v = {x};
    uint32_t magnitude = v.u & 0x7FFFFFFFu;
    if (magnitude < 0x38800000u) return ep_roundf_even(x * 16777216.0f) * (1.0f / 16777216.0f);
    if (magnitude <= 0x7F800000u) v.u = (v.u & 0x80000000u) | 0x7F800000u; /* 65520 and up; NaN stays NaN */
    return v.f;
}

/* x rounded to the nearest float16 value (ties to even), returned as float. */
static inline float to_half_precision(float x) {
    union { float f; uint32_t u; } v = {x};
    uint32_t magnitude = v.u & 0x7FFFFFFFu;
    if (magnitude - 1u < 0x387FFFFFu || magnitude >= 0x477FF000u) return to_half_rare(x);
    v.u = (v.u + 0xFFFu + ((v.u >> 13) & 1u)) & ~0x1FFFu;
    return v.f;
}

/* Each float rounded to the nearest float16 value (ties to even), in place: 8 at a time through the CPU's own
   conversions where it has them (F16C, ARM64; the scalar rounding took 90% of an int4 weight's dequantization),
   else one by one. */
static void round_to_halves(float *v, int64_t count) {
    int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(v + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(v + i), _MM_FROUND_TO_NEAREST_INT)));
#elif defined(__aarch64__)
    for (; i + 8 <= count; i += 8) {
        floats f;
        __builtin_memcpy(&f, v + i, sizeof f);
        f = __builtin_convertvector(__builtin_convertvector(f, halves), floats);
        __builtin_memcpy(v + i, &f, sizeof f);
    }
#endif
    for (; i < count; i++) v[i] = to_half_precision(v[i]);
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    union { uint32_t u; float f; } v;
    if (exponent == 0) {
        v.f = (float)mantissa * (1.0f / 16777216.0f);
        v.u |= sign;
    } else {
        v.u = sign | (exponent == 31 ? 0x7F800000u | mantissa << 13 : (exponent + 112) << 23 | mantissa << 13);
    }
    return v.f;
}

/* float16 values widened exactly, 8 at a time: by the CPU's own conversion where it has one (F16C, ARM64; on x86
   GCC 12 turns a _Float16 vector conversion into one instruction per element, hence the intrinsic there), else
   without branches: the half's exponent and mantissa bits moved into a float's and the float scaled by 2^112 (exact
   for normal and subnormal halves), infinities and NaNs set apart. */
static void widen_halves(const uint16_t *half, float *out, int64_t count) {
    int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(half + i))));
#elif defined(__aarch64__)
    for (; i + 8 <= count; i += 8) {
        halves h;
        __builtin_memcpy(&h, half + i, sizeof h);
        floats f = __builtin_convertvector(h, floats);
        __builtin_memcpy(out + i, &f, sizeof f);
    }
#elif defined(EP_VECTOR_MATH)
    typedef uint16_t half_lanes __attribute__((vector_size(EP_VF_LANES * 2)));
    for (; i + EP_VF_LANES <= count; i += EP_VF_LANES) {
        half_lanes h;
        __builtin_memcpy(&h, half + i, sizeof h);
        ep_vi bits = __builtin_convertvector(h, ep_vi), magnitude = (bits & 0x7FFF) << 13;
        ep_vi scaled = (ep_vi)((ep_vf)magnitude * 0x1p112f), special = magnitude >= (0x7C00 << 13);
        ep_vf f = (ep_vf)((scaled & ~special) | ((magnitude | 0x7F800000) & special) | ((bits & 0x8000) << 16));
        __builtin_memcpy(out + i, &f, sizeof f);
    }
#endif
    for (; i < count; i++) out[i] = half_to_float(half[i]);
}

static float scale_at(const ep_tensor *scale, int64_t i) {
    return scale->dtype == EP_F32 ? ((const float *)scale->data)[i] : half_to_float(((const uint16_t *)scale->data)[i]);
}

/* The integers as floats, in flat order (int4: the low nibble first; (v ^ 8) - 8 sign-extends a nibble). */
static void widen(const ep_tensor *w, float *out) {
    int64_t count = w->count;
    if (w->dtype == EP_I8) {
        const int8_t *q = (const int8_t *)w->data;
        for (int64_t i = 0; i < count; i++) out[i] = (float)q[i];
        return;
    }
    const uint8_t *bytes = (const uint8_t *)w->data;
    for (int64_t p = 0; p < count / 2; p++) {
        out[2 * p] = (float)(((bytes[p] & 0xF) ^ 8) - 8);
        out[2 * p + 1] = (float)(((bytes[p] >> 4) ^ 8) - 8);
    }
    if (count % 2) out[count - 1] = (float)(((bytes[count / 2] & 0xF) ^ 8) - 8);
}

static void times_step(float *row, int64_t n, float step) {
    for (int64_t r = 0; r < n; r++) row[r] *= step;
}

/* rows x inner values that share one run of `inner` scales (from scale[at]): the scales are read 64 at a time
   onto the stack, so float16 ones are widened once per run, not once per value. */
static void times_scale_rows(float *plane, int64_t rows, int64_t inner, const ep_tensor *scale, int64_t at) {
    float steps[64];
    for (int64_t r0 = 0; r0 < inner; r0 += 64) {
        int64_t n = inner - r0 < 64 ? inner - r0 : 64;
        for (int64_t r = 0; r < n; r++) steps[r] = scale_at(scale, at + r0 + r);
        for (int64_t a = 0; a < rows; a++) {
            float *row = plane + a * inner + r0;
            for (int64_t r = 0; r < n; r++) row[r] *= steps[r];
        }
    }
}

void ep_dequantize(const ep_tensor *w, const ep_tensor *scale, int32_t axis, int32_t block, float *out) {
    if (w->dtype == EP_F16) {
        widen_halves((const uint16_t *)w->data, out, w->count);
        return;
    }
    int64_t outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= w->dims[d];
    if (block) inner = scale->dims[2];
    else for (int32_t d = axis + 1; d < w->rank; d++) inner *= w->dims[d];
    int64_t length = outer && inner ? w->count / (outer * inner) : 0, blocks = block ? scale->dims[1] : 1;
    widen(w, out);
    if (!block && inner == 1) times_scale_rows(out, outer, length, scale, 0);
    for (int64_t o = 0; o < outer && (block || inner > 1); o++) {
        float *plane = out + o * length * inner;
        if (!block) {
            for (int64_t a = 0; a < length; a++) times_step(plane + a * inner, inner, scale_at(scale, a));
            continue;
        }
        for (int64_t b = 0; b < blocks; b++) {
            int64_t first = b * block, rows = length - first < block ? length - first : block;
            if (inner == 1) times_step(plane + first, rows, scale_at(scale, o * blocks + b));
            else times_scale_rows(plane + first * inner, rows, inner, scale, (o * blocks + b) * inner);
        }
    }
    if (scale->dtype == EP_F16) round_to_halves(out, w->count);
}

