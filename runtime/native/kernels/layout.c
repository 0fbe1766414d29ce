/* Data movement: Copy (the reshape family), BitCast, Transpose, Concat, Split, Slice, Gather. */
#include "../ep_internal.h"

static ep_status check_copy(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->in[0]->dtype != n->out[0]->dtype || n->in[0]->count != n->out[0]->count)
        return ep_fail(error, n, ": input and output differ in dtype or element count");
    return EP_OK;
}

static ep_status run_copy(const ep_node *n, const ep_context *c) {
    (void)c;
    if (n->out[0]->data != n->in[0]->data) ep_memmove(n->out[0]->data, n->in[0]->data, n->out[0]->bytes);
    return EP_OK;
}

/* BitCast: the same bytes under another dtype of the same width. */
static ep_status check_bit_cast(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (ep_dtype_bits(n->in[0]->dtype) != ep_dtype_bits(n->out[0]->dtype) || n->in[0]->count != n->out[0]->count)
        return ep_fail(error, n, ": input and output differ in width or element count");
    return EP_OK;
}

static ep_status check_transpose(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != y->dtype || !ep_dtype_size(x->dtype) || x->rank != y->rank || n->n_params != (uint32_t)x->rank)
        return ep_fail(error, n, ": dtype, rank or permutation length differ");
    uint32_t seen = 0;
    for (int32_t i = 0; i < x->rank; i++) {
        int32_t p = n->params[i];
        if (p < 0 || p >= x->rank || (seen & (1u << p))) return ep_fail(error, n, ": not a permutation");
        seen |= 1u << p;
        if (y->dims[i] != x->dims[p]) return ep_fail(error, n, ": output dims do not match the permutation");
    }
    return EP_OK;
}

/* Elements per side of the square tiles transpose_tiled moves. */
#define TRANSPOSE_TILE 16

/* A transpose as few output axes (dims, input strides) as it has: axes of one dropped, and neighbours whose input
   strides chain (neighbours in the input too) merged; returns how many are left. */
static int32_t merged_axes(const ep_tensor *x, const ep_node *n, int64_t *dims, int64_t *strides) {
    int64_t in_strides[EP_MAX_RANK], stride = 1;
    for (int32_t i = x->rank - 1; i >= 0; i--) {
        in_strides[i] = stride;
        stride *= x->dims[i];
    }
    int32_t rank = 0;
    for (int32_t i = 0; i < x->rank; i++) {
        int64_t dim = x->dims[n->params[i]], at = in_strides[n->params[i]];
        if (dim == 1) continue;
        if (rank > 0 && strides[rank - 1] == at * dim) {
            dims[rank - 1] *= dim;
            strides[rank - 1] = at;
        } else {
            dims[rank] = dim;
            strides[rank++] = at;
        }
    }
    return rank;
}

/* A transpose of 4- or 8-byte elements (`size`, a constant where inlined) whose output's last axis is not the
   input's: the output axis q that the input's last axis feeds (input stride 1) and the output's last axis are walked
   in tiles, so that reads and writes both run along cache lines (a row at a time, one side reads a column of the
   other: a 512 x 256 plane took 5 ns an element). */
static inline __attribute__((always_inline)) void transpose_tiled(const uint8_t *src, uint8_t *dst, size_t size,
                                                                  int32_t rank, const int64_t *dims,
                                                                  const int64_t *strides, int32_t q) {
    int64_t out_strides[EP_MAX_RANK] = {0}, counter[EP_MAX_RANK] = {0}, count = 1;
    for (int32_t i = rank - 1; i >= 0; i--) {
        out_strides[i] = count;
        count *= dims[i];
    }
    int64_t rows = dims[q], cols = dims[rank - 1], col_stride = strides[rank - 1], row_out = out_strides[q];
    for (int64_t done = 0; done < count; done += rows * cols) {
        int64_t in = 0, out = 0;
        for (int32_t i = 0; i + 1 < rank; i++)
            if (i != q) {
                in += counter[i] * strides[i];
                out += counter[i] * out_strides[i];
            }
        for (int64_t r0 = 0; r0 < rows; r0 += TRANSPOSE_TILE)
            for (int64_t c0 = 0; c0 < cols; c0 += TRANSPOSE_TILE) {
                int64_t r1 = r0 + TRANSPOSE_TILE < rows ? r0 + TRANSPOSE_TILE : rows;
                int64_t c1 = c0 + TRANSPOSE_TILE < cols ? c0 + TRANSPOSE_TILE : cols;
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t col = c0; col < c1; col++)
                        __builtin_memcpy(dst + (size_t)(out + r * row_out + col) * size,
                                         src + (size_t)(in + r + col * col_stride) * size, size);
            }
        for (int32_t i = rank - 2; i >= 0; i--) {
            if (i == q) continue;
            if (++counter[i] < dims[i]) break;
            counter[i] = 0;
        }
    }
}

/* The input axis of stride 1 among the first `rank` merged axes, or `rank`. */
static int32_t unit_stride_axis(const int64_t *strides, int32_t rank) {
    int32_t q = 0;
    while (q < rank && strides[q] != 1) q++;
    return q;
}

static ep_status run_transpose(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    size_t size = ep_dtype_size(x->dtype);
    int64_t dims[EP_MAX_RANK], strides[EP_MAX_RANK], counter[EP_MAX_RANK] = {0};
    int32_t rank = merged_axes(x, n, dims, strides);
    if (y->count == 0) return EP_OK;
    const uint8_t *src = (const uint8_t *)x->data;
    uint8_t *dst = (uint8_t *)y->data;
    int32_t q = unit_stride_axis(strides, rank);
    if (size == 4 && q < rank - 1) {
        transpose_tiled(src, dst, 4, rank, dims, strides, q);
        return EP_OK;
    }
    if (q == rank - 1 && dims[q] * (int64_t)size == 8) {
        /* the last axis kept, two 4-byte values (complex numbers): each pair one 8-byte element of the others'
           transpose (basic-pitch's (1, 172, 309, 2) took 6 ns a value a pair at a time) */
        int64_t pair_strides[EP_MAX_RANK];
        for (int32_t i = 0; i < q; i++) pair_strides[i] = strides[i] / dims[q];
        int32_t inner = unit_stride_axis(pair_strides, q);
        if (inner < q - 1) {
            transpose_tiled(src, dst, 8, q, dims, pair_strides, inner);
            return EP_OK;
        }
    }
    int64_t last = rank ? dims[rank - 1] : 1, last_stride = rank ? strides[rank - 1] : 0;
    for (int64_t o = 0; o < y->count; o += last) {
        int64_t offset = 0;
        for (int32_t i = 0; i + 1 < rank; i++) offset += counter[i] * strides[i];
        if (last_stride == 1) { /* the last axis kept: a whole row at a time (was a value at a time) */
            ep_memcpy(dst + (size_t)o * size, src + (size_t)offset * size, (size_t)last * size);
        } else if (size == 4) {
            const float *s = (const float *)(const void *)src + offset;
            float *d = (float *)(void *)dst + o;
            for (int64_t k = 0; k < last; k++) d[k] = s[k * last_stride];
        } else {
            for (int64_t k = 0; k < last; k++)
                ep_memcpy(dst + (size_t)(o + k) * size, src + (size_t)(offset + k * last_stride) * size, size);
        }
        for (int32_t i = rank - 2; i >= 0; i--) {
            if (++counter[i] < dims[i]) break;
            counter[i] = 0;
        }
    }
    return EP_OK;
}

/* Concat and Split: one side is many tensors that stack along `axis` into the other. */
static ep_status check_stack(const ep_node *n, ep_tensor *const *parts, uint32_t n_parts, const ep_tensor *whole,
                             char *error) {
    if (n->n_params != 1) return ep_fail(error, n, ": bad parameters");
    int32_t axis = n->params[0];
    if (axis < 0 || axis >= whole->rank) return ep_fail(error, n, ": axis out of range");
    if (!ep_dtype_size(whole->dtype)) return ep_fail(error, n, ": a sub-byte dtype");
    int64_t total = 0;
    for (uint32_t k = 0; k < n_parts; k++) {
        const ep_tensor *p = parts[k];
        if (!p || p->dtype != whole->dtype || p->rank != whole->rank) return ep_fail(error, n, ": parts differ");
        for (int32_t d = 0; d < whole->rank; d++)
            if (d != axis && p->dims[d] != whole->dims[d]) return ep_fail(error, n, ": parts differ in shape");
        total += p->dims[axis];
    }
    if (total != whole->dims[axis]) return ep_fail(error, n, ": parts do not add up along the axis");
    return EP_OK;
}

static void stack_geometry(const ep_tensor *whole, int32_t axis, int64_t *outer, int64_t *inner) {
    *outer = 1;
    *inner = (int64_t)ep_dtype_size(whole->dtype);
    for (int32_t d = 0; d < axis; d++) *outer *= whole->dims[d];
    for (int32_t d = axis + 1; d < whole->rank; d++) *inner *= whole->dims[d];
}

/* `rows` runs of `bytes` from src (src_row bytes apart) to dst (dst_row apart): a word at a time where each run is
   one 4-byte element (stacking along a last axis of 1), where a memmove call per run took basic-pitch's Concat of
   two (1, 172, 309, 1) halves 5.8 ns a value. */
static void copy_runs(uint8_t *dst, int64_t dst_row, const uint8_t *src, int64_t src_row, int64_t rows,
                      int64_t bytes) {
    if (bytes == 4) {
        for (int64_t o = 0; o < rows; o++) {
            uint32_t word;
            __builtin_memcpy(&word, src + o * src_row, sizeof word);
            __builtin_memcpy(dst + o * dst_row, &word, sizeof word);
        }
        return;
    }
    for (int64_t o = 0; o < rows; o++) ep_memmove(dst + o * dst_row, src + o * src_row, (size_t)bytes);
}

static ep_status check_concat(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    if (n->n_in < 1 || n->n_out != 1) return ep_fail(error, n, ": wrong number of inputs or outputs");
    return check_stack(n, n->in, n->n_in, n->out[0], error);
}

static ep_status run_concat(const ep_node *n, const ep_context *c) {
    (void)c;
    int64_t outer, inner, at = 0;
    const ep_tensor *y = n->out[0];
    int32_t axis = n->params[0];
    stack_geometry(y, axis, &outer, &inner);
    int64_t row = y->dims[axis] * inner;
    for (uint32_t k = 0; k < n->n_in; k++) {
        int64_t part = n->in[k]->dims[axis] * inner;
        copy_runs((uint8_t *)y->data + at, row, (const uint8_t *)n->in[k]->data, part, outer, part);
        at += part;
    }
    return EP_OK;
}

static ep_status check_split(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    if (n->n_in != 1 || !n->in[0] || n->n_out < 1) return ep_fail(error, n, ": wrong number of inputs or outputs");
    return check_stack(n, n->out, n->n_out, n->in[0], error);
}

static ep_status run_split(const ep_node *n, const ep_context *c) {
    (void)c;
    int64_t outer, inner, at = 0;
    const ep_tensor *x = n->in[0];
    int32_t axis = n->params[0];
    stack_geometry(x, axis, &outer, &inner);
    int64_t row = x->dims[axis] * inner;
    for (uint32_t k = 0; k < n->n_out; k++) {
        int64_t part = n->out[k]->dims[axis] * inner;
        copy_runs((uint8_t *)n->out[k]->data, part, (const uint8_t *)x->data + at, row, outer, part);
        at += part;
    }
    return EP_OK;
}

/* Slice: params are (start, step) per axis; the output dims give the counts. */
static ep_status check_slice(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != y->dtype || !ep_dtype_size(x->dtype) || x->rank != y->rank || n->n_params != 2 * (uint32_t)x->rank)
        return ep_fail(error, n, ": dtype, rank or parameters do not match");
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t start = n->params[2 * d], step = n->params[2 * d + 1], count = y->dims[d];
        if (count == 0) continue;
        int64_t last = start + (count - 1) * step;
        if (step == 0 || start < 0 || start >= x->dims[d] || last < 0 || last >= x->dims[d])
            return ep_fail(error, n, ": slice outside the input");
    }
    return EP_OK;
}

/* Trailing axes taken whole merge into runs of contiguous elements: the last axis left is sliced in runs (one copy
   per output row when its step is 1), so a [1, 512, 256, 1] slice is not 131 072 one-element copies. */
static ep_status run_slice(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    size_t size = ep_dtype_size(x->dtype);
    if (y->count == 0) return EP_OK;
    int32_t axes = x->rank;
    int64_t run = 1;
    while (axes > 0 && n->params[2 * (axes - 1)] == 0 && n->params[2 * axes - 1] == 1 &&
           y->dims[axes - 1] == x->dims[axes - 1])
        run *= x->dims[--axes];
    const uint8_t *src = (const uint8_t *)x->data;
    uint8_t *dst = (uint8_t *)y->data;
    if (axes == 0) {
        ep_memcpy(dst, src, y->bytes);
        return EP_OK;
    }
    int64_t in_strides[EP_MAX_RANK], counter[EP_MAX_RANK], stride = run;
    for (int32_t i = axes - 1; i >= 0; i--) {
        in_strides[i] = stride;
        stride *= x->dims[i];
        counter[i] = 0;
    }
    int32_t last_axis = axes - 1;
    int64_t last = y->dims[last_axis], last_start = n->params[2 * last_axis], last_step = n->params[2 * axes - 1];
    size_t run_bytes = (size_t)run * size;
    for (int64_t o = 0; o < y->count; o += last * run) {
        int64_t offset = last_start * run;
        for (int32_t i = 0; i < last_axis; i++)
            offset += (n->params[2 * i] + counter[i] * n->params[2 * i + 1]) * in_strides[i];
        const uint8_t *from = src + (size_t)offset * size;
        uint8_t *to = dst + (size_t)o * size;
        if (last_step == 1) {
            ep_memcpy(to, from, (size_t)last * run_bytes);
        } else if (run_bytes == 4) {
            const uint32_t *f = (const uint32_t *)(const void *)from;
            uint32_t *t = (uint32_t *)(void *)to;
            for (int64_t k = 0; k < last; k++) t[k] = f[k * last_step];
        } else {
            for (int64_t k = 0; k < last; k++)
                ep_memcpy(to + (size_t)k * run_bytes, from + (size_t)(k * last_step) * run_bytes, run_bytes);
        }
        for (int32_t i = last_axis - 1; i >= 0; i--) {
            if (++counter[i] < y->dims[i]) break;
            counter[i] = 0;
        }
    }
    return EP_OK;
}

static ep_status check_gather(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *idx = n->in[1], *y = n->out[0];
    if (n->n_params != 1 || n->params[0] < 0 || n->params[0] >= x->rank) return ep_fail(error, n, ": bad axis");
    if (idx->dtype != EP_I64 && idx->dtype != EP_I32) return ep_fail(error, n, ": indices must be int32 or int64");
    int32_t axis = n->params[0];
    if (y->dtype != x->dtype || !ep_dtype_size(x->dtype) || y->rank != x->rank - 1 + idx->rank)
        return ep_fail(error, n, ": wrong output");
    int32_t at = 0;
    for (int32_t d = 0; d < axis; d++)
        if (y->dims[at++] != x->dims[d]) return ep_fail(error, n, ": wrong output shape");
    for (int32_t d = 0; d < idx->rank; d++)
        if (y->dims[at++] != idx->dims[d]) return ep_fail(error, n, ": wrong output shape");
    for (int32_t d = axis + 1; d < x->rank; d++)
        if (y->dims[at++] != x->dims[d]) return ep_fail(error, n, ": wrong output shape");
    return EP_OK;
}

static ep_status run_gather(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *idx = n->in[1], *y = n->out[0];
    int32_t axis = n->params[0];
    int64_t outer = 1, inner = (int64_t)ep_dtype_size(x->dtype), dim = x->dims[axis];
    for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < idx->count; k++) {
            int64_t i = idx->dtype == EP_I64 ? ((const int64_t *)idx->data)[k] : ((const int32_t *)idx->data)[k];
            if (i < 0) i += dim;
            if (i < 0 || i >= dim) {
                ep_message(c->error, "Gather: index out of range:", "", -1);
                return EP_ERR_RUNTIME;
            }
            ep_memcpy((uint8_t *)y->data + (o * idx->count + k) * inner,
                      (const uint8_t *)x->data + (o * dim + i) * inner, (size_t)inner);
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_copy = {"Copy", check_copy, run_copy};
const ep_kernel ep_kernel_bit_cast = {"BitCast", check_bit_cast, run_copy};
const ep_kernel ep_kernel_transpose = {"Transpose", check_transpose, run_transpose};
const ep_kernel ep_kernel_concat = {"Concat", check_concat, run_concat};
const ep_kernel ep_kernel_split = {"Split", check_split, run_split};
const ep_kernel ep_kernel_slice = {"Slice", check_slice, run_slice};
const ep_kernel ep_kernel_gather = {"Gather", check_gather, run_gather};
