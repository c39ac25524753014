/* SSE2 helpers of the kernels, each with a plain fallback for other targets.
 *
 * div_pair, sqrt_pair: two IEEE divisions or square roots in one packed
 * instruction.  Packed and scalar instructions are both correctly rounded,
 * so the results are bit-identical to two scalar operations; only the
 * throughput differs (the divider and the square-root unit take two doubles
 * at the cost of one).
 *
 * prefetch_stream: ask for a block of memory ahead of its use, with the
 * non-temporal hint.  The kernels call it on the next row of a pass: rows
 * are visited in shuffled order, which the hardware prefetcher cannot guess,
 * and each row is read once per pass, so it should not push the model's own
 * arrays out of the outer caches.  A hint only: it changes no result.
 */
#ifndef SKLEARN_ADAPROX_SIMD_H
#define SKLEARN_ADAPROX_SIMD_H

#include <math.h>
#include <stddef.h>

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

static inline void prefetch_stream(const void *p, size_t nbytes)
{
    const char *c = (const char *)p;
    const char *end = c + nbytes;
    for (; c < end; c += 64) {  /* one request per cache line */
#if defined(__GNUC__)
        /* GCC deletes a finite loop of _mm_prefetch calls as dead code (it
         * has no effect on results); a volatile asm statement stays. */
        __asm__ __volatile__("prefetchnta %0" : : "m"(*c));
#else
        _mm_prefetch(c, _MM_HINT_NTA);
#endif
    }
}

#else

static inline void prefetch_stream(const void *p, size_t nbytes)
{
    (void)p;
    (void)nbytes;
}

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
