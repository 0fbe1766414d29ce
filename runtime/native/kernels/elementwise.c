/* Elementwise ops with broadcasting: Binary (here the float32 arithmetic a model's latency rests on, PRelu, x < 0 ?
   x * slope : x, among it; comparisons, logic and int32/int64 in binary_exact.c; every other number dtype through
   wide.c); Where; Expand. */
#include "binary_rows.h"

static int is_logic(int32_t kind) { return kind >= B_AND && kind <= B_XOR; }
static int is_bitwise(int32_t kind) { return kind >= B_BIT_SHIFT_LEFT && kind <= B_BITWISE_XOR; }

static ep_status check_binary(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 2, 2, 1, error);
    if (status != EP_OK) return status;
    if (n->n_params != 1 || n->params[0] < 0 || n->params[0] >= B_KINDS) return ep_fail(error, n, ": bad kind");
    int32_t kind = n->params[0];
    const ep_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    int number = ep_wide_real(a->dtype) || ep_wide_integer(a->dtype);
    if (a->dtype != b->dtype && !(kind == B_POW && (ep_wide_real(b->dtype) || ep_wide_integer(b->dtype))))
        return ep_fail(error, n, ": inputs of different dtypes");
    int32_t want = (ep_binary_compares(kind) || is_logic(kind)) ? EP_BOOL : a->dtype;
    if (y->dtype != want) return ep_fail(error, n, ": wrong output dtype");
    int supported = is_logic(kind)     ? a->dtype == EP_BOOL
                    : is_bitwise(kind) ? ep_wide_integer(a->dtype)
                    : kind == B_PRELU  ? a->dtype == EP_F32
                                       : number;
    if (!supported) return ep_fail(error, n, ": unsupported dtype");
    if (!ep_broadcasts_to(a, y) || !ep_broadcasts_to(b, y)) return ep_fail(error, n, ": shapes do not broadcast");
    return EP_OK;
}

static float binary_f32(int32_t kind, float a, float b) {
    switch (kind) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return ep_powf(a, b);
    case B_MAX: return a != a ? a : (b != b ? b : (a > b ? a : b));
    case B_MIN: return a != a ? a : (b != b ? b : (a < b ? a : b));
    case B_MOD:
    case B_FMOD: return (float)ep_remainder(a, b, kind == B_MOD);
    }
    return 0.0f;
}

/* Float32 arithmetic on the output elements [begin, end): the broadcast rows that reach into them, trimmed. */
typedef struct binary_f32_part {
    const ep_node *n;
    const ep_broadcast *b;
    int64_t tasks;
} binary_f32_part;

static void binary_f32_task(void *arg, int32_t worker, int64_t index) {
    typedef float T;
    const binary_f32_part *part = (const binary_f32_part *)arg;
    const ep_node *n = part->n;
    int32_t kind = n->params[0];
    const float *A = (const float *)n->in[0]->data, *B = (const float *)n->in[1]->data;
    int64_t begin, end;
    (void)worker;
    ep_task_range(n->out[0]->count, part->tasks, index, 64, &begin, &end);
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(part->b, &row, counter); more && row.out < end;
         more = ep_row_next(part->b, &row, counter)) {
        if (!ep_row_clip(&row, 2, begin, end)) continue;
        const float *pa = A + row.in[0], *pb = B + row.in[1];
        float *py = (float *)n->out[0]->data + row.out;
        switch (kind) {
        case B_ADD: EP_ROW_LOOP(x + z); break;
        case B_SUB: EP_ROW_LOOP(x - z); break;
        case B_MUL: EP_ROW_LOOP(x * z); break;
        case B_DIV: EP_ROW_LOOP(x / z); break;
        case B_MAX: EP_ROW_LOOP(x != x ? x : (z != z ? z : (x > z ? x : z))); break;
        case B_MIN: EP_ROW_LOOP(x != x ? x : (z != z ? z : (x < z ? x : z))); break;
        case B_PRELU: EP_ROW_LOOP(x < 0.0f ? x * z : x); break;
        default: EP_ROW_LOOP(binary_f32(kind, x, z)); break;
        }
    }
}

/* Rows shorter than this stay on one task: each task walks the rows before its own. */
#define SPLIT_ROW 256

static void binary_rows_f32(const ep_node *n, const ep_broadcast *b, const ep_context *c) {
    int64_t count = n->out[0]->count, row_length = b->rank ? b->dims[b->rank - 1] : 1;
    binary_f32_part part = {n, b, 1};
    if (row_length >= SPLIT_ROW) part.tasks = ep_task_count(c, (count + 63) / 64, (double)count * EP_COPY_WORK);
    ep_parallel(c, part.tasks, binary_f32_task, &part);
}

static ep_status run_binary(const ep_node *n, const ep_context *c) {
    ep_broadcast b;
    const ep_tensor *inputs[2] = {n->in[0], n->in[1]};
    ep_broadcast_plan(&b, n->out[0], inputs, 2);
    int32_t kind = n->params[0], dtype = n->in[0]->dtype;
    int same = dtype == n->in[1]->dtype;
    if (is_logic(kind)) ep_logic_rows(n, &b);
    else if (dtype == EP_F32 && same && ep_binary_compares(kind)) ep_compare_rows_f32(n, &b);
    else if (dtype == EP_F32 && same) binary_rows_f32(n, &b, c);
    else if (is_bitwise(kind) || kind == B_POW || !same || (dtype != EP_I32 && dtype != EP_I64)) ep_binary_wide(n, &b);
    else ep_binary_rows_integer(n, &b);
    return EP_OK;
}

static ep_status check_where(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 3, 3, 1, error);
    if (status != EP_OK) return status;
    const ep_tensor *y = n->out[0];
    if (n->in[0]->dtype != EP_BOOL || n->in[1]->dtype != y->dtype || n->in[2]->dtype != y->dtype ||
        !ep_dtype_size(y->dtype))
        return ep_fail(error, n, ": wrong dtypes");
    for (int k = 0; k < 3; k++)
        if (!ep_broadcasts_to(n->in[k], y)) return ep_fail(error, n, ": shapes do not broadcast");
    return EP_OK;
}

static ep_status run_where(const ep_node *n, const ep_context *c) {
    (void)c;
    ep_broadcast b;
    const ep_tensor *inputs[3] = {n->in[0], n->in[1], n->in[2]};
    ep_broadcast_plan(&b, n->out[0], inputs, 3);
    size_t size = ep_dtype_size(n->out[0]->dtype);
    const uint8_t *cond = (const uint8_t *)n->in[0]->data;
    const uint8_t *xs = (const uint8_t *)n->in[1]->data, *ys = (const uint8_t *)n->in[2]->data;
    uint8_t *out = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
/* One row of Where in a loop of the elements' width T (a memcpy call per element of a width known only at run time
   took 41 us on each of MiniLM-L6's (1, 12, 32, 32) masks). */
#define EP_WHERE_ROW(T)                                                                                             \
    for (int64_t i = 0; i < row.length; i++) {                                                                      \
        const uint8_t *src = cond[row.in[0] + i * row.step[0]] ? xs + (size_t)(row.in[1] + i * row.step[1]) * size \
                                                               : ys + (size_t)(row.in[2] + i * row.step[2]) * size; \
        T v;                                                                                                        \
        ep_memcpy(&v, src, sizeof v);                                                                               \
        ep_memcpy(out + (size_t)(row.out + i) * size, &v, sizeof v);                                                \
    }
    for (int more = ep_row_first(&b, &row, counter); more; more = ep_row_next(&b, &row, counter)) {
        switch (size) {
        case 2: EP_WHERE_ROW(uint16_t) break;
        case 4: EP_WHERE_ROW(uint32_t) break;
        case 8: EP_WHERE_ROW(uint64_t) break;
        default: EP_WHERE_ROW(uint8_t) /* 1 byte: check_where refuses the sub-byte dtypes */
        }
    }
#undef EP_WHERE_ROW
    return EP_OK;
}

static ep_status check_expand(const ep_node *n, size_t *scratch, char *error) {
    (void)scratch;
    ep_status status = ep_expect(n, 1, 1, 1, error);
    if (status != EP_OK) return status;
    if (n->in[0]->dtype != n->out[0]->dtype || !ep_dtype_size(n->out[0]->dtype))
        return ep_fail(error, n, ": a sub-byte dtype, or input and output dtypes differ");
    if (!ep_broadcasts_to(n->in[0], n->out[0])) return ep_fail(error, n, ": input does not broadcast to the output");
    return EP_OK;
}

/* `count` copies of the element at `value` (of 1, 2, 4 or 8 bytes) from `out` on, in a loop of its width (one call
   of memcpy per element took 4 ns: MiniLM's (1, 32, 1) -> (1, 32, 384) mask 49 us); 0 for other widths. */
static int fill_row(uint8_t *out, const uint8_t *value, size_t size, int64_t count) {
#define EP_FILL(T)                                                                                                  \
    {                                                                                                               \
        T v;                                                                                                        \
        ep_memcpy(&v, value, sizeof v);                                                                             \
        for (int64_t i = 0; i < count; i++) ep_memcpy(out + (size_t)i * sizeof v, &v, sizeof v);                   \
        return 1;                                                                                                   \
    }
    switch (size) {
    case 1: EP_FILL(uint8_t)
    case 2: EP_FILL(uint16_t)
    case 4: EP_FILL(uint32_t)
    case 8: EP_FILL(uint64_t)
    }
#undef EP_FILL
    return 0;
}

static ep_status run_expand(const ep_node *n, const ep_context *c) {
    (void)c;
    ep_broadcast b;
    const ep_tensor *inputs[1] = {n->in[0]};
    ep_broadcast_plan(&b, n->out[0], inputs, 1);
    size_t size = ep_dtype_size(n->out[0]->dtype);
    const uint8_t *x = (const uint8_t *)n->in[0]->data;
    uint8_t *y = (uint8_t *)n->out[0]->data;
    ep_row row;
    int64_t counter[EP_MAX_RANK];
    for (int more = ep_row_first(&b, &row, counter); more; more = ep_row_next(&b, &row, counter)) {
        if (row.step[0] == 1) {
            ep_memcpy(y + (size_t)row.out * size, x + (size_t)row.in[0] * size, (size_t)row.length * size);
            continue;
        }
        if (row.step[0] == 0 && fill_row(y + (size_t)row.out * size, x + (size_t)row.in[0] * size, size, row.length))
            continue;
        for (int64_t i = 0; i < row.length; i++)
            ep_memcpy(y + (size_t)(row.out + i) * size, x + (size_t)(row.in[0] + i * row.step[0]) * size, size);
    }
    return EP_OK;
}

const ep_kernel ep_kernel_binary = {"Binary", check_binary, run_binary};
const ep_kernel ep_kernel_where = {"Where", check_where, run_where};
const ep_kernel ep_kernel_expand = {"Expand", check_expand, run_expand};
