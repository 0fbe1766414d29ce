/* exp on 8 float lanes with the compilers' vector extensions (an AVX2 or half an AVX-512 register, two NEON or
   SIMD128 registers), for the elementwise kernels. Vectors go through pointers: passed by value they would tie the
   code to one vector ABI. */
#ifndef EP_VECTOR_EXP_H
#define EP_VECTOR_EXP_H

#include "../ep_internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define EP_VECTOR_EXP 1
#define EP_VF_LANES 8
typedef float ep_vf __attribute__((vector_size(EP_VF_LANES * 4)));
typedef int32_t ep_vi __attribute__((vector_size(EP_VF_LANES * 4)));

/* The lanes of *x clamped into exp's range [-103.9, 88.7] (NaN stays NaN). */
static inline void ep_clamp_exp_range(ep_vf *x) {
    ep_vi low = *x < -103.9f, high = *x > 88.7f;
    *x = (ep_vf)(((ep_vi)*x & ~low) | ((ep_vi)((ep_vf){0} - 103.9f) & low));
    *x = (ep_vf)(((ep_vi)*x & ~high) | ((ep_vi)((ep_vf){0} + 88.7f) & high));
}

/* exp of each lane in place, as ep_expf computes it (round x / ln 2 half away from zero, a degree-7 polynomial of
   the rest, 2^k in two factors), for lanes in exp's range (ep_clamp_exp_range); NaN stays NaN. */
static inline void ep_exp_lanes(ep_vf *x) {
    ep_vf kf = *x * 1.44269504f;
    ep_vi half_away = ((ep_vi)kf & INT32_MIN) | 0x3f000000; /* 0.5 with kf's sign */
    ep_vi k = __builtin_convertvector(kf + (ep_vf)half_away, ep_vi);
    kf = __builtin_convertvector(k, ep_vf);
    ep_vf r = (*x - kf * 0.693145752f) - kf * 1.42860677e-6f;
    ep_vf p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f + r * (8.3333338e-3f +
              r * (1.3888889e-3f + r * 1.9841270e-4f))))));
    ep_vi half = k >> 1;
    *x = p * (ep_vf)((half + 127) << 23) * (ep_vf)((k - half + 127) << 23);
}
#endif

#endif
