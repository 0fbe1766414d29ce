/* Quantized weights (int8 or packed int4 with float32 or float16 scales; float16 with none) under Conv,
   ConvTranspose, MatMul, Gemm, LSTM and PackedMatMul. A quantized op carries, after its own inputs and parameters,
   one scale input and two parameter words (axis, block size; 0 = one scale per index along the axis) per weight
   slot; EPK.md gives the layouts. Each call dequantizes its weights into the head of the scratch, as ONNX
   DequantizeLinear computes them (rounded to float16 when the scales are float16; float16 weights widened exactly),
   and runs the float kernel on them with the rest of the scratch; PackedMatMul dequantizes one panel of B at a time,
   just before the product reads it (the panel stays in cache, and no call writes the whole float weight). Plans
   whose memory allows it expand their weights once, when the session opens (ExpandWeight), and these ops then see
   float32 weights. */
#include "dequantize.h"
#include "gemm.h"

extern const ep_kernel ep_kernel_conv, ep_kernel_conv_transpose, ep_kernel_matmul, ep_kernel_gemm, ep_kernel_lstm,
    ep_kernel_packed_matmul;

#define MAX_SLOTS 2
#define MAX_INPUTS 8

typedef struct slots {
    uint32_t own_inputs, own_params, count;
    uint32_t input[MAX_SLOTS];
} slots;

static const slots *slots_of(uint32_t id) {
    static const slots table[] = {
        {EP_OP_CONV_SLOTS}, {EP_OP_CONV_TRANSPOSE_SLOTS}, {EP_OP_MAT_MUL_SLOTS}, {EP_OP_GEMM_SLOTS}, {EP_OP_LSTM_SLOTS},
        {EP_OP_PACKED_MAT_MUL_SLOTS},
    };
    switch (id) {
    case EP_OP_CONV: return &table[0];
    case EP_OP_CONV_TRANSPOSE: return &table[1];
    case EP_OP_MAT_MUL: return &table[2];
    case EP_OP_GEMM: return &table[3];
    case EP_OP_LSTM: return &table[4];
    case EP_OP_PACKED_MAT_MUL: return &table[5];
    }
    return 0;
}

static int is_quantized_form(const ep_node *n, const slots *s) {
    return n->n_in == s->own_inputs + s->count && n->n_params == s->own_params + 2 * s->count;
}

/* Floats a dequantized weight takes in the scratch (a multiple of 16, so the next one stays aligned). */
static size_t scratch_floats(const ep_tensor *w) { return ((size_t)w->count + 15) / 16 * 16; }

/* The node the float kernel sees: quantized weights replaced by float32 views (data in the scratch when running),
   scale inputs and quantization words dropped. */
static void float_view(const ep_node *n, const slots *s, ep_node *view, ep_tensor *tensors, ep_tensor **inputs) {
    *view = *n;
    view->n_in = s->own_inputs;
    view->n_params = s->own_params;
    view->in = inputs;
    for (uint32_t i = 0; i < s->own_inputs; i++) inputs[i] = n->in[i];
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        if (!w || w->dtype == EP_F32) continue;
        tensors[k] = *w;
        tensors[k].dtype = EP_F32;
        tensors[k].bytes = (size_t)w->count * sizeof(float);
        tensors[k].data = 0;
        inputs[s->input[k]] = &tensors[k];
    }
}

static ep_status check_quantized(const ep_kernel *inner, const ep_node *n, size_t *scratch, char *error) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return inner->check(n, scratch, error);
    size_t floats = 0;
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        int32_t axis = n->params[s->own_params + 2 * k], block = n->params[s->own_params + 2 * k + 1];
        ep_status status = ep_check_quantized_weight(n, w, n->in[s->own_inputs + k], axis, block, error);
        if (status != EP_OK) return status;
        if (w && w->dtype != EP_F32) floats += scratch_floats(w);
    }
    ep_node view;
    ep_tensor tensors[MAX_SLOTS];
    ep_tensor *inputs[MAX_INPUTS];
    float_view(n, s, &view, tensors, inputs);
    ep_status status = inner->check(&view, scratch, error);
    *scratch += floats * sizeof(float);
    return status;
}

static ep_status run_quantized(const ep_kernel *inner, const ep_node *n, const ep_context *ctx) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return inner->run(n, ctx);
    ep_node view;
    ep_tensor tensors[MAX_SLOTS];
    ep_tensor *inputs[MAX_INPUTS];
    float_view(n, s, &view, tensors, inputs);
    size_t used = 0;
    for (uint32_t k = 0; k < s->count; k++) {
        const ep_tensor *w = n->in[s->input[k]];
        if (!w || w->dtype == EP_F32) continue;
        tensors[k].data = ctx->scratch + used;
        ep_dequantize(w, n->in[s->own_inputs + k], n->params[s->own_params + 2 * k],
                   n->params[s->own_params + 2 * k + 1], ctx->scratch + used);
        used += scratch_floats(w);
    }
    ep_context rest = *ctx;
    rest.scratch += used;
    rest.scratch_floats -= used;
    return inner->run(&view, &rest);
}

/* PackedMatMul's B ([P, K, 32] panels) quantized: float16, or integers with scales blocked along K per column
   ([P, K / block, 32], axis 1), so that each panel dequantizes on its own. */
static ep_status check_packed_matmul(const ep_node *n, size_t *scratch, char *error) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s)) return ep_kernel_packed_matmul.check(n, scratch, error);
    const ep_tensor *w = n->in[1], *scale = n->in[s->own_inputs];
    int32_t axis = n->params[s->own_params], block = n->params[s->own_params + 1];
    ep_status status = check_quantized(&ep_kernel_packed_matmul, n, scratch, error);
    if (status != EP_OK) return status;
    if (w->dtype != EP_F32 && w->dtype != EP_F16 &&
        (axis != 1 || !block || scale->dims[0] != w->dims[0] || scale->dims[2] != w->dims[2]))
        return ep_fail(error, n, ": quantized panels need scales blocked along K, per panel column");
    if (w->dtype != EP_F32) *scratch = (size_t)w->dims[1] * w->dims[2] * sizeof(float);
    return EP_OK;
}

/* An int8 panel (K rows of 32) times its float32 scales (one row of 32 per `block` rows) in one pass: the same
   products as widen then scale, each row a vector loop. */
static void int8_panel(const int8_t *q, const float *steps, int64_t k, int64_t block, float *out) {
    for (int64_t kk = 0; kk < k; kk++) {
        const float *step = steps + kk / block * EP_PREPACKED_COLUMNS;
        const int8_t *row = q + kk * EP_PREPACKED_COLUMNS;
        float *to = out + kk * EP_PREPACKED_COLUMNS;
        for (int32_t j = 0; j < EP_PREPACKED_COLUMNS; j++) to[j] = (float)row[j] * step[j];
    }
}

typedef struct panel_source {
    const ep_tensor *w, *scale;
    int32_t axis, block;
} panel_source;

static const float *dequantized_panel(void *state, int64_t p, float *out) {
    panel_source *src = (panel_source *)state;
    const ep_tensor *w = src->w;
    int64_t floats = w->dims[1] * w->dims[2];
    ep_tensor panel = *w, scale = {0};
    panel.dims[0] = 1;
    panel.count = floats;
    panel.data = (char *)w->data + (size_t)(p * floats * ep_dtype_bits(w->dtype) / 8);
    if (src->scale) {
        scale = *src->scale;
        scale.dims[0] = 1;
        scale.count = scale.dims[1] * scale.dims[2];
        scale.data = (char *)scale.data + (size_t)(p * scale.count * ep_dtype_bits(scale.dtype) / 8);
    }
    if (w->dtype == EP_I8 && scale.dtype == EP_F32)
        int8_panel((const int8_t *)panel.data, (const float *)scale.data, w->dims[1], src->block, out);
    else
        ep_dequantize(&panel, src->scale ? &scale : 0, src->axis, src->block, out);
    return out;
}

static ep_status run_packed_matmul(const ep_node *n, const ep_context *ctx) {
    const slots *s = slots_of(n->id);
    if (!is_quantized_form(n, s) || n->in[1]->dtype == EP_F32) return run_quantized(&ep_kernel_packed_matmul, n, ctx);
    panel_source src = {n->in[1], n->in[s->own_inputs], n->params[s->own_params], n->params[s->own_params + 1]};
    ep_packed_matmul(n, dequantized_panel, &src, ctx);
    return EP_OK;
}

int ep_weight_only_read(const ep_node *n, uint32_t input) {
    const slots *s = slots_of(n->id);
    if (!s || !is_quantized_form(n, s)) return 0;
    for (uint32_t k = 0; k < s->count; k++)
        if (input == s->input[k] || input == s->own_inputs + k) return 1;
    return 0;
}

/* Each op's kernel with quantized weights names its float kernel only: a core whose registry leaves the op out
   (a per-model core) links neither. */
#define WEIGHTS_ENTRY_POINTS(op, inner)                                                                            \
    static ep_status check_##op(const ep_node *n, size_t *scratch, char *error) {                                 \
        return check_quantized(&inner, n, scratch, error);                                                         \
    }                                                                                                              \
    static ep_status run_##op(const ep_node *n, const ep_context *ctx) { return run_quantized(&inner, n, ctx); }

WEIGHTS_ENTRY_POINTS(conv, ep_kernel_conv)
WEIGHTS_ENTRY_POINTS(conv_transpose, ep_kernel_conv_transpose)
WEIGHTS_ENTRY_POINTS(matmul, ep_kernel_matmul)
WEIGHTS_ENTRY_POINTS(gemm, ep_kernel_gemm)
WEIGHTS_ENTRY_POINTS(lstm, ep_kernel_lstm)

const ep_kernel ep_kernel_conv_weights = {"Conv", check_conv, run_conv};
const ep_kernel ep_kernel_conv_transpose_weights = {"ConvTranspose", check_conv_transpose, run_conv_transpose};
const ep_kernel ep_kernel_matmul_weights = {"MatMul", check_matmul, run_matmul};
const ep_kernel ep_kernel_gemm_weights = {"Gemm", check_gemm, run_gemm};
const ep_kernel ep_kernel_lstm_weights = {"LSTM", check_lstm, run_lstm};
const ep_kernel ep_kernel_packed_matmul_weights = {"PackedMatMul", check_packed_matmul, run_packed_matmul};
