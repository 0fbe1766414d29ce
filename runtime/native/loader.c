/* Plan loader: checks every field of an .epk plan before use and lays the session out in the caller's memory. */
#include "ep_internal.h"

typedef struct ep_header {
    uint32_t magic, version, header_bytes, flags;
    uint32_t n_tensors, tensors_offset, n_ops, ops_offset;
    uint32_t n_io, io_offset, n_inputs, n_outputs;
    uint32_t ports_offset, params_offset, params_bytes, names_offset;
    uint32_t names_bytes, weights_offset, weights_bytes, arena_bytes;
    uint32_t scratch_bytes, open_ops;
} ep_header;

#define EP_MAX_COUNT (1u << 24)

static uint32_t read_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t align_up(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

static int section_fits(uint32_t offset, uint64_t bytes, size_t plan_len) {
    return (uint64_t)offset <= plan_len && bytes <= (uint64_t)plan_len - offset;
}

static ep_status read_header(const uint8_t *plan, size_t plan_len, ep_header *h, char *error) {
    if (!plan) {
        ep_message(error, "the plan is NULL", "", -1);
        return EP_ERR_ARGUMENT;
    }
    if (plan_len < EP_HEADER_BYTES) {
        ep_message(error, "the plan is shorter than its header: bytes", "", (int64_t)plan_len);
        return EP_ERR_FORMAT;
    }
    uint32_t *fields = (uint32_t *)h;
    for (size_t i = 0; i < sizeof *h / 4; i++) fields[i] = read_u32(plan + 4 * i);
    if (h->magic != EP_MAGIC) {
        ep_message(error, "not an edgepack plan: the magic is not EPK1", "", -1);
        return EP_ERR_FORMAT;
    }
    if (h->version != EP_FORMAT_VERSION) {
        ep_message(error, "unsupported plan format version", "", h->version);
        return EP_ERR_FORMAT;
    }
    if (h->header_bytes != EP_HEADER_BYTES || h->flags != 0) {
        ep_message(error, "unexpected header size or flags", "", h->header_bytes);
        return EP_ERR_FORMAT;
    }
    if (h->n_tensors > EP_MAX_COUNT || h->n_ops > EP_MAX_COUNT || h->n_io > EP_MAX_COUNT ||
        h->n_inputs > h->n_tensors || h->n_outputs > h->n_tensors || h->open_ops > h->n_ops) {
        ep_message(error, "a count in the header is too large", "", -1);
        return EP_ERR_FORMAT;
    }
    struct { uint32_t offset; uint64_t bytes; const char *name; } sections[] = {
        {h->tensors_offset, (uint64_t)h->n_tensors * EP_TENSOR_RECORD_BYTES, "tensor table"},
        {h->ops_offset, (uint64_t)h->n_ops * EP_OP_RECORD_BYTES, "op table"},
        {h->io_offset, (uint64_t)h->n_io * 4, "op tensor list"},
        {h->ports_offset, ((uint64_t)h->n_inputs + h->n_outputs) * 4, "input/output list"},
        {h->params_offset, h->params_bytes, "parameters"},
        {h->names_offset, h->names_bytes, "names"},
        {h->weights_offset, h->weights_bytes, "weights"},
    };
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        if (!section_fits(sections[i].offset, sections[i].bytes, plan_len)) {
            ep_message(error, "section past the end of the plan: ", sections[i].name, sections[i].offset);
            return EP_ERR_BOUNDS;
        }
        if (sections[i].offset % 4) {
            ep_message(error, "section not 4-byte aligned: ", sections[i].name, sections[i].offset);
            return EP_ERR_BOUNDS;
        }
    }
    if (h->params_bytes % 4 || h->weights_offset % EP_MEMORY_ALIGN) {
        ep_message(error, "parameters or weights misaligned", "", -1);
        return EP_ERR_BOUNDS;
    }
    return EP_OK;
}

typedef struct ep_layout {
    size_t tensors, nodes, io, ports, arena, scratch, total;
} ep_layout;

static ep_layout layout_of(const ep_header *h) {
    ep_layout l;
    l.tensors = align_up(sizeof(ep_session), 16);
    l.nodes = align_up(l.tensors + (size_t)h->n_tensors * sizeof(ep_tensor), 16);
    l.io = align_up(l.nodes + (size_t)h->n_ops * sizeof(ep_node), 16);
    l.ports = align_up(l.io + (size_t)h->n_io * sizeof(ep_tensor *), 16);
    l.arena = align_up(l.ports + ((size_t)h->n_inputs + h->n_outputs) * sizeof(ep_tensor *), EP_MEMORY_ALIGN);
    l.scratch = align_up(l.arena + h->arena_bytes, EP_MEMORY_ALIGN);
    l.total = align_up(l.scratch + h->scratch_bytes, EP_MEMORY_ALIGN);
    return l;
}

ep_status ep_required_bytes(const void *plan, size_t plan_len, size_t *bytes) {
    char error[EP_ERROR_CAPACITY];
    ep_header h;
    if (!bytes) return EP_ERR_ARGUMENT;
    ep_status status = read_header((const uint8_t *)plan, plan_len, &h, error);
    if (status != EP_OK) return status;
    *bytes = layout_of(&h).total;
    return EP_OK;
}

const char *ep_open_error(const void *memory, size_t memory_len) {
    if (!memory || memory_len < sizeof(ep_session) || (uintptr_t)memory % EP_MEMORY_ALIGN) return "";
    return ((const ep_session *)memory)->error;
}

static ep_status read_tensor(ep_session *s, const ep_header *h, uint32_t index) {
    const uint8_t *r = s->plan + h->tensors_offset + (size_t)index * EP_TENSOR_RECORD_BYTES;
    ep_tensor *t = &s->tensors[index];
    t->dtype = r[0];
    t->rank = r[1];
    t->location = r[2];
    if (!ep_dtype_bits(t->dtype)) {
        ep_message(s->error, "unsupported dtype in tensor", "", index);
        return EP_ERR_TENSOR;
    }
    if (t->rank > EP_MAX_RANK || r[3] != 0) {
        ep_message(s->error, "rank above 8 in tensor", "", index);
        return EP_ERR_TENSOR;
    }
    int64_t count = 1;
    for (int32_t d = 0; d < EP_MAX_RANK; d++) {
        uint32_t dim = read_u32(r + 16 + 4 * d);
        if (d >= t->rank) {
            if (dim != 0) {
                ep_message(s->error, "a dim past the rank is set in tensor", "", index);
                return EP_ERR_TENSOR;
            }
            continue;
        }
        t->dims[d] = dim;
        if (dim && count > EP_MAX_ELEMENTS / (int64_t)dim) {
            ep_message(s->error, "too many elements in tensor", "", index);
            return EP_ERR_TENSOR;
        }
        count *= dim;
    }
    t->count = count;
    t->bytes = ep_tensor_bytes(t->dtype, count);
    uint32_t name_offset = read_u32(r + 4), name_len = read_u32(r + 8), offset = read_u32(r + 12);
    if (!section_fits(name_offset, name_len, h->names_bytes)) {
        ep_message(s->error, "name past the names section in tensor", "", index);
        return EP_ERR_BOUNDS;
    }
    t->name = (const char *)s->plan + h->names_offset + name_offset;
    t->name_len = name_len;
    if (ep_dtype_size(t->dtype) && offset % ep_dtype_size(t->dtype)) {
        ep_message(s->error, "misaligned data offset in tensor", "", index);
        return EP_ERR_BOUNDS;
    }
    if (t->location == EP_LOCATION_ARENA) {
        if ((uint64_t)offset + t->bytes > h->arena_bytes) {
            ep_message(s->error, "tensor outside the arena:", "", index);
            return EP_ERR_BOUNDS;
        }
        t->data = s->arena + offset;
    } else if (t->location == EP_LOCATION_WEIGHT) {
        if ((uint64_t)offset + t->bytes > h->weights_bytes) {
            ep_message(s->error, "tensor outside the weights:", "", index);
            return EP_ERR_BOUNDS;
        }
        t->data = (void *)(uintptr_t)(s->plan + h->weights_offset + offset);
    } else {
        ep_message(s->error, "unknown location in tensor", "", index);
        return EP_ERR_TENSOR;
    }
    t->first_write = EP_ABSENT;
    t->last_use = 0;
    return EP_OK;
}

static ep_status read_op(ep_session *s, const ep_header *h, uint32_t index, ep_tensor **io) {
    const uint8_t *r = s->plan + h->ops_offset + (size_t)index * EP_OP_RECORD_BYTES;
    ep_node *n = &s->nodes[index];
    n->id = (uint32_t)r[0] | (uint32_t)r[1] << 8;
    n->n_in = r[2];
    n->n_out = r[3];
    uint32_t io_first = read_u32(r + 4), param_first = read_u32(r + 8), n_params = read_u32(r + 12);
    if (!ep_kernel_for(n->id)) {
        ep_message(s->error, "unknown op id in op", "", index);
        return EP_ERR_OP;
    }
    if ((n->id == EP_OP_EXPAND_WEIGHT) != (index < h->open_ops)) {
        ep_message(s->error, "the ops run at open must be the plan's ExpandWeight ops; op", "", index);
        return EP_ERR_OP;
    }
    if ((uint64_t)io_first + n->n_in + n->n_out > h->n_io) {
        ep_message(s->error, "tensor list past the end in op", "", index);
        return EP_ERR_BOUNDS;
    }
    if ((uint64_t)param_first + n_params > h->params_bytes / 4) {
        ep_message(s->error, "parameters past the end in op", "", index);
        return EP_ERR_BOUNDS;
    }
    n->params = (const int32_t *)(const void *)(s->plan + h->params_offset) + param_first;
    n->n_params = n_params;
    n->in = io + io_first;
    n->out = io + io_first + n->n_in;
    for (uint32_t k = 0; k < n->n_in + n->n_out; k++) {
        uint32_t t = read_u32(s->plan + h->io_offset + 4 * ((size_t)io_first + k));
        if (t == EP_ABSENT && k < n->n_in) {
            io[io_first + k] = 0;
            continue;
        }
        if (t >= h->n_tensors) {
            ep_message(s->error, "bad tensor index in op", "", index);
            return EP_ERR_TENSOR;
        }
        ep_tensor *tensor = &s->tensors[t];
        io[io_first + k] = tensor;
        if (!ep_core_dtype(tensor->dtype) && !ep_kernel_takes_any_dtype(n->id) &&
            !(k < n->n_in && ep_weight_only_read(n, k) && tensor->location == EP_LOCATION_WEIGHT)) {
            ep_message(s->error, "a tensor of a dtype its kernel does not take, in op", "", index);
            return EP_ERR_TENSOR;
        }
        if (k < n->n_in) {
            if (tensor->last_use < index + 1) tensor->last_use = index + 1;
        } else {
            if (tensor->location != EP_LOCATION_ARENA) {
                ep_message(s->error, "an op writes a weight in op", "", index);
                return EP_ERR_TENSOR;
            }
            if (index >= h->open_ops && tensor->first_write != EP_ABSENT && tensor->first_write <= h->open_ops) {
                ep_message(s->error, "an op writes what an op run at open wrote, in op", "", index);
                return EP_ERR_TENSOR;
            }
            if (tensor->first_write == EP_ABSENT) tensor->first_write = index + 1;
            if (tensor->last_use < index + 1) tensor->last_use = index + 1;
            if (index < h->open_ops) tensor->last_use = h->n_ops + 1; /* a session's constant */
        }
    }
    if (n->id == EP_OP_SKIP_UNLESS || n->id == EP_OP_SKIP) {
        if (n->n_params != 1 || n->params[0] < 0 || (uint64_t)index + 1 + (uint32_t)n->params[0] > h->n_ops) {
            ep_message(s->error, "skip past the end of the plan in op", "", index);
            return EP_ERR_OP;
        }
    }
    return EP_OK;
}

static int ranges_overlap(const ep_tensor *a, const ep_tensor *b) {
    const uint8_t *pa = (const uint8_t *)a->data, *pb = (const uint8_t *)b->data;
    return a->bytes && b->bytes && pa < pb + b->bytes && pb < pa + a->bytes;
}

static int aliases(const ep_tensor *a, const ep_tensor *b) { return a->data == b->data && a->bytes == b->bytes; }

/* No op may write over a tensor that is still live, unless the two are one buffer (a reshape alias); and what the
   open ops write, which lives as long as the session, overlaps no model input or output (the caller writes and
   reads those between runs). */
static ep_status check_lifetimes(ep_session *s) {
    for (uint32_t i = 0; i < s->open_ops; i++) {
        const ep_tensor *out = s->nodes[i].out[0];
        for (uint32_t k = 0; k < s->n_inputs + s->n_outputs; k++) {
            if (ranges_overlap(out, s->inputs[k])) {
                ep_message(s->error, "what an op run at open writes overlaps a model input or output; op", "", i);
                return EP_ERR_BOUNDS;
            }
        }
    }
    for (uint32_t i = 0; i < s->n_ops; i++) {
        const ep_node *n = &s->nodes[i];
        for (uint32_t o = 0; o < n->n_out; o++) {
            const ep_tensor *out = n->out[o];
            for (uint32_t t = 0; t < s->n_tensors; t++) {
                const ep_tensor *other = &s->tensors[t];
                if (other == out || other->location != EP_LOCATION_ARENA || other->first_write == EP_ABSENT) continue;
                if (other->first_write > i + 1 || other->last_use < i + 1) continue;
                if (ranges_overlap(out, other) && !aliases(out, other)) {
                    ep_message(s->error, "an output overlaps a live tensor in op", "", i);
                    return EP_ERR_BOUNDS;
                }
            }
        }
    }
    return EP_OK;
}

static ep_status read_ports(ep_session *s, const ep_header *h) {
    for (uint32_t k = 0; k < h->n_inputs + h->n_outputs; k++) {
        uint32_t t = read_u32(s->plan + h->ports_offset + 4 * (size_t)k);
        if (t >= h->n_tensors || s->tensors[t].location != EP_LOCATION_ARENA) {
            ep_message(s->error, "bad tensor index in the input/output list at", "", k);
            return EP_ERR_TENSOR;
        }
        if (k < h->n_inputs) {
            s->inputs[k] = &s->tensors[t];
            s->tensors[t].first_write = 0;
        } else {
            s->outputs[k - h->n_inputs] = &s->tensors[t];
            s->tensors[t].last_use = h->n_ops + 1;
        }
    }
    return EP_OK;
}

ep_status ep_open(const void *plan, size_t plan_len, void *memory, size_t memory_len, ep_session **session) {
    if (!memory || !session || (uintptr_t)memory % EP_MEMORY_ALIGN || memory_len < sizeof(ep_session))
        return EP_ERR_MEMORY;
    *session = 0;
    ep_session *s = (ep_session *)memory;
    ep_memset(s, 0, sizeof *s);
    ep_header h;
    ep_status status = read_header((const uint8_t *)plan, plan_len, &h, s->error);
    if (status != EP_OK) return status;
    if ((uintptr_t)plan % 16) {
        ep_message(s->error, "the plan buffer must be 16-byte aligned", "", -1);
        return EP_ERR_MEMORY;
    }
    ep_layout l = layout_of(&h);
    if (memory_len < l.total) {
        ep_message(s->error, "memory too small; bytes needed:", "", (int64_t)l.total);
        return EP_ERR_MEMORY;
    }
    uint8_t *base = (uint8_t *)memory;
    s->plan = (const uint8_t *)plan;
    s->plan_len = plan_len;
    s->n_tensors = h.n_tensors;
    s->n_ops = h.n_ops;
    s->n_inputs = h.n_inputs;
    s->n_outputs = h.n_outputs;
    s->tensors = (ep_tensor *)(void *)(base + l.tensors);
    s->nodes = (ep_node *)(void *)(base + l.nodes);
    ep_tensor **io = (ep_tensor **)(void *)(base + l.io);
    s->inputs = (ep_tensor **)(void *)(base + l.ports);
    s->outputs = s->inputs + h.n_inputs;
    s->arena = base + l.arena;
    s->arena_bytes = h.arena_bytes;
    s->scratch = (float *)(void *)(base + l.scratch);
    s->scratch_bytes = h.scratch_bytes;
    for (uint32_t t = 0; t < h.n_tensors; t++)
        if ((status = read_tensor(s, &h, t)) != EP_OK) return status;
    if ((status = read_ports(s, &h)) != EP_OK) return status;
    for (uint32_t i = 0; i < h.n_ops; i++)
        if ((status = read_op(s, &h, i, io)) != EP_OK) return status;
    for (uint32_t i = 0; i < h.n_ops; i++) {
        const ep_node *n = &s->nodes[i];
        size_t scratch = 0;
        status = ep_kernel_for(n->id)->check(n, &scratch, s->error);
        if (status != EP_OK) {
            char detail[EP_ERROR_CAPACITY];
            ep_memcpy(detail, s->error, EP_ERROR_CAPACITY);
            ep_message(s->error, detail, " (op", i);
            return status;
        }
        if (scratch > s->scratch_bytes) {
            ep_message(s->error, "the plan's scratch is too small for op", "", i);
            return EP_ERR_BOUNDS;
        }
    }
    s->open_ops = h.open_ops;
    if ((status = check_lifetimes(s)) != EP_OK) return status;
    if ((status = ep_run_open_ops(s)) != EP_OK) return status;
    s->error[0] = 0;
    *session = s;
    return EP_OK;
}
