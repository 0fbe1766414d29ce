/* Control flow for If: SkipUnless jumps over the then-branch when the condition is false, Skip jumps over the
   else-branch at the end of the then-branch. The executor does the jumping; the loader checks the targets. Fail
   stands for a branch that could not be lowered at the plan's input shapes: taking it is a run-time error. */
#include "../ep_internal.h"

static ep_status check_skip_unless(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    if (n->n_in != 1 || n->n_out != 0 || !n->in[0] || n->in[0]->dtype != EP_BOOL || n->in[0]->count < 1)
        return ep_fail(error, n, ": needs one bool condition and no outputs");
    return EP_OK;
}

static ep_status check_skip(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    if (n->n_in != 0 || n->n_out != 0) return ep_fail(error, n, ": takes no tensors");
    return EP_OK;
}

static ep_status run_nothing(const ep_node *n, const ep_context *c) {
    (void)n;
    (void)c;
    return EP_OK;
}

static ep_status run_fail(const ep_node *n, const ep_context *c) {
    (void)n;
    ep_message(c->error, "this If branch cannot run at the input shapes the plan was lowered for", "", -1);
    return EP_ERR_RUNTIME;
}

const ep_kernel ep_kernel_fail = {"Fail", check_skip, run_fail};
const ep_kernel ep_kernel_skip_unless = {"SkipUnless", check_skip_unless, run_nothing};
const ep_kernel ep_kernel_skip = {"Skip", check_skip, run_nothing};
