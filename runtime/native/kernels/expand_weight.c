/* ExpandWeight: a quantized weight (int8 or int4 with its scales, or float16) as float32, once, when the session
   opens: the plan's first ops (the header's open_ops) are these, and their outputs stay live for the session, so
   the ops that read them run at float32 speed from int8, int4 or float16 weights in the plan.
   Inputs: W (a weight), its scales (absent for float16); params axis, block (as a weight slot's); out float32, W's
   shape. */
#include "dequantize.h"

static ep_status check_expand_weight(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 1, 2, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *w = n->in[0], *scale = n->n_in > 1 ? n->in[1] : 0, *y = n->out[0];
    if (!w || w->location != EP_LOCATION_WEIGHT || (scale && scale->location != EP_LOCATION_WEIGHT))
        return ep_fail(error, n, ": the weight and its scales must be plan weights");
    if (n->n_params != 2) return ep_fail(error, n, ": bad params");
    if (w->dtype == EP_F32) return ep_fail(error, n, ": the weight is float32 already");
    status = ep_check_quantized_weight(n, w, scale, n->params[0], n->params[1], error);
    if (status != EP_OK) return status;
    if (y->dtype != EP_F32 || !ep_same_shape(y, w))
        return ep_fail(error, n, ": the output is not float32 of W's shape");
    *scratch = 0;
    return EP_OK;
}

static ep_status run_expand_weight(const ep_node *n, const ep_context *ctx) {
    (void)ctx;
    ep_dequantize(n->in[0], n->n_in > 1 ? n->in[1] : 0, n->params[0], n->params[1], (float *)n->out[0]->data);
    return EP_OK;
}

const ep_kernel ep_kernel_expand_weight = {"ExpandWeight", check_expand_weight, run_expand_weight};
