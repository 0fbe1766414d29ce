/* .npy reading and writing for ep_run: version 1-3 headers. Dtypes numpy has no code for (bfloat16, float8 and the
   packed sub-byte ones) travel as their plan bytes: a 1-D '|u1' array. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/edgepack.h"

static const struct { const char *descr; int32_t dtype; size_t size; } KINDS[] = {
    {"<f4", EP_F32, 4}, {"|u1", EP_U8, 1}, {"|i1", EP_I8, 1}, {"<i4", EP_I32, 4}, {"<i8", EP_I64, 8},
    {"|b1", EP_BOOL, 1}, {"<f8", EP_F64, 8}, {"<f2", EP_F16, 2}, {"<i2", EP_I16, 2}, {"<u2", EP_U16, 2},
    {"<u4", EP_U32, 4}, {"<u8", EP_U64, 8},
};

int npy_has_code(int32_t dtype) {
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].dtype == dtype) return 1;
    return 0;
}

static int fail(char *error, const char *what, const char *path) {
    snprintf(error, 256, "%s: %s", path, what);
    return 1;
}

int npy_read(const char *path, npy_array *array, char *error) {
    FILE *file = fopen(path, "rb");
    if (!file) return fail(error, "cannot open", path);
    unsigned char head[12];
    if (fread(head, 1, 10, file) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
        fclose(file);
        return fail(error, "not an .npy file", path);
    }
    size_t header_len = head[8] | (size_t)head[9] << 8;
    if (head[6] >= 2) {
        if (fread(head + 10, 1, 2, file) != 2) {
            fclose(file);
            return fail(error, "truncated header", path);
        }
        header_len |= (size_t)head[10] << 16 | (size_t)head[11] << 24;
    }
    if (header_len > 65536) {
        fclose(file);
        return fail(error, "header too long", path);
    }
    char *header = calloc(1, header_len + 1);
    if (!header || fread(header, 1, header_len, file) != header_len) {
        free(header);
        fclose(file);
        return fail(error, "truncated header", path);
    }
    size_t element = 0;
    array->dtype = 0;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strstr(header, KINDS[i].descr)) {
            array->dtype = KINDS[i].dtype;
            element = KINDS[i].size;
        }
    const char *shape = strstr(header, "'shape': (");
    if (!array->dtype || strstr(header, "'fortran_order': True") || !shape) {
        free(header);
        fclose(file);
        return fail(error, "unsupported dtype or layout", path);
    }
    shape += strlen("'shape': (");
    array->rank = 0;
    size_t count = 1;
    while (*shape && *shape != ')' && array->rank < 8) {
        char *end;
        long long dim = strtoll(shape, &end, 10);
        if (end == shape) break;
        array->dims[array->rank++] = dim;
        count *= (size_t)dim;
        shape = end;
        while (*shape == ',' || *shape == ' ') shape++;
    }
    free(header);
    array->bytes = count * element;
    array->data = malloc(array->bytes ? array->bytes : 1);
    if (!array->data || fread(array->data, 1, array->bytes, file) != array->bytes) {
        fclose(file);
        return fail(error, "truncated data", path);
    }
    fclose(file);
    return 0;
}

int npy_write(const char *path, int32_t dtype, int32_t rank, const int64_t *dims, const void *data, size_t bytes) {
    const char *descr = "|u1";
    int64_t raw_dims[1] = {(int64_t)bytes};
    if (!npy_has_code(dtype)) {
        rank = 1;
        dims = raw_dims;
    }
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].dtype == dtype) descr = KINDS[i].descr;
    char header[512];
    int at = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int32_t i = 0; i < rank; i++) at += snprintf(header + at, sizeof header - (size_t)at, "%lld,%s",
                                                      (long long)dims[i], i + 1 < rank ? " " : "");
    at += snprintf(header + at, sizeof header - (size_t)at, "), }");
    int total = 10 + at + 1;
    int pad = (64 - total % 64) % 64;
    FILE *file = fopen(path, "wb");
    if (!file) return 1;
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    head[8] = (unsigned char)((at + pad + 1) & 0xFF);
    head[9] = (unsigned char)((at + pad + 1) >> 8);
    fwrite(head, 1, 10, file);
    fwrite(header, 1, (size_t)at, file);
    for (int i = 0; i < pad; i++) fputc(' ', file);
    fputc('\n', file);
    size_t written = fwrite(data, 1, bytes, file);
    fclose(file);
    return written != bytes;
}
