/* The row loops of Binary: float32 arithmetic in elementwise.c, the exact kinds in binary_exact.c. */
#ifndef EP_BINARY_ROWS_H
#define EP_BINARY_ROWS_H

#include "wide.h"

/* One broadcast row of `py[i] = EXPR` over x (from pa) and z (from pb) of type T: both contiguous, one of them one
   value, or both strided. */
#define EP_ROW_LOOP(EXPR)                                                                                           \
    do {                                                                                                            \
        if (row.step[0] == 1 && row.step[1] == 1) {                                                                 \
            for (int64_t i = 0; i < row.length; i++) { T x = pa[i], z = pb[i]; py[i] = EXPR; }                       \
        } else if (row.step[0] == 1 && row.step[1] == 0) {                                                          \
            T z = pb[0];                                                                                             \
            for (int64_t i = 0; i < row.length; i++) { T x = pa[i]; py[i] = EXPR; }                                 \
        } else if (row.step[0] == 0 && row.step[1] == 1) {                                                          \
            T x = pa[0];                                                                                             \
            for (int64_t i = 0; i < row.length; i++) { T z = pb[i]; py[i] = EXPR; }                                 \
        } else {                                                                                                    \
            for (int64_t i = 0; i < row.length; i++) {                                                              \
                T x = pa[i * row.step[0]], z = pb[i * row.step[1]];                                                 \
                py[i] = EXPR;                                                                                        \
            }                                                                                                       \
        }                                                                                                           \
    } while (0)

/* Comparisons of float32 (bool out). */
void ep_compare_rows_f32(const ep_node *n, const ep_broadcast *b);
/* Arithmetic and comparisons of int32 or int64, both inputs of that dtype. */
void ep_binary_rows_integer(const ep_node *n, const ep_broadcast *b);
/* And, Or, Xor of bools. */
void ep_logic_rows(const ep_node *n, const ep_broadcast *b);

#endif
