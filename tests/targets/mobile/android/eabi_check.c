/* Runs the 32-bit ARM EABI helpers of bridge/freestanding.c as compiled code calls them (64-bit and 32-bit division
   and remainder, 64-bit integer <-> floating point), on the operands of operands.h, and writes the results to
   stdout as raw little-endian values. Freestanding and static: _start, then the write and exit system calls. */
#include <stdint.h>

#include "operands.h"

static long system_call(long number, long a, long b, long c) {
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    register long r7 __asm__("r7") = number;
    __asm__ volatile("svc #0" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r7) : "memory");
    return r0;
}

static void put(const void *data, unsigned long bytes) { system_call(4, 1, (long)data, (long)bytes); }

void _start(void) {
    for (int i = 0; i < COUNT; i++) {
        volatile uint64_t ua = U64_A[i], ub = U64_B[i];
        volatile int64_t sa = (int64_t)U64_A[i], sb = (int64_t)U64_B[i];
        volatile uint32_t wa = (uint32_t)U64_A[i], wb = (uint32_t)U64_B[i];
        volatile int32_t ia = (int32_t)U64_A[i], ib = (int32_t)U64_B[i];
        uint64_t u64[4] = {ua / ub, ua % ub, (uint64_t)(sa / sb), (uint64_t)(sa % sb)};
        uint32_t u32[4] = {wa / wb, wa % wb, (uint32_t)(ia / ib), (uint32_t)(ia % ib)};
        float floats[2] = {(float)sa, (float)ua};
        double doubles[2] = {(double)sa, (double)ua};
        volatile double real = REALS[i];
        volatile float single = (float)REALS[i];
        int64_t truncated[3] = {(int64_t)real, (int64_t)single, (int64_t)(uint64_t)(real < 0 ? -real : real)};
        put(u64, sizeof u64);
        put(u32, sizeof u32);
        put(floats, sizeof floats);
        put(doubles, sizeof doubles);
        put(truncated, sizeof truncated);
    }
    system_call(1, 0, 0, 0);
    for (;;) {
    }
}
