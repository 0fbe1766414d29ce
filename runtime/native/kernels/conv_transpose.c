/* ConvTranspose (1-D and 2-D; grouped, dilated, padded; fused bias and activation): the product of the weights and
   the input, each column of it added to the output positions its taps reach. */
#include "conv.h"

static ep_status check_conv_transpose(const ep_node *n, size_t *scratch, char *error) {
    conv_shape s = {0};
    ep_status status = ep_conv_read_shape(n, &s, EP_CONV_TRANSPOSE_PARAMS, 1, error);
    if (status != EP_OK) return status;
    *scratch = (size_t)(s.cg + s.mg * s.kh * s.kw) * EP_GEMM_NR * sizeof(float);
    return EP_OK;
}

/* Adds each row (m, ky, kx) of the product block (input positions n0 .. n0 + nb) to the output positions its
   taps reach: along each input row's run of positions, the outputs inside are one strided stretch. */
static void scatter_columns(const conv_shape *s, const float *cols, int64_t rows, int64_t n0, int64_t nb, float *y) {
    int64_t ohw = s->oh * s->ow;
    for (int64_t r = 0; r < rows; r++) {
        int64_t m = r / (s->kh * s->kw), ky = r / s->kw % s->kh, kx = r % s->kw;
        float *plane = y + m * ohw;
        const float *src = cols + r * nb;
        int64_t iy = n0 / s->w, ix = n0 % s->w;
        for (int64_t j = 0; j < nb; iy++, ix = 0) {
            int64_t run = s->w - ix < nb - j ? s->w - ix : nb - j;
            int64_t oy = iy * s->sh - s->pt + ky * s->dh, ox0 = ix * s->sw - s->pl + kx * s->dw;
            if (oy >= 0 && oy < s->oh) {
                float *out = plane + oy * s->ow + ox0;
                int64_t lo = first_valid(ox0, s->sw);
                int64_t hi = s->ow - 1 - ox0 < 0 ? 0 : (s->ow - 1 - ox0) / s->sw + 1;
                hi = hi < run ? hi : run;
                for (int64_t t = lo; t < hi; t++) out[t * s->sw] += src[j + t];
            }
            j += run;
        }
    }
}

/* Whether each output position takes exactly one tap: the kernel is the stride, without padding or dilation, and the
   output is the input's size times the stride (an upsampling ConvTranspose). */
static int is_tiling(const conv_shape *s) {
    return s->kh == s->sh && s->kw == s->sw && s->dh == 1 && s->dw == 1 && s->pt == 0 && s->pl == 0 &&
           s->oh == s->h * s->sh && s->ow == s->w * s->sw;
}

/* scatter_columns for a tiling ConvTranspose: each row (m, ky, kx) of the product block is written to the output
   positions its taps reach, plus the bias, the kw rows of (m, ky) together along each input row's run, which is
   then one stretch of an output row, activated in place. */
static void place_columns(const conv_shape *s, const float *cols, int64_t rows, int64_t n0, int64_t nb,
                          const float *bias, float *y) {
    int64_t ohw = s->oh * s->ow, taps = s->kh * s->kw;
    for (int64_t r = 0; r < rows; r += s->kw) {
        int64_t m = r / taps, ky = r / s->kw % s->kh;
        float b = bias ? bias[m] : 0.0f;
        int64_t iy = n0 / s->w, ix = n0 % s->w;
        for (int64_t j = 0; j < nb; iy++, ix = 0) {
            int64_t run = s->w - ix < nb - j ? s->w - ix : nb - j;
            float *out = y + m * ohw + (iy * s->sh + ky) * s->ow + ix * s->sw;
            const float *src = cols + r * nb + j;
            if (s->sw == 2)
                for (int64_t t = 0; t < run; t++) {
                    out[2 * t] = src[t] + b;
                    out[2 * t + 1] = src[nb + t] + b;
                }
            else
                for (int64_t kx = 0; kx < s->kw; kx++)
                    for (int64_t t = 0; t < run; t++) out[t * s->sw + kx] = src[kx * nb + t] + b;
            ep_activate_row(s->act, out, out, run * s->sw, s->act_a, s->act_b);
            j += run;
        }
    }
}

/* One group's input positions [begin, end) in blocks: packed, multiplied by the weights, and each block's columns
   added (or, tiling, written) to the output positions they reach. Tiling, blocks write disjoint outputs, and the
   positions are split into tasks, each on its worker's scratch; else blocks may add to the same outputs, and one task
   takes them all. */
typedef struct transpose_blocks {
    const conv_shape *s;
    const float *xg, *wg, *bias;
    float *yg;
    const ep_context *ctx;
    int64_t block, tasks;
    int tiling;
} transpose_blocks;

static void transpose_task(void *arg, int32_t worker, int64_t index) {
    const transpose_blocks *t = (const transpose_blocks *)arg;
    const conv_shape *s = t->s;
    int64_t hw = s->h * s->w, rows = s->mg * s->kh * s->kw, begin, end;
    float *packed = ep_worker_scratch(t->ctx, worker), *cols = packed + s->cg * t->block;
    ep_epilogue e = {0, 1.0f, 0, EP_ACT_NONE, 0.0f, 0.0f};
    ep_task_range(hw, t->tasks, index, EP_GEMM_NR, &begin, &end);
    for (int64_t n0 = begin; n0 < end; n0 += t->block) {
        int64_t nb = end - n0 < t->block ? end - n0 : t->block;
        ep_pack_strided(packed, t->xg, s->cg, n0, nb, hw, 1);
        ep_gemm_packed(rows, s->cg, nb, t->wg, 1, rows, packed, cols, nb, &e);
        if (t->tiling) place_columns(s, cols, rows, n0, nb, t->bias, t->yg);
        else scatter_columns(s, cols, rows, n0, nb, t->yg);
    }
}

static ep_status run_conv_transpose(const ep_node *n, const ep_context *ctx) {
    conv_shape s = {0};
    char unused[EP_ERROR_CAPACITY];
    ep_conv_read_shape(n, &s, EP_CONV_TRANSPOSE_PARAMS, 1, unused);
    const float *x = (const float *)n->in[0]->data, *w = (const float *)n->in[1]->data;
    const float *bias = n->n_in > 2 && n->in[2] ? (const float *)n->in[2]->data : 0;
    float *y = (float *)n->out[0]->data;
    int64_t hw = s.h * s.w, ohw = s.oh * s.ow, rows = s.mg * s.kh * s.kw;
    transpose_blocks t = {&s, 0, 0, 0, 0, ctx, ep_gemm_block_columns(s.cg + rows, ctx->scratch_floats), 1,
                          is_tiling(&s)};
    if (t.tiling) t.tasks = ep_task_count(ctx, (hw + EP_GEMM_NR - 1) / EP_GEMM_NR, (double)(s.cg * rows * hw));
    for (int64_t b = 0; b < s.n; b++) {
        for (int64_t m = 0; m < s.m && !t.tiling; m++) {
            float v = bias ? bias[m] : 0.0f;
            float *plane = y + (b * s.m + m) * ohw;
            for (int64_t i = 0; i < ohw; i++) plane[i] = v;
        }
        for (int64_t g = 0; g < s.group; g++) {
            t.xg = x + (b * s.c + g * s.cg) * hw;
            t.wg = w + g * s.cg * rows;
            t.bias = bias ? bias + g * s.mg : 0;
            t.yg = y + (b * s.m + g * s.mg) * ohw;
            ep_parallel(ctx, t.tasks, transpose_task, &t);
        }
        if (!t.tiling) ep_activate_row(s.act, y + b * s.m * ohw, y + b * s.m * ohw, s.m * ohw, s.act_a, s.act_b);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_conv_transpose = {"ConvTranspose", check_conv_transpose, run_conv_transpose};
