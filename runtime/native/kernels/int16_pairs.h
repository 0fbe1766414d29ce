/* The int16-pair micro-kernel of the int8 products on AVX2 (Int8MatMul, RoundTripMatMul): rows of A as int16,
   a panel of B's 32 columns as int16 pairs of rows (rows 2q and 2q + 1 of a column side by side, the 32 columns of
   pair q in a row of 64), multiplied with vpmaddwd: 16 multiply-adds an instruction, exact in int32. */
#ifndef EP_INT16_PAIRS_H
#define EP_INT16_PAIRS_H

#include <immintrin.h>
#include <stdint.h>

#include "gemm.h"

enum { PAIR_PANEL = EP_PREPACKED_COLUMNS, PAIR_MR = 6 };

/* The int32 sums of row r over two int16 pairs of rows of B (8 columns each): vpmaddwd, then added. */
#define PAIR_SUMS(r)                                                                                                \
    {                                                                                                               \
        int32_t two;                                                                                                \
        __builtin_memcpy(&two, xrow[r] + 2 * q, sizeof two);                                                        \
        __m256i a = _mm256_set1_epi32(two);                                                                         \
        lo##r = _mm256_add_epi32(lo##r, _mm256_madd_epi16(a, b0));                                                  \
        hi##r = _mm256_add_epi32(hi##r, _mm256_madd_epi16(a, b1));                                                  \
    }

/* Rows [i, i + rows) of a panel's columns [16 s, 16 s + 16), on int16 pairs: each row's int32 sums into `sums`
   (a row of the panel's 32 columns, the other half left as it is; rows past `rows` repeat the last one). */
static inline void pair_tile(const int16_t *x, int64_t padded, const int16_t *pairs, int64_t i, int64_t rows, int s,
                             int32_t sums[PAIR_MR][PAIR_PANEL]) {
    const int16_t *xrow[PAIR_MR];
    for (int r = 0; r < PAIR_MR; r++) xrow[r] = x + (i + (r < rows ? r : rows - 1)) * padded;
    __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0, lo2 = lo0, hi2 = lo0;
    __m256i lo3 = lo0, hi3 = lo0, lo4 = lo0, hi4 = lo0, lo5 = lo0, hi5 = lo0;
    for (int64_t q = 0; q < padded / 2; q++) {
        const int16_t *row = pairs + q * PAIR_PANEL * 2 + 32 * s;
        __m256i b0 = _mm256_loadu_si256((const __m256i *)row), b1 = _mm256_loadu_si256((const __m256i *)(row + 16));
        PAIR_SUMS(0) PAIR_SUMS(1) PAIR_SUMS(2) PAIR_SUMS(3) PAIR_SUMS(4) PAIR_SUMS(5)
    }
    __m256i all[PAIR_MR][2] = {{lo0, hi0}, {lo1, hi1}, {lo2, hi2}, {lo3, hi3}, {lo4, hi4}, {lo5, hi5}};
    for (int r = 0; r < PAIR_MR; r++)
        for (int h = 0; h < 2; h++) _mm256_storeu_si256((__m256i *)(sums[r] + 16 * s + 8 * h), all[r][h]);
}

#endif
