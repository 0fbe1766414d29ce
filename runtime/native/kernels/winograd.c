/* 3x3 stride-1 convs as Winograd F(2x2, 3x3): each 4x4 tile of the zero-padded input and each 3x3 filter are
   transformed into 16 values, a 2x2 block of outputs is 16 products of those summed over the input channels (16
   matrix products of M x C by C x tiles, the engine's), then transformed back: 16 multiply-adds per 2x2 outputs and
   input channel where the direct conv takes 36. Tiles run in blocks of WINOGRAD_TILES, so that a block's transformed
   input and products stay in the L2 cache. */
#include "conv.h"
#include "kernel_choice.h"
#include "vector_math.h"

#ifndef __wasm__

/* Tiles per block: a multiple of every build's NR, so that a block is whole panels. */
#define WINOGRAD_TILES 64

/* The table's channels for a conv: its input channels (the sum of each of the 16 products), at most twice its
   output channels (kernel_choice.py's winograd_channels, which says why). */
static int64_t winograd_channels(const conv_shape *s) { return s->cg < 2 * s->mg ? s->cg : 2 * s->mg; }

int ep_winograd_applies(const conv_shape *s) {
    return s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->dh == 1 && s->dw == 1 && s->group == 1 &&
           16 * s->mg * s->cg <= EP_WINOGRAD_MAX_WEIGHT_FLOATS &&
           ep_winograd_wins(winograd_channels(s), ((s->oh + 1) / 2) * ((s->ow + 1) / 2));
}

/* Floats between two of the 16 transformed matrices beyond the matrix itself: matrices a power of two apart would
   share their L1 cache sets, and the 16 streams a transform reads or writes would evict each other. */
#define SKEW 16

typedef struct winograd_layout {
    int64_t th, tw, hp, half, tiles; /* tile rows and columns, the padded plane's rows and half its columns, tiles */
    int64_t u_step, v_step, m_step;  /* floats from one transformed matrix to the next */
    float *u, *v, *m, *phases;       /* in the scratch, once placed */
} winograd_layout;

static winograd_layout layout_of(const conv_shape *s) {
    winograd_layout l = {0};
    l.th = (s->oh + 1) / 2;
    l.tw = (s->ow + 1) / 2;
    l.hp = 2 * l.th + 2;
    l.half = l.tw + 1;
    l.tiles = l.th * l.tw;
    l.u_step = s->mg * s->cg + SKEW;
    l.v_step = s->cg * WINOGRAD_TILES + SKEW;
    l.m_step = s->mg * WINOGRAD_TILES + SKEW;
    return l;
}

size_t ep_winograd_scratch_floats(const conv_shape *s) {
    winograd_layout l = layout_of(s);
    return (size_t)(16 * (l.u_step + l.v_step + l.m_step) + s->cg * 2 * l.hp * l.half);
}

/* U = G g G^T of each filter g (3x3), as 16 matrices of M x C: U[xi][m][c], u_step apart. */
static void transform_filters(const conv_shape *s, const float *w, float *u, int64_t u_step) {
    int64_t mc = s->mg * s->cg;
    for (int64_t f = 0; f < mc; f++) {
        const float *g = w + f * 9;
        float t[4][3];
        for (int j = 0; j < 3; j++) {
            t[0][j] = g[j];
            t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
            t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
            t[3][j] = g[6 + j];
        }
        for (int i = 0; i < 4; i++) {
            float row[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]), 0.5f * (t[i][0] - t[i][1] + t[i][2]),
                            t[i][2]};
            for (int j = 0; j < 4; j++) u[(i * 4 + j) * u_step + f] = row[j];
        }
    }
}

/* B^T d B of the 4x4 tile d (rows d[i][0..3]) into out[16]. */
#define INPUT_TRANSFORM(T, d, out)                                                                                   \
    do {                                                                                                             \
        T r_[4][4];                                                                                                  \
        for (int i_ = 0; i_ < 4; i_++) {                                                                             \
            r_[i_][0] = d[i_][0] - d[i_][2];                                                                         \
            r_[i_][1] = d[i_][1] + d[i_][2];                                                                         \
            r_[i_][2] = d[i_][2] - d[i_][1];                                                                         \
            r_[i_][3] = d[i_][1] - d[i_][3];                                                                         \
        }                                                                                                            \
        for (int j_ = 0; j_ < 4; j_++) {                                                                             \
            out[j_] = r_[0][j_] - r_[2][j_];                                                                         \
            out[4 + j_] = r_[1][j_] + r_[2][j_];                                                                     \
            out[8 + j_] = r_[2][j_] - r_[1][j_];                                                                     \
            out[12 + j_] = r_[1][j_] - r_[3][j_];                                                                    \
        }                                                                                                            \
    } while (0)

/* The transformed input of tiles [t0, t0 + count) for every channel: V[xi][c][t - t0], rows WINOGRAD_TILES apart. */
static void transform_input(const conv_shape *s, const winograd_layout *l, int64_t t0, int64_t count) {
    for (int64_t c = 0; c < s->cg; c++) {
        const float *plane = l->phases + c * 2 * l->hp * l->half;
        for (int64_t t = t0; t < t0 + count;) {
            int64_t ty = t / l->tw, tx = t % l->tw;
            int64_t end = tx + (t0 + count - t) < l->tw ? tx + (t0 + count - t) : l->tw;
            const float *even[4], *odd[4];
            for (int i = 0; i < 4; i++) {
                even[i] = plane + (2 * ty + i) * l->half;
                odd[i] = even[i] + l->hp * l->half;
            }
            float *out = l->v + c * WINOGRAD_TILES + (t - t0);
            int64_t x = tx;
#ifdef EP_VECTOR_MATH
            for (; x + EP_VF_LANES <= end; x += EP_VF_LANES) {
                ep_vf d[4][4], v[16];
                for (int i = 0; i < 4; i++) {
                    __builtin_memcpy(&d[i][0], even[i] + x, sizeof(ep_vf));
                    __builtin_memcpy(&d[i][1], odd[i] + x, sizeof(ep_vf));
                    __builtin_memcpy(&d[i][2], even[i] + x + 1, sizeof(ep_vf));
                    __builtin_memcpy(&d[i][3], odd[i] + x + 1, sizeof(ep_vf));
                }
                INPUT_TRANSFORM(ep_vf, d, v);
                for (int xi = 0; xi < 16; xi++)
                    __builtin_memcpy(out + xi * l->v_step + (x - tx), &v[xi], sizeof(ep_vf));
            }
#endif
            for (; x < end; x++) {
                float d[4][4], v[16];
                for (int i = 0; i < 4; i++) {
                    d[i][0] = even[i][x];
                    d[i][1] = odd[i][x];
                    d[i][2] = even[i][x + 1];
                    d[i][3] = odd[i][x + 1];
                }
                INPUT_TRANSFORM(float, d, v);
                for (int xi = 0; xi < 16; xi++) out[xi * l->v_step + (x - tx)] = v[xi];
            }
            t += end - tx;
        }
    }
}

/* A^T m A of the 4x4 products m (rows m[i][0..3]) into the 2x2 outputs y[2][2]. */
#define OUTPUT_TRANSFORM(T, m, y)                                                                                   \
    do {                                                                                                             \
        T r_[2][4];                                                                                                  \
        for (int j_ = 0; j_ < 4; j_++) {                                                                             \
            r_[0][j_] = m[0][j_] + m[1][j_] + m[2][j_];                                                              \
            r_[1][j_] = m[1][j_] - m[2][j_] - m[3][j_];                                                              \
        }                                                                                                            \
        for (int i_ = 0; i_ < 2; i_++) {                                                                             \
            y[i_][0] = r_[i_][0] + r_[i_][1] + r_[i_][2];                                                            \
            y[i_][1] = r_[i_][1] - r_[i_][2] - r_[i_][3];                                                            \
        }                                                                                                            \
    } while (0)

#ifdef EP_VECTOR_MATH
typedef float ep_vf2 __attribute__((vector_size(2 * EP_VF_LANES * 4)));
#endif

/* Each tile's 16 products transformed into its 2x2 outputs (those inside the output), plus the bias. */
static void transform_output(const conv_shape *s, const winograd_layout *l, int64_t t0, int64_t count,
                             const float *bias, float *y) {
    int64_t ohw = s->oh * s->ow, stride = l->m_step;
    for (int64_t o = 0; o < s->mg; o++) {
        const float *mo = l->m + o * WINOGRAD_TILES;
        float b = bias ? bias[o] : 0.0f;
        for (int64_t t = t0; t < t0 + count;) {
            int64_t ty = t / l->tw, tx = t % l->tw, oy = 2 * ty;
            int64_t end = tx + (t0 + count - t) < l->tw ? tx + (t0 + count - t) : l->tw;
            const float *from = mo + (t - t0); /* tile tx's products; tile x's at from + x - tx */
            float *out = y + o * ohw + oy * s->ow;
            int64_t x = tx;
#ifdef EP_VECTOR_MATH
            for (; x + EP_VF_LANES <= end && 2 * (x + EP_VF_LANES) <= s->ow && oy + 1 < s->oh; x += EP_VF_LANES) {
                ep_vf m[4][4], v[2][2];
                for (int xi = 0; xi < 16; xi++)
                    __builtin_memcpy(&m[xi / 4][xi % 4], from + xi * stride + (x - tx), sizeof(ep_vf));
                OUTPUT_TRANSFORM(ep_vf, m, v);
                for (int i = 0; i < 2; i++) {
                    ep_vf2 row = __builtin_shufflevector(v[i][0], v[i][1], 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6,
                                                         14, 7, 15) + b;
                    __builtin_memcpy(out + i * s->ow + 2 * x, &row, sizeof row);
                }
            }
#endif
            for (; x < end; x++) {
                float m[4][4], v[2][2];
                for (int xi = 0; xi < 16; xi++) m[xi / 4][xi % 4] = from[xi * stride + (x - tx)];
                OUTPUT_TRANSFORM(float, m, v);
                for (int i = 0; i < 2 && oy + i < s->oh; i++) {
                    out[i * s->ow + 2 * x] = v[i][0] + b;
                    if (2 * x + 1 < s->ow) out[i * s->ow + 2 * x + 1] = v[i][1] + b;
                }
            }
            t += end - tx;
        }
    }
}

/* Batches [begin, end) of WINOGRAD_TILES tiles: their inputs transformed into the worker's V, the 16 products into
   its M, and those transformed into the output. U and the phases are shared, read only. */
typedef struct winograd_batches {
    const conv_shape *s;
    const winograd_layout *l;
    const float *bias;
    float *y;
    const ep_context *ctx;
    int64_t tasks;
} winograd_batches;

static void winograd_task(void *arg, int32_t worker, int64_t index) {
    const winograd_batches *b = (const winograd_batches *)arg;
    const conv_shape *s = b->s;
    winograd_layout l = *b->l;
    float *scratch = ep_worker_scratch(b->ctx, worker);
    l.v = scratch + (l.v - l.u);
    l.m = scratch + (l.m - l.u);
    ep_epilogue plain = {0, 1.0f, 0, EP_ACT_NONE, 0.0f, 0.0f};
    int64_t begin, end;
    ep_task_range(l.tiles, b->tasks, index, WINOGRAD_TILES, &begin, &end);
    for (int64_t t0 = begin; t0 < end; t0 += WINOGRAD_TILES) {
        int64_t count = end - t0 < WINOGRAD_TILES ? end - t0 : WINOGRAD_TILES;
        transform_input(s, &l, t0, count);
        /* the 16 transformed blocks (256 KB for 64 channels) are in L2, not L1: the product asks for rows ahead as
           on weights packed at plan time (asking for none, a 3x3 conv of 64 channels over 40x40 took 1.03 of the
           time, AMD EPYC, AVX2) */
        for (int xi = 0; xi < 16; xi++)
            ep_gemm_panels(s->mg, s->cg, count, l.u + xi * l.u_step, s->cg, 1, l.v + xi * l.v_step, WINOGRAD_TILES,
                           l.m + xi * l.m_step, WINOGRAD_TILES, &plain, 1);
        transform_output(s, &l, t0, count, b->bias, b->y);
    }
}

void ep_winograd(const conv_shape *s, const float *x, const float *w, const float *bias, float *y,
                 const ep_context *ctx) {
    winograd_layout l = layout_of(s);
    l.u = ctx->scratch;
    l.v = l.u + 16 * l.u_step;
    l.m = l.v + 16 * l.v_step;
    l.phases = l.m + 16 * l.m_step;
    transform_filters(s, w, l.u, l.u_step);
    /* the input zero-padded (2 th + 2 rows, 2 tw + 2 columns), split by column parity: plane (c, p) holds padded
       column 2 j + p at j, hp rows of `half` */
    ep_zero_padded_phases(s, x, 1, l.hp, l.half, l.phases, (size_t)(s->cg * 2 * l.hp * l.half));
    winograd_batches b = {s, &l, bias, y, ctx, 0};
    b.tasks = ep_task_count(ctx, (l.tiles + WINOGRAD_TILES - 1) / WINOGRAD_TILES,
                            (double)(16 * s->mg * s->cg * l.tiles));
    ep_parallel(ctx, b.tasks, winograd_task, &b);
    ep_activate_row(s->act, y, y, s->mg * s->oh * s->ow, s->act_a, s->act_b);
}
#endif
