/* Conv (1-D and 2-D; grouped, depthwise, dilated, padded; fused bias and activation), and the geometry it shares with
   ConvTranspose (conv_transpose.c). 1-D runs as H = 1. */
#include "conv.h"

enum { P_RANK, P_GROUP, P_KH, P_KW, P_SH, P_SW, P_PT, P_PL, P_PB, P_PR, P_DH, P_DW, P_ACT };

static int spatial(const ep_tensor *t, int64_t *h, int64_t *w) {
    if (t->rank == 4) {
        *h = t->dims[2];
        *w = t->dims[3];
        return 1;
    }
    if (t->rank == 3) {
        *h = 1;
        *w = t->dims[2];
        return 1;
    }
    return 0;
}

ep_status ep_conv_read_shape(const ep_node *n, conv_shape *s, uint32_t n_params, int transpose, char *error) {
    ep_status status = ep_expect(n, 2, 3, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != n_params) return ep_fail(error, n, ": bad parameters");
    const int32_t *p = n->params;
    const ep_tensor *x = n->in[0], *w = n->in[1], *b = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    if (x->dtype != EP_F32 || w->dtype != EP_F32 || y->dtype != EP_F32 || (b && b->dtype != EP_F32))
        return ep_fail(error, n, ": float32 only");
    if (x->rank != w->rank || x->rank != y->rank || !spatial(x, &s->h, &s->w) || !spatial(y, &s->oh, &s->ow))
        return ep_fail(error, n, ": ranks 3 or 4 only");
    for (int i = P_GROUP; i <= P_DW; i++)
        if (p[i] < (i >= P_PT && i <= P_PR ? 0 : 1)) return ep_fail(error, n, ": bad kernel parameters");
    s->n = x->dims[0];
    s->c = x->dims[1];
    s->group = p[P_GROUP];
    s->kh = p[P_KH]; s->kw = p[P_KW]; s->sh = p[P_SH]; s->sw = p[P_SW];
    s->pt = p[P_PT]; s->pl = p[P_PL]; s->dh = p[P_DH]; s->dw = p[P_DW];
    int64_t wkh = 1, wkw = 1;
    spatial(w, &wkh, &wkw);
    if (wkh != s->kh || wkw != s->kw || (x->rank == 3 && (s->kh != 1 || s->sh != 1 || p[P_PT] || p[P_PB])))
        return ep_fail(error, n, ": kernel size does not match the weights");
    if (s->c % s->group) return ep_fail(error, n, ": channels not divisible by group");
    s->cg = s->c / s->group;
    if (transpose) {
        s->m = w->dims[1] * s->group;
        if (w->dims[0] != s->c) return ep_fail(error, n, ": weights do not match the input channels");
    } else {
        s->m = w->dims[0];
        if (w->dims[1] != s->cg || s->m % s->group) return ep_fail(error, n, ": weights do not match the channels");
    }
    s->mg = s->m / s->group;
    if (y->dims[0] != s->n || y->dims[1] != s->m) return ep_fail(error, n, ": wrong output channels");
    if (b && (b->count != s->m)) return ep_fail(error, n, ": bias length is not the output channels");
    int64_t eh = (s->kh - 1) * s->dh + 1, ew = (s->kw - 1) * s->dw + 1, oh, ow;
    if (transpose) {
        if (p[15] < 0 || p[16] < 0) return ep_fail(error, n, ": bad output padding");
        oh = s->sh * (s->h - 1) + p[15] + eh - p[P_PT] - p[P_PB];
        ow = s->sw * (s->w - 1) + p[16] + ew - p[P_PL] - p[P_PR];
    } else {
        int64_t th = s->h + p[P_PT] + p[P_PB] - eh, tw = s->w + p[P_PL] + p[P_PR] - ew;
        if (th < 0 || tw < 0) return ep_fail(error, n, ": kernel larger than the padded input");
        oh = th / s->sh + 1;
        ow = tw / s->sw + 1;
    }
    if (oh != s->oh || ow != s->ow) return ep_fail(error, n, ": output size does not match the parameters");
    s->act = p[P_ACT];
    if (s->act < 0 || s->act >= EP_ACT_KINDS) return ep_fail(error, n, ": unknown activation");
    s->act_a = ep_param_f32(n, P_ACT + 1);
    s->act_b = ep_param_f32(n, P_ACT + 2);
    return EP_OK;
}

static int is_pointwise(const conv_shape *s) {
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->pt == 0 && s->pl == 0;
}

/* One output row or one output column: a 1-D conv (Conv1d's export, or one laid along H). Its panels are packed
   from im2col rather than read in place, padded or not: 0.82 to 0.89 of the time on 1-D convs of 80 to 384 input
   channels, 3 or 5 taps, stride 1 or 2 (Intel Xeon, AVX-512), where in place stays as fast or faster in 2-D. */
static int is_one_dimensional(const conv_shape *s) { return s->oh == 1 || s->ow == 1; }

/* A conv over one input column with one output column (1-D along H), as the same conv along W over one row: the
   same memory, and its panels are then copied a row at a time (copy_inside), not element by element with bounds
   checks. */
static void lay_along_w(conv_shape *s) {
    int64_t *pairs[][2] = {{&s->h, &s->w}, {&s->oh, &s->ow}, {&s->kh, &s->kw}, {&s->sh, &s->sw}, {&s->pt, &s->pl},
                           {&s->dh, &s->dw}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int64_t held = *pairs[i][0];
        *pairs[i][0] = *pairs[i][1];
        *pairs[i][1] = held;
    }
}

/* Stride-1 convs (not 1x1 nor 1-D) run on their input zero-padded into the scratch, when it and the output grid
   below take at most this many floats. Every output position's taps are inside there, and on a grid of the padded
   width the im2col row of tap kk for the NR positions from n is NR floats in place at input + offset[kk] + n: every
   panel is read in place (a padded row's last columns are worked out too, and dropped). Stride-2 convs without
   dilation do the same on the zero-padded input split into its four phases (even or odd rows, even or odd columns;
   space to depth): there a tap of output (oy, ox) is element (oy + ky / 2, ox + kx / 2) of phase (ky % 2, kx % 2).
   A stride-2 conv whose phases and grid would pass the limit runs in bands of output rows, each band's phases built
   in turn (stride 1 past the limit reads its panels in place instead: direct_task). */
#define PADDED_CONV_FLOATS ((int64_t)4 << 20)

typedef struct padded_conv {
    int64_t stride;  /* 1, or 2: four phase planes per channel */
    int64_t band;    /* output rows per band: oh, or fewer (stride 2 past the limit) */
    int64_t hp, wp;  /* the padded plane, or each phase's (a band's rows) */
    int64_t grid;    /* floats per output channel on the grid: a band's rows * wp, rounded up to whole panels */
    int64_t input;   /* floats of the padded input, with the slack the last panel reads past it */
    int64_t packed;  /* where in each worker's scratch a panel is copied (PACKED_PHASE_TAPS), else 0 */
} padded_conv;

/* A stride-2 conv of more than PACKED_PHASE_TAPS taps (channels x kernel) and at least PACKED_PHASE_OUTPUTS output
   channels (a group's) copies each panel out of its phases once, into contiguous rows, and runs every tile of
   output channels over the copy: read in place, each row of 16 floats spans two cache lines of a phase plane, and
   the panel (K x 64 bytes, past L1) was read again from L2 by each tile. Against in place, 96 -> 48 channels over
   24x160 took 0.88 of the time, 64 -> 128 over 56x56 0.83, 96 -> 192 over 40x40 0.81, 192 -> 384 over 20x20 0.80,
   64 -> 32 over 80x80 0.93. With fewer output channels (fewer tiles over each copy) it saved nothing (48 -> 24 over
   160x160 1.01, 40 -> 24 over 80x80 1.03), at 144 taps (16 -> 32) the copy cost more than it saved (1.23), and
   stride-1 convs, whose panels lie in one plane, took 1.05 to 1.13 (AMD EPYC, AVX2). */
#define PACKED_PHASE_TAPS 256
#define PACKED_PHASE_OUTPUTS 32
/* Not on wasm (unmeasured there), for the page's bytes. */
#ifdef __wasm__
#define PACKED_PHASES 0
#else
#define PACKED_PHASES 1
#endif

/* Whether the conv runs padded, and its geometry. The size limit leaves out the NR terms, so that the plan
   compiler (compiler/emitters/nn_ops.py), sizing for the widest panel, makes the same choice. */
static int padded_conv_of(const conv_shape *s, padded_conv *p) {
    if (s->sw != s->sh || s->kh * s->kw == 1 || is_depthwise(s) || ep_conv_is_narrow(s) || is_one_dimensional(s))
        return 0;
    if (s->sw != 1 && (s->sw != 2 || s->dh != 1 || s->dw != 1)) return 0;
    p->stride = s->sw;
    int64_t rows = padded_extent(s->oh, s->sh, s->kh, s->dh, s->pt, s->h);
    int64_t cols = padded_extent(s->ow, s->sw, s->kw, s->dw, s->pl, s->w);
    p->band = s->oh;
    p->hp = (rows + p->stride - 1) / p->stride;
    p->wp = (cols + p->stride - 1) / p->stride;
    int64_t planes = s->cg * p->stride * p->stride;
    if (planes * p->hp * p->wp + s->mg * s->oh * p->wp > PADDED_CONV_FLOATS) {
        /* a band of R output rows reads 2 (R - 1) + kh padded rows: R - 1 + (kh + 1) / 2 rows of each phase */
        int64_t lead = (s->kh + 1) / 2 - 1;
        p->band = (PADDED_CONV_FLOATS - planes * lead * p->wp) / ((planes + s->mg) * p->wp);
        if (p->stride != 2 || p->band < 1) return 0;
        if (p->band > s->oh) p->band = s->oh;
        p->hp = p->band + lead;
    }
    p->grid = (p->band * p->wp + EP_GEMM_NR - 1) / EP_GEMM_NR * EP_GEMM_NR;
    p->input = planes * p->hp * p->wp + (s->kw - 1) * s->dw / p->stride + EP_GEMM_NR;
    int64_t taps = s->cg * s->kh * s->kw;
    p->packed = PACKED_PHASES && p->stride == 2 && taps > PACKED_PHASE_TAPS && s->mg >= PACKED_PHASE_OUTPUTS
                    ? (p->input + s->mg * p->grid + taps + 15) / 16 * 16 : 0;
    return 1;
}

/* Floats of a padded conv's scratch: the padded input, the output grid, the offsets and the packed panel. */
static size_t padded_scratch_floats(const conv_shape *s, const padded_conv *p) {
    int64_t taps = s->cg * s->kh * s->kw;
    return (size_t)(p->packed ? p->packed + taps * EP_GEMM_NR : p->input + s->mg * p->grid + taps);
}

static ep_status check_conv(const ep_node *n, size_t *scratch, char *error) {
    conv_shape s = {0};
    ep_status status = ep_conv_read_shape(n, &s, EP_CONV_PARAMS, 0, error);
    if (status != EP_OK) return status;
    size_t k = (size_t)(s.cg * s.kh * s.kw);
    padded_conv p = {0};
    if (ep_winograd_applies(&s)) *scratch = ep_winograd_scratch_floats(&s) * sizeof(float);
    else if (padded_conv_of(&s, &p)) *scratch = padded_scratch_floats(&s, &p) * sizeof(float);
    else if (!is_depthwise(&s))
        *scratch = k * (ep_conv_is_narrow(&s) ? (size_t)(s.oh * s.ow) : EP_GEMM_NR) * sizeof(float);
    else *scratch = ep_depthwise_scratch_floats(&s) * sizeof(float);
    return EP_OK;
}

/* One row (c, ky, kx) of a panel whose columns lie in one output row, fully inside the input: a strided
   copy. Returns 0 when the panel needs the bounds-checked path. */
static int copy_inside(float *dst, const float *plane, const conv_shape *s, int64_t oy, int64_t ox, int64_t ky,
                       int64_t kx) {
    int64_t iy = oy * s->sh - s->pt + ky * s->dh, ix = ox * s->sw - s->pl + kx * s->dw;
    if (iy < 0 || iy >= s->h || ix < 0 || ix + (EP_GEMM_NR - 1) * s->sw >= s->w) return 0;
    const float *src = plane + iy * s->w + ix;
    if (s->sw == 1)
        for (int j = 0; j < EP_GEMM_NR; j++) dst[j] = src[j];
    else
        for (int j = 0; j < EP_GEMM_NR; j++) dst[j] = src[j * s->sw];
    return 1;
}

/* im2col for one block of output columns, written straight into packed panels. */
static void pack_im2col(float *packed, const float *x, const conv_shape *s, int64_t n0, int64_t nb) {
    int64_t k = s->cg * s->kh * s->kw;
    for (int64_t p = 0; p < nb; p += EP_GEMM_NR) {
        int64_t cols = nb - p < EP_GEMM_NR ? nb - p : EP_GEMM_NR;
        int64_t base_y[EP_GEMM_NR], base_x[EP_GEMM_NR];
        for (int64_t j = 0; j < cols; j++) {
            int64_t col = n0 + p + j;
            base_y[j] = (col / s->ow) * s->sh - s->pt;
            base_x[j] = (col % s->ow) * s->sw - s->pl;
        }
        int64_t first = n0 + p, oy = first / s->ow, ox = first % s->ow;
        int one_row = cols == EP_GEMM_NR && ox + EP_GEMM_NR <= s->ow;
        float *panel = packed + p * k;
        int64_t kk = 0;
        for (int64_t c = 0; c < s->cg; c++) {
            const float *plane = x + c * s->h * s->w;
            for (int64_t ky = 0; ky < s->kh; ky++) {
                for (int64_t kx = 0; kx < s->kw; kx++, kk++) {
                    float *dst = panel + kk * EP_GEMM_NR;
                    if (one_row && copy_inside(dst, plane, s, oy, ox, ky, kx)) continue;
                    int64_t j = 0;
                    for (; j < cols; j++) {
                        int64_t iy = base_y[j] + ky * s->dh, ix = base_x[j] + kx * s->dw;
                        dst[j] = (iy >= 0 && iy < s->h && ix >= 0 && ix < s->w) ? plane[iy * s->w + ix] : 0.0f;
                    }
                    for (; j < EP_GEMM_NR; j++) dst[j] = 0.0f;
                }
            }
        }
    }
}

/* The offset of each tap (c, ky, kx), the im2col row's order, from its output position's first input element, in
   planes of plane_h x plane_w: the input's own, or its zero-padded copy (`stride` 1), or the phases of that copy
   (`stride` 2: stride * stride planes per channel, see padded_conv). */
static void tap_offsets(const conv_shape *s, int64_t plane_h, int64_t plane_w, int64_t stride, int32_t *offsets) {
    int64_t kk = 0;
    for (int64_t c = 0; c < s->cg; c++)
        for (int64_t ky = 0; ky < s->kh; ky++)
            for (int64_t kx = 0; kx < s->kw; kx++) {
                int64_t y = ky * s->dh, x = kx * s->dw, plane = (c * stride + y % stride) * stride + x % stride;
                offsets[kk++] = (int32_t)((plane * plane_h + y / stride) * plane_w + x / stride);
            }
}

/* Panels read in place (no im2col) need stride 1 along rows and scratch for one packed panel (the panels at the
   edges) and the offsets after it: the offset of each row (c, ky, kx) of the im2col matrix from its panel's
   first input element. NULL when the conv cannot run so, is 1-D, or is 1x1: there each row of B is its own input
   plane, K streams too many for the caches to follow, and packed panels are faster. */
static int32_t *direct_offsets(const conv_shape *s, const ep_context *ctx) {
    int64_t k = s->cg * s->kh * s->kw;
    if (s->sw != 1 || s->kh * s->kw == 1 || is_one_dimensional(s) ||
        (size_t)(k * (EP_GEMM_NR + 1)) > ctx->scratch_floats ||
        (s->cg * s->h + s->kh * s->dh) * s->w + s->kw * s->dw > INT32_MAX)
        return 0;
    int32_t *offsets = (int32_t *)(void *)(ctx->scratch + k * EP_GEMM_NR);
    tap_offsets(s, s->h, s->w, 1, offsets);
    return offsets;
}

/* One group's product split into tasks by output columns (whole panels), each on its worker's scratch. */
typedef struct conv_columns {
    const conv_shape *s;
    const padded_conv *padded;
    const float *xg, *wg;
    float *input, *yg, *grid; /* input and grid: a padded conv's zero-padded input and output grid */
    const int32_t *offsets;
    const ep_epilogue *e;
    const ep_context *ctx;
    int64_t columns, tasks, block; /* columns: the output positions (the padded grid's, on the grid) split into tasks */
    int64_t plane; /* floats per output channel: the whole conv's (a band of a padded conv writes part of it) */
} conv_columns;

/* Panels per output row off the grid: whole panels, the last one shifted left to end where the row does. */
static int64_t row_panels(const conv_shape *s) { return (s->ow + EP_GEMM_NR - 1) / EP_GEMM_NR; }

/* The product of a padded conv's panel whose first tap is at b into out (ldc floats a row): read in place, or
   copied into `packed` first (PACKED_PHASE_TAPS), each row's next panel's columns asked of the cache meanwhile. */
static void padded_panel(const conv_columns *c, float *packed, const float *b, float *out, int64_t ldc) {
    const conv_shape *s = c->s;
    int64_t k = s->cg * s->kh * s->kw;
    if (!packed) {
        ep_gemm_direct(s->mg, k, c->wg, k, 1, b, c->offsets, out, ldc, c->e);
        return;
    }
    for (int64_t kk = 0; kk < k; kk++) {
        const float *row = b + c->offsets[kk];
        if (EP_GEMM_PREFETCH) {
            __builtin_prefetch(row + EP_GEMM_NR);
            __builtin_prefetch(row + 2 * EP_GEMM_NR - 1);
        }
        __builtin_memcpy(packed + kk * EP_GEMM_NR, row, EP_GEMM_NR * sizeof(float));
    }
    ep_gemm_packed(s->mg, k, EP_GEMM_NR, c->wg, k, 1, packed, out, ldc, c->e);
}

/* A padded conv's panels: on the grid of the padded width, or straight into the output row by row (each row whole
   panels, or its last one shifted: shifted_rows). */
static void padded_task(void *arg, int32_t worker, int64_t index) {
    const conv_columns *c = (const conv_columns *)arg;
    const conv_shape *s = c->s;
    int64_t wp = c->padded->wp, begin, end;
    float *packed = c->padded->packed ? ep_worker_scratch(c->ctx, worker) + c->padded->packed : 0;
    /* off the grid, whole rows a task: a row's shifted last panel and the one before it write the same columns */
    int64_t per_row = row_panels(s);
    ep_task_range(c->columns, c->tasks, index, c->grid ? EP_GEMM_NR : per_row * EP_GEMM_NR, &begin, &end);
    for (int64_t n0 = begin; n0 < end; n0 += EP_GEMM_NR) {
        if (c->grid) {
            padded_panel(c, packed, c->input + n0, c->grid + n0, c->padded->grid);
            continue;
        }
        int64_t panel = n0 / EP_GEMM_NR, oy = panel / per_row, ox = panel % per_row * EP_GEMM_NR;
        if (ox > s->ow - EP_GEMM_NR) ox = s->ow - EP_GEMM_NR;
        padded_panel(c, packed, c->input + oy * wp + ox, c->yg + oy * s->ow + ox, c->plane);
    }
}

/* A full panel in one output row whose taps are all inside the input is read in place; the others are packed
   first. */
static void direct_task(void *arg, int32_t worker, int64_t index) {
    const conv_columns *c = (const conv_columns *)arg;
    const conv_shape *s = c->s;
    int64_t ohw = s->oh * s->ow, k = s->cg * s->kh * s->kw, begin, end;
    float *packed = ep_worker_scratch(c->ctx, worker);
    ep_task_range(c->columns, c->tasks, index, EP_GEMM_NR, &begin, &end);
    for (int64_t n0 = begin; n0 < end; n0 += EP_GEMM_NR) {
        int64_t cols = ohw - n0 < EP_GEMM_NR ? ohw - n0 : EP_GEMM_NR;
        int64_t oy = n0 / s->ow, ox = n0 % s->ow;
        int64_t iy = oy * s->sh - s->pt, ix = ox - s->pl;
        if (cols == EP_GEMM_NR && ox + EP_GEMM_NR <= s->ow && iy >= 0 && iy + (s->kh - 1) * s->dh < s->h &&
            ix >= 0 && ix + EP_GEMM_NR - 1 + (s->kw - 1) * s->dw < s->w) {
            ep_gemm_direct(s->mg, k, c->wg, k, 1, c->xg + iy * s->w + ix, c->offsets, c->yg + n0, ohw, c->e);
            continue;
        }
        pack_im2col(packed, c->xg, s, n0, cols);
        ep_gemm_packed(s->mg, k, cols, c->wg, k, 1, packed, c->yg + n0, ohw, c->e);
    }
}

/* Blocks of columns packed (a 1x1 conv's input rows, or im2col) into the worker's scratch, then multiplied. */
static void packed_task(void *arg, int32_t worker, int64_t index) {
    const conv_columns *c = (const conv_columns *)arg;
    const conv_shape *s = c->s;
    int64_t ohw = s->oh * s->ow, k = s->cg * s->kh * s->kw, begin, end;
    float *packed = ep_worker_scratch(c->ctx, worker);
    ep_task_range(c->columns, c->tasks, index, EP_GEMM_NR, &begin, &end);
    for (int64_t n0 = begin; n0 < end; n0 += c->block) {
        int64_t nb = end - n0 < c->block ? end - n0 : c->block;
        if (is_pointwise(s)) ep_pack_strided(packed, c->xg, k, n0, nb, s->h * s->w, 1);
        else pack_im2col(packed, c->xg, s, n0, nb);
        ep_gemm_packed(s->mg, k, nb, c->wg, k, 1, packed, c->yg + n0, ohw, c->e);
    }
}

/* Channels [begin, end) of a padded conv's input zero-padded (or split into phases) into c->input, the last task
   zeroing the slack after them too. */
static void padding_task(void *arg, int32_t worker, int64_t index) {
    const conv_columns *c = (const conv_columns *)arg;
    const padded_conv *p = c->padded;
    conv_shape part = *c->s;
    int64_t per_channel = p->stride * p->stride * p->hp * p->wp, begin, end;
    (void)worker;
    ep_task_range(part.cg, c->tasks, index, 1, &begin, &end);
    part.cg = end - begin;
    size_t floats = (size_t)(end == c->s->cg ? p->input - begin * per_channel : part.cg * per_channel);
    float *input = c->input + begin * per_channel;
    const float *x = c->xg + begin * part.h * part.w;
    if (p->stride == 1) ep_zero_padded(&part, x, part.cg, p->hp, p->wp, input, floats);
    else ep_zero_padded_phases(&part, x, 2, p->hp, p->wp, input, floats);
}

/* Output channels [begin, end) copied out of the grid: each row's first ow columns. */
static void copy_out_task(void *arg, int32_t worker, int64_t index) {
    const conv_columns *c = (const conv_columns *)arg;
    const conv_shape *s = c->s;
    int64_t begin, end;
    (void)worker;
    ep_task_range(s->mg, c->tasks, index, 1, &begin, &end);
    for (int64_t m = begin; m < end; m++)
        for (int64_t oy = 0; oy < s->oh; oy++)
            ep_memcpy(c->yg + m * c->plane + oy * s->ow, c->grid + m * c->padded->grid + oy * c->padded->wp,
                      (size_t)s->ow * sizeof(float));
}

/* Whether a padded conv whose output rows are not whole panels runs on them anyway, the last panel of each row shifted
   left to end where the row does (its first columns worked out twice, and stored twice with the same values), rather
   than on the grid of the padded width then copied out. The shift costs its extra columns' K multiply-adds each; the
   grid costs copying each output float out (EP_COPY_WORK): with few taps (a first layer's 3 channels) the copy
   weighs more. Against the grid, 3 -> 32 channels, 3x3 stride 2 at 224x224 took 0.74 of the time; 16 -> 32 at
   112x112 and 32 -> 64 at 112x112, which the rule leaves on the grid, took 1.00 either way (Intel Xeon, AVX-512). */
static int shifted_rows(const conv_shape *s, const padded_conv *p) {
    return s->ow >= EP_GEMM_NR &&
           (double)((row_panels(s) * EP_GEMM_NR - p->wp) * s->cg * s->kh * s->kw) < (double)s->ow * EP_COPY_WORK;
}

/* One group's conv on its zero-padded input, or that input's phases (padded_conv_of), a band of output rows at a
   time: the product, all of it read in place, row by row into the output, or on the grid of the padded width and
   then the grid's first ow columns of each row copied out. Each step is split into tasks; the padding and the copy
   are bound by memory, a task each per worker. A band is the conv of its output rows, its padded rows counted from
   the band's first (its top padding less the rows before it, below zero past the first band). */
static void run_padded(conv_columns *c, float *scratch) {
    const conv_shape *s = c->s;
    const padded_conv *p = c->padded;
    float *grid = scratch + p->input, *yg = c->yg;
    int32_t *offsets = (int32_t *)(void *)(grid + s->mg * p->grid);
    c->input = scratch;
    tap_offsets(s, p->hp, p->wp, p->stride, offsets);
    c->offsets = offsets;
    c->grid = s->ow % EP_GEMM_NR && !shifted_rows(s, p) ? grid : 0;
    for (int64_t oy0 = 0; oy0 < s->oh; oy0 += p->band) {
        conv_shape band = *s;
        band.oh = s->oh - oy0 < p->band ? s->oh - oy0 : p->band;
        band.pt = s->pt - oy0 * p->stride;
        c->s = &band;
        c->yg = yg + oy0 * s->ow;
        c->tasks = ep_task_count(c->ctx, s->cg, (double)p->input * EP_COPY_WORK);
        ep_parallel(c->ctx, c->tasks, padding_task, c);
        c->columns = c->grid ? band.oh * p->wp : band.oh * row_panels(s) * EP_GEMM_NR;
        c->tasks = ep_task_count(c->ctx, (c->columns + EP_GEMM_NR - 1) / EP_GEMM_NR,
                                 (double)(s->mg * s->cg * s->kh * s->kw * c->columns));
        ep_parallel(c->ctx, c->tasks, padded_task, c);
        if (!c->grid) continue;
        c->tasks = ep_task_count(c->ctx, s->mg, (double)(s->mg * band.oh * s->ow) * EP_COPY_WORK);
        ep_parallel(c->ctx, c->tasks, copy_out_task, c);
    }
    c->s = s;
    c->yg = yg;
}

static ep_status run_conv(const ep_node *n, const ep_context *ctx) {
    conv_shape s = {0};
    char unused[EP_ERROR_CAPACITY];
    ep_conv_read_shape(n, &s, EP_CONV_PARAMS, 0, unused);
    const float *x = (const float *)n->in[0]->data, *w = (const float *)n->in[1]->data;
    const float *bias = n->n_in > 2 && n->in[2] ? (const float *)n->in[2]->data : 0;
    float *y = (float *)n->out[0]->data;
    int64_t hw = s.h * s.w, ohw = s.oh * s.ow, k = s.cg * s.kh * s.kw;
    if (is_depthwise(&s)) {
        for (int64_t b = 0; b < s.n; b++) ep_depthwise(&s, x + b * s.c * hw, w, bias, y + b * s.m * ohw, ctx);
        return EP_OK;
    }
    if (ep_winograd_applies(&s)) {
        for (int64_t b = 0; b < s.n; b++) ep_winograd(&s, x + b * s.c * hw, w, bias, y + b * s.m * ohw, ctx);
        return EP_OK;
    }
    if (s.w == 1 && s.kw == 1 && s.ow == 1) lay_along_w(&s);
    padded_conv padded = {0};
    int run_on_padding = padded_conv_of(&s, &padded);
    int32_t *offsets = run_on_padding ? 0 : direct_offsets(&s, ctx);
    int64_t tasks = ep_task_count(ctx, (ohw + EP_GEMM_NR - 1) / EP_GEMM_NR, (double)(s.mg * k * ohw));
    for (int64_t b = 0; b < s.n; b++) {
        for (int64_t g = 0; g < s.group; g++) {
            ep_epilogue e = {bias ? bias + g * s.mg : 0, 1.0f, 0, s.act, s.act_a, s.act_b};
            conv_columns c = {&s, &padded, x + (b * s.c + g * s.cg) * hw, w + g * s.mg * k, 0,
                              y + (b * s.m + g * s.mg) * ohw, 0, offsets, &e, ctx, ohw, tasks,
                              ep_gemm_block_columns(k, ctx->scratch_floats), ohw};
            if (ep_conv_is_narrow(&s)) ep_conv_narrow(&s, c.xg, c.wg, c.yg, &e, ctx);
            else if (run_on_padding) run_padded(&c, ctx->scratch);
            else ep_parallel(ctx, tasks, offsets ? direct_task : packed_task, &c);
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_conv = {"Conv", check_conv, run_conv};
