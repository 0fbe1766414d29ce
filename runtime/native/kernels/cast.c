/* Cast between any two dtypes the core holds: integers and bools exactly through their 64 bits (narrowing keeps the
   low bits), anything with a float through a double with ONNX's rounding (to nearest even; float8 saturates unless
   the op's parameter says not to; floats to integers truncate and saturate). */
#include "../ep_internal.h"

static ep_status check_cast(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params > 1) return ep_fail(error, n, ": bad parameters");
    if (n->in[0]->count != n->out[0]->count) return ep_fail(error, n, ": element counts differ");
    if (n->out[0]->dtype == EP_F8E8M0) return ep_fail(error, n, ": no cast to float8 e8m0");
    return EP_OK;
}

static ep_status run_cast(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int saturate = n->n_params ? n->params[0] != 0 : 1;
    if (x->dtype == y->dtype) {
        ep_memcpy(y->data, x->data, y->bytes);
    } else if (!ep_dtype_is_float(x->dtype) && !ep_dtype_is_float(y->dtype)) {
        for (int64_t i = 0; i < y->count; i++) ep_store_int(y->data, y->dtype, i, ep_load_int(x->data, x->dtype, i));
    } else {
        for (int64_t i = 0; i < y->count; i++)
            ep_store_real(y->data, y->dtype, i, ep_load_real(x->data, x->dtype, i), saturate);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_cast = {"Cast", check_cast, run_cast};
