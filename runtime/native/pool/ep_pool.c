/* A pool of POSIX threads for ep_set_workers. Each loop, the caller publishes the task and a new generation number;
   the workers (and the caller, as worker 0) claim indices from one counter until none are left, and the caller waits
   for the workers to check out. Between loops a worker polls for the next generation for a while (the ops of one
   run follow each other within microseconds) before it sleeps on a condition variable. A process forked from the
   one that made the pool has none of its threads: there the loop runs every task on the caller's thread. */
#define _POSIX_C_SOURCE 200809L
#include "ep_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "ep_loop.h"

/* Polls of the generation before a worker sleeps: 0.26 ms on an Intel Xeon of family 6 model 207 (a pause takes 13 ns
   there), up to four times as long where a pause takes 140 cycles. */
#define SPINS 20000

typedef struct worker {
    ep_pool *pool;
    int32_t number;
} worker;

struct ep_pool {
    int32_t started; /* threads started beside the caller's */
    pid_t owner; /* the process whose threads these are */
    pthread_t *threads;
    worker *starts;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic uint64_t generation;
    _Atomic int stop;
    ep_loop loop; /* this generation's */
};

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t next_generation(ep_pool *p, uint64_t seen) {
    uint64_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
    for (int spins = 0; g == seen && spins < SPINS; spins++) {
        relax();
        g = atomic_load_explicit(&p->generation, memory_order_acquire);
    }
    if (g != seen) return g;
    pthread_mutex_lock(&p->lock);
    while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen)
        pthread_cond_wait(&p->wake, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

static void *work(void *start) {
    const worker *w = (const worker *)start;
    ep_pool *p = w->pool;
    uint64_t seen = 0;
    for (;;) {
        seen = next_generation(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return 0;
        ep_loop_claim(&p->loop, w->number);
        ep_loop_check_out(&p->loop);
    }
}

static void publish(ep_pool *p) {
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

ep_pool *ep_pool_create(int32_t workers) {
    if (workers < 1) return 0;
    ep_pool *p = (ep_pool *)calloc(1, sizeof *p);
    if (!p) return 0;
    p->owner = getpid();
    p->threads = (pthread_t *)calloc((size_t)workers, sizeof *p->threads);
    p->starts = (worker *)calloc((size_t)workers, sizeof *p->starts);
    if (!p->threads || !p->starts || pthread_mutex_init(&p->lock, 0)) {
        free(p->threads);
        free(p->starts);
        free(p);
        return 0;
    }
    pthread_cond_init(&p->wake, 0);
    for (int32_t i = 1; i < workers; i++) {
        p->starts[i] = (worker){p, i};
        if (pthread_create(&p->threads[i], 0, work, &p->starts[i])) {
            ep_pool_destroy(p);
            return 0;
        }
        p->started = i;
    }
    return p;
}

void ep_pool_destroy(ep_pool *p) {
    if (!p) return;
    if (getpid() == p->owner) { /* a forked process has none of the threads, and its copy of the lock may be held */
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        publish(p);
        for (int32_t i = 1; i <= p->started; i++) pthread_join(p->threads[i], 0);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
    }
    free(p->threads);
    free(p->starts);
    free(p);
}

void ep_pool_loop(void *pool, int64_t count, ep_task task, void *arg) {
    ep_pool *p = (ep_pool *)pool;
    if (count <= 1 || p->started == 0 || getpid() != p->owner) {
        for (int64_t i = 0; i < count; i++) task(arg, 0, i);
        return;
    }
    ep_loop_set(&p->loop, count, task, arg, p->started);
    publish(p);
    ep_loop_claim(&p->loop, 0);
    while (!ep_loop_done(&p->loop)) relax();
}
