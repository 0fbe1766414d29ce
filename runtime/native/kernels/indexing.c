/* Indexed reads and writes: GatherElements, GatherND, ScatterElements (and Scatter), ScatterND. Indices are int32 or
   int64, negative ones count from the end; one out of range is `EP_ERR_RUNTIME`. */
#include "../ep_internal.h"

enum { REDUCE_NONE, REDUCE_ADD, REDUCE_MUL, REDUCE_MAX, REDUCE_MIN, REDUCE_KINDS };

/* Row-major strides of a tensor, in elements. */
static void strides_of(const ep_tensor *t, int64_t *strides) {
    int64_t stride = 1;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= t->dims[d];
    }
}

/* Advances a row-major multi-index over `dims`; the last axis moves fastest. */
static void advance(int64_t *counter, const int64_t *dims, int32_t rank) {
    for (int32_t d = rank - 1; d >= 0; d--) {
        if (++counter[d] < dims[d]) return;
        counter[d] = 0;
    }
}

/* Element k of an int32 or int64 index tensor, wrapped once when negative; -1 when outside [0, dim). */
static int64_t index_at(const ep_tensor *t, int64_t k, int64_t dim) {
    int64_t i = t->dtype == EP_I64 ? ((const int64_t *)t->data)[k] : ((const int32_t *)t->data)[k];
    if (i < 0) i += dim;
    return i >= 0 && i < dim ? i : -1;
}

/* Reports an index out of range at run time. */
static ep_status out_of_range(const ep_context *c, const char *op) {
    ep_message(c->error, op, ": index out of range", -1);
    return EP_ERR_RUNTIME;
}

/* Whether t holds int32 or int64 indices. */
static int is_index(const ep_tensor *t) { return t->dtype == EP_I32 || t->dtype == EP_I64; }

/* a combined with b by the reduction, wrapping on overflow. */
static int64_t reduce_int(int64_t a, int64_t b, int32_t reduction) {
    switch (reduction) {
    case REDUCE_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case REDUCE_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case REDUCE_MAX: return a > b ? a : b;
    case REDUCE_MIN: return a < b ? a : b;
    default: return b;
    }
}

/* a combined with b by the reduction. */
static float reduce_f32(float a, float b, int32_t reduction) {
    switch (reduction) {
    case REDUCE_ADD: return a + b;
    case REDUCE_MUL: return a * b;
    case REDUCE_MAX: return a > b ? a : b;
    case REDUCE_MIN: return a < b ? a : b;
    default: return b;
    }
}

/* Writes element k of `updates` into element `at` of `out`, combined with what is there by the reduction. */
static void combine(const ep_tensor *out, int64_t at, const ep_tensor *updates, int64_t k, int32_t reduction) {
    size_t size = ep_dtype_size(out->dtype);
    uint8_t *dst = (uint8_t *)out->data + (size_t)at * size;
    const uint8_t *src = (const uint8_t *)updates->data + (size_t)k * size;
    if (reduction == REDUCE_NONE) {
        ep_memcpy(dst, src, size);
    } else if (out->dtype == EP_F32) {
        float a, b;
        ep_memcpy(&a, dst, 4);
        ep_memcpy(&b, src, 4);
        a = reduce_f32(a, b, reduction);
        ep_memcpy(dst, &a, 4);
    } else {
        ep_store_int(dst, out->dtype, 0, (uint64_t)reduce_int((int64_t)ep_load_int(dst, out->dtype, 0),
                                                             (int64_t)ep_load_int(src, out->dtype, 0), reduction));
    }
}

/* GatherElements and ScatterElements: indices of the data's rank, no larger than the data off the axis. */
static ep_status check_elements(const ep_node *n, const ep_tensor *x, const ep_tensor *idx, char *error) {
    int32_t axis = n->params[0];
    if (x->rank < 1 || axis < 0 || axis >= x->rank) return ep_fail(error, n, ": bad axis");
    if (!is_index(idx)) return ep_fail(error, n, ": indices must be int32 or int64");
    if (idx->rank != x->rank) return ep_fail(error, n, ": indices and data differ in rank");
    for (int32_t d = 0; d < x->rank; d++)
        if (d != axis && idx->dims[d] > x->dims[d]) return ep_fail(error, n, ": indices larger than the data");
    return EP_OK;
}

/* The data offset of the element at `counter` of the indices, with index i along the axis. */
static int64_t element_offset(const int64_t *counter, const int64_t *strides, int32_t rank, int32_t axis, int64_t i) {
    int64_t offset = 0;
    for (int32_t d = 0; d < rank; d++) offset += (d == axis ? i : counter[d]) * strides[d];
    return offset;
}

static ep_status check_gather_elements(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *idx = n->in[1], *y = n->out[0];
    status = check_elements(n, x, idx, error);
    if (status != EP_OK) return status;
    if (y->dtype != x->dtype || !ep_same_shape(y, idx)) return ep_fail(error, n, ": wrong output");
    return EP_OK;
}

static ep_status run_gather_elements(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *idx = n->in[1], *y = n->out[0];
    int32_t axis = n->params[0];
    size_t size = ep_dtype_size(x->dtype);
    int64_t strides[EP_MAX_RANK], counter[EP_MAX_RANK];
    strides_of(x, strides);
    for (int32_t d = 0; d < idx->rank; d++) counter[d] = 0;
    for (int64_t k = 0; k < idx->count; k++) {
        int64_t i = index_at(idx, k, x->dims[axis]);
        if (i < 0) return out_of_range(c, "GatherElements");
        int64_t offset = element_offset(counter, strides, x->rank, axis, i);
        ep_memcpy((uint8_t *)y->data + (size_t)k * size, (const uint8_t *)x->data + (size_t)offset * size, size);
        advance(counter, idx->dims, idx->rank);
    }
    return EP_OK;
}

static ep_status check_scatter_elements(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 2 || n->params[1] < 0 || n->params[1] >= REDUCE_KINDS)
        return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *idx = n->in[1], *updates = n->in[2], *y = n->out[0];
    status = check_elements(n, x, idx, error);
    if (status != EP_OK) return status;
    if (updates->dtype != x->dtype || !ep_same_shape(updates, idx))
        return ep_fail(error, n, ": updates differ from the indices in shape or from the data in dtype");
    if (y->dtype != x->dtype || !ep_same_shape(y, x)) return ep_fail(error, n, ": wrong output");
    return EP_OK;
}

static ep_status run_scatter_elements(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *idx = n->in[1], *updates = n->in[2], *y = n->out[0];
    int32_t axis = n->params[0], reduction = n->params[1];
    int64_t strides[EP_MAX_RANK], counter[EP_MAX_RANK];
    strides_of(x, strides);
    for (int32_t d = 0; d < idx->rank; d++) counter[d] = 0;
    ep_memmove(y->data, x->data, y->bytes);
    for (int64_t k = 0; k < idx->count; k++) {
        int64_t i = index_at(idx, k, x->dims[axis]);
        if (i < 0) return out_of_range(c, "ScatterElements");
        combine(y, element_offset(counter, strides, x->rank, axis, i), updates, k, reduction);
        advance(counter, idx->dims, idx->rank);
    }
    return EP_OK;
}

/* GatherND and ScatterND: the last axis of the indices (1 to rank - batch) indexes the data after `batch` axes,
   which the indices share. */
static ep_status check_nd(const ep_node *n, const ep_tensor *x, const ep_tensor *idx, int32_t batch, char *error) {
    if (!is_index(idx)) return ep_fail(error, n, ": indices must be int32 or int64");
    if (idx->rank < 1 || batch < 0 || batch >= idx->rank || batch >= x->rank)
        return ep_fail(error, n, ": bad batch_dims or index rank");
    int64_t m = idx->dims[idx->rank - 1];
    if (m < 1 || m > x->rank - batch) return ep_fail(error, n, ": the last index axis does not fit the data");
    for (int32_t d = 0; d < batch; d++)
        if (idx->dims[d] != x->dims[d]) return ep_fail(error, n, ": batch axes differ");
    return EP_OK;
}

/* Whether t has the indices' leading axes followed by the data's axes after the indexed ones (GatherND's output,
   ScatterND's updates). */
static int nd_slices_shape(const ep_tensor *t, const ep_tensor *x, const ep_tensor *idx, int32_t batch) {
    int32_t m = (int32_t)idx->dims[idx->rank - 1], lead = idx->rank - 1;
    if (t->dtype != x->dtype || t->rank != lead + x->rank - batch - m) return 0;
    for (int32_t d = 0; d < lead; d++)
        if (t->dims[d] != idx->dims[d]) return 0;
    for (int32_t d = batch + m; d < x->rank; d++)
        if (t->dims[lead + d - batch - m] != x->dims[d]) return 0;
    return 1;
}

/* The data offset of index tuple t, or -1 when one of its indices is out of range. */
static int64_t nd_offset(const ep_tensor *x, const ep_tensor *idx, int32_t batch, int64_t t, int64_t per_batch) {
    int64_t strides[EP_MAX_RANK], m = idx->dims[idx->rank - 1];
    strides_of(x, strides);
    int64_t offset = batch ? (t / per_batch) * strides[batch - 1] : 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t i = index_at(idx, t * m + j, x->dims[batch + j]);
        if (i < 0) return -1;
        offset += i * strides[batch + j];
    }
    return offset;
}

/* Tuples per batch and elements per slice of GatherND and ScatterND. */
static void nd_geometry(const ep_tensor *x, const ep_tensor *idx, int32_t batch, int64_t *per_batch,
                        int64_t *slice) {
    *per_batch = 1;
    *slice = 1;
    for (int32_t d = batch; d < idx->rank - 1; d++) *per_batch *= idx->dims[d];
    for (int32_t d = batch + (int32_t)idx->dims[idx->rank - 1]; d < x->rank; d++) *slice *= x->dims[d];
}

static ep_status check_gather_nd(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1) return ep_fail(error, n, ": bad parameters");
    status = check_nd(n, n->in[0], n->in[1], n->params[0], error);
    if (status != EP_OK) return status;
    if (!nd_slices_shape(n->out[0], n->in[0], n->in[1], n->params[0])) return ep_fail(error, n, ": wrong output");
    return EP_OK;
}

static ep_status run_gather_nd(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *idx = n->in[1], *y = n->out[0];
    int32_t batch = n->params[0];
    int64_t per_batch, slice, tuples = idx->count / idx->dims[idx->rank - 1];
    nd_geometry(x, idx, batch, &per_batch, &slice);
    size_t size = ep_dtype_size(x->dtype);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t offset = nd_offset(x, idx, batch, t, per_batch);
        if (offset < 0) return out_of_range(c, "GatherND");
        ep_memcpy((uint8_t *)y->data + (size_t)(t * slice) * size, (const uint8_t *)x->data + (size_t)offset * size,
                  (size_t)slice * size);
    }
    return EP_OK;
}

static ep_status check_scatter_nd(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1 || n->params[0] < 0 || n->params[0] >= REDUCE_KINDS)
        return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *idx = n->in[1], *updates = n->in[2], *y = n->out[0];
    status = check_nd(n, x, idx, 0, error);
    if (status != EP_OK) return status;
    if (!nd_slices_shape(updates, x, idx, 0)) return ep_fail(error, n, ": updates do not fit the indices");
    if (y->dtype != x->dtype || !ep_same_shape(y, x)) return ep_fail(error, n, ": wrong output");
    return EP_OK;
}

static ep_status run_scatter_nd(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *idx = n->in[1], *updates = n->in[2], *y = n->out[0];
    int32_t reduction = n->params[0];
    int64_t per_batch, slice, tuples = idx->count / idx->dims[idx->rank - 1];
    nd_geometry(x, idx, 0, &per_batch, &slice);
    ep_memmove(y->data, x->data, y->bytes);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t offset = nd_offset(x, idx, 0, t, per_batch);
        if (offset < 0) return out_of_range(c, "ScatterND");
        for (int64_t e = 0; e < slice; e++) combine(y, offset + e, updates, t * slice + e, reduction);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_gather_elements = {"GatherElements", check_gather_elements, run_gather_elements};
const ep_kernel ep_kernel_gather_nd = {"GatherND", check_gather_nd, run_gather_nd};
const ep_kernel ep_kernel_scatter_elements = {"ScatterElements", check_scatter_elements, run_scatter_elements};
const ep_kernel ep_kernel_scatter_nd = {"ScatterND", check_scatter_nd, run_scatter_nd};
