/* MatMul (batched, numpy broadcasting over batch dims, 1-D operands), Gemm (transposes, alpha, beta, C) and
   PackedMatMul (by a weight packed at plan time). */
#include "broadcast.h"
#include "matmul.h"

ep_status ep_matmul_shape(const ep_node *n, matmul_shape *s, char *error) {
    const ep_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    if (a->dtype != EP_F32 || b->dtype != EP_F32 || y->dtype != EP_F32) return ep_fail(error, n, ": float32 only");
    if (a->rank < 1 || b->rank < 1) return ep_fail(error, n, ": operands must have rank >= 1");
    s->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    s->k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    s->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != s->k) return ep_fail(error, n, ": inner dimensions differ");
    int32_t a_batch = a->rank > 2 ? a->rank - 2 : 0, b_batch = b->rank > 2 ? b->rank - 2 : 0;
    s->batch_rank = a_batch > b_batch ? a_batch : b_batch;
    int32_t want_rank = s->batch_rank + (a->rank > 1) + (b->rank > 1);
    if (y->rank != want_rank) return ep_fail(error, n, ": wrong output rank");
    int64_t a_stride = s->m * s->k, b_stride = s->k * s->n;
    s->batch = 1;
    for (int32_t i = s->batch_rank - 1; i >= 0; i--) {
        int32_t ia = i - (s->batch_rank - a_batch), ib = i - (s->batch_rank - b_batch);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return ep_fail(error, n, ": batch dims do not broadcast");
        int64_t d = da > db ? da : db;
        if (da == 0 || db == 0) d = 0;
        s->batch_dims[i] = d;
        if (y->dims[i] != d) return ep_fail(error, n, ": wrong output batch dims");
        s->a_strides[i] = da == 1 ? 0 : a_stride;
        s->b_strides[i] = db == 1 ? 0 : b_stride;
        a_stride *= da;
        b_stride *= db;
        s->batch *= d;
    }
    int32_t at = s->batch_rank;
    if (a->rank > 1 && y->dims[at++] != s->m) return ep_fail(error, n, ": wrong output rows");
    if (b->rank > 1 && y->dims[at] != s->n) return ep_fail(error, n, ": wrong output columns");
    return EP_OK;
}

static ep_status check_matmul(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 0) return ep_fail(error, n, ": bad params");
    matmul_shape s = {0};
    status = ep_matmul_shape(n, &s, error);
    if (status == EP_OK) *scratch = (size_t)s.k * EP_GEMM_NR * sizeof(float);
    return status;
}

/* Products with fewer rows than this read B's panels in place where its rows allow; longer ones pack B: a packed
   panel sits in few cache lines and sets, where in place its rows are b_row apart (at a power-of-two stride they
   share one L1 set), and packing K x N floats costs little beside M x K x N products (1.1 to 1.3x faster from 64
   rows up with AVX2, 1.0 to 1.05x with AVX-512; in place stays faster below, up to 1.4x at 24 rows). */
#define IN_PLACE_ROWS 64

/* One product C[M, N] (+)= A x B, its first `columns` columns of C split into tasks (C's rows stay N apart). */
typedef struct product_columns {
    int64_t m, k, n, columns, a_row, a_col, b_row, b_col, tasks, in_place, block;
    const float *a, *b;
    float *c;
    const int32_t *offsets; /* B's row offsets, for panels read in place */
    const ep_epilogue *e;
    const ep_context *ctx;
} product_columns;

static void product_task(void *arg, int32_t worker, int64_t index) {
    const product_columns *p = (const product_columns *)arg;
    int64_t begin, end;
    if (p->m <= EP_GEMV_ROWS && p->b_col == 1) {
        ep_task_range(p->columns, p->tasks, index, 16, &begin, &end);
        ep_gemv(p->m, p->k, end - begin, p->a, p->a_row, p->a_col, p->b + begin, p->b_row, p->c + begin, p->n, p->e);
        return;
    }
    ep_task_range(p->columns, p->tasks, index, EP_GEMM_NR, &begin, &end);
    if (p->in_place) {
        for (int64_t j = begin; j < end; j += EP_GEMM_NR)
            ep_gemm_direct(p->m, p->k, p->a, p->a_row, p->a_col, p->b + j, p->offsets, p->c + j, p->n, p->e);
        return;
    }
    float *packed = ep_worker_scratch(p->ctx, worker);
    for (int64_t n0 = begin; n0 < end; n0 += p->block) {
        int64_t nb = end - n0 < p->block ? end - n0 : p->block;
        ep_pack_strided(packed, p->b, p->k, n0, nb, p->b_row, p->b_col);
        ep_gemm_packed(p->m, p->k, nb, p->a, p->a_row, p->a_col, packed, p->c + n0, p->n, p->e);
    }
}

void ep_matmul_product(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, int64_t a_col, const float *b,
                       int64_t b_row, int64_t b_col, float *c, const ep_epilogue *e, const ep_context *ctx) {
    if (k == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float v = e->accumulate ? c[i * n + j] : 0.0f;
                c[i * n + j] = ep_activate(e->act, v, e->act_a, e->act_b);
            }
        return;
    }
    product_columns p = {m, k, n, n, a_row, a_col, b_row, b_col, 0, 0, ep_gemm_block_columns(k, ctx->scratch_floats),
                         a, b, c, 0, e, ctx};
    if (m <= EP_GEMV_ROWS && b_col == 1) {
        p.tasks = ep_task_count(ctx, (n + 15) / 16, (double)(m * k * n));
        ep_parallel(ctx, p.tasks, product_task, &p);
        return;
    }
    if (m < IN_PLACE_ROWS && b_col == 1 && n >= EP_GEMM_NR && b_row % 16 == 0 && (size_t)k <= ctx->scratch_floats &&
        (k - 1) * b_row <= INT32_MAX) {
        /* B's rows are contiguous and 64-byte aligned to each other: its full panels are read in place (row kk at
           b + kk * b_row), the last columns packed after them, over the offsets (a few tokens by MiniLM's 384 x 1536
           weights: no 2.4 MB copy per call). Unaligned rows split each panel row across more cache lines: packing
           wins. */
        int32_t *offsets = (int32_t *)(void *)ctx->scratch;
        for (int64_t kk = 0; kk < k; kk++) offsets[kk] = (int32_t)(kk * b_row);
        p.offsets = offsets;
        p.in_place = 1;
        p.columns = n / EP_GEMM_NR * EP_GEMM_NR;
    }
    p.tasks = ep_task_count(ctx, (p.columns + EP_GEMM_NR - 1) / EP_GEMM_NR, (double)(m * k * p.columns));
    ep_parallel(ctx, p.tasks, product_task, &p);
    if (p.columns < n) {
        ep_pack_strided(ctx->scratch, b, k, p.columns, n - p.columns, b_row, 1);
        ep_gemm_packed(m, k, n - p.columns, a, a_row, a_col, ctx->scratch, c + p.columns, n, e);
    }
}

/* A batched MatMul's products [begin, end): one task a share of them, each product on the worker's scratch alone,
   when there are enough products for the workers; else one task, each product split among the workers. */
typedef struct matmul_batches {
    const matmul_shape *s;
    const float *a, *b;
    float *y;
    const ep_context *ctx;
    int64_t tasks;
} matmul_batches;

static void batch_task(void *arg, int32_t worker, int64_t index) {
    const matmul_batches *t = (const matmul_batches *)arg;
    const matmul_shape *s = t->s;
    ep_context context = *t->ctx;
    if (t->tasks > 1) {
        context.scratch = ep_worker_scratch(t->ctx, worker);
        context.loop = 0;
        context.workers = 1;
    }
    ep_epilogue e = {0, 1.0f, 0, EP_ACT_NONE, 0.0f, 0.0f};
    int64_t begin, end;
    ep_task_range(s->batch, t->tasks, index, 1, &begin, &end);
    for (int64_t i = begin; i < end; i++) {
        int64_t ao, bo;
        ep_matmul_offsets(s, i, &ao, &bo);
        ep_matmul_product(s->m, s->k, s->n, t->a + ao, s->k, 1, t->b + bo, s->n, 1, t->y + i * s->m * s->n, &e,
                          &context);
    }
}

static ep_status run_matmul(const ep_node *n, const ep_context *ctx) {
    matmul_shape s = {0};
    char unused[EP_ERROR_CAPACITY];
    ep_matmul_shape(n, &s, unused);
    matmul_batches t = {&s, (const float *)n->in[0]->data, (const float *)n->in[1]->data, (float *)n->out[0]->data,
                        ctx, 1};
    if (s.batch >= ctx->workers) t.tasks = ep_task_count(ctx, s.batch, (double)(s.batch * s.m * s.k * s.n));
    ep_parallel(ctx, t.tasks, batch_task, &t);
    return EP_OK;
}

/* Gemm params: transA, transB, alpha, beta, activation, activation a, activation b. */
static ep_status check_gemm(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 2, 3, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *a = n->in[0], *b = n->in[1], *c = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    if (n->n_params != 7 || n->params[4] < 0 || n->params[4] >= EP_ACT_KINDS) return ep_fail(error, n, ": bad params");
    if (a->dtype != EP_F32 || b->dtype != EP_F32 || y->dtype != EP_F32 || (c && c->dtype != EP_F32))
        return ep_fail(error, n, ": float32 only");
    if (a->rank != 2 || b->rank != 2 || y->rank != 2) return ep_fail(error, n, ": operands must be matrices");
    int64_t m = n->params[0] ? a->dims[1] : a->dims[0], k = n->params[0] ? a->dims[0] : a->dims[1];
    int64_t kb = n->params[1] ? b->dims[1] : b->dims[0], cols = n->params[1] ? b->dims[0] : b->dims[1];
    if (k != kb || y->dims[0] != m || y->dims[1] != cols) return ep_fail(error, n, ": shapes do not match");
    if (c && !ep_broadcasts_to(c, y)) return ep_fail(error, n, ": C does not broadcast to the output");
    *scratch = (size_t)k * EP_GEMM_NR * sizeof(float);
    return EP_OK;
}

static ep_status run_gemm(const ep_node *n, const ep_context *ctx) {
    const ep_tensor *a = n->in[0], *b = n->in[1], *c = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    int trans_a = n->params[0], trans_b = n->params[1];
    float alpha = ep_param_f32(n, 2), beta = ep_param_f32(n, 3);
    int64_t m = y->dims[0], cols = y->dims[1], k = trans_a ? a->dims[0] : a->dims[1];
    float *out = (float *)y->data;
    int accumulate = 0;
    if (c && beta != 0.0f) {
        ep_broadcast plan;
        const ep_tensor *inputs[1] = {c};
        ep_broadcast_plan(&plan, y, inputs, 1);
        ep_row row;
        int64_t counter[EP_MAX_RANK];
        const float *cv = (const float *)c->data;
        for (int more = ep_row_first(&plan, &row, counter); more; more = ep_row_next(&plan, &row, counter))
            for (int64_t i = 0; i < row.length; i++) out[row.out + i] = beta * cv[row.in[0] + i * row.step[0]];
        accumulate = 1;
    }
    ep_epilogue e = {0, alpha, accumulate, n->params[4], ep_param_f32(n, 5), ep_param_f32(n, 6)};
    int64_t a_cols = a->dims[1], b_cols = b->dims[1];
    ep_matmul_product(m, k, cols, (const float *)a->data, trans_a ? 1 : a_cols, trans_a ? a_cols : 1,
                      (const float *)b->data, trans_b ? 1 : b_cols, trans_b ? b_cols : 1, out, &e, ctx);
    return EP_OK;
}

/* PackedMatMul: A [..., M, K] by B packed at plan time ([ceil(N / 32), K, 32], see ep_gemm_prepacked), plus an
   optional bias per column ([N]); params N, activation, activation a, activation b. */
static ep_status check_packed_matmul(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 2, 3, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *a = n->in[0], *b = n->in[1], *bias = n->n_in > 2 ? n->in[2] : 0, *y = n->out[0];
    if (a->dtype != EP_F32 || b->dtype != EP_F32 || y->dtype != EP_F32 || (bias && bias->dtype != EP_F32))
        return ep_fail(error, n, ": float32 only");
    if (n->n_params != 4 || n->params[1] < 0 || n->params[1] >= EP_ACT_KINDS || a->rank < 1 || b->rank != 3 ||
        y->rank != a->rank)
        return ep_fail(error, n, ": bad params");
    int64_t k = a->dims[a->rank - 1], cols = n->params[0];
    if (cols < 1 || b->dims[0] != (cols + EP_PREPACKED_COLUMNS - 1) / EP_PREPACKED_COLUMNS || b->dims[1] != k ||
        b->dims[2] != EP_PREPACKED_COLUMNS)
        return ep_fail(error, n, ": B is not packed for its columns");
    for (int32_t d = 0; d + 1 < a->rank; d++)
        if (y->dims[d] != a->dims[d]) return ep_fail(error, n, ": wrong output shape");
    if (y->dims[y->rank - 1] != cols) return ep_fail(error, n, ": wrong output columns");
    if (bias && bias->count != cols) return ep_fail(error, n, ": one bias per column");
    *scratch = 0;
    return EP_OK;
}

ep_epilogue ep_column_bias(const ep_node *n, const ep_tensor *bias) {
    const ep_tensor *y = n->out[0];
    int64_t cols = n->params[0];
    if (bias)
        for (int64_t i = 0; i < y->count / cols; i++)
            ep_memcpy((float *)y->data + i * cols, bias->data, (size_t)cols * sizeof(float));
    return (ep_epilogue){0, 1.0f, bias != 0, n->params[1], ep_param_f32(n, 2), ep_param_f32(n, 3)};
}

/* Panels [begin, end) of a PackedMatMul's B, each from the source, on the worker's scratch. */
typedef struct packed_panels {
    const ep_node *n;
    ep_panel_source source;
    void *state;
    const ep_epilogue *e;
    const ep_context *ctx;
    int64_t tasks;
} packed_panels;

static const float *float_panel(void *panels, int64_t p, float *scratch) {
    const ep_tensor *b = (const ep_tensor *)panels;
    (void)scratch;
    return (const float *)b->data + p * b->dims[1] * EP_PREPACKED_COLUMNS;
}

static void panels_task(void *arg, int32_t worker, int64_t index) {
    const packed_panels *t = (const packed_panels *)arg;
    const ep_tensor *a = t->n->in[0], *y = t->n->out[0];
    int64_t cols = t->n->params[0], k = a->dims[a->rank - 1], rows = y->count / cols, begin, end;
    ep_task_range((cols + EP_PREPACKED_COLUMNS - 1) / EP_PREPACKED_COLUMNS, t->tasks, index, 1, &begin, &end);
    float *scratch = ep_worker_scratch(t->ctx, worker);
    /* a float B's panels lie one after another: one product over them all, whose micro-kernel then asks the cache for
       each next panel while it works on one */
    int64_t step = EP_GEMM_PREFETCH && t->source == float_panel ? end - begin : 1;
    for (int64_t p = begin; p < end; p += step) {
        int64_t first = p * EP_PREPACKED_COLUMNS, width = cols - first;
        ep_gemm_prepacked(rows, k, width < step * EP_PREPACKED_COLUMNS ? width : step * EP_PREPACKED_COLUMNS,
                          (const float *)a->data, k, t->source(t->state, p, scratch), (float *)y->data + first, cols,
                          t->e);
    }
}

void ep_packed_matmul(const ep_node *n, ep_panel_source source, void *state, const ep_context *ctx) {
    const ep_tensor *a = n->in[0], *y = n->out[0];
    int64_t cols = n->params[0], k = a->dims[a->rank - 1], rows = y->count / cols;
    ep_epilogue e = ep_column_bias(n, n->n_in > 2 ? n->in[2] : 0);
    packed_panels t = {n, source, state, &e, ctx, 0};
    t.tasks = ep_task_count(ctx, (cols + EP_PREPACKED_COLUMNS - 1) / EP_PREPACKED_COLUMNS, (double)(rows * k * cols));
    ep_parallel(ctx, t.tasks, panels_task, &t);
}

static ep_status run_packed_matmul(const ep_node *n, const ep_context *ctx) {
    ep_packed_matmul(n, float_panel, (void *)n->in[1], ctx);
    return EP_OK;
}

const ep_kernel ep_kernel_matmul = {"MatMul", check_matmul, run_matmul};
const ep_kernel ep_kernel_gemm = {"Gemm", check_gemm, run_gemm};
const ep_kernel ep_kernel_packed_matmul = {"PackedMatMul", check_packed_matmul, run_packed_matmul};
