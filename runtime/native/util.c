/* Helpers shared by the loader and the kernels: messages, parameter access, memory copies. */
#include "ep_internal.h"

static size_t append(char *error, size_t at, const char *text) {
    while (text && *text && at + 1 < EP_ERROR_CAPACITY) error[at++] = *text++;
    error[at] = 0;
    return at;
}

void ep_message(char *error, const char *a, const char *b, int64_t number) {
    size_t at = append(error, 0, a);
    at = append(error, at, b);
    if (number >= 0) {
        char digits[24];
        int n = 0;
        uint64_t value = (uint64_t)number;
        do {
            digits[n++] = (char)('0' + value % 10);
            value /= 10;
        } while (value && n < 23);
        char text[24];
        for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
        text[n] = 0;
        at = append(error, at, " ");
        append(error, at, text);
    }
}

ep_status ep_fail(char *error, const ep_node *node, const char *what) {
    const ep_kernel *kernel = ep_kernel_for(node->id);
    ep_message(error, kernel ? kernel->name : "op", what, -1);
    return EP_ERR_OP;
}

double ep_double_from_bits(uint64_t bits) {
    double value;
    ep_memcpy(&value, &bits, sizeof value);
    return value;
}

float ep_param_f32(const ep_node *node, uint32_t index) {
    float value;
    ep_memcpy(&value, &node->params[index], sizeof value);
    return value;
}

int ep_same_shape(const ep_tensor *a, const ep_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

ep_status ep_expect(const ep_node *node, uint32_t min_in, uint32_t max_in, uint32_t n_out, char *error) {
    if (node->n_in < min_in || node->n_in > max_in || node->n_out != n_out)
        return ep_fail(error, node, ": wrong number of inputs or outputs");
    for (uint32_t i = 0; i < min_in; i++)
        if (!node->in[i]) return ep_fail(error, node, ": a required input is absent");
    return EP_OK;
}
