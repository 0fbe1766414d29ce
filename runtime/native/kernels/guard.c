/* Guard: a plan lowered for one value of a model input (one that shapes other tensors: a Reshape's shape, a
   reduction's axes, Resize's scales) checks at each run that the input still holds that value. */
#include "../ep_internal.h"

static ep_status check_guard(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 0, error);
    if (status != EP_OK) return status;
    const ep_tensor *input = n->in[0], *expected = n->in[1];
    if (input->dtype != expected->dtype || input->bytes != expected->bytes || expected->location != EP_LOCATION_WEIGHT)
        return ep_fail(error, n, ": the input and the value it must hold differ in dtype or size");
    return EP_OK;
}

static ep_status run_guard(const ep_node *n, const ep_context *c) {
    const uint8_t *input = (const uint8_t *)n->in[0]->data, *expected = (const uint8_t *)n->in[1]->data;
    for (size_t i = 0; i < n->in[1]->bytes; i++) {
        if (input[i] != expected[i]) {
            ep_message(c->error, "a model input that shapes other tensors differs from the value this plan was "
                       "lowered for; lower the model again for this value", "", -1);
            return EP_ERR_RUNTIME;
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_guard = {"Guard", check_guard, run_guard};
