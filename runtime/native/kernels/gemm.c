/* Packing and the register-blocked micro-kernel shared by every matrix-product kernel. */
#include "gemm.h"
#include "quantized_value.h"
#include "vector_math.h"

float ep_activate(int32_t act, float x, float a, float b) {
    switch (act) {
    case EP_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case EP_ACT_CLIP: return x < a ? a : (x > b ? b : x);
    case EP_ACT_HARD_SWISH:
    case EP_ACT_HARD_SWISH_AFFINE: {
        float v = x * (1.0f / 6.0f) + 0.5f; /* ONNX: alpha x + beta, alpha = 1/6 */
        float y = x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
        return act == EP_ACT_HARD_SWISH ? y : a * y + b;
    }
    case EP_ACT_HARD_SIGMOID: {
        float v = a * x + b;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
    }
    case EP_ACT_LEAKY_RELU: return x < 0.0f ? a * x : x;
    case EP_ACT_SIGMOID: return ep_sigmoidf(x);
    case EP_ACT_SWISH: return x * ep_sigmoidf(x);
    case EP_ACT_ROUND_TRIP_U8:
    case EP_ACT_ROUND_TRIP_I8: {
        float low = round_trip_low(act == EP_ACT_ROUND_TRIP_I8, b);
        return round_trip_value(x, a, low, low + 255.0f);
    }
    }
    return x;
}

/* The logistic function, or x times it (`gated`, Swish): EP_VW_LANES at a time (ep_sigmoid_wide), the rest one by
   one. The gate is a factor (x, or 1) picked by a mask, not a branch: one loop in the wasm core's bytes, not two. */
static void sigmoid_row(const float *x, float *y, int64_t count, int gated) {
    int64_t i = 0;
#ifdef EP_VECTOR_MATH
    ep_vwi keep = (ep_vwi){0} - (gated ? 1 : 0);
    ep_vw one = (ep_vw){0} + 1.0f;
    for (; i + EP_VW_LANES <= count; i += EP_VW_LANES) {
        ep_vw v, t;
        __builtin_memcpy(&v, x + i, sizeof v);
        t = v;
        ep_sigmoid_wide(&t);
        t *= (ep_vw)(((ep_vwi)v & keep) | ((ep_vwi)one & ~keep));
        __builtin_memcpy(y + i, &t, sizeof t);
    }
#endif
    for (; i < count; i++) y[i] = ep_sigmoidf(x[i]) * (gated ? x[i] : 1.0f);
}

void ep_tanh_row(const float *x, float *y, int64_t n) {
    int64_t i = 0;
#ifdef EP_VECTOR_MATH
    for (; i + EP_VF_LANES <= n; i += EP_VF_LANES) {
        ep_vf t;
        __builtin_memcpy(&t, x + i, sizeof t);
        ep_tanh_lanes(&t);
        __builtin_memcpy(y + i, &t, sizeof t);
    }
#endif
    for (; i < n; i++) y[i] = ep_tanhf(x[i]);
}

void ep_activate_row(int32_t act, const float *x, float *y, int64_t n, float a, float b) {
    switch (act) {
    case EP_ACT_NONE:
        if (x != y) ep_memcpy(y, x, (size_t)n * sizeof(float));
        return;
    case EP_ACT_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        return;
    case EP_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < a ? a : (x[i] > b ? b : x[i]);
        return;
    case EP_ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] * (1.0f / 6.0f) + 0.5f;
            y[i] = x[i] * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
        }
        return;
    case EP_ACT_HARD_SWISH_AFFINE:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] * (1.0f / 6.0f) + 0.5f;
            y[i] = a * (x[i] * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v))) + b;
        }
        return;
    case EP_ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float v = a * x[i] + b;
            y[i] = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
        }
        return;
    case EP_ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? a * x[i] : x[i];
        return;
    case EP_ACT_SIGMOID:
    case EP_ACT_SWISH:
        sigmoid_row(x, y, n, act == EP_ACT_SWISH);
        return;
    case EP_ACT_ROUND_TRIP_U8:
    case EP_ACT_ROUND_TRIP_I8:
        ep_round_trip_per_tensor(x, y, act == EP_ACT_ROUND_TRIP_I8, n, a, b);
        return;
    default:
        for (int64_t i = 0; i < n; i++) y[i] = ep_activate(act, x[i], a, b);
    }
}

int64_t ep_gemm_block_columns(int64_t k, size_t scratch_floats) {
    if (k <= 0) return EP_GEMM_BLOCK;
    int64_t fit = (int64_t)(scratch_floats / (size_t)k) / EP_GEMM_NR * EP_GEMM_NR;
    return fit < EP_GEMM_BLOCK ? fit : EP_GEMM_BLOCK;
}

void ep_pack_strided(float *packed, const float *b, int64_t k, int64_t n0, int64_t nb, int64_t row_stride,
                     int64_t col_stride) {
    /* a row of B at a time, read from one end to the other (the prefetchers follow it), into the panels' rows */
    for (int64_t kk = 0; kk < k; kk++) {
        const float *src = b + kk * row_stride + n0 * col_stride;
        for (int64_t p = 0; p < nb; p += EP_GEMM_NR) {
            int64_t cols = nb - p < EP_GEMM_NR ? nb - p : EP_GEMM_NR, j = 0;
            float *dst = packed + p * k + kk * EP_GEMM_NR;
            if (col_stride == 1 && cols == EP_GEMM_NR) {
                __builtin_memcpy(dst, src + p, EP_GEMM_NR * sizeof(float));
                continue;
            }
            for (; j < cols; j++) dst[j] = src[(p + j) * col_stride];
            for (; j < EP_GEMM_NR; j++) dst[j] = 0.0f;
        }
    }
}

/* A tile of fewer than NR columns (rows x cols of it), or any tile without vector extensions, stored
   through the epilogue, the activation a row at a time (ep_activate_row: Sigmoid in vectors too). */
static void store_tile(const float acc[EP_GEMM_MR][EP_GEMM_NR], int64_t rows, int64_t cols, int64_t i0, float *c,
                       int64_t ldc, const ep_epilogue *e) {
    for (int64_t r = 0; r < rows; r++) {
        float *out = c + (i0 + r) * ldc;
        float bias = e->row_bias ? e->row_bias[i0 + r] : 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            float v = e->alpha * acc[r][j] + bias;
            out[j] = e->accumulate ? v + out[j] : v;
        }
        ep_activate_row(e->act, out, out, cols, e->act_a, e->act_b);
    }
}

#if defined(__GNUC__) || defined(__clang__)
typedef int32_t ep_m8 __attribute__((vector_size(EP_GEMM_LANES * 4)));

/* A macro, not a function: passing vectors by value would tie the code to one vector ABI. */
#define select_where(mask, yes, no) ((ep_v8)(((ep_m8)(yes) & (mask)) | ((ep_m8)(no) & ~(mask))))

static void clamp(ep_v8 *v, float low, float high) {
    *v = select_where(*v < ep_splat(low), ep_splat(low), *v);
    *v = select_where(*v > ep_splat(high), ep_splat(high), *v);
}

/* The epilogue on a vector for the activations that need no transcendental, and for the logistic function and Swish
   where the vector is as wide as vector_math.h's widest (not on wasm); 0 when it does not apply. */
static int activate_vector(int32_t act, ep_v8 *v, float a, float b) {
    switch (act) {
    case EP_ACT_NONE: return 1;
    case EP_ACT_RELU: *v = select_where(*v > ep_splat(0.0f), *v, ep_splat(0.0f)); return 1;
    case EP_ACT_CLIP: clamp(v, a, b); return 1;
    case EP_ACT_HARD_SWISH:
    case EP_ACT_HARD_SWISH_AFFINE: {
        ep_v8 gate = *v * ep_splat(1.0f / 6.0f) + ep_splat(0.5f);
        clamp(&gate, 0.0f, 1.0f);
        *v = *v * gate;
        if (act == EP_ACT_HARD_SWISH_AFFINE) *v = *v * ep_splat(a) + ep_splat(b);
        return 1;
    }
    case EP_ACT_HARD_SIGMOID:
        *v = *v * ep_splat(a) + ep_splat(b);
        clamp(v, 0.0f, 1.0f);
        return 1;
    case EP_ACT_LEAKY_RELU: *v = select_where(*v < ep_splat(0.0f), *v * ep_splat(a), *v); return 1;
#if defined(EP_VECTOR_MATH) && EP_VW_LANES == EP_GEMM_LANES
    case EP_ACT_SIGMOID:
    case EP_ACT_SWISH: { /* sigmoid_row's lanes, in registers: the same values, without a store, a call and a reload */
        ep_vw t;
        __builtin_memcpy(&t, v, sizeof t);
        ep_sigmoid_wide(&t);
        ep_v8 gate;
        __builtin_memcpy(&gate, &t, sizeof gate);
        *v = act == EP_ACT_SWISH ? *v * gate : gate;
        return 1;
    }
#endif
    }
    return 0;
}

/* The first `rows` rows of a tile of NR columns through the epilogue in vectors: scaled, biased, added to C where it
   accumulates, activated, stored; an activation with no vector form here (Sigmoid) then runs over each row stored
   (ep_activate_row, in vectors too). The epilogue's fields are read once, before any store to C: a store could alias
   them for all the compiler knows, and reloaded after each vector stored they cost 1x1 convs of 16 to 48 input
   channels a tenth to a fifth of their time (AMD EPYC, AVX2). */
static void store_vector(ep_v8 all[EP_GEMM_MR][EP_GEMM_NV], int64_t rows, int64_t i0, float *c, int64_t ldc,
                         const ep_epilogue *e) {
    const float *bias = e->row_bias ? e->row_bias + i0 : 0;
    const float alpha = e->alpha, act_a = e->act_a, act_b = e->act_b;
    const int accumulate = e->accumulate;
    const int32_t act = e->act;
    for (int64_t r = 0; r < rows; r++) {
        float *out = c + (i0 + r) * ldc;
        ep_v8 shift = ep_splat(bias ? bias[r] : 0.0f);
        int stored_raw = 0;
        for (int h = 0; h < EP_GEMM_NV; h++) {
            ep_v8 v = all[r][h] * ep_splat(alpha) + shift;
            if (accumulate) {
                ep_v8 old;
                __builtin_memcpy(&old, out + EP_GEMM_LANES * h, sizeof old);
                v += old;
            }
            stored_raw |= !activate_vector(act, &v, act_a, act_b);
            __builtin_memcpy(out + EP_GEMM_LANES * h, &v, sizeof v);
        }
        if (stored_raw) ep_activate_row(act, out, out, EP_GEMM_NR, act_a, act_b);
    }
}

/* Rows of a panel ahead of the one in use that the micro-kernel asks the cache for: panels of weights packed at
   plan time come from L3 or memory, whose latency the hardware prefetchers alone left exposed. Against none, 8 rows
   ahead took 0.95 of a 32x384x1536 product over 21 MB of weights; against 8, 32 took 0.91 there and 0.98 to 1.01
   on panels already in L2 (Intel Xeon, AVX-512). */
#define PREFETCH_ROWS 32
/* Floats per 64-byte cache line: a panel row of NR floats is asked for a line at a time. */
#define LINE_FLOATS 16
/* A panel's last columns that fit one vector run a one-vector instance of the micro-kernel, half the multiply-adds
   (a 1x1 conv over 14x14 positions: 196 = 6 panels of 32 and 4 columns), except on wasm, for the page's bytes. */
#ifdef __wasm__
#define ONE_VECTOR_TAIL 0
#else
#define ONE_VECTOR_TAIL 1
#endif

/* B's row kk: a panel's, b_row floats apart (direct == 0), or NR floats in place at b + offsets[kk] (direct == 1);
   its first `nv` vectors (a panel's last columns, when they fit fewer), by the first `mr` rows of A (MR, or fewer for
   A's last tile); inlined into each caller with `direct`, `nv`, `mr` and `prefetch` constants. With `prefetch`, a
   panel's tile asks the cache for the row `ahead` floats past each row it reads, and a tile in place for the next
   panel's columns of each row. */
static inline __attribute__((always_inline)) void micro_kernel(int64_t k, const float *const *rows, int64_t a_col,
                                                               const float *b, int64_t b_row, const int32_t *offsets,
                                                               int direct, int nv, int mr, int prefetch, int64_t i0,
                                                               int64_t rows_left, int64_t cols, float *c, int64_t ldc,
                                                               const ep_epilogue *e, int64_t ahead) {
    ep_v8 acc[EP_GEMM_MR][EP_GEMM_NV];
    for (int r = 0; r < EP_GEMM_MR; r++)
        for (int h = 0; h < EP_GEMM_NV; h++) acc[r][h] = ep_splat(0.0f);
    const float *row[EP_GEMM_MR];
    for (int r = 0; r < EP_GEMM_MR; r++) row[r] = rows[r];
    for (int64_t kk = 0; kk < k; kk++) {
        const float *bk = direct ? b + offsets[kk] : b + kk * b_row;
        if (prefetch && !direct)
            for (int h = 0; h < EP_GEMM_NR; h += LINE_FLOATS) __builtin_prefetch(bk + ahead + h);
        else if (prefetch) {
            /* rows in place lie anywhere (a conv's taps over its input planes), more streams than the prefetchers
               follow: the first tile asks for the next panel's columns of each row, which the next panel then finds
               in cache (a 3x3 conv of 96 -> 24 channels over 160x160 in PP-OCR det: 29 -> 24 ms, AMD EPYC, AVX2) */
            for (int h = 0; h < EP_GEMM_NR; h += LINE_FLOATS) __builtin_prefetch(bk + EP_GEMM_NR + h);
            __builtin_prefetch(bk + 2 * EP_GEMM_NR - 1);
        }
        ep_v8 bv[EP_GEMM_NV];
        for (int h = 0; h < nv; h++) __builtin_memcpy(&bv[h], bk + EP_GEMM_LANES * h, sizeof bv[h]);
        int64_t at = kk * a_col;
        for (int r = 0; r < mr; r++) {
            ep_v8 a = ep_splat(row[r][at]);
            for (int h = 0; h < nv; h++) acc[r][h] += a * bv[h];
        }
    }
    if (cols == EP_GEMM_NR) {
        store_vector(acc, rows_left, i0, c, ldc, e);
        return;
    }
    float tile[EP_GEMM_MR][EP_GEMM_NR];
    for (int r = 0; r < EP_GEMM_MR; r++) __builtin_memcpy(tile[r], acc[r], sizeof acc[r]);
    store_tile((const float(*)[EP_GEMM_NR])tile, rows_left, cols, i0, c, ldc, e);
}
#else
static void micro_kernel(int64_t k, const float *const *rows, int64_t a_col, const float *b, int64_t b_row,
                         const int32_t *offsets, int direct, int nv, int mr, int prefetch, int64_t i0,
                         int64_t rows_left, int64_t cols, float *c, int64_t ldc, const ep_epilogue *e, int64_t ahead) {
    (void)nv;
    (void)mr;
    (void)prefetch;
    (void)ahead;
    float acc[EP_GEMM_MR][EP_GEMM_NR];
    for (int r = 0; r < EP_GEMM_MR; r++)
        for (int j = 0; j < EP_GEMM_NR; j++) acc[r][j] = 0.0f;
    for (int64_t kk = 0; kk < k; kk++) {
        const float *bk = direct ? b + offsets[kk] : b + kk * b_row;
        for (int r = 0; r < EP_GEMM_MR; r++) {
            float a = rows[r][kk * a_col];
            for (int j = 0; j < EP_GEMM_NR; j++) acc[r][j] += a * bk[j];
        }
    }
    store_tile((const float(*)[EP_GEMM_NR])acc, rows_left, cols, i0, c, ldc, e);
}
#endif

/* Bytes of B's panels that each tile of A runs over in turn, the panels after one another. Panels of few rows (a 1x1
   conv of 16 input channels: 1 KB) then stay in L1 over all the tiles, and each tile writes its rows of C a group
   wide rather than a panel (NR floats) at a time into as many planes: PP-OCR det, whose 1x1 convs of 12 to 48
   channels run over 160x160 and 320x320, took 0.85 of its time so (AMD EPYC, AVX2). A panel of more rows than the
   group holds runs alone, each tile over it in turn. Not on wasm, for the page's bytes. */
#ifdef __wasm__
#define PANEL_GROUP_BYTES 0
#else
#define PANEL_GROUP_BYTES 16384
#endif

/* A tile of A's last rows runs a 2-row micro-kernel where it has 1 or 2 rows and a 4-row one where it has 3 or 4,
   rather than MR rows of which the rest are dropped (not on wasm, for the page's bytes). */
#ifdef __wasm__
#define SHORT_TILES 0
#else
#define SHORT_TILES 1
#endif

/* The micro-kernel over `rows_left` rows of A: MR rows, or a short tile's. */
static inline __attribute__((always_inline)) void rows_tile(int64_t k, const float *const *rows, int64_t a_col,
                                                            const float *b, int64_t b_row, const int32_t *offsets,
                                                            int direct, int prefetch, int64_t i0, int64_t rows_left,
                                                            int64_t cols, float *c, int64_t ldc, const ep_epilogue *e,
                                                            int64_t ahead) {
    if (SHORT_TILES && rows_left <= 2)
        micro_kernel(k, rows, a_col, b, b_row, offsets, direct, EP_GEMM_NV, 2, prefetch, i0, rows_left, cols, c, ldc,
                     e, ahead);
    else if (SHORT_TILES && rows_left <= 4 && EP_GEMM_MR > 4)
        micro_kernel(k, rows, a_col, b, b_row, offsets, direct, EP_GEMM_NV, 4, prefetch, i0, rows_left, cols, c, ldc,
                     e, ahead);
    else
        micro_kernel(k, rows, a_col, b, b_row, offsets, direct, EP_GEMM_NV, EP_GEMM_MR, prefetch, i0, rows_left, cols,
                     c, ldc, e, ahead);
}

/* One tile of a panel: the one-vector micro-kernel for a panel's last columns that fit one vector. */
static inline __attribute__((always_inline)) void panel_tile(int64_t k, const float *const *rows, int64_t a_col,
                                                             const float *panel, int64_t width, int prefetch,
                                                             int64_t i0, int64_t rows_left, int64_t cols, float *c,
                                                             int64_t ldc, const ep_epilogue *e, int64_t ahead) {
    if (ONE_VECTOR_TAIL && EP_GEMM_NV > 1 && cols <= EP_GEMM_LANES)
        micro_kernel(k, rows, a_col, panel, width, 0, 0, 1, EP_GEMM_MR, prefetch, i0, rows_left, cols, c, ldc, e,
                     ahead);
    else
        rows_tile(k, rows, a_col, panel, width, 0, 0, prefetch, i0, rows_left, cols, c, ldc, e, ahead);
}

/* next_panel: 32 x 384 x 1536 products over 8 matrices of weights, 19 MB in all, took 0.81 of the time; minilm-l3
   0.83, with each task's panels of a PackedMatMul as one product (AMD EPYC, AVX2). Panels packed per call (or a
   Winograd block's) are in cache already, and asking for their rows only costs the loop an instruction: without it
   a 6 x 16 tile over 256 rows of a panel in L1 ran in 0.93 of the time (AMD EPYC, AVX2). */
void ep_gemm_panels(int64_t m, int64_t k, int64_t nb, const float *a, int64_t a_row, int64_t a_col, const float *panels,
                    int64_t width, float *c, int64_t ldc, const ep_epilogue *epilogue, int next_panel) {
    int64_t panel_bytes = k * EP_GEMM_NR * (int64_t)sizeof(float);
    int64_t group = panel_bytes > 0 && panel_bytes < PANEL_GROUP_BYTES ? PANEL_GROUP_BYTES / panel_bytes : 1;
    int prefetch = EP_GEMM_PREFETCH && next_panel;
    for (int64_t g = 0; g < nb; g += group * EP_GEMM_NR) {
        int64_t g_end = nb - g < group * EP_GEMM_NR ? nb : g + group * EP_GEMM_NR;
        for (int64_t i = 0; i < m; i += EP_GEMM_MR) {
            int64_t rows_left = m - i < EP_GEMM_MR ? m - i : EP_GEMM_MR;
            const float *rows[EP_GEMM_MR];
            for (int64_t r = 0; r < EP_GEMM_MR; r++) rows[r] = a + (i + (r < rows_left ? r : 0)) * a_row;
            for (int64_t p = g; p < g_end; p += EP_GEMM_NR) {
                int64_t cols = nb - p < EP_GEMM_NR ? nb - p : EP_GEMM_NR;
                int64_t at = p / width * width * k + p % width, q = p + EP_GEMM_NR;
                if (!prefetch) {
                    panel_tile(k, rows, a_col, panels + at, width, 0, i, rows_left, cols, c + p, ldc, epilogue, 0);
                    continue;
                }
                int64_t ahead = i > 0 && q < nb ? q / width * width * k + q % width - at : PREFETCH_ROWS * width;
                panel_tile(k, rows, a_col, panels + at, width, 1, i, rows_left, cols, c + p, ldc, epilogue, ahead);
            }
        }
    }
}

void ep_gemm_packed(int64_t m, int64_t k, int64_t nb, const float *a, int64_t a_row, int64_t a_col,
                    const float *packed, float *c, int64_t ldc, const ep_epilogue *epilogue) {
    ep_gemm_panels(m, k, nb, a, a_row, a_col, packed, EP_GEMM_NR, c, ldc, epilogue, 0);
}

void ep_gemm_prepacked(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, const float *panels, float *c,
                       int64_t ldc, const ep_epilogue *epilogue) {
    ep_gemm_panels(m, k, n, a, a_row, 1, panels, EP_PREPACKED_COLUMNS, c, ldc, epilogue, 1);
}

void ep_gemm_direct(int64_t m, int64_t k, const float *a, int64_t a_row, int64_t a_col, const float *b,
                    const int32_t *offsets, float *c, int64_t ldc, const ep_epilogue *epilogue) {
    for (int64_t i = 0; i < m; i += EP_GEMM_MR) {
        int64_t rows_left = m - i < EP_GEMM_MR ? m - i : EP_GEMM_MR;
        const float *rows[EP_GEMM_MR];
        for (int64_t r = 0; r < EP_GEMM_MR; r++) rows[r] = a + (i + (r < rows_left ? r : 0)) * a_row;
        if (EP_GEMM_PREFETCH && i == 0)
            rows_tile(k, rows, a_col, b, 0, offsets, 1, 1, i, rows_left, EP_GEMM_NR, c, ldc, epilogue, 0);
        else
            rows_tile(k, rows, a_col, b, 0, offsets, 1, 0, i, rows_left, EP_GEMM_NR, c, ldc, epilogue, 0);
    }
}
