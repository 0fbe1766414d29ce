/* MatMul's shape rules and its product, shared by the ops that run as a MatMul after preparing their operands
   (RoundTripMatMul). */
#ifndef EP_MATMUL_H
#define EP_MATMUL_H

#include "gemm.h"

typedef struct matmul_shape {
    int64_t m, k, n, batch;
    int32_t batch_rank;
    int64_t batch_dims[EP_MAX_RANK], a_strides[EP_MAX_RANK], b_strides[EP_MAX_RANK];
} matmul_shape;

/* The shape of node n's product of in[0] by in[1] into out[0] (all float32), as MatMul's: numpy broadcasting over
   batch dims, 1-D operands. */
ep_status ep_matmul_shape(const ep_node *n, matmul_shape *s, char *error);

/* Where A's and B's matrices of the batch's `product`-th output matrix start, in elements. */
static inline void ep_matmul_offsets(const matmul_shape *s, int64_t product, int64_t *a_offset,
                                     int64_t *b_offset) {
    int64_t ao = 0, bo = 0, rest = product;
    for (int32_t d = s->batch_rank - 1; d >= 0; d--) {
        int64_t at = rest % s->batch_dims[d];
        rest /= s->batch_dims[d];
        ao += at * s->a_strides[d];
        bo += at * s->b_strides[d];
    }
    *a_offset = ao;
    *b_offset = bo;
}

/* C[M, N] (+)= alpha * A[M, K] x B[K, N], A and B strided, C's rows N apart, then the epilogue's bias and
   activation: columns split among the context's workers, B packed into their scratch or read in place. */
void ep_matmul_product(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, int64_t a_col, const float *b,
                       int64_t b_row, int64_t b_col, float *c, const ep_epilogue *e, const ep_context *ctx);

#endif
