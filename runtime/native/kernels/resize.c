/* Resize, nearest and (multi-)linear. Params: mode (0 nearest, 1 linear), coordinate transform (0 half_pixel,
   1 asymmetric, 2 align_corners, 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest), nearest mode
   (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil), then one float scale per axis. */
#include "../ep_internal.h"

#define MAX_LINEAR_AXES 3

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
    return EP_OK;
}

static float source_coordinate(int32_t transform, int64_t o, int64_t in_len, int64_t out_len, float scale) {
    switch (transform) {
    case 1: return (float)o / scale;
    case 2: return out_len == 1 ? 0.0f : (float)o * (float)(in_len - 1) / (float)(out_len - 1);
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

static ep_status run_resize(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
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
