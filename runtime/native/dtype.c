/* Element access for every dtype the core holds: sizes in bits, and reading or writing one element as a double
   (with ONNX Cast's rounding and saturation) or as the 64 bits of an integer. Sub-byte dtypes are packed, the
   first element in the lowest bits of a byte, as ONNX stores them. */
#include "ep_internal.h"

int ep_dtype_bits(int32_t dtype) {
    switch (dtype) {
    case EP_F64: case EP_I64: case EP_U64: return 64;
    case EP_F32: case EP_I32: case EP_U32: return 32;
    case EP_F16: case EP_BF16: case EP_I16: case EP_U16: return 16;
    case EP_U8: case EP_I8: case EP_BOOL: case EP_F8E4M3FN: case EP_F8E4M3FNUZ: case EP_F8E5M2:
    case EP_F8E5M2FNUZ: case EP_F8E8M0: return 8;
    case EP_I4: case EP_U4: case EP_F4E2M1: return 4;
    case EP_I2: case EP_U2: return 2;
    default: return 0;
    }
}

int ep_core_dtype(int32_t dtype) {
    return dtype == EP_F32 || dtype == EP_U8 || dtype == EP_I8 || dtype == EP_I32 || dtype == EP_I64 ||
           dtype == EP_BOOL;
}

size_t ep_dtype_size(int32_t dtype) {
    int bits = ep_dtype_bits(dtype);
    return bits >= 8 ? (size_t)bits / 8 : 0;
}

size_t ep_tensor_bytes(int32_t dtype, int64_t count) {
    return (size_t)(((uint64_t)count * (uint64_t)ep_dtype_bits(dtype) + 7) / 8);
}

int ep_dtype_is_float(int32_t dtype) {
    switch (dtype) {
    case EP_F32: case EP_F64: case EP_F16: case EP_BF16: case EP_F8E4M3FN: case EP_F8E4M3FNUZ: case EP_F8E5M2:
    case EP_F8E5M2FNUZ: case EP_F8E8M0: case EP_F4E2M1: return 1;
    default: return 0;
    }
}

int ep_dtype_is_signed(int32_t dtype) {
    return dtype == EP_I8 || dtype == EP_I16 || dtype == EP_I32 || dtype == EP_I64 || dtype == EP_I4 ||
           dtype == EP_I2;
}

/* A small float format: exponent and mantissa widths, bias, and how it spells infinity, NaN and minus zero. */
typedef struct minifloat {
    int exp_bits, man_bits, bias;
    int ieee;     /* the top exponent is infinity (mantissa 0) and NaN: float16, bfloat16, float8 e5m2 */
    int uz;       /* no minus zero: NaN is the sign bit alone (the fnuz float8s) */
    int nan_all;  /* no infinity: NaN is every bit set but the sign (float8 e4m3fn) */
} minifloat;

static const minifloat F16 = {5, 10, 15, 1, 0, 0}, BF16 = {8, 7, 127, 1, 0, 0}, E4M3FN = {4, 3, 7, 0, 0, 1},
                       E4M3FNUZ = {4, 3, 8, 0, 1, 0}, E5M2 = {5, 2, 15, 1, 0, 0}, E5M2FNUZ = {5, 2, 16, 0, 1, 0},
                       E2M1 = {2, 1, 1, 0, 0, 0};

static uint64_t double_bits(double value) {
    uint64_t bits;
    ep_memcpy(&bits, &value, sizeof bits);
    return bits;
}

static double power_of_two(int e) {
    return e < -1022 ? ep_double_from_bits(1ull << (e + 1074)) : ep_double_from_bits((uint64_t)(e + 1023) << 52);
}

static uint32_t nan_code(const minifloat *f) {
    uint32_t sign = 1u << (f->exp_bits + f->man_bits);
    if (f->uz) return sign;
    if (f->ieee) return ((1u << f->exp_bits) - 1) << f->man_bits | 1u << (f->man_bits - 1);
    return f->nan_all ? sign - 1 : sign; /* e2m1 has no NaN: minus zero, as ml_dtypes writes it */
}

static uint32_t largest_code(const minifloat *f) {
    uint32_t top = (1u << (f->exp_bits + f->man_bits)) - 1;
    if (f->ieee) return top - (1u << f->man_bits);
    return f->nan_all ? top - 1 : top;
}

static double decode(const minifloat *f, uint32_t code) {
    uint32_t sign = code >> (f->exp_bits + f->man_bits) & 1, field = code >> f->man_bits & ((1u << f->exp_bits) - 1);
    uint32_t man = code & ((1u << f->man_bits) - 1);
    double nan = ep_double_from_bits(0x7FF8000000000000ull);
    if (f->uz && code == nan_code(f)) return nan;
    if (f->nan_all && (code & ~(1u << (f->exp_bits + f->man_bits))) == nan_code(f)) return nan;
    if (f->ieee && field == (1u << f->exp_bits) - 1) {
        double infinity = ep_double_from_bits(0x7FF0000000000000ull);
        return man ? nan : (sign ? -infinity : infinity);
    }
    double value = field ? (double)(man | 1u << f->man_bits) * power_of_two((int)field - f->bias - f->man_bits)
                         : (double)man * power_of_two(1 - f->bias - f->man_bits);
    return sign ? -value : value;
}

/* Rounds to nearest even. Beyond the largest finite value (infinity included): that value when saturating, else
   infinity where the format has one, else NaN. */
static uint32_t encode(const minifloat *f, double x, int saturate) {
    uint32_t sign_bit = 1u << (f->exp_bits + f->man_bits);
    if (x != x) return nan_code(f);
    uint32_t sign = x < 0 ? sign_bit : 0;
    double a = x < 0 ? -x : x;
    uint32_t overflow = saturate ? sign | largest_code(f)
                                 : f->ieee ? sign | (largest_code(f) + 1) : (f->uz ? nan_code(f) : sign | nan_code(f));
    if (a == 0.0) return f->uz ? 0 : sign;
    if (a > 1.7976931348623157e308) return overflow;
    int e = (int)((double_bits(a) >> 52) & 0x7FF) - 1023;
    if (e < 1 - f->bias) e = 1 - f->bias;
    double q = a * power_of_two(f->man_bits - e);
    double r = (double)(uint64_t)q, rest = q - r;
    if (rest > 0.5 || (rest == 0.5 && ((uint64_t)r & 1))) r += 1.0;
    uint64_t mantissa = (uint64_t)r;
    if (mantissa == 0) return f->uz ? 0 : sign;
    if (mantissa >= (2ull << f->man_bits)) {
        mantissa >>= 1;
        e += 1;
    }
    uint32_t code = mantissa < (1ull << f->man_bits) ? (uint32_t)mantissa
                                                      : (uint32_t)(e + f->bias) << f->man_bits |
                                                            (uint32_t)(mantissa - (1ull << f->man_bits));
    if (e + f->bias > (1 << f->exp_bits) - 1 || code > largest_code(f)) return overflow;
    return sign | code;
}

static uint64_t read_bits(const void *data, int bits, int64_t i) {
    const uint8_t *bytes = (const uint8_t *)data;
    switch (bits) {
    case 64: { uint64_t v; ep_memcpy(&v, bytes + 8 * i, 8); return v; }
    case 32: { uint32_t v; ep_memcpy(&v, bytes + 4 * i, 4); return v; }
    case 16: { uint16_t v; ep_memcpy(&v, bytes + 2 * i, 2); return v; }
    case 8: return bytes[i];
    default: {
        int per_byte = 8 / bits;
        return (uint64_t)(bytes[i / per_byte] >> (bits * (int)(i % per_byte))) & ((1u << bits) - 1);
    }
    }
}

static void write_bits(void *data, int bits, int64_t i, uint64_t v) {
    uint8_t *bytes = (uint8_t *)data;
    switch (bits) {
    case 64: ep_memcpy(bytes + 8 * i, &v, 8); return;
    case 32: { uint32_t w = (uint32_t)v; ep_memcpy(bytes + 4 * i, &w, 4); return; }
    case 16: { uint16_t w = (uint16_t)v; ep_memcpy(bytes + 2 * i, &w, 2); return; }
    case 8: bytes[i] = (uint8_t)v; return;
    default: {
        int per_byte = 8 / bits, shift = bits * (int)(i % per_byte);
        uint8_t mask = (uint8_t)(((1u << bits) - 1) << shift);
        bytes[i / per_byte] = (uint8_t)((bytes[i / per_byte] & ~mask) | ((v << shift) & mask));
    }
    }
}

uint64_t ep_load_int(const void *data, int32_t dtype, int64_t i) {
    int bits = ep_dtype_bits(dtype);
    uint64_t v = read_bits(data, bits, i);
    if (dtype == EP_BOOL) return v != 0;
    if (ep_dtype_is_signed(dtype) && bits < 64 && (v >> (bits - 1) & 1)) v |= ~0ull << bits;
    return v;
}

void ep_store_int(void *data, int32_t dtype, int64_t i, uint64_t v) {
    write_bits(data, ep_dtype_bits(dtype), i, dtype == EP_BOOL ? v != 0 : v);
}

static const minifloat *format_of(int32_t dtype) {
    switch (dtype) {
    case EP_F16: return &F16;
    case EP_BF16: return &BF16;
    case EP_F8E4M3FN: return &E4M3FN;
    case EP_F8E4M3FNUZ: return &E4M3FNUZ;
    case EP_F8E5M2: return &E5M2;
    case EP_F8E5M2FNUZ: return &E5M2FNUZ;
    case EP_F4E2M1: return &E2M1;
    default: return 0;
    }
}

double ep_load_real(const void *data, int32_t dtype, int64_t i) {
    const minifloat *f = format_of(dtype);
    if (f) return decode(f, (uint32_t)read_bits(data, ep_dtype_bits(dtype), i));
    switch (dtype) {
    case EP_F32: return ((const float *)data)[i];
    case EP_F64: return ((const double *)data)[i];
    case EP_F8E8M0: {
        uint32_t code = ((const uint8_t *)data)[i];
        return code == 0xFF ? ep_double_from_bits(0x7FF8000000000000ull) : power_of_two((int)code - 127);
    }
    }
    uint64_t v = ep_load_int(data, dtype, i);
    return ep_dtype_is_signed(dtype) ? (double)(int64_t)v : (double)v;
}

/* Truncated toward zero; the wider integers saturate, the sub-byte ones keep their low bits (as ml_dtypes does). */
static uint64_t to_integer(int32_t dtype, double v) {
    int bits = ep_dtype_bits(dtype);
    if (dtype == EP_BOOL) return v != 0.0;
    if (v != v) return 0;
    if (bits < 8) return (v > -9.2233720368547758e18 && v < 9.2233720368547758e18) ? (uint64_t)(int64_t)v : 0;
    if (ep_dtype_is_signed(dtype)) {
        uint64_t largest = (1ull << (bits - 1)) - 1;
        if (v >= power_of_two(bits - 1)) return largest;
        if (v <= -power_of_two(bits - 1)) return ~largest;
        return (uint64_t)(int64_t)v;
    }
    if (v <= 0.0) return 0;
    if (v >= power_of_two(bits)) return bits == 64 ? ~0ull : (1ull << bits) - 1;
    return (uint64_t)v;
}

void ep_store_real(void *data, int32_t dtype, int64_t i, double v, int saturate) {
    const minifloat *f = format_of(dtype);
    if (f) {
        int saturating = dtype == EP_F4E2M1 || (saturate && dtype != EP_F16 && dtype != EP_BF16);
        write_bits(data, ep_dtype_bits(dtype), i, encode(f, v, saturating));
        return;
    }
    switch (dtype) {
    case EP_F32: ((float *)data)[i] = (float)v; return;
    case EP_F64: ((double *)data)[i] = v; return;
    }
    write_bits(data, ep_dtype_bits(dtype), i, to_integer(dtype, v));
}
