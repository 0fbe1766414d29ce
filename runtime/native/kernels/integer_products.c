/* Integer products of int8/uint8 operands less their zero points, accumulated in int32 (wrapping, as onnxruntime).
   MatMulInteger: A [batch, M, K] and B [batch, K, N] (a batch of 1 broadcasts), zero points one for A and one or per
   column for B, out int32 [batch, M, N]. ConvInteger: X [N, C, H, W] (rank 3: H = 1), W [M, C / group, kh,
   kw], zero points one for X and one or per output channel for W (padding reads X's zero point, adding nothing);
   params group, kernel h w, stride h w, pad top left bottom right, dilation h w (11 words). */
#include "../ep_internal.h"

static int is_byte(int32_t dtype) { return dtype == EP_I8 || dtype == EP_U8; }

static int32_t byte_at(const ep_tensor *t, int64_t i) {
    return t->dtype == EP_I8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

static int32_t zero_at(const ep_tensor *zero, int64_t i) {
    return zero ? byte_at(zero, zero->count == 1 ? 0 : i) : 0;
}

static ep_status check_zero(const ep_node *n, const ep_tensor *zero, const ep_tensor *of, int64_t per, char *error) {
    if (zero && (zero->dtype != of->dtype || (zero->count != 1 && (zero->rank != 1 || zero->count != per))))
        return ep_fail(error, n, ": zero points must be of their operand's dtype, one or one per column or channel");
    return EP_OK;
}

static ep_status check_matmul_integer(const ep_node *n, size_t *scratch, char *error) {
    *scratch = 0;
    ep_status status = ep_expect(n, 2, 4, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    if (n->n_params != 0 || !is_byte(a->dtype) || !is_byte(b->dtype) || y->dtype != EP_I32)
        return ep_fail(error, n, ": int8 or uint8 operands, int32 out, no parameters");
    if (a->rank != 3 || b->rank != 3 || y->rank != 3 || a->dims[2] != b->dims[1])
        return ep_fail(error, n, ": operands must be [batch, M, K] and [batch, K, N]");
    int64_t batch = a->dims[0] > b->dims[0] ? a->dims[0] : b->dims[0];
    if ((a->dims[0] != batch && a->dims[0] != 1) || (b->dims[0] != batch && b->dims[0] != 1) ||
        y->dims[0] != batch || y->dims[1] != a->dims[1] || y->dims[2] != b->dims[2])
        return ep_fail(error, n, ": wrong batch or output shape");
    status = check_zero(n, n->n_in > 2 ? n->in[2] : 0, a, 1, error);
    return status != EP_OK ? status : check_zero(n, n->n_in > 3 ? n->in[3] : 0, b, b->dims[2], error);
}

static ep_status run_matmul_integer(const ep_node *n, const ep_context *ctx) {
    (void)ctx;
    const ep_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    const ep_tensor *a_zero = n->n_in > 2 ? n->in[2] : 0, *b_zero = n->n_in > 3 ? n->in[3] : 0;
    int64_t m = a->dims[1], k = a->dims[2], cols = b->dims[2];
    int32_t *out = (int32_t *)y->data, za = zero_at(a_zero, 0);
    for (int64_t t = 0; t < y->dims[0]; t++) {
        int64_t a0 = a->dims[0] == 1 ? 0 : t * m * k, b0 = b->dims[0] == 1 ? 0 : t * k * cols;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < cols; j++) {
                int32_t zb = zero_at(b_zero, j);
                uint32_t sum = 0;
                for (int64_t p = 0; p < k; p++)
                    sum += (uint32_t)((byte_at(a, a0 + i * k + p) - za) * (byte_at(b, b0 + p * cols + j) - zb));
                out[(t * m + i) * cols + j] = (int32_t)sum;
            }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_matmul_integer = {"MatMulInteger", check_matmul_integer, run_matmul_integer};

typedef struct conv_shape {
    int64_t batch, channels, height, width, maps, out_h, out_w;
    int32_t group, kh, kw, sh, sw, top, left, dh, dw;
} conv_shape;

static conv_shape conv_shape_of(const ep_node *n) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int32_t *p = n->params;
    int spatial = x->rank == 4;
    conv_shape s = {x->dims[0], x->dims[1], spatial ? x->dims[2] : 1, x->dims[x->rank - 1], y->dims[1],
                    spatial ? y->dims[2] : 1, y->dims[y->rank - 1], p[0], p[1], p[2], p[3], p[4], p[5], p[6],
                    p[9], p[10]};
    return s;
}

static int64_t conv_extent(int64_t in, int32_t before, int32_t after, int32_t k, int32_t stride, int32_t dil) {
    int64_t span = in + before + after - ((int64_t)k - 1) * dil - 1;
    return span < 0 ? -1 : span / stride + 1;
}

static ep_status check_conv_integer(const ep_node *n, size_t *scratch, char *error) {
    *scratch = 0;
    ep_status status = ep_expect(n, 2, 4, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    if (n->n_params != 11 || !is_byte(x->dtype) || !is_byte(w->dtype) || y->dtype != EP_I32)
        return ep_fail(error, n, ": int8 or uint8 operands, int32 out, 11 parameters");
    if ((x->rank != 3 && x->rank != 4) || w->rank != x->rank || y->rank != x->rank)
        return ep_fail(error, n, ": 1-D or 2-D convolutions only");
    const int32_t *p = n->params;
    for (int i = 0; i < 11; i++)
        if (p[i] < (i >= 5 && i <= 8 ? 0 : 1)) return ep_fail(error, n, ": bad parameters");
    conv_shape s = conv_shape_of(n);
    int64_t wk = x->rank == 4 ? w->dims[2] : 1;
    if (s.channels % s.group || s.maps % s.group || w->dims[0] != s.maps || w->dims[1] != s.channels / s.group ||
        wk != s.kh || w->dims[w->rank - 1] != s.kw || y->dims[0] != s.batch)
        return ep_fail(error, n, ": the weights do not fit the input");
    if (s.out_h != conv_extent(s.height, s.top, p[7], s.kh, s.sh, s.dh) ||
        s.out_w != conv_extent(s.width, s.left, p[8], s.kw, s.sw, s.dw))
        return ep_fail(error, n, ": wrong output shape");
    const ep_tensor *x_zero = n->n_in > 2 ? n->in[2] : 0;
    if (x_zero && (x_zero->dtype != x->dtype || x_zero->count != 1))
        return ep_fail(error, n, ": one zero point of the input's dtype");
    return check_zero(n, n->n_in > 3 ? n->in[3] : 0, w, s.maps, error);
}

/* One output value: the sum over the group's channels and the kernel taps that fall inside the input. */
static int32_t conv_at(const ep_node *n, const conv_shape *s, int64_t b, int64_t m, int64_t oh, int64_t ow) {
    const ep_tensor *x = n->in[0], *w = n->in[1];
    int32_t zx = zero_at(n->n_in > 2 ? n->in[2] : 0, 0), zw = zero_at(n->n_in > 3 ? n->in[3] : 0, m);
    int64_t per = s->channels / s->group, first = m / (s->maps / s->group) * per;
    uint32_t sum = 0;
    for (int64_t c = 0; c < per; c++)
        for (int64_t i = 0; i < s->kh; i++) {
            int64_t h = oh * s->sh - s->top + i * s->dh;
            if (h < 0 || h >= s->height) continue;
            for (int64_t j = 0; j < s->kw; j++) {
                int64_t v = ow * s->sw - s->left + j * s->dw;
                if (v < 0 || v >= s->width) continue;
                int32_t xv = byte_at(x, ((b * s->channels + first + c) * s->height + h) * s->width + v) - zx;
                int32_t wv = byte_at(w, ((m * per + c) * s->kh + i) * s->kw + j) - zw;
                sum += (uint32_t)(xv * wv);
            }
        }
    return (int32_t)sum;
}

static ep_status run_conv_integer(const ep_node *n, const ep_context *ctx) {
    (void)ctx;
    conv_shape s = conv_shape_of(n);
    int32_t *out = (int32_t *)n->out[0]->data;
    for (int64_t b = 0; b < s.batch; b++)
        for (int64_t m = 0; m < s.maps; m++)
            for (int64_t oh = 0; oh < s.out_h; oh++)
                for (int64_t ow = 0; ow < s.out_w; ow++)
                    *out++ = conv_at(n, &s, b, m, oh, ow);
    return EP_OK;
}

const ep_kernel ep_kernel_conv_integer = {"ConvInteger", check_conv_integer, run_conv_integer};
