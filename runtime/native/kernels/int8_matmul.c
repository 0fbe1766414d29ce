/* Int8MatMul: a QDQ model's MatMul as one op: X quantized per tensor and back (QuantizeLinear then
   DequantizeLinear, one scale and zero point) times a constant int8 weight with one scale per column, plus a bias per
   column, then an activation. Where the build has 8-bit dot products (AVX-512 VNNI), X is quantized to bytes once and
   the product runs in int32 (exact), scaled per column at the end. With AVX2 alone, X is quantized to int16 and each
   panel of B widened to int16 pairs of rows just before use, and the product runs on pairs (vpmaddwd, exact in
   int32: 16 multiply-adds an instruction where a float FMA does 8). Elsewhere X takes its float round trip and each
   panel of B is dequantized just before the float micro-kernel reads it, as PackedMatMul's quantized B.
   Inputs: X float32 [..., M, K]; B int8 [ceil(N / 32), ceil(K / 4), 32, 4]: panels of 32 columns, each column's rows
   4g .. 4g + 3 side by side (the dot-product instructions' groups), zero past K and N; B's scales float32 [N]; B's
   column sums int32 [N] (for X's zero point); X's scale float32 [] and zero point uint8 or int8 []; a bias per column
   float32 [N] (optional); a bias per column added after the activation, float32 [N] (optional: a QDQ Linear's bias,
   added after its output's round trip). Params N, activation, activation a, activation b. */
#include "gemm.h"
#include "quantized_value.h"
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define INT8_DOT_PRODUCTS 1
#elif defined(__AVX2__)
#include "int16_pairs.h"
#define INT16_PAIRS 1
#endif

enum { PANEL = EP_PREPACKED_COLUMNS, GROUP = 4, INT8_MR = 8 };

static ep_status check_int8_matmul(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 6, 8, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *b = n->in[1], *b_scale = n->in[2], *sums = n->in[3], *x_scale = n->in[4];
    const ep_tensor *x_zero = n->in[5], *bias = n->n_in > 6 ? n->in[6] : 0, *y = n->out[0];
    const ep_tensor *bias_after = n->n_in > 7 ? n->in[7] : 0;
    if (!b || !b_scale || !sums || !x_scale || !x_zero) return ep_fail(error, n, ": an input is missing");
    if (x->dtype != EP_F32 || y->dtype != EP_F32 || b->dtype != EP_I8 || b_scale->dtype != EP_F32 ||
        sums->dtype != EP_I32 || x_scale->dtype != EP_F32 || (x_zero->dtype != EP_U8 && x_zero->dtype != EP_I8) ||
        (bias && bias->dtype != EP_F32) || (bias_after && bias_after->dtype != EP_F32))
        return ep_fail(error, n, ": wrong dtypes");
    if (n->n_params != 4 || n->params[1] < 0 || n->params[1] >= EP_ACT_KINDS || x->rank < 1 || y->rank != x->rank)
        return ep_fail(error, n, ": bad params");
    int64_t k = x->dims[x->rank - 1], cols = n->params[0];
    if (cols < 1 || b->rank != 4 || b->dims[0] != (cols + PANEL - 1) / PANEL || b->dims[1] != (k + GROUP - 1) / GROUP ||
        b->dims[2] != PANEL || b->dims[3] != GROUP)
        return ep_fail(error, n, ": B is not packed for its columns");
    if (b_scale->count != cols || sums->count != cols || x_scale->count != 1 || x_zero->count != 1 ||
        (bias && bias->count != cols) || (bias_after && bias_after->count != cols))
        return ep_fail(error, n, ": one scale, sum and bias per column, and one scale and zero point for X");
    for (int32_t d = 0; d + 1 < x->rank; d++)
        if (y->dims[d] != x->dims[d]) return ep_fail(error, n, ": wrong output shape");
    if (y->dims[y->rank - 1] != cols) return ep_fail(error, n, ": wrong output columns");
    int64_t rows = y->count / cols, padded = b->dims[1] * GROUP;
    *scratch = (size_t)(rows * padded + padded * PANEL) * sizeof(float);
    return EP_OK;
}

typedef struct int8_product {
    int64_t rows, k, groups, cols;
    const float *x, *b_scale, *bias_after; /* bias_after: added after the activation, or NULL */
    const int8_t *b;
    const int32_t *sums;
    float x_scale, x_zero, low, high;
    float *y;
    const ep_epilogue *e;
    const ep_context *ctx;
    int64_t tasks;
    void *x_ready; /* X quantized to bytes, or X's float round trip, in worker 0's scratch */
} int8_product;

/* Runs panel(m, p, scratch) for the panels of B in this task's share, on the worker's scratch. */
typedef void (*panel_product)(const int8_product *m, int64_t p, float *scratch);
typedef struct int8_panels {
    const int8_product *m;
    panel_product panel;
} int8_panels;

static void panels_task(void *arg, int32_t worker, int64_t index) {
    const int8_panels *t = (const int8_panels *)arg;
    int64_t begin, end;
    ep_task_range((t->m->cols + PANEL - 1) / PANEL, t->m->tasks, index, 1, &begin, &end);
    for (int64_t p = begin; p < end; p++) t->panel(t->m, p, ep_worker_scratch(t->m->ctx, worker));
}

/* Every panel of B through `panel`, split among the workers. */
static void each_panel(int8_product *m, panel_product panel) {
    int64_t panels = (m->cols + PANEL - 1) / PANEL;
    m->tasks = ep_task_count(m->ctx, panels, (double)(m->rows * m->k * m->cols));
    int8_panels t = {m, panel};
    ep_parallel(m->ctx, m->tasks, panels_task, &t);
}

/* The bias after the activation of panel p's first `width` columns, added to one row of them. */
static void add_bias_after(const int8_product *m, float *out, int64_t p, int64_t width) {
    const float *bias = m->bias_after + p * PANEL;
    for (int64_t j = 0; j < width; j++) out[j] += bias[j];
}

/* B's scales of panel p's 32 columns (times `factor`), zero past column N. */
static void panel_scales(const int8_product *m, int64_t p, float factor, float *steps) {
    for (int64_t j = 0; j < PANEL; j++) steps[j] = p * PANEL + j < m->cols ? factor * m->b_scale[p * PANEL + j] : 0.0f;
}

#if defined(INT8_DOT_PRODUCTS) || defined(INT16_PAIRS)
/* X quantized, rows `padded` apart (zero past K): QuantizeLinear's values as bytes plus 128 for an int8 zero point,
   so that every byte is unsigned as vpdpbusd takes it (`wide` 0), or as int16 (`wide` 1, shift 0). */
static void quantize_rows(const int8_product *m, int64_t padded, float shift, int wide, void *q) {
    /* The fields in locals: a byte store may alias them, and reloading them each element keeps the loop scalar. */
    const float scale = m->x_scale, zero = m->x_zero, low = m->low, high = m->high;
    const int64_t rows = m->rows, k = m->k;
    for (int64_t i = 0; i < rows; i++) {
        const float *row = m->x + i * k;
        if (wide) {
            int16_t *to = (int16_t *)q + i * padded;
            for (int64_t j = 0; j < k; j++) to[j] = (int16_t)quantized_value(row[j], scale, zero, low, high);
            for (int64_t j = k; j < padded; j++) to[j] = 0;
        } else {
            uint8_t *to = (uint8_t *)q + i * padded;
            for (int64_t j = 0; j < k; j++)
                to[j] = (uint8_t)(int32_t)(quantized_value(row[j], scale, zero, low, high) + shift);
            for (int64_t j = k; j < padded; j++) to[j] = 0;
        }
    }
}

/* Row r's int32 sums (over panel p's columns) less the zero point times the column sums, times X's scale and the
   column's, added to what the output holds when accumulating, then the activation. */
static void finish_row(const int8_product *m, const int32_t *sums, int64_t row, int64_t p, const float *steps,
                       const int32_t *offsets) {
    int64_t width = m->cols - p * PANEL < PANEL ? m->cols - p * PANEL : PANEL;
    float *out = m->y + row * m->cols + p * PANEL;
    for (int64_t j = 0; j < width; j++) {
        float value = (float)(sums[j] - offsets[j]) * steps[j];
        out[j] = m->e->accumulate ? out[j] + value : value;
    }
    ep_activate_row(m->e->act, out, out, width, m->e->act_a, m->e->act_b);
    if (m->bias_after) add_bias_after(m, out, p, width);
}

/* Panel p's scales (times X's) and zero-point offsets (`zero` times each column's sum), zero past column N. */
static void panel_terms(const int8_product *m, int64_t p, int32_t zero, float *steps, int32_t *offsets) {
    panel_scales(m, p, m->x_scale, steps);
    for (int64_t j = 0; j < PANEL; j++) offsets[j] = p * PANEL + j < m->cols ? zero * m->sums[p * PANEL + j] : 0;
}
#endif

#ifdef INT8_DOT_PRODUCTS

/* Four bytes of a row of X, as one 32-bit lane broadcast. */
static inline __m512i four_bytes(const uint8_t *at) {
    int32_t four;
    __builtin_memcpy(&four, at, sizeof four);
    return _mm512_set1_epi32(four);
}

/* The int32 sums of row r: 4 byte products per lane and group, over both halves of the panel. Named accumulators,
   not an array: GCC copies an array's vectors in and out of registers around every vpdpbusd. */
#define ROW_SUMS(r)                                                                                                 \
    {                                                                                                               \
        __m512i a = four_bytes(arow[r] + g * GROUP);                                                                \
        lo##r = _mm512_dpbusd_epi32(lo##r, a, b0);                                                                  \
        hi##r = _mm512_dpbusd_epi32(hi##r, a, b1);                                                                  \
    }

/* Rows [i, i + rows) of one panel's output: int32 sums of 4 byte products per lane, less the zero point times the
   column sums, times X's scale and the column's, added to what the output holds when accumulating, then the
   activation. */
static void integer_tile(const int8_product *m, const uint8_t *q, int64_t padded, const int8_t *panel, int64_t i,
                         int64_t rows, int64_t p, const float *steps, const int32_t *offsets) {
    const uint8_t *arow[INT8_MR];
    for (int r = 0; r < INT8_MR; r++) arow[r] = q + (i + (r < rows ? r : rows - 1)) * padded;
    __m512i lo0 = _mm512_setzero_si512(), hi0 = lo0, lo1 = lo0, hi1 = lo0, lo2 = lo0, hi2 = lo0, lo3 = lo0, hi3 = lo0;
    __m512i lo4 = lo0, hi4 = lo0, lo5 = lo0, hi5 = lo0, lo6 = lo0, hi6 = lo0, lo7 = lo0, hi7 = lo0;
    for (int64_t g = 0; g < m->groups; g++) {
        __m512i b0 = _mm512_loadu_si512(panel + g * PANEL * GROUP);
        __m512i b1 = _mm512_loadu_si512(panel + g * PANEL * GROUP + 64);
        ROW_SUMS(0) ROW_SUMS(1) ROW_SUMS(2) ROW_SUMS(3) ROW_SUMS(4) ROW_SUMS(5) ROW_SUMS(6) ROW_SUMS(7)
    }
    __m512i sums[INT8_MR][2] = {{lo0, hi0}, {lo1, hi1}, {lo2, hi2}, {lo3, hi3},
                                {lo4, hi4}, {lo5, hi5}, {lo6, hi6}, {lo7, hi7}};
    for (int64_t r = 0; r < rows; r++) {
        int32_t row_sums[PANEL];
        _mm512_storeu_si512(row_sums, sums[r][0]);
        _mm512_storeu_si512(row_sums + 16, sums[r][1]);
        finish_row(m, row_sums, i + r, p, steps, offsets);
    }
}

/* Panel p of the product in int32, scaled per column. */
static void integer_panel(const int8_product *m, int64_t p, float *scratch) {
    int64_t padded = m->groups * GROUP;
    float steps[PANEL];
    int32_t offsets[PANEL];
    (void)scratch;
    panel_terms(m, p, (int32_t)m->x_zero + (m->low < 0.0f ? 128 : 0), steps, offsets);
    const int8_t *panel = m->b + p * m->groups * PANEL * GROUP;
    for (int64_t i = 0; i < m->rows; i += INT8_MR)
        integer_tile(m, (const uint8_t *)m->x_ready, padded, panel, i, m->rows - i < INT8_MR ? m->rows - i : INT8_MR,
                     p, steps, offsets);
}

static void integer_product(int8_product *m) {
    m->x_ready = m->ctx->scratch;
    quantize_rows(m, m->groups * GROUP, m->low < 0.0f ? 128.0f : 0.0f, 0, m->x_ready);
    each_panel(m, integer_panel);
}
#elif defined(INT16_PAIRS)
/* Panel p of B as int16 pairs: rows 2q and 2q + 1 of a column side by side, the 32 columns of pair q in a row. Four
   columns at a time: their 16 bytes widened to int16, the (4g, 4g + 1) pairs gathered into one half and the
   (4g + 2, 4g + 3) pairs into the other: a 384 x 1536 weight's panels in 0.39 of the time a value at a time took
   (0.037 ms, 1.5% of its product over 400 rows; AMD EPYC, AVX2). */
static void widen_panel(const int8_product *m, int64_t p, int16_t *pairs) {
    const int8_t *bytes = m->b + p * m->groups * PANEL * GROUP;
    const __m256i halves = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (int64_t g = 0; g < m->groups; g++) {
        int16_t *first = pairs + 2 * g * PANEL * 2, *second = first + PANEL * 2;
        for (int64_t j = 0; j < PANEL; j += 4) {
            __m128i four = _mm_loadu_si128((const __m128i *)(const void *)(bytes + (g * PANEL + j) * GROUP));
            __m256i wide = _mm256_permutevar8x32_epi32(_mm256_cvtepi8_epi16(four), halves);
            _mm_storeu_si128((__m128i *)(void *)(first + 2 * j), _mm256_castsi256_si128(wide));
            _mm_storeu_si128((__m128i *)(void *)(second + 2 * j), _mm256_extracti128_si256(wide, 1));
        }
    }
}

/* Panel p of the product on int16 pairs, scaled per column: B widened into the worker's scratch, after X. */
static void pair_panel(const int8_product *m, int64_t p, float *scratch) {
    int64_t padded = m->groups * GROUP;
    int16_t *pairs = (int16_t *)(scratch + m->rows * padded);
    float steps[PANEL];
    int32_t offsets[PANEL], sums[PAIR_MR][PANEL];
    widen_panel(m, p, pairs);
    panel_terms(m, p, (int32_t)m->x_zero, steps, offsets);
    int halves = m->cols - p * PANEL > PANEL / 2 ? 2 : 1;
    for (int64_t i = 0; i < m->rows; i += PAIR_MR) {
        int64_t rows = m->rows - i < PAIR_MR ? m->rows - i : PAIR_MR;
        for (int s = 0; s < halves; s++) pair_tile((const int16_t *)m->x_ready, padded, pairs, i, rows, s, sums);
        for (int64_t r = 0; r < rows; r++) finish_row(m, sums[r], i + r, p, steps, offsets);
    }
}

static void integer_product(int8_product *m) {
    m->x_ready = m->ctx->scratch;
    quantize_rows(m, m->groups * GROUP, 0.0f, 1, m->x_ready);
    each_panel(m, pair_panel);
}
#else
/* Panel p of B dequantized to K x 32 floats after X's rows in the worker's scratch, and multiplied on the float
   micro-kernel. */
static void float_panel(const int8_product *m, int64_t p, float *scratch) {
    float *panel = scratch + m->rows * m->groups * GROUP, steps[PANEL];
    panel_scales(m, p, 1.0f, steps);
    const int8_t *bytes = m->b + p * m->groups * PANEL * GROUP;
    for (int64_t kk = 0; kk < m->k; kk++) {
        const int8_t *group = bytes + kk / GROUP * PANEL * GROUP + kk % GROUP;
        for (int64_t j = 0; j < PANEL; j++) panel[kk * PANEL + j] = (float)group[j * GROUP] * steps[j];
    }
    int64_t width = m->cols - p * PANEL < PANEL ? m->cols - p * PANEL : PANEL;
    ep_gemm_prepacked(m->rows, m->k, width, (const float *)m->x_ready, m->k, panel, m->y + p * PANEL, m->cols, m->e);
    if (m->bias_after)
        for (int64_t i = 0; i < m->rows; i++) add_bias_after(m, m->y + i * m->cols + p * PANEL, p, width);
}

/* X's float round trip (QuantizeLinear then DequantizeLinear), then each panel of B (float_panel). */
static void float_product(int8_product *m) {
    m->x_ready = m->ctx->scratch;
    ep_round_trip_per_tensor(m->x, (float *)m->x_ready, m->low < 0.0f, m->rows * m->k, m->x_scale, m->x_zero);
    each_panel(m, float_panel);
}
#endif

static ep_status run_int8_matmul(const ep_node *n, const ep_context *ctx) {
    const ep_tensor *x = n->in[0], *b = n->in[1];
    int64_t cols = n->params[0], rows = n->out[0]->count / cols;
    float *out = (float *)n->out[0]->data;
    ep_epilogue e = ep_column_bias(n, n->n_in > 6 ? n->in[6] : 0);
    ep_byte_quantization q = ep_byte_quantization_of(n->in[4], n->in[5]);
    const ep_tensor *bias_after = n->n_in > 7 ? n->in[7] : 0;
    int8_product m = {rows, x->dims[x->rank - 1], b->dims[1], cols, (const float *)x->data,
                      (const float *)n->in[2]->data, bias_after ? (const float *)bias_after->data : 0,
                      (const int8_t *)b->data, (const int32_t *)n->in[3]->data, q.scale, q.zero, q.low, q.high, out,
                      &e, ctx, 1, 0};
#if defined(INT8_DOT_PRODUCTS) || defined(INT16_PAIRS)
    integer_product(&m);
#else
    float_product(&m);
#endif
    return EP_OK;
}

const ep_kernel ep_kernel_int8_matmul = {"Int8MatMul", check_int8_matmul, run_int8_matmul};
