/* exp on 8 float lanes with the compilers' vector extensions (an AVX2 or half an AVX-512 register, two NEON or
   SIMD128 registers), and on the build's widest vector (a whole AVX-512 register) for the logistic function, erf and
   the longest row loops, for the elementwise kernels. Vectors go through pointers: passed by value they would tie
   the code to one vector ABI. */
#ifndef EP_VECTOR_MATH_H
#define EP_VECTOR_MATH_H

#include "../ep_internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define EP_VECTOR_MATH 1
#define EP_VF_LANES 8
typedef float ep_vf __attribute__((vector_size(EP_VF_LANES * 4)));
typedef int32_t ep_vi __attribute__((vector_size(EP_VF_LANES * 4)));

/* exp of r in [-ln 2 / 2, ln 2 / 2]: a degree-7 polynomial (the terms left out are below 1e-8 of it). */
#define EP_EXP_POLY(r)                                                                                            \
    (1.0f + (r) * (1.0f + (r) * (0.5f + (r) * (1.6666667e-1f + (r) * (4.1666668e-2f + (r) * (8.3333338e-3f +       \
     (r) * (1.3888889e-3f + (r) * 1.9841270e-4f)))))))

/* exp's range clamp for a float vector type VF with its int32 lanes VI, as function CLAMP: the lanes of *x clamped
   into [-103.9, 88.7] (NaN stays NaN). */
#define EP_DEFINE_EXP_CLAMP(VF, VI, CLAMP)                                                                        \
    static inline void CLAMP(VF *x) {                                                                            \
        VI low = *x < -103.9f, high = *x > 88.7f;                                                                \
        *x = (VF)(((VI)*x & ~low) | ((VI)((VF){0} - 103.9f) & low));                                             \
        *x = (VF)(((VI)*x & ~high) | ((VI)((VF){0} + 88.7f) & high));                                            \
    }

/* exp of each lane of a VF in place, as function EXP, as ep_expf computes it (round x / ln 2 half away from zero,
   EP_EXP_POLY of the rest, 2^k in two factors), for lanes in exp's range (the clamp); NaN stays NaN. */
#define EP_DEFINE_EXP(VF, VI, EXP)                                                                                \
    static inline void EXP(VF *x) {                                                                              \
        VF kf = *x * 1.44269504f;                                                                                \
        VI half_away = ((VI)kf & INT32_MIN) | 0x3f000000; /* 0.5 with kf's sign */                               \
        VI k = __builtin_convertvector(kf + (VF)half_away, VI);                                                  \
        kf = __builtin_convertvector(k, VF);                                                                     \
        VF r = (*x - kf * 0.693145752f) - kf * 1.42860677e-6f;                                                   \
        VF p = EP_EXP_POLY(r);                                                                                   \
        VI half = k >> 1;                                                                                        \
        *x = p * (VF)((half + 127) << 23) * (VF)((k - half + 127) << 23);                                        \
    }

EP_DEFINE_EXP_CLAMP(ep_vf, ep_vi, ep_clamp_exp_range)
EP_DEFINE_EXP(ep_vf, ep_vi, ep_exp_lanes)

/* The widest float vector of the build, for the longest elementwise loops: 16 lanes with AVX-512 (one register),
   else ep_vf. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define EP_VW_LANES 16
typedef float ep_vw __attribute__((vector_size(EP_VW_LANES * 4)));
typedef int32_t ep_vwi __attribute__((vector_size(EP_VW_LANES * 4)));
EP_DEFINE_EXP_CLAMP(ep_vw, ep_vwi, ep_clamp_exp_range_wide)

/* exp of each lane in place, for lanes in exp's range (ep_clamp_exp_range_wide): x / ln 2 rounded to the nearest k
   by vrndscaleps (ties to even, where ep_expf rounds them away from zero: the same accuracy), EP_EXP_POLY of the
   rest, and 2^k applied by vscalefps. Those two instructions stand for the portable form's eight: x Sigmoid(x) took
   0.41 ns a value from 0.59 (Intel Xeon, in L1). */
static inline void ep_exp_wide(ep_vw *x) {
    ep_vw kf = (ep_vw)_mm512_roundscale_ps((__m512)(*x * 1.44269504f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    ep_vw r = (*x - kf * 0.693145752f) - kf * 1.42860677e-6f;
    *x = (ep_vw)_mm512_scalef_ps((__m512)EP_EXP_POLY(r), (__m512)kf);
}
#else
#define EP_VW_LANES EP_VF_LANES
typedef ep_vf ep_vw;
typedef ep_vi ep_vwi;
#define ep_clamp_exp_range_wide ep_clamp_exp_range
#define ep_exp_wide ep_exp_lanes
#endif

/* exp of each lane in place for lanes at most 0 (a Softmax row less its peak): those below -87.33 taken as -87.33
   (exp 1.2e-38, the least normal float; -inf too), NaN stays NaN. x / ln 2 is rounded to the nearest k by adding
   1.5 * 2^23 (its low bits are then k), and 2^k is one exponent field, k being at least -126: 0.62 of ep_exp_lanes'
   time and its clamp's (AMD EPYC, AVX2, in L1). AVX-512 builds keep ep_exp_wide (its rounding and 2^k one
   instruction each). */
static inline void ep_exp_nonpositive_wide(ep_vw *x) {
#if defined(__AVX512F__)
    ep_clamp_exp_range_wide(x);
    ep_exp_wide(x);
#else
    ep_vwi low = *x < -87.33654f;
    *x = (ep_vw)(((ep_vwi)*x & ~low) | ((ep_vwi)((ep_vw){0} - 87.33654f) & low));
    ep_vw shifted = *x * 1.44269504f + 12582912.0f, kf = shifted - 12582912.0f;
    ep_vw r = (*x - kf * 0.693145752f) - kf * 1.42860677e-6f;
    *x = EP_EXP_POLY(r) * (ep_vw)((((ep_vwi)shifted - 0x4b400000) + 127) << 23);
#endif
}

/* The logistic function of each lane in place, from e = exp(-|x|) (ep_exp_nonpositive_wide): 1 / (1 + e), or
   e / (1 + e) below 0 (a result that would be below 1.2e-38 comes out as about that). One exp of a non-positive
   argument, where 1 / (1 + exp(-x)) clamped its argument both ways: x Sigmoid(x) took 0.81 of the time (AMD EPYC,
   AVX2, in L1). NaN stays NaN. */
static inline void ep_sigmoid_wide(ep_vw *x) {
    ep_vwi negative = *x < 0.0f;
    ep_vw e = (ep_vw)((ep_vwi)*x | INT32_MIN);
    ep_exp_nonpositive_wide(&e);
    ep_vw s = 1.0f / (1.0f + e);
    *x = (ep_vw)(((ep_vwi)(e * s) & negative) | ((ep_vwi)s & ~negative));
}

/* tanh of each lane in place, to a few ulp: x times an odd Taylor polynomial below 0.4 in magnitude (the terms
   left out are below 1e-9 of it); above, sign(x) (1 - 2 / (e^(2|x|) + 1)), which is 1 from 9.1 on. NaN stays NaN. */
static inline void ep_tanh_lanes(ep_vf *x) {
    ep_vi sign = (ep_vi)*x & INT32_MIN;
    ep_vf ax = (ep_vf)((ep_vi)*x & INT32_MAX), x2 = *x * *x;
    ep_vi small = ax < 0.4f;
    ep_vf near = *x * (1.0f + x2 * (-3.3333334e-1f + x2 * (1.3333334e-1f + x2 * (-5.3968254e-2f + x2 * (2.1869488e-2f +
                 x2 * (-8.8632358e-3f + x2 * (3.5921280e-3f - x2 * 1.4558344e-3f)))))));
    ep_vi beyond = ax > 9.1f;
    ep_vf e = ((ep_vf)(((ep_vi)ax & ~beyond) | ((ep_vi)((ep_vf){0} + 9.1f) & beyond))) * 2.0f;
    ep_exp_lanes(&e);
    ep_vf far = (ep_vf)((ep_vi)(1.0f - 2.0f / (e + 1.0f)) | sign);
    *x = (ep_vf)(((ep_vi)near & small) | ((ep_vi)far & ~small));
}

/* The natural log of each lane in place, to 1.5 ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by
   2^23 first), log(m) = f R(f) with f = m - 1 and R a degree-9 polynomial fitted to log1p(f) / f there (relative
   error 4e-9 before float rounding), plus e ln 2 in two parts. 0 gives -inf, a negative number NaN, inf inf, and
   NaN stays NaN. */
static inline void ep_log_wide(ep_vw *x) {
    ep_vw v = *x;
    ep_vwi subnormal = v < 1.17549435e-38f;
    v = (ep_vw)(((ep_vwi)(v * 8388608.0f) & subnormal) | ((ep_vwi)v & ~subnormal));
    ep_vwi bits = (ep_vwi)v, e = ((bits >> 23) & 0xff) - 127 - (subnormal & 23);
    ep_vw m = (ep_vw)((bits & 0x007fffff) | 0x3f800000);
    ep_vwi above = m > 1.41421356f;
    m = (ep_vw)(((ep_vwi)(m * 0.5f) & above) | ((ep_vwi)m & ~above));
    ep_vw f = m - 1.0f, ef = __builtin_convertvector(e - above, ep_vw);
    ep_vw r = f * (1.0f + f * (-0.49999988079071045f + f * (0.33333325386047363f + f * (-0.25001585483551025f +
              f * (0.2000196874141693f + f * (-0.16609017550945282f + f * (0.14181844890117645f +
              f * (-0.13243435323238373f + f * (0.12904594838619232f + f * -0.07621098309755325f)))))))));
    r = ef * 0.693145752f + (ef * 1.42860677e-6f + r);
    ep_vwi zero = *x == 0.0f, invalid = *x < 0.0f, kept = (*x != *x) | (*x > 3.4028235e38f);
    r = (ep_vw)(((ep_vwi)r & ~zero) | ((ep_vwi)((ep_vw){0} - __builtin_inff()) & zero));
    r = (ep_vw)(((ep_vwi)r & ~invalid) | ((ep_vwi)((ep_vw){0} + __builtin_nanf("")) & invalid));
    *x = (ep_vw)(((ep_vwi)r & ~kept) | ((ep_vwi)*x & kept));
}

/* erf of each lane in place, on the build's widest vector, as ep_erff computes it (NaN stays NaN). */
static inline void ep_erf_wide(ep_vw *x) {
    ep_vwi sign = (ep_vwi)*x & INT32_MIN;
    ep_vw a = (ep_vw)((ep_vwi)*x & INT32_MAX);
    ep_vwi beyond = a > EP_ERF_LIMIT;
    a = (ep_vw)(((ep_vwi)a & ~beyond) | ((ep_vwi)((ep_vw){0} + EP_ERF_LIMIT) & beyond));
    ep_vw t = a * a, y = EP_ERF_RATIONAL(a, t);
    ep_vwi above_one = y > 1.0f;
    y = (ep_vw)(((ep_vwi)y & ~above_one) | ((ep_vwi)((ep_vw){0} + 1.0f) & above_one));
    *x = (ep_vw)((ep_vwi)y | sign);
}
#endif

#endif
