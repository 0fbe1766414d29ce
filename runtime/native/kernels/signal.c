/* DFT and STFT over float32 values whose last dimension holds a real sample (1) or a complex one (2): a radix-2 FFT
   when the length n is a power of two, else a plain O(n^2) transform, both over a double twiddle table of cos and
   sin of 2*pi*m/n (scratch) and in double. Samples past the input's length read as zeros (dft_length pads or
   truncates). */
#include "../ep_internal.h"

#define HALF_PI 1.5707963267948966

/* sin and cos of |a| <= pi/4 in double, by their Taylor series (the terms past a^18 fall below 1e-17). */
static void small_sin_cos(double a, double *sin_a, double *cos_a) {
    double a2 = a * a, term_s = a, term_c = 1.0, s = a, c = 1.0;
    for (int i = 1; i <= 9; i++) {
        term_s *= -a2 / (double)((2 * i) * (2 * i + 1));
        term_c *= -a2 / (double)((2 * i - 1) * (2 * i));
        s += term_s;
        c += term_c;
    }
    *sin_a = s;
    *cos_a = c;
}

/* Fills cosines then sines of 2*pi*m/n for m in [0, n), in double: the angle is split in integer arithmetic into
   quarter turns and a rest within an eighth of a turn, so that multiples of pi/2 come out exact. */
static void fill_twiddles(double *table, int64_t n) {
    for (int64_t m = 0; m < n; m++) {
        int64_t quarters = (4 * m) / n, rest = (4 * m) % n;
        if (2 * rest > n) {
            quarters++;
            rest -= n;
        }
        double s, c;
        small_sin_cos(HALF_PI * (double)rest / (double)n, &s, &c);
        switch (quarters & 3) {
        case 0: table[m] = c; table[n + m] = s; break;
        case 1: table[m] = -s; table[n + m] = c; break;
        case 2: table[m] = -c; table[n + m] = -s; break;
        default: table[m] = s; table[n + m] = -c; break;
        }
    }
}

/* A strided sequence of samples: `available` of them, `step` floats apart, real or complex, each times window[j]
   when there is a window. */
typedef struct {
    const float *data;
    int64_t step, available;
    int complex_in;
    const float *window;
} samples;

static void sample_at(const samples *s, int64_t j, double *re, double *im) {
    if (j >= s->available) {
        *re = *im = 0.0;
        return;
    }
    const float *p = s->data + j * s->step;
    double w = s->window ? s->window[j] : 1.0;
    *re = p[0] * w;
    *im = s->complex_in ? p[1] * w : 0.0;
}

static int power_of_two(int64_t n) { return (n & (n - 1)) == 0; }

/* In place, the unscaled transform (exp(sign*i...)) of n complex values (re, im pairs), n a power of two: radix 2,
   iterative, after the bit-reversal permutation. */
static void fft(double *work, int64_t n, double sign, const double *table) {
    for (int64_t i = 1, j = 0; i < n; i++) {
        int64_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j)
            for (int part = 0; part < 2; part++) {
                double t = work[2 * i + part];
                work[2 * i + part] = work[2 * j + part];
                work[2 * j + part] = t;
            }
    }
    for (int64_t size = 2; size <= n; size <<= 1) {
        int64_t half = size / 2, step = n / size;
        for (int64_t start = 0; start < n; start += size)
            for (int64_t k = 0; k < half; k++) {
                double c = table[k * step], si = sign * table[n + k * step];
                double *a = work + 2 * (start + k), *b = a + 2 * half;
                double re = b[0] * c - b[1] * si, im = b[0] * si + b[1] * c;
                b[0] = a[0] - re;
                b[1] = a[1] - im;
                a[0] += re;
                a[1] += im;
            }
    }
}

/* Bins [0, bins) of the length-n transform (exp(+i...)/n when inverse), complex pairs `out_step` floats apart. The
   scratch holds the twiddle table (2n doubles) then, for the FFT of a power of two, a work buffer (2n doubles). */
static void transform(const samples *s, int64_t n, int inverse, int64_t bins, double *table, float *out,
                      int64_t out_step) {
    double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / (double)n : 1.0;
    if (power_of_two(n)) {
        double *work = table + 2 * n;
        for (int64_t j = 0; j < n; j++) sample_at(s, j, &work[2 * j], &work[2 * j + 1]);
        fft(work, n, sign, table);
        for (int64_t k = 0; k < bins; k++) {
            out[k * out_step] = (float)(work[2 * k] * scale);
            out[k * out_step + 1] = (float)(work[2 * k + 1] * scale);
        }
        return;
    }
    for (int64_t k = 0; k < bins; k++) {
        double sum_re = 0.0, sum_im = 0.0;
        int64_t m = 0;
        for (int64_t j = 0; j < n; j++) {
            double re, im, c = table[m], si = sign * table[n + m];
            sample_at(s, j, &re, &im);
            sum_re += re * c - im * si;
            sum_im += re * si + im * c;
            m += k;
            if (m >= n) m %= n;
        }
        out[k * out_step] = (float)(sum_re * scale);
        out[k * out_step + 1] = (float)(sum_im * scale);
    }
}

/* The real length-n signal whose one-sided spectrum is the sequence (numpy's irfft): bins past n/2 mirror the
   conjugates of those below, the imaginary parts of bin 0 (and of bin n/2 when n is even) are dropped. */
static void inverse_onesided(const samples *s, int64_t n, double *table, float *out, int64_t out_step) {
    if (power_of_two(n)) {
        double *work = table + 2 * n;
        for (int64_t k = 0; k < n; k++) {
            sample_at(s, k <= n / 2 ? k : n - k, &work[2 * k], &work[2 * k + 1]);
            if (k > n / 2) work[2 * k + 1] = -work[2 * k + 1];
        }
        fft(work, n, 1.0, table);
        for (int64_t j = 0; j < n; j++) out[j * out_step] = (float)(work[2 * j] / (double)n);
        return;
    }
    int64_t last = (n - 1) / 2; /* the bins that have a distinct mirror */
    for (int64_t j = 0; j < n; j++) {
        double re, im, sum;
        sample_at(s, 0, &re, &im);
        sum = re;
        int64_t m = 0;
        for (int64_t k = 1; k <= last; k++) {
            m += j;
            if (m >= n) m %= n;
            sample_at(s, k, &re, &im);
            sum += 2.0 * (re * table[m] - im * table[n + m]);
        }
        if (n % 2 == 0) {
            sample_at(s, n / 2, &re, &im);
            sum += (j % 2 ? -re : re);
        }
        out[j * out_step] = (float)(sum / (double)n);
    }
}

static double *twiddles(const ep_context *c) { return (double *)(void *)c->scratch; }

static int same_dims_but(const ep_tensor *x, const ep_tensor *y, int32_t axis, int64_t along, int64_t last) {
    if (x->rank != y->rank) return 0;
    for (int32_t d = 0; d < x->rank; d++) {
        int64_t want = d == axis ? along : d == x->rank - 1 ? last : x->dims[d];
        if (y->dims[d] != want) return 0;
    }
    return 1;
}

static ep_status check_scratch(int64_t n, size_t *scratch, const ep_node *node, char *error) {
    if (n < 1 || (uint64_t)n > (uint64_t)((size_t)-1 / (4 * sizeof(double))))
        return ep_fail(error, node, ": bad length");
    *scratch = (size_t)n * 4 * sizeof(double);
    return EP_OK;
}

/* DFT parameters: axis (of the input, not its last dimension), dft length n, inverse, onesided. */
static ep_status check_dft(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 4) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t axis = n->params[0], length = n->params[1], inverse = n->params[2], onesided = n->params[3];
    if (x->dtype != EP_F32 || y->dtype != EP_F32) return ep_fail(error, n, ": float32 only");
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return ep_fail(error, n, ": the last dimension must be 1 (real) or 2 (complex)");
    if (axis < 0 || axis >= x->rank - 1) return ep_fail(error, n, ": bad axis");
    if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
        return ep_fail(error, n, ": inverse and onesided must be 0 or 1");
    int64_t along = onesided && !inverse ? length / 2 + 1 : length, last = inverse && onesided ? 1 : 2;
    if (!same_dims_but(x, y, axis, along, last)) return ep_fail(error, n, ": wrong output shape");
    return check_scratch(length, scratch, n, error);
}

static ep_status run_dft(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int32_t axis = n->params[0], inverse = n->params[2], onesided = n->params[3];
    int64_t length = n->params[1], outer = 1, inner = 1;
    for (int32_t d = 0; d < axis; d++) outer *= x->dims[d];
    for (int32_t d = axis + 1; d < x->rank - 1; d++) inner *= x->dims[d];
    if (y->count == 0) return EP_OK;
    fill_twiddles(twiddles(c), length);
    int64_t in_channels = x->dims[x->rank - 1], out_channels = y->dims[y->rank - 1];
    int64_t in_along = x->dims[axis], out_along = y->dims[axis];
    samples s = {0, inner * in_channels, in_along < length ? in_along : length, in_channels == 2, 0};
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            s.data = (const float *)x->data + (o * in_along * inner + i) * in_channels;
            float *out = (float *)y->data + (o * out_along * inner + i) * out_channels;
            if (inverse && onesided)
                inverse_onesided(&s, length, twiddles(c), out, inner);
            else
                transform(&s, length, inverse, out_along, twiddles(c), out, inner * 2);
        }
    return EP_OK;
}

const ep_kernel ep_kernel_dft = {"DFT", check_dft, run_dft};

/* STFT parameters: frame step, frame length, onesided; inputs: signal [batch, length, 1 or 2], optional window
   [frame length]; output [batch, frames, bins, 2]. */
static ep_status check_stft(const ep_node *n, size_t *scratch, char *error) {
    ep_status status = ep_expect(n, 1, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 3) return ep_fail(error, n, ": bad parameters");
    const ep_tensor *x = n->in[0], *y = n->out[0], *window = n->n_in > 1 ? n->in[1] : 0;
    int32_t step = n->params[0], length = n->params[1], onesided = n->params[2];
    if (x->dtype != EP_F32 || y->dtype != EP_F32) return ep_fail(error, n, ": float32 only");
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2)) return ep_fail(error, n, ": bad signal shape");
    if (step < 1 || length < 1 || length > x->dims[1]) return ep_fail(error, n, ": bad frame step or length");
    if (onesided != 0 && onesided != 1) return ep_fail(error, n, ": onesided must be 0 or 1");
    if (window && (window->dtype != EP_F32 || window->rank != 1 || window->dims[0] != length))
        return ep_fail(error, n, ": the window must be float32 of the frame length");
    int64_t frames = 1 + (x->dims[1] - length) / step, bins = onesided ? length / 2 + 1 : length;
    if (y->rank != 4 || y->dims[0] != x->dims[0] || y->dims[1] != frames || y->dims[2] != bins || y->dims[3] != 2)
        return ep_fail(error, n, ": wrong output shape");
    return check_scratch(length, scratch, n, error);
}

static ep_status run_stft(const ep_node *n, const ep_context *c) {
    const ep_tensor *x = n->in[0], *y = n->out[0];
    int64_t step = n->params[0], length = n->params[1];
    int64_t frames = y->dims[1], bins = y->dims[2], channels = x->dims[2];
    if (y->count == 0) return EP_OK;
    fill_twiddles(twiddles(c), length);
    samples s = {0, channels, length, channels == 2, n->n_in > 1 ? (const float *)n->in[1]->data : 0};
    for (int64_t b = 0; b < x->dims[0]; b++)
        for (int64_t f = 0; f < frames; f++) {
            s.data = (const float *)x->data + (b * x->dims[1] + f * step) * channels;
            transform(&s, length, 0, bins, twiddles(c), (float *)y->data + (b * frames + f) * bins * 2, 2);
        }
    return EP_OK;
}

const ep_kernel ep_kernel_stft = {"STFT", check_stft, run_stft};
