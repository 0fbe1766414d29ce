/* Control flow for If: SkipUnless jumps over the then-branch when the condition is false, Skip jumps over the
   else-branch at the end of the then-branch. The executor does the jumping; the loader checks the targets. */
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

const ep_kernel ep_kernel_skip_unless = {"SkipUnless", check_skip_unless, run_nothing};
const ep_kernel ep_kernel_skip = {"Skip", check_skip, run_nothing};
