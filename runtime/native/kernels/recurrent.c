/* Recurrent ops over float32: the LSTM plan op (default activations, layout 0: inputs X W R B initial_h initial_c;
   params hidden size, direction) and the Recurrent plan op, which runs an RNN, GRU or LSTM cell with every option
   (inputs X W R B sequence_lens initial_h initial_c P; outputs Y Y_h, and Y_c for LSTM; params cell, hidden size,
   direction, layout, linear_before_reset, input_forget, clip flag, clip, then per direction and activation: code,
   alpha, beta). Each batch row runs alone, so a row with a shorter sequence_lens stops early: its Y is zero past its
   length and its Y_h (Y_c) holds the state at its last step (zero for a row of length 0, as onnxruntime gives). The
   running state lives in Y_h (and Y_c). Either op may end its params with a word 1: its weights then come reordered
   at plan time, W in the matrix-product kernel's panels ([dirs, ceil(gates x hidden / 32), input, 32]: the input
   products of a block of steps one product on the micro-kernel) and R transposed ([dirs, hidden, gates x hidden]:
   R h as h times R^T's rows, in vectors along the gates, where dot products along the hidden size end each in a
   horizontal sum). */
#include "gemm.h"
#include "vector_math.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum { FIXED_PARAMS = 8, MAX_ACTIVATIONS = 3, ACTIVATION_KINDS = 11 };

typedef struct activation {
    int32_t kind; /* Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu,
                     Softsign, Softplus */
    float alpha, beta;
} activation;

typedef struct recurrent {
    int32_t cell, gates, direction, dirs, layout, linear_before_reset, input_forget, clipped, reordered;
    float clip;
    int64_t seq, batch, input, hidden;
    const ep_tensor *x, *w, *r, *bias, *lengths, *h0, *c0, *peep;
    ep_tensor *y, *y_h, *y_c;
    activation act[2][MAX_ACTIVATIONS];
} recurrent;

static float apply(const activation *a, float x) {
    switch (a->kind) {
    case 0: return ep_sigmoidf(x);
    case 1: return ep_tanhf(x);
    case 2: return x > 0.0f ? x : 0.0f;
    case 3: return a->alpha * x + a->beta;
    case 4: return x >= 0.0f ? x : a->alpha * x;
    case 5: return x >= a->alpha ? x : 0.0f;
    case 6: return a->alpha * ep_tanhf(a->beta * x);
    case 7: {
        float v = a->alpha * x + a->beta;
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    case 8: return x >= 0.0f ? x : a->alpha * (ep_expf(x) - 1.0f);
    case 9: return x / (1.0f + (x < 0.0f ? -x : x));
    default: return x > 20.0f ? x : ep_logf(1.0f + ep_expf(x));
    }
}

static int dims_are(const ep_tensor *t, int32_t rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t want[4] = {a, b, c, d};
    if (!t || t->dtype != EP_F32 || t->rank != rank) return 0;
    for (int32_t i = 0; i < rank; i++)
        if (t->dims[i] != want[i]) return 0;
    return 1;
}

/* A [dirs, batch, hidden] state (layout 0) or [batch, dirs, hidden] (layout 1). */
static int is_state(const recurrent *s, const ep_tensor *t) {
    return s->layout ? dims_are(t, 3, s->batch, s->dirs, s->hidden, 0)
                     : dims_are(t, 3, s->dirs, s->batch, s->hidden, 0);
}

static ep_status check_shapes(const ep_node *n, const recurrent *s, char *error) {
    int64_t h = s->hidden, g = s->gates;
    if (h < 1 || h > ((int64_t)1 << 24)) return ep_fail(error, n, ": bad hidden size");
    int w_ok = s->reordered ? dims_are(s->w, 4, s->dirs, (g * h + EP_PREPACKED_COLUMNS - 1) / EP_PREPACKED_COLUMNS,
                                       s->input, EP_PREPACKED_COLUMNS)
                            : dims_are(s->w, 3, s->dirs, g * h, s->input, 0);
    int r_ok = s->reordered ? dims_are(s->r, 3, s->dirs, h, g * h, 0) : dims_are(s->r, 3, s->dirs, g * h, h, 0);
    if (!w_ok || !r_ok) return ep_fail(error, n, ": W or R has the wrong shape");
    if (s->bias && !dims_are(s->bias, 2, s->dirs, 2 * g * h, 0, 0)) return ep_fail(error, n, ": B has the wrong shape");
    if (s->peep && !dims_are(s->peep, 2, s->dirs, 3 * h, 0, 0)) return ep_fail(error, n, ": P has the wrong shape");
    if (s->lengths && (s->lengths->dtype != EP_I32 || s->lengths->rank != 1 || s->lengths->dims[0] != s->batch))
        return ep_fail(error, n, ": sequence_lens must be int32 [batch]");
    if ((s->h0 && !is_state(s, s->h0)) || (s->c0 && !is_state(s, s->c0)))
        return ep_fail(error, n, ": an initial state has the wrong shape");
    int y_ok = s->layout ? dims_are(s->y, 4, s->batch, s->seq, s->dirs, h)
                         : dims_are(s->y, 4, s->seq, s->dirs, s->batch, h);
    if (!y_ok || !is_state(s, s->y_h) || (s->cell == CELL_LSTM && !is_state(s, s->y_c)))
        return ep_fail(error, n, ": an output has the wrong shape");
    return EP_OK;
}

/* Reads X's sizes (after layout and direction are known) and checks every tensor. */
static ep_status read_shapes(const ep_node *n, recurrent *s, char *error) {
    if (!s->x || !s->w || !s->r) return ep_fail(error, n, ": X, W and R are required");
    if (s->x->rank != 3 || s->x->dtype != EP_F32) return ep_fail(error, n, ": X must be float32 of rank 3");
    s->seq = s->x->dims[s->layout ? 1 : 0];
    s->batch = s->x->dims[s->layout ? 0 : 1];
    s->input = s->x->dims[2];
    s->dirs = s->direction == 2 ? 2 : 1;
    return check_shapes(n, s, error);
}

static void default_activations(recurrent *s) {
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < MAX_ACTIVATIONS; k++) s->act[d][k] = (activation){k == 0 ? 0 : 1, 0.0f, 0.0f};
}

static ep_status read_lstm(const ep_node *n, recurrent *s, char *error) {
    if (n->n_in != 6 || n->n_out != 3 || n->n_params < 2 || n->n_params > 3 || (n->n_params == 3 && n->params[2] != 1))
        return ep_fail(error, n, ": wrong inputs, outputs or parameters");
    *s = (recurrent){CELL_LSTM, 4, n->params[1], 1, 0, 0, 0, 0, n->n_params == 3, 0.0f, 0, 0, 0, n->params[0],
                     n->in[0], n->in[1], n->in[2], n->in[3], 0, n->in[4], n->in[5], 0,
                     n->out[0], n->out[1], n->out[2], {{{0}}}};
    if (s->direction < 0 || s->direction > 2) return ep_fail(error, n, ": bad direction");
    default_activations(s);
    return read_shapes(n, s, error);
}

static ep_status read_activations(const ep_node *n, recurrent *s, char *error) {
    int32_t count = s->cell == CELL_RNN ? 1 : s->cell == CELL_GRU ? 2 : 3;
    uint32_t words = (uint32_t)(FIXED_PARAMS + 3 * count * s->dirs);
    if (n->n_params != words && (n->n_params != words + 1 || n->params[words] != 1))
        return ep_fail(error, n, ": bad parameter count");
    s->reordered = n->n_params == words + 1;
    for (int32_t d = 0; d < s->dirs; d++)
        for (int32_t k = 0; k < count; k++) {
            uint32_t at = (uint32_t)(FIXED_PARAMS + 3 * (d * count + k));
            activation *a = &s->act[d][k];
            *a = (activation){n->params[at], ep_param_f32(n, at + 1), ep_param_f32(n, at + 2)};
            if (a->kind < 0 || a->kind >= ACTIVATION_KINDS) return ep_fail(error, n, ": unknown activation");
        }
    return EP_OK;
}

static ep_status read_recurrent(const ep_node *n, recurrent *s, char *error) {
    if (n->n_in != 8 || n->n_out < 2 || n->n_out > 3 || n->n_params < FIXED_PARAMS)
        return ep_fail(error, n, ": wrong inputs, outputs or parameters");
    const int32_t *p = n->params;
    *s = (recurrent){p[0], 0, p[2], 1, p[3], p[4], p[5], p[6], 0, ep_param_f32(n, 7), 0, 0, 0, p[1],
                     n->in[0], n->in[1], n->in[2], n->in[3], n->in[4], n->in[5], n->in[6], n->in[7],
                     n->out[0], n->out[1], n->n_out == 3 ? n->out[2] : 0, {{{0}}}};
    if (s->cell < CELL_RNN || s->cell > CELL_LSTM || s->direction < 0 || s->direction > 2 || (s->layout & ~1) ||
        (s->linear_before_reset & ~1) || (s->input_forget & ~1) || (s->clipped & ~1) || !(s->clip >= 0.0f))
        return ep_fail(error, n, ": bad parameters");
    if ((s->cell == CELL_LSTM) != (n->n_out == 3) || (s->cell != CELL_LSTM && (s->c0 || s->peep)))
        return ep_fail(error, n, ": initial_c, P and Y_c belong to LSTM only");
    s->gates = s->cell == CELL_RNN ? 1 : s->cell == CELL_GRU ? 3 : 4;
    s->dirs = s->direction == 2 ? 2 : 1;
    ep_status status = read_activations(n, s, error);
    return status == EP_OK ? read_shapes(n, s, error) : status;
}

/* Steps whose input products W x run as one product (W read once for them all). */
enum { STEP_BLOCK = 32 };

/* Steps whose input products the scratch holds at once: the whole sequence, up to STEP_BLOCK. */
static int64_t block_steps(const recurrent *s) { return s->seq < STEP_BLOCK ? s->seq : STEP_BLOCK; }

/* The scratch: the input products of a block of steps, then a step's gate sums, R h and two rows of hidden. */
static size_t scratch_bytes(const recurrent *s) {
    return (size_t)((block_steps(s) + 2) * s->gates * s->hidden + 2 * s->hidden) * sizeof(float);
}

static ep_status check_lstm(const ep_node *n, size_t *scratch, char *error) {
    recurrent s;
    ep_status status = read_lstm(n, &s, error);
    if (status == EP_OK) *scratch = scratch_bytes(&s);
    return status;
}

static ep_status check_recurrent(const ep_node *n, size_t *scratch, char *error) {
    recurrent s;
    ep_status status = read_recurrent(n, &s, error);
    if (status == EP_OK) *scratch = scratch_bytes(&s);
    return status;
}

/* Offsets of step t's input row and output row, and of a state row, for batch row b and direction dir. */
static int64_t x_row(const recurrent *s, int64_t t, int64_t b) {
    return (s->layout ? b * s->seq + t : t * s->batch + b) * s->input;
}

static int64_t y_row(const recurrent *s, int64_t t, int64_t dir, int64_t b) {
    return (s->layout ? (b * s->seq + t) * s->dirs + dir : (t * s->dirs + dir) * s->batch + b) * s->hidden;
}

static int64_t state_row(const recurrent *s, int64_t dir, int64_t b) {
    return (s->layout ? b * s->dirs + dir : dir * s->batch + b) * s->hidden;
}

/* The weights of one direction: W, R, the W and R biases (zero when B is absent) and the peepholes. */
typedef struct direction_weights {
    const float *w, *r, *wb, *rb, *peep;
    const activation *act;
} direction_weights;

static const ep_epilogue plain_product = {0, 1.0f, 0, EP_ACT_NONE, 0.0f, 0.0f};

/* out[j] = (R h)[col0 + j] for `cols` gate rows: h times R^T's columns, or dot products; R read once. */
static void recurrent_product(const recurrent *s, const direction_weights *d, const float *h, int64_t col0,
                              int64_t cols, float *out) {
    if (s->reordered)
        ep_gemv(1, s->hidden, cols, h, s->hidden, 1, d->r + col0, s->gates * s->hidden, out, cols, &plain_product);
    else
        ep_gemm_dot(cols, 1, s->hidden, d->r + col0 * s->hidden, h, s->hidden, out, 1, 1, &plain_product);
}

/* The activation of n pre-activations in place (clipped first when `clip_first` and the op clips): Sigmoid and Tanh
   8 lanes at a time. */
static void activate_row(const recurrent *s, const activation *a, float *x, int64_t n, int clip_first) {
    if (clip_first && s->clipped)
        for (int64_t k = 0; k < n; k++) x[k] = x[k] < -s->clip ? -s->clip : x[k] > s->clip ? s->clip : x[k];
    if (a->kind == 0) ep_activate_row(EP_ACT_SIGMOID, x, x, n, 0.0f, 0.0f);
    else if (a->kind == 1) ep_tanh_row(x, x, n);
    else
        for (int64_t k = 0; k < n; k++) x[k] = apply(a, x[k]);
}

static float at_or_zero(const float *v, int64_t i) { return v ? v[i] : 0.0f; }

/* A step's working rows: xw, the input products W x + Wb of its time; gates, rh and spare, scratch rows. */
typedef struct step_rows {
    const float *xw;
    float *gates, *rh, *spare;
} step_rows;

static void rnn_step(const recurrent *s, const direction_weights *d, const step_rows *r, float *h) {
    recurrent_product(s, d, h, 0, s->hidden, r->rh);
    for (int64_t k = 0; k < s->hidden; k++) r->gates[k] = r->xw[k] + r->rh[k] + at_or_zero(d->rb, k);
    activate_row(s, &d->act[0], r->gates, s->hidden, 1);
    for (int64_t k = 0; k < s->hidden; k++) h[k] = r->gates[k];
}

/* GRU gates z, r, h: the update and reset gates from W x + R h, then the candidate from the reset state. */
static void gru_step(const recurrent *s, const direction_weights *d, const step_rows *r, float *h) {
    int64_t hs = s->hidden;
    float *gates = r->gates, *candidate = r->gates + 2 * hs, *reset_h = r->spare;
    recurrent_product(s, d, h, 0, s->linear_before_reset ? 3 * hs : 2 * hs, r->rh);
    for (int64_t k = 0; k < 2 * hs; k++) gates[k] = r->xw[k] + r->rh[k] + at_or_zero(d->rb, k);
    activate_row(s, &d->act[0], gates, 2 * hs, 1);
    const float *update = gates, *reset = gates + hs;
    if (s->linear_before_reset) {
        for (int64_t k = 0; k < hs; k++)
            candidate[k] = r->xw[2 * hs + k] + reset[k] * (r->rh[2 * hs + k] + at_or_zero(d->rb, 2 * hs + k));
    } else {
        for (int64_t k = 0; k < hs; k++) reset_h[k] = reset[k] * h[k];
        recurrent_product(s, d, reset_h, 2 * hs, hs, r->rh + 2 * hs);
        for (int64_t k = 0; k < hs; k++)
            candidate[k] = r->xw[2 * hs + k] + r->rh[2 * hs + k] + at_or_zero(d->rb, 2 * hs + k);
    }
    activate_row(s, &d->act[1], candidate, hs, 1);
    for (int64_t k = 0; k < hs; k++) h[k] = (1.0f - update[k]) * candidate[k] + update[k] * h[k];
}

/* LSTM gates i, o, f, c with peepholes P[i, o, f]; input_forget couples the forget gate to 1 - input gate. */
static void lstm_step(const recurrent *s, const direction_weights *d, const step_rows *r, float *h, float *cell) {
    int64_t hs = s->hidden;
    float *gates = r->gates, *in_gate = gates, *out_gate = gates + hs, *forget = gates + 2 * hs;
    float *candidate = gates + 3 * hs, *cell_act = r->spare;
    recurrent_product(s, d, h, 0, 4 * hs, r->rh);
    for (int64_t g = 0; g < 4 * hs; g++) gates[g] = r->xw[g] + r->rh[g] + at_or_zero(d->rb, g);
    if (d->peep)
        for (int64_t k = 0; k < hs; k++) {
            in_gate[k] += d->peep[k] * cell[k];
            forget[k] += d->peep[2 * hs + k] * cell[k];
        }
    activate_row(s, &d->act[0], in_gate, hs, 1);
    if (s->input_forget)
        for (int64_t k = 0; k < hs; k++) forget[k] = 1.0f - in_gate[k];
    else
        activate_row(s, &d->act[0], forget, hs, 1);
    activate_row(s, &d->act[1], candidate, hs, 1);
    for (int64_t k = 0; k < hs; k++) cell[k] = forget[k] * cell[k] + in_gate[k] * candidate[k];
    if (d->peep)
        for (int64_t k = 0; k < hs; k++) out_gate[k] += d->peep[hs + k] * cell[k];
    activate_row(s, &d->act[0], out_gate, hs, 1);
    for (int64_t k = 0; k < hs; k++) cell_act[k] = cell[k];
    activate_row(s, &d->act[2], cell_act, hs, 0);
    for (int64_t k = 0; k < hs; k++) h[k] = out_gate[k] * cell_act[k];
}

static direction_weights weights_of(const recurrent *s, int64_t dir) {
    int64_t gh = s->gates * s->hidden;
    const float *bias = s->bias ? (const float *)s->bias->data + dir * 2 * gh : 0;
    int64_t w_floats = s->reordered ? s->w->count / s->dirs : gh * s->input;
    return (direction_weights){(const float *)s->w->data + dir * w_floats,
                               (const float *)s->r->data + dir * gh * s->hidden, bias, bias ? bias + gh : 0,
                               s->peep ? (const float *)s->peep->data + dir * 3 * s->hidden : 0, s->act[dir]};
}

static void copy_or_zero(float *dst, const ep_tensor *src, int64_t at, int64_t n) {
    for (int64_t k = 0; k < n; k++) dst[k] = src ? ((const float *)src->data)[at + k] : 0.0f;
}

/* xw[t - first] = W x_t + Wb for `count` times from `first` of batch row b. */
static void input_products(const recurrent *s, const direction_weights *d, int64_t b, int64_t first, int64_t count,
                           float *xw) {
    int64_t gh = s->gates * s->hidden, x_step = x_row(s, 1, 0) - x_row(s, 0, 0);
    const float *x = (const float *)s->x->data + x_row(s, first, b);
    if (s->reordered)
        ep_gemm_prepacked(count, s->input, gh, x, x_step, d->w, xw, gh, &plain_product);
    else
        ep_gemm_dot(gh, count, s->input, d->w, x, x_step, xw, 1, gh, &plain_product);
    if (d->wb)
        for (int64_t t = 0; t < count; t++)
            for (int64_t g = 0; g < gh; g++) xw[t * gh + g] += d->wb[g];
}

/* One direction over batch row b for its `length` steps (from the end for the reverse direction). */
static void run_row(const recurrent *s, int64_t dir, int64_t b, int64_t length, float *scratch) {
    int reverse = s->direction == 1 || dir == 1;
    direction_weights d = weights_of(s, dir);
    int64_t at = state_row(s, dir, b), gh = s->gates * s->hidden, block = block_steps(s), first = 0, count = 0;
    float *h = (float *)s->y_h->data + at, *cell = s->y_c ? (float *)s->y_c->data + at : 0;
    float *y = (float *)s->y->data, *xw = scratch, *gates = scratch + block * gh;
    step_rows rows = {0, gates, gates + gh, gates + 2 * gh};
    copy_or_zero(h, length ? s->h0 : 0, at, s->hidden);
    if (cell) copy_or_zero(cell, length ? s->c0 : 0, at, s->hidden);
    for (int64_t step = 0; step < s->seq; step++) {
        int64_t t = reverse ? length - 1 - step : step;
        float *yt = y + y_row(s, step < length ? t : step, dir, b);
        if (step >= length) {
            copy_or_zero(yt, 0, 0, s->hidden);
            continue;
        }
        if (t < first || t >= first + count) {
            int64_t left = length - step;
            count = left < block ? left : block;
            first = reverse ? t - count + 1 : t;
            input_products(s, &d, b, first, count, xw);
        }
        rows.xw = xw + (t - first) * gh;
        if (s->cell == CELL_RNN) rnn_step(s, &d, &rows, h);
        else if (s->cell == CELL_GRU) gru_step(s, &d, &rows, h);
        else lstm_step(s, &d, &rows, h, cell);
        for (int64_t k = 0; k < s->hidden; k++) yt[k] = h[k];
    }
}

/* A share of the (direction, batch row) pairs, each independent of the others, on the worker's scratch: the two
   directions of a bidirectional op run at once. */
typedef struct recurrent_rows {
    const recurrent *s;
    const int32_t *lengths;
    const ep_context *ctx;
    int64_t tasks;
} recurrent_rows;

static void rows_task(void *arg, int32_t worker, int64_t index) {
    const recurrent_rows *r = (const recurrent_rows *)arg;
    const recurrent *s = r->s;
    int64_t begin, end;
    ep_task_range(s->dirs * s->batch, r->tasks, index, 1, &begin, &end);
    for (int64_t pair = begin; pair < end; pair++) {
        int64_t dir = pair / s->batch, b = pair % s->batch;
        run_row(s, dir, b, r->lengths ? r->lengths[b] : s->seq, ep_worker_scratch(r->ctx, worker));
    }
}

static ep_status run(const recurrent *s, const ep_context *ctx) {
    const int32_t *lengths = s->lengths ? (const int32_t *)s->lengths->data : 0;
    for (int64_t b = 0; b < s->batch; b++)
        if (lengths && (lengths[b] < 0 || lengths[b] > s->seq)) {
            ep_message(ctx->error, "Recurrent", ": sequence_lens outside [0, sequence length]", -1);
            return EP_ERR_RUNTIME;
        }
    recurrent_rows r = {s, lengths, ctx, 0};
    double fmas = (double)(s->dirs * s->batch * s->seq * s->gates * s->hidden * (s->hidden + s->input));
    r.tasks = ep_task_count(ctx, s->dirs * s->batch, fmas);
    ep_parallel(ctx, r.tasks, rows_task, &r);
    return EP_OK;
}

static ep_status run_lstm(const ep_node *n, const ep_context *ctx) {
    recurrent s;
    char unused[EP_ERROR_CAPACITY];
    read_lstm(n, &s, unused);
    return run(&s, ctx);
}

static ep_status run_recurrent(const ep_node *n, const ep_context *ctx) {
    recurrent s;
    char unused[EP_ERROR_CAPACITY];
    read_recurrent(n, &s, unused);
    return run(&s, ctx);
}

const ep_kernel ep_kernel_lstm = {"LSTM", check_lstm, run_lstm};
const ep_kernel ep_kernel_recurrent = {"Recurrent", check_recurrent, run_recurrent};
