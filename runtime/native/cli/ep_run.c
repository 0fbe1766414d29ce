/* ep_run: runs an .epk plan on .npy inputs (in the plan's input order) and writes each output to OUT_DIR/<i>.npy.
   usage: ep_run PLAN.epk OUT_DIR [--repeat N] [--threads N] INPUT.npy...
          ep_run --serve
   --repeat prints the median run time in ms; --threads runs the convs and products on a pool of N threads.
   --serve runs one plan per line of stdin, its fields PLAN.epk, OUT_DIR and the inputs separated by tabs, and
   answers each with a line holding the run's exit status (a failure's message on stderr, as for a single run).
   A profiling build (-DEP_PROFILE) also prints, after the runs, `mean_ms` (the runs' mean, timed around ep_run) and
   one line per op that ran, `op INDEX OP_ID CALLS TOTAL_NS`, over all runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/edgepack.h"
#include "../pool/ep_pool.h"
#include "npy.h"

static void *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) return 0;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    size_t rounded = ((size_t)(size > 0 ? size : 1) + 63) / 64 * 64;
    void *data = aligned_alloc(64, rounded);
    if (data && fread(data, 1, (size_t)size, file) != (size_t)size) {
        free(data);
        data = 0;
    }
    fclose(file);
    *length = (size_t)size;
    return data;
}

/* Milliseconds since the first call (a double of the epoch's milliseconds would keep only 0.2 us). */
static double now_ms(void) {
    static struct timespec origin;
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    if (!origin.tv_sec) origin = t;
    return (double)(t.tv_sec - origin.tv_sec) * 1e3 + (double)(t.tv_nsec - origin.tv_nsec) / 1e6;
}

#ifdef EP_PROFILE
/* The profile's clock is the CPU's counter (a read costs a few ns where timespec_get costs tens, which a model of a
   microsecond would notice); its ticks become nanoseconds by the rate measured over all the runs. */
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
static uint64_t ticks(void) { return __rdtsc(); }
#elif defined(__aarch64__)
static uint64_t ticks(void) {
    uint64_t value;
    __asm__ volatile("isb\n mrs %0, cntvct_el0" : "=r"(value));
    return value;
}
#else
static uint64_t ticks(void) {
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

typedef struct { uint32_t op; uint64_t calls, ticks; } op_time;

static op_time *op_times;
static uint32_t op_times_length;

uint64_t ep_profile_now(void) { return ticks(); }

void ep_profile_op(uint32_t index, uint32_t op, uint64_t elapsed) {
    if (index >= op_times_length) {
        uint32_t length = index + 64;
        op_time *grown = realloc(op_times, length * sizeof *grown);
        if (!grown) return;
        memset(grown + op_times_length, 0, (length - op_times_length) * sizeof *grown);
        op_times = grown;
        op_times_length = length;
    }
    op_times[index].op = op;
    op_times[index].calls++;
    op_times[index].ticks += elapsed;
}

/* Prints the runs' mean and each op's total, in nanoseconds at `ns_per_tick`. */
static void print_op_times(uint64_t run_ticks, int repeat, double ns_per_tick) {
    printf("mean_ms %.6f\n", (double)run_ticks * ns_per_tick / 1e6 / repeat);
    for (uint32_t i = 0; i < op_times_length; i++) {
        if (op_times[i].calls) {
            printf("op %u %u %llu %.0f\n", i, op_times[i].op, (unsigned long long)op_times[i].calls,
                   (double)op_times[i].ticks * ns_per_tick);
        }
    }
    free(op_times);
}
#endif

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int32_t threads = 1; /* --threads */
static ep_pool *pool;        /* its pool and the workers' scratch, when above 1 */
static void *worker_scratch;

static int run(const char *out_dir, int repeat, char **input_paths, int n_inputs,
               void *plan, size_t plan_len, void **memory);

/* A served request's line, and its fields at most: the plan, the output folder and the inputs. */
#define SERVE_LINE 65536
#define SERVE_FIELDS 1024

/* Reads the plan at plan_path and runs it (run()); its exit status. */
static int run_plan_file(const char *plan_path, const char *out_dir, int repeat, char **input_paths, int n_inputs) {
    size_t plan_len = 0;
    void *plan = read_file(plan_path, &plan_len), *memory = 0;
    if (!plan) {
        fprintf(stderr, "ep_run: cannot read %s\n", plan_path);
        return 2;
    }
    int code = run(out_dir, repeat, input_paths, n_inputs, plan, plan_len, &memory);
    free(memory);
    free(plan);
    return code;
}

/* One run of a --serve request: `fields` PLAN.epk OUT_DIR INPUT.npy...; its exit status. */
static int serve_one(char **fields, int n_fields) {
    if (n_fields < 2) {
        fprintf(stderr, "ep_run: a request is PLAN.epk, OUT_DIR and the inputs, separated by tabs\n");
        return 2;
    }
    return run_plan_file(fields[0], fields[1], 1, fields + 2, n_fields - 2);
}

static int serve(void) {
    static char line[SERVE_LINE];
    static char *fields[SERVE_FIELDS];
    while (fgets(line, sizeof line, stdin)) {
        int n_fields = 0, code = 2;
        if (!strchr(line, '\n') && !feof(stdin)) {
            fprintf(stderr, "ep_run: a request is longer than %d bytes\n", SERVE_LINE - 1);
            for (int c = getchar(); c != EOF && c != '\n'; c = getchar()) continue;
        } else {
            line[strcspn(line, "\n")] = 0;
            for (char *field = strtok(line, "\t"); field && n_fields < SERVE_FIELDS; field = strtok(0, "\t"))
                fields[n_fields++] = field;
            code = serve_one(fields, n_fields);
        }
        printf("%d\n", code);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--serve") == 0) return serve();
    if (argc < 3) {
        fprintf(stderr, "usage: ep_run PLAN.epk OUT_DIR [--repeat N] [--threads N] INPUT.npy... | ep_run --serve\n");
        return 2;
    }
    int first_input = 3, repeat = 1;
    for (; first_input + 1 < argc && strncmp(argv[first_input], "--", 2) == 0; first_input += 2) {
        int value = atoi(argv[first_input + 1]) > 0 ? atoi(argv[first_input + 1]) : 1;
        if (strcmp(argv[first_input], "--repeat") == 0) repeat = value;
        else if (strcmp(argv[first_input], "--threads") == 0) threads = value;
        else break;
    }
    int code = run_plan_file(argv[1], argv[2], repeat, argv + first_input, argc - first_input);
    ep_pool_destroy(pool);
    free(worker_scratch);
    return code;
}

/* Reads every input once; they are copied in before each run (the arena reuses an input's bytes once it is
   dead, so a plan's inputs must be written before every ep_run). */
static int load_inputs(ep_session *session, char **input_paths, npy_array *arrays) {
    for (size_t i = 0; i < ep_input_count(session); i++) {
        char error[256];
        ep_tensor_info info;
        ep_input(session, i, &info);
        if (npy_read(input_paths[i], &arrays[i], error)) {
            fprintf(stderr, "ep_run: %s\n", error);
            return 2;
        }
        int raw = !npy_has_code(info.dtype) && arrays[i].dtype == EP_U8 && arrays[i].rank == 1;
        if ((arrays[i].dtype != info.dtype && !raw) || arrays[i].bytes != info.bytes) {
            fprintf(stderr, "ep_run: input %zu has the wrong dtype or size\n", i);
            return 2;
        }
    }
    return 0;
}

static void write_inputs(ep_session *session, const npy_array *arrays) {
    for (size_t i = 0; i < ep_input_count(session); i++) {
        ep_tensor_info info;
        ep_input(session, i, &info);
        memcpy(info.data, arrays[i].data, arrays[i].bytes);
    }
}

static int run_repeatedly(ep_session *session, const npy_array *arrays, int repeat) {
    double *times = malloc((size_t)repeat * sizeof *times);
    if (!times) {
        fprintf(stderr, "ep_run: no memory for the times of %d runs\n", repeat);
        return 4;
    }
#ifdef EP_PROFILE
    uint64_t run_ticks = 0, first_tick = ticks();
    double first_ms = now_ms();
#endif
    for (int r = 0; r < repeat; r++) {
        write_inputs(session, arrays);
        double start = now_ms();
#ifdef EP_PROFILE
        uint64_t started = ticks();
#endif
        ep_status status = ep_run(session);
#ifdef EP_PROFILE
        run_ticks += ticks() - started;
#endif
        times[r] = now_ms() - start;
        if (status != EP_OK) {
            fprintf(stderr, "ep_run: %s: %s\n", ep_status_name(status), ep_error(session));
            free(times);
            return 4;
        }
    }
#ifdef EP_PROFILE
    uint64_t all_ticks = ticks() - first_tick;
    print_op_times(run_ticks, repeat, all_ticks ? (now_ms() - first_ms) * 1e6 / (double)all_ticks : 0.0);
#endif
    if (repeat > 1) {
        qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
        printf("median_ms %.4f\n", times[repeat / 2]);
    }
    free(times);
    return 0;
}

/* With --threads, the session's workers: the pool and their scratch. */
static int use_threads(ep_session *session) {
    pool = ep_pool_create(threads);
    size_t bytes = (ep_worker_scratch_bytes(session) * (size_t)(threads - 1) + 63) / 64 * 64;
    worker_scratch = aligned_alloc(64, bytes ? bytes : 64);
    if (!pool || !worker_scratch ||
        ep_set_workers(session, ep_pool_loop, pool, threads, worker_scratch, bytes) != EP_OK) {
        fprintf(stderr, "ep_run: cannot start %d threads\n", threads);
        return 4;
    }
    return 0;
}

static int run(const char *out_dir, int repeat, char **input_paths, int n_inputs,
               void *plan, size_t plan_len, void **memory) {
    size_t needed = 0;
    ep_status status = ep_required_bytes(plan, plan_len, &needed);
    if (status != EP_OK) {
        fprintf(stderr, "ep_run: %s\n", ep_status_name(status));
        return 3;
    }
    *memory = aligned_alloc(64, (needed + 63) / 64 * 64);
    ep_session *session = 0;
    status = ep_open(plan, plan_len, *memory, needed, &session);
    if (status != EP_OK) {
        fprintf(stderr, "ep_run: %s: %s\n", ep_status_name(status), ep_open_error(*memory, needed));
        return 3;
    }
    if ((size_t)n_inputs != ep_input_count(session)) {
        fprintf(stderr, "ep_run: the plan has %zu inputs, %d given\n", ep_input_count(session), n_inputs);
        return 2;
    }
    if (threads > 1 && use_threads(session)) return 4;
    npy_array *arrays = calloc((size_t)n_inputs + 1, sizeof *arrays);
    int code = load_inputs(session, input_paths, arrays);
    if (!code) code = run_repeatedly(session, arrays, repeat);
    for (int i = 0; i < n_inputs; i++) free(arrays[i].data);
    free(arrays);
    if (code) return code;
    for (size_t i = 0; i < ep_output_count(session); i++) {
        ep_tensor_info info;
        char path[4096];
        ep_output(session, i, &info);
        snprintf(path, sizeof path, "%s/%zu.npy", out_dir, i);
        if (npy_write(path, info.dtype, info.rank, info.dims, info.data, info.bytes)) {
            fprintf(stderr, "ep_run: cannot write %s\n", path);
            return 2;
        }
    }
    return 0;
}
