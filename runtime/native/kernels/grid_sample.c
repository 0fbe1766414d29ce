/* GridSample over 1 to 3 spatial axes: X (N, C, D1..Dr) sampled at grid (N, O1..Or, r), whose last axis holds
   normalized coordinates in [-1, 1], innermost axis first. Params: mode (0 linear, 1 nearest, 2 cubic), padding
   (0 zeros, 1 border, 2 reflection), align_corners. */
#include "../ep_internal.h"

#define MAX_SPATIAL 3
#define MAX_TAPS 4
#define CUBIC_A (-0.75f)

/* The taps of one spatial axis: element offsets (-1 for a zero pad) and weights. */
typedef struct {
    int64_t offset[MAX_TAPS];
    float weight[MAX_TAPS];
    int32_t taps;
} axis_taps;

static ep_status check_grid_sample(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *grid = n->in[1], *y = n->out[0];
    const int32_t *p = n->params;
    if (x->dtype != EP_F32 || grid->dtype != EP_F32 || y->dtype != EP_F32) return ep_fail(error, n, ": float32 only");
    if (n->n_params != 3 || p[0] < 0 || p[0] > 2 || p[1] < 0 || p[1] > 2 || p[2] < 0 || p[2] > 1)
        return ep_fail(error, n, ": bad parameters");
    int32_t rank = x->rank, spatial = rank - 2;
    if (rank < 3 || spatial > MAX_SPATIAL || grid->rank != rank || y->rank != rank)
        return ep_fail(error, n, ": input, grid and output need 1 to 3 spatial axes");
    if (grid->dims[0] != x->dims[0] || grid->dims[rank - 1] != spatial || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1])
        return ep_fail(error, n, ": grid or output shape does not match the input");
    for (int32_t d = 0; d < spatial; d++) {
        if (y->dims[2 + d] != grid->dims[1 + d]) return ep_fail(error, n, ": output shape does not match the grid");
        if (x->dims[2 + d] == 0 && y->count) return ep_fail(error, n, ": sampling an empty input");
    }
    return EP_OK;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Folds x into [lo, hi] by reflecting it at the borders as often as needed. */
static float reflect(float x, float lo, float hi) {
    float range = hi - lo;
    if (!(range > 0.0f)) return lo;
    if (x >= lo && x <= hi) return x;
    float beyond = x < lo ? lo - x : x - hi;
    int64_t folds = (int64_t)(beyond / range);
    float rest = beyond - (float)folds * range;
    int toward_low = (x < lo) == (folds % 2 == 0);
    return toward_low ? lo + rest : hi - rest;
}

static void cubic_weights(float t, float w[4]) {
    float a = CUBIC_A, u = t + 1.0f, v = 1.0f - t, z = 2.0f - t;
    w[0] = ((a * u - 5.0f * a) * u + 8.0f * a) * u - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * v - (a + 3.0f)) * v * v + 1.0f;
    w[3] = ((a * z - 5.0f * a) * z + 8.0f * a) * z - 4.0f * a;
}

/* The element index of source index i after padding, or -1 where zero padding reads a zero. */
static int64_t padded_index(const ep_node *n, int64_t i, int64_t len, float lo, float hi) {
    if (i >= 0 && i < len) return i;
    if (n->params[1] == 0) return -1;
    if (n->params[1] == 1) return i < 0 ? 0 : len - 1;
    int64_t folded = (int64_t)reflect((float)i, lo, hi);
    return folded < 0 ? 0 : (folded >= len ? len - 1 : folded);
}

static void taps_of(const ep_node *n, float g, int64_t len, int64_t stride, axis_taps *t) {
    int align = n->params[2];
    float lo = align ? 0.0f : -0.5f, hi = align ? (float)len - 1.0f : (float)len - 0.5f;
    g = g == g ? clampf(g, -1e6f, 1e6f) : -1e6f;
    float x = align ? (g + 1.0f) / 2.0f * ((float)len - 1.0f) : ((g + 1.0f) * (float)len - 1.0f) / 2.0f;
    if (n->params[0] == 1) x = ep_roundf_even(x);
    if (x < lo || x > hi) {
        if (n->params[1] == 1) x = clampf(x, 0.0f, (float)len - 1.0f);
        if (n->params[1] == 2) x = reflect(x, lo, hi);
    }
    float base = ep_floorf(x), frac = x - base;
    int64_t first = (int64_t)base;
    if (n->params[0] == 1) {
        t->taps = 1;
        t->weight[0] = 1.0f;
    } else if (n->params[0] == 0) {
        t->taps = 2;
        t->weight[0] = 1.0f - frac;
        t->weight[1] = frac;
    } else {
        t->taps = 4;
        first -= 1;
        cubic_weights(frac, t->weight);
    }
    for (int32_t k = 0; k < t->taps; k++) {
        int64_t i = padded_index(n, first + k, len, lo, hi);
        t->offset[k] = i < 0 ? -1 : i * stride;
    }
}

/* One sample: the weighted taps of every axis combined, zero-padded taps skipped. */
static float sample(const float *plane, const axis_taps *axes, int32_t spatial) {
    float acc = 0.0f;
    int32_t at[MAX_SPATIAL] = {0, 0, 0};
    for (;;) {
        float w = 1.0f;
        int64_t offset = 0;
        int32_t d;
        for (d = 0; d < spatial && offset >= 0; d++) {
            int64_t o = axes[d].offset[at[d]];
            offset = o < 0 ? -1 : offset + o;
            w *= axes[d].weight[at[d]];
        }
        if (offset >= 0) acc += w * plane[offset];
        for (d = spatial - 1; d >= 0; d--) {
            if (++at[d] < axes[d].taps) break;
            at[d] = 0;
        }
        if (d < 0) return acc;
    }
}

static ep_status run_grid_sample(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *grid = n->in[1], *y = n->out[0];
    if (!y->count) return EP_OK;
    int32_t spatial = x->rank - 2;
    int64_t batch = x->dims[0], channels = x->dims[1], points = 1, plane = 1, strides[MAX_SPATIAL];
    for (int32_t d = spatial - 1; d >= 0; d--) {
        strides[d] = plane;
        plane *= x->dims[2 + d];
        points *= y->dims[2 + d];
    }
    const float *in = (const float *)x->data, *g = (const float *)grid->data;
    float *out = (float *)y->data;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t q = 0; q < points; q++) {
            const float *coordinates = g + (b * points + q) * spatial;
            axis_taps axes[MAX_SPATIAL];
            for (int32_t d = 0; d < spatial; d++)
                taps_of(n, coordinates[spatial - 1 - d], x->dims[2 + d], strides[d], &axes[d]);
            for (int64_t ch = 0; ch < channels; ch++)
                out[(b * channels + ch) * points + q] = sample(in + (b * channels + ch) * plane, axes, spatial);
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_grid_sample = {"GridSample", check_grid_sample, run_grid_sample};
