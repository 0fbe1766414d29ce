/* The Reduce family and ArgMax/ArgMin. Reduce params: kind, then one flag per input axis (1: reduced).
   ArgExtreme params: axis, want_max, select_last_index. */
#include "../ep_internal.h"

#define EP_INFINITY (3.4028235e38f * 2.0f) /* Max and Min of an empty set are -inf and inf */


static ep_status check_reduce(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != EP_F32 || y->dtype != EP_F32) return ep_fail(error, n, ": float32 only");
    if (n->n_params != 1 + (uint32_t)x->rank || n->params[0] < 0 || n->params[0] >= R_KINDS)
        return ep_fail(error, n, ": bad parameters");
    int64_t kept = 1;
    for (int32_t d = 0; d < x->rank; d++) {
        if (n->params[1 + d] != 0 && n->params[1 + d] != 1) return ep_fail(error, n, ": bad axis flag");
        if (!n->params[1 + d]) kept *= x->dims[d];
    }
    if (y->count != kept) return ep_fail(error, n, ": output size is not the kept axes");
    return EP_OK;
}

/* The reduced axes are the trailing ones: one contiguous row per output, summed in double. */
static int reduces_trailing_axes(const ep_node *n, int32_t rank) {
    int32_t d = 0;
    while (d < rank && !n->params[1 + d]) d++;
    while (d < rank && n->params[1 + d]) d++;
    return d == rank;
}

/* A row's sum in double: of its values (`term` 0), their squares (1) or their magnitudes (2); inlined with `term`
   constant. Eight floats a step into two vectors of four doubles (vector extensions; native builds), the rest one by
   one: in one scalar double, behind a switch per value, PP-OCRv6 small rec's ReduceMeans over 480 values took 2.7 ns
   a value. */
static inline __attribute__((always_inline)) double sum_row(const float *row, int64_t length, int term) {
    int64_t i = 0;
    double total = 0.0;
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__wasm__) /* not on wasm, for the page's bytes */
    typedef float quad_f __attribute__((vector_size(16)));
    typedef double quad_d __attribute__((vector_size(32)));
    typedef int64_t quad_i __attribute__((vector_size(32)));
    quad_d low = {0}, high = {0};
    for (; i + 8 <= length; i += 8) {
        quad_f a, b;
        __builtin_memcpy(&a, row + i, sizeof a);
        __builtin_memcpy(&b, row + i + 4, sizeof b);
        quad_d x = __builtin_convertvector(a, quad_d), y = __builtin_convertvector(b, quad_d);
        if (term == 1) {
            x *= x;
            y *= y;
        } else if (term == 2) {
            x = (quad_d)((quad_i)x & INT64_MAX);
            y = (quad_d)((quad_i)y & INT64_MAX);
        }
        low += x;
        high += y;
    }
    low += high;
    total = (low[0] + low[1]) + (low[2] + low[3]);
#endif
    for (; i < length; i++) {
        double v = row[i];
        total += term == 1 ? v * v : term == 2 && v < 0 ? -v : v;
    }
    return total;
}

static float reduce_row(int32_t kind, const float *row, int64_t length) {
    if (kind == R_MAX || kind == R_MIN) {
        float extreme = length ? row[0] : (kind == R_MAX ? -EP_INFINITY : EP_INFINITY);
        for (int64_t i = 0; i < length; i++) {
            float v = row[i];
            int replaces = kind == R_MAX ? v > extreme : v < extreme;
            extreme = replaces || v != v ? v : extreme;
        }
        return extreme;
    }
    if (kind == R_PROD) {
        double product = 1.0;
        for (int64_t i = 0; i < length; i++) product *= row[i];
        return (float)product;
    }
    double total = kind == R_SUM_SQUARE || kind == R_L2 ? sum_row(row, length, 1)
                   : kind == R_L1                      ? sum_row(row, length, 2)
                                                       : sum_row(row, length, 0);
    if (kind == R_MEAN) return length ? (float)(total / (double)length) : 0.0f;
    if (kind == R_L2) return ep_sqrtf((float)total);
    if (kind == R_LOG_SUM) return ep_logf((float)total);
    return (float)total;
}

/* The reduced axes are one block with kept axes around it: the input is [outer, length, inner]. */
static int reduces_one_block(const ep_node *n, const ep_tensor *x, int64_t *outer, int64_t *length, int64_t *inner) {
    int32_t d = 0;
    *outer = *length = *inner = 1;
    while (d < x->rank && !n->params[1 + d]) *outer *= x->dims[d++];
    while (d < x->rank && n->params[1 + d]) *length *= x->dims[d++];
    while (d < x->rank && !n->params[1 + d]) *inner *= x->dims[d++];
    return d == x->rank;
}

/* acc[j] = acc[j] (op) row[j] for a row of n kept values: one loop per kind, so each vectorizes. */
static void accumulate_row(int32_t kind, const float *row, float *acc, int64_t n) {
    switch (kind) {
    case R_MAX:
        for (int64_t j = 0; j < n; j++) acc[j] = (row[j] > acc[j] || row[j] != row[j]) ? row[j] : acc[j];
        break;
    case R_MIN:
        for (int64_t j = 0; j < n; j++) acc[j] = (row[j] < acc[j] || row[j] != row[j]) ? row[j] : acc[j];
        break;
    case R_PROD:
        for (int64_t j = 0; j < n; j++) acc[j] *= row[j];
        break;
    case R_SUM_SQUARE:
    case R_L2:
        for (int64_t j = 0; j < n; j++) acc[j] += row[j] * row[j];
        break;
    case R_L1:
        for (int64_t j = 0; j < n; j++) acc[j] += row[j] < 0 ? -row[j] : row[j];
        break;
    default:
        for (int64_t j = 0; j < n; j++) acc[j] += row[j];
    }
}

static ep_status run_reduce(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t kind = n->params[0], rank = x->rank;
    float *out = (float *)y->data;
    const float *in = (const float *)x->data;
    if (reduces_trailing_axes(n, rank) && y->count > 0) {
        int64_t length = x->count / y->count;
        for (int64_t o = 0; o < y->count; o++) out[o] = reduce_row(kind, in + o * length, length);
        return EP_OK;
    }
    float start = kind == R_MAX ? -EP_INFINITY : kind == R_MIN ? EP_INFINITY : kind == R_PROD ? 1.0f : 0.0f;
    for (int64_t i = 0; i < y->count; i++) out[i] = start;
    int64_t outer, length, inner, out_strides[EP_MAX_RANK], counter[EP_MAX_RANK], stride = 1;
    int one_block = reduces_one_block(n, x, &outer, &length, &inner);
    for (int32_t d = rank - 1; d >= 0; d--) {
        out_strides[d] = n->params[1 + d] ? 0 : stride;
        if (!n->params[1 + d]) stride *= x->dims[d];
        counter[d] = 0;
    }
    for (int64_t o = 0; one_block && o < outer; o++)
        for (int64_t r = 0; r < length; r++)
            accumulate_row(kind, in + (o * length + r) * inner, out + o * inner, inner);
    for (int64_t i = 0; !one_block && i < x->count; i++) {
        int64_t o = 0;
        for (int32_t d = 0; d < rank; d++) o += counter[d] * out_strides[d];
        float v = in[i];
        switch (kind) {
        case R_MAX: out[o] = (v > out[o] || v != v) ? v : out[o]; break;
        case R_MIN: out[o] = (v < out[o] || v != v) ? v : out[o]; break;
        case R_PROD: out[o] *= v; break;
        case R_SUM_SQUARE: case R_L2: out[o] += v * v; break;
        case R_L1: out[o] += v < 0 ? -v : v; break;
        default: out[o] += v; break;
        }
        for (int32_t d = rank - 1; d >= 0; d--) {
            if (++counter[d] < x->dims[d]) break;
            counter[d] = 0;
        }
    }
    int64_t group = y->count ? x->count / y->count : 0;
    for (int64_t i = 0; i < y->count; i++) {
        if (kind == R_MEAN) out[i] = group ? out[i] / (float)group : 0.0f;
        else if (kind == R_L2) out[i] = ep_sqrtf(out[i]);
        else if (kind == R_LOG_SUM) out[i] = ep_logf(out[i]);
    }
    return EP_OK;
}

static ep_status check_arg_extreme(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (n->n_params != 3 || n->params[0] < 0 || n->params[0] >= x->rank) return ep_fail(error, n, ": bad axis");
    if (x->dtype != EP_F32 || y->dtype != EP_I64) return ep_fail(error, n, ": float32 in, int64 out only");
    if (x->dims[n->params[0]] == 0 || y->count * x->dims[n->params[0]] != x->count)
        return ep_fail(error, n, ": output size is not the kept axes");
    return EP_OK;
}

static ep_status run_arg_extreme(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0];
    int32_t axis = n->params[0];
    int want_max = n->params[1], last = n->params[2];
    int64_t outer = 1, length = x->dims[axis], inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    const float *in = (const float *)x->data;
    int64_t *out = (int64_t *)n->out[0]->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *src = in + o * length * inner + i;
            int64_t best = 0;
            for (int64_t k = 1; k < length; k++) {
                float v = src[k * inner], b = src[best * inner];
                int better = want_max ? (v > b || (last && v == b)) : (v < b || (last && v == b));
                if (better) best = k;
            }
            out[o * inner + i] = best;
        }
    return EP_OK;
}

const ep_kernel ep_kernel_reduce = {"Reduce", check_reduce, run_reduce};
const ep_kernel ep_kernel_arg_extreme = {"ArgExtreme", check_arg_extreme, run_arg_extreme};
