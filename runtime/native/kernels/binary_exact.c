/* The Binary kinds whose results are exact, off the float32 arithmetic path that a model's latency depends on:
   comparisons of float32, arithmetic and comparisons of int32 and int64, and logic. */
#include "binary_rows.h"

void ep_compare_rows_f32(const ep_node *n, const ep_broadcast *b) {
    typedef float T;
    int32_t kind = n->params[0];
    const float *A = (const float *)n->in[0]->data, *B = (const float *)n->in[1]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {
        const float *pa = A + row.in[0], *pb = B + row.in[1];
        uint8_t *py = (uint8_t *)n->out[0]->data + row.out;
        switch (kind) {
        case B_EQUAL: EP_ROW_LOOP(x == z); break;
        case B_LESS: EP_ROW_LOOP(x < z); break;
        case B_GREATER: EP_ROW_LOOP(x > z); break;
        case B_LESS_OR_EQUAL: EP_ROW_LOOP(x <= z); break;
        default: EP_ROW_LOOP(x >= z); break;
        }
    }
}

#define EP_BINARY_INT(NAME, TYPE, U, MINV)                                                                           \
    static TYPE NAME##_op(int32_t kind, TYPE a, TYPE b) {                                                            \
        switch (kind) {                                                                                              \
        case B_ADD: return (TYPE)((U)a + (U)b);                                                                      \
        case B_SUB: return (TYPE)((U)a - (U)b);                                                                      \
        case B_MUL: return (TYPE)((U)a * (U)b);                                                                      \
        case B_DIV: return (b == 0 || (a == MINV && b == -1)) ? 0 : (TYPE)(a / b);                                   \
        case B_MOD: {                                                                                                \
            if (b == 0 || (a == MINV && b == -1)) return 0;                                                          \
            TYPE r = (TYPE)(a % b);                                                                                  \
            return (r != 0 && ((r < 0) != (b < 0))) ? (TYPE)(r + b) : r;                                             \
        }                                                                                                            \
        case B_FMOD: return (b == 0 || (a == MINV && b == -1)) ? 0 : (TYPE)(a % b);                                  \
        case B_MAX: return a > b ? a : b;                                                                            \
        case B_MIN: return a < b ? a : b;                                                                            \
        case B_EQUAL: return a == b;                                                                                 \
        case B_LESS: return a < b;                                                                                   \
        case B_GREATER: return a > b;                                                                                \
        case B_LESS_OR_EQUAL: return a <= b;                                                                         \
        case B_GREATER_OR_EQUAL: return a >= b;                                                                      \
        }                                                                                                            \
        return 0;                                                                                                    \
    }                                                                                                                \
    static void NAME##_rows(const ep_node *n, const ep_broadcast *b) {                                               \
        typedef TYPE T;                                                                                              \
        int32_t kind = n->params[0];                                                                                 \
        const T *A = (const T *)n->in[0]->data, *B = (const T *)n->in[1]->data;                                      \
        ep_row row;                                                                                                  \
        int64_t counter[EP_MAX_RANK];                                                                                \
        for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {                \
            const T *pa = A + row.in[0], *pb = B + row.in[1];                                                        \
            uint8_t *flags = (uint8_t *)n->out[0]->data + row.out;                                                   \
            T *py = (T *)n->out[0]->data + row.out;                                                                  \
            switch (kind) {                                                                                          \
            case B_ADD: EP_ROW_LOOP((T)((U)x + (U)z)); break;                                                        \
            case B_SUB: EP_ROW_LOOP((T)((U)x - (U)z)); break;                                                        \
            case B_MUL: EP_ROW_LOOP((T)((U)x * (U)z)); break;                                                        \
            case B_EQUAL: {                                                                                          \
                uint8_t *py = flags; /* the row loop writes py */                                                    \
                EP_ROW_LOOP(x == z);                                                                                 \
                break;                                                                                               \
            }                                                                                                        \
            default:                                                                                                 \
                for (int64_t i = 0; i < row.length; i++) {                                                           \
                    T v = NAME##_op(kind, pa[i * row.step[0]], pb[i * row.step[1]]);                                 \
                    if (ep_binary_compares(kind)) flags[i] = (uint8_t)v;                                             \
                    else py[i] = v;                                                                                  \
                }                                                                                                    \
            }                                                                                                        \
        }                                                                                                            \
    }

EP_BINARY_INT(binary_i32, int32_t, uint32_t, (-2147483647 - 1))
EP_BINARY_INT(binary_i64, int64_t, uint64_t, (-9223372036854775807LL - 1))

void ep_binary_rows_integer(const ep_node *n, const ep_broadcast *b) {
    if (n->in[0]->dtype == EP_I32) binary_i32_rows(n, b);
    else binary_i64_rows(n, b);
}

void ep_logic_rows(const ep_node *n, const ep_broadcast *b) {
    int32_t kind = n->params[0];
    const uint8_t *A = (const uint8_t *)n->in[0]->data, *B = (const uint8_t *)n->in[1]->data;
    uint8_t *Y = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {
        for (int64_t i = 0; i < row.length; i++) {
            int x = A[row.in[0] + i * row.step[0]] != 0, z = B[row.in[1] + i * row.step[1]] != 0;
            Y[row.out + i] = (uint8_t)(kind == B_AND ? (x && z) : kind == B_OR ? (x || z) : (x != z));
        }
    }
}
