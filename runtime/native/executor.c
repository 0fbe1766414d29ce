/* Executor: runs a checked plan op by op (its open ops once, from ep_open; the rest at each ep_run), and gives access
   to its inputs and outputs. */
#include "ep_internal.h"

#ifdef EP_PROFILE
/* A profiling build (-DEP_PROFILE) times each op it runs with these two, which the program linking it defines. An
   op's time runs from the end of the op before it (or the start of the run) to its own end: its dispatch, and any
   skip before it, count with it, so the ops' times add up to the run's. */
uint64_t ep_profile_now(void);
void ep_profile_op(uint32_t index, uint32_t op, uint64_t nanoseconds);
#endif

static ep_status failed(ep_session *s, ep_status status, uint32_t op) {
    char detail[EP_ERROR_CAPACITY];
    ep_memcpy(detail, s->error, EP_ERROR_CAPACITY);
    ep_message(s->error, detail, " (op", op);
    return status;
}

ep_status ep_run_open_ops(ep_session *s) {
    ep_context context = ep_context_of(s);
    for (uint32_t i = 0; i < s->open_ops; i++) {
        ep_status status = ep_kernel_for(s->nodes[i].id)->run(&s->nodes[i], &context);
        if (status != EP_OK) return failed(s, status, i);
    }
    return EP_OK;
}

ep_status ep_run(ep_session *s) {
    if (!s) return EP_ERR_ARGUMENT;
    s->error[0] = 0;
    ep_context context = ep_context_of(s);
#ifdef EP_PROFILE
    uint64_t last = ep_profile_now();
#endif
    for (uint32_t i = s->open_ops; i < s->n_ops; i++) {
        const ep_node *n = &s->nodes[i];
        if (n->id == EP_OP_SKIP) {
            i += (uint32_t)n->params[0];
            continue;
        }
        if (n->id == EP_OP_SKIP_UNLESS) {
            if (!*(const uint8_t *)n->in[0]->data) i += (uint32_t)n->params[0];
            continue;
        }
        ep_status status = ep_kernel_for(n->id)->run(n, &context);
#ifdef EP_PROFILE
        uint64_t now = ep_profile_now();
        ep_profile_op(i, n->id, now - last);
        last = now;
#endif
        if (status != EP_OK) return failed(s, status, i);
    }
    return EP_OK;
}

const char *ep_error(const ep_session *s) { return s ? s->error : ""; }

size_t ep_input_count(const ep_session *s) { return s ? s->n_inputs : 0; }

size_t ep_output_count(const ep_session *s) { return s ? s->n_outputs : 0; }

static void describe(const ep_tensor *t, ep_tensor_info *info) {
    info->name = t->name;
    info->name_len = t->name_len;
    info->dtype = t->dtype;
    info->rank = t->rank;
    for (int32_t d = 0; d < EP_MAX_RANK; d++) info->dims[d] = d < t->rank ? t->dims[d] : 0;
    info->bytes = t->bytes;
    info->data = t->data;
}

ep_status ep_input(const ep_session *s, size_t index, ep_tensor_info *info) {
    if (!s || !info || index >= s->n_inputs) return EP_ERR_ARGUMENT;
    describe(s->inputs[index], info);
    return EP_OK;
}

ep_status ep_output(const ep_session *s, size_t index, ep_tensor_info *info) {
    if (!s || !info || index >= s->n_outputs) return EP_ERR_ARGUMENT;
    describe(s->outputs[index], info);
    return EP_OK;
}

static int32_t find(ep_tensor *const *list, uint32_t count, const char *name, size_t name_len) {
    if (!name) return -1;
    for (uint32_t i = 0; i < count; i++) {
        const ep_tensor *t = list[i];
        if (t->name_len != name_len) continue;
        size_t k = 0;
        while (k < name_len && t->name[k] == name[k]) k++;
        if (k == name_len) return (int32_t)i;
    }
    return -1;
}

int32_t ep_input_index(const ep_session *s, const char *name, size_t name_len) {
    return s ? find(s->inputs, s->n_inputs, name, name_len) : -1;
}

int32_t ep_output_index(const ep_session *s, const char *name, size_t name_len) {
    return s ? find(s->outputs, s->n_outputs, name, name_len) : -1;
}

const char *ep_status_name(ep_status status) {
    switch (status) {
    case EP_OK: return "ok";
    case EP_ERR_ARGUMENT: return "bad argument";
    case EP_ERR_FORMAT: return "bad format";
    case EP_ERR_BOUNDS: return "out of bounds";
    case EP_ERR_TENSOR: return "bad tensor";
    case EP_ERR_OP: return "bad op";
    case EP_ERR_MEMORY: return "memory";
    case EP_ERR_RUNTIME: return "runtime error";
    }
    return "unknown status";
}
