/* What the wasm32 build needs from a C library, and nothing more: memcpy, memmove and memset (the compiler emits
   calls to them), lowered to bulk-memory instructions. */
#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int value, size_t n);

void *memcpy(void *dst, const void *src, size_t n) {
    __builtin_memmove(dst, src, n);
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    __builtin_memmove(dst, src, n);
    return dst;
}

void *memset(void *dst, int value, size_t n) {
    __builtin_memset(dst, value, n);
    return dst;
}
