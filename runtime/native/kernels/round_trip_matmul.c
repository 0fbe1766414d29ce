/* RoundTripMatMul: a QDQ model's MatMul of two run-time values (attention's Q by K transposed, and its
   probabilities by V), each through its own round trip (QuantizeLinear then DequantizeLinear, one scale and one int8
   or uint8 zero point). With AVX2, both are quantized less their zero points to int16 (A's rows; B a panel of 32
   columns at a time, as int16 pairs of rows) and each product runs on int16 pairs (vpmaddwd, exact in int32), times
   both scales at the end. Elsewhere, and for K over PAIR_MAX_K (33025), both take their float round trip into the
   scratch and each product runs as MatMul's.
   Inputs: A float32 [..., M, K], B float32 [..., K, N] (batch dims broadcast as MatMul's), A's scale float32 [] and
   zero point uint8 or int8 [], B's scale and zero point the same. Params activation, activation a, activation b
   (the output's own round trip, or a Relu after it). */
#include "matmul.h"
#include "quantized_value.h"
#if defined(__AVX2__)
#include "int16_pairs.h"
#endif

/* The longest K the int16 pairs sum without overflow: each product of two values less their zero points is at most
   255 * 255 in magnitude, and 33025 of them stay within int32. */
#define PAIR_MAX_K 33025
/* Columns of B a panel of int16 pairs holds (int16_pairs.h's PAIR_PANEL, which only AVX2 builds include). */
#define PAIR_COLUMNS EP_PREPACKED_COLUMNS

static ep_status check_round_trip_matmul(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 6, 6, 1, error);
    if (status != EP_OK) return status;
    for (int i = 2; i < 6; i++)
        if (!n->in[i] || n->in[i]->count != 1) return ep_fail(error, n, ": one scale and zero point per operand");
    const ep_tensor *a_zero = n->in[3], *b_zero = n->in[5];
    if (n->in[2]->dtype != EP_F32 || n->in[4]->dtype != EP_F32 || (a_zero->dtype != EP_U8 && a_zero->dtype != EP_I8) ||
        (b_zero->dtype != EP_U8 && b_zero->dtype != EP_I8))
        return ep_fail(error, n, ": scales float32, zero points uint8 or int8");
    if (n->n_params != 3 || n->params[0] < 0 || n->params[0] >= EP_ACT_KINDS) return ep_fail(error, n, ": bad params");
    matmul_shape s = {0};
    status = ep_matmul_shape(n, &s, error);
    if (status != EP_OK) return status;
    /* The float path's: one product's A and B round trips, then MatMul's packed panel; the pairs': A's rows and a
       panel of B, as int16. */
    size_t floats = (size_t)(s.m * s.k + s.k * s.n + s.k * EP_GEMM_NR) * sizeof(float);
    size_t pairs = (size_t)((s.m + PAIR_COLUMNS) * ((s.k + 1) / 2 * 2)) * sizeof(int16_t);
    *scratch = floats > pairs ? floats : pairs;
    return EP_OK;
}

typedef struct round_trip_product {
    int64_t m, k, n;
    const float *a, *b; /* this product's matrices */
    float *y;
    ep_byte_quantization ra, rb; /* each operand's round trip */
    const ep_epilogue *e; /* the activation */
    const ep_context *ctx;
    int64_t tasks;
} round_trip_product;

/* Both operands' float round trips into the scratch, then MatMul's product on the scratch after them. */
static void float_product(const round_trip_product *p) {
    float *a = p->ctx->scratch, *b = a + p->m * p->k;
    ep_round_trip_per_tensor(p->a, a, p->ra.low < 0.0f, p->m * p->k, p->ra.scale, p->ra.zero);
    ep_round_trip_per_tensor(p->b, b, p->rb.low < 0.0f, p->k * p->n, p->rb.scale, p->rb.zero);
    ep_context after = *p->ctx;
    after.scratch = b + p->k * p->n;
    after.scratch_floats -= (size_t)(p->m * p->k + p->k * p->n);
    ep_matmul_product(p->m, p->k, p->n, a, p->k, 1, b, p->n, 1, p->y, p->e, &after);
}

#if defined(__AVX2__)
/* count values quantized less the zero point, as int16 (the round trip's fields in locals, for the loop to
   vectorize). */
static void quantize_centered(const float *x, int64_t count, const ep_byte_quantization *r, int16_t *to) {
    const float scale = r->scale, zero = r->zero, low = r->low, high = r->high;
    for (int64_t j = 0; j < count; j++) to[j] = (int16_t)(quantized_value(x[j], scale, zero, low, high) - zero);
}

/* A's rows quantized less its zero point, `padded` int16 apart (zero past K). */
static void quantize_rows(const round_trip_product *p, int64_t padded, int16_t *q) {
    for (int64_t i = 0; i < p->m; i++) {
        quantize_centered(p->a + i * p->k, p->k, &p->ra, q + i * padded);
        for (int64_t j = p->k; j < padded; j++) q[i * padded + j] = 0;
    }
}

/* B's columns [32 c, 32 c + 32) quantized less its zero point, as int16 pairs of rows (int16_pairs.h), zero past K
   and N: a row quantized into `row`, then its values interleaved with the other row of its pair. */
static void quantize_panel(const round_trip_product *p, int64_t c, int64_t padded, int16_t *pairs) {
    int64_t first = c * PAIR_PANEL, width = p->n - first < PAIR_PANEL ? p->n - first : PAIR_PANEL;
    int16_t row[PAIR_PANEL] = {0};
    for (int64_t kk = 0; kk < padded; kk++) {
        if (kk < p->k) quantize_centered(p->b + kk * p->n + first, width, &p->rb, row);
        else
            for (int64_t j = 0; j < width; j++) row[j] = 0;
        int16_t *to = pairs + kk / 2 * PAIR_PANEL * 2 + kk % 2;
        for (int64_t j = 0; j < PAIR_PANEL; j++) to[2 * j] = row[j];
    }
}

/* Panel c of the product: B's panel quantized into the worker's scratch (after A's rows in worker 0's), then each
   tile of rows on int16 pairs, the sums times both scales. */
static void pair_panel(const round_trip_product *p, int64_t c, float *scratch) {
    int64_t padded = (p->k + 1) / 2 * 2;
    const int16_t *q = (const int16_t *)(void *)p->ctx->scratch;
    int16_t *pairs = (int16_t *)(void *)scratch + p->m * padded;
    quantize_panel(p, c, padded, pairs);
    float step = p->ra.scale * p->rb.scale;
    int64_t first = c * PAIR_PANEL, width = p->n - first < PAIR_PANEL ? p->n - first : PAIR_PANEL;
    int halves = width > PAIR_PANEL / 2 ? 2 : 1;
    int32_t sums[PAIR_MR][PAIR_PANEL];
    for (int64_t i = 0; i < p->m; i += PAIR_MR) {
        int64_t rows = p->m - i < PAIR_MR ? p->m - i : PAIR_MR;
        for (int s = 0; s < halves; s++) pair_tile(q, padded, pairs, i, rows, s, sums);
        for (int64_t r = 0; r < rows; r++) {
            float *out = p->y + (i + r) * p->n + first;
            for (int64_t j = 0; j < width; j++) out[j] = (float)sums[r][j] * step;
            ep_activate_row(p->e->act, out, out, width, p->e->act_a, p->e->act_b);
        }
    }
}

static void panels_task(void *arg, int32_t worker, int64_t index) {
    const round_trip_product *p = (const round_trip_product *)arg;
    int64_t begin, end;
    ep_task_range((p->n + PAIR_PANEL - 1) / PAIR_PANEL, p->tasks, index, 1, &begin, &end);
    for (int64_t c = begin; c < end; c++) pair_panel(p, c, ep_worker_scratch(p->ctx, worker));
}

/* A's rows quantized into worker 0's scratch, then B's panels split among the workers. */
static void pair_product(round_trip_product *p) {
    quantize_rows(p, (p->k + 1) / 2 * 2, (int16_t *)(void *)p->ctx->scratch);
    int64_t panels = (p->n + PAIR_PANEL - 1) / PAIR_PANEL;
    p->tasks = ep_task_count(p->ctx, panels, (double)(p->m * p->k * p->n));
    ep_parallel(p->ctx, p->tasks, panels_task, p);
}
#endif

static ep_status run_round_trip_matmul(const ep_node *n, const ep_context *ctx) {
    matmul_shape s = {0};
    char unused[EP_ERROR_CAPACITY];
    ep_matmul_shape(n, &s, unused);
    const float *a = (const float *)n->in[0]->data, *b = (const float *)n->in[1]->data;
    float *y = (float *)n->out[0]->data;
    ep_epilogue e = {0, 1.0f, 0, n->params[0], ep_param_f32(n, 1), ep_param_f32(n, 2)};
    round_trip_product p = {s.m, s.k, s.n, 0, 0, 0, ep_byte_quantization_of(n->in[2], n->in[3]),
                            ep_byte_quantization_of(n->in[4], n->in[5]), &e, ctx, 1};
    for (int64_t i = 0; i < s.batch; i++) {
        int64_t ao, bo;
        ep_matmul_offsets(&s, i, &ao, &bo);
        p.a = a + ao;
        p.b = b + bo;
        p.y = y + i * s.m * s.n;
#if defined(__AVX2__)
        if (s.k <= PAIR_MAX_K && s.m > 0 && s.n > 0) {
            pair_product(&p);
            continue;
        }
#endif
        float_product(&p);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_round_trip_matmul = {"RoundTripMatMul", check_round_trip_matmul, run_round_trip_matmul};
