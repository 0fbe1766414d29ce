/* Convs with few output positions and many output channels (ep_conv_is_narrow): dot products, nothing packed. */
#include "conv.h"

/* The whole im2col matrix, transposed (OH*OW x K: each output position's taps contiguous): the narrow case's
   right operand. */
static void im2col_transposed(float *col, const float *x, const conv_shape *s) {
    int64_t k = s->cg * s->kh * s->kw, kk = 0;
    for (int64_t c = 0; c < s->cg; c++)
        for (int64_t ky = 0; ky < s->kh; ky++)
            for (int64_t kx = 0; kx < s->kw; kx++, kk++)
                for (int64_t oy = 0; oy < s->oh; oy++) {
                    int64_t iy = oy * s->sh - s->pt + ky * s->dh;
                    int row_inside = iy >= 0 && iy < s->h;
                    const float *row = x + (c * s->h + (row_inside ? iy : 0)) * s->w;
                    float *out = col + oy * s->ow * k + kk;
                    for (int64_t ox = 0; ox < s->ow; ox++) {
                        int64_t ix = ox * s->sw - s->pl + kx * s->dw;
                        out[ox * k] = row_inside && ix >= 0 && ix < s->w ? row[ix] : 0.0f;
                    }
                }
}

/* Rows [begin, end) of a narrow conv's product: its weight rows' dot products with the im2col matrix's rows. */
typedef struct narrow_rows {
    const conv_shape *s;
    const float *wg, *col;
    float *yg;
    const ep_epilogue *e;
    int64_t tasks;
} narrow_rows;

static void narrow_task(void *arg, int32_t worker, int64_t index) {
    const narrow_rows *r = (const narrow_rows *)arg;
    const conv_shape *s = r->s;
    int64_t ohw = s->oh * s->ow, k = s->cg * s->kh * s->kw, begin, end;
    (void)worker;
    ep_task_range(s->mg, r->tasks, index, EP_GEMM_MR, &begin, &end);
    ep_epilogue e = *r->e;
    if (e.row_bias) e.row_bias += begin;
    ep_gemm_dot(end - begin, ohw, k, r->wg + begin * k, r->col, k, r->yg + begin * ohw, ohw, 1, &e);
}

void ep_conv_narrow(const conv_shape *s, const float *xg, const float *wg, float *yg, const ep_epilogue *e,
                    const ep_context *ctx) {
    int64_t ohw = s->oh * s->ow, k = s->cg * s->kh * s->kw;
    im2col_transposed(ctx->scratch, xg, s);
    narrow_rows r = {s, wg, ctx->scratch, yg, e, 0};
    r.tasks = ep_task_count(ctx, (s->mg + EP_GEMM_MR - 1) / EP_GEMM_MR, (double)(s->mg * k * ohw));
    ep_parallel(ctx, r.tasks, narrow_task, &r);
}
