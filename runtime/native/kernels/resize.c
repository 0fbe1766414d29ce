/* Resize: nearest, linear and cubic, separable, one axis after another through two scratch buffers.
   Params: mode (0 nearest, 1 linear, 2 cubic), coordinate transform (0 half_pixel, 1 asymmetric, 2 align_corners,
   3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest, 5 half_pixel_symmetric, 6 tf_crop_and_resize), nearest mode
   (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil, 4 floor when enlarging and ceil when shrinking:
   opset 10 and Upsample), one float scale per axis, antialias, exclude_outside, cubic_coeff_a (float),
   extrapolation_value (float), roi starts then roi ends (floats, one per axis). Scratch: the largest tap table (per
   output index: taps indices, taps weights, one outside flag) and two buffers of the largest intermediate result;
   for the planar path (run_planar) only the row and column tap tables. */
#include "../ep_internal.h"

#define MAX_TAPS 65536
#define MAX_SCRATCH_FLOATS ((uint64_t)1 << 29)
#define CROP_AND_RESIZE 6

typedef struct {
    int32_t *index;   /* taps per output index, clamped into the input */
    float *weight;    /* taps per output index */
    int32_t *outside; /* one per output index: the source lies outside the roi, write the extrapolation value */
    int32_t taps;
} tap_table;

static double floor_double(double v) {
    double t = (double)(int64_t)v;
    return t > v ? t - 1.0 : t;
}

static float scale_of(const ep_node *n, int32_t d) { return ep_param_f32(n, 3 + (uint32_t)d); }
static int32_t antialias(const ep_node *n) { return n->params[3 + n->in[0]->rank]; }
static int32_t exclude_outside(const ep_node *n) { return n->params[4 + n->in[0]->rank]; }
static float cubic_a(const ep_node *n) { return ep_param_f32(n, 5 + (uint32_t)n->in[0]->rank); }
static float extrapolation(const ep_node *n) { return ep_param_f32(n, 6 + (uint32_t)n->in[0]->rank); }
static float roi_start(const ep_node *n, int32_t d) { return ep_param_f32(n, 7 + (uint32_t)(n->in[0]->rank + d)); }
static float roi_end(const ep_node *n, int32_t d) { return ep_param_f32(n, 7 + (uint32_t)(2 * n->in[0]->rank + d)); }

/* An axis that keeps its length under scale 1 (and the whole roi) is left as it is. */
static int is_resized(const ep_node *n, int32_t d) {
    int whole_roi = n->params[1] != CROP_AND_RESIZE || (roi_start(n, d) == 0.0f && roi_end(n, d) == 1.0f);
    return n->in[0]->dims[d] != n->out[0]->dims[d] || scale_of(n, d) != 1.0f || !whole_roi;
}

/* Taps per output index: 1 for nearest; 2 (linear) or 4 (cubic), widened by 1 / scale when antialiasing a shrink. */
static int64_t tap_count(const ep_node *n, int32_t d) {
    if (n->params[0] == 0) return 1;
    double support = n->params[0] == 1 ? 1.0 : 2.0, scale = scale_of(n, d);
    if (!antialias(n) || scale >= 1.0) return (int64_t)(2.0 * support);
    double half = support / scale;
    if (half > MAX_TAPS) return MAX_TAPS + 1;
    return -2 * (int64_t)floor_double(-half);
}

static int finite_roi(float v) { return v > -1e6f && v < 1e6f; }

static ep_status check_axes(const ep_node *n, size_t *scratch, char *error) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    uint64_t table = 0, largest = 0, count = 1;
    for (int32_t d = 0; d < x->rank; d++) {
        float scale = scale_of(n, d);
        if (!(scale > 0.0f) || scale > 1e6f) return ep_fail(error, n, ": bad scale");
        if (!finite_roi(roi_start(n, d)) || !finite_roi(roi_end(n, d))) return ep_fail(error, n, ": bad roi");
        if (y->dims[d] && !x->dims[d]) return ep_fail(error, n, ": resizing an empty axis");
        if (y->dims[d] > INT32_MAX || x->dims[d] > INT32_MAX) return ep_fail(error, n, ": axis too long");
        int64_t taps = tap_count(n, d);
        if (taps > MAX_TAPS) return ep_fail(error, n, ": antialiasing over too many taps");
        uint64_t need = (uint64_t)y->dims[d] * (uint64_t)(2 * taps + 1);
        table = need > table ? need : table;
    }
    for (int32_t d = 0; d < x->rank; d++) {
        count = 1;
        for (int32_t e = 0; e < x->rank; e++) {
            uint64_t length = (uint64_t)(e <= d ? y->dims[e] : x->dims[e]);
            if (length && count > MAX_SCRATCH_FLOATS / length) return ep_fail(error, n, ": scratch too large");
            count *= length;
        }
        largest = count > largest ? count : largest;
    }
    if (table + 2 * largest > MAX_SCRATCH_FLOATS) return ep_fail(error, n, ": scratch too large");
    *scratch = (size_t)(table + 2 * largest) * sizeof(float);
    return EP_OK;
}

/* Only the last two axes resized, nearest or linear, without antialias or a roi (the upsampling of detectors and
   decoders): each output row is read from one or two input rows through a column tap table, with no intermediate
   buffer. */
static int is_planar(const ep_node *n) {
    int32_t rank = n->in[0]->rank;
    if (rank < 2 || n->params[0] > 1 || antialias(n) || n->params[1] == CROP_AND_RESIZE) return 0;
    for (int32_t d = 0; d < rank - 2; d++)
        if (is_resized(n, d)) return 0;
    return 1;
}

/* The floats of the planar path's two tap tables (rows, then columns). */
static uint64_t planar_table(const ep_node *n) {
    int32_t rank = n->in[0]->rank;
    uint64_t taps = (uint64_t)tap_count(n, rank - 1);
    return (uint64_t)(n->out[0]->dims[rank - 2] + n->out[0]->dims[rank - 1]) * (2 * taps + 1);
}

static ep_status check_resize(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    const int32_t *p = n->params;
    if (x->dtype != EP_F32 || y->dtype != EP_F32 || x->rank != y->rank) return ep_fail(error, n, ": float32 only");
    if (n->n_params != 7 + 3 * (uint32_t)x->rank || p[0] < 0 || p[0] > 2 || p[1] < 0 || p[1] > 6 || p[2] < 0 ||
        p[2] > 4 || (uint32_t)antialias(n) > 1 || (uint32_t)exclude_outside(n) > 1)
        return ep_fail(error, n, ": bad parameters");
    float a = cubic_a(n), fill = extrapolation(n);
    if (!(a > -1e6f && a < 1e6f) || fill != fill) return ep_fail(error, n, ": bad cubic coefficient or fill");
    status = check_axes(n, scratch, error);
    if (status == EP_OK && is_planar(n)) *scratch = (size_t)planar_table(n) * sizeof(float);
    return status;
}

/* In float, as onnxruntime computes it: nearest picks then agree where a coordinate falls near a half. */
static double source_coordinate(const ep_node *n, int32_t d, int64_t o) {
    float in = (float)n->in[0]->dims[d], out = (float)n->out[0]->dims[d], scale = scale_of(n, d);
    float resized = in * scale, at = (float)o;
    switch (n->params[1]) {
    case 1: return at / scale;
    case 2: return resized == 1.0f ? 0.0f : at * (in - 1.0f) / (resized - 1.0f);
    case 3: return out > 1.0f ? (at + 0.5f) / scale - 0.5f : -0.5f;
    case 4: return (at + 0.5f) / scale;
    case 5: return in / 2.0f * (1.0f - out / resized) + (at + 0.5f) / scale - 0.5f;
    case CROP_AND_RESIZE: {
        float start = roi_start(n, d), end = roi_end(n, d);
        if (out <= 1.0f) return 0.5f * (start + end) * (in - 1.0f);
        return start * (in - 1.0f) + at * (end - start) * (in - 1.0f) / (out - 1.0f);
    }
    default: return (at + 0.5f) / scale - 0.5f;
    }
}

static int64_t nearest_index(int32_t mode, double x, double scale) {
    double f = floor_double(x), frac = x - f;
    if (mode == 4) mode = scale < 1.0 ? 3 : 2;
    switch (mode) {
    case 1: return (int64_t)(frac >= 0.5 ? f + 1.0 : f);
    case 2: return (int64_t)f;
    case 3: return (int64_t)(frac > 0.0 ? f + 1.0 : f);
    default: return (int64_t)(frac > 0.5 ? f + 1.0 : f);
    }
}

/* The interpolation kernel at distance t (in input pixels, times the antialiasing scale). */
static double filter(const ep_node *n, double t) {
    t = t < 0.0 ? -t : t;
    if (n->params[0] == 1) return t < 1.0 ? 1.0 - t : 0.0;
    double a = cubic_a(n);
    if (t <= 1.0) return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    if (t < 2.0) return ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    return 0.0;
}

static int64_t clamp_index(int64_t i, int64_t len) { return i < 0 ? 0 : (i >= len ? len - 1 : i); }

/* The taps of one output index: the source pixels around x and their normalized weights. */
static void fill_taps(const ep_node *n, int32_t d, double x, int32_t *index, float *weight, int32_t taps) {
    int64_t len = n->in[0]->dims[d];
    if (n->params[0] == 0) {
        index[0] = (int32_t)clamp_index(nearest_index(n->params[2], x, scale_of(n, d)), len);
        weight[0] = 1.0f;
        return;
    }
    double scale = scale_of(n, d), f = floor_double(x);
    scale = antialias(n) && scale < 1.0 ? scale : 1.0;
    double left = x == f ? f - 1.0 : f, ratio = x - left, sum = 0.0;
    int64_t first = (int64_t)left + 1 - taps / 2;
    for (int32_t k = 0; k < taps; k++) {
        int64_t at = first + k;
        double w = filter(n, scale * ((double)(at - (int64_t)left) - ratio));
        if (exclude_outside(n) && (at < 0 || at >= len)) w = 0.0;
        weight[k] = (float)w;
        sum += w;
        index[k] = (int32_t)clamp_index(at, len);
    }
    if (sum != 0.0)
        for (int32_t k = 0; k < taps; k++) weight[k] = (float)((double)weight[k] / sum);
}

static void build_table(const ep_node *n, int32_t d, tap_table *t) {
    int64_t out = n->out[0]->dims[d];
    double last = (double)(n->in[0]->dims[d] - 1);
    for (int64_t o = 0; o < out; o++) {
        double x = source_coordinate(n, d, o);
        t->outside[o] = n->params[1] == CROP_AND_RESIZE && (x < 0.0 || x > last);
        if (x < -1e9 || x > 1e9) x = 0.0;
        fill_taps(n, d, x, t->index + o * t->taps, t->weight + o * t->taps, t->taps);
    }
}

/* Resizes one axis: `in` is outer x len x inner, `out` outer x out_len x inner. */
static void resize_axis(const float *in, float *out, const int64_t shape[4], const tap_table *t, float fill) {
    int64_t outer = shape[0], len = shape[1], out_len = shape[2], inner = shape[3];
    for (int64_t q = 0; q < outer; q++) {
        const float *src = in + q * len * inner;
        for (int64_t o = 0; o < out_len; o++) {
            float *row = out + (q * out_len + o) * inner;
            const int32_t *index = t->index + o * t->taps;
            const float *weight = t->weight + o * t->taps;
            if (t->outside[o]) {
                for (int64_t i = 0; i < inner; i++) row[i] = fill;
                continue;
            }
            const float *first = src + (int64_t)index[0] * inner;
            for (int64_t i = 0; i < inner; i++) row[i] = weight[0] * first[i];
            for (int32_t k = 1; k < t->taps; k++) {
                const float *tap = src + (int64_t)index[k] * inner;
                for (int64_t i = 0; i < inner; i++) row[i] += weight[k] * tap[i];
            }
        }
    }
}

/* Planes [begin, end) of a planar Resize, through the row and column tap tables (built once, read by every task). */
typedef struct planar_resize {
    const ep_node *n;
    const tap_table *rows, *columns;
    int64_t planes, tasks;
    int doubled; /* nearest, each input column taken twice in turn (2x upsampling) */
} planar_resize;

static void planes_task(void *arg, int32_t worker, int64_t index) {
    const planar_resize *r = (const planar_resize *)arg;
    const ep_tensor *x = r->n->in[0], *y = r->n->out[0];
    int32_t rank = x->rank, taps = r->rows->taps;
    int64_t h = x->dims[rank - 2], w = x->dims[rank - 1], oh = y->dims[rank - 2], ow = y->dims[rank - 1], begin, end;
    const int32_t *ci = r->columns->index;
    const float *cw = r->columns->weight;
    (void)worker;
    ep_task_range(r->planes, r->tasks, index, 1, &begin, &end);
    for (int64_t q = begin; q < end; q++) {
        const float *in = (const float *)x->data + q * h * w;
        float *out = (float *)y->data + q * oh * ow;
        for (int64_t oy = 0; oy < oh; oy++) {
            const int32_t *ri = r->rows->index + oy * taps;
            const float *r0 = in + (int64_t)ri[0] * w, *rw = r->rows->weight + oy * taps;
            float *row = out + oy * ow;
            if (taps == 1 && oy > 0 && ri[0] == ri[-1]) {
                ep_memcpy(row, row - ow, (size_t)ow * sizeof(float));
                continue;
            }
            if (taps == 1 && r->doubled) {
                for (int64_t ix = 0; ix < w; ix++) row[2 * ix] = row[2 * ix + 1] = r0[ix];
                continue;
            }
            if (taps == 1) {
                for (int64_t ox = 0; ox < ow; ox++) row[ox] = r0[ci[ox]];
                continue;
            }
            const float *r1 = in + (int64_t)ri[1] * w;
            for (int64_t ox = 0; ox < ow; ox++) {
                int32_t i0 = ci[2 * ox], i1 = ci[2 * ox + 1];
                float top = cw[2 * ox] * r0[i0] + cw[2 * ox + 1] * r0[i1];
                float bottom = cw[2 * ox] * r1[i0] + cw[2 * ox + 1] * r1[i1];
                row[ox] = rw[0] * top + rw[1] * bottom;
            }
        }
    }
}

static void run_planar(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t rank = x->rank, taps = (int32_t)tap_count(n, rank - 1);
    int64_t oh = y->dims[rank - 2], ow = y->dims[rank - 1];
    tap_table rows = {(int32_t *)(void *)c->scratch, c->scratch + oh * taps, 0, taps}, columns;
    rows.outside = rows.index + 2 * oh * taps;
    columns.index = rows.outside + oh;
    columns.weight = (float *)(void *)(columns.index + ow * taps);
    columns.outside = columns.index + 2 * ow * taps;
    columns.taps = taps;
    build_table(n, rank - 2, &rows);
    build_table(n, rank - 1, &columns);
    planar_resize r = {n, &rows, &columns, y->count / (oh * ow), 0, taps == 1 && ow == 2 * x->dims[rank - 1]};
    for (int64_t ox = 0; ox < ow && r.doubled; ox++) r.doubled = columns.index[ox] == ox / 2;
    r.tasks = ep_task_count(c, r.planes, (double)y->count * EP_COPY_WORK);
    ep_parallel(c, r.tasks, planes_task, &r);
}

static ep_status run_resize(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (!y->count) return EP_OK;
    if (is_planar(n)) {
        run_planar(n, c);
        return EP_OK;
    }
    int32_t rank = x->rank, last = -1;
    for (int32_t d = 0; d < rank; d++)
        if (is_resized(n, d)) last = d;
    if (last < 0) {
        for (int64_t i = 0; i < y->count; i++) ((float *)y->data)[i] = ((const float *)x->data)[i];
        return EP_OK;
    }
    int64_t table = 0, largest = 0, dims[EP_MAX_RANK];
    for (int32_t d = 0; d < rank; d++) {
        int64_t need = y->dims[d] * (2 * tap_count(n, d) + 1), count = 1;
        table = need > table ? need : table;
        for (int32_t e = 0; e < rank; e++) count *= e <= d ? y->dims[e] : x->dims[e];
        largest = count > largest ? count : largest;
        dims[d] = x->dims[d];
    }
    float *buffers[2] = {c->scratch + table, c->scratch + table + largest};
    const float *source = (const float *)x->data;
    for (int32_t d = 0, pass = 0; d <= last; d++) {
        if (!is_resized(n, d)) continue;
        tap_table t;
        t.taps = (int32_t)tap_count(n, d);
        t.index = (int32_t *)(void *)c->scratch;
        t.weight = c->scratch + y->dims[d] * t.taps;
        t.outside = t.index + 2 * y->dims[d] * t.taps;
        build_table(n, d, &t);
        int64_t shape[4] = {1, x->dims[d], y->dims[d], 1};
        for (int32_t e = 0; e < d; e++) shape[0] *= dims[e];
        for (int32_t e = d + 1; e < rank; e++) shape[3] *= dims[e];
        float *target = d == last ? (float *)y->data : buffers[pass++ & 1];
        resize_axis(source, target, shape, &t, extrapolation(n));
        dims[d] = y->dims[d];
        source = target;
    }
    return EP_OK;
}

const ep_kernel ep_kernel_resize = {"Resize", check_resize, run_resize};
