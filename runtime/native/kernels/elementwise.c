/* Elementwise ops with broadcasting: binary arithmetic, comparisons and logic; unary activations; Where; Expand;
   Cast. */
#include "broadcast.h"

static int is_compare(int32_t kind) { return kind >= B_EQUAL && kind <= B_GREATER_OR_EQUAL; }
static int is_logic(int32_t kind) { return kind >= B_AND && kind <= B_XOR; }
static int is_bitwise(int32_t kind) { return kind >= B_BIT_SHIFT_LEFT && kind <= B_BITWISE_XOR; }
static int is_integer(int32_t dtype) { return dtype == EP_U8 || dtype == EP_I8 || dtype == EP_I32 || dtype == EP_I64; }

static ep_status check_binary(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1 || n->params[0] < 0 || n->params[0] >= B_KINDS) return ep_fail(error, n, ": bad kind");
    int32_t kind = n->params[0];
    const ep_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    if (a->dtype != b->dtype) return ep_fail(error, n, ": inputs of different dtypes");
    int32_t want = (is_compare(kind) || is_logic(kind)) ? EP_BOOL : a->dtype;
    if (y->dtype != want) return ep_fail(error, n, ": wrong output dtype");
    int supported = is_logic(kind)     ? a->dtype == EP_BOOL
                    : is_bitwise(kind) ? is_integer(a->dtype)
                                       : (a->dtype == EP_F32 || a->dtype == EP_I32 || a->dtype == EP_I64);
    if (!supported) return ep_fail(error, n, ": unsupported dtype");
    if ((kind == B_POW) && a->dtype != EP_F32) return ep_fail(error, n, ": Pow needs float32");
    if (!ep_broadcasts_to(a, y) || !ep_broadcasts_to(b, y)) return ep_fail(error, n, ": shapes do not broadcast");
    return EP_OK;
}

static float fmod_like(float a, float b) {
    if (b == 0.0f) return a - a;
    float q = a / b;
    float t = q < 0 ? -ep_floorf(-q) : ep_floorf(q);
    return a - t * b;
}

static float binary_f32(int32_t kind, float a, float b) {
    switch (kind) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return ep_powf(a, b);
    case B_MAX: return a != a ? a : (b != b ? b : (a > b ? a : b));
    case B_MIN: return a != a ? a : (b != b ? b : (a < b ? a : b));
    case B_MOD: return fmod_like(a, b);
    }
    return 0.0f;
}

#define EP_ROW_LOOP(EXPR)                                                                                           \
    do {                                                                                                            \
        if (row.step[0] == 1 && row.step[1] == 1) {                                                                 \
            for (int64_t i = 0; i < row.length; i++) { T x = pa[i], z = pb[i]; py[i] = EXPR; }                       \
        } else if (row.step[0] == 1 && row.step[1] == 0) {                                                          \
            T z = pb[0];                                                                                             \
            for (int64_t i = 0; i < row.length; i++) { T x = pa[i]; py[i] = EXPR; }                                 \
        } else if (row.step[0] == 0 && row.step[1] == 1) {                                                          \
            T x = pa[0];                                                                                             \
            for (int64_t i = 0; i < row.length; i++) { T z = pb[i]; py[i] = EXPR; }                                 \
        } else {                                                                                                    \
            for (int64_t i = 0; i < row.length; i++) {                                                              \
                T x = pa[i * row.step[0]], z = pb[i * row.step[1]];                                                 \
                py[i] = EXPR;                                                                                        \
            }                                                                                                       \
        }                                                                                                           \
    } while (0)

static void binary_rows_f32(const ep_node *n, const ep_broadcast *b) {
    typedef float T;
    int32_t kind = n->params[0];
    const float *A = (const float *)n->in[0]->data, *B = (const float *)n->in[1]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {
        const float *pa = A + row.in[0], *pb = B + row.in[1];
        if (is_compare(kind)) {
            uint8_t *py = (uint8_t *)n->out[0]->data + row.out;
            switch (kind) {
            case B_EQUAL: EP_ROW_LOOP(x == z); break;
            case B_LESS: EP_ROW_LOOP(x < z); break;
            case B_GREATER: EP_ROW_LOOP(x > z); break;
            case B_LESS_OR_EQUAL: EP_ROW_LOOP(x <= z); break;
            default: EP_ROW_LOOP(x >= z); break;
            }
            continue;
        }
        float *py = (float *)n->out[0]->data + row.out;
        switch (kind) {
        case B_ADD: EP_ROW_LOOP(x + z); break;
        case B_SUB: EP_ROW_LOOP(x - z); break;
        case B_MUL: EP_ROW_LOOP(x * z); break;
        case B_DIV: EP_ROW_LOOP(x / z); break;
        default: EP_ROW_LOOP(binary_f32(kind, x, z)); break;
        }
    }
}

#define EP_BINARY_INT(NAME, T, U, MINV)                                                                            \
    static T NAME##_op(int32_t kind, T a, T b) {                                                                    \
        switch (kind) {                                                                                             \
        case B_ADD: return (T)((U)a + (U)b);                                                                        \
        case B_SUB: return (T)((U)a - (U)b);                                                                        \
        case B_MUL: return (T)((U)a * (U)b);                                                                        \
        case B_DIV: return (b == 0 || (a == MINV && b == -1)) ? 0 : (T)(a / b);                                    \
        case B_MOD: {                                                                                               \
            if (b == 0 || (a == MINV && b == -1)) return 0;                                                         \
            T r = (T)(a % b);                                                                                       \
            return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;                                               \
        }                                                                                                           \
        case B_MAX: return a > b ? a : b;                                                                           \
        case B_MIN: return a < b ? a : b;                                                                           \
        case B_EQUAL: return a == b;                                                                                \
        case B_LESS: return a < b;                                                                                  \
        case B_GREATER: return a > b;                                                                               \
        case B_LESS_OR_EQUAL: return a <= b;                                                                           \
        case B_GREATER_OR_EQUAL: return a >= b;                                                                        \
        }                                                                                                           \
        return 0;                                                                                                   \
    }                                                                                                               \
    static void NAME##_rows(const ep_node *n, const ep_broadcast *b) {                                              \
        int32_t kind = n->params[0];                                                                                \
        const T *A = (const T *)n->in[0]->data, *B = (const T *)n->in[1]->data;                                    \
        ep_row row;                                                                                                 \
        int64_t counter[EP_MAX_RANK];                                                                               \
        for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {               \
            for (int64_t i = 0; i < row.length; i++) {                                                              \
                T v = NAME##_op(kind, A[row.in[0] + i * row.step[0]], B[row.in[1] + i * row.step[1]]);              \
                if (is_compare(kind)) ((uint8_t *)n->out[0]->data)[row.out + i] = (uint8_t)v;                       \
                else ((T *)n->out[0]->data)[row.out + i] = v;                                                       \
            }                                                                                                       \
        }                                                                                                           \
    }

EP_BINARY_INT(binary_i32, int32_t, uint32_t, (-2147483647 - 1))
EP_BINARY_INT(binary_i64, int64_t, uint64_t, (-9223372036854775807LL - 1))

/* The bitwise kinds on the bits of each integer width, as ONNX BitShift (opset 28) defines the shifts: right shifts
   of signed values are arithmetic; a shift by a negative amount or by the width or more leaves only the sign fill. */
#define EP_BITWISE(NAME, U, BITS)                                                                                  \
    static U NAME##_op(int32_t kind, U a, U b, int is_signed) {                                                     \
        U fill = (U)(is_signed && (a >> (BITS - 1)) ? ~(U)0 : 0);                                                  \
        switch (kind) {                                                                                             \
        case B_BIT_SHIFT_LEFT: return b >= BITS ? 0 : (U)(a << b);                                                  \
        case B_BIT_SHIFT_RIGHT: return b >= BITS ? fill : (U)(((U)(a ^ fill) >> b) ^ fill);                         \
        case B_BITWISE_AND: return a & b;                                                                           \
        case B_BITWISE_OR: return a | b;                                                                            \
        }                                                                                                           \
        return a ^ b;                                                                                               \
    }                                                                                                               \
    static void NAME##_rows(const ep_node *n, const ep_broadcast *b) {                                              \
        int32_t kind = n->params[0];                                                                                \
        int is_signed = n->in[0]->dtype != EP_U8;                                                                   \
        const U *A = (const U *)n->in[0]->data, *B = (const U *)n->in[1]->data;                                    \
        U *Y = (U *)n->out[0]->data;                                                                                \
        ep_row row;                                                                                                 \
        int64_t counter[EP_MAX_RANK];                                                                               \
        for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter))                 \
            for (int64_t i = 0; i < row.length; i++)                                                                \
                Y[row.out + i] = NAME##_op(kind, A[row.in[0] + i * row.step[0]], B[row.in[1] + i * row.step[1]],    \
                                           is_signed);                                                              \
    }

EP_BITWISE(bits8, uint8_t, 8)
EP_BITWISE(bits32, uint32_t, 32)
EP_BITWISE(bits64, uint64_t, 64)

static void bitwise_rows(const ep_node *n, const ep_broadcast *b) {
    size_t size = ep_dtype_size(n->in[0]->dtype);
    if (size == 1) bits8_rows(n, b);
    else if (size == 4) bits32_rows(n, b);
    else bits64_rows(n, b);
}

static void logic_rows(const ep_node *n, const ep_broadcast *b) {
    int32_t kind = n->params[0];
    const uint8_t *A = (const uint8_t *)n->in[0]->data, *B = (const uint8_t *)n->in[1]->data;
    uint8_t *Y = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {
        for (int64_t i = 0; i < row.length; i++) {
            int x = A[row.in[0] + i * row.step[0]] != 0, z = B[row.in[1] + i * row.step[1]] != 0;
            Y[row.out + i] = (uint8_t)(kind == B_AND ? (x && z) : kind == B_OR ? (x || z) : (x != z));
        }
    }
}

static ep_status run_binary(const ep_node *n, const ep_context *c) {
    (void)c;
    ep_broadcast b;
    const ep_tensor *inputs[2] = {n->in[0], n->in[1]};
    ep_broadcast_plan(&b, n->out[0], inputs, 2);
    int32_t kind = n->params[0];
    if (is_logic(kind)) logic_rows(n, &b);
    else if (is_bitwise(kind)) bitwise_rows(n, &b);
    else if (n->in[0]->dtype == EP_F32) binary_rows_f32(n, &b);
    else if (n->in[0]->dtype == EP_I32) binary_i32_rows(n, &b);
    else binary_i64_rows(n, &b);
    return EP_OK;
}

/* The output dtype of a unary kind on an input of `dtype`, or -1 when the kind does not take that dtype. */
static int32_t unary_output(int32_t kind, int32_t dtype) {
    switch (kind) {
    case U_NOT: return dtype == EP_BOOL ? EP_BOOL : -1;
    case U_IS_NA_N:
    case U_IS_INF: return dtype == EP_F32 ? EP_BOOL : -1;
    case U_BITWISE_NOT: return is_integer(dtype) ? dtype : -1;
    case U_ABS:
    case U_NEG:
    case U_SIGN: return (dtype == EP_F32 || dtype == EP_I32 || dtype == EP_I64) ? dtype : -1;
    }
    return dtype == EP_F32 ? EP_F32 : -1;
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
    case U_TANH: return ep_tanhf(x);
    case U_EXP: return ep_expf(x);
    case U_LOG: return ep_logf(x);
    case U_SQRT: return ep_sqrtf(x);
    case U_ERF: return ep_erff(x);
    case U_ABS: return x < 0.0f ? -x : x;
    case U_NEG: return -x;
    case U_RECIPROCAL: return 1.0f / x;
    case U_CLIP: return x < a ? a : (x > b ? b : x);
    case U_LEAKY_RELU: return x < 0.0f ? a * x : x;
    case U_HARD_SIGMOID: {
        float v = a * x + b;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    case U_HARD_SWISH: {
        float v = x / 6.0f + 0.5f;
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

/* Abs, Neg and Sign on int32/int64, wrapping like two's complement (the negation of the minimum is itself). */
static void run_integer_unary(const ep_node *n, int32_t kind, int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        int64_t v = n->in[0]->dtype == EP_I64 ? ((const int64_t *)n->in[0]->data)[i]
                                              : ((const int32_t *)n->in[0]->data)[i];
        uint64_t negated = 0u - (uint64_t)v;
        uint64_t r = kind == U_SIGN ? (uint64_t)(v > 0) - (uint64_t)(v < 0)
                                    : (kind == U_NEG || v < 0) ? negated : (uint64_t)v;
        if (n->in[0]->dtype == EP_I64) ((int64_t *)n->out[0]->data)[i] = (int64_t)r;
        else ((int32_t *)n->out[0]->data)[i] = (int32_t)(uint32_t)r;
    }
}

/* Not on bool; IsNaN and IsInf (a: detect positive, b: detect negative) on float32. */
static void run_to_bool(const ep_node *n, int32_t kind, int64_t count) {
    uint8_t *y = (uint8_t *)n->out[0]->data;
    if (kind == U_NOT) {
        const uint8_t *x = (const uint8_t *)n->in[0]->data;
        for (int64_t i = 0; i < count; i++) y[i] = !x[i];
        return;
    }
    const float *x = (const float *)n->in[0]->data;
    int positive = ep_param_f32(n, 1) != 0.0f, negative = ep_param_f32(n, 2) != 0.0f;
    for (int64_t i = 0; i < count; i++) {
        float v = x[i];
        int infinite = v > 3.4028235e38f ? positive : (v < -3.4028235e38f && negative);
        y[i] = (uint8_t)(kind == U_IS_NA_N ? v != v : infinite);
    }
}

static ep_status run_unary(const ep_node *n, const ep_context *c) {
    (void)c;
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
    if (n->in[0]->dtype == EP_I32 || n->in[0]->dtype == EP_I64) {
        run_integer_unary(n, kind, count);
        return EP_OK;
    }
    const float *x = (const float *)n->in[0]->data;
    float *y = (float *)n->out[0]->data;
    float a = ep_param_f32(n, 1), b = ep_param_f32(n, 2);
    switch (kind) {
    case U_RELU:
        for (int64_t i = 0; i < count; i++) y[i] = x[i] > 0.0f ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
        break;
    case U_CLIP:
        for (int64_t i = 0; i < count; i++) y[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        break;
    case U_SIGMOID:
        for (int64_t i = 0; i < count; i++) y[i] = ep_sigmoidf(x[i]);
        break;
    case U_EXP:
        for (int64_t i = 0; i < count; i++) y[i] = ep_expf(x[i]);
        break;
    default:
        for (int64_t i = 0; i < count; i++) y[i] = unary_f32(kind, x[i], a, b);
    }
    return EP_OK;
}

static ep_status check_where(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *y = n->out[0];
    if (n->in[0]->dtype != EP_BOOL || n->in[1]->dtype != y->dtype || n->in[2]->dtype != y->dtype)
        return ep_fail(error, n, ": wrong dtypes");
    for (int k = 0; k < 3; k++)
        if (!ep_broadcasts_to(n->in[k], y)) return ep_fail(error, n, ": shapes do not broadcast");
    return EP_OK;
}

static ep_status run_where(const ep_node *n, const ep_context *c) {
    (void)c;
    ep_broadcast b;
    const ep_tensor *inputs[3] = {n->in[0], n->in[1], n->in[2]};
    ep_broadcast_plan(&b, n->out[0], inputs, 3);
    size_t size = ep_dtype_size(n->out[0]->dtype);
    const uint8_t *cond = (const uint8_t *)n->in[0]->data;
    const uint8_t *xs = (const uint8_t *)n->in[1]->data, *ys = (const uint8_t *)n->in[2]->data;
    uint8_t *out = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(&b, &row, counter); more; more = ep_row_next(&b, &row, counter)) {
        for (int64_t i = 0; i < row.length; i++) {
            const uint8_t *src = cond[row.in[0] + i * row.step[0]] ? xs + (size_t)(row.in[1] + i * row.step[1]) * size
                                                                   : ys + (size_t)(row.in[2] + i * row.step[2]) * size;
            ep_memcpy(out + (size_t)(row.out + i) * size, src, size);
        }
    }
    return EP_OK;
}

static ep_status check_expand(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->in[0]->dtype != n->out[0]->dtype || !ep_broadcasts_to(n->in[0], n->out[0]))
        return ep_fail(error, n, ": input does not broadcast to the output");
    return EP_OK;
}

static ep_status run_expand(const ep_node *n, const ep_context *c) {
    (void)c;
    ep_broadcast b;
    const ep_tensor *inputs[1] = {n->in[0]};
    ep_broadcast_plan(&b, n->out[0], inputs, 1);
    size_t size = ep_dtype_size(n->out[0]->dtype);
    const uint8_t *x = (const uint8_t *)n->in[0]->data;
    uint8_t *y = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(&b, &row, counter); more; more = ep_row_next(&b, &row, counter)) {
        if (row.step[0] == 1) {
            ep_memcpy(y + (size_t)row.out * size, x + (size_t)row.in[0] * size, (size_t)row.length * size);
            continue;
        }
        for (int64_t i = 0; i < row.length; i++)
            ep_memcpy(y + (size_t)(row.out + i) * size, x + (size_t)(row.in[0] + i * row.step[0]) * size, size);
    }
    return EP_OK;
}

static ep_status check_cast(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->in[0]->count != n->out[0]->count) return ep_fail(error, n, ": element counts differ");
    return EP_OK;
}

static double load_as_double(const void *data, int32_t dtype, int64_t i) {
    switch (dtype) {
    case EP_F32: return ((const float *)data)[i];
    case EP_I32: return ((const int32_t *)data)[i];
    case EP_I64: return (double)((const int64_t *)data)[i];
    case EP_I8: return ((const int8_t *)data)[i];
    case EP_U8: return ((const uint8_t *)data)[i];
    default: return ((const uint8_t *)data)[i] != 0;
    }
}

static int64_t clamp_to_int(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v < lo) return (int64_t)lo;
    if (v > hi) return (int64_t)hi;
    return (int64_t)v;
}

static ep_status run_cast(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    for (int64_t i = 0; i < y->count; i++) {
        if (x->dtype == EP_I64 && y->dtype == EP_I64) {
            ((int64_t *)y->data)[i] = ((const int64_t *)x->data)[i];
            continue;
        }
        if (x->dtype == EP_I64 && y->dtype == EP_I32) {
            ((int32_t *)y->data)[i] = (int32_t)(uint32_t)(uint64_t)((const int64_t *)x->data)[i];
            continue;
        }
        double v = load_as_double(x->data, x->dtype, i);
        switch (y->dtype) {
        case EP_F32: ((float *)y->data)[i] = (float)v; break;
        case EP_I32: ((int32_t *)y->data)[i] = (int32_t)clamp_to_int(v, -2147483648.0, 2147483647.0); break;
        case EP_I64: ((int64_t *)y->data)[i] = clamp_to_int(v, -9.2233720368547758e18, 9.2233720368547748e18); break;
        case EP_I8: ((int8_t *)y->data)[i] = (int8_t)clamp_to_int(v, -128.0, 127.0); break;
        case EP_U8: ((uint8_t *)y->data)[i] = (uint8_t)clamp_to_int(v, 0.0, 255.0); break;
        default: ((uint8_t *)y->data)[i] = v != 0.0; break;
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_binary = {"Binary", check_binary, run_binary};
const ep_kernel ep_kernel_unary = {"Unary", check_unary, run_unary};
const ep_kernel ep_kernel_where = {"Where", check_where, run_where};
const ep_kernel ep_kernel_expand = {"Expand", check_expand, run_expand};
const ep_kernel ep_kernel_cast = {"Cast", check_cast, run_cast};
