/* LSTM (gates i, o, f, c; sigmoid/tanh/tanh; forward, reverse or bidirectional; layout 0). Inputs X, W, R, B,
   initial_h, initial_c (sequence_lens is lowered away); outputs Y, Y_h, Y_c. Params: hidden size, direction
   (0 forward, 1 reverse, 2 bidirectional). */
#include "../ep_internal.h"

typedef struct lstm_shape {
    int64_t seq, batch, input, hidden, dirs;
} lstm_shape;

#if defined(__GNUC__) || defined(__clang__)
typedef float lstm_v8 __attribute__((vector_size(32)));

/* A dot product in 8 partial sums (the order differs from a plain loop; the result stays within float rounding). */
static float dot(const float *a, const float *b, int64_t n) {
    lstm_v8 acc = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lstm_v8 x, y;
        __builtin_memcpy(&x, a + i, sizeof x);
        __builtin_memcpy(&y, b + i, sizeof y);
        acc += x * y;
    }
    float sum = 0.0f;
    for (int k = 0; k < 8; k++) sum += acc[k];
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}
#else
static float dot(const float *a, const float *b, int64_t n) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}
#endif

static int dims_are(const ep_tensor *t, int32_t rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t want[4] = {a, b, c, d};
    if (!t || t->dtype != EP_F32 || t->rank != rank) return 0;
    for (int32_t i = 0; i < rank; i++)
        if (t->dims[i] != want[i]) return 0;
    return 1;
}

static ep_status read_lstm(const ep_node *n, lstm_shape *s, char *error) {
    if (n->n_in != 6 || n->n_out != 3 || !n->in[0] || !n->in[1] || !n->in[2] || n->n_params != 2)
        return ep_fail(error, n, ": wrong inputs, outputs or parameters");
    const ep_tensor *x = n->in[0];
    if (x->rank != 3 || x->dtype != EP_F32) return ep_fail(error, n, ": X must be float32 [seq, batch, input]");
    s->seq = x->dims[0];
    s->batch = x->dims[1];
    s->input = x->dims[2];
    s->hidden = n->params[0];
    if (n->params[1] < 0 || n->params[1] > 2 || s->hidden < 1) return ep_fail(error, n, ": bad parameters");
    s->dirs = n->params[1] == 2 ? 2 : 1;
    int64_t h = s->hidden;
    if (!dims_are(n->in[1], 3, s->dirs, 4 * h, s->input, 0) || !dims_are(n->in[2], 3, s->dirs, 4 * h, h, 0))
        return ep_fail(error, n, ": W or R has the wrong shape");
    if (n->in[3] && !dims_are(n->in[3], 2, s->dirs, 8 * h, 0, 0)) return ep_fail(error, n, ": B has the wrong shape");
    for (int k = 4; k < 6; k++)
        if (n->in[k] && !dims_are(n->in[k], 3, s->dirs, s->batch, h, 0))
            return ep_fail(error, n, ": an initial state has the wrong shape");
    if (!dims_are(n->out[0], 4, s->seq, s->dirs, s->batch, h) || !dims_are(n->out[1], 3, s->dirs, s->batch, h, 0) ||
        !dims_are(n->out[2], 3, s->dirs, s->batch, h, 0))
        return ep_fail(error, n, ": an output has the wrong shape");
    return EP_OK;
}

static ep_status check_lstm(const ep_node *n, size_t *scratch, char *error) {
    lstm_shape s = {0};
    ep_status status = read_lstm(n, &s, error);
    if (status == EP_OK) *scratch = (size_t)(4 * s.hidden) * sizeof(float);
    return status;
}

static ep_status run_lstm(const ep_node *n, const ep_context *ctx) {
    lstm_shape s = {0};
    char unused[EP_ERROR_CAPACITY];
    read_lstm(n, &s, unused);
    int64_t hs = s.hidden;
    const float *x = (const float *)n->in[0]->data;
    float *y = (float *)n->out[0]->data, *y_h = (float *)n->out[1]->data, *y_c = (float *)n->out[2]->data;
    float *gates = ctx->scratch;
    for (int64_t dir = 0; dir < s.dirs; dir++) {
        int reverse = n->params[1] == 1 || dir == 1;
        const float *w = (const float *)n->in[1]->data + dir * 4 * hs * s.input;
        const float *r = (const float *)n->in[2]->data + dir * 4 * hs * hs;
        const float *bias = n->in[3] ? (const float *)n->in[3]->data + dir * 8 * hs : 0;
        float *h = y_h + dir * s.batch * hs, *cell = y_c + dir * s.batch * hs;
        for (int64_t i = 0; i < s.batch * hs; i++) {
            h[i] = n->in[4] ? ((const float *)n->in[4]->data)[dir * s.batch * hs + i] : 0.0f;
            cell[i] = n->in[5] ? ((const float *)n->in[5]->data)[dir * s.batch * hs + i] : 0.0f;
        }
        for (int64_t step = 0; step < s.seq; step++) {
            int64_t t = reverse ? s.seq - 1 - step : step;
            for (int64_t b = 0; b < s.batch; b++) {
                const float *xt = x + (t * s.batch + b) * s.input;
                float *hb = h + b * hs, *cb = cell + b * hs;
                for (int64_t g = 0; g < 4 * hs; g++) {
                    float acc = bias ? bias[g] + bias[4 * hs + g] : 0.0f;
                    gates[g] = acc + dot(w + g * s.input, xt, s.input) + dot(r + g * hs, hb, hs);
                }
                for (int64_t k = 0; k < hs; k++) {
                    float in_gate = ep_sigmoidf(gates[k]), out_gate = ep_sigmoidf(gates[hs + k]);
                    float forget = ep_sigmoidf(gates[2 * hs + k]), candidate = ep_tanhf(gates[3 * hs + k]);
                    cb[k] = forget * cb[k] + in_gate * candidate;
                    hb[k] = out_gate * ep_tanhf(cb[k]);
                }
                float *yt = y + ((t * s.dirs + dir) * s.batch + b) * hs;
                for (int64_t k = 0; k < hs; k++) yt[k] = hb[k];
            }
        }
    }
    return EP_OK;
}

const ep_kernel ep_kernel_lstm = {"LSTM", check_lstm, run_lstm};
