/* Pad: a constant, or the input reflected, repeated at its edges or wrapped, around it (negative pads crop). */
#include "../ep_internal.h"

/* Pad: params are mode (0 constant, 1 reflect, 2 edge, 3 wrap), the constant as float bits, then per axis the
   number of elements added before (negative: removed). */
static ep_status check_pad(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    if (x->dtype != y->dtype || !ep_dtype_size(x->dtype) || x->rank != y->rank || n->n_params != 2 + (uint32_t)x->rank)
        return ep_fail(error, n, ": dtype, rank or parameters do not match");
    if (n->params[0] < 0 || n->params[0] > 3) return ep_fail(error, n, ": bad mode");
    if (n->params[0] != 0 && x->count == 0 && y->count != 0) return ep_fail(error, n, ": nothing to reflect");
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t before = n->params[2 + d], after = y->dims[d] - x->dims[d] - before;
        if (before < -x->dims[d] || before > y->dims[d]) return ep_fail(error, n, ": pad larger than the output");
        int64_t kept = x->dims[d] - (before < 0 ? -before : 0) - (after < 0 ? -after : 0);
        if (n->params[0] != 0 && kept <= 0 && y->dims[d] > 0) return ep_fail(error, n, ": nothing to reflect");
    }
    return EP_OK;
}

static int64_t reflected(int32_t mode, int64_t c, int64_t dim) {
    if (c >= 0 && c < dim) return c;
    if (mode == 0) return -1;
    if (mode == 2) return c < 0 ? 0 : dim - 1;
    if (mode == 3) return ((c % dim) + dim) % dim;
    if (dim == 1) return 0;
    int64_t period = 2 * (dim - 1);
    c = ((c % period) + period) % period;
    return c < dim ? c : period - c;
}

/* The input index along an axis of `dim` for output coordinate o (`before` added in front, `out` wide), or -1 for
   the constant: negative pads crop the input first, and the other modes reflect, repeat or wrap what is left (as
   onnx's reference does; a wrap read the uncropped input). */
static int64_t pad_source(int32_t mode, int64_t o, int64_t before, int64_t dim, int64_t out) {
    int64_t cropped = before < 0 ? -before : 0, after = out - dim - before;
    int64_t s = reflected(mode, o - before - cropped, dim - cropped - (after < 0 ? -after : 0));
    return s < 0 ? -1 : s + cropped;
}

/* `count` elements of `size` bytes at out set to the constant `fill`: a typed loop for each element size (a memcpy
   call per element took basic-pitch's Pads 5 ns a value). */
static void fill_elements(uint8_t *out, int64_t count, const uint8_t *fill, size_t size) {
    uint64_t wide;
    uint32_t word;
    uint16_t half;
    switch (size) {
    case 8:
        __builtin_memcpy(&wide, fill, 8);
        for (int64_t k = 0; k < count; k++) __builtin_memcpy(out + 8 * k, &wide, 8);
        break;
    case 4:
        __builtin_memcpy(&word, fill, 4);
        for (int64_t k = 0; k < count; k++) __builtin_memcpy(out + 4 * k, &word, 4);
        break;
    case 2:
        __builtin_memcpy(&half, fill, 2);
        for (int64_t k = 0; k < count; k++) __builtin_memcpy(out + 2 * k, &half, 2);
        break;
    default:
        for (int64_t k = 0; k < count; k++) out[k] = fill[0];
    }
}

/* Columns [from, to) of a row along the innermost padded axis, each `unit` elements wide (the unpadded axes after
   it): the constant, or the source row's columns pad_source picks. */
static void pad_columns(uint8_t *row, int64_t from, int64_t to, const uint8_t *source, const ep_node *n,
                        int32_t axis, const uint8_t *fill, size_t size, int64_t unit) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    size_t unit_bytes = (size_t)unit * size;
    if (n->params[0] == 0) {
        fill_elements(row + (size_t)from * unit_bytes, (to - from) * unit, fill, size);
        return;
    }
    for (int64_t j = from; j < to; j++) {
        int64_t s = pad_source(n->params[0], j, n->params[2 + axis], x->dims[axis], y->dims[axis]);
        ep_memcpy(row + (size_t)j * unit_bytes, source + (size_t)s * unit_bytes, unit_bytes);
    }
}

/* The output a row at a time along its innermost padded axis (the unpadded axes after it are each element's
   `unit`): a row whose outer indexes fall in a constant padding is the constant; else its source row, the columns
   inside the input as one copy and each end's from pad_source. Element by element, basic-pitch's Pads took 13 ns a
   value; so, 1.6 ns. */
static ep_status run_pad(const ep_node *n, const ep_context *c) {
    (void)c;
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t rank = x->rank, mode = n->params[0], axis = rank - 1;
    size_t size = ep_dtype_size(x->dtype);
    uint8_t fill[8], *dst = (uint8_t *)y->data;
    ep_store_real(fill, x->dtype, 0, ep_param_f32(n, 1), 1);
    while (axis >= 0 && !n->params[2 + axis] && x->dims[axis] == y->dims[axis]) axis--;
    if (axis < 0) {
        if (y->count) ep_memcpy(dst, x->data, (size_t)y->count * size);
        return EP_OK;
    }
    int64_t unit = 1, counter[EP_MAX_RANK], in_strides[EP_MAX_RANK], stride = 1;
    for (int32_t i = rank - 1; i > axis; i--) unit *= x->dims[i];
    for (int32_t i = rank - 1; i >= 0; i--) {
        in_strides[i] = stride;
        stride *= x->dims[i];
        counter[i] = 0;
    }
    int64_t width = y->dims[axis], dim = x->dims[axis], before = n->params[2 + axis], row = width * unit;
    /* columns [first, end) of each row are the source row's, copied at once */
    int64_t first = before > 0 ? before : 0, end = before + dim < width ? before + dim : width;
    if (end < first) end = first;
    for (int64_t o = 0; o < y->count; o += row) {
        int64_t offset = 0;
        for (int32_t i = 0; i < axis && offset >= 0; i++) {
            int64_t s = pad_source(mode, counter[i], n->params[2 + i], x->dims[i], y->dims[i]);
            offset = s < 0 ? -1 : offset + s * in_strides[i];
        }
        uint8_t *out = dst + (size_t)o * size;
        if (offset < 0) {
            fill_elements(out, row, fill, size);
        } else {
            const uint8_t *source = (const uint8_t *)x->data + (size_t)offset * size;
            size_t unit_bytes = (size_t)unit * size;
            pad_columns(out, 0, first, source, n, axis, fill, size, unit);
            pad_columns(out, end, width, source, n, axis, fill, size, unit);
            if (end > first)
                ep_memcpy(out + (size_t)first * unit_bytes, source + (size_t)(first - before) * unit_bytes,
                          (size_t)(end - first) * unit_bytes);
        }
        for (int32_t i = axis - 1; i >= 0; i--) {
            if (++counter[i] < y->dims[i]) break;
            counter[i] = 0;
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_pad = {"Pad", check_pad, run_pad};
