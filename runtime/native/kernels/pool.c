/* MaxPool, AveragePool and LpPool over 1 to 6 spatial dims (global pools are pools whose kernel is the whole input).
   Params, general form: kind (0 max, 1 average, 2 Lp), count_include_pad, p, storage_order, nd, then kernel, stride,
   pad begin, pad end and dilation, nd values each. Legacy form (12 params, the one the WGSL kernel reads; float32,
   1-D and 2-D): kind, count_include_pad, kernel h w, stride h w, pads t l b r, dilation h w.
   A max pool takes float32, int8 and uint8 and may have a second output, int64 Indices into the flattened input
   (storage_order 1: spatial dims column-major). Output sizes may be the floor or the ceiling form. */
#include "../ep_internal.h"
#include "pool_planes.h"

#define POOL_MAX_DIMS (EP_MAX_RANK - 2)

enum { KIND_MAX, KIND_AVERAGE, KIND_LP };
enum { L_KIND, L_INCLUDE_PAD, L_KH, L_KW, L_SH, L_SW, L_PT, L_PL, L_PB, L_PR, L_DH, L_DW, L_COUNT };
enum { G_KIND, G_INCLUDE_PAD, G_P, G_ORDER, G_DIMS, G_HEAD };

typedef struct {
    int32_t kind, include_pad, p, order, nd;
    int64_t kernel[POOL_MAX_DIMS], stride[POOL_MAX_DIMS], begin[POOL_MAX_DIMS], end[POOL_MAX_DIMS];
    int64_t dilation[POOL_MAX_DIMS];
} pool_geometry;

/* The legacy form, as 1-D (rank 3: the width entries) or 2-D; 0 when a 1-D plan has a height. */
static int read_legacy(const int32_t *p, int32_t rank, pool_geometry *g) {
    int first = rank == 3 ? 1 : 0;
    if (rank == 3 && (p[L_KH] != 1 || p[L_PT] || p[L_PB] || p[L_SH] < 1 || p[L_DH] < 1)) return 0;
    g->kind = p[L_KIND];
    g->include_pad = p[L_INCLUDE_PAD];
    g->p = 1;
    g->order = 0;
    g->nd = rank - 2;
    for (int i = 0; i < g->nd; i++) {
        g->kernel[i] = p[L_KH + first + i];
        g->stride[i] = p[L_SH + first + i];
        g->begin[i] = p[L_PT + first + i];
        g->end[i] = p[L_PB + first + i];
        g->dilation[i] = p[L_DH + first + i];
    }
    return g->kind == KIND_MAX || g->kind == KIND_AVERAGE;
}

/* The parameters of either form; 0 when they do not parse for an input of this rank. */
static int read_geometry(const ep_node *n, int32_t rank, pool_geometry *g) {
    const int32_t *p = n->params;
    if (rank < 3 || rank > EP_MAX_RANK) return 0;
    if (n->n_params == L_COUNT && rank <= 4) return read_legacy(p, rank, g);
    if (n->n_params < G_HEAD || p[G_DIMS] != rank - 2 || n->n_params != (uint32_t)(G_HEAD + 5 * p[G_DIMS])) return 0;
    g->kind = p[G_KIND];
    g->include_pad = p[G_INCLUDE_PAD];
    g->p = p[G_P];
    g->order = p[G_ORDER];
    g->nd = p[G_DIMS];
    for (int i = 0; i < g->nd; i++) {
        g->kernel[i] = p[G_HEAD + i];
        g->stride[i] = p[G_HEAD + g->nd + i];
        g->begin[i] = p[G_HEAD + 2 * g->nd + i];
        g->end[i] = p[G_HEAD + 3 * g->nd + i];
        g->dilation[i] = p[G_HEAD + 4 * g->nd + i];
    }
    return g->kind >= KIND_MAX && g->kind <= KIND_LP;
}

static int size_fits(int64_t in, int64_t pads, int64_t extent, int64_t stride, int64_t out) {
    int64_t span = in + pads - extent;
    if (span < 0) return 0;
    return out == span / stride + 1 || out == (span + stride - 1) / stride + 1;
}

static int geometry_valid(const pool_geometry *g, const ep_tensor *x, const ep_tensor *y) {
    if ((g->include_pad != 0 && g->include_pad != 1) || (g->order != 0 && g->order != 1)) return 0;
    if (g->kind == KIND_LP && (g->p < 1 || g->p > 64)) return 0;
    int64_t window = 1; /* kept within EP_MAX_ELEMENTS, so that window counts cannot overflow */
    for (int i = 0; i < g->nd; i++) {
        if (g->kernel[i] < 1 || g->stride[i] < 1 || g->dilation[i] < 1 || g->begin[i] < 0 || g->end[i] < 0) return 0;
        if (g->kernel[i] > EP_MAX_ELEMENTS / window) return 0;
        window *= g->kernel[i];
        int64_t extent = (g->kernel[i] - 1) * g->dilation[i] + 1;
        if (!size_fits(x->dims[2 + i], g->begin[i] + g->end[i], extent, g->stride[i], y->dims[2 + i])) return 0;
    }
    return 1;
}

static int dtype_allowed(const pool_geometry *g, int32_t dtype) {
    return dtype == EP_F32 || (g->kind == KIND_MAX && (dtype == EP_I8 || dtype == EP_U8));
}

static ep_status check_pool(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, n->n_out == 2 ? 2 : 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    pool_geometry g;
    if (!read_geometry(n, x->rank, &g)) return ep_fail(error, n, ": bad parameters for this input rank");
    if (!dtype_allowed(&g, x->dtype) || y->dtype != x->dtype)
        return ep_fail(error, n, ": float32 (int8 and uint8 for a max pool) only");
    if (y->rank != x->rank || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
        return ep_fail(error, n, ": wrong output shape");
    if (!geometry_valid(&g, x, y)) return ep_fail(error, n, ": output size does not match the parameters");
    if (n->n_out == 2) {
        const ep_tensor *indices = n->out[1];
        if (g.kind != KIND_MAX || indices->dtype != EP_I64 || !ep_same_shape(indices, y))
            return ep_fail(error, n, ": Indices must be int64 of the output's shape, of a max pool");
    }
    return EP_OK;
}

/* The input's layout per plane: its spatial sizes and the row-major and column-major strides of its dims. */
typedef struct {
    int64_t size[POOL_MAX_DIMS], rows[POOL_MAX_DIMS], columns[POOL_MAX_DIMS], plane;
} pool_layout;

static void layout_of(const ep_tensor *x, int nd, pool_layout *l) {
    int64_t row = 1, column = 1;
    for (int i = nd - 1; i >= 0; i--) {
        l->size[i] = x->dims[2 + i];
        l->rows[i] = row;
        row *= l->size[i];
    }
    for (int i = 0; i < nd; i++) {
        l->columns[i] = column;
        column *= l->size[i];
    }
    l->plane = row;
}

/* The kernel positions [lo, hi) of one dim whose input index start + k * dilation lies in [from, to). */
static void kernel_range(int64_t start, int64_t dilation, int64_t kernel, int64_t from, int64_t to, int64_t *lo,
                         int64_t *hi) {
    if (dilation == 1) {
        *lo = start >= from ? 0 : from - start;
        *hi = to <= start ? 0 : to - start;
    } else {
        *lo = start >= from ? 0 : (from - start + dilation - 1) / dilation;
        *hi = to <= start ? 0 : (to - start + dilation - 1) / dilation;
    }
    if (*hi > kernel) *hi = kernel;
    if (*lo > *hi) *lo = *hi;
}

/* One output's window: the kernel box inside the input, its first input index per dim, and its element counts. */
typedef struct {
    int64_t start[POOL_MAX_DIMS], lo[POOL_MAX_DIMS], hi[POOL_MAX_DIMS];
    int64_t inside, padded;
} pool_window;

/* Sets dim i of the window of the output at `at` along that dim; *inside and *padded get its kernel positions inside
   the input and inside the padded input. */
static void window_dim(const pool_geometry *g, const pool_layout *l, int i, int64_t at, pool_window *w,
                       int64_t *inside, int64_t *padded) {
    int64_t lo, hi;
    w->start[i] = at * g->stride[i] - g->begin[i];
    kernel_range(w->start[i], g->dilation[i], g->kernel[i], -g->begin[i], l->size[i] + g->end[i], &lo, &hi);
    *padded = hi - lo;
    kernel_range(w->start[i], g->dilation[i], g->kernel[i], 0, l->size[i], &w->lo[i], &w->hi[i]);
    *inside = w->hi[i] - w->lo[i];
}

static float lp_term(float v, int32_t p) {
    float a = v < 0.0f ? -v : v;
    return p == 1 ? a : p == 2 ? a * a : ep_powf(a, (float)p);
}

/* One row of a window: `length` input values along the last dim, `step` apart, from `row` (row-major, in the
   tensor) and `column` (column-major, in the plane). */
typedef struct {
    int64_t row, column, step, column_step, length;
} pool_row;

/* Accumulates a float32 row (a max starts from the row's first value when nothing was seen yet). */
static float accumulate_f32(const pool_geometry *g, const float *in, const pool_row *r, float acc, int seen) {
    if (g->kind == KIND_MAX) {
        if (!seen) acc = in[0];
        for (int64_t j = 0; j < r->length; j++) { /* a NaN, once met, stays */
            float v = in[j * r->step], larger = acc > v ? acc : v;
            acc = acc != acc ? acc : larger;
        }
    } else if (g->kind == KIND_AVERAGE) {
        for (int64_t j = 0; j < r->length; j++) acc += in[j * r->step];
    } else {
        for (int64_t j = 0; j < r->length; j++) acc += lp_term(in[j * r->step], g->p);
    }
    return acc;
}

/* The max of a row of any dtype, keeping the first max's index within the plane (storage order applied). */
static float max_with_index(const pool_geometry *g, const ep_tensor *x, const pool_row *r, int64_t plane_offset,
                            float acc, int seen, int64_t *argmax) {
    for (int64_t j = 0; j < r->length; j++) {
        float v = (float)ep_load_real(x->data, x->dtype, r->row + j * r->step);
        if (!seen || v > acc || (v != v && acc == acc)) {
            acc = v;
            *argmax = g->order ? r->column + j * r->column_step : r->row - plane_offset + j * r->step;
        }
        seen = 1;
    }
    return acc;
}

/* The reduction of one window of a plane, row by row; *argmax (when wanted) gets the max's index in the plane. */
static float reduce_window(const pool_geometry *g, const pool_layout *l, const pool_window *w, const ep_tensor *x,
                           int64_t plane_offset, int64_t *argmax) {
    int last = g->nd - 1;
    int64_t k[POOL_MAX_DIMS];
    pool_row r = {0, 0, g->dilation[last], g->dilation[last] * l->columns[last], w->hi[last] - w->lo[last]};
    int fast = x->dtype == EP_F32 && !argmax;
    float acc = 0.0f;
    if (w->inside == 0) return 0.0f;
    r.row = plane_offset;
    for (int i = 0; i < g->nd; i++) {
        int64_t index = w->start[i] + w->lo[i] * g->dilation[i];
        k[i] = w->lo[i];
        r.row += index * l->rows[i];
        r.column += index * l->columns[i];
    }
    for (int seen = 0;; seen = 1) {
        if (fast) acc = accumulate_f32(g, (const float *)x->data + r.row, &r, acc, seen);
        else if (g->kind == KIND_MAX) acc = max_with_index(g, x, &r, plane_offset, acc, seen, argmax);
        int i = last - 1;
        while (i >= 0 && ++k[i] == w->hi[i]) {
            int64_t back = (w->hi[i] - 1 - w->lo[i]) * g->dilation[i];
            k[i] = w->lo[i];
            r.row -= back * l->rows[i];
            r.column -= back * l->columns[i];
            i--;
        }
        if (i < 0) break;
        r.row += g->dilation[i] * l->rows[i];
        r.column += g->dilation[i] * l->columns[i];
    }
    return acc;
}

static float finish(const pool_geometry *g, const pool_window *w, float acc) {
    if (g->kind == KIND_AVERAGE) {
        int64_t divisor = g->include_pad ? w->padded : w->inside;
        return divisor ? acc / (float)divisor : 0.0f;
    }
    if (g->kind == KIND_LP) return g->p == 1 ? acc : g->p == 2 ? ep_sqrtf(acc) : ep_powf(acc, 1.0f / (float)g->p);
    return acc;
}

/* Whether the window is the whole plane, unpadded and undilated: a plain reduction per plane. */
static int is_global(const pool_geometry *g, const pool_layout *l, const ep_tensor *y) {
    for (int i = 0; i < g->nd; i++)
        if (y->dims[2 + i] != 1 || g->kernel[i] != l->size[i] || g->begin[i] || g->end[i] || g->dilation[i] != 1)
            return 0;
    return l->plane > 0 && g->kind != KIND_LP && y->dtype == EP_F32;
}

/* Output columns whose windows pool_2d_f32 works out once per call rather than once per output row. */
#define POOL_COLUMNS 512
/* Input widths up to which a max pool first takes each column's max over a window's rows (a loop that vectorizes),
   then each window's max over those. */
#define POOL_ROW 2048

/* One output column's window along the width: its first input column, its kernel columns inside the input
   [lo, hi) and the count inside the padded input. */
typedef struct {
    int64_t start, lo, hi, padded;
} pool_columns;

static pool_columns columns_of(const pool_geometry *g, int64_t w, int64_t ox) {
    pool_columns c;
    int64_t plo, phi;
    c.start = ox * g->stride[1] - g->begin[1];
    kernel_range(c.start, g->dilation[1], g->kernel[1], 0, w, &c.lo, &c.hi);
    kernel_range(c.start, g->dilation[1], g->kernel[1], -g->begin[1], w + g->end[1], &plo, &phi);
    c.padded = phi - plo;
    return c;
}

/* One output row of a max pool from its input columns' maxima over the window's rows, `columns`, which has `left`
   and `right` more columns of -inf before and after it (the padding, or none): the outputs whose windows lie inside
   those, kernel column by kernel column (loops over the outputs, which vectorize), the others one by one (0 for a
   window wholly in the padding). */
static void max_over_columns(const pool_geometry *g, const float *columns, int64_t w, int64_t left, int64_t right,
                             float *out, int64_t ow) {
    int64_t s = g->stride[1], pad = g->begin[1], dx = g->dilation[1], k = g->kernel[1];
    int64_t last = w - 1 + right - (k - 1) * dx + pad;
    int64_t lo = (pad - left + s - 1) / s, hi = last < 0 ? 0 : last / s + 1;
    hi = hi < ow ? hi : ow;
    lo = lo < hi ? lo : hi;
    for (int64_t ox = lo; ox < hi; ox++) out[ox] = columns[ox * s - pad];
    for (int64_t kx = 1; kx < k; kx++) {
        const float *shifted = columns + kx * dx - pad;
        if (s == 2) /* a constant stride: the loads vectorize (as pairs of vectors and a permute) */
            for (int64_t ox = lo; ox < hi; ox++) out[ox] = max_or_nan(shifted[ox * 2], out[ox]);
        else
            for (int64_t ox = lo; ox < hi; ox++) out[ox] = max_or_nan(shifted[ox * s], out[ox]);
    }
    for (int64_t ox = 0; ox < ow; ox++) {
        if (ox == lo) ox = hi;
        if (ox >= ow) break;
        pool_columns c = columns_of(g, w, ox);
        float acc = c.lo < c.hi ? columns[c.start + c.lo * dx] : 0.0f;
        for (int64_t kx = c.lo + 1; kx < c.hi; kx++) acc = max_or_nan(columns[c.start + kx * dx], acc);
        out[ox] = acc;
    }
}

static void fill_minus_infinity(float *to, int64_t count) {
    for (int64_t i = 0; i < count; i++) to[i] = -__builtin_inff();
}

/* 2-D max and average pools on float32 without indices, the common case: each output's window is clipped to the
   input once (the columns' once per call, up to POOL_COLUMNS of them), then maxed or summed without per-element
   bounds checks. A max pool undilated along the width with less padding there than its kernel (every window then
   holds an input column) takes its column maxima between columns of -inf, so that padded windows vectorize too:
   ddddocr-det's 13x13, 9x9 and 5x5 pools over 13x13 planes went one by one at all but 1, 5 and 9 of 13 outputs. */
static void pool_2d_f32(const pool_geometry *g, const pool_layout *l, const float *x, float *y, int64_t planes,
                        int64_t oh, int64_t ow) {
    int64_t h = l->size[0], w = l->size[1], dy = g->dilation[0], dx = g->dilation[1];
    int is_max = g->kind == KIND_MAX;
    pool_columns known[POOL_COLUMNS];
    float row_max[POOL_ROW];
    int64_t left = 0, right = 0;
    if (dx == 1 && g->begin[1] < g->kernel[1] && g->end[1] < g->kernel[1] && w + g->begin[1] + g->end[1] <= POOL_ROW) {
        left = g->begin[1];
        right = g->end[1];
        fill_minus_infinity(row_max, left);
        fill_minus_infinity(row_max + left + w, right);
    }
    int64_t cached = ow < POOL_COLUMNS ? ow : POOL_COLUMNS;
    for (int64_t ox = 0; ox < cached; ox++) known[ox] = columns_of(g, w, ox);
    for (int64_t q = 0; q < planes; q++) {
        const float *in = x + q * h * w;
        float *out = y + q * oh * ow;
        for (int64_t oy = 0; oy < oh; oy++) {
            int64_t sy = oy * g->stride[0] - g->begin[0], ylo, yhi, pylo, pyhi;
            kernel_range(sy, dy, g->kernel[0], 0, h, &ylo, &yhi);
            kernel_range(sy, dy, g->kernel[0], -g->begin[0], h + g->end[0], &pylo, &pyhi);
            if (is_max && w <= POOL_ROW && ylo < yhi) { /* each input column's max over the window's rows */
                const float *first = in + (sy + ylo * dy) * w;
                float *columns = row_max + left;
                for (int64_t i = 0; i < w; i++) columns[i] = first[i];
                for (int64_t ky = ylo + 1; ky < yhi; ky++) {
                    const float *row = in + (sy + ky * dy) * w;
                    for (int64_t i = 0; i < w; i++) columns[i] = max_or_nan(row[i], columns[i]);
                }
                max_over_columns(g, columns, w, left, right, out + oy * ow, ow);
                continue;
            }
            for (int64_t ox = 0; ox < ow; ox++) {
                pool_columns c = ox < cached ? known[ox] : columns_of(g, w, ox);
                int64_t inside = (yhi - ylo) * (c.hi - c.lo);
                float acc = 0.0f;
                if (is_max) {
                    if (inside) acc = in[(sy + ylo * dy) * w + c.start + c.lo * dx];
                    for (int64_t ky = ylo; ky < yhi; ky++) {
                        const float *row = in + (sy + ky * dy) * w + c.start;
                        for (int64_t kx = c.lo; kx < c.hi; kx++) acc = max_or_nan(row[kx * dx], acc);
                    }
                } else {
                    for (int64_t ky = ylo; ky < yhi; ky++) {
                        const float *row = in + (sy + ky * dy) * w + c.start;
                        for (int64_t kx = c.lo; kx < c.hi; kx++) acc += row[kx * dx];
                    }
                    int64_t divisor = g->include_pad ? (pyhi - pylo) * c.padded : inside;
                    acc = divisor ? acc / (float)divisor : 0.0f;
                }
                out[oy * ow + ox] = acc;
            }
        }
    }
}

/* Whether a 2-D max pool runs separably on each plane padded with -inf (max_pool_separable): stride 1, undilated,
   padding under the kernel (so that every window holds an input element), and the padded plane twice within the
   POOL_ROW floats on the stack. Not in the wasm core: it would add 1.6 KB to every page with a pool, and no sample
   page has such a pool. */
#ifndef __wasm__
static int separable_max(const pool_geometry *g, const pool_layout *l) {
    int64_t hp = l->size[0] + g->begin[0] + g->end[0], wp = l->size[1] + g->begin[1] + g->end[1];
    for (int i = 0; i < 2; i++)
        if (g->stride[i] != 1 || g->dilation[i] != 1 || g->begin[i] >= g->kernel[i] || g->end[i] >= g->kernel[i])
            return 0;
    return g->kind == KIND_MAX && 2 * hp * wp <= POOL_ROW;
}

/* A max pool as separable_max allows (SPP's 5x5, 9x9 and 13x13 over 10x10 to 20x20 planes): the plane copied between
   rows and columns of -inf, each position's max along the width over the whole padded plane at once, then along the
   height, as long loops that vectorize. ddddocr-det's three SPP pools took 2.1 ms one window row at a time. */
static void max_pool_separable(const pool_geometry *g, const pool_layout *l, const float *x, float *y, int64_t planes,
                               int64_t oh, int64_t ow) {
    int64_t h = l->size[0], w = l->size[1], kh = g->kernel[0], kw = g->kernel[1];
    int64_t hp = h + g->begin[0] + g->end[0], wp = w + g->begin[1] + g->end[1];
    int64_t across_span = hp * wp - (kw - 1), down_span = oh * wp; /* the first positions of the windows' rows */
    float buffer[POOL_ROW], *padded = buffer, *across = buffer + hp * wp;
    fill_minus_infinity(buffer, 2 * hp * wp);
    for (int64_t q = 0; q < planes; q++) {
        for (int64_t r = 0; r < h; r++)
            ep_memcpy(padded + (g->begin[0] + r) * wp + g->begin[1], x + (q * h + r) * w, (size_t)w * sizeof(float));
        ep_memcpy(across, padded, (size_t)across_span * sizeof(float));
        for (int64_t kx = 1; kx < kw; kx++)
            for (int64_t i = 0; i < across_span; i++) across[i] = max_or_nan(padded[i + kx], across[i]);
        ep_memcpy(padded, across, (size_t)down_span * sizeof(float)); /* then down, into the padded plane */
        for (int64_t ky = 1; ky < kh; ky++)
            for (int64_t i = 0; i < down_span; i++) padded[i] = max_or_nan(across[i + ky * wp], padded[i]);
        for (int64_t oy = 0; oy < oh; oy++)
            ep_memcpy(y + (q * oh + oy) * ow, padded + oy * wp, (size_t)ow * sizeof(float));
        fill_minus_infinity(padded, down_span); /* its padding again, for the next plane */
    }
}
#endif

/* The outputs along the last dim from output index `o`, whose windows share their other dims (set in *w). */
static void pool_output_row(const pool_geometry *g, const pool_layout *l, pool_window *w, int64_t inside,
                            int64_t padded, const ep_tensor *x, int64_t plane_offset, const ep_node *n, int64_t o) {
    const ep_tensor *y = n->out[0];
    int64_t *indices = n->n_out == 2 ? (int64_t *)n->out[1]->data : NULL;
    int last = g->nd - 1;
    for (int64_t j = 0; j < y->dims[2 + last]; j++) {
        int64_t inside_dim, padded_dim, argmax = 0;
        window_dim(g, l, last, j, w, &inside_dim, &padded_dim);
        w->inside = inside * inside_dim;
        w->padded = padded * padded_dim;
        float acc = reduce_window(g, l, w, x, plane_offset, indices || y->dtype != EP_F32 ? &argmax : NULL);
        float value = finish(g, w, acc);
        if (y->dtype == EP_F32) ((float *)y->data)[o + j] = value;
        else ep_store_real(y->data, y->dtype, o + j, value, 1);
        if (indices) indices[o + j] = plane_offset + argmax;
    }
}

#ifndef __wasm__
/* Whether a 2-D max or average pool's windows tile its input (ep_pool_tiles): kernel = stride, undilated, unpadded
   (an average's count is then its window's, padding counted or not). Not in the wasm core, for the page's bytes
   (PP-OCR rec's threaded page is within 1 KB of its budget). */
static int tiles_exactly(const pool_geometry *g, const pool_layout *l, const ep_tensor *y) {
    for (int i = 0; i < 2; i++)
        if (g->kernel[i] != g->stride[i] || g->dilation[i] != 1 || g->begin[i] || g->end[i] ||
            y->dims[2 + i] * g->kernel[i] > l->size[i])
            return 0;
    return g->kind == KIND_MAX || g->kind == KIND_AVERAGE;
}
#endif

static ep_status run_pool(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    pool_geometry g = {0};
    pool_layout l;
    if (!read_geometry(n, x->rank, &g)) return EP_ERR_OP;
    layout_of(x, g.nd, &l);
    int64_t planes = x->dims[0] * x->dims[1], outputs = y->count / (planes ? planes : 1);
    if (n->n_out == 1 && is_global(&g, &l, y)) {
        ep_global_pool(g.kind == KIND_MAX, (const float *)x->data, (float *)y->data, planes, l.plane);
        return EP_OK;
    }
#ifndef __wasm__
    if (n->n_out == 1 && g.nd == 2 && x->dtype == EP_F32 && separable_max(&g, &l)) {
        max_pool_separable(&g, &l, (const float *)x->data, (float *)y->data, planes, y->dims[2], y->dims[3]);
        return EP_OK;
    }
#endif
    if (n->n_out == 1 && g.nd == 2 && g.kind != KIND_LP && x->dtype == EP_F32) {
#ifndef __wasm__
        if (tiles_exactly(&g, &l, y))
            ep_pool_tiles(g.kind == KIND_MAX, (const float *)x->data, (float *)y->data, planes, l.size[0], l.size[1],
                          g.kernel[0], g.kernel[1], y->dims[2], y->dims[3]);
        else
#endif
            pool_2d_f32(&g, &l, (const float *)x->data, (float *)y->data, planes, y->dims[2], y->dims[3]);
        return EP_OK;
    }
    int last = g.nd - 1;
    int64_t row_outputs = y->dims[2 + last];
    for (int64_t q = 0; q < planes; q++) {
        int64_t at[POOL_MAX_DIMS] = {0};
        for (int64_t o = q * outputs; o < (q + 1) * outputs; o += row_outputs) {
            pool_window w;
            int64_t inside = 1, padded = 1;
            for (int i = 0; i < last; i++) {
                int64_t inside_dim, padded_dim;
                window_dim(&g, &l, i, at[i], &w, &inside_dim, &padded_dim);
                inside *= inside_dim;
                padded *= padded_dim;
            }
            pool_output_row(&g, &l, &w, inside, padded, x, q * l.plane, n, o);
            for (int i = last - 1; i >= 0 && ++at[i] == y->dims[2 + i]; i--) at[i] = 0;
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_pool = {"Pool", check_pool, run_pool};
