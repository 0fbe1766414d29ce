/* The threaded wasm core's pool: Web Workers (or node's worker threads), each an instance of the same module on the
   same shared memory, run a session's parallel loops. The page's thread publishes a loop's task and a new
   generation number, claims indices with the workers from one counter, then spins until every worker has checked
   out (a page's main thread may not block on memory.atomic.wait). Between loops a worker polls the generation for
   a while, then sleeps on memory.atomic.wait32 until the next loop's notify. The pool lives at the start of the
   memory the host hands ep_wasm_threads (zero until then), the workers' scratch after it. */
#include <stdatomic.h>

#include "../ep_internal.h"
#include "../pool/ep_loop.h"

/* Polls of the generation before a worker sleeps: the ops of one run follow each other within microseconds. */
#define SPINS 100000

typedef struct wasm_pool {
    int32_t started; /* workers in ep_wasm_worker */
    _Atomic uint32_t generation;
    ep_loop loop; /* this generation's */
} wasm_pool;
_Static_assert(sizeof(wasm_pool) <= EP_MEMORY_ALIGN, "the pool takes the first EP_MEMORY_ALIGN bytes of its memory");

static void loop(void *pool, int64_t count, ep_task task, void *arg) {
    wasm_pool *p = (wasm_pool *)pool;
    if (count <= 1) {
        for (int64_t i = 0; i < count; i++) task(arg, 0, i);
        return;
    }
    ep_loop_set(&p->loop, count, task, arg, p->started);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    __builtin_wasm_memory_atomic_notify((int32_t *)&p->generation, (uint32_t)p->started);
    ep_loop_claim(&p->loop, 0);
    while (!ep_loop_done(&p->loop)) {
    }
}

/* Worker `number` (1 to workers - 1) of the pool at `memory` (ep_wasm_threads'): runs its share of every loop from
   now on; it never returns (the host terminates the worker). The host starts every worker before ep_wasm_threads. */
void ep_wasm_worker(void *memory, int32_t number);
void ep_wasm_worker(void *memory, int32_t number) {
    wasm_pool *p = (wasm_pool *)memory;
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
        for (int spins = 0; g == seen && spins < SPINS; spins++)
            g = atomic_load_explicit(&p->generation, memory_order_acquire);
        while (g == seen) {
            __builtin_wasm_memory_atomic_wait32((int32_t *)&p->generation, (int32_t)seen, -1);
            g = atomic_load_explicit(&p->generation, memory_order_acquire);
        }
        seen = g;
        ep_loop_claim(&p->loop, number);
        ep_loop_check_out(&p->loop);
    }
}

/* Runs `session`'s parallel loops on `workers` threads: this one and workers - 1 already in ep_wasm_worker on
   `memory` (memory_len bytes, aligned to EP_MEMORY_ALIGN, zero until now): the pool in its first EP_MEMORY_ALIGN
   bytes, the workers' scratch (ep_set_workers) in the rest. */
ep_status ep_wasm_threads(ep_session *session, int32_t workers, void *memory, size_t memory_len);
ep_status ep_wasm_threads(ep_session *session, int32_t workers, void *memory, size_t memory_len) {
    if (!memory || (uintptr_t)memory % EP_MEMORY_ALIGN || memory_len < EP_MEMORY_ALIGN) return EP_ERR_MEMORY;
    wasm_pool *p = (wasm_pool *)memory;
    ep_status status = ep_set_workers(session, loop, p, workers, (char *)memory + EP_MEMORY_ALIGN,
                                      memory_len - EP_MEMORY_ALIGN);
    if (status == EP_OK) p->started = workers - 1;
    return status;
}
