/* Broadcast iteration shared by the elementwise kernels. */
#include "broadcast.h"

int ep_broadcasts_to(const ep_tensor *in, const ep_tensor *out) {
    if (in->rank > out->rank) return 0;
    for (int32_t i = 0; i < in->rank; i++) {
        int64_t d = in->dims[in->rank - 1 - i], o = out->dims[out->rank - 1 - i];
        if (d != o && d != 1) return 0;
    }
    return 1;
}

void ep_broadcast_plan(ep_broadcast *b, const ep_tensor *out, const ep_tensor *const *inputs, int32_t n_inputs) {
    int64_t strides[EP_BROADCAST_MAX_INPUTS][EP_MAX_RANK];
    int32_t rank = out->rank;
    b->n_inputs = n_inputs;
    if (out->count == 0) {
        b->rank = 1;
        b->dims[0] = 0;
        return;
    }
    for (int32_t k = 0; k < n_inputs; k++) {
        const ep_tensor *in = inputs[k];
        int64_t stride = 1;
        for (int32_t i = rank - 1; i >= 0; i--) {
            int32_t j = i - (rank - in->rank);
            int64_t d = j >= 0 ? in->dims[j] : 1;
            strides[k][i] = d == 1 ? 0 : stride;
            stride *= d;
        }
    }
    b->rank = 0;
    for (int32_t i = 0; i < rank; i++) {
        if (out->dims[i] == 1) continue;
        int merge = b->rank > 0;
        for (int32_t k = 0; k < n_inputs && merge; k++)
            merge = b->strides[k][b->rank - 1] == strides[k][i] * out->dims[i];
        if (merge) {
            b->dims[b->rank - 1] *= out->dims[i];
            for (int32_t k = 0; k < n_inputs; k++) b->strides[k][b->rank - 1] = strides[k][i];
            continue;
        }
        b->dims[b->rank] = out->dims[i];
        for (int32_t k = 0; k < n_inputs; k++) b->strides[k][b->rank] = strides[k][i];
        b->rank++;
    }
    if (b->rank == 0) {
        b->rank = 1;
        b->dims[0] = 1;
        for (int32_t k = 0; k < n_inputs; k++) b->strides[k][0] = 0;
    }
}

static void fill_row(const ep_broadcast *b, ep_row *row, const int64_t *counter) {
    int32_t last = b->rank - 1;
    int64_t out = 0, block = b->dims[last];
    for (int32_t k = 0; k < b->n_inputs; k++) row->in[k] = 0;
    for (int32_t i = last - 1; i >= 0; i--) {
        out += counter[i] * block;
        block *= b->dims[i];
        for (int32_t k = 0; k < b->n_inputs; k++) row->in[k] += counter[i] * b->strides[k][i];
    }
    row->out = out;
    row->length = b->dims[last];
    for (int32_t k = 0; k < b->n_inputs; k++) row->step[k] = b->strides[k][last];
}

int ep_row_first(const ep_broadcast *b, ep_row *row, int64_t *counter) {
    for (int32_t i = 0; i < b->rank; i++) {
        counter[i] = 0;
        if (b->dims[i] == 0) return 0;
    }
    fill_row(b, row, counter);
    return 1;
}

int ep_row_next(const ep_broadcast *b, ep_row *row, int64_t *counter) {
    for (int32_t i = b->rank - 2; i >= 0; i--) {
        if (++counter[i] < b->dims[i]) {
            fill_row(b, row, counter);
            return 1;
        }
        counter[i] = 0;
    }
    return 0;
}

int ep_row_clip(ep_row *row, int32_t n_inputs, int64_t begin, int64_t end) {
    int64_t first = row->out > begin ? row->out : begin;
    int64_t last = row->out + row->length < end ? row->out + row->length : end;
    if (first >= last) return 0;
    for (int32_t k = 0; k < n_inputs; k++) row->in[k] += (first - row->out) * row->step[k];
    row->out = first;
    row->length = last - first;
    return 1;
}
