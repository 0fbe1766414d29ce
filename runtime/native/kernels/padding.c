/* A conv's input copied into zero-padded planes, or split into the phases of a stride-2 conv (conv.c, winograd.c,
   depthwise.c): each float written once, the padding only zeroed. */
#include "conv.h"
#include "vector_math.h"

/* The few floats of a row's padding, zeroed in place (a call to memset per row would cost more). */
static void zero_floats(float *row, int64_t count) {
    for (int64_t i = 0; i < count; i++) row[i] = 0.0f;
}

void ep_zero_padded_phases(const conv_shape *s, const float *x, int64_t row_phases, int64_t hp, int64_t wp,
                           float *phases, size_t floats) {
    size_t row = (size_t)wp * sizeof(float), written = (size_t)(s->cg * row_phases * 2 * hp * wp);
    for (int64_t c = 0; c < s->cg; c++)
        for (int64_t r = 0; r < row_phases * hp; r++) {
            float *column_phase[2];
            for (int64_t px = 0; px < 2; px++)
                column_phase[px] = phases + (((c * row_phases + r % row_phases) * 2 + px) * hp + r / row_phases) * wp;
            int64_t iy = r - s->pt;
            if (iy < 0 || iy >= s->h) {
                ep_memset(column_phase[0], 0, row);
                ep_memset(column_phase[1], 0, row);
                continue;
            }
            /* padded column ix + pl of input column ix: phase (ix + pl) % 2, at (ix + pl) / 2; the rest is zero */
            for (int64_t px = 0; px < 2; px++) {
                int64_t first = (s->pl - px + 1) / 2, end = (s->pl + s->w - px + 1) / 2;
                zero_floats(column_phase[px], first);
                zero_floats(column_phase[px] + end, wp - end);
            }
            ep_deinterleave(x + (c * s->h + iy) * s->w, s->w, column_phase[s->pl % 2] + s->pl / 2,
                            column_phase[(s->pl + 1) % 2] + (s->pl + 1) / 2);
        }
    if (floats > written) ep_memset(phases + written, 0, (floats - written) * sizeof(float));
}

void ep_deinterleave(const float *src, int64_t n, float *even, float *odd) {
    int64_t j = 0;
#ifdef EP_VECTOR_MATH
    for (; 2 * (j + EP_VF_LANES) <= n; j += EP_VF_LANES) {
        ep_vf lo, hi;
        __builtin_memcpy(&lo, src + 2 * j, sizeof lo);
        __builtin_memcpy(&hi, src + 2 * j + EP_VF_LANES, sizeof hi);
        ep_vf evens = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
        ep_vf odds = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
        __builtin_memcpy(even + j, &evens, sizeof evens);
        __builtin_memcpy(odd + j, &odds, sizeof odds);
    }
#endif
    for (; 2 * j < n; j++) {
        even[j] = src[2 * j];
        if (2 * j + 1 < n) odd[j] = src[2 * j + 1];
    }
}

void ep_zero_border(float *plane, int64_t hp, int64_t wp, int64_t pt, int64_t pl, int64_t h, int64_t w) {
    size_t row = (size_t)wp * sizeof(float);
    ep_memset(plane, 0, (size_t)pt * row);
    for (int64_t r = pt; r < pt + h; r++) {
        zero_floats(plane + r * wp, pl);
        zero_floats(plane + r * wp + pl + w, wp - pl - w);
    }
    ep_memset(plane + (pt + h) * wp, 0, (size_t)(hp - pt - h) * row);
}

void ep_zero_padded(const conv_shape *s, const float *x, int64_t planes, int64_t hp, int64_t wp, float *padded,
                    size_t padded_floats) {
    size_t written = (size_t)(planes * hp * wp);
    for (int64_t c = 0; c < planes; c++) {
        float *plane = padded + c * hp * wp;
        ep_zero_border(plane, hp, wp, s->pt, s->pl, s->h, s->w);
        for (int64_t r = 0; r < s->h; r++)
            ep_memcpy(plane + (s->pt + r) * wp + s->pl, x + (c * s->h + r) * s->w, (size_t)s->w * sizeof(float));
    }
    if (padded_floats > written) ep_memset(padded + written, 0, (padded_floats - written) * sizeof(float));
}
