/* Detection ops. RoiAlign: for each region of interest (x1, y1, x2, y2 in input pixels, times spatial_scale) an
   output_height x output_width grid of bins, each the average (or the maximum) of bilinear samples on a regular
   grid inside the bin; samples more than a pixel outside the input count as 0, as in ONNX's reference. MaxUnpool:
   the output zeroed, then each input value written at its index, a flat position in the shape MaxPool's formula
   gives (kernel, strides, pads), whose corner the output (output_shape, never smaller) holds. */
#include "../ep_internal.h"

#define ROI_MODE_AVG 0
#define ROI_MODE_MAX 1
#define MAX_SAMPLES_PER_AXIS 65536.0f

typedef struct bilinear {
    int64_t at[4];
    float weight[4];
} bilinear;

typedef struct roi_grid {
    float start_h, start_w, bin_h, bin_w;
    int64_t samples_h, samples_w;
} roi_grid;

/* The four neighbours of (y, x) on an h x w plane and their weights; all weights 0 more than a pixel outside (or
   at a NaN coordinate). */
static bilinear bilinear_at(float y, float x, int64_t h, int64_t w) {
    bilinear b = {{0, 0, 0, 0}, {0.0f, 0.0f, 0.0f, 0.0f}};
    if (!(y >= -1.0f && y <= (float)h && x >= -1.0f && x <= (float)w)) return b;
    if (y < 0.0f) y = 0.0f;
    if (x < 0.0f) x = 0.0f;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= h - 1) y = (float)(y0 = y1 = h - 1);
    if (x0 >= w - 1) x = (float)(x0 = x1 = w - 1);
    float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    b.at[0] = y0 * w + x0;
    b.at[1] = y0 * w + x1;
    b.at[2] = y1 * w + x0;
    b.at[3] = y1 * w + x1;
    b.weight[0] = hy * hx;
    b.weight[1] = hy * lx;
    b.weight[2] = ly * hx;
    b.weight[3] = ly * lx;
    return b;
}

/* Samples per bin along one axis: sampling_ratio, or ceil(roi length / bins) when it is 0; -1 when the region is
   too large (or NaN) to sample. */
static int64_t samples_per_bin(int32_t sampling_ratio, float length, int64_t bins) {
    if (sampling_ratio > 0) return sampling_ratio;
    float ratio = length / (float)bins, ceiling = -ep_floorf(-ratio);
    if (!(ceiling <= MAX_SAMPLES_PER_AXIS)) return -1;
    return ceiling > 0.0f ? (int64_t)ceiling : 0;
}

static ep_status check_roi_align(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 4) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *rois = n->in[1], *batch = n->in[2], *y = n->out[0];
    if (x->dtype != EP_F32 || rois->dtype != EP_F32 || y->dtype != EP_F32 || batch->dtype != EP_I64)
        return ep_fail(error, n, ": X, rois and Y must be float32, batch_indices int64");
    if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || batch->rank != 1 || batch->dims[0] != rois->dims[0])
        return ep_fail(error, n, ": X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
    if (y->rank != 4 || y->dims[0] != rois->dims[0] || y->dims[1] != x->dims[1] || y->dims[2] < 1 || y->dims[3] < 1)
        return ep_fail(error, n, ": Y must be [R, C, output_height, output_width]");
    if ((n->params[0] != ROI_MODE_AVG && n->params[0] != ROI_MODE_MAX) || (n->params[1] != 0 && n->params[1] != 1))
        return ep_fail(error, n, ": bad mode or coordinate transformation");
    if (n->params[2] < 0 || n->params[2] > (int32_t)MAX_SAMPLES_PER_AXIS)
        return ep_fail(error, n, ": sampling_ratio outside [0, 65536]");
    *scratch = 0;
    return EP_OK;
}

/* The region's sampling grid (roi in input pixels, the half-pixel shift, lengths at least 1 without it). */
static int roi_grid_of(const ep_node *n, const float *roi, int64_t bins_h, int64_t bins_w, roi_grid *g) {
    float scale = ep_param_f32(n, 3), shift = n->params[1] ? 0.5f : 0.0f;
    g->start_w = roi[0] * scale - shift;
    g->start_h = roi[1] * scale - shift;
    float width = roi[2] * scale - shift - g->start_w, height = roi[3] * scale - shift - g->start_h;
    if (!n->params[1]) {
        if (width < 1.0f) width = 1.0f;
        if (height < 1.0f) height = 1.0f;
    }
    g->bin_h = height / (float)bins_h;
    g->bin_w = width / (float)bins_w;
    g->samples_h = samples_per_bin(n->params[2], height, bins_h);
    g->samples_w = samples_per_bin(n->params[2], width, bins_w);
    return g->samples_h >= 0 && g->samples_w >= 0;
}

/* One output bin of one channel plane. */
static float roi_bin(const float *plane, int64_t h, int64_t w, const roi_grid *g, int64_t ph, int64_t pw, int max) {
    float result = 0.0f;
    int first = 1;
    for (int64_t iy = 0; iy < g->samples_h; iy++) {
        float yy = g->start_h + (float)ph * g->bin_h + ((float)iy + 0.5f) * g->bin_h / (float)g->samples_h;
        for (int64_t ix = 0; ix < g->samples_w; ix++) {
            float xx = g->start_w + (float)pw * g->bin_w + ((float)ix + 0.5f) * g->bin_w / (float)g->samples_w;
            bilinear b = bilinear_at(yy, xx, h, w);
            if (!max) {
                result += b.weight[0] * plane[b.at[0]] + b.weight[1] * plane[b.at[1]] +
                          b.weight[2] * plane[b.at[2]] + b.weight[3] * plane[b.at[3]];
                continue;
            }
            for (int k = 0; k < 4; k++) {
                float v = b.weight[k] * plane[b.at[k]];
                if (first || v > result) result = v;
                first = 0;
            }
        }
    }
    if (max) return result;
    int64_t count = g->samples_h * g->samples_w;
    return result / (float)(count > 1 ? count : 1);
}

static ep_status run_roi_align(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const float *rois = (const float *)n->in[1]->data;
    const int64_t *batch = (const int64_t *)n->in[2]->data;
    int64_t channels = x->dims[1], h = x->dims[2], w = x->dims[3], bins_h = y->dims[2], bins_w = y->dims[3];
    float *out = (float *)y->data;
    for (int64_t r = 0; r < y->dims[0]; r++) {
        if (batch[r] < 0 || batch[r] >= x->dims[0]) {
            ep_message(c->error, "RoiAlign: batch index out of range", "", -1);
            return EP_ERR_RUNTIME;
        }
        roi_grid g;
        if (!roi_grid_of(n, rois + r * 4, bins_h, bins_w, &g)) {
            ep_message(c->error, "RoiAlign: a region too large (or NaN) for adaptive sampling", "", -1);
            return EP_ERR_RUNTIME;
        }
        for (int64_t ch = 0; ch < channels; ch++) {
            const float *plane = (const float *)x->data + (batch[r] * channels + ch) * h * w;
            for (int64_t ph = 0; ph < bins_h; ph++)
                for (int64_t pw = 0; pw < bins_w; pw++)
                    *out++ = roi_bin(plane, h, w, &g, ph, pw, n->params[0] == ROI_MODE_MAX);
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_roi_align = {"RoiAlign", check_roi_align, run_roi_align};

static ep_status check_max_unpool(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *indices = n->in[1], *y = n->out[0];
    if (x->rank < 3 || n->n_params != (uint32_t)(x->rank - 2)) return ep_fail(error, n, ": bad parameters");
    if (y->dtype != x->dtype || indices->dtype != EP_I64 || !ep_same_shape(x, indices))
        return ep_fail(error, n, ": I must be int64 of X's shape, Y of X's dtype");
    if (y->rank != x->rank || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return ep_fail(error, n, ": Y must be [N, C, ...] like X");
    for (int32_t d = 2; d < x->rank; d++)
        if (n->params[d - 2] < 1 || n->params[d - 2] > y->dims[d])
            return ep_fail(error, n, ": the pooled shape must be positive and fit in Y");
    *scratch = 0;
    return EP_OK;
}

static ep_status run_max_unpool(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int64_t *indices = (const int64_t *)n->in[1]->data;
    size_t size = ep_dtype_size(x->dtype);
    int64_t pooled_count = x->dims[0] * x->dims[1];
    for (int32_t d = 2; d < x->rank; d++) pooled_count *= n->params[d - 2];
    ep_memset(y->data, 0, y->bytes);
    for (int64_t i = 0; i < x->count; i++) {
        int64_t flat = indices[i], at = 0, stride = 1;
        if (flat < 0 || flat >= pooled_count) {
            ep_message(c->error, "MaxUnpool: index out of range", "", -1);
            return EP_ERR_RUNTIME;
        }
        for (int32_t d = x->rank - 1; d >= 0; d--) {
            int64_t pooled = d >= 2 ? n->params[d - 2] : x->dims[d];
            at += (flat % pooled) * stride;
            flat /= pooled;
            stride *= y->dims[d];
        }
        ep_memcpy((uint8_t *)y->data + (size_t)at * size, (const uint8_t *)x->data + (size_t)i * size, size);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_max_unpool = {"MaxUnpool", check_max_unpool, run_max_unpool};
