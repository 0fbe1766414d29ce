/* Elementary functions without libm, computed in double and rounded once: the same results on every build. */
#include "ep_internal.h"

#define EP_LN2 0.69314718055994530942
#define EP_LOG2E 1.44269504088896340736
#define EP_SQRT2 1.41421356237309504880
#define EP_TWO_OVER_SQRT_PI 1.12837916709551257390
#define EP_INV_SQRT_PI 0.56418958354775628695

static double bits_to_double(uint64_t bits) {
    double value;
    ep_memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t float_bits(float value) {
    uint32_t bits;
    ep_memcpy(&bits, &value, sizeof bits);
    return bits;
}

static double exp_d(double x) {
    if (x != x) return x;
    if (x > 709.0) return bits_to_double(0x7FF0000000000000ull);
    if (x < -745.0) return 0.0;
    double kd = x * EP_LOG2E;
    int64_t k = (int64_t)(kd < 0 ? kd - 0.5 : kd + 0.5);
    double r = x - (double)k * 0.693147180369123816490 - (double)k * 1.90821492927058770002e-10;
    double term = 1.0, sum = 1.0;
    for (int n = 1; n <= 13; n++) {
        term *= r / n;
        sum += term;
    }
    /* 2^k in two steps so subnormal results stay right */
    int64_t half = k / 2;
    double scale1 = bits_to_double((uint64_t)(half + 1023) << 52);
    double scale2 = bits_to_double((uint64_t)(k - half + 1023) << 52);
    return sum * scale1 * scale2;
}

static double expm1_d(double x) {
    if (x > -0.5 && x < 0.5) {
        double term = x, sum = x;
        for (int n = 2; n <= 16; n++) {
            term *= x / n;
            sum += term;
        }
        return sum;
    }
    return exp_d(x) - 1.0;
}

static double log_d(float x) {
    uint32_t bits = float_bits(x);
    if (x != x) return x;
    if (x < 0.0f) return bits_to_double(0x7FF8000000000000ull);
    if (x == 0.0f) return -bits_to_double(0x7FF0000000000000ull);
    if ((bits & 0x7F800000u) == 0x7F800000u) return x;
    int exponent = 0;
    if ((bits & 0x7F800000u) == 0) { /* subnormal: scale up by 2^23 */
        x *= 8388608.0f;
        bits = float_bits(x);
        exponent = -23;
    }
    exponent += (int)((bits >> 23) & 0xFF) - 127;
    float mf;
    uint32_t mbits = (bits & 0x7FFFFFu) | 0x3F800000u;
    ep_memcpy(&mf, &mbits, sizeof mf);
    double m = (double)mf;
    if (m > EP_SQRT2) {
        m *= 0.5;
        exponent += 1;
    }
    double f = (m - 1.0) / (m + 1.0), s = f * f;
    double series = 1.0 / 19.0;
    for (int n = 17; n >= 1; n -= 2) series = series * s + 1.0 / n;
    return 2.0 * f * series + exponent * EP_LN2;
}

float ep_logf(float x) { return (float)log_d(x); }

float ep_tanhf(float x) {
    if (x != x) return x;
    if (x > 10.0f) return 1.0f;
    if (x < -10.0f) return -1.0f;
    double e = expm1_d(2.0 * (double)x);
    return (float)(e / (e + 2.0));
}

static double erfc_continued_fraction(double x) {
    double fraction = x;
    for (int n = 60; n >= 1; n--) fraction = x + (n * 0.5) / fraction;
    return exp_d(-x * x) * EP_INV_SQRT_PI / fraction;
}

float ep_erff(float xf) {
    double x = xf, ax = x < 0 ? -x : x;
    if (xf != xf) return xf;
    if (ax >= 4.0) return x < 0 ? -1.0f : 1.0f;
    double result;
    if (ax < 3.0) {
        double x2 = ax * ax, term = ax, sum = ax;
        for (int n = 1; n < 80; n++) {
            term *= -x2 / n;
            double add = term / (2 * n + 1);
            sum += add;
            if (add < 1e-17 * sum && -add < 1e-17 * sum) break;
        }
        result = EP_TWO_OVER_SQRT_PI * sum;
    } else {
        result = 1.0 - erfc_continued_fraction(ax);
    }
    return (float)(x < 0 ? -result : result);
}

float ep_sqrtf(float x) { return __builtin_sqrtf(x); }

float ep_floorf(float x) {
    if (!(x > -8388608.0f && x < 8388608.0f)) return x;
    float t = (float)(int32_t)x;
    return t > x ? t - 1.0f : t;
}

float ep_roundf_even(float x) {
    float f = ep_floorf(x), d = x - f;
    if (d > 0.5f) return f + 1.0f;
    if (d < 0.5f) return f;
    int32_t fi = (int32_t)f;
    return (fi & 1) ? f + 1.0f : f;
}

float ep_powf(float x, float y) {
    if (y == 0.0f) return 1.0f;
    if (y == 1.0f) return x;
    if (y == 2.0f) return x * x;
    if (y == 0.5f && x >= 0.0f) return ep_sqrtf(x);
    if (x != x || y != y) return x + y;
    int integer = ep_floorf(y) == y;
    if (x < 0.0f && !integer) return bits_to_double(0x7FF8000000000000ull);
    float ax = x < 0.0f ? -x : x;
    double result;
    if (ax == 0.0f) result = y > 0.0f ? 0.0 : bits_to_double(0x7FF0000000000000ull);
    else result = exp_d((double)y * log_d(ax));
    if (x < 0.0f && integer) {
        float half = y * 0.5f;
        if (ep_floorf(half) != half) result = -result;
    }
    return (float)result;
}
