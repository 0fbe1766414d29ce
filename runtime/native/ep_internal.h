/* Internal types shared by the loader, the executor and the kernels. */
#ifndef EP_INTERNAL_H
#define EP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "include/edgepack.h"

#define EP_MAGIC 0x314B5045u /* "EPK1" read little-endian */
#define EP_FORMAT_VERSION 1u
#define EP_HEADER_BYTES 96u
#define EP_TENSOR_RECORD_BYTES 48u
#define EP_OP_RECORD_BYTES 16u
#define EP_ABSENT 0xFFFFFFFFu
#define EP_MAX_ELEMENTS ((int64_t)1 << 40)
#define EP_LOCATION_ARENA 0u
#define EP_LOCATION_WEIGHT 1u

typedef struct ep_tensor {
    void *data;
    int64_t count;
    size_t bytes;
    int32_t dtype;
    int32_t rank;
    int64_t dims[EP_MAX_RANK];
    const char *name;
    uint32_t name_len;
    uint32_t location;
    uint32_t first_write; /* time of the first write: 0 for a model input, op index + 1 for an op's output */
    uint32_t last_use;    /* time of the last read: n_ops + 1 for a model output */
} ep_tensor;

typedef struct ep_node {
    uint32_t id;
    uint32_t n_in;
    uint32_t n_out;
    ep_tensor **in;       /* n_in entries; NULL for an absent optional input */
    ep_tensor **out;      /* n_out entries, never NULL */
    const int32_t *params;
    uint32_t n_params;
} ep_node;

typedef struct ep_context {
    float *scratch;
    size_t scratch_floats;
    char *error;
    ep_parallel_loop loop; /* NULL: one thread */
    void *pool;
    int32_t workers;
    float *worker_scratch; /* workers - 1 areas of at least scratch_floats, worker_stride floats apart */
    size_t worker_stride;
} ep_context;

/* Parallel tasks (parallel.c). */

/* What copying a float weighs in ep_task_count's multiply-adds: work bound by memory splits at fewer floats. */
#define EP_COPY_WORK 16.0
#if defined(__wasm__) && !defined(__wasm_atomics__)
/* The wasm core without atomics runs on one thread: one task, run in place, so that each kernel's task function
   inlines into it as before. (The threaded wasm core, built with atomics, splits its loops as native builds do.) */
static inline int64_t ep_task_count(const ep_context *ctx, int64_t units, double fmas) {
    (void)ctx, (void)units, (void)fmas;
    return 1;
}
static inline void ep_parallel(const ep_context *ctx, int64_t count, ep_task task, void *arg) {
    (void)ctx;
    for (int64_t i = 0; i < count; i++) task(arg, 0, i);
}
static inline float *ep_worker_scratch(const ep_context *ctx, int32_t worker) {
    (void)worker;
    return ctx->scratch;
}
#else
/* How many tasks to split `units` parts of a kernel's work into, `fmas` multiply-adds in all: one per worker, at
   most one per unit, and none smaller than EP_TASK_FMAS (1: run on the caller's thread alone). */
int64_t ep_task_count(const ep_context *ctx, int64_t units, double fmas);
/* Calls task(arg, worker, index) for index in [0, count): through the session's loop, or in turn on this thread. */
void ep_parallel(const ep_context *ctx, int64_t count, ep_task task, void *arg);
/* The scratch of `worker` (scratch_floats floats, its own while its task runs). */
float *ep_worker_scratch(const ep_context *ctx, int32_t worker);
#endif
/* Task `index` of `tasks`' share of [0, units): whole steps of `step` units, the last task taking what is left. */
static inline void ep_task_range(int64_t units, int64_t tasks, int64_t index, int64_t step, int64_t *begin,
                                 int64_t *end) {
    int64_t steps = (units + step - 1) / step;
    *begin = steps * index / tasks * step;
    *end = index + 1 == tasks ? units : steps * (index + 1) / tasks * step;
    if (*begin > units) *begin = units;
    if (*end > units) *end = units;
}

/* Checks the node's tensors and parameters; returns EP_OK or writes a message and returns EP_ERR_OP. On success
   *scratch_bytes holds the scratch the kernel needs at least. */
typedef ep_status (*ep_check_fn)(const ep_node *node, size_t *scratch_bytes, char *error);
typedef ep_status (*ep_run_fn)(const ep_node *node, const ep_context *context);

typedef struct ep_kernel {
    const char *name;
    ep_check_fn check;
    ep_run_fn run;
} ep_kernel;

/* Op ids, kinds and weight-slot layouts, generated from ops.toml (op_contract.py) beside the sources. */
#include "ops.h"

const ep_kernel *ep_kernel_for(uint32_t op_id);
/* Whether the op's kernel checks every dtype itself (ops.toml's `any_dtype`); other kernels see only the core's
   dtypes (ep_core_dtype), but for quantized weights and their scales (ep_weight_only_read). */
int ep_kernel_takes_any_dtype(uint32_t op_id);
int ep_core_dtype(int32_t dtype);
int ep_weight_only_read(const ep_node *node, uint32_t input);

struct ep_session {
    char error[EP_ERROR_CAPACITY];
    const uint8_t *plan;
    size_t plan_len;
    uint32_t n_tensors, n_ops, n_inputs, n_outputs;
    uint32_t open_ops; /* the first ops, run once by ep_open (ExpandWeight); ep_run runs the rest */
    ep_tensor *tensors;
    ep_node *nodes;
    ep_tensor **inputs;
    ep_tensor **outputs;
    uint8_t *arena;
    size_t arena_bytes;
    float *scratch;
    size_t scratch_bytes;
    ep_parallel_loop loop; /* ep_set_workers' */
    void *pool;
    int32_t workers;
    float *worker_scratch;
};

/* The context kernels run with: the session's scratch and its workers. */
ep_context ep_context_of(ep_session *session);

/* Runs the plan's open ops once (executor.c). */
ep_status ep_run_open_ops(ep_session *session);

/* Shared helpers (util.c). */
void ep_message(char *error, const char *a, const char *b, int64_t number);
double ep_double_from_bits(uint64_t bits);
int ep_dtype_bits(int32_t dtype); /* 0: not a dtype the core holds */
size_t ep_dtype_size(int32_t dtype); /* bytes per element; 0 for sub-byte dtypes and unknown ones */
size_t ep_tensor_bytes(int32_t dtype, int64_t count);
int ep_dtype_is_float(int32_t dtype);
int ep_dtype_is_signed(int32_t dtype);
/* Element i of any dtype as a double, and written from one (ONNX Cast's rounding; `saturate` for float8). */
double ep_load_real(const void *data, int32_t dtype, int64_t i);
void ep_store_real(void *data, int32_t dtype, int64_t i, double v, int saturate);
/* Element i of an integer or bool dtype as 64 bits (signed ones sign-extended), and written from its low bits. */
uint64_t ep_load_int(const void *data, int32_t dtype, int64_t i);
void ep_store_int(void *data, int32_t dtype, int64_t i, uint64_t v);
float ep_param_f32(const ep_node *node, uint32_t index);
int ep_same_shape(const ep_tensor *a, const ep_tensor *b);
ep_status ep_expect(const ep_node *node, uint32_t min_in, uint32_t max_in, uint32_t n_out, char *error);
ep_status ep_fail(char *error, const ep_node *node, const char *what);

/* The C library's own, inline (a freestanding C compiler requires memcpy, memmove and memset of its environment and
   emits calls to them itself): vector copies, and none at all for small constant sizes. */
#if defined(__GNUC__) || defined(__clang__)
#define EP_C_LIBRARY(name) __builtin_##name
#else
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int value, size_t n);
#define EP_C_LIBRARY(name) name
#endif
static inline void *ep_memcpy(void *dst, const void *src, size_t n) { return EP_C_LIBRARY(memcpy)(dst, src, n); }
static inline void *ep_memmove(void *dst, const void *src, size_t n) { return EP_C_LIBRARY(memmove)(dst, src, n); }
static inline void *ep_memset(void *dst, int value, size_t n) { return EP_C_LIBRARY(memset)(dst, value, n); }

/* Math without libm (math.c, and exp inline here so elementwise loops vectorize). */

/* exp in float: k = round(x / ln 2), r = x - k ln 2 in two parts, a degree-7 Taylor polynomial on |r| <= ln2 / 2,
   then 2^k from the exponent bits (in two steps, so results near the subnormal range stay right); about 2 ulp. */
static inline float ep_expf(float x) {
    if (!(x < 88.8f)) return x != x ? x : 3.4028235e38f * 10.0f;
    if (x < -103.9f) return 0.0f;
    float kf = x * 1.44269504f;
    kf = kf < 0.0f ? (float)(int32_t)(kf - 0.5f) : (float)(int32_t)(kf + 0.5f);
    float r = (x - kf * 0.693145752f) - kf * 1.42860677e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f + r * (8.3333338e-3f +
              r * (1.3888889e-3f + r * 1.9841270e-4f))))));
    int32_t k = (int32_t)kf, half = k / 2;
    union { uint32_t u; float f; } a, b;
    a.u = (uint32_t)(half + 127) << 23;
    b.u = (uint32_t)(k - half + 127) << 23;
    return p * a.f * b.f;
}

float ep_logf(float x);
float ep_tanhf(float x);
static inline float ep_sigmoidf(float x) { return 1.0f / (1.0f + ep_expf(-x)); }
/* erf of |x| = a: a P(a^2) / Q(a^2) with P and Q of degree 5 (a rational fit to erf on [0, 3.925], relative error
   2e-8 before float rounding), a clamped to 3.925, from where erf rounds to 1. In float: at most 5.4 ulp (3.2e-7,
   near 3.9), 0.8 ulp on average, where the Taylor series below 1 and Abramowitz and Stegun's erfc above (an exp, two
   polynomials and a division, both forms in vector lanes) gave 3.0 ulp at most: with their GELUs, PP-OCRv6 small
   det and rec took 0.95 and 0.91 of their time, smart-turn-v3.2 0.97 (AMD EPYC, AVX2). A macro, so that vector
   kernels (kernels/vector_math.h) evaluate it alike. */
#define EP_ERF_LIMIT 3.925f
#define EP_ERF_RATIONAL(a, t)                                                                                      \
    ((a) * (1.1283791065216064f + (t) * (0.1905880570411682f + (t) * (0.052768200635910034f +                     \
     (t) * (0.003772214986383915f + (t) * (0.0002848210569936782f + (t) * 2.045876954070991e-06f))))) /           \
     (1.0f + (t) * (0.5022370219230652f + (t) * (0.1141800582408905f + (t) * (0.014982534572482109f +             \
     (t) * (0.0011637487914413214f + (t) * 3.8045029214117676e-05f))))))
float ep_erff(float x);
float ep_powf(float x, float y);
float ep_sqrtf(float x);
float ep_floorf(float x);
float ep_roundf_even(float x);
/* Trigonometric and hyperbolic functions and Mish, to about 1 ulp (reduction by pi/2 exact for any float). */
float ep_sinf(float x);
float ep_cosf(float x);
float ep_tanf(float x);
float ep_asinf(float x);
float ep_acosf(float x);
float ep_atanf(float x);
float ep_sinhf(float x);
float ep_coshf(float x);
float ep_asinhf(float x);
float ep_acoshf(float x);
float ep_atanhf(float x);
float ep_mishf(float x);

#endif
