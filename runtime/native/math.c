/* Elementary functions without libm, computed in double and rounded once: the same results on every build. */
#include "ep_internal.h"

#define EP_LN2 0.69314718055994530942
#define EP_LOG2E 1.44269504088896340736
#define EP_SQRT2 1.41421356237309504880
#define EP_PI_2 1.57079632679489661923
#define EP_INFINITY ep_double_from_bits(0x7FF0000000000000ull)

static uint32_t float_bits(float value) {
    uint32_t bits;
    ep_memcpy(&bits, &value, sizeof bits);
    return bits;
}

static double exp_d(double x) {
    if (x != x) return x;
    if (x > 709.0) return ep_double_from_bits(0x7FF0000000000000ull);
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
    double scale1 = ep_double_from_bits((uint64_t)(half + 1023) << 52);
    double scale2 = ep_double_from_bits((uint64_t)(k - half + 1023) << 52);
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

static double log_d(double x) {
    if (x != x) return x;
    if (x < 0.0) return ep_double_from_bits(0x7FF8000000000000ull);
    if (x == 0.0) return -ep_double_from_bits(0x7FF0000000000000ull);
    if (x - x != 0.0) return x;
    int exponent = 0;
    if (x < 2.2250738585072014e-308) { /* subnormal: scale up by 2^54 */
        x *= 18014398509481984.0;
        exponent = -54;
    }
    uint64_t bits;
    ep_memcpy(&bits, &x, sizeof bits);
    exponent += (int)(bits >> 52) - 1023;
    double m = ep_double_from_bits((bits & 0xFFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
    if (m > EP_SQRT2) {
        m *= 0.5;
        exponent += 1;
    }
    double f = (m - 1.0) / (m + 1.0), s = f * f;
    double series = 1.0 / 19.0;
    for (int n = 17; n >= 1; n -= 2) series = series * s + 1.0 / n;
    return 2.0 * f * series + exponent * EP_LN2;
}

/* log(1 + x), accurate near 0: log(u) x / (u - 1) with u = 1 + x rounded (Goldberg's trick) */
static double log1p_d(double x) {
    double u = 1.0 + x;
    if (u == 1.0) return x;
    if (u - u != 0.0) return log_d(u);
    return log_d(u) * (x / (u - 1.0));
}

float ep_logf(float x) { return (float)log_d(x); }

float ep_erff(float x) {
    if (x != x) return x;
    float a = x < 0.0f ? -x : x;
    a = a > EP_ERF_LIMIT ? EP_ERF_LIMIT : a;
    float t = a * a, y = EP_ERF_RATIONAL(a, t);
    y = y > 1.0f ? 1.0f : y;
    return x < 0.0f ? -y : y;
}

float ep_tanhf(float x) {
    if (x != x) return x;
    if (x > 10.0f) return 1.0f;
    if (x < -10.0f) return -1.0f;
    double e = expm1_d(2.0 * (double)x);
    return (float)(e / (e + 2.0));
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
    if (x < 0.0f && !integer) return ep_double_from_bits(0x7FF8000000000000ull);
    float ax = x < 0.0f ? -x : x;
    double result;
    if (ax == 0.0f) result = y > 0.0f ? 0.0 : ep_double_from_bits(0x7FF0000000000000ull);
    else result = exp_d((double)y * log_d(ax));
    if (x < 0.0f && integer) {
        float half = y * 0.5f;
        if (ep_floorf(half) != half) result = -result;
    }
    return (float)result;
}

/* 2/pi as a 256-bit number: 32 zero bits (the integer part and room below it), then 224 bits of its fraction */
static const uint32_t TWO_OVER_PI[8] = {0x00000000u, 0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u,
                                        0xF534DDC0u, 0xDB629599u, 0x3C439041u, 0xFE5163ABu};

/* 32 bits of TWO_OVER_PI from bit `at` (0: the most significant) */
static uint32_t two_over_pi_bits(int at) {
    int word = at >> 5, shift = at & 31;
    uint64_t pair = ((uint64_t)TWO_OVER_PI[word] << 32) | TWO_OVER_PI[word + 1];
    return (uint32_t)(pair >> (32 - shift));
}

/* x = q pi/2 + r, |r| <= pi/4, for a finite float x >= pi/4 (Payne-Hanek in integers): x = m 2^e, and m 2^e 2/pi
   modulo 4 needs only the 96 bits of 2/pi from the bit worth 2^(1-e); m times them, kept to 2.62 fixed point,
   gives q (the 2 integer bits, rounded) and r. */
static double reduce_pio2(float x, int *quadrant) {
    uint32_t bits = float_bits(x);
    int at = (int)((bits >> 23) & 0xFF) - 150 + 30;
    uint64_t m = (bits & 0x7FFFFFu) | 0x800000u;
    uint64_t p0 = m * two_over_pi_bits(at), p1 = m * two_over_pi_bits(at + 32), p2 = m * two_over_pi_bits(at + 64);
    uint64_t fixed = (p0 << 32) + p1 + (p2 >> 32);
    uint64_t q = (fixed + (1ull << 61)) >> 62;
    *quadrant = (int)(q & 3);
    return (double)(int64_t)(fixed - (q << 62)) * 3.4061215800865545e-19; /* pi/2 / 2^62 */
}

/* r and the quadrant q of x = q pi/2 + r, for any finite float */
static double reduce(float x, int *quadrant) {
    float ax = x < 0.0f ? -x : x;
    *quadrant = 0;
    if (ax < 0.78539816f) return x;
    double r = reduce_pio2(ax, quadrant);
    if (x > 0.0f) return r;
    *quadrant = (4 - *quadrant) & 3;
    return -r;
}

/* sin on [-pi/4, pi/4]: Taylor series to r^21 */
static double sin_series(double r) {
    double r2 = r * r, term = r, sum = r;
    for (int n = 2; n <= 20; n += 2) {
        term *= -r2 / (n * (n + 1));
        sum += term;
    }
    return sum;
}

/* cos on [-pi/4, pi/4]: Taylor series to r^20 */
static double cos_series(double r) {
    double r2 = r * r, term = 1.0, sum = 1.0;
    for (int n = 1; n <= 19; n += 2) {
        term *= -r2 / (n * (n + 1));
        sum += term;
    }
    return sum;
}

/* sin(x + shift pi/2): the series of the reduced argument that the quadrant picks, with its sign */
static float sin_quadrants(float x, int shift) {
    if (x - x != 0.0f) return x - x;
    int quadrant;
    double r = reduce(x, &quadrant);
    quadrant = (quadrant + shift) & 3;
    double v = (quadrant & 1) ? cos_series(r) : sin_series(r);
    return (float)((quadrant & 2) ? -v : v);
}

/* The odd functions return a zero as it is, keeping its sign. */
float ep_sinf(float x) { return x == 0.0f ? x : sin_quadrants(x, 0); }

float ep_cosf(float x) { return sin_quadrants(x, 1); }

float ep_tanf(float x) {
    if (x == 0.0f) return x;
    if (x - x != 0.0f) return x - x;
    int quadrant;
    double r = reduce(x, &quadrant), s = sin_series(r), c = cos_series(r);
    return (float)((quadrant & 1) ? -c / s : s / c);
}

/* atan: 1/x above 1, two halvings (atan t = 2 atan(t / (1 + sqrt(1 + t^2)))) to below 0.2, then its series */
static double atan_d(double x) {
    double ax = x < 0.0 ? -x : x, t = ax > 1.0 ? 1.0 / ax : ax;
    for (int k = 0; k < 2; k++) t = t / (1.0 + __builtin_sqrt(1.0 + t * t));
    double t2 = t * t, power = t, sum = t;
    for (int n = 3; n <= 25; n += 2) {
        power *= -t2;
        sum += power / n;
    }
    double a = ax > 1.0 ? EP_PI_2 - 4.0 * sum : 4.0 * sum;
    return x < 0.0 ? -a : a;
}

float ep_atanf(float x) { return x == 0.0f ? x : (float)atan_d(x); }

/* x * x and 1 - x * x are exact in double for a float x in [0.5, 1], so asin and acos keep their precision at +-1 */
float ep_asinf(float x) { return x == 0.0f ? x : (float)atan_d(x / __builtin_sqrt(1.0 - (double)x * x)); }

float ep_acosf(float x) { return (float)(2.0 * atan_d(__builtin_sqrt((1.0 - x) / (1.0 + x)))); }

/* (t + t / (t + 1)) / 2 with t = exp(|x|) - 1, without cancellation near 0 */
float ep_sinhf(float x) {
    if (x == 0.0f) return x;
    double ax = x < 0.0f ? -(double)x : x;
    double t = expm1_d(ax), s = ax > 100.0 ? EP_INFINITY : 0.5 * (t + t / (t + 1.0));
    return (float)(x < 0.0f ? -s : s);
}

float ep_coshf(float x) {
    double ax = x < 0.0f ? -(double)x : x;
    if (ax > 100.0) return (float)EP_INFINITY;
    double e = exp_d(ax);
    return (float)(0.5 * (e + 1.0 / e));
}

/* log(2 |x|) above 2^32, where 1 / (4 x^2) is below a double's precision */
float ep_asinhf(float x) {
    if (x == 0.0f) return x;
    double a = x < 0.0f ? -(double)x : x, a2 = a * a;
    double r = a > 4294967296.0 ? log_d(a) + EP_LN2 : log1p_d(a + a2 / (1.0 + __builtin_sqrt(1.0 + a2)));
    return (float)(x < 0.0f ? -r : r);
}

float ep_acoshf(float x) {
    if (!(x >= 1.0f)) return (float)ep_double_from_bits(0x7FF8000000000000ull);
    if (x > 4294967296.0f) return (float)(log_d(x) + EP_LN2);
    double t = (double)x - 1.0;
    return (float)log1p_d(t + __builtin_sqrt(t * (2.0 + t)));
}

float ep_atanhf(float x) {
    if (x == 0.0f) return x;
    double a = x < 0.0f ? -(double)x : x, r = 0.5 * log1p_d(2.0 * a / (1.0 - a));
    return (float)(x < 0.0f ? -r : r);
}

/* x tanh(log(1 + e)) = x e (e + 2) / (e (e + 2) + 2) with e = exp(x); past 20 the factor is 1 in float */
float ep_mishf(float x) {
    if (x > 20.0f) return x;
    double e = exp_d(x), p = e * (e + 2.0);
    return (float)(x * p / (p + 2.0));
}
