/* A small reader and writer of NumPy .npy files (little-endian, C order) for the command-line tools. */
#ifndef EP_NPY_H
#define EP_NPY_H

#include <stddef.h>
#include <stdint.h>

typedef struct npy_array {
    int32_t dtype; /* an ep_dtype */
    int32_t rank;
    int64_t dims[8];
    size_t bytes;
    void *data;    /* malloc'ed */
} npy_array;

/* 0 on success; otherwise writes a reason into `error` (256 bytes). */
int npy_read(const char *path, npy_array *array, char *error);
int npy_write(const char *path, int32_t dtype, int32_t rank, const int64_t *dims, const void *data, size_t bytes);

#endif
