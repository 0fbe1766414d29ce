/* edgepack compact runtime core: runs an .epk plan in one caller-provided buffer, with no allocation. */
#ifndef EDGEPACK_H
#define EDGEPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ep_status {
    EP_OK = 0,
    EP_ERR_ARGUMENT = 1,   /* a NULL pointer, an index out of range, an unknown name */
    EP_ERR_FORMAT = 2,     /* wrong magic, version or header size; truncated plan */
    EP_ERR_BOUNDS = 3,     /* an offset or size outside the plan, the arena or the weights */
    EP_ERR_TENSOR = 4,     /* a bad dtype, rank, dim or tensor index */
    EP_ERR_OP = 5,         /* an unknown op id, or an op whose tensors or parameters do not fit */
    EP_ERR_MEMORY = 6,     /* the memory handed to ep_open is too small or misaligned */
    EP_ERR_RUNTIME = 7     /* a data-dependent error while running (an index out of range) */
} ep_status;

/* ONNX's TensorProto element types; sub-byte types are packed, the first element in the lowest bits. */
typedef enum ep_dtype {
    EP_F32 = 1, EP_U8 = 2, EP_I8 = 3, EP_U16 = 4, EP_I16 = 5, EP_I32 = 6, EP_I64 = 7, EP_BOOL = 9, EP_F16 = 10,
    EP_F64 = 11, EP_U32 = 12, EP_U64 = 13, EP_BF16 = 16, EP_F8E4M3FN = 17, EP_F8E4M3FNUZ = 18, EP_F8E5M2 = 19,
    EP_F8E5M2FNUZ = 20, EP_U4 = 21, EP_I4 = 22, EP_F4E2M1 = 23, EP_F8E8M0 = 24, EP_U2 = 25, EP_I2 = 26
} ep_dtype;

#define EP_MAX_RANK 8
#define EP_ERROR_CAPACITY 256
#define EP_MEMORY_ALIGN 64

typedef struct ep_session ep_session;

typedef struct ep_tensor_info {
    const char *name;      /* not NUL-terminated: name_len bytes */
    uint32_t name_len;
    int32_t dtype;         /* an ep_dtype */
    int32_t rank;
    int64_t dims[EP_MAX_RANK];
    size_t bytes;
    void *data;            /* inside the session's arena: write inputs here, read outputs here */
} ep_tensor_info;

/* The bytes `ep_open` needs for this plan (session, tensor table and arena). */
ep_status ep_required_bytes(const void *plan, size_t plan_len, size_t *bytes);

/* Checks the whole plan and lays the session out in `memory` (aligned to EP_MEMORY_ALIGN). The plan must stay
   alive and unchanged while the session is used: weights are read from it in place. On failure the message is
   readable with ep_open_error(memory, memory_len). */
ep_status ep_open(const void *plan, size_t plan_len, void *memory, size_t memory_len, ep_session **session);

/* The message of the last failed ep_open on this memory ("" when none). */
const char *ep_open_error(const void *memory, size_t memory_len);

/* Runs every op once; inputs must have been written first.
   Threads: the core has no global state. One session runs one ep_run at a time (its arena holds the run), so a
   session used from several threads needs the caller's lock; sessions opened on separate memory may run at once,
   and may share one plan (it is only read). One run may also use several threads: ep_set_workers. */
ep_status ep_run(ep_session *session);

/* Parallel loops, optional (the core keeps no thread of its own): a host with threads hands a session a loop that
   calls task(arg, worker, index) once for every index in [0, count), on at most `workers` threads at once, each with
   its own worker number (0 to workers - 1, 0 being the caller's thread), and returns when every call has returned.
   runtime/native/pool/ep_pool.c is one such loop, on POSIX threads. */
typedef void (*ep_task)(void *arg, int32_t worker, int64_t index);
typedef void (*ep_parallel_loop)(void *pool, int64_t count, ep_task task, void *arg);

/* The scratch bytes each worker beyond the first needs (the session's own scratch serves worker 0). */
size_t ep_worker_scratch_bytes(const ep_session *session);

/* From the next ep_run on, the session splits its heavy ops (convs, matrix products, recurrent ops, normalizations,
   elementwise ops) into tasks for `loop` on `workers` threads; `memory` (aligned to EP_MEMORY_ALIGN, not used by
   anything else while the session is) holds workers - 1 scratch areas of ep_worker_scratch_bytes (none, and memory
   may be NULL, when that is 0). Every output is the same, bit for bit, as on one thread: a task never splits a sum.
   `workers` 1 (loop and memory NULL) returns to one thread. */
ep_status ep_set_workers(ep_session *session, ep_parallel_loop loop, void *pool, int32_t workers, void *memory,
                         size_t memory_len);

/* The message of the last error of this session ("" when none). */
const char *ep_error(const ep_session *session);

size_t ep_input_count(const ep_session *session);
size_t ep_output_count(const ep_session *session);
ep_status ep_input(const ep_session *session, size_t index, ep_tensor_info *info);
ep_status ep_output(const ep_session *session, size_t index, ep_tensor_info *info);
/* Index of the input (or output) called `name` (name_len bytes), or -1. */
int32_t ep_input_index(const ep_session *session, const char *name, size_t name_len);
int32_t ep_output_index(const ep_session *session, const char *name, size_t name_len);

const char *ep_status_name(ep_status status);

#ifdef __cplusplus
}
#endif
#endif
