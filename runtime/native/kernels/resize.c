/* Resize, nearest and (multi-)linear. Params: mode (0 nearest, 1 linear), coordinate transform (0 half_pixel,
   1 asymmetric, 2 align_corners, 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest), nearest mode
   (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil), then one float scale per axis. */
#include "../ep_internal.h"

#define MAX_LINEAR_AXES 3

/* NCHW resized over H and W only: the fast path, with a column table in scratch. */
static int is_planar(const ep_node *n) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    return x->rank == 4 && x->dims[0] == y->dims[0] && x->dims[1] == y->dims[1] && ep_param_f32(n, 3) == 1.0f &&
           ep_param_f32(n, 4) == 1.0f;
}

static ep_status check_resize(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int32_t *p = n->params;
    if (x->dtype != EP_F32 || y->dtype != EP_F32 || x->rank != y->rank) return ep_fail(error, n, ": float32 only");
    if (n->n_params != 3 + (uint32_t)x->rank || p[0] < 0 || p[0] > 1 || p[1] < 0 || p[1] > 4 || p[2] < 0 || p[2] > 3)
        return ep_fail(error, n, ": bad parameters");
    int changed = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        float scale = ep_param_f32(n, 3 + (uint32_t)d);
        if (!(scale > 0.0f) || scale > 1e6f) return ep_fail(error, n, ": bad scale");
        if (y->dims[d] && !x->dims[d]) return ep_fail(error, n, ": resizing an empty axis");
        changed += x->dims[d] != y->dims[d] || scale != 1.0f;
    }
    if (p[0] == 1 && changed > MAX_LINEAR_AXES) return ep_fail(error, n, ": linear over more than 3 axes");
    if (is_planar(n)) *scratch = (size_t)y->dims[3] * 3 * sizeof(float);
    return EP_OK;
}

static float source_coordinate(int32_t transform, int64_t o, int64_t in_len, int64_t out_len, float scale) {
    switch (transform) {
    case 1: return (float)o / scale;
    case 2: { /* ONNX divides by in_len * scale - 1, which differs from out_len - 1 when the scale is not exact */
        float resized = (float)in_len * scale;
        return out_len == 1 || resized <= 1.0f ? 0.0f : (float)o * (float)(in_len - 1) / (resized - 1.0f);
    }
    case 3: return out_len > 1 ? ((float)o + 0.5f) / scale - 0.5f : 0.0f;
    case 4: return ((float)o + 0.5f) / scale;
    default: return ((float)o + 0.5f) / scale - 0.5f;
    }
}

static int64_t nearest_index(int32_t mode, float x, int64_t len) {
    float f = ep_floorf(x), frac = x - f;
    int64_t i;
    switch (mode) {
    case 1: i = (int64_t)(frac >= 0.5f ? f + 1.0f : f); break;
    case 2: i = (int64_t)f; break;
    case 3: i = (int64_t)(frac > 0.0f ? f + 1.0f : f); break;
    default: i = (int64_t)(frac > 0.5f ? f + 1.0f : f); break;
    }
    return i < 0 ? 0 : (i >= len ? len - 1 : i);
}

static void source_span(const ep_node *n, int32_t axis, int64_t o, int64_t *i0, int64_t *i1, float *w) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    float s = source_coordinate(n->params[1], o, x->dims[axis], y->dims[axis], ep_param_f32(n, 3 + (uint32_t)axis));
    if (n->params[0] == 0) {
        *i0 = *i1 = nearest_index(n->params[2], s, x->dims[axis]);
        *w = 0.0f;
        return;
    }
    float limit = (float)(x->dims[axis] - 1);
    s = s < 0.0f ? 0.0f : (s > limit ? limit : s);
    *i0 = (int64_t)ep_floorf(s);
    *i1 = *i0 + 1 < x->dims[axis] ? *i0 + 1 : *i0;
    *w = s - (float)*i0;
}

static void run_planar(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int64_t h = x->dims[2], w = x->dims[3], oh = y->dims[2], ow = y->dims[3], planes = x->dims[0] * x->dims[1];
    int32_t *x0 = (int32_t *)(void *)c->scratch, *x1 = x0 + ow;
    float *wx = c->scratch + 2 * ow;
    for (int64_t ox = 0; ox < ow; ox++) {
        int64_t a, b;
        source_span(n, 3, ox, &a, &b, &wx[ox]);
        x0[ox] = (int32_t)a;
        x1[ox] = (int32_t)b;
    }
    for (int64_t q = 0; q < planes; q++) {
        const float *in = (const float *)x->data + q * h * w;
        float *out = (float *)y->data + q * oh * ow;
        for (int64_t oy = 0; oy < oh; oy++) {
            int64_t y0, y1;
            float wy;
            source_span(n, 2, oy, &y0, &y1, &wy);
            const float *r0 = in + y0 * w, *r1 = in + y1 * w;
            float *row = out + oy * ow;
            if (n->params[0] == 0) {
                for (int64_t ox = 0; ox < ow; ox++) row[ox] = r0[x0[ox]];
            } else {
                for (int64_t ox = 0; ox < ow; ox++) {
                    float top = r0[x0[ox]] + wx[ox] * (r0[x1[ox]] - r0[x0[ox]]);
                    float bottom = r1[x0[ox]] + wx[ox] * (r1[x1[ox]] - r1[x0[ox]]);
                    row[ox] = top + wy * (bottom - top);
                }
            }
        }
    }
}

static ep_status run_resize(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (is_planar(n) && x->count && y->count) {
        run_planar(n, c);
        return EP_OK;
    }
    const int32_t *p = n->params;
    int32_t rank = x->rank;
    int64_t strides[EP_MAX_RANK], counter[EP_MAX_RANK], stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x->dims[d];
        counter[d] = 0;
    }
    const float *in = (const float *)x->data;
    float *out = (float *)y->data;
    for (int64_t o = 0; o < y->count; o++) {
        if (p[0] == 0) {
            int64_t at = 0;
            for (int32_t d = 0; d < rank; d++) {
                float s = source_coordinate(p[1], counter[d], x->dims[d], y->dims[d], ep_param_f32(n, 3 + (uint32_t)d));
                at += nearest_index(p[2], s, x->dims[d]) * strides[d];
            }
            out[o] = in[at];
        } else {
            int64_t base = 0, offsets[MAX_LINEAR_AXES];
            float weights[MAX_LINEAR_AXES];
            int32_t axes = 0;
            for (int32_t d = 0; d < rank; d++) {
                float scale = ep_param_f32(n, 3 + (uint32_t)d);
                if (x->dims[d] == y->dims[d] && scale == 1.0f) {
                    base += counter[d] * strides[d];
                    continue;
                }
                float s = source_coordinate(p[1], counter[d], x->dims[d], y->dims[d], scale);
                float limit = (float)(x->dims[d] - 1);
                s = s < 0.0f ? 0.0f : (s > limit ? limit : s);
                int64_t i0 = (int64_t)ep_floorf(s), i1 = i0 + 1 < x->dims[d] ? i0 + 1 : i0;
                base += i0 * strides[d];
                offsets[axes] = (i1 - i0) * strides[d];
                weights[axes] = s - (float)i0;
                axes++;
            }
            float acc = 0.0f;
            for (int32_t corner = 0; corner < (1 << axes); corner++) {
                float w = 1.0f;
                int64_t at = base;
                for (int32_t a = 0; a < axes; a++) {
                    int upper = (corner >> a) & 1;
                    w *= upper ? weights[a] : 1.0f - weights[a];
                    at += upper ? offsets[a] : 0;
                }
                acc += w * in[at];
            }
            out[o] = acc;
        }
        for (int32_t d = rank - 1; d >= 0; d--) {
            if (++counter[d] < y->dims[d]) break;
            counter[d] = 0;
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_resize = {"Resize", check_resize, run_resize};
