/* Depthwise convs, one channel's plane at a time: along each output row in vectors of lanes where every tap is
   inside the input, the edges column by column; a plane narrower than four vectors of output columns is first
   zero-padded into the scratch, so that all of it takes the vector path. Of those, stride-1 planes up to 1.5 vectors
   of columns and planes under kernels of 5x5 or more run instead a block of channels at a time, one per lane. */
#include "conv.h"

/* Output columns [lo, hi) of one output row, every tap inside the input's columns, kernel rows [ky0, ky1): bias
   plus the taps, in vectors of lanes across the row where the compiler has vector extensions. */
#if defined(__GNUC__) || defined(__clang__)
typedef float dw_v __attribute__((vector_size(EP_GEMM_LANES * 4)));
#define DW_L EP_GEMM_LANES
/* Lanes of the input at p, p + sw, ...: one load for stride 1, two loads and the even lanes for stride 2. */
#if EP_GEMM_LANES == 4
#define DW_EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6)
#elif EP_GEMM_LANES == 8
#define DW_EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#else
#define DW_EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#endif
#define DW_LOAD1(v, p) __builtin_memcpy(&(v), (p), sizeof(dw_v))
#define DW_LOAD2(v, p)                                                                                             \
    do {                                                                                                           \
        dw_v lo_, hi_;                                                                                             \
        __builtin_memcpy(&lo_, (p), sizeof lo_);                                                                   \
        __builtin_memcpy(&hi_, (p) + DW_L, sizeof hi_);                                                            \
        (v) = DW_EVEN(lo_, hi_);                                                                                   \
    } while (0)
/* One step of N vectors of output columns from ox, for stride SW (1 or 2) and KW taps per kernel row (a constant
   where it can be). */
#define DW_STEP(LOAD, SW, KW, N)                                                                                   \
    do {                                                                                                           \
        dw_v acc_[N];                                                                                              \
        for (int v_ = 0; v_ < (N); v_++) acc_[v_] = bias + -(dw_v){0};                                             \
        for (int64_t ky = ky0; ky < ky1; ky++) {                                                                   \
            const float *p = x + (oy * s->sh - s->pt + ky * s->dh) * s->w + ox * (SW) - s->pl;                     \
            const float *wk = w + ky * (KW);                                                                       \
            for (int64_t kx = 0; kx < (KW); kx++) {                                                                \
                dw_v t = wk[kx] + -(dw_v){0};                                                                      \
                const float *q = p + kx * s->dw;                                                                   \
                for (int v_ = 0; v_ < (N); v_++) {                                                                 \
                    dw_v in_;                                                                                      \
                    LOAD(in_, q + v_ * DW_L * (SW));                                                               \
                    acc_[v_] += t * in_;                                                                           \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
        for (int v_ = 0; v_ < (N); v_++) __builtin_memcpy(row + ox + v_ * DW_L, &acc_[v_], sizeof acc_[v_]);      \
    } while (0)
/* Steps of four vectors, then of one, then one last vector ending at hi (overlapping the columns before it). */
#define DW_COLUMNS(LOAD, SW, KW)                                                                                   \
    do {                                                                                                           \
        for (; ox + 4 * DW_L <= hi && (ox + 4 * DW_L) * (SW) + last <= s->w; ox += 4 * DW_L)                      \
            DW_STEP(LOAD, SW, KW, 4);                                                                              \
        for (; ox + DW_L <= hi && (ox + DW_L) * (SW) + last <= s->w; ox += DW_L) DW_STEP(LOAD, SW, KW, 1);         \
        if (ox < hi && hi - DW_L >= lo && hi * (SW) + last <= s->w) {                                              \
            ox = hi - DW_L;                                                                                        \
            DW_STEP(LOAD, SW, KW, 1);                                                                              \
            ox = hi;                                                                                               \
        }                                                                                                          \
    } while (0)
#endif

/* Depthwise planes of fewer output columns than this are first copied, zero-padded, into the scratch: every
   column then takes the vector path (14 columns of a 5x5 conv leave no 16-lane vector inside the input). */
#define DW_PADDED_COLUMNS (4 * EP_GEMM_LANES)
#define DW_LANES EP_GEMM_LANES
/* Output positions a step of the blocked kernel sums at once. */
#define DW_BLOCK_OUTPUTS 4

static int is_padded_depthwise(const conv_shape *s) { return is_depthwise(s) && s->ow < DW_PADDED_COLUMNS; }

/* Narrow planes that run with channels in the lanes: stride 1 up to 1.5 vectors of output columns, or 5x5 kernels
   and larger (where the taps outweigh interleaving the planes and back). With 16 lanes, against the padded plane:
   0.3x to 0.6x the time up to 20 columns, 0.4x to 0.85x for 5x5 up to 40 columns; 3x3 took 1.2x at 28 columns, and
   at 14 columns with stride 2 (four input elements interleaved per output). */
static int is_blocked_depthwise(const conv_shape *s) {
    return is_padded_depthwise(s) && ((s->sh == 1 && s->sw == 1 && 2 * s->ow <= 3 * DW_LANES) || s->kh * s->kw >= 25);
}

/* The padded plane (hp x wp, the input at row pt and column pl) and its output rows (owv columns: whole vectors). */
static void padded_geometry(const conv_shape *s, int64_t *hp, int64_t *wp, int64_t *owv) {
    *owv = (s->ow + EP_GEMM_LANES - 1) / EP_GEMM_LANES * EP_GEMM_LANES;
    int64_t cols = *owv * s->sw + (s->kw - 1) * s->dw;
    *hp = padded_extent(s->oh, s->sh, s->kh, s->dh, s->pt, s->h);
    *wp = cols > s->pl + s->w ? cols : s->pl + s->w;
}

static size_t padded_floats(const conv_shape *s) {
    int64_t hp, wp, owv;
    padded_geometry(s, &hp, &wp, &owv);
    return (size_t)(hp * wp + s->oh * owv);
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
/* Channels [c0, c0 + DW_LANES) (fewer at the end: the other lanes compute zeros): their planes zero-padded and
   interleaved in the scratch (element (r, col) of lane l at (r * cols + col) * DW_LANES + l), each tap's weights a
   vector, every output position a vector of channels summed over the taps; then each channel's plane copied out
   and activated. */
static void depthwise_lanes(const conv_shape *s, const float *x, const float *w, const float *bias, float *y,
                            int64_t c0, float *scratch) {
    int64_t rows, cols, taps = s->kh * s->kw, ohw = s->oh * s->ow;
    blocked_geometry(s, &rows, &cols);
    int64_t lanes = s->c - c0 < DW_LANES ? s->c - c0 : DW_LANES;
    float *in = scratch, *weights = in + rows * cols * DW_LANES, *out = weights + taps * DW_LANES;
    ep_memset(in, 0, (size_t)(rows * cols * DW_LANES) * sizeof(float));
    for (int64_t l = 0; l < lanes; l++)
        for (int64_t iy = 0; iy < s->h; iy++) {
            const float *src = x + ((c0 + l) * s->h + iy) * s->w;
            float *dst = in + ((iy + s->pt) * cols + s->pl) * DW_LANES + l;
            for (int64_t ix = 0; ix < s->w; ix++) dst[ix * DW_LANES] = src[ix];
        }
    for (int64_t t = 0; t < taps; t++)
        for (int64_t l = 0; l < DW_LANES; l++) weights[t * DW_LANES + l] = l < lanes ? w[(c0 + l) * taps + t] : 0.0f;
    dw_v start;
    for (int64_t l = 0; l < DW_LANES; l++) start[l] = bias && l < lanes ? bias[c0 + l] : 0.0f;
    for (int64_t oy = 0; oy < s->oh; oy++)
        for (int64_t ox = 0; ox < s->ow; ox += DW_BLOCK_OUTPUTS) {
            /* DW_BLOCK_OUTPUTS positions at a time (the last ones repeated at a row's end), each tap's weights
               loaded once for them */
            int64_t at[DW_BLOCK_OUTPUTS];
            dw_v acc[DW_BLOCK_OUTPUTS];
            for (int j = 0; j < DW_BLOCK_OUTPUTS; j++) {
                at[j] = (ox + j < s->ow ? ox + j : s->ow - 1) * s->sw * DW_LANES;
                acc[j] = start;
            }
            for (int64_t ky = 0; ky < s->kh; ky++) {
                const float *row = in + (oy * s->sh + ky * s->dh) * cols * DW_LANES;
                for (int64_t kx = 0; kx < s->kw; kx++) {
                    dw_v tap, v;
                    __builtin_memcpy(&tap, weights + (ky * s->kw + kx) * DW_LANES, sizeof tap);
                    for (int j = 0; j < DW_BLOCK_OUTPUTS; j++) {
                        __builtin_memcpy(&v, row + at[j] + kx * s->dw * DW_LANES, sizeof v);
                        acc[j] += tap * v;
                    }
                }
            }
            for (int j = 0; j < DW_BLOCK_OUTPUTS && ox + j < s->ow; j++)
                __builtin_memcpy(out + (oy * s->ow + ox + j) * DW_LANES, &acc[j], sizeof acc[j]);
        }
    for (int64_t l = 0; l < lanes; l++) {
        float *plane = y + (c0 + l) * ohw;
        for (int64_t p = 0; p < ohw; p++) plane[p] = out[p * DW_LANES + l];
        ep_activate_row(s->act, plane, plane, ohw, s->act_a, s->act_b);
    }
}
#endif

static void depthwise_inner(const conv_shape *s, const float *x, const float *w, float bias, float *row, int64_t oy,
                            int64_t ky0, int64_t ky1, int64_t lo, int64_t hi) {
    int64_t ox = lo;
#if defined(__GNUC__) || defined(__clang__)
    /* the last input column a step reads, past its first column's offset: loads read whole vectors */
    int64_t last = (s->kw - 1) * s->dw - s->pl;
    if (s->sw == 1 && s->kw == 3) DW_COLUMNS(DW_LOAD1, 1, 3);
    else if (s->sw == 1 && s->kw == 5) DW_COLUMNS(DW_LOAD1, 1, 5);
    else if (s->sw == 1) DW_COLUMNS(DW_LOAD1, 1, s->kw);
    else if (s->sw == 2 && s->kw == 3) DW_COLUMNS(DW_LOAD2, 2, 3);
    else if (s->sw == 2 && s->kw == 5) DW_COLUMNS(DW_LOAD2, 2, 5);
    else if (s->sw == 2) DW_COLUMNS(DW_LOAD2, 2, s->kw);
#endif
    for (; ox < hi; ox++) {
        float v = bias;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *p = x + (oy * s->sh - s->pt + ky * s->dh) * s->w + ox * s->sw - s->pl;
            const float *wk = w + ky * s->kw;
            for (int64_t kx = 0; kx < s->kw; kx++) v += wk[kx] * p[kx * s->dw];
        }
        row[ox] = v;
    }
}

/* Output columns [lo, hi) with taps outside the input: each column over its taps inside. */
static void depthwise_edge(const conv_shape *s, const float *x, const float *w, float bias, float *row, int64_t oy,
                           int64_t ky0, int64_t ky1, int64_t lo, int64_t hi) {
    for (int64_t ox = lo; ox < hi; ox++) {
        int64_t offset = ox * s->sw - s->pl;
        int64_t kx0 = first_valid(offset, s->dw);
        int64_t kx1 = s->w - 1 - offset < 0 ? 0 : (s->w - 1 - offset) / s->dw + 1;
        kx1 = kx1 < s->kw ? kx1 : s->kw;
        float v = bias;
        for (int64_t ky = ky0; ky < ky1; ky++) {
            const float *in = x + (oy * s->sh - s->pt + ky * s->dh) * s->w + offset;
            const float *wk = w + ky * s->kw;
            for (int64_t kx = kx0; kx < kx1; kx++) v += wk[kx] * in[kx * s->dw];
        }
        row[ox] = v;
    }
}

static void depthwise(const conv_shape *s, const float *x, const float *w, float bias, float *y) {
    /* columns where every tap of a kernel row is inside the input */
    int64_t inner_lo = first_valid(-s->pl, s->sw);
    int64_t last = (s->kw - 1) * s->dw - s->pl;
    int64_t inner_hi = s->w - 1 - last < 0 ? 0 : (s->w - 1 - last) / s->sw + 1;
    inner_hi = inner_hi < s->ow ? inner_hi : s->ow;
    inner_lo = inner_lo < inner_hi ? inner_lo : inner_hi;
    for (int64_t oy = 0; oy < s->oh; oy++) {
        float *row = y + oy * s->ow;
        /* kernel rows inside the input: [ky0, ky1) */
        int64_t top = oy * s->sh - s->pt;
        int64_t ky0 = first_valid(top, s->dh);
        int64_t ky1 = s->h - 1 - top < 0 ? 0 : (s->h - 1 - top) / s->dh + 1;
        ky1 = ky1 < s->kh ? ky1 : s->kh;
        ky0 = ky0 < ky1 ? ky0 : ky1;
        depthwise_edge(s, x, w, bias, row, oy, ky0, ky1, 0, inner_lo);
        depthwise_inner(s, x, w, bias, row, oy, ky0, ky1, inner_lo, inner_hi);
        depthwise_edge(s, x, w, bias, row, oy, ky0, ky1, inner_hi, s->ow);
        ep_activate_row(s->act, row, row, s->ow, s->act_a, s->act_b);
    }
}

/* A narrow depthwise plane: zero-padded into the scratch, run there as a plane without padding whose output rows
   are whole vectors, and its ow columns copied out. */
static void depthwise_padded(const conv_shape *s, const float *x, const float *w, float bias, float *y,
                             float *scratch) {
    int64_t hp, wp, owv;
    padded_geometry(s, &hp, &wp, &owv);
    float *plane = scratch, *out = scratch + hp * wp;
    ep_zero_padded(s, x, 1, hp, wp, plane, (size_t)(hp * wp));
    conv_shape padded = *s;
    padded.h = hp;
    padded.w = wp;
    padded.pt = padded.pl = 0;
    padded.ow = owv;
    depthwise(&padded, plane, w, bias, out);
    for (int64_t oy = 0; oy < s->oh; oy++) ep_memcpy(y + oy * s->ow, out + oy * owv, (size_t)s->ow * sizeof(float));
}

size_t ep_depthwise_scratch_floats(const conv_shape *s) {
    return is_blocked_depthwise(s) ? blocked_floats(s) : is_padded_depthwise(s) ? padded_floats(s) : 0;
}

void ep_depthwise(const conv_shape *s, const float *x, const float *w, const float *bias, float *y, float *scratch) {
#if defined(__GNUC__) || defined(__clang__)
    if (is_blocked_depthwise(s)) {
        for (int64_t c0 = 0; c0 < s->c; c0 += DW_LANES) depthwise_lanes(s, x, w, bias, y, c0, scratch);
        return;
    }
#endif
    for (int64_t c = 0; c < s->c; c++) {
        const float *plane = x + c * s->h * s->w, *weights = w + c * s->kh * s->kw;
        float channel_bias = bias ? bias[c] : 0.0f, *out = y + c * s->oh * s->ow;
        if (is_padded_depthwise(s)) depthwise_padded(s, plane, weights, channel_bias, out, scratch);
        else depthwise(s, plane, weights, channel_bias, out);
    }
}
