/* A session's workers (ep_set_workers) and the helpers kernels split their work with. */
#include "ep_internal.h"

/* The least work worth a task of its own: about 3 us at one core's peak, ten times what waking a spinning worker
   and joining it costs. */
#define EP_TASK_FMAS 65536.0

static size_t worker_scratch_bytes(const ep_session *s) {
    return (s->scratch_bytes + EP_MEMORY_ALIGN - 1) / EP_MEMORY_ALIGN * EP_MEMORY_ALIGN;
}

size_t ep_worker_scratch_bytes(const ep_session *s) { return s ? worker_scratch_bytes(s) : 0; }

ep_status ep_set_workers(ep_session *s, ep_parallel_loop loop, void *pool, int32_t workers, void *memory,
                         size_t memory_len) {
    if (!s || workers < 1 || (workers > 1 && !loop)) return EP_ERR_ARGUMENT;
    size_t needed = worker_scratch_bytes(s);
    if (workers > 1 && needed &&
        (!memory || (uintptr_t)memory % EP_MEMORY_ALIGN || memory_len / (size_t)(workers - 1) < needed)) {
        ep_message(s->error, "the workers' scratch memory is too small or misaligned; bytes needed:", "",
                   (int64_t)(needed * (size_t)(workers - 1)));
        return EP_ERR_MEMORY;
    }
    s->loop = workers > 1 ? loop : 0;
    s->pool = workers > 1 ? pool : 0;
    s->workers = workers;
    s->worker_scratch = workers > 1 ? (float *)memory : 0;
    return EP_OK;
}

ep_context ep_context_of(ep_session *s) {
    ep_context context = {s->scratch, s->scratch_bytes / sizeof(float), s->error, s->loop, s->pool,
                          s->workers > 1 ? s->workers : 1, s->worker_scratch, worker_scratch_bytes(s) / sizeof(float)};
    return context;
}

#if !defined(__wasm__) || defined(__wasm_atomics__)
int64_t ep_task_count(const ep_context *ctx, int64_t units, double fmas) {
    int64_t tasks = ctx->workers < units ? ctx->workers : units;
    while (tasks > 1 && fmas / (double)tasks < EP_TASK_FMAS) tasks--;
    return tasks < 1 ? 1 : tasks;
}

void ep_parallel(const ep_context *ctx, int64_t count, ep_task task, void *arg) {
    if (ctx->loop && count > 1) {
        ctx->loop(ctx->pool, count, task, arg);
        return;
    }
    for (int64_t i = 0; i < count; i++) task(arg, 0, i);
}

float *ep_worker_scratch(const ep_context *ctx, int32_t worker) {
    return worker == 0 ? ctx->scratch : ctx->worker_scratch + (size_t)(worker - 1) * ctx->worker_stride;
}
#endif
