/* A pool of POSIX threads that runs a session's parallel loops (ep_set_workers), for hosts with threads. */
#ifndef EP_POOL_H
#define EP_POOL_H

#include "../include/edgepack.h"

typedef struct ep_pool ep_pool;

/* A pool of `workers` threads in all: the caller's own, and workers - 1 started here (NULL when they cannot be). */
ep_pool *ep_pool_create(int32_t workers);
/* Stops and joins the pool's threads, and frees it; no loop may be running. */
void ep_pool_destroy(ep_pool *pool);
/* The pool's ep_parallel_loop: `pool` is an ep_pool. One loop runs at a time on a pool. In a process forked after
   the pool was made, every task runs on the caller's thread. */
void ep_pool_loop(void *pool, int64_t count, ep_task task, void *arg);

#endif
