/* Linear quantization over run-time tensors. Quantize: mode 0 QuantizeLinear (float32 -> int8/uint8), mode 1
   DequantizeLinear (int8/uint8/int32 -> float32), mode 2 DynamicQuantizeLinear (float32 -> uint8, scale, zero
   point), mode 3 QuantizeLinear then DequantizeLinear with the same scale and zero point (float32 -> float32, one
   scale, a zero point whose dtype gives the range: the pair's result in one pass, after an optional activation of
   x, as a Conv's fused one: a QDQ model's HardSwish or Sigmoid between two pairs); scales per tensor (one), per
   axis (1-D along `axis`) or in blocks of `block` along `axis` (the input's shape with ceil(length / block) there).
   Requantize: an int32 accumulator (plus an int32 bias per channel) times a_scale * b_scale[channel] / y_scale,
   rounded half to even, plus the zero point, saturated. */
#include "gemm.h"
#include "quantized_value.h"

enum { QUANTIZE, DEQUANTIZE, DYNAMIC, ROUND_TRIP };

static int is_byte(int32_t dtype) { return dtype == EP_I8 || dtype == EP_U8; }

/* How scales map onto x, viewed as [outer, length, inner] around the axis. */
typedef struct layout {
    int64_t outer, length, inner, blocks, block;
    int per_tensor;
} layout;

static layout layout_of(const ep_tensor *x, const ep_tensor *scale, int32_t axis, int32_t block) {
    layout l = {1, 1, 1, 1, block, scale->count == 1 && block == 0};
    for (int32_t d = 0; d < x->rank; d++) {
        if (d < axis) l.outer *= x->dims[d];
        else if (d == axis) l.length = x->dims[d];
        else l.inner *= x->dims[d];
    }
    if (block) l.blocks = (l.length + block - 1) / block;
    return l;
}

static ep_status check_scales(const ep_node *n, const ep_tensor *x, const ep_tensor *scale, const ep_tensor *zero,
                              int32_t axis, int32_t block, char *error) {
    if (scale->dtype != EP_F32) return ep_fail(error, n, ": scales must be float32");
    if (zero && zero->count != scale->count) return ep_fail(error, n, ": zero points must match the scales");
    if (block < 0 || (x->rank == 0 && (axis != 0 || block))) return ep_fail(error, n, ": bad axis or block size");
    if (x->rank > 0 && (axis < 0 || axis >= x->rank)) return ep_fail(error, n, ": bad axis");
    if (scale->count == 1 && block == 0) return EP_OK;
    if (x->rank == 0) return ep_fail(error, n, ": a scalar takes one scale");
    if (block == 0)
        return scale->rank == 1 && scale->dims[0] == x->dims[axis] ? EP_OK
                                                                   : ep_fail(error, n, ": one scale per axis index");
    if (scale->rank != x->rank) return ep_fail(error, n, ": blocked scales must have the input's rank");
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t want = d == axis ? (x->dims[d] + block - 1) / block : x->dims[d];
        if (scale->dims[d] != want) return ep_fail(error, n, ": blocked scales do not fit the input");
    }
    return EP_OK;
}

static ep_status check_dynamic(const ep_node *n, char *error) {
    const ep_tensor *x = n->in[0];
    if (n->n_in != 1 || n->n_out != 3 || !x) return ep_fail(error, n, ": one input and three outputs");
    if (x->dtype != EP_F32 || n->out[0]->dtype != EP_U8 || n->out[1]->dtype != EP_F32 || n->out[2]->dtype != EP_U8)
        return ep_fail(error, n, ": float32 in, uint8, float32 and uint8 out");
    if (!ep_same_shape(x, n->out[0]) || n->out[1]->count != 1 || n->out[2]->count != 1)
        return ep_fail(error, n, ": wrong output shapes");
    return EP_OK;
}

static ep_status check_quantize(const ep_node *n, size_t *scratch, char *error) {
    *scratch = 0;
    int32_t mode = n->n_params > 0 ? n->params[0] : -1;
    if (n->n_params != 3 && (n->n_params != 6 || mode != ROUND_TRIP || n->params[3] < 0 ||
                             n->params[3] >= EP_ACT_KINDS))
        return ep_fail(error, n, ": bad parameters");
    int32_t axis = n->params[1], block = n->params[2];
    if (mode == DYNAMIC) return check_dynamic(n, error);
    ep_status status = ep_expect(n, 2, 3, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *scale = n->in[1], *zero = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    if (!ep_same_shape(x, y)) return ep_fail(error, n, ": the output must have the input's shape");
    if (mode == QUANTIZE) {
        if (x->dtype != EP_F32 || !is_byte(y->dtype)) return ep_fail(error, n, ": float32 in, int8 or uint8 out");
        if (zero && zero->dtype != y->dtype) return ep_fail(error, n, ": zero points must be of the output's dtype");
    } else if (mode == DEQUANTIZE) {
        if ((!is_byte(x->dtype) && x->dtype != EP_I32) || y->dtype != EP_F32)
            return ep_fail(error, n, ": int8, uint8 or int32 in, float32 out");
        if (zero && zero->dtype != x->dtype) return ep_fail(error, n, ": zero points must be of the input's dtype");
    } else if (mode == ROUND_TRIP) {
        if (x->dtype != EP_F32 || y->dtype != EP_F32 || !zero || !is_byte(zero->dtype) || scale->count != 1 || block)
            return ep_fail(error, n, ": float32 in and out, one scale and an int8 or uint8 zero point");
    } else {
        return ep_fail(error, n, ": unknown mode");
    }
    return check_scales(n, x, scale, zero, axis, block, error);
}

static int64_t integer_at(const ep_tensor *x, int64_t i) { return (int64_t)ep_load_int(x->data, x->dtype, i); }

static int64_t zero_at(const ep_tensor *zero, int64_t i) { return zero ? integer_at(zero, i) : 0; }

/* round(v) + zero saturated to the byte dtype (NaN gives the dtype's lowest value, as onnxruntime does). */
static void store_quantized(void *data, int32_t dtype, int64_t i, float v, int64_t zero) {
    ep_store_real(data, dtype, i, v == v ? (double)ep_roundf_even(v) + (double)zero : -1e30, 1);
}

/* The scale (and zero point) index of element (o, a, r). */
static int64_t scale_index(const layout *l, int64_t o, int64_t a, int64_t r) {
    if (l->per_tensor) return 0;
    if (!l->block) return a;
    return (o * l->blocks + a / l->block) * l->inner + r;
}

/* One scale and zero point for the whole tensor, float32 to a byte. */
static void quantize_per_tensor(const float *x, void *y, int32_t dtype, int64_t count, float scale, float zero) {
    float low = dtype == EP_I8 ? -128.0f : 0.0f, high = dtype == EP_I8 ? 127.0f : 255.0f;
    if (dtype == EP_I8)
        for (int64_t i = 0; i < count; i++)
            ((int8_t *)y)[i] = (int8_t)(int32_t)quantized_value(x[i], scale, zero, low, high);
    else
        for (int64_t i = 0; i < count; i++)
            ((uint8_t *)y)[i] = (uint8_t)(int32_t)quantized_value(x[i], scale, zero, low, high);
}

static void dequantize_per_tensor(const void *x, int32_t dtype, float *y, int64_t count, float scale, int32_t zero) {
    if (dtype == EP_I8)
        for (int64_t i = 0; i < count; i++) y[i] = (float)((int32_t)((const int8_t *)x)[i] - zero) * scale;
    else
        for (int64_t i = 0; i < count; i++) y[i] = (float)((int32_t)((const uint8_t *)x)[i] - zero) * scale;
}

/* Floats of a block of the round trip after an activation: 8 KB, in the L1 cache of every CPU we target. */
#define ROUND_TRIP_BLOCK 2048

/* The round trip of count floats, after the op's activation (if it has one) a block at a time. */
static void round_trip_blocks(const ep_node *n, const float *x, float *y, int64_t count, float scale, int is_signed,
                              float zero) {
    if (n->n_params == 3) {
        ep_round_trip_per_tensor(x, y, is_signed, count, scale, zero);
        return;
    }
    for (int64_t i = 0; i < count; i += ROUND_TRIP_BLOCK) {
        int64_t size = count - i < ROUND_TRIP_BLOCK ? count - i : ROUND_TRIP_BLOCK;
        ep_activate_row(n->params[3], x + i, y + i, size, ep_param_f32(n, 4), ep_param_f32(n, 5));
        ep_round_trip_per_tensor(y + i, y + i, is_signed, size, scale, zero);
    }
}

/* Elements [begin, end) of a per-tensor conversion: float32 to bytes, bytes to float32, or the round trip. */
typedef struct per_tensor {
    const ep_node *n;
    int mode;
    int64_t tasks;
} per_tensor;

static void per_tensor_task(void *arg, int32_t worker, int64_t index) {
    const per_tensor *c = (const per_tensor *)arg;
    const ep_tensor *x = c->n->in[0], *zero = c->n->n_in > 2 ? c->n->in[2] : 0, *y = c->n->out[0];
    float scale = *(const float *)c->n->in[1]->data;
    int64_t begin, end;
    (void)worker;
    ep_task_range(x->count, c->tasks, index, 64, &begin, &end);
    if (c->mode == ROUND_TRIP)
        round_trip_blocks(c->n, (const float *)x->data + begin, (float *)y->data + begin, end - begin, scale,
                          zero->dtype == EP_I8, (float)zero_at(zero, 0));
    else if (c->mode == QUANTIZE)
        quantize_per_tensor((const float *)x->data + begin, (uint8_t *)y->data + begin, y->dtype, end - begin, scale,
                            (float)zero_at(zero, 0));
    else
        dequantize_per_tensor((const uint8_t *)x->data + begin, x->dtype, (float *)y->data + begin, end - begin, scale,
                              (int32_t)zero_at(zero, 0));
}

static void convert(const ep_node *n, int mode, const ep_context *ctx) {
    const ep_tensor *x = n->in[0], *scale = n->in[1], *zero = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    layout l = layout_of(x, scale, n->params[1], n->params[2]);
    if (mode == ROUND_TRIP || (l.per_tensor && mode == QUANTIZE && x->dtype == EP_F32 && is_byte(y->dtype)) ||
        (l.per_tensor && mode == DEQUANTIZE && is_byte(x->dtype) && y->dtype == EP_F32)) {
        per_tensor c = {n, mode, ep_task_count(ctx, (x->count + 63) / 64, (double)x->count * EP_COPY_WORK)};
        ep_parallel(ctx, c.tasks, per_tensor_task, &c);
        return;
    }
    const float *s = (const float *)scale->data;
    int64_t i = 0;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t a = 0; a < l.length; a++)
            for (int64_t r = 0; r < l.inner; r++, i++) {
                int64_t k = scale_index(&l, o, a, r);
                if (mode == QUANTIZE)
                    store_quantized(y->data, y->dtype, i, ((const float *)x->data)[i] / s[k], zero_at(zero, k));
                else
                    ((float *)y->data)[i] = (float)(integer_at(x, i) - zero_at(zero, k)) * s[k];
            }
}

/* DynamicQuantizeLinear: the range of x widened to hold 0 gives scale (max - min) / 255 (1 for an all-zero x) and
   the zero point round(-min / scale) saturated to [0, 255]. */
static void quantize_dynamic(const ep_node *n) {
    const ep_tensor *x = n->in[0];
    const float *v = (const float *)x->data;
    float low = 0.0f, high = 0.0f;
    for (int64_t i = 0; i < x->count; i++) {
        low = v[i] < low ? v[i] : low;
        high = v[i] > high ? v[i] : high;
    }
    float scale = high == low ? 1.0f : (high - low) / 255.0f;
    float start = 0.0f - low / scale;
    start = start < 0.0f ? 0.0f : (start > 255.0f ? 255.0f : start);
    uint8_t zero = (uint8_t)(int32_t)ep_roundf_even(start);
    for (int64_t i = 0; i < x->count; i++) store_quantized(n->out[0]->data, EP_U8, i, v[i] / scale, zero);
    *(float *)n->out[1]->data = scale;
    *(uint8_t *)n->out[2]->data = zero;
}

static ep_status run_quantize(const ep_node *n, const ep_context *ctx) {
    if (n->params[0] == DYNAMIC) quantize_dynamic(n);
    else convert(n, n->params[0], ctx);
    return EP_OK;
}

const ep_kernel ep_kernel_quantize = {"Quantize", check_quantize, run_quantize};

/* Requantize: inputs acc (int32), a_scale (one float32), b_scale (one, or one per channel), y_scale (one), y_zero
   (one int8/uint8, or absent: uint8 0), bias (int32 per channel, or absent); params: the channel axis of acc. */
static ep_status check_requantize(const ep_node *n, size_t *scratch, char *error) {
    *scratch = 0;
    ep_status status = ep_expect(n, 4, 6, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *acc = n->in[0], *y = n->out[0];
    const ep_tensor *zero = n->n_in > 4 ? n->in[4] : 0, *bias = n->n_in > 5 ? n->in[5] : 0;
    int32_t axis = n->params[0];
    if (acc->dtype != EP_I32 || !is_byte(y->dtype) || !ep_same_shape(acc, y))
        return ep_fail(error, n, ": int32 accumulator in, int8 or uint8 of its shape out");
    if (acc->rank < 1 || axis < 0 || axis >= acc->rank) return ep_fail(error, n, ": bad channel axis");
    int64_t channels = acc->dims[axis];
    for (uint32_t k = 1; k < 4; k++)
        if (n->in[k]->dtype != EP_F32 || (n->in[k]->count != 1 && (k != 2 || n->in[k]->count != channels)))
            return ep_fail(error, n, ": float32 scales: one, or one per channel for b_scale");
    if (zero && (zero->dtype != y->dtype || zero->count != 1))
        return ep_fail(error, n, ": one zero point of the output's dtype");
    if (bias && (bias->dtype != EP_I32 || bias->count != channels))
        return ep_fail(error, n, ": the bias must be int32, one per channel");
    return EP_OK;
}

static ep_status run_requantize(const ep_node *n, const ep_context *ctx) {
    (void)ctx;
    const ep_tensor *acc = n->in[0], *b_scale = n->in[2], *y = n->out[0];
    const ep_tensor *zero = n->n_in > 4 ? n->in[4] : 0, *bias = n->n_in > 5 ? n->in[5] : 0;
    float a_scale = *(const float *)n->in[1]->data, y_scale = *(const float *)n->in[3]->data;
    int64_t z = zero_at(zero, 0), channels = acc->dims[n->params[0]], inner = 1;
    for (int32_t d = n->params[0] + 1; d < acc->rank; d++) inner *= acc->dims[d];
    const int32_t *v = (const int32_t *)acc->data;
    for (int64_t i = 0; i < acc->count; i++) {
        int64_t c = i / inner % channels;
        float multiplier = a_scale * ((const float *)b_scale->data)[b_scale->count == 1 ? 0 : c] / y_scale;
        uint32_t sum = (uint32_t)v[i] + (bias ? (uint32_t)((const int32_t *)bias->data)[c] : 0u);
        store_quantized(y->data, y->dtype, i, (float)(int32_t)sum * multiplier, z);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_requantize = {"Requantize", check_requantize, run_requantize};
