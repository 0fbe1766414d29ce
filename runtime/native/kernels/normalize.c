/* Softmax / LogSoftmax, the per-channel affine of BatchNormalization, and LayerNormalization. */
#include "vector_math.h"

static ep_status float_same_shape(const ep_node *n, char *error) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != EP_F32 || y->dtype != EP_F32 || !ep_same_shape(x, y))
        return ep_fail(error, n, ": float32 input and output of one shape only");
    return EP_OK;
}

/* Softmax params: axis, flatten (1: every axis from `axis` on, as opsets before 13), log. */
static ep_status check_softmax(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 3 || n->params[0] < 0 || n->params[0] >= n->in[0]->rank) return ep_fail(error, n, ": bad axis");
    return float_same_shape(n, error);
}

#ifdef EP_VECTOR_MATH
/* Each lane of *peaks raised to the float at `at` in that lane where it is larger (a NaN never is). */
static inline void raise_peaks(ep_vw *peaks, const float *at) {
    ep_vw v;
    __builtin_memcpy(&v, at, sizeof v);
    ep_vwi above = v > *peaks;
    *peaks = (ep_vw)(((ep_vwi)v & above) | ((ep_vwi)*peaks & ~above));
}
#endif

/* Softmax over one contiguous row in the build's widest lanes: the peak, then the exps (x - peak is at most 0:
   clamped below only) summed per lane, then scaled by the inverse of the sum. A NaN is never the peak, as in the
   scalar loop, and its exp stays NaN. */
static void softmax_row(const float *src, float *dst, int64_t length) {
    float peak = -3.4028235e38f, sum = 0.0f;
    int64_t k = 0;
#ifdef EP_VECTOR_MATH
    ep_vw peaks = (ep_vw){0} - 3.4028235e38f;
    for (; k + EP_VW_LANES <= length; k += EP_VW_LANES) raise_peaks(&peaks, src + k);
    for (int l = 0; l < EP_VW_LANES; l++) peak = peaks[l] > peak ? peaks[l] : peak;
#endif
    for (; k < length; k++) peak = src[k] > peak ? src[k] : peak;
    k = 0;
#ifdef EP_VECTOR_MATH
    ep_vw lanes = {0};
    for (; k + EP_VW_LANES <= length; k += EP_VW_LANES) {
        ep_vw v;
        __builtin_memcpy(&v, src + k, sizeof v);
        v -= peak;
        ep_exp_nonpositive_wide(&v);
        __builtin_memcpy(dst + k, &v, sizeof v);
        lanes += v;
    }
    for (int l = 0; l < EP_VW_LANES; l++) sum += lanes[l];
#endif
    for (; k < length; k++) {
        dst[k] = ep_expf(src[k] - peak);
        sum += dst[k];
    }
    float inverse = 1.0f / sum;
    for (k = 0; k < length; k++) dst[k] *= inverse;
}

/* Softmax (or LogSoftmax, `log`) along a strided axis: `length` values `inner` apart, at each of `count` positions
   from src's first, one position per lane (the sum in float lanes there), the rest one by one. */
static void softmax_strided(const float *src, float *dst, int64_t length, int64_t inner, int64_t count, int log) {
    int64_t i = 0;
#ifdef EP_VECTOR_MATH
    for (; i + EP_VW_LANES <= count; i += EP_VW_LANES) {
        ep_vw peaks = (ep_vw){0} - 3.4028235e38f, sums = {0}, v;
        for (int64_t k = 0; k < length; k++) raise_peaks(&peaks, src + k * inner + i);
        for (int64_t k = 0; k < length; k++) {
            __builtin_memcpy(&v, src + k * inner + i, sizeof v);
            v -= peaks;
            ep_vwi vanished = v == -__builtin_inff(); /* exp 0, as the scalar loop's: a column of -inf gives NaN */
            ep_clamp_exp_range_wide(&v);
            ep_exp_wide(&v);
            v = (ep_vw)((ep_vwi)v & ~vanished);
            if (!log) __builtin_memcpy(dst + k * inner + i, &v, sizeof v);
            sums += v;
        }
        ep_vw scale = 1.0f / sums;
        if (log)
            for (int l = 0; l < EP_VW_LANES; l++) scale[l] = ep_logf(sums[l]);
        for (int64_t k = 0; k < length; k++) {
            __builtin_memcpy(&v, (log ? src : dst) + k * inner + i, sizeof v);
            v = log ? v - peaks - scale : v * scale;
            __builtin_memcpy(dst + k * inner + i, &v, sizeof v);
        }
    }
#endif
    for (; i < count; i++) {
        float peak = -3.4028235e38f;
        double sum = 0.0;
        for (int64_t k = 0; k < length; k++) peak = src[k * inner + i] > peak ? src[k * inner + i] : peak;
        for (int64_t k = 0; k < length; k++) {
            float e = ep_expf(src[k * inner + i] - peak);
            if (!log) dst[k * inner + i] = e;
            sum += e;
        }
        float log_sum = ep_logf((float)sum), inverse = (float)(1.0 / sum);
        for (int64_t k = 0; k < length; k++)
            dst[k * inner + i] = log ? src[k * inner + i] - peak - log_sum : dst[k * inner + i] * inverse;
    }
}

/* Rows [begin, end) of a Softmax: contiguous (softmax_row), or along an inner axis (softmax_strided). */
typedef struct softmax_rows {
    const ep_node *n;
    int64_t outer, length, inner, tasks;
} softmax_rows;

static void softmax_task(void *arg, int32_t worker, int64_t index) {
    const softmax_rows *r = (const softmax_rows *)arg;
    const float *in = (const float *)r->n->in[0]->data;
    float *out = (float *)r->n->out[0]->data;
    int64_t size = r->length * r->inner, begin, end;
    (void)worker;
    ep_task_range(r->outer, r->tasks, index, 1, &begin, &end);
    for (int64_t o = begin; o < end; o++) {
        if (r->inner == 1 && !r->n->params[2]) softmax_row(in + o * size, out + o * size, r->length);
        else softmax_strided(in + o * size, out + o * size, r->length, r->inner, r->inner, r->n->params[2]);
    }
}

static ep_status run_softmax(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0];
    int32_t axis = n->params[0];
    softmax_rows r = {n, 1, 1, 1, 0};
    for (int32_t d = 0; d < x->rank; d++) {
        if (d < axis) r.outer *= x->dims[d];
        else if (d == axis || n->params[1]) r.length *= x->dims[d];
        else r.inner *= x->dims[d];
    }
    r.tasks = ep_task_count(c, r.outer, (double)x->count * EP_COPY_WORK);
    ep_parallel(c, r.tasks, softmax_task, &r);
    return EP_OK;
}

/* y = x * scale[c] + bias[c] over axis 1 (BatchNormalization folded at lowering). */
static ep_status check_channel_affine(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    if ((status = float_same_shape(n, error)) != EP_OK) return status;
    const ep_tensor *x = n->in[0];
    int64_t channels = x->rank >= 2 ? x->dims[1] : 1;
    if (n->in[1]->dtype != EP_F32 || n->in[2]->dtype != EP_F32 || n->in[1]->count != channels ||
        n->in[2]->count != channels || n->n_params != 0)
        return ep_fail(error, n, ": scale and bias must hold one float per channel");
    return EP_OK;
}

static ep_status run_channel_affine(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0];
    int64_t channels = x->rank >= 2 ? x->dims[1] : 1, batch = x->rank >= 1 ? x->dims[0] : 1, inner = 1;
    for (int32_t d = 2; d < x->rank; d++) inner *= x->dims[d];
    const float *scale = (const float *)n->in[1]->data, *bias = (const float *)n->in[2]->data;
    const float *in = (const float *)x->data;
    float *out = (float *)n->out[0]->data;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t ch = 0; ch < channels; ch++) {
            int64_t at = (b * channels + ch) * inner;
            for (int64_t i = 0; i < inner; i++) out[at + i] = in[at + i] * scale[ch] + bias[ch];
        }
    return EP_OK;
}

/* LayerNormalization params: axis, epsilon; scale and bias hold one value per normalized element. */
static ep_status check_layer_norm(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 3, 1, error);
    if (status != EP_OK) return status;
    if ((status = float_same_shape(n, error)) != EP_OK) return status;
    const ep_tensor *x = n->in[0];
    if (n->n_params != 2 || n->params[0] < 0 || n->params[0] >= x->rank) return ep_fail(error, n, ": bad axis");
    int64_t inner = 1;
    for (int32_t d = n->params[0]; d < x->rank; d++) inner *= x->dims[d];
    const ep_tensor *bias = n->n_in > 2 ? n->in[2] : 0;
    if (n->in[1]->dtype != EP_F32 || n->in[1]->count != inner ||
        (bias && (bias->dtype != EP_F32 || bias->count != inner)))
        return ep_fail(error, n, ": scale and bias must cover the normalized axes");
    return EP_OK;
}

/* The sum of n floats, or (centered) of their squares less `mean`: 8 lanes at a time, then the rest one by one. */
static float row_sum(const float *x, int64_t n, int squares, float mean) {
    int64_t i = 0;
    float sum = 0.0f;
#ifdef EP_VECTOR_MATH
    ep_vf lanes = {0};
    for (; i + EP_VF_LANES <= n; i += EP_VF_LANES) {
        ep_vf v;
        __builtin_memcpy(&v, x + i, sizeof v);
        v -= mean;
        lanes += squares ? v * v : v;
    }
    for (int l = 0; l < EP_VF_LANES; l++) sum += lanes[l];
#endif
    for (; i < n; i++) sum += squares ? (x[i] - mean) * (x[i] - mean) : x[i] - mean;
    return sum;
}

/* Rows [begin, end) of a LayerNormalization: each row's mean, then the mean of its squares about it (two passes, in
   float32 lanes), then the row scaled. */
typedef struct layer_norm_rows {
    const ep_node *n;
    int64_t outer, inner, tasks;
} layer_norm_rows;

static void layer_norm_task(void *arg, int32_t worker, int64_t index) {
    const layer_norm_rows *r = (const layer_norm_rows *)arg;
    const ep_node *n = r->n;
    int64_t inner = r->inner, begin, end;
    float epsilon = ep_param_f32(n, 1);
    const float *scale = (const float *)n->in[1]->data;
    const float *bias = n->n_in > 2 && n->in[2] ? (const float *)n->in[2]->data : 0;
    (void)worker;
    ep_task_range(r->outer, r->tasks, index, 1, &begin, &end);
    for (int64_t o = begin; o < end; o++) {
        const float *src = (const float *)n->in[0]->data + o * inner;
        float *dst = (float *)n->out[0]->data + o * inner;
        float mean = row_sum(src, inner, 0, 0.0f) / (float)inner;
        float inv = 1.0f / ep_sqrtf(row_sum(src, inner, 1, mean) / (float)inner + epsilon);
        for (int64_t i = 0; i < inner; i++) dst[i] = (src[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f);
    }
}

static ep_status run_layer_norm(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0];
    layer_norm_rows r = {n, 0, 1, 0};
    for (int32_t d = n->params[0]; d < x->rank; d++) r.inner *= x->dims[d];
    r.outer = r.inner ? x->count / r.inner : 0;
    r.tasks = ep_task_count(c, r.outer, (double)x->count * EP_COPY_WORK);
    ep_parallel(c, r.tasks, layer_norm_task, &r);
    return EP_OK;
}

const ep_kernel ep_kernel_softmax = {"Softmax", check_softmax, run_softmax};
const ep_kernel ep_kernel_channel_affine = {"ChannelAffine", check_channel_affine, run_channel_affine};
const ep_kernel ep_kernel_layer_norm = {"LayerNormalization", check_layer_norm, run_layer_norm};
