/* Runs @MODEL@ on .npy inputs and writes each output to OUT_DIR/<output name>.npy (characters other than letters,
   digits, '.', '_' and '-' become '_').
   usage: @MODEL@_example PLAN.epk OUT_DIR [--repeat N] [--threads N] INPUT.npy...
   (built with EMBED_PLAN, PLAN.epk may be --embedded: the plan linked into the program)
   Inputs come in the order of @MODEL@_inputs (@INPUT_LIST@). --repeat N runs N times and prints the load time,
   every run's time in order, their median and the process's peak resident memory (Linux). --threads N (a library
   built with THREADS=1) runs on N threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "@MODEL@.h"
#include "npy.h"

/* Milliseconds since the first call (a double of the epoch's milliseconds would keep only 0.2 us). */
static double now_ms(void) {
    static struct timespec origin;
    struct timespec t;
    timespec_get(&t, TIME_UTC);
    if (!origin.tv_sec) origin = t;
    return (double)(t.tv_sec - origin.tv_sec) * 1e3 + (double)(t.tv_nsec - origin.tv_nsec) / 1e6;
}

/* The process's peak resident memory in kB, from Linux's /proc/self/status (-1 elsewhere). */
static long peak_rss_kb(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (status && fgets(line, sizeof line, status))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    if (status) fclose(status);
    return kb;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fits(const npy_array *array, const @MODEL@_tensor *port) {
    if (array->dtype != (int32_t)port->dtype || array->rank != port->rank) return 0;
    for (int32_t d = 0; d < port->rank; d++)
        if (array->dims[d] != port->dims[d]) return 0;
    return 1;
}

static int read_inputs(char **paths, npy_array *arrays) {
    for (size_t i = 0; i < @PREFIX@_INPUT_COUNT; i++) {
        char error[256];
        if (npy_read(paths[i], &arrays[i], error)) {
            fprintf(stderr, "@MODEL@_example: %s\n", error);
            return 2;
        }
        if (!fits(&arrays[i], &@MODEL@_inputs[i])) {
            fprintf(stderr, "@MODEL@_example: %s does not fit input '%s' (dtype %d, rank %d in @MODEL@.h)\n",
                    paths[i], @MODEL@_inputs[i].name, (int)@MODEL@_inputs[i].dtype, (int)@MODEL@_inputs[i].rank);
            return 2;
        }
    }
    return 0;
}

static int run_timed(@MODEL@ *model, const npy_array *arrays, int repeat, int timed) {
    static double times[1024];
    for (int r = 0; r < repeat; r++) {
        for (size_t i = 0; i < @PREFIX@_INPUT_COUNT; i++)
            memcpy(@MODEL@_input_data(model, i), arrays[i].data, arrays[i].bytes);
        double start = now_ms();
        ep_status status = @MODEL@_run(model);
        times[r] = now_ms() - start;
        if (status != EP_OK) {
            fprintf(stderr, "@MODEL@_example: %s: %s\n", ep_status_name(status), @MODEL@_error(model));
            return 4;
        }
    }
    if (timed) {
        printf("run_ms");
        for (int r = 0; r < repeat; r++) printf(" %.6f", times[r]);
        printf("\n");
        qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
        printf("median_ms %.4f\n", times[repeat / 2]);
    }
    return 0;
}

static int write_outputs(const @MODEL@ *model, const char *out_dir) {
    for (size_t i = 0; i < @PREFIX@_OUTPUT_COUNT; i++) {
        const @MODEL@_tensor *port = &@MODEL@_outputs[i];
        char path[4096];
        int at = snprintf(path, sizeof path, "%s/", out_dir);
        for (const char *c = port->name; *c && at < (int)sizeof path - 5; c++)
            path[at++] = (strchr("._-", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                          (*c >= 'A' && *c <= 'Z')) ? *c : '_';
        snprintf(path + at, sizeof path - (size_t)at, ".npy");
        if (npy_write(path, (int32_t)port->dtype, port->rank, port->dims, @MODEL@_output_data(model, i),
                      port->bytes)) {
            fprintf(stderr, "@MODEL@_example: cannot write %s\n", path);
            return 2;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int first_input = 3, repeat = 1, timed = 0, threads = 1;
    for (; first_input + 1 < argc && strncmp(argv[first_input], "--", 2) == 0; first_input += 2) {
        if (strcmp(argv[first_input], "--repeat") == 0) {
            repeat = atoi(argv[first_input + 1]);
            timed = 1;
        } else if (strcmp(argv[first_input], "--threads") == 0) {
            threads = atoi(argv[first_input + 1]);
        } else {
            break;
        }
    }
    if (argc - first_input != @PREFIX@_INPUT_COUNT || repeat < 1 || repeat > 1024 || threads < 1 || threads > 256) {
        fprintf(stderr, "usage: %s PLAN.epk OUT_DIR [--repeat 1-1024] [--threads 1-256] INPUT.npy... (%d inputs: %s)\n",
                argv[0], @PREFIX@_INPUT_COUNT, @INPUT_LIST@);
        return 2;
    }
    char error[EP_ERROR_CAPACITY];
    @MODEL@ *model = NULL;
    double load_started = now_ms();
#ifdef @PREFIX@_EMBEDDED_PLAN
    ep_status status = strcmp(argv[1], "--embedded") == 0 ? @MODEL@_create_embedded(&model, error)
                                                           : @MODEL@_create_from_file(argv[1], &model, error);
#else
    ep_status status = @MODEL@_create_from_file(argv[1], &model, error);
#endif
    if (status != EP_OK) {
        fprintf(stderr, "@MODEL@_example: %s: %s\n", ep_status_name(status), error);
        return 3;
    }
    if (threads > 1) {
#ifdef @PREFIX@_THREADS
        status = @MODEL@_set_threads(model, threads, error);
#else
        status = EP_ERR_ARGUMENT;
        snprintf(error, sizeof error, "--threads needs the library built with THREADS=1");
#endif
        if (status != EP_OK) {
            fprintf(stderr, "@MODEL@_example: %s: %s\n", ep_status_name(status), error);
            @MODEL@_destroy(model);
            return 3;
        }
    }
    if (timed) printf("load_ms %.6f\n", now_ms() - load_started);
    npy_array arrays[@PREFIX@_INPUT_COUNT + 1];
    memset(arrays, 0, sizeof arrays);
    int code = read_inputs(argv + first_input, arrays);
    if (!code) code = run_timed(model, arrays, repeat, timed);
    if (!code) code = write_outputs(model, argv[2]);
    if (!code && timed) printf("peak_rss_kb %ld\n", peak_rss_kb());
    for (size_t i = 0; i < @PREFIX@_INPUT_COUNT; i++) free(arrays[i].data);
    @MODEL@_destroy(model);
    return code;
}
