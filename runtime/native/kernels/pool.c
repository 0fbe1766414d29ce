/* MaxPool and AveragePool, 1-D and 2-D (global pools are pools with the whole plane as kernel).
   Params: kind (0 max, 1 average), count_include_pad, kernel h w, stride h w, pad top left bottom right,
   dilation h w. The output size may be the floor or the ceiling form. */
#include "../ep_internal.h"

enum { K_KIND, K_INCLUDE_PAD, K_KH, K_KW, K_SH, K_SW, K_PT, K_PL, K_PB, K_PR, K_DH, K_DW, K_COUNT };

static void plane_dims(const ep_tensor *t, int64_t *h, int64_t *w) {
    *h = t->rank == 4 ? t->dims[2] : 1;
    *w = t->dims[t->rank - 1];
}

static int size_fits(int64_t in, int64_t pads, int64_t extent, int64_t stride, int64_t out) {
    int64_t span = in + pads - extent;
    if (span < 0) return 0;
    return out == span / stride + 1 || out == (span + stride - 1) / stride + 1;
}

static ep_status check_pool(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int32_t *p = n->params;
    if (n->n_params != K_COUNT || p[K_KIND] < 0 || p[K_KIND] > 1) return ep_fail(error, n, ": bad parameters");
    if (x->dtype != EP_F32 || y->dtype != EP_F32 || x->rank != y->rank || (x->rank != 3 && x->rank != 4))
        return ep_fail(error, n, ": float32 of rank 3 or 4 only");
    for (int i = K_KH; i < K_COUNT; i++)
        if (p[i] < ((i >= K_PT && i <= K_PR) ? 0 : 1)) return ep_fail(error, n, ": bad kernel parameters");
    int64_t h, w, oh, ow;
    plane_dims(x, &h, &w);
    plane_dims(y, &oh, &ow);
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) return ep_fail(error, n, ": wrong output shape");
    if (x->rank == 3 && (p[K_KH] != 1 || p[K_PT] || p[K_PB])) return ep_fail(error, n, ": 1-D pool with a height");
    int64_t eh = (int64_t)(p[K_KH] - 1) * p[K_DH] + 1, ew = (int64_t)(p[K_KW] - 1) * p[K_DW] + 1;
    if (!size_fits(h, (int64_t)p[K_PT] + p[K_PB], eh, p[K_SH], oh) ||
        !size_fits(w, (int64_t)p[K_PL] + p[K_PR], ew, p[K_SW], ow))
        return ep_fail(error, n, ": output size does not match the parameters");
    return EP_OK;
}

/* One window per plane, no padding: a plain reduction of each plane. */
static void global_pool(int is_max, const float *in, float *out, int64_t planes, int64_t size) {
    for (int64_t q = 0; q < planes; q++) {
        const float *plane = in + q * size;
        float acc = is_max ? plane[0] : 0.0f;
        if (is_max)
            for (int64_t i = 1; i < size; i++) acc = (plane[i] > acc || plane[i] != plane[i]) ? plane[i] : acc;
        else
            for (int64_t i = 0; i < size; i++) acc += plane[i];
        out[q] = is_max ? acc : acc / (float)size;
    }
}

static ep_status run_pool(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int32_t *p = n->params;
    int64_t h, w, oh, ow;
    plane_dims(x, &h, &w);
    plane_dims(y, &oh, &ow);
    int64_t planes = x->dims[0] * x->dims[1];
    int is_max = p[K_KIND] == 0;
    if (oh == 1 && ow == 1 && p[K_KH] == h && p[K_KW] == w && h * w > 0 && !p[K_PT] && !p[K_PL] && !p[K_PB] &&
        !p[K_PR] && p[K_DH] == 1 && p[K_DW] == 1) {
        global_pool(is_max, (const float *)x->data, (float *)y->data, planes, h * w);
        return EP_OK;
    }
    for (int64_t q = 0; q < planes; q++) {
        const float *in = (const float *)x->data + q * h * w;
        float *out = (float *)y->data + q * oh * ow;
        for (int64_t oy = 0; oy < oh; oy++) {
            for (int64_t ox = 0; ox < ow; ox++) {
                float acc = is_max ? -3.4028235e38f : 0.0f;
                int64_t count = 0, padded = 0, seen = 0;
                for (int64_t ky = 0; ky < p[K_KH]; ky++) {
                    int64_t iy = oy * p[K_SH] - p[K_PT] + ky * p[K_DH];
                    for (int64_t kx = 0; kx < p[K_KW]; kx++) {
                        int64_t ix = ox * p[K_SW] - p[K_PL] + kx * p[K_DW];
                        if (iy >= -p[K_PT] && iy < h + p[K_PB] && ix >= -p[K_PL] && ix < w + p[K_PR]) padded++;
                        if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                        float v = in[iy * w + ix];
                        seen++;
                        if (is_max) acc = (v > acc || v != v) ? v : acc;
                        else acc += v;
                        count++;
                    }
                }
                if (!is_max) {
                    int64_t divisor = p[K_INCLUDE_PAD] ? padded : count;
                    acc = divisor ? acc / (float)divisor : 0.0f;
                }
                out[oy * ow + ox] = seen || !is_max ? acc : 0.0f;
            }
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_pool = {"Pool", check_pool, run_pool};
