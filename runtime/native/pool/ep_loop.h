/* One parallel loop's shared state, and its steps, for the two pools that run a session's loops: POSIX threads
   (ep_pool.c) and the threaded wasm core's Web Workers (wasm/pool.c). The caller publishes the loop (ep_loop_set,
   then its pool's own wake-up), claims indices beside the workers until none are left (ep_loop_claim), and waits
   until every worker has checked out (ep_loop_done). */
#ifndef EP_LOOP_H
#define EP_LOOP_H

#include <stdatomic.h>

#include "../include/edgepack.h"

typedef struct ep_loop {
    _Atomic int64_t next; /* the next index to claim */
    _Atomic int32_t busy; /* workers not yet done with this loop */
    int64_t count;
    ep_task task;
    void *arg;
} ep_loop;

/* The loop of `count` tasks, before it is published to `workers` workers (the caller not counted). */
static inline void ep_loop_set(ep_loop *l, int64_t count, ep_task task, void *arg, int32_t workers) {
    l->count = count;
    l->task = task;
    l->arg = arg;
    atomic_store_explicit(&l->next, 0, memory_order_relaxed);
    atomic_store_explicit(&l->busy, workers, memory_order_relaxed);
}

/* Runs tasks as worker `number` until none are left to claim. */
static inline void ep_loop_claim(ep_loop *l, int32_t number) {
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
        if (i >= l->count) return;
        l->task(l->arg, number, i);
    }
}

/* A worker's check-out once its claims are done. */
static inline void ep_loop_check_out(ep_loop *l) { atomic_fetch_sub_explicit(&l->busy, 1, memory_order_release); }

/* Whether every worker has checked out. */
static inline int ep_loop_done(ep_loop *l) { return atomic_load_explicit(&l->busy, memory_order_acquire) <= 0; }

#endif
