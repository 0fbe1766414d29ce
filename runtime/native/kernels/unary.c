/* Unary elementwise kinds: activations and math on float32 (and, computed in float32, on float64, float16 and
   bfloat16), Abs/Neg/Sign and BitwiseNot on integers, Not on bool, IsNaN and IsInf. */
#include "gemm.h"
#include "vector_math.h"
#include "wide.h"

/* The output dtype of a unary kind on an input of `dtype`, or -1 when the kind does not take that dtype. */
static int32_t unary_output(int32_t kind, int32_t dtype) {
    int real = ep_wide_real(dtype), integer = ep_wide_integer(dtype);
    switch (kind) {
    case U_NOT: return dtype == EP_BOOL ? EP_BOOL : -1;
    case U_IS_NA_N:
    case U_IS_INF: return real ? EP_BOOL : -1;
    case U_BITWISE_NOT: return integer ? dtype : -1;
    case U_ABS:
    case U_NEG:
    case U_SIGN: return real || integer ? dtype : -1;
    }
    return real ? dtype : -1;
}

static ep_status check_unary(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 3 || n->params[0] < 0 || n->params[0] >= U_KINDS) return ep_fail(error, n, ": bad kind");
    int32_t want = unary_output(n->params[0], n->in[0]->dtype);
    if (want < 0 || n->out[0]->dtype != want || !ep_same_shape(n->in[0], n->out[0]))
        return ep_fail(error, n, ": unsupported dtype, or the output's shape or dtype is wrong");
    return EP_OK;
}

static float unary_f32(int32_t kind, float x, float a, float b) {
    switch (kind) {
    case U_RELU: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case U_SIGMOID: return ep_sigmoidf(x);
    case U_SWISH: return x * ep_sigmoidf(x);
    case U_TANH: return ep_tanhf(x);
    case U_EXP: return ep_expf(x);
    case U_LOG: return ep_logf(x);
    case U_SQRT: return ep_sqrtf(x);
    case U_ERF: return ep_erff(x);
    case U_ABS: return __builtin_fabsf(x);
    case U_NEG: return -x;
    case U_RECIPROCAL: return 1.0f / x;
    case U_CLIP: return x < a ? a : (x > b ? b : x);
    case U_LEAKY_RELU: return x < 0.0f ? a * x : x;
    case U_HARD_SIGMOID: {
        float v = a * x + b;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    case U_HARD_SWISH: {
        float v = x * (1.0f / 6.0f) + 0.5f; /* ONNX: alpha x + beta, alpha = 1/6 */
        return x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
    }
    case U_GELU: return 0.5f * x * (1.0f + ep_erff(x * 0.70710678118654752f));
    case U_GELU_TANH:
        return 0.5f * x * (1.0f + ep_tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case U_FLOOR: return ep_floorf(x);
    case U_CEIL: return -ep_floorf(-x);
    case U_ELU: return x < 0.0f ? a * (ep_expf(x) - 1.0f) : x;
    case U_SOFTPLUS: return x > 20.0f ? x : ep_logf(1.0f + ep_expf(x));
    case U_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
    case U_SELU: return x > 0.0f ? b * x : b * (a * ep_expf(x) - a);
    case U_CELU: return x > 0.0f ? x : a * (ep_expf(x / a) - 1.0f);
    case U_SOFTSIGN: return x / (1.0f + (x < 0.0f ? -x : x));
    case U_THRESHOLDED_RELU: return x > a ? x : 0.0f;
    case U_ROUND: return ep_roundf_even(x);
    case U_SIN: return ep_sinf(x);
    case U_COS: return ep_cosf(x);
    case U_TAN: return ep_tanf(x);
    case U_ASIN: return ep_asinf(x);
    case U_ACOS: return ep_acosf(x);
    case U_ATAN: return ep_atanf(x);
    case U_SINH: return ep_sinhf(x);
    case U_COSH: return ep_coshf(x);
    case U_ASINH: return ep_asinhf(x);
    case U_ACOSH: return ep_acoshf(x);
    case U_ATANH: return ep_atanhf(x);
    case U_MISH: return ep_mishf(x);
    case U_SHRINK: return x < -a ? x + b : (x > a ? x - b : 0.0f);
    }
    return x;
}

/* Abs, Neg and Sign on integers, wrapping like two's complement (the negation of the minimum is itself). */
static void run_integer_unary(const ep_node *n, int32_t kind, int64_t count) {
    int32_t dtype = n->in[0]->dtype;
    int is_signed = ep_dtype_is_signed(dtype);
    for (int64_t i = 0; i < count; i++) {
        uint64_t v = ep_load_int(n->in[0]->data, dtype, i);
        int negative = is_signed && (int64_t)v < 0;
        uint64_t r = kind == U_SIGN ? (uint64_t)(v != 0 && !negative) - (uint64_t)negative
                                    : (kind == U_NEG || negative) ? 0u - v : v;
        ep_store_int(n->out[0]->data, dtype, i, r);
    }
}

/* Not on bool; IsNaN and IsInf (a: detect positive, b: detect negative) on floats. */
static void run_to_bool(const ep_node *n, int32_t kind, int64_t count) {
    uint8_t *y = (uint8_t *)n->out[0]->data;
    if (kind == U_NOT) {
        const uint8_t *x = (const uint8_t *)n->in[0]->data;
        for (int64_t i = 0; i < count; i++) y[i] = !x[i];
        return;
    }
    int positive = ep_param_f32(n, 1) != 0.0f, negative = ep_param_f32(n, 2) != 0.0f;
#ifndef __wasm__ /* a loop that vectorizes (minilm's masks: 6 ns a value); not on wasm, for the page's bytes */
    if (n->in[0]->dtype == EP_F32 && kind == U_IS_NA_N) {
        const float *x = (const float *)n->in[0]->data;
        for (int64_t i = 0; i < count; i++) y[i] = (uint8_t)(x[i] != x[i]);
        return;
    }
#endif
    for (int64_t i = 0; i < count; i++) {
        double v = ep_load_real(n->in[0]->data, n->in[0]->dtype, i);
        int infinite = v > 1.7976931348623157e308 ? positive : (v < -1.7976931348623157e308 && negative);
        y[i] = (uint8_t)(kind == U_IS_NA_N ? v != v : infinite);
    }
}

/* The float kinds on float64, float16 and bfloat16: computed in float32, rounded once to the dtype. */
static void run_real_unary(const ep_node *n, int32_t kind, int64_t count) {
    int32_t dtype = n->in[0]->dtype;
    float a = ep_param_f32(n, 1), b = ep_param_f32(n, 2);
    for (int64_t i = 0; i < count; i++) {
        float x = (float)ep_load_real(n->in[0]->data, dtype, i);
        ep_store_real(n->out[0]->data, dtype, i, unary_f32(kind, x, a, b), 1);
    }
}

/* erf, or GELU (0.5 x (1 + erf(x / sqrt 2))), EP_VW_LANES at a time; the rest one by one. */
static void erf_or_gelu_f32(int gelu, const float *x, float *y, int64_t count) {
    int64_t i = 0;
#ifdef EP_VECTOR_MATH
    for (; i + EP_VW_LANES <= count; i += EP_VW_LANES) {
        ep_vw v, e;
        __builtin_memcpy(&v, x + i, sizeof v);
        e = gelu ? v * 0.70710678118654752f : v;
        ep_erf_wide(&e);
        if (gelu) e = 0.5f * v * (1.0f + e);
        __builtin_memcpy(y + i, &e, sizeof e);
    }
#endif
    for (; i < count; i++) y[i] = gelu ? unary_f32(U_GELU, x[i], 0.0f, 0.0f) : ep_erff(x[i]);
}

#if defined(EP_VECTOR_MATH) && !defined(__wasm__)
/* log, EP_VW_LANES at a time (ep_log_wide), the last few through a vector padded with ones: each element alike.
   One by one (ep_logf, in double), basic-pitch's Log of 172 x 309 took 20 ns a value. Native builds only: the wasm
   core takes ep_logf (2 KB less on every page with a Unary op). */
static void log_f32(const float *x, float *y, int64_t count) {
    for (int64_t i = 0; i < count; i += EP_VW_LANES) {
        float last[EP_VW_LANES];
        int64_t n = count - i < EP_VW_LANES ? count - i : EP_VW_LANES;
        const float *in = x + i;
        if (n < EP_VW_LANES) {
            for (int64_t l = 0; l < EP_VW_LANES; l++) last[l] = l < n ? x[i + l] : 1.0f;
            in = last;
        }
        ep_vw v;
        __builtin_memcpy(&v, in, sizeof v);
        ep_log_wide(&v);
        if (n < EP_VW_LANES) {
            __builtin_memcpy(last, &v, sizeof v);
            for (int64_t l = 0; l < n; l++) y[i + l] = last[l];
        } else {
            __builtin_memcpy(y + i, &v, sizeof v);
        }
    }
}
#endif

/* GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), as x times the logistic function
   of 2u (the same function), EP_VW_LANES at a time; the rest one by one. Through tanh's lanes (a Taylor series and
   an exp form, both in each lane) magika's GELUs over 512 x 508 took 1.8 ns a value. */
static void gelu_tanh_f32(const float *x, float *y, int64_t count) {
    int64_t i = 0;
#ifdef EP_VECTOR_MATH
    for (; i + EP_VW_LANES <= count; i += EP_VW_LANES) {
        ep_vw v, t;
        __builtin_memcpy(&v, x + i, sizeof v);
        t = 1.59576912160573072f * (v + 0.044715f * v * v * v);
        ep_sigmoid_wide(&t);
        t *= v;
        ep_vwi minus_infinity = v == -__builtin_inff(); /* NaN, as -inf (1 + tanh(-inf)) / 2 */
        t = (ep_vw)(((ep_vwi)t & ~minus_infinity) | ((ep_vwi)((ep_vw){0} + __builtin_nanf("")) & minus_infinity));
        __builtin_memcpy(y + i, &t, sizeof t);
    }
#endif
    for (; i < count; i++) y[i] = unary_f32(U_GELU_TANH, x[i], 0.0f, 0.0f);
}

/* A float32 unary op over elements [begin, end): one loop per kind, so that each vectorizes. */
typedef struct float_unary {
    const float *x;
    float *y;
    int32_t kind;
    float a, b;
    int64_t count, tasks;
} float_unary;

static void float_unary_task(void *arg, int32_t worker, int64_t index) {
    const float_unary *u = (const float_unary *)arg;
    int64_t begin, end;
    (void)worker;
    ep_task_range(u->count, u->tasks, index, 64, &begin, &end);
    const float *x = u->x + begin;
    float *y = u->y + begin;
    int64_t count = end - begin;
    float a = u->a, b = u->b;
    switch (u->kind) {
    case U_RELU:
        for (int64_t i = 0; i < count; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
        break;
    case U_CLIP:
        for (int64_t i = 0; i < count; i++) y[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        break;
    case U_SIGMOID: ep_activate_row(EP_ACT_SIGMOID, x, y, count, a, b); break;
    case U_SWISH: ep_activate_row(EP_ACT_SWISH, x, y, count, a, b); break;
    case U_ERF:
    case U_GELU:
        erf_or_gelu_f32(u->kind == U_GELU, x, y, count);
        break;
    case U_HARD_SIGMOID: ep_activate_row(EP_ACT_HARD_SIGMOID, x, y, count, a, b); break;
    case U_HARD_SWISH: ep_activate_row(EP_ACT_HARD_SWISH, x, y, count, a, b); break;
    case U_LEAKY_RELU: ep_activate_row(EP_ACT_LEAKY_RELU, x, y, count, a, b); break;
    case U_TANH: ep_tanh_row(x, y, count); break;
    case U_GELU_TANH: gelu_tanh_f32(x, y, count); break;
    case U_EXP:
        for (int64_t i = 0; i < count; i++) y[i] = ep_expf(x[i]);
        break;
#if defined(EP_VECTOR_MATH) && !defined(__wasm__) /* loops of their own for native builds; on wasm the shared one,
                                                       for the page's bytes */
    case U_LOG: log_f32(x, y, count); break;
    case U_SQRT:
        for (int64_t i = 0; i < count; i++) y[i] = __builtin_sqrtf(x[i]);
        break;
    case U_ABS:
        for (int64_t i = 0; i < count; i++) y[i] = __builtin_fabsf(x[i]);
        break;
    case U_NEG:
        for (int64_t i = 0; i < count; i++) y[i] = -x[i];
        break;
    case U_RECIPROCAL:
        for (int64_t i = 0; i < count; i++) y[i] = 1.0f / x[i];
        break;
#endif
    default:
        for (int64_t i = 0; i < count; i++) y[i] = unary_f32(u->kind, x[i], a, b);
    }
}

static ep_status run_unary(const ep_node *n, const ep_context *c) {
    int32_t kind = n->params[0];
    int64_t count = n->out[0]->count;
    if (n->out[0]->dtype == EP_BOOL) {
        run_to_bool(n, kind, count);
        return EP_OK;
    }
    if (kind == U_BITWISE_NOT) {
        const uint8_t *x = (const uint8_t *)n->in[0]->data;
        uint8_t *y = (uint8_t *)n->out[0]->data;
        for (size_t i = 0; i < n->out[0]->bytes; i++) y[i] = (uint8_t)~x[i]; /* bytewise is wordwise */
        return EP_OK;
    }
    if (ep_wide_integer(n->in[0]->dtype)) {
        run_integer_unary(n, kind, count);
        return EP_OK;
    }
    if (n->in[0]->dtype != EP_F32) {
        run_real_unary(n, kind, count);
        return EP_OK;
    }
    float_unary u = {(const float *)n->in[0]->data, (float *)n->out[0]->data, kind, ep_param_f32(n, 1),
                     ep_param_f32(n, 2), count, 0};
    u.tasks = ep_task_count(c, (count + 63) / 64, (double)count * EP_COPY_WORK);
    ep_parallel(c, u.tasks, float_unary_task, &u);
    return EP_OK;
}

const ep_kernel ep_kernel_unary = {"Unary", check_unary, run_unary};
