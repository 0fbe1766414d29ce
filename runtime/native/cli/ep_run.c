/* ep_run: runs an .epk plan on .npy inputs (in the plan's input order) and writes each output to OUT_DIR/<i>.npy.
   usage: ep_run PLAN.epk OUT_DIR [--repeat N] INPUT.npy...   (--repeat prints the median run time in ms) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/edgepack.h"
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

static double now_ms(void) {
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run(const char *out_dir, int repeat, char **input_paths, int n_inputs,
               void *plan, size_t plan_len, void **memory);

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ep_run PLAN.epk OUT_DIR [--repeat N] INPUT.npy...\n");
        return 2;
    }
    int first_input = 3, repeat = 1;
    if (argc > 4 && strcmp(argv[3], "--repeat") == 0) {
        repeat = atoi(argv[4]) > 0 ? atoi(argv[4]) : 1;
        first_input = 5;
    }
    size_t plan_len = 0;
    void *plan = read_file(argv[1], &plan_len);
    if (!plan) {
        fprintf(stderr, "ep_run: cannot read %s\n", argv[1]);
        return 2;
    }
    void *memory = 0;
    int code = run(argv[2], repeat, argv + first_input, argc - first_input, plan, plan_len, &memory);
    free(memory);
    free(plan);
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
    double times[1024];
    if (repeat > 1024) repeat = 1024;
    for (int r = 0; r < repeat; r++) {
        write_inputs(session, arrays);
        double start = now_ms();
        ep_status status = ep_run(session);
        times[r] = now_ms() - start;
        if (status != EP_OK) {
            fprintf(stderr, "ep_run: %s: %s\n", ep_status_name(status), ep_error(session));
            return 4;
        }
    }
    if (repeat > 1) {
        qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
        printf("median_ms %.4f\n", times[repeat / 2]);
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
