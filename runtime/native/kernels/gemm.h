/* The matrix-product engine under Conv, ConvTranspose, MatMul and Gemm: B packed in panels of two vectors' width, a
   register-blocked micro-kernel of MR rows (vector extensions map it to AVX-512, AVX2/FMA, NEON or SIMD128; scalar
   otherwise). */
#ifndef EP_GEMM_H
#define EP_GEMM_H

#include "../ep_internal.h"

/* Lanes per vector, vectors per panel row (NR = NV * LANES columns) and rows per tile (MR): MR * NV accumulators
   must fit the vector registers with room for the B vectors and a splat of A. WebAssembly SIMD128 runs on the
   engine's 16 (x64) or 32 (arm64) 128-bit registers, one of them held as scratch by V8. AVX-512's 32 registers
   take 8 rows (16 sums), so that each B vector loaded feeds 8 rows rather than 6. */
#if defined(__AVX512F__)
#define EP_GEMM_LANES 16
#define EP_GEMM_MR 8
#elif defined(__wasm_simd128__)
#ifndef EP_GEMM_LANES
#define EP_GEMM_LANES 4
#endif
#ifndef EP_GEMM_MR
#define EP_GEMM_MR 4
#endif
#else
#define EP_GEMM_LANES 8
#define EP_GEMM_MR 6
#endif
#ifndef EP_GEMM_NV
#define EP_GEMM_NV 2
#endif
#define EP_GEMM_NR (EP_GEMM_NV * EP_GEMM_LANES)
#define EP_GEMM_BLOCK 256

/* The micro-kernels' vector of EP_GEMM_LANES floats (vector extensions map it to AVX-512, AVX2, NEON or SIMD128) and
   a float across all its lanes: x + -0 is x for every x (+0 + 0 would turn -0 into +0), so the compiler drops the
   add, a bare splat. */
#if defined(__GNUC__) || defined(__clang__)
typedef float ep_v8 __attribute__((vector_size(EP_GEMM_LANES * 4)));
#define ep_splat(x) ((float)(x) + -(ep_v8){0})
#endif

typedef struct ep_epilogue {
    const float *row_bias;  /* one per row of C, or NULL */
    float alpha;            /* scales the product */
    int accumulate;         /* add to what C holds */
    int32_t act;
    float act_a, act_b;
} ep_epilogue;

float ep_activate(int32_t act, float x, float a, float b);
/* The activation of n floats x into y (in place when x == y), one loop per kind (so each vectorizes). */
void ep_activate_row(int32_t act, const float *x, float *y, int64_t n, float a, float b);

/* tanh of n floats x into y (in place when x == y), 8 lanes at a time. */
void ep_tanh_row(const float *x, float *y, int64_t n);

/* Columns per block for a product with K rows in B, given the scratch (0 when it cannot hold one panel). */
int64_t ep_gemm_block_columns(int64_t k, size_t scratch_floats);

/* Packs columns [n0, n0 + nb) of a strided K x N matrix B into panels. */
void ep_pack_strided(float *packed, const float *b, int64_t k, int64_t n0, int64_t nb, int64_t row_stride,
                     int64_t col_stride);

/* C[0:M, 0:nb] (+)= alpha * A[M, K] x B, then bias and activation; A is strided, C has leading dim ldc. B is in
   panels of NR columns whose rows are `width` floats apart, panel p at panels + p / width * width * k + p % width:
   packed per call (width NR), at plan time (width EP_PREPACKED_COLUMNS, read as width / NR panels side by side), or
   a row-major matrix of `width` columns, width a multiple of NR (nb <= width). With `next_panel` (B packed at plan
   time, in L3 or memory, or Winograd's blocks in L2), the first tile of a panel asks the cache for rows further
   down it, and every other tile for the next panel's rows (its own are in cache since the first tile read them):
   the next panel is then in cache when its first tile starts, and memory is read while the micro-kernel computes,
   not only while the first tile waits. Without it (B packed per call, in L1) no tile asks for anything. */
void ep_gemm_panels(int64_t m, int64_t k, int64_t nb, const float *a, int64_t a_row, int64_t a_col, const float *panels,
                    int64_t width, float *c, int64_t ldc, const ep_epilogue *epilogue, int next_panel);

/* Whether the micro-kernel asks the cache for rows ahead (next_panel; the first tile of a panel read in place): not
   on wasm, which has no prefetch (the page is spared the bytes). */
#ifdef __wasm__
#define EP_GEMM_PREFETCH 0
#else
#define EP_GEMM_PREFETCH 1
#endif

/* ep_gemm_panels with B packed per call (width NR). */
void ep_gemm_packed(int64_t m, int64_t k, int64_t nb, const float *a, int64_t a_row, int64_t a_col,
                    const float *packed, float *c, int64_t ldc, const ep_epilogue *epilogue);

/* Columns per panel of a B packed at plan time (PackedMatMul): the widest NR, so that any build reads such a panel
   as EP_PREPACKED_COLUMNS / NR panels of its own side by side. */
#define EP_PREPACKED_COLUMNS 32

/* C[0:M, 0:N] (leading dim ldc) (+)= A[M, K] (rows a_row apart, each contiguous) x B, B packed at plan time:
   panels of EP_PREPACKED_COLUMNS columns, each K rows of them, zero past column N; then bias and activation. */
void ep_gemm_prepacked(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, const float *panels, float *c,
                       int64_t ldc, const ep_epilogue *epilogue);

/* Panel p (K x EP_PREPACKED_COLUMNS floats) of a PackedMatMul's B: in place for a float32 B, dequantized into
   `scratch` (the worker's) for a quantized one. */
typedef const float *(*ep_panel_source)(void *state, int64_t p, float *scratch);

/* For an op with params N, activation, activation a, activation b and an optional bias per column (PackedMatMul,
   Int8MatMul): every row of node n's output set to the bias, and the epilogue that adds the product to it (or
   stores it, without a bias) and activates. */
ep_epilogue ep_column_bias(const ep_node *n, const ep_tensor *bias);

/* Runs PackedMatMul node n (A, B, optional bias; params N, activation, a, b) a panel of B at a time, each panel
   from `source`, the panels split into tasks for the context's workers. */
void ep_packed_matmul(const ep_node *n, ep_panel_source source, void *state, const ep_context *ctx);

/* C[0:M, 0:NR] (one full panel of columns) (+)= alpha * A x B, row kk of B read in place: the NR floats at
   b + offsets[kk] (a conv's input, without im2col), then bias and activation. */
void ep_gemm_direct(int64_t m, int64_t k, const float *a, int64_t a_row, int64_t a_col, const float *b,
                    const int32_t *offsets, float *c, int64_t ldc, const ep_epilogue *epilogue);

/* Products with at most this many rows of output run as ep_gemv: the micro-kernel's MR rows would go mostly
   unused, and packing B would cost more than the product. */
#define EP_GEMV_ROWS 4
/* Columns of C an ep_gemv of EP_GEMV_ROWS rows sums at a time (on the stack); fewer rows sum proportionally more
   (2048 for one: an LSTM's recurrent R h over 4 gates of 512 then streams R in one contiguous sweep, and
   ddddocr-ocr took 0.96 of its time). */
#define EP_GEMV_COLUMNS 512

/* C[0:M, 0:N] (+)= alpha * A[M, K] x B[K, N] for M <= EP_GEMV_ROWS, B's rows contiguous (b_row apart), then bias
   and activation: each row of B read once, in place, and added to every row's sums (vectors along N). */
void ep_gemv(int64_t m, int64_t k, int64_t n, const float *a, int64_t a_row, int64_t a_col, const float *b,
             int64_t b_row, float *c, int64_t ldc, const ep_epilogue *epilogue);

/* C[i, j] (+)= alpha * dot(A row i, Bt row j) over K, then bias (per row of A) and activation, at c[i * c_row +
   j * c_col]: A is M x K with rows contiguous in K, Bt is N x K with its rows bt_row apart. For products with few
   columns (a narrow conv's output positions, a recurrent op's steps): nothing packed, the weights (A) read once, in
   vectors along K. */
void ep_gemm_dot(int64_t m, int64_t n, int64_t k, const float *a, const float *bt, int64_t bt_row, float *c,
                 int64_t c_row, int64_t c_col, const ep_epilogue *epilogue);

#endif
