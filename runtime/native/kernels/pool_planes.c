/* Pools that need no window geometry, plane by plane: global pools, and max and average pools whose windows tile the
   plane (kernel = stride, no padding or dilation: CNNs' 2x2 stride 2, 1x2 along the width, PP-OCR rec's 3x2), each
   output row the maximum or the sum of its window rows' column runs, in loops over the outputs that vectorize
   (oww-embedding's five max pools took 0.26 ms through the general 2-D path, 0.05 ms here; Intel Xeon). */
#include "pool_planes.h"
#include "vector_math.h"

/* Partial sums (or maxima) a global pool keeps per plane, so that its loop vectorizes: a single running sum is a
   chain of dependent adds (ppocr-det's 96 x 160 x 160 average pool took 2 ms). The sums' order differs from one
   running sum by float rounding only. */
#define GLOBAL_LANES 16

/* part[l] as the maximum (or a NaN) of part[l] and the plane's values l apart in each whole run of GLOBAL_LANES; the
   count of values taken. In vector lanes, a select by mask: as a loop of max_or_nan, GCC kept its compares and
   branches one value at a time (magika's max over 512 rows of 508 took 1.8 ns a value). */
static int64_t global_max_lanes(const float *plane, int64_t size, float part[GLOBAL_LANES]) {
    int64_t i = 0;
#if defined(EP_VECTOR_MATH) && !defined(__wasm__) /* not on wasm, for the page's bytes */
    ep_vw peaks[GLOBAL_LANES / EP_VW_LANES];
    __builtin_memcpy(peaks, part, sizeof peaks);
    for (; i + GLOBAL_LANES <= size; i += GLOBAL_LANES)
        for (int v = 0; v < GLOBAL_LANES / EP_VW_LANES; v++) {
            ep_vw x;
            __builtin_memcpy(&x, plane + i + v * EP_VW_LANES, sizeof x);
            ep_vwi take = (x > peaks[v]) | (x != x);
            peaks[v] = (ep_vw)(((ep_vwi)x & take) | ((ep_vwi)peaks[v] & ~take));
        }
    __builtin_memcpy(part, peaks, sizeof peaks);
#else
    for (; i + GLOBAL_LANES <= size; i += GLOBAL_LANES)
        for (int l = 0; l < GLOBAL_LANES; l++) part[l] = max_or_nan(plane[i + l], part[l]);
#endif
    return i;
}

void ep_global_pool(int is_max, const float *in, float *out, int64_t planes, int64_t size) {
    for (int64_t q = 0; q < planes; q++) {
        const float *plane = in + q * size;
        float part[GLOBAL_LANES];
        for (int l = 0; l < GLOBAL_LANES; l++) part[l] = is_max ? plane[0] : 0.0f;
        int64_t i = 0;
        if (is_max)
            i = global_max_lanes(plane, size, part);
        else
            for (; i + GLOBAL_LANES <= size; i += GLOBAL_LANES)
                for (int l = 0; l < GLOBAL_LANES; l++) part[l] += plane[i + l];
        float acc = part[0];
        for (int l = 1; l < GLOBAL_LANES; l++) acc = is_max ? max_or_nan(part[l], acc) : acc + part[l];
        for (; i < size; i++) acc = is_max ? max_or_nan(plane[i], acc) : acc + plane[i];
        out[q] = is_max ? acc : acc / (float)size;
    }
}

/* out[ox] as the maximum of the window row's kw columns from row + ox * kw (`first`), or the larger of it and that. */
static void row_maxima(const float *row, int64_t kw, int64_t ow, int first, float *out) {
    if (kw == 2) {
        if (first)
            for (int64_t ox = 0; ox < ow; ox++) out[ox] = max_or_nan(row[2 * ox + 1], row[2 * ox]);
        else
            for (int64_t ox = 0; ox < ow; ox++) out[ox] = max_or_nan(row[2 * ox + 1], max_or_nan(row[2 * ox], out[ox]));
        return;
    }
    for (int64_t kx = 0; kx < kw; kx++)
        for (int64_t ox = 0; ox < ow; ox++)
            out[ox] = first && kx == 0 ? row[ox * kw] : max_or_nan(row[ox * kw + kx], out[ox]);
}

/* out[ox] as the sum of the window row's kw columns from row + ox * kw (`first`), or that sum added to it: in the
   order the general path sums a window (row by row, left to right). */
static void row_sums(const float *row, int64_t kw, int64_t ow, int first, float *out) {
    for (int64_t kx = 0; kx < kw; kx++) {
        if (first && kx == 0)
            for (int64_t ox = 0; ox < ow; ox++) out[ox] = row[ox * kw];
        else
            for (int64_t ox = 0; ox < ow; ox++) out[ox] += row[ox * kw + kx];
    }
}

void ep_pool_tiles(int is_max, const float *x, float *y, int64_t planes, int64_t h, int64_t w, int64_t kh,
                   int64_t kw, int64_t oh, int64_t ow) {
    float count = (float)(kh * kw);
    for (int64_t q = 0; q < planes; q++)
        for (int64_t oy = 0; oy < oh; oy++) {
            float *out = y + (q * oh + oy) * ow;
            for (int64_t ky = 0; ky < kh; ky++) {
                const float *row = x + (q * h + oy * kh + ky) * w;
                if (is_max) row_maxima(row, kw, ow, ky == 0, out);
                else row_sums(row, kw, ow, ky == 0, out);
            }
            if (!is_max)
                for (int64_t ox = 0; ox < ow; ox++) out[ox] /= count;
        }
}
