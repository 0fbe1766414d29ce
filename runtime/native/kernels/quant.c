/* Quantized weights (int8 or packed int4 with float32 or float16 scales; float16 with none) under Conv,
   ConvTranspose, MatMul, Gemm, LSTM and PackedMatMul. A quantized op carries, after its own inputs and parameters,
   one scale input and two parameter words (axis, block size; 0 = one scale per index along the axis) per weight
   slot; EPK.md gives the layouts. Each call dequantizes its weights into the head of the scratch, as ONNX
   DequantizeLinear computes them (rounded to float16 when the scales are float16; float16 weights widened exactly),
   and runs the float kernel on them with the rest of the scratch; PackedMatMul dequantizes one panel of B at a time,
   just before the product reads it (the panel stays in cache, and no call writes the whole float weight). */
#include "gemm.h"
#include "vector_math.h"
#if defined(__F16C__)
#include <immintrin.h>
#elif defined(__aarch64__)
/* Eight float16 values and eight floats, which ARM64 converts between in vector registers. */
typedef _Float16 halves __attribute__((vector_size(16)));
typedef float floats __attribute__((vector_size(32)));
#endif

extern const ep_kernel ep_kernel_conv, ep_kernel_conv_transpose, ep_kernel_matmul, ep_kernel_gemm, ep_kernel_lstm,
    ep_kernel_packed_matmul;

#define MAX_SLOTS 2
#define MAX_INPUTS 8

typedef struct slots {
    uint32_t own_inputs, own_params, count;
    uint32_t input[MAX_SLOTS];
} slots;

static const slots *slots_of(uint32_t id) {
    static const slots table[] = {
        {EP_OP_CONV_SLOTS}, {EP_OP_CONV_TRANSPOSE_SLOTS}, {EP_OP_MAT_MUL_SLOTS}, {EP_OP_GEMM_SLOTS}, {EP_OP_LSTM_SLOTS},
        {EP_OP_PACKED_MAT_MUL_SLOTS},
    };
    switch (id) {
    case EP_OP_CONV: return &table[0];
    case EP_OP_CONV_TRANSPOSE: return &table[1];
    case EP_OP_MAT_MUL: return &table[2];
    case EP_OP_GEMM: return &table[3];
    case EP_OP_LSTM: return &table[4];
    case EP_OP_PACKED_MAT_MUL: return &table[5];
    }
    return 0;
}

static int is_quantized_form(const ep_node *n, const slots *s) {
    return n->n_in == s->own_inputs + s->count && n->n_params == s->own_params + 2 * s->count;
}

/* Floats a dequantized weight takes in the scratch (a multiple of 16, so the next one stays aligned). */
static size_t scratch_floats(const ep_tensor *w) { return ((size_t)w->count + 15) / 16 * 16; }

static ep_status check_slot(const ep_node *n, const ep_tensor *w, const ep_tensor *scale, int32_t axis,
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

/* The node the float kernel sees: quantized weights replaced by float32 views (data in the scratch when running),
   scale inputs and quantization words dropped. */
static void float_view(const ep_node *n, const slots *s, ep_node *view, ep_tensor *tensors, ep_tensor **inputs) {
    *view = *n;
    view->n_in = s->own_inputs;
    view->n_params = s->own_params;
    view->in = inputs;
    for (uint32_t i = 0; i < s->own_inputs; i++) inputs[i] = n->in[i];
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        if (!w || w->dtype == EP_F32) continue;
        tensors[k] = *w;
        tensors[k].dtype = EP_F32;
        tensors[k].bytes = (size_t)w->count * sizeof(float);
        tensors[k].data = 0;
        inputs[s->input[k]] = &tensors[k];
    }
}

static ep_status check_quantized(const ep_kernel *inner, const ep_node *n, size_t *scratch, char *error) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return inner->check(n, scratch, error);
    size_t floats = 0;
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        int32_t axis = n->params[s->own_params + 2 * k], block = n->params[s->own_params + 2 * k + 1];
        ep_status status = check_slot(n, w, n->in[s->own_inputs + k], axis, block, error);
        if (status != EP_OK) return status;
        if (w && w->dtype != EP_F32) floats += scratch_floats(w);
    }
    ep_node view;
    ep_tensor tensors[MAX_SLOTS];
    ep_tensor *inputs[MAX_INPUTS];
    float_view(n, s, &view, tensors, inputs);
    ep_status status = inner->check(&view, scratch, error);
    *scratch += floats * sizeof(float);
    return status;
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

/* The whole weight as DequantizeLinear computes it. Per axis: scale[axis index]; blocked: the weight in flat order
   is [outer, length, inner] and its scale is [outer, length / block, inner]. */
static void dequantize(const ep_tensor *w, const ep_tensor *scale, int32_t axis, int32_t block, float *out) {
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

static ep_status run_quantized(const ep_kernel *inner, const ep_node *n, const ep_context *ctx) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return inner->run(n, ctx);
    ep_node view;
    ep_tensor tensors[MAX_SLOTS];
    ep_tensor *inputs[MAX_INPUTS];
    float_view(n, s, &view, tensors, inputs);
    size_t used = 0;
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        if (!w || w->dtype == EP_F32) continue;
        tensors[k].data = ctx->scratch + used;
        dequantize(w, n->in[s->own_inputs + k], n->params[s->own_params + 2 * k],
                   n->params[s->own_params + 2 * k + 1], ctx->scratch + used);
        used += scratch_floats(w);
    }
    ep_context rest = {ctx->scratch + used, ctx->scratch_floats - used, ctx->error};
    return inner->run(&view, &rest);
}

/* PackedMatMul's B ([P, K, 32] panels) quantized: float16, or integers with scales blocked along K per column
   ([P, K / block, 32], axis 1), so that each panel dequantizes on its own. */
static ep_status check_packed_matmul(const ep_node *n, size_t *scratch, char *error) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return ep_kernel_packed_matmul.check(n, scratch, error);
    const ep_tensor *w = n->in[1], *scale = n->in[s->own_inputs];
    int32_t axis = n->params[s->own_params], block = n->params[s->own_params + 1];
    ep_status status = check_quantized(&ep_kernel_packed_matmul, n, scratch, error);
    if (status != EP_OK) return status;
    if (w->dtype != EP_F32 && w->dtype != EP_F16 &&
        (axis != 1 || !block || scale->dims[0] != w->dims[0] || scale->dims[2] != w->dims[2]))
        return ep_fail(error, n, ": quantized panels need scales blocked along K, per panel column");
    if (w->dtype != EP_F32) *scratch = (size_t)w->dims[1] * w->dims[2] * sizeof(float);
    return EP_OK;
}

/* An int8 panel (K rows of 32) times its float32 scales (one row of 32 per `block` rows) in one pass: the same
   products as widen then scale, each row a vector loop. */
static void int8_panel(const int8_t *q, const float *steps, int64_t k, int64_t block, float *out) {
    for (int64_t kk = 0; kk < k; kk++) {
        const float *step = steps + kk / block * EP_PREPACKED_COLUMNS;
        const int8_t *row = q + kk * EP_PREPACKED_COLUMNS;
        float *to = out + kk * EP_PREPACKED_COLUMNS;
        for (int32_t j = 0; j < EP_PREPACKED_COLUMNS; j++) to[j] = (float)row[j] * step[j];
    }
}

typedef struct panel_source {
    const ep_tensor *w, *scale;
    int32_t axis, block;
    float *out;
} panel_source;

static const float *dequantized_panel(void *state, int64_t p) {
    panel_source *src = (panel_source *)state;
    const ep_tensor *w = src->w;
    int64_t floats = w->dims[1] * w->dims[2];
    ep_tensor panel = *w, scale = {0};
    panel.dims[0] = 1;
    panel.count = floats;
    panel.data = (char *)w->data + (size_t)(p * floats * ep_dtype_bits(w->dtype) / 8);
    if (src->scale) {
        scale = *src->scale;
        scale.dims[0] = 1;
        scale.count = scale.dims[1] * scale.dims[2];
        scale.data = (char *)scale.data + (size_t)(p * scale.count * ep_dtype_bits(scale.dtype) / 8);
    }
    if (w->dtype == EP_I8 && scale.dtype == EP_F32)
        int8_panel((const int8_t *)panel.data, (const float *)scale.data, w->dims[1], src->block, src->out);
    else
        dequantize(&panel, src->scale ? &scale : 0, src->axis, src->block, src->out);
    return src->out;
}

static ep_status run_packed_matmul(const ep_node *n, const ep_context *ctx) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s) || n->in[1]->dtype == EP_F32) return run_quantized(&ep_kernel_packed_matmul, n, ctx);
    panel_source src = {n->in[1], n->in[s->own_inputs], n->params[s->own_params], n->params[s->own_params + 1],
                        ctx->scratch};
    ep_packed_matmul(n, dequantized_panel, &src);
    return EP_OK;
}

int ep_weight_only_read(const ep_node *n, uint32_t input) {
    const slots *s = slots_of(n->id);
    if (!s || !is_quantized_form(n, s)) return 0;
    for (uint32_t k = 0; k < s->count; k++)
        if (input == s->input[k] || input == s->own_inputs + k) return 1;
    return 0;
}

/* Each op's kernel with quantized weights names its float kernel only: a core whose registry leaves the op out
   (a per-model core) links neither. */
#define WEIGHTS_ENTRY_POINTS(op, inner)                                                                            \
    static ep_status check_##op(const ep_node *n, size_t *scratch, char *error) {                                 \
        return check_quantized(&inner, n, scratch, error);                                                         \
    }                                                                                                              \
    static ep_status run_##op(const ep_node *n, const ep_context *ctx) { return run_quantized(&inner, n, ctx); }

WEIGHTS_ENTRY_POINTS(conv, ep_kernel_conv)
WEIGHTS_ENTRY_POINTS(conv_transpose, ep_kernel_conv_transpose)
WEIGHTS_ENTRY_POINTS(matmul, ep_kernel_matmul)
WEIGHTS_ENTRY_POINTS(gemm, ep_kernel_gemm)
WEIGHTS_ENTRY_POINTS(lstm, ep_kernel_lstm)

const ep_kernel ep_kernel_conv_weights = {"Conv", check_conv, run_conv};
const ep_kernel ep_kernel_conv_transpose_weights = {"ConvTranspose", check_conv_transpose, run_conv_transpose};
const ep_kernel ep_kernel_matmul_weights = {"MatMul", check_matmul, run_matmul};
const ep_kernel ep_kernel_gemm_weights = {"Gemm", check_gemm, run_gemm};
const ep_kernel ep_kernel_lstm_weights = {"LSTM", check_lstm, run_lstm};
const ep_kernel ep_kernel_packed_matmul_weights = {"PackedMatMul", check_packed_matmul, run_packed_matmul};
