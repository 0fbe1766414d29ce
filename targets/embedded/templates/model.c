/* @MODEL@.h over edgepack.h: one aligned allocation holds this struct and the session's memory. */
#include "@MODEL@.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct @MODEL@ {
    ep_session *session;
    void *owned_plan;     /* the plan read by @MODEL@_create_from_file, freed with the model */
    void *pool;           /* @MODEL@_set_threads' pool and its workers' scratch */
    void *worker_scratch;
};

#define HEAD_BYTES ((sizeof(@MODEL@) + EP_MEMORY_ALIGN - 1) / EP_MEMORY_ALIGN * EP_MEMORY_ALIGN)

static void say(char *error, const char *text, const char *detail) {
    if (error) snprintf(error, EP_ERROR_CAPACITY, "%s%s", text, detail);
}

static int same_port(const ep_tensor_info *info, const @MODEL@_tensor *port) {
    if (info->name_len != strlen(port->name) || memcmp(info->name, port->name, info->name_len) != 0 ||
        info->dtype != (int32_t)port->dtype || info->rank != port->rank || info->bytes != port->bytes)
        return 0;
    for (int32_t d = 0; d < port->rank; d++)
        if (info->dims[d] != port->dims[d]) return 0;
    return 1;
}

/* The plan must be the one this header was generated for: same inputs and outputs, same dtypes and shapes. */
static int plan_matches(const ep_session *session) {
    if (ep_input_count(session) != @PREFIX@_INPUT_COUNT || ep_output_count(session) != @PREFIX@_OUTPUT_COUNT)
        return 0;
    for (size_t i = 0; i < @PREFIX@_INPUT_COUNT; i++) {
        ep_tensor_info info;
        if (ep_input(session, i, &info) != EP_OK || !same_port(&info, &@MODEL@_inputs[i])) return 0;
    }
    for (size_t i = 0; i < @PREFIX@_OUTPUT_COUNT; i++) {
        ep_tensor_info info;
        if (ep_output(session, i, &info) != EP_OK || !same_port(&info, &@MODEL@_outputs[i])) return 0;
    }
    return 1;
}

ep_status @MODEL@_create(const void *plan, size_t plan_len, @MODEL@ **model, char *error) {
    size_t needed = 0;
    *model = NULL;
    ep_status status = ep_required_bytes(plan, plan_len, &needed);
    if (status != EP_OK) {
        say(error, "not a readable plan: ", ep_status_name(status));
        return status;
    }
    size_t total = HEAD_BYTES + (needed + EP_MEMORY_ALIGN - 1) / EP_MEMORY_ALIGN * EP_MEMORY_ALIGN;
    @MODEL@ *created = aligned_alloc(EP_MEMORY_ALIGN, total);
    if (!created) {
        say(error, "out of memory", "");
        return EP_ERR_MEMORY;
    }
    unsigned char *memory = (unsigned char *)created + HEAD_BYTES;
    created->owned_plan = NULL;
    created->pool = NULL;
    created->worker_scratch = NULL;
    status = ep_open(plan, plan_len, memory, total - HEAD_BYTES, &created->session);
    if (status != EP_OK) {
        say(error, "", ep_open_error(memory, total - HEAD_BYTES));
        free(created);
        return status;
    }
    if (!plan_matches(created->session)) {
        say(error, "the plan's inputs or outputs differ from @MODEL@.h: use the .epk built with this header", "");
        free(created);
        return EP_ERR_ARGUMENT;
    }
    *model = created;
    return EP_OK;
}

ep_status @MODEL@_create_from_file(const char *path, @MODEL@ **model, char *error) {
    *model = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) {
        say(error, "cannot open ", path);
        return EP_ERR_ARGUMENT;
    }
    long size = fseek(file, 0, SEEK_END) == 0 ? ftell(file) : -1;
    void *plan = size > 0 ? aligned_alloc(EP_MEMORY_ALIGN, ((size_t)size + EP_MEMORY_ALIGN - 1) / EP_MEMORY_ALIGN *
                                                                EP_MEMORY_ALIGN) : NULL;
    int read_ok = plan && fseek(file, 0, SEEK_SET) == 0 && fread(plan, 1, (size_t)size, file) == (size_t)size;
    fclose(file);
    if (!read_ok) {
        free(plan);
        say(error, "cannot read ", path);
        return EP_ERR_FORMAT;
    }
    ep_status status = @MODEL@_create(plan, (size_t)size, model, error);
    if (status != EP_OK) {
        free(plan);
        return status;
    }
    (*model)->owned_plan = plan;
    return EP_OK;
}

#ifdef @PREFIX@_EMBEDDED_PLAN
extern const unsigned char @MODEL@_plan[], @MODEL@_plan_end[];

ep_status @MODEL@_create_embedded(@MODEL@ **model, char *error) {
    return @MODEL@_create(@MODEL@_plan, (size_t)(@MODEL@_plan_end - @MODEL@_plan), model, error);
}
#endif

#ifdef @PREFIX@_THREADS
#include "ep_pool.h"

static void stop_threads(@MODEL@ *model) {
    ep_set_workers(model->session, NULL, NULL, 1, NULL, 0);
    ep_pool_destroy((ep_pool *)model->pool);
    free(model->worker_scratch);
    model->pool = NULL;
    model->worker_scratch = NULL;
}

ep_status @MODEL@_set_threads(@MODEL@ *model, int32_t threads, char *error) {
    if (threads < 1) {
        say(error, "threads must be 1 or more", "");
        return EP_ERR_ARGUMENT;
    }
    stop_threads(model);
    if (threads == 1) return EP_OK;
    size_t bytes = ep_worker_scratch_bytes(model->session) * (size_t)(threads - 1);
    model->pool = ep_pool_create(threads);
    if (bytes) model->worker_scratch = aligned_alloc(EP_MEMORY_ALIGN, (bytes + EP_MEMORY_ALIGN - 1) /
                                                                          EP_MEMORY_ALIGN * EP_MEMORY_ALIGN);
    if (!model->pool || (bytes && !model->worker_scratch)) {
        stop_threads(model);
        say(error, "cannot start the threads or allocate their scratch", "");
        return EP_ERR_MEMORY;
    }
    ep_status status = ep_set_workers(model->session, ep_pool_loop, model->pool, threads, model->worker_scratch,
                                      bytes);
    if (status != EP_OK) {
        say(error, "", ep_error(model->session));
        stop_threads(model);
    }
    return status;
}
#endif

ep_status @MODEL@_run(@MODEL@ *model) {
    return ep_run(model->session);
}

const char *@MODEL@_error(const @MODEL@ *model) {
    return ep_error(model->session);
}

void @MODEL@_destroy(@MODEL@ *model) {
    if (!model) return;
#ifdef @PREFIX@_THREADS
    stop_threads(model);
#endif
    free(model->owned_plan);
    free(model);
}

void *@MODEL@_input_data(@MODEL@ *model, size_t index) {
    ep_tensor_info info;
    return ep_input(model->session, index, &info) == EP_OK ? info.data : NULL;
}

const void *@MODEL@_output_data(const @MODEL@ *model, size_t index) {
    ep_tensor_info info;
    return ep_output(model->session, index, &info) == EP_OK ? info.data : NULL;
}

@DEFINITIONS@
