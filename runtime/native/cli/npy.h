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

/* Whether numpy has a code for the dtype; the others are read and written as their raw bytes ('|u1', 1-D). */
int npy_has_code(int32_t dtype);
/* 0 on success; otherwise writes a reason into `error` (256 bytes). */
int npy_read(const char *path, npy_array *array, char *error);
int npy_write(const char *path, int32_t dtype, int32_t rank, const int64_t *dims, const void *data, size_t bytes);

#endif
