/* The threaded wasm core's pool: Web Workers (or node's worker threads), each an instance of the same module on the
   same shared memory, run a session's parallel loops. The page's thread publishes a loop's task and a new
   generation number, claims indices with the workers from one counter, then spins until every worker has checked
   out (a page's main thread may not block on memory.atomic.wait). Between loops a worker polls the generation for
   a while, then sleeps on memory.atomic.wait32 until the next loop's notify. One pool per memory: each instance of
   the threaded core runs one plan. */
#include <stdatomic.h>

#include "../ep_internal.h"

/* Polls of the generation before a worker sleeps: the ops of one run follow each other within microseconds. */
#define SPINS 100000

static struct {
    int32_t started; /* workers in ep_wasm_worker */
    _Atomic uint32_t generation;
    _Atomic int64_t next; /* the next index to claim */
    _Atomic int32_t busy; /* workers not yet done with this generation's loop */
    int64_t count;
    ep_task task;
    void *arg;
} pool;

static void claim(int32_t number) {
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed);
        if (i >= pool.count) return;
        pool.task(pool.arg, number, i);
    }
}

static void loop(void *unused, int64_t count, ep_task task, void *arg) {
    (void)unused;
    if (count <= 1) {
        for (int64_t i = 0; i < count; i++) task(arg, 0, i);
        return;
    }
    pool.count = count;
    pool.task = task;
    pool.arg = arg;
    atomic_store_explicit(&pool.next, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.busy, pool.started, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
    __builtin_wasm_memory_atomic_notify((int32_t *)&pool.generation, (uint32_t)pool.started);
    claim(0);
    while (atomic_load_explicit(&pool.busy, memory_order_acquire) > 0) {
    }
}

/* Worker `number` (1 to workers - 1) of the pool: runs its share of every loop from now on; it never returns (the
   host terminates the worker). The host starts every worker before ep_wasm_threads. */
void ep_wasm_worker(int32_t number);
void ep_wasm_worker(int32_t number) {
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = atomic_load_explicit(&pool.generation, memory_order_acquire);
        for (int spins = 0; g == seen && spins < SPINS; spins++)
            g = atomic_load_explicit(&pool.generation, memory_order_acquire);
        while (g == seen) {
            __builtin_wasm_memory_atomic_wait32((int32_t *)&pool.generation, (int32_t)seen, -1);
            g = atomic_load_explicit(&pool.generation, memory_order_acquire);
        }
        seen = g;
        claim(number);
        atomic_fetch_sub_explicit(&pool.busy, 1, memory_order_release);
    }
}

/* Runs `session`'s parallel loops on `workers` threads: this one and workers - 1 already in ep_wasm_worker, with
   `memory` (memory_len bytes, aligned to EP_MEMORY_ALIGN) for their scratch (ep_set_workers). */
ep_status ep_wasm_threads(ep_session *session, int32_t workers, void *memory, size_t memory_len);
ep_status ep_wasm_threads(ep_session *session, int32_t workers, void *memory, size_t memory_len) {
    ep_status status = ep_set_workers(session, loop, &pool, workers, memory, memory_len);
    if (status == EP_OK) pool.started = workers - 1;
    return status;
}
