/* The elementwise kinds on the number dtypes without a fast path (wide.c): element by element, floats through a
   double and integers through their 64 bits. */
#ifndef EP_WIDE_H
#define EP_WIDE_H

#include "broadcast.h"

/* float32, float64, float16 or bfloat16. */
int ep_wide_real(int32_t dtype);
/* Any 8-, 16-, 32- or 64-bit integer, signed or not. */
int ep_wide_integer(int32_t dtype);
/* The remainder of a / b: with the sign of b (`floored`, ONNX Mod with fmod 0) or of a (fmod 1); NaN for b = 0. */
double ep_remainder(double a, double b, int floored);
/* Whether a binary kind compares (Equal, Less, Greater, LessOrEqual, GreaterOrEqual): its output is bool. */
int ep_binary_compares(int32_t kind);
/* A binary kind (arithmetic, comparison, bitwise) on inputs of one dtype outside the fast paths. */
void ep_binary_wide(const ep_node *n, const ep_broadcast *b);

#endif
