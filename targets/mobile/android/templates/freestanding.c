/* What the freestanding Android build needs from a C library: the memory functions the compiler calls and, on
   32-bit ARM, the run-time helpers of the ARM EABI (integer division and 64-bit conversions) that the NDK would
   take from compiler-rt. No function here is exported from the library. */
#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define NO_CALLS __attribute__((visibility("hidden"), no_builtin))

NO_CALLS void *memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (; n >= 16; n -= 16, d += 16, s += 16) __builtin_memcpy(d, s, 16);
    while (n--) *d++ = *s++;
    return dst;
}

NO_CALLS void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d <= s || d >= s + n) return memcpy(dst, src, n);
    while (n--) d[n] = s[n];
    return dst;
}

NO_CALLS void *memset(void *dst, int value, size_t n) {
    unsigned char *d = dst;
    while (n--) *d++ = (unsigned char)value;
    return dst;
}

#if defined(__arm__)
/* The EABI's memory helpers (note __aeabi_memset's argument order: destination, size, value). */
NO_CALLS void __aeabi_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }
NO_CALLS void __aeabi_memcpy4(void *d, const void *s, size_t n) { memcpy(d, s, n); }
NO_CALLS void __aeabi_memcpy8(void *d, const void *s, size_t n) { memcpy(d, s, n); }
NO_CALLS void __aeabi_memmove(void *d, const void *s, size_t n) { memmove(d, s, n); }
NO_CALLS void __aeabi_memmove4(void *d, const void *s, size_t n) { memmove(d, s, n); }
NO_CALLS void __aeabi_memmove8(void *d, const void *s, size_t n) { memmove(d, s, n); }
NO_CALLS void __aeabi_memset(void *d, size_t n, int v) { memset(d, v, n); }
NO_CALLS void __aeabi_memset4(void *d, size_t n, int v) { memset(d, v, n); }
NO_CALLS void __aeabi_memset8(void *d, size_t n, int v) { memset(d, v, n); }
NO_CALLS void __aeabi_memclr(void *d, size_t n) { memset(d, 0, n); }
NO_CALLS void __aeabi_memclr4(void *d, size_t n) { memset(d, 0, n); }
NO_CALLS void __aeabi_memclr8(void *d, size_t n) { memset(d, 0, n); }

/* Unsigned division by shift and subtract (ARMv7-A need not have a divide instruction); by zero gives 0. */
HIDDEN uint64_t ep_udivmod64(uint64_t n, uint64_t d, uint64_t *remainder) {
    uint64_t quotient = 0, rest = 0;
    if (d == 0) {
        *remainder = 0;
        return 0;
    }
    for (int bit = 63; bit >= 0; bit--) {
        rest = (rest << 1) | ((n >> bit) & 1u);
        if (rest >= d) {
            rest -= d;
            quotient |= (uint64_t)1 << bit;
        }
    }
    *remainder = rest;
    return quotient;
}

HIDDEN int64_t ep_divmod64(int64_t n, int64_t d, int64_t *remainder) {
    uint64_t un = n < 0 ? 0 - (uint64_t)n : (uint64_t)n, ud = d < 0 ? 0 - (uint64_t)d : (uint64_t)d, urem;
    uint64_t uq = ep_udivmod64(un, ud, &urem);
    *remainder = (int64_t)(n < 0 ? 0 - urem : urem);
    return (int64_t)((n < 0) != (d < 0) ? 0 - uq : uq);
}

static uint32_t udivmod32(uint32_t n, uint32_t d, uint32_t *remainder) {
    uint64_t rest;
    uint32_t quotient = (uint32_t)ep_udivmod64(n, d, &rest);
    *remainder = (uint32_t)rest;
    return quotient;
}

HIDDEN uint32_t __aeabi_uidiv(uint32_t n, uint32_t d) {
    uint32_t rest;
    return udivmod32(n, d, &rest);
}

HIDDEN int32_t __aeabi_idiv(int32_t n, int32_t d) {
    int64_t rest;
    return (int32_t)ep_divmod64(n, d, &rest);
}

/* {quotient, remainder} in r0 and r1: one 64-bit return value, quotient in the low word. */
HIDDEN uint64_t __aeabi_uidivmod(uint32_t n, uint32_t d) {
    uint32_t rest, quotient = udivmod32(n, d, &rest);
    return (uint64_t)rest << 32 | quotient;
}

HIDDEN uint64_t __aeabi_idivmod(int32_t n, int32_t d) {
    int64_t rest, quotient = ep_divmod64(n, d, &rest);
    return (uint64_t)(uint32_t)rest << 32 | (uint32_t)quotient;
}

/* {quotient, remainder} in r0-r1 and r2-r3: the C helper returns the quotient and stores the remainder, and this
   shim loads it into r2-r3. */
#define DIVMOD64_SHIM(name, helper)                                                                                  \
    __asm__(".text\n.syntax unified\n.thumb\n.p2align 2\n.globl " #name "\n.hidden " #name "\n.type " #name          \
            ",%function\n.thumb_func\n" #name ":\n"                                                                  \
            "    push {r4, lr}\n    sub sp, sp, #16\n    add r4, sp, #8\n    str r4, [sp]\n    bl " #helper "\n"     \
            "    ldrd r2, r3, [sp, #8]\n    add sp, sp, #16\n    pop {r4, pc}\n")
DIVMOD64_SHIM(__aeabi_uldivmod, ep_udivmod64);
DIVMOD64_SHIM(__aeabi_ldivmod, ep_divmod64);

/* 64-bit integer to floating point, rounded once: a double is the exact high half times 2^32 plus the exact low
   half, rounded by the one addition; a float rounds a 32-bit value whose lowest bit keeps every bit shifted out. */
static const double TWO32 = 4294967296.0;

HIDDEN double __aeabi_ul2d(uint64_t v) { return (double)(uint32_t)(v >> 32) * TWO32 + (double)(uint32_t)v; }

HIDDEN double __aeabi_l2d(int64_t v) {
    return v < 0 ? -__aeabi_ul2d(0 - (uint64_t)v) : __aeabi_ul2d((uint64_t)v);
}

HIDDEN float __aeabi_ul2f(uint64_t v) {
    int shift = 0;
    while (v >> 32) {
        v = (v >> 1) | (v & 1u);
        shift++;
    }
    float result = (float)(uint32_t)v;
    while (shift--) result *= 2.0f;
    return result;
}

HIDDEN float __aeabi_l2f(int64_t v) {
    return v < 0 ? -__aeabi_ul2f(0 - (uint64_t)v) : __aeabi_ul2f((uint64_t)v);
}

/* Floating point to 64-bit integer, toward zero; out of range saturates. */
HIDDEN uint64_t __aeabi_d2ulz(double x) {
    if (!(x > 0.0)) return 0;
    if (x >= 18446744073709551616.0) return UINT64_MAX;
    uint32_t high = (uint32_t)(x / TWO32);
    return (uint64_t)high << 32 | (uint32_t)(x - (double)high * TWO32);
}

HIDDEN int64_t __aeabi_d2lz(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return x < 0.0 ? (int64_t)(0 - __aeabi_d2ulz(-x)) : (int64_t)__aeabi_d2ulz(x);
}

HIDDEN int64_t __aeabi_f2lz(float x) { return __aeabi_d2lz((double)x); }
HIDDEN uint64_t __aeabi_f2ulz(float x) { return __aeabi_d2ulz((double)x); }
#endif
