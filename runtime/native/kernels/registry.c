/* The one table from op id to kernel (checker + runner). */
#include "../ep_internal.h"

extern const ep_kernel ep_kernel_copy, ep_kernel_skip_unless, ep_kernel_skip, ep_kernel_binary, ep_kernel_unary,
    ep_kernel_pool, ep_kernel_softmax, ep_kernel_reduce, ep_kernel_transpose, ep_kernel_concat, ep_kernel_split,
    ep_kernel_slice, ep_kernel_gather, ep_kernel_pad, ep_kernel_resize, ep_kernel_channel_affine, ep_kernel_layer_norm,
    ep_kernel_cast, ep_kernel_where, ep_kernel_expand, ep_kernel_arg_extreme, ep_kernel_fail;
/* Ops with weight slots: float32 weights, or quantized ones (quant.c). */
extern const ep_kernel ep_kernel_conv_weights, ep_kernel_conv_transpose_weights, ep_kernel_matmul_weights,
    ep_kernel_gemm_weights, ep_kernel_lstm_weights;

const ep_kernel *ep_kernel_for(uint32_t op_id) {
    static const ep_kernel *const table[EP_OP_COUNT] = {
        [EP_OP_COPY] = &ep_kernel_copy,
        [EP_OP_SKIP_UNLESS] = &ep_kernel_skip_unless,
        [EP_OP_SKIP] = &ep_kernel_skip,
        [EP_OP_BINARY] = &ep_kernel_binary,
        [EP_OP_UNARY] = &ep_kernel_unary,
        [EP_OP_CONV] = &ep_kernel_conv_weights,
        [EP_OP_CONV_TRANSPOSE] = &ep_kernel_conv_transpose_weights,
        [EP_OP_MATMUL] = &ep_kernel_matmul_weights,
        [EP_OP_GEMM] = &ep_kernel_gemm_weights,
        [EP_OP_POOL] = &ep_kernel_pool,
        [EP_OP_SOFTMAX] = &ep_kernel_softmax,
        [EP_OP_REDUCE] = &ep_kernel_reduce,
        [EP_OP_TRANSPOSE] = &ep_kernel_transpose,
        [EP_OP_CONCAT] = &ep_kernel_concat,
        [EP_OP_SPLIT] = &ep_kernel_split,
        [EP_OP_SLICE] = &ep_kernel_slice,
        [EP_OP_GATHER] = &ep_kernel_gather,
        [EP_OP_PAD] = &ep_kernel_pad,
        [EP_OP_RESIZE] = &ep_kernel_resize,
        [EP_OP_CHANNEL_AFFINE] = &ep_kernel_channel_affine,
        [EP_OP_LAYER_NORM] = &ep_kernel_layer_norm,
        [EP_OP_CAST] = &ep_kernel_cast,
        [EP_OP_WHERE] = &ep_kernel_where,
        [EP_OP_EXPAND] = &ep_kernel_expand,
        [EP_OP_LSTM] = &ep_kernel_lstm_weights,
        [EP_OP_ARG_EXTREME] = &ep_kernel_arg_extreme,
        [EP_OP_FAIL] = &ep_kernel_fail,
    };
    return op_id < EP_OP_COUNT ? table[op_id] : 0;
}
