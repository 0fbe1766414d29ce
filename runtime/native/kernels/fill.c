/* Ops that fill an output from a pattern of their input: Trilu, CumSum, Tile, OneHot. */
#include "../ep_internal.h"

/* One input and one output of the same dtype and shape. */
static ep_status check_same(const ep_node *n, char *error) {
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->out[0]->dtype != n->in[0]->dtype || !ep_same_shape(n->out[0], n->in[0]))
        return ep_fail(error, n, ": input and output differ in dtype or shape");
    return EP_OK;
}

/* Trilu: params are upper (0 or 1) and k; the last two axes are the matrices. */
static ep_status check_trilu(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = check_same(n, error);
    if (status != EP_OK) return status;
    if (n->n_params != 2 || (n->params[0] != 0 && n->params[0] != 1)) return ep_fail(error, n, ": bad parameters");
    if (n->in[0]->rank < 2) return ep_fail(error, n, ": the input is not a matrix");
    return EP_OK;
}

/* value limited to [low, high]. */
static int64_t clamp(int64_t value, int64_t low, int64_t high) {
    return value < low ? low : value > high ? high : value;
}

static ep_status run_trilu(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1], k = n->params[1];
    size_t size = ep_dtype_size(x->dtype), row_bytes = (size_t)cols * size;
    for (int64_t r = 0; r < x->count / (cols ? cols : 1); r++) {
        int64_t i = r % rows;
        int64_t low = n->params[0] ? clamp(i + k, 0, cols) : 0, high = n->params[0] ? cols : clamp(i + k + 1, 0, cols);
        uint8_t *dst = (uint8_t *)y->data + (size_t)r * row_bytes;
        ep_memset(dst, 0, row_bytes);
        ep_memcpy(dst + (size_t)low * size, (const uint8_t *)x->data + (size_t)r * row_bytes + (size_t)low * size,
                  (size_t)(high > low ? high - low : 0) * size);
    }
    return EP_OK;
}

/* CumSum: params are axis, exclusive and reverse; float32, int32 and int64 (integers wrap). */
static ep_status check_cumsum(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = check_same(n, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0];
    if (x->dtype != EP_F32 && x->dtype != EP_I32 && x->dtype != EP_I64)
        return ep_fail(error, n, ": dtype must be float32, int32 or int64");
    if (n->n_params < 3 || n->n_params > 4 || n->params[0] < 0 || n->params[0] >= x->rank || (n->params[1] & ~1) ||
        (n->params[2] & ~1) || (n->n_params == 4 && (n->params[3] & ~1)))
        return ep_fail(error, n, ": bad parameters");
    return EP_OK;
}

/* One line of CumSum (or CumProd): `count` elements from `start`, `step` apart. */
static void cumsum_line(const ep_tensor *x, const ep_tensor *y, int64_t start, int64_t step, int64_t count,
                        int32_t exclusive, int32_t product) {
    if (x->dtype == EP_F32) {
        const float *s = (const float *)x->data;
        float *d = (float *)y->data, total = product ? 1.0f : 0.0f;
        for (int64_t t = 0, at = start; t < count; t++, at += step) {
            float value = s[at];
            if (!exclusive) total = product ? total * value : total + value;
            d[at] = total;
            if (exclusive) total = product ? total * value : total + value;
        }
        return;
    }
    uint64_t total = product ? 1 : 0;
    for (int64_t t = 0, at = start; t < count; t++, at += step) {
        uint64_t value = ep_load_int(x->data, x->dtype, at);
        if (!exclusive) total = product ? total * value : total + value;
        ep_store_int(y->data, y->dtype, at, total);
        if (exclusive) total = product ? total * value : total + value;
    }
}

static ep_status run_cumsum(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0];
    int32_t axis = n->params[0], exclusive = n->params[1], product = n->n_params == 4 && n->params[3];
    int64_t outer = 1, inner = 1, dim = x->dims[axis];
    for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    if (dim == 0) return EP_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t first = o * dim * inner + i;
            if (n->params[2]) cumsum_line(x, n->out[0], first + (dim - 1) * inner, -inner, dim, exclusive, product);
            else cumsum_line(x, n->out[0], first, inner, dim, exclusive, product);
        }
    return EP_OK;
}

/* Tile: params are the repeats per axis. */
static ep_status check_tile(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != y->dtype || !ep_dtype_size(x->dtype) || x->rank != y->rank || n->n_params != (uint32_t)x->rank)
        return ep_fail(error, n, ": dtype, rank or parameters do not match");
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t repeats = n->params[d], dim = x->dims[d];
        if (repeats < 0 || (dim ? y->dims[d] % dim || y->dims[d] / dim != repeats : y->dims[d] != 0))
            return ep_fail(error, n, ": output dims are not the input dims times the repeats");
    }
    return EP_OK;
}

static ep_status run_tile(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t rank = x->rank;
    size_t size = ep_dtype_size(x->dtype);
    if (y->count == 0) return EP_OK;
    if (rank == 0) {
        ep_memcpy(y->data, x->data, size);
        return EP_OK;
    }
    int64_t strides[EP_MAX_RANK], counter[EP_MAX_RANK], stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= x->dims[d];
        counter[d] = 0;
    }
    size_t row = (size_t)x->dims[rank - 1] * size;
    uint8_t *dst = (uint8_t *)y->data;
    for (int64_t o = 0; o < y->count; o += y->dims[rank - 1]) {
        int64_t offset = 0;
        for (int32_t d = 0; d + 1 < rank; d++) offset += (counter[d] % x->dims[d]) * strides[d];
        for (int32_t r = 0; r < n->params[rank - 1]; r++, dst += row)
            ep_memcpy(dst, (const uint8_t *)x->data + (size_t)offset * size, row);
        for (int32_t d = rank - 2; d >= 0; d--) {
            if (++counter[d] < y->dims[d]) break;
            counter[d] = 0;
        }
    }
    return EP_OK;
}

/* OneHot: params are axis (of the output) and depth; inputs indices (any dtype held) and [off, on] values. */
static ep_status check_one_hot(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *idx = n->in[0], *values = n->in[1], *y = n->out[0];
    if (values->count != 2 || values->dtype != y->dtype) return ep_fail(error, n, ": values must be [off, on]");
    if (n->n_params != 2 || y->rank != idx->rank + 1 || n->params[0] < 0 || n->params[0] >= y->rank)
        return ep_fail(error, n, ": bad parameters or output rank");
    int32_t axis = n->params[0];
    for (int32_t d = 0; d < y->rank; d++)
        if (y->dims[d] != (d == axis ? n->params[1] : idx->dims[d < axis ? d : d - 1]))
            return ep_fail(error, n, ": output dims do not match the indices and depth");
    return EP_OK;
}

/* Element k of the OneHot indices (floats truncated), wrapped once when negative; -1 when outside [0, depth). */
static int64_t one_hot_index(const ep_tensor *t, int64_t k, int64_t depth) {
    const uint8_t *p = (const uint8_t *)t->data;
    int64_t i;
    switch (t->dtype) {
    case EP_F32: {
        float f = ((const float *)t->data)[k], limit = (float)depth + 1.0f;
        if (!(f > -limit && f < limit)) return -1;
        i = (int64_t)f;
        break;
    }
    case EP_I32: i = ((const int32_t *)t->data)[k]; break;
    case EP_I64: i = ((const int64_t *)t->data)[k]; break;
    case EP_I8: i = (int8_t)p[k]; break;
    default: i = p[k]; break;
    }
    if (i < 0) i += depth;
    return i >= 0 && i < depth ? i : -1;
}

static ep_status run_one_hot(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *idx = n->in[0], *y = n->out[0];
    int32_t axis = n->params[0];
    int64_t depth = n->params[1], outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= idx->dims[d];
    for (int32_t d = axis; d < idx->rank; d++) inner *= idx->dims[d];
    size_t size = ep_dtype_size(y->dtype);
    const uint8_t *off = (const uint8_t *)n->in[1]->data, *on = off + size;
    uint8_t *dst = (uint8_t *)y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t i = 0; i < inner; i++, dst += size)
                ep_memcpy(dst, one_hot_index(idx, o * inner + i, depth) == d ? on : off, size);
    return EP_OK;
}

const ep_kernel ep_kernel_trilu = {"Trilu", check_trilu, run_trilu};
const ep_kernel ep_kernel_cumsum = {"CumSum", check_cumsum, run_cumsum};
const ep_kernel ep_kernel_tile = {"Tile", check_tile, run_tile};
const ep_kernel ep_kernel_one_hot = {"OneHot", check_one_hot, run_one_hot};
