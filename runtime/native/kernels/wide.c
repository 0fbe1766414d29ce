/* Binary kinds on float64, float16, bfloat16, the 8- and 16-bit integers, uint32 and uint64: element by element,
   floats computed in double and rounded once to the dtype, integers in 64 bits keeping the dtype's low bits. */
#include "wide.h"

int ep_wide_real(int32_t dtype) { return dtype == EP_F32 || dtype == EP_F64 || dtype == EP_F16 || dtype == EP_BF16; }

int ep_wide_integer(int32_t dtype) {
    switch (dtype) {
    case EP_I8: case EP_U8: case EP_I16: case EP_U16: case EP_I32: case EP_U32: case EP_I64: case EP_U64: return 1;
    default: return 0;
    }
}

/* x to the power y; an integral y by repeated squaring, so integer powers stay exact. */
static double power(double x, double y) {
    if (y != y || y - (double)(int64_t)y != 0.0 || y > 1e9 || y < -1e9) return (double)ep_powf((float)x, (float)y);
    int64_t e = (int64_t)y;
    double base = e < 0 ? 1.0 / x : x, result = 1.0;
    for (uint64_t k = (uint64_t)(e < 0 ? -e : e); k; k >>= 1, base *= base)
        if (k & 1) result *= base;
    return result;
}

/* a - b * n for the integer n that truncates a / b, exactly: b scaled by powers of two is subtracted while it fits
   (each subtraction is exact, as the two terms are within a factor of two). */
static double truncated_remainder(double a, double b) {
    double x = a < 0 ? -a : a, y = b < 0 ? -b : b;
    if (a != a || b != b || x - x != 0.0 || y == 0.0) return ep_double_from_bits(0x7FF8000000000000ull);
    if (y - y != 0.0 || x < y) return a;
    double m = y;
    while (m <= x * 0.5) m *= 2.0;
    for (; m >= y; m *= 0.5)
        if (x >= m) x -= m;
    return a < 0 ? -x : x;
}

double ep_remainder(double a, double b, int floored) {
    double r = truncated_remainder(a, b);
    return floored && r != 0.0 && (r < 0) != (b < 0) ? r + b : r;
}

static double binary_real(int32_t kind, double a, double b) {
    switch (kind) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return power(a, b);
    case B_MAX: return a != a ? a : (b != b ? b : (a > b ? a : b));
    case B_MIN: return a != a ? a : (b != b ? b : (a < b ? a : b));
    case B_MOD:
    case B_FMOD: return ep_remainder(a, b, kind == B_MOD);
    case B_EQUAL: return a == b;
    case B_LESS: return a < b;
    case B_GREATER: return a > b;
    case B_LESS_OR_EQUAL: return a <= b;
    }
    return a >= b;
}

static int less(uint64_t a, uint64_t b, int is_signed) { return is_signed ? (int64_t)a < (int64_t)b : a < b; }

/* Division, Mod (the sign of the divisor) and Fmod (the sign of the dividend) on integers; by zero gives 0, as do
   the overflowing cases. */
static uint64_t divide(int32_t kind, uint64_t a, uint64_t b, int is_signed) {
    if (b == 0) return 0;
    if (!is_signed) return kind == B_DIV ? a / b : a % b;
    int64_t x = (int64_t)a, y = (int64_t)b;
    if (y == -1) return kind == B_DIV ? 0u - a : 0;
    int64_t r = x % y;
    if (kind == B_DIV) return (uint64_t)(x / y);
    return (uint64_t)((kind == B_MOD && r != 0 && ((r < 0) != (y < 0))) ? r + y : r);
}

static uint64_t power_int(uint64_t base, uint64_t exponent, int is_signed) {
    if (is_signed && (int64_t)exponent < 0) return base == 1 ? 1 : (base == ~0ull ? ((exponent & 1) ? base : 1) : 0);
    uint64_t result = 1;
    for (; exponent; exponent >>= 1, base *= base)
        if (exponent & 1) result *= base;
    return result;
}

static uint64_t binary_int(int32_t kind, uint64_t a, uint64_t b, int is_signed, int bits) {
    switch (kind) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV:
    case B_MOD:
    case B_FMOD: return divide(kind, a, b, is_signed);
    case B_POW: return power_int(a, b, is_signed);
    case B_MAX: return less(a, b, is_signed) ? b : a;
    case B_MIN: return less(a, b, is_signed) ? a : b;
    case B_EQUAL: return a == b;
    case B_LESS: return less(a, b, is_signed);
    case B_GREATER: return less(b, a, is_signed);
    case B_LESS_OR_EQUAL: return !less(b, a, is_signed);
    case B_GREATER_OR_EQUAL: return !less(a, b, is_signed);
    case B_BIT_SHIFT_LEFT: return b >= (uint64_t)bits ? 0 : a << b;
    case B_BIT_SHIFT_RIGHT: {
        uint64_t fill = is_signed && (int64_t)a < 0 ? ~0ull : 0, low = bits == 64 ? ~0ull : (1ull << bits) - 1;
        return b >= (uint64_t)bits ? fill : (((a ^ fill) & low) >> b) ^ fill;
    }
    case B_BITWISE_AND: return a & b;
    case B_BITWISE_OR: return a | b;
    }
    return a ^ b;
}

int ep_binary_compares(int32_t kind) { return kind >= B_EQUAL && kind <= B_GREATER_OR_EQUAL; }

/* The output has the first input's dtype (bool for comparisons); Pow's exponent may have another dtype, and the
   power is then computed in double. */
void ep_binary_wide(const ep_node *n, const ep_broadcast *b) {
    int32_t kind = n->params[0], dtype = n->in[0]->dtype, b_dtype = n->in[1]->dtype, bits = ep_dtype_bits(dtype);
    int real = ep_wide_real(dtype) || b_dtype != dtype, is_signed = ep_dtype_is_signed(dtype);
    int compare = ep_binary_compares(kind);
    const void *A = n->in[0]->data, *B = n->in[1]->data;
    void *Y = n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(b, &row, counter); more; more = ep_row_next(b, &row, counter)) {
        for (int64_t i = 0; i < row.length; i++) {
            int64_t ia = row.in[0] + i * row.step[0], ib = row.in[1] + i * row.step[1], iy = row.out + i;
            if (real) {
                double r = binary_real(kind, ep_load_real(A, dtype, ia), ep_load_real(B, b_dtype, ib));
                if (compare) ((uint8_t *)Y)[iy] = r != 0.0;
                else ep_store_real(Y, dtype, iy, r, 1);
            } else {
                uint64_t r = binary_int(kind, ep_load_int(A, dtype, ia), ep_load_int(B, dtype, ib), is_signed, bits);
                if (compare) ((uint8_t *)Y)[iy] = r != 0;
                else ep_store_int(Y, dtype, iy, r);
            }
        }
    }
}
