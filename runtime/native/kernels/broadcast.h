/* Numpy-style broadcasting: per-input strides over the output's shape, with adjacent axes merged. */
#ifndef EP_BROADCAST_H
#define EP_BROADCAST_H

#include "../ep_internal.h"

#define EP_BROADCAST_MAX_INPUTS 3

typedef struct ep_broadcast {
    int32_t rank;
    int32_t n_inputs;
    int64_t dims[EP_MAX_RANK];
    int64_t strides[EP_BROADCAST_MAX_INPUTS][EP_MAX_RANK];
} ep_broadcast;

/* Whether `in` broadcasts to `out`: right-aligned, each dim equal to out's or 1. */
int ep_broadcasts_to(const ep_tensor *in, const ep_tensor *out);
void ep_broadcast_plan(ep_broadcast *b, const ep_tensor *out, const ep_tensor *const *inputs, int32_t n_inputs);

/* Calls body(outer_offset_out, offsets..., inner_length, inner_strides...) over all rows of the output. */
typedef struct ep_row {
    int64_t out;
    int64_t in[EP_BROADCAST_MAX_INPUTS];
    int64_t length;
    int64_t step[EP_BROADCAST_MAX_INPUTS];
} ep_row;

/* Iterates rows: call ep_row_first, then ep_row_next until it returns 0. */
int ep_row_first(const ep_broadcast *b, ep_row *row, int64_t *counter);
int ep_row_next(const ep_broadcast *b, ep_row *row, int64_t *counter);
/* Trims `row` to the output elements [begin, end) (the inputs' offsets moved alike); 0 when none of it is left. */
int ep_row_clip(ep_row *row, int32_t n_inputs, int64_t begin, int64_t end);

#endif
