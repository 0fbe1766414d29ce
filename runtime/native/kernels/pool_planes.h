/* Pools that need no window geometry, plane by plane (pool_planes.c): global pools, and max and average pools whose
   windows tile the plane. */
#ifndef EP_POOL_PLANES_H
#define EP_POOL_PLANES_H

#include "../ep_internal.h"

/* The larger of v and acc, NaN once either is NaN; a select, not a branch (the comparisons of random data would
   mispredict). */
static inline float max_or_nan(float v, float acc) { return ((v > acc) | (v != v)) ? v : acc; }

/* The max (is_max) or the mean of each of `planes` planes of `size` floats at in, into out. */
void ep_global_pool(int is_max, const float *in, float *out, int64_t planes, int64_t size);

/* `planes` planes of h x w at x, max-pooled (is_max) or average-pooled by kh x kw windows with stride kh x kw
   (oh * kh <= h, ow * kw <= w) into planes of oh x ow at y. */
void ep_pool_tiles(int is_max, const float *x, float *y, int64_t planes, int64_t h, int64_t w, int64_t kh,
                   int64_t kw, int64_t oh, int64_t ow);

#endif
