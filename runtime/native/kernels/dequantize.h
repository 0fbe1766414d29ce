/* Quantized weights as floats (dequantize.c). */
#ifndef EP_DEQUANTIZE_H
#define EP_DEQUANTIZE_H

#include "../ep_internal.h"

/* Checks a weight slot: a float32 or float16 weight with no scale, axis or block, or an int8/int4 one with float32 or
   float16 scales, one per index along `axis` (`block` 0) or [outer, blocks, inner] for blocks of `block` along it.
   An absent weight has none of them. */
ep_status ep_check_quantized_weight(const ep_node *n, const ep_tensor *w, const ep_tensor *scale, int32_t axis,
                                    int32_t block, char *error);

/* The whole weight as DequantizeLinear computes it into `out` (w->count floats): rounded to float16 when the scales
   are float16; a float16 weight widened exactly. Per axis: scale[axis index]; blocked: the weight in flat order is
   [outer, length, inner] and its scale is [outer, length / block, inner]. */
void ep_dequantize(const ep_tensor *w, const ep_tensor *scale, int32_t axis, int32_t block, float *out);

#endif
