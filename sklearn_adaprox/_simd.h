/* Two IEEE divisions or square roots in one packed SSE2 instruction.
 *
 * Packed and scalar instructions are both correctly rounded, so the results
 * are bit-identical to two scalar operations; only the throughput differs
 * (the divider and the square-root unit take two doubles at the cost of
 * one).  Without SSE2 (non-x86 targets) these are plain scalar operations.
 */
#ifndef SKLEARN_ADAPROX_SIMD_H
#define SKLEARN_ADAPROX_SIMD_H

#include <math.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>

static inline void div_pair(double a0, double a1, double b0, double b1,
                            double *r0, double *r1)
{
    __m128d r = _mm_div_pd(_mm_set_pd(a1, a0), _mm_set_pd(b1, b0));
    _mm_storel_pd(r0, r);
    _mm_storeh_pd(r1, r);
}

static inline void sqrt_pair(double a0, double a1, double *r0, double *r1)
{
    __m128d r = _mm_sqrt_pd(_mm_set_pd(a1, a0));
    _mm_storel_pd(r0, r);
    _mm_storeh_pd(r1, r);
}

#else

static inline void div_pair(double a0, double a1, double b0, double b1,
                            double *r0, double *r1)
{
    *r0 = a0 / b0;
    *r1 = a1 / b1;
}

static inline void sqrt_pair(double a0, double a1, double *r0, double *r1)
{
    *r0 = sqrt(a0);
    *r1 = sqrt(a1);
}

#endif
#endif
