/* TopK: along an axis, the k largest (or smallest) elements and their int64 indices, best first; among equal
   elements the lower index comes first. Each row keeps a heap of k indices (scratch, int64) whose root is the worst
   kept element, O(n log k), then sorts it by repeatedly moving the root to the back. The output is always sorted,
   which `sorted = 0` allows. */
#include "../ep_internal.h"

/* Whether element a of the row is better than element b: larger (smaller when !largest), the lower index on ties.
   A strict total order on indices whatever the values (NaN compares false, then the index decides). */
static int better(const ep_tensor *x, int64_t base, int64_t stride, int64_t a, int64_t b, int largest) {
    int64_t pa = base + a * stride, pb = base + b * stride;
    int gt, lt;
    switch (x->dtype) {
    case EP_F32: {
        float va = ((const float *)x->data)[pa], vb = ((const float *)x->data)[pb];
        gt = va > vb;
        lt = va < vb;
        break;
    }
    case EP_I32: {
        int32_t va = ((const int32_t *)x->data)[pa], vb = ((const int32_t *)x->data)[pb];
        gt = va > vb;
        lt = va < vb;
        break;
    }
    default: {
        int64_t va = ((const int64_t *)x->data)[pa], vb = ((const int64_t *)x->data)[pb];
        gt = va > vb;
        lt = va < vb;
        break;
    }
    }
    if (largest ? gt : lt) return 1;
    if (largest ? lt : gt) return 0;
    return a < b;
}

/* Restores the heap (the worst element at the root) below position i of heap[0, size). */
static void sift_down(int64_t *heap, int64_t size, int64_t i, const ep_tensor *x, int64_t base, int64_t stride,
                      int largest) {
    for (;;) {
        int64_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < size && better(x, base, stride, heap[worst], heap[l], largest)) worst = l;
        if (r < size && better(x, base, stride, heap[worst], heap[r], largest)) worst = r;
        if (worst == i) return;
        int64_t t = heap[i];
        heap[i] = heap[worst];
        heap[worst] = t;
        i = worst;
    }
}

/* Moves the element at position i of the heap up while it is worse than its parent. */
static void sift_up(int64_t *heap, int64_t i, const ep_tensor *x, int64_t base, int64_t stride, int largest) {
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!better(x, base, stride, heap[parent], heap[i], largest)) return;
        int64_t t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

static ep_status check_top_k(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 1, 1, 2, error);
    if (status != EP_OK) return status;
    if (n->n_params != 4) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *values = n->out[0], *indices = n->out[1];
    int32_t axis = n->params[0], k = n->params[1];
    if (x->dtype != EP_F32 && x->dtype != EP_I32 && x->dtype != EP_I64)
        return ep_fail(error, n, ": input must be float32, int32 or int64");
    if (x->rank < 1 || axis < 0 || axis >= x->rank) return ep_fail(error, n, ": bad axis");
    if (k < 0 || k > x->dims[axis]) return ep_fail(error, n, ": k outside [0, axis length]");
    if ((n->params[2] != 0 && n->params[2] != 1) || (n->params[3] != 0 && n->params[3] != 1))
        return ep_fail(error, n, ": largest and sorted must be 0 or 1");
    if (values->dtype != x->dtype || indices->dtype != EP_I64) return ep_fail(error, n, ": wrong output dtypes");
    if (values->rank != x->rank || !ep_same_shape(values, indices)) return ep_fail(error, n, ": wrong output shape");
    for (int32_t d = 0; d < x->rank; d++)
        if (values->dims[d] != (d == axis ? (int64_t)k : x->dims[d])) return ep_fail(error, n, ": wrong output shape");
    if ((uint64_t)k > (uint64_t)((size_t)-1 / sizeof(int64_t))) return ep_fail(error, n, ": k too large");
    *scratch = (size_t)k * sizeof(int64_t);
    return EP_OK;
}

static ep_status run_top_k(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0];
    int32_t axis = n->params[0];
    int64_t k = n->params[1];
    int largest = n->params[2];
    int64_t outer = 1, length = x->dims[axis], inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    if (k == 0 || x->count == 0) return EP_OK;
    int64_t *heap = (int64_t *)(void *)c->scratch;
    size_t size = ep_dtype_size(x->dtype);
    const uint8_t *src = (const uint8_t *)x->data;
    uint8_t *values = (uint8_t *)n->out[0]->data;
    int64_t *indices = (int64_t *)n->out[1]->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * length * inner + i, out_base = o * k * inner + i, kept = 0;
            for (int64_t j = 0; j < length; j++) {
                if (kept < k) {
                    heap[kept] = j;
                    sift_up(heap, kept++, x, base, inner, largest);
                } else if (better(x, base, inner, j, heap[0], largest)) {
                    heap[0] = j;
                    sift_down(heap, k, 0, x, base, inner, largest);
                }
            }
            /* The root is the worst of those left: it goes last. */
            for (int64_t left = k; left > 0; left--) {
                int64_t j = heap[0], at = out_base + (left - 1) * inner;
                heap[0] = heap[left - 1];
                sift_down(heap, left - 1, 0, x, base, inner, largest);
                indices[at] = j;
                ep_memcpy(values + (size_t)at * size, src + (size_t)(base + j * inner) * size, size);
            }
        }
    return EP_OK;
}

const ep_kernel ep_kernel_top_k = {"TopK", check_top_k, run_top_k};
