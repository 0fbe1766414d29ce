/* The products with few rows or few columns, nothing packed: dot products of A's rows with Bt's (a narrow conv's
   output positions, a recurrent op's steps; ep_gemm_dot) and each row of B added to every row's sums (ep_gemv). */
#include "gemm.h"

#if defined(__GNUC__) || defined(__clang__)
/* Sum of the lanes of *v (a pointer: a vector passed by value would tie the code to one vector ABI): its 4-lane
   quarters added as vectors, then the four lanes in pairs, so the adds do not form one chain of EP_GEMM_LANES. */
typedef float ep_v4 __attribute__((vector_size(16)));
static inline float lanes_sum(const ep_v8 *v) {
    ep_v4 total, part;
    __builtin_memcpy(&total, v, sizeof total);
    for (int q = 1; q < EP_GEMM_LANES / 4; q++) {
        __builtin_memcpy(&part, (const float *)v + 4 * q, sizeof part);
        total += part;
    }
    return (total[0] + total[2]) + (total[1] + total[3]);
}
#endif

/* Rows of A and of Bt per step of the dot-product kernel: DOT_M * DOT_N vector accumulators. */
#define DOT_M 4
#define DOT_N 3

/* DOT_M rows of A by DOT_N rows of Bt (a block at the edge repeats its last row, whose results go unused): the dot
   products over K in vectors, then their lanes summed. */
static void dot_block(int64_t k, const float *const *arow, const float *const *brow, float out[DOT_M][DOT_N]) {
    int64_t kk = 0;
#if defined(__GNUC__) || defined(__clang__)
    ep_v8 acc[DOT_M][DOT_N];
    for (int r = 0; r < DOT_M; r++)
        for (int j = 0; j < DOT_N; j++) acc[r][j] = ep_splat(0.0f);
    for (; kk + EP_GEMM_LANES <= k; kk += EP_GEMM_LANES) {
        ep_v8 b[DOT_N];
#pragma GCC unroll 4
        for (int j = 0; j < DOT_N; j++) __builtin_memcpy(&b[j], brow[j] + kk, sizeof b[j]);
#pragma GCC unroll 4
        for (int r = 0; r < DOT_M; r++) {
            ep_v8 a;
            __builtin_memcpy(&a, arow[r] + kk, sizeof a);
#pragma GCC unroll 4
            for (int j = 0; j < DOT_N; j++) acc[r][j] += a * b[j];
        }
    }
    for (int r = 0; r < DOT_M; r++)
        for (int j = 0; j < DOT_N; j++) out[r][j] = lanes_sum(&acc[r][j]);
#else
    for (int r = 0; r < DOT_M; r++)
        for (int j = 0; j < DOT_N; j++) out[r][j] = 0.0f;
#endif
    for (; kk < k; kk++)
        for (int r = 0; r < DOT_M; r++)
            for (int j = 0; j < DOT_N; j++) out[r][j] += arow[r][kk] * brow[j][kk];
}

/* Rows of A per step against a single row of Bt (a product with one column: R h, a one-position conv). */
#define DOT_ROWS 8

/* DOT_ROWS rows of A (an edge block repeats its last row) against one row b, as dot_block does for a block. */
static void dot_rows(int64_t k, const float *const *arow, const float *b, float out[DOT_ROWS]) {
    int64_t kk = 0;
#if defined(__GNUC__) || defined(__clang__)
    ep_v8 acc[DOT_ROWS];
    for (int r = 0; r < DOT_ROWS; r++) acc[r] = ep_splat(0.0f);
    for (; kk + EP_GEMM_LANES <= k; kk += EP_GEMM_LANES) {
        ep_v8 bv;
        __builtin_memcpy(&bv, b + kk, sizeof bv);
        for (int r = 0; r < DOT_ROWS; r++) {
            ep_v8 a;
            __builtin_memcpy(&a, arow[r] + kk, sizeof a);
            acc[r] += a * bv;
        }
    }
    for (int r = 0; r < DOT_ROWS; r++) out[r] = lanes_sum(&acc[r]);
#else
    for (int r = 0; r < DOT_ROWS; r++) out[r] = 0.0f;
#endif
    for (; kk < k; kk++)
        for (int r = 0; r < DOT_ROWS; r++) out[r] += arow[r][kk] * b[kk];
}

static void store_dot(float v, float bias, float *at, const ep_epilogue *e) {
    v = e->alpha * v + bias;
    if (e->accumulate) v += *at;
    *at = e->act == EP_ACT_NONE ? v : ep_activate(e->act, v, e->act_a, e->act_b);
}

void ep_gemm_dot(int64_t m, int64_t n, int64_t k, const float *a, const float *bt, int64_t bt_row, float *c,
                 int64_t c_row, int64_t c_col, const ep_epilogue *e) {
    if (n == 1) {
        for (int64_t i = 0; i < m; i += DOT_ROWS) {
            int64_t rows = m - i < DOT_ROWS ? m - i : DOT_ROWS;
            const float *arow[DOT_ROWS];
            for (int r = 0; r < DOT_ROWS; r++) arow[r] = a + (i + (r < rows ? r : rows - 1)) * k;
            float out[DOT_ROWS];
            dot_rows(k, arow, bt, out);
            for (int64_t r = 0; r < rows; r++) store_dot(out[r], e->row_bias ? e->row_bias[i + r] : 0.0f,
                                                         c + (i + r) * c_row, e);
        }
        return;
    }
    for (int64_t i = 0; i < m; i += DOT_M) {
        int64_t rows = m - i < DOT_M ? m - i : DOT_M;
        const float *arow[DOT_M];
        for (int r = 0; r < DOT_M; r++) arow[r] = a + (i + (r < rows ? r : rows - 1)) * k;
        for (int64_t j0 = 0; j0 < n; j0 += DOT_N) {
            int64_t cols = n - j0 < DOT_N ? n - j0 : DOT_N;
            const float *brow[DOT_N];
            for (int j = 0; j < DOT_N; j++) brow[j] = bt + (j0 + (j < cols ? j : cols - 1)) * bt_row;
            float out[DOT_M][DOT_N];
            dot_block(k, arow, brow, out);
            for (int64_t r = 0; r < rows; r++) {
                float bias = e->row_bias ? e->row_bias[i + r] : 0.0f;
                for (int64_t j = 0; j < cols; j++)
                    store_dot(out[r][j], bias, c + (i + r) * c_row + (j0 + j) * c_col, e);
            }
        }
    }
}

void ep_gemv(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, int64_t a_col, const float *b,
             int64_t b_row, float *c, int64_t ldc, const ep_epilogue *e) {
    float acc[EP_GEMV_ROWS * EP_GEMV_COLUMNS];
    int64_t width = m > 0 ? EP_GEMV_ROWS * EP_GEMV_COLUMNS / m / 16 * 16 : EP_GEMV_COLUMNS;
    for (int64_t j0 = 0; j0 < n; j0 += width) {
        int64_t nb = n - j0 < width ? n - j0 : width;
        for (int64_t j = 0; j < m * width; j++) acc[j] = 0.0f;
        int64_t kk = 0;
        for (; kk + 4 <= k; kk += 4) {
            const float *r0 = b + kk * b_row + j0, *r1 = r0 + b_row, *r2 = r1 + b_row, *r3 = r2 + b_row;
            for (int64_t i = 0; i < m; i++) {
                const float *ai = a + i * a_row + kk * a_col;
                float v0 = ai[0], v1 = ai[a_col], v2 = ai[2 * a_col], v3 = ai[3 * a_col];
                float *sum = acc + i * width;
                for (int64_t j = 0; j < nb; j++) sum[j] = sum[j] + v0 * r0[j] + v1 * r1[j] + v2 * r2[j] + v3 * r3[j];
            }
        }
        for (; kk < k; kk++) {
            const float *row = b + kk * b_row + j0;
            for (int64_t i = 0; i < m; i++) {
                float v = a[i * a_row + kk * a_col];
                float *sum = acc + i * width;
                for (int64_t j = 0; j < nb; j++) sum[j] += v * row[j];
            }
        }
        for (int64_t i = 0; i < m; i++) {
            float *out = c + i * ldc + j0, bias = e->row_bias ? e->row_bias[i] : 0.0f;
            for (int64_t j = 0; j < nb; j++) {
                float v = e->alpha * acc[i * width + j] + bias;
                if (e->accumulate) v += out[j];
                out[j] = v;
            }
            ep_activate_row(e->act, out, out, nb, e->act_a, e->act_b);
        }
    }
}
