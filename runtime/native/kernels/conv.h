/* The geometry a Conv or ConvTranspose reads from its node (conv.c), shared with the depthwise, narrow and Winograd
   kernels (depthwise.c, conv_narrow.c, winograd.c). */
#ifndef EP_CONV_H
#define EP_CONV_H

#include "gemm.h"

typedef struct conv_shape {
    int64_t n, c, h, w, m, oh, ow, group, cg, mg;
    int64_t kh, kw, sh, sw, pt, pl, dh, dw;
    int32_t act;
    float act_a, act_b;
} conv_shape;

/* The node's params: spatial rank, group, kernel h w, stride h w, pad top left, pad bottom right, dilation h w,
   activation, activation a, activation b; ConvTranspose's add output padding h w after them. */
#define EP_CONV_PARAMS 15
#define EP_CONV_TRANSPOSE_PARAMS 17

/* Reads and checks a Conv's (or, with `transpose`, a ConvTranspose's) geometry from its node. */
ep_status ep_conv_read_shape(const ep_node *n, conv_shape *s, uint32_t n_params, int transpose, char *error);

/* The smallest o >= 0 with o * stride + offset >= 0. */
static inline int64_t first_valid(int64_t offset, int64_t stride) {
    return offset >= 0 ? 0 : (-offset + stride - 1) / stride;
}

static inline int is_depthwise(const conv_shape *s) { return s->cg == 1 && s->mg == 1; }

/* The rows (or columns) of a zero-padded input that `out` outputs read: as far as their last tap reaches, or the
   padding before the input plus the input, whichever is more. */
static inline int64_t padded_extent(int64_t out, int64_t stride, int64_t kernel, int64_t dilation, int64_t pad,
                                    int64_t in) {
    int64_t reach = (out - 1) * stride + (kernel - 1) * dilation + 1;
    return reach > pad + in ? reach : pad + in;
}

/* Few output positions (under a panel's columns, and at most EP_CONV_NARROW_POSITIONS) and many output channels:
   dot products of each weight row with each position's taps (`ep_gemm_dot`, conv_narrow.c), nothing packed. With
   AVX-512's 32-column panels the product on packed panels is faster from 12 positions up though most of their
   columns are padding (0.75 to 0.84 of the time at 12 to 20), the dot products up to 9 (0.92 of it at 9, 0.2 at 3);
   with wasm's 8-column panels the dot products stay faster at 3 and 4 (silero-vad: 0.37x onnxruntime-web, 0.49
   packed). */
#define EP_CONV_NARROW_POSITIONS 10
static inline int ep_conv_is_narrow(const conv_shape *s) {
    int64_t positions = s->oh * s->ow;
    return positions < EP_GEMM_NR && positions <= EP_CONV_NARROW_POSITIONS && s->mg >= 2 * EP_GEMM_NR;
}

/* A narrow conv (ep_conv_is_narrow) of one group: x's im2col matrix transposed into the scratch, then each weight
   row's dot products with it, split into tasks by output channels. */
void ep_conv_narrow(const conv_shape *s, const float *xg, const float *wg, float *yg, const ep_epilogue *e,
                    const ep_context *ctx);

/* Everything of a plane of hp x wp floats but rows [pt, pt + h) by columns [pl, pl + w) zeroed: the padding around
   an input the caller copies in. */
void ep_zero_border(float *plane, int64_t hp, int64_t wp, int64_t pt, int64_t pl, int64_t h, int64_t w);

/* `planes` input planes of x copied into padded (planes of hp x wp, the input at row pt and column pl), the rest of
   its padded_floats zeroed (each float written once). */
void ep_zero_padded(const conv_shape *s, const float *x, int64_t planes, int64_t hp, int64_t wp, float *padded,
                    size_t padded_floats);

/* The input (cg channels) zero-padded (pads top and left) and split into phases: with `row_phases` 2, phase
   (r % 2, col % 2) holds padded element (r, col) at (r / 2, col / 2), four planes per channel; with 1, phase col % 2
   holds it at (r, col / 2), two planes per channel. Planes of hp x wp; the rest of `floats` is zeroed. */
void ep_zero_padded_phases(const conv_shape *s, const float *x, int64_t row_phases, int64_t hp, int64_t wp,
                           float *phases, size_t floats);

/* The n floats at src split: those at even offsets into even[0, 1, ...], those at odd offsets into odd. */
void ep_deinterleave(const float *src, int64_t n, float *even, float *odd);

/* The scratch a depthwise conv takes, in floats (0 for planes run in place). */
size_t ep_depthwise_scratch_floats(const conv_shape *s);
/* One image's depthwise conv, x into y: each channel's bias (bias may be NULL) plus the taps of its kernel in w, then
   the activation; channels split into tasks for the context's workers. */
void ep_depthwise(const conv_shape *s, const float *x, const float *w, const float *bias, float *y,
                  const ep_context *ctx);

/* 3x3 stride-1 convs (group 1, no dilation) whose 16 transformed filters take at most
   EP_WINOGRAD_MAX_WEIGHT_FLOATS run as Winograd F(2x2, 3x3) (winograd.c) in native builds where the kernel selection
   table measured for the CPU kind the core is compiled for says it is faster (kernel_choice.h, made from
   kernel_choice.toml; compiler/emitters/nn_ops.py reserves the scratch). The wasm core leaves it out: it would add
   8 KB to every page with a Conv. */
#define EP_WINOGRAD_MAX_WEIGHT_FLOATS ((int64_t)1 << 20)

#ifdef __wasm__
static inline int ep_winograd_applies(const conv_shape *s) {
    (void)s;
    return 0;
}
#else
int ep_winograd_applies(const conv_shape *s);
#endif
size_t ep_winograd_scratch_floats(const conv_shape *s);
/* One image's conv (group 1), x into y, through Winograd F(2x2, 3x3), then the activation; batches of tiles split
   into tasks for the context's workers. */
void ep_winograd(const conv_shape *s, const float *x, const float *w, const float *bias, float *y,
                 const ep_context *ctx);

#endif
