/* SSE2 helpers of the kernels, each with a plain fallback for other targets.
 *
 * div_pair, sqrt_pair: two IEEE divisions or square roots in one packed
 * instruction.  Packed and scalar instructions are both correctly rounded,
 * so the results are bit-identical to two scalar operations; only the
 * throughput differs (the divider and the square-root unit take two doubles
 * at the cost of one).
 *
 * prefetch_stream: ask for a block of memory ahead of its use.  The kernels
 * call it on the next row of a pass: rows are visited in shuffled order,
 * which the hardware prefetcher cannot guess.  The hint is T2 (into the
 * outer caches, not L1), the fastest of the three measured on one pass of
 * dual averaging (the kernel alone, 20 newsgroups hashed, 415 non-zeros a
 * row / a9a, 14): non-temporal 34.0 / 3.2 ms, T0 17-19 / 1.5 ms, T2
 * 15.8-17.0 / 1.4-1.5 ms.  The non-temporal hint, tried first so that rows
 * read once a pass would not evict the model, cost half the pass.  A hint
 * only: it changes no result.
 *
 * prefetch_line: the same request for the one cache line holding p: the
 * state entries of the next row's columns (_dataset.prefetch_entries).
 * T2 again: a row's 400 lines asked for with T0 overflow L1 (one pass of
 * dual averaging on 20 newsgroups hashed, 2**20 columns: 48 ms without,
 * 42 ms with T0, 26 ms with T2; SGDClassifier 28 ms).
 *
 * SKLEARN_ADAPROX_NO_SIMD (defined by setup.py when the environment
 * variable of that name is set at build time) compiles the plain fallbacks
 * only, as on targets other than x86, so that CI tests them on any machine.
 * SKLEARN_ADAPROX_SIMD_PATHS names the paths compiled in: "sse2+avx",
 * "sse2", "avx" or "scalar" (_adagrad_fast.SIMD_PATHS in Python; whether
 * the AVX loops run also depends on the CPU, see avx_available).
 */
#ifndef SKLEARN_ADAPROX_SIMD_H
#define SKLEARN_ADAPROX_SIMD_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* log1p and exp for mirror descent's idle-step closed form with an l2
 * part (md_idle_steps in _adagrad_rules.pxd), which reads log1p(r), e^y
 * and 1 - e^y for y = -k log1p(r) at every weight a row reads: three libm
 * calls, scalar.  These give e^y and 1 - e^y from one reduction and are
 * written in +, -, *, / and exact bit operations only, so that the AVX
 * versions below (md_idle_row_avx) give the same bits lane by lane,
 * whatever the path.  Both are within a few ulp of the correctly rounded
 * value (tested against NumPy's).
 *
 * exp: y = n ln2 + r with n = round(y / ln2) and |r| <= ln2 / 2 (Cody and
 * Waite: ln 2 split in two so that n LN2_HI is exact), e^r - 1 by its Taylor
 * series to r^13 / 13! (the next term is below 5e-18 on that interval), and
 * 2^n from the exponent bits.  log1p: 1 + x = 2^e m with m in
 * [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1),
 * |s| <= 0.172, by its series to s^21, and m - 1 taken as x where e = 0
 * (the rounding of 1 + x costs at most 2^-53 / log(sqrt(2)) relative
 * elsewhere).  For x <= 2^-6, the common case (r = eta l2 / H, of the
 * order of alpha over a root), log1p is its own series to x^10 / 10 instead
 * (the next term is below 2^-60 x / 11): no division, no reduction, a third
 * of mirror descent's four-lane catch-up with l2 (4096 entries: 8.9 -> 5.9
 * ns an entry).  The series first stopped at x^6 / 6 for x <= 2^-10; on 20
 * newsgroups hashed (log loss, l2, one epoch) 45 % of the entries a row
 * catches up have an r above 2^-10 but only 3 % one above 2^-6 (besides
 * those that never moved, H = 0, which the four-lane loop no longer lets
 * choose the reduction), and a four-lane group with one such entry takes
 * the reduction for all four. */
#define ADAPROX_LN2_HI 6.93147180369123816490e-01  /* 32 bits of ln 2 */
#define ADAPROX_LN2_LO 1.90821492927058781614e-10  /* ln 2 - ADAPROX_LN2_HI */
#define ADAPROX_INV_LN2 1.4426950408889634
#define ADAPROX_SQRT2 1.4142135623730951
/* 1.5 * 2^52: adding it rounds a double below 2^51 to an integer, which
 * then sits in the low bits of the sum's mantissa */
#define ADAPROX_ROUND_MAGIC 6755399441055744.0
/* e^y is 0 in double below -745.2; clamping there keeps 2^n in range */
#define ADAPROX_EXP_FLOOR -1100.0
#define ADAPROX_MANTISSA_BITS 0x000FFFFFFFFFFFFFULL
#define ADAPROX_ONE_BITS 0x3FF0000000000000ULL
/* The series' coefficients: 1/k! for k = 2 .. 13 and 2/(2j + 3) for
 * j = 0 .. 9. */
static const double ADAPROX_EXP_TERMS[12] = {
    0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333,
    0.001388888888888889, 0.0001984126984126984, 2.48015873015873e-05,
    2.7557319223985893e-06, 2.755731922398589e-07, 2.505210838544172e-08,
    2.08767569878681e-09, 1.6059043836821613e-10};
static const double ADAPROX_LOG_TERMS[10] = {
    0.6666666666666666, 0.4, 0.2857142857142857, 0.2222222222222222,
    0.18181818181818182, 0.15384615384615385, 0.13333333333333333,
    0.11764705882352941, 0.10526315789473684, 0.09523809523809523};

/* sum of c[i] x^i over the twelve exp terms and the ten log terms, by
 * Estrin's scheme (pairs c[i] + c[i+1] x, then pairs of pairs with x^2,
 * ...): a dependency chain of four steps where Horner's rule has eleven */
static inline double adaprox_exp_series(double x)
{
    const double *c = ADAPROX_EXP_TERMS;
    double x2 = x * x, x4 = x2 * x2, x8 = x4 * x4;
    double q0 = (c[0] + c[1] * x) + (c[2] + c[3] * x) * x2;
    double q1 = (c[4] + c[5] * x) + (c[6] + c[7] * x) * x2;
    double q2 = (c[8] + c[9] * x) + (c[10] + c[11] * x) * x2;
    return (q0 + q1 * x4) + q2 * x8;
}

static inline double adaprox_log_series(double x)
{
    const double *c = ADAPROX_LOG_TERMS;
    double x2 = x * x, x4 = x2 * x2, x8 = x4 * x4;
    double q0 = (c[0] + c[1] * x) + (c[2] + c[3] * x) * x2;
    double q1 = (c[4] + c[5] * x) + (c[6] + c[7] * x) * x2;
    return (q0 + q1 * x4) + (c[8] + c[9] * x) * x8;
}

static inline double adaprox_from_bits(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static inline uint64_t adaprox_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* 2^n for an integer-valued n in [-1022, 1023]: n + 1023 lands in the low
 * bits of the sum's mantissa, and a shift puts it in the exponent field. */
static inline double adaprox_pow2(double n)
{
    return adaprox_from_bits(adaprox_bits(n + (ADAPROX_ROUND_MAGIC + 1023.0)) << 52);
}

#define ADAPROX_LOG1P_SMALL 0.015625  /* 2^-6 */

/* x - x^2/2 + x^3/3 - ... - x^10/10 by Horner's rule: log1p(x) for
 * 0 <= x <= ADAPROX_LOG1P_SMALL. */
static inline double adaprox_log1p_small(double x)
{
    double p = -0.1;
    p = 1.0 / 9.0 + x * p;
    p = -0.125 + x * p;
    p = 1.0 / 7.0 + x * p;
    p = -1.0 / 6.0 + x * p;
    p = 0.2 + x * p;
    p = -0.25 + x * p;
    p = 1.0 / 3.0 + x * p;
    p = -0.5 + x * p;
    return x + (x * x) * p;
}

/* log(1 + x) for x >= 0 (+inf for +inf). */
static inline double adaprox_log1p(double x)
{
    if (x <= ADAPROX_LOG1P_SMALL)
        return adaprox_log1p_small(x);
    double u = 1.0 + x;
    uint64_t b = adaprox_bits(u);
    double e = (double)(int64_t)(b >> 52) - 1023.0;  /* u >= 1: no sign bit */
    double m = adaprox_from_bits((b & ADAPROX_MANTISSA_BITS) | ADAPROX_ONE_BITS);
    if (m > ADAPROX_SQRT2) {
        m = m * 0.5;
        e = e + 1.0;
    }
    /* m - 1 is exact (m in [1/2, 2]); where e = 0 it is u - 1, and x is
     * the same without the rounding of 1 + x */
    double f = e == 0.0 ? x : m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double log_m = 2.0 * s + s * (z * adaprox_log_series(z));
    double log_u = e * ADAPROX_LN2_HI + (log_m + e * ADAPROX_LN2_LO);
    return (u == 1.0 || x > DBL_MAX) ? x : log_u;  /* x < 2^-53: log1p(x) rounds to x */
}

/* e^y and 1 - e^y for y <= 0 (1 - e^y without cancellation near 0). */
static inline void adaprox_exp_pair(double y, double *exp_y, double *one_minus)
{
    y = y < ADAPROX_EXP_FLOOR ? ADAPROX_EXP_FLOOR : y;
    double n = (y * ADAPROX_INV_LN2 + ADAPROX_ROUND_MAGIC) - ADAPROX_ROUND_MAGIC;
    double r = (y - n * ADAPROX_LN2_HI) - n * ADAPROX_LN2_LO;
    double q = r + (r * r) * adaprox_exp_series(r);  /* e^r - 1 */
    /* 2^n = 2^half 2^(n - half), each factor normal down to n = -1587 */
    double half = floor(0.5 * n);
    double scale_a = adaprox_pow2(half), scale_b = adaprox_pow2(n - half);
    double scale = scale_a * scale_b;
    *exp_y = ((1.0 + q) * scale_a) * scale_b;
    *one_minus = (1.0 - scale) - scale * q;
}

#if !defined(SKLEARN_ADAPROX_NO_SIMD) && \
    (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#define SKLEARN_ADAPROX_HAVE_SSE2 1
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
        /* GCC 12 removed loops of _mm_prefetch calls as dead code (they
         * change no result) in the kernels; a volatile asm statement
         * stays. */
        __asm__ __volatile__("prefetcht2 %0" : : "m"(*c));
#else
        _mm_prefetch(c, _MM_HINT_T2);
#endif
    }
}

static inline void prefetch_line(const void *p)
{
#if defined(__GNUC__)
    __asm__ __volatile__("prefetcht2 %0" : : "m"(*(const char *)p));
#else
    _mm_prefetch((const char *)p, _MM_HINT_T2);
#endif
}

#else

static inline void prefetch_stream(const void *p, size_t nbytes)
{
    (void)p;
    (void)nbytes;
}

static inline void prefetch_line(const void *p)
{
    (void)p;
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

/* AVX versions of the two dual-averaging loops, for float64 rows with int32
 * indices (scikit-learn's CSR default), chosen at run time: four divisions
 * or square roots per instruction, twice the throughput of the SSE2 pairs.
 * They keep the arithmetic and the order of the scalar loops, so their
 * results are bit-identical to the SSE2 and scalar paths.  Built only with
 * GCC or Clang on x86, which compile a function for AVX inside a baseline
 * build and tell at run time whether the CPU and the OS support it. */
#if !defined(SKLEARN_ADAPROX_NO_SIMD) && \
    (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define SKLEARN_ADAPROX_HAVE_AVX 1
#include <immintrin.h>
#include <stdint.h>

static inline int avx_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx");
}

/* Lane by lane, b where mask is all ones, else a: a blend for masks made by
 * comparisons (all ones or all zeros a lane) in three bitwise operations.
 * GCC 12 turns _mm256_blendv_pd of such a mask, in a function compiled for
 * AVX inside a baseline build, into a branch per lane (each lane's sign
 * moved to a general register and tested): the four-lane catch-up of mirror
 * descent took 10.3 ns an entry with the blend and 9.0 with this. */
__attribute__((target("avx")))
static inline __m256d select_avx(__m256d a, __m256d b, __m256d mask)
{
    return _mm256_or_pd(_mm256_andnot_pd(mask, a), _mm256_and_pd(mask, b));
}

/* The 4 x 4 transpose: lane m of *c0 .. *c3 are entries 0 .. 3 of r_m (four
 * entries of four doubles loaded whole: their lanes m of the outputs are
 * then the m-th entry's).  Its own inverse.  Moves only: the same bits. */
__attribute__((target("avx")))
static inline void transpose_entries_avx(__m256d r0, __m256d r1, __m256d r2, __m256d r3,
                                         __m256d *c0, __m256d *c1, __m256d *c2,
                                         __m256d *c3)
{
    const __m256d t0 = _mm256_unpacklo_pd(r0, r1);  /* r0[0] r1[0] r0[2] r1[2] */
    const __m256d t1 = _mm256_unpackhi_pd(r0, r1);  /* r0[1] r1[1] r0[3] r1[3] */
    const __m256d t2 = _mm256_unpacklo_pd(r2, r3);
    const __m256d t3 = _mm256_unpackhi_pd(r2, r3);
    *c0 = _mm256_permute2f128_pd(t0, t2, 0x20);
    *c1 = _mm256_permute2f128_pd(t1, t3, 0x20);
    *c2 = _mm256_permute2f128_pd(t0, t2, 0x31);
    *c3 = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/* The pairs (acc[2j], acc[2j + 1]) of the four columns j = idx[0..3], as
 * two vectors: lane m holds column idx[m]'s. */
__attribute__((target("avx")))
static inline void gather_pairs_avx(const double *acc, const int32_t *idx,
                                    __m256d *first, __m256d *second)
{
    const double *a0 = acc + 2 * (ptrdiff_t)idx[0];
    const double *a1 = acc + 2 * (ptrdiff_t)idx[1];
    const double *a2 = acc + 2 * (ptrdiff_t)idx[2];
    const double *a3 = acc + 2 * (ptrdiff_t)idx[3];
    *first = _mm256_set_pd(a3[0], a2[0], a1[0], a0[0]);
    *second = _mm256_set_pd(a3[1], a2[1], a1[1], a0[1]);
}

/* The inverse of gather_pairs_avx: lane m of first and second into
 * (acc[2j], acc[2j + 1]), j = idx[m]. */
__attribute__((target("avx")))
static inline void scatter_pairs_avx(double *acc, const int32_t *idx, __m256d first,
                                     __m256d second)
{
    double a[4], b[4];
    ptrdiff_t m;
    _mm256_storeu_pd(a, first);
    _mm256_storeu_pd(b, second);
    for (m = 0; m < 4; m++) {
        acc[2 * (ptrdiff_t)idx[m]] = a[m];
        acc[2 * (ptrdiff_t)idx[m] + 1] = b[m];
    }
}

/* sqrt(root^2 + g^2) lane by lane: a root of the sum of squared gradients
 * after the gradient g, as the scalar loops compute it. */
__attribute__((target("avx")))
static inline __m256d grown_roots_avx(__m256d root, __m256d g)
{
    return _mm256_sqrt_pd(_mm256_add_pd(_mm256_mul_pd(root, root), _mm256_mul_pd(g, g)));
}

/* All ones in the lanes of v that are NaN or infinite: |v| > DBL_MAX, or
 * unordered.  The kernels OR these over the entries they write, so that a
 * pass reports a non-finite state without a second read of it. */
__attribute__((target("avx")))
static inline __m256d nonfinite_lanes_avx(__m256d v)
{
    return _mm256_cmp_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), v),
                         _mm256_set1_pd(DBL_MAX), _CMP_NLE_UQ);
}

/* p + v[0] + v[1] + v[2] + v[3], added one lane at a time in that order
 * (the order of the scalar loops, so that the sums are bit-identical). */
__attribute__((target("avx")))
static inline double add_lanes_in_order(double p, __m256d v)
{
    double q[4];
    _mm256_storeu_pd(q, v);
    p += q[0];
    p += q[1];
    p += q[2];
    p += q[3];
    return p;
}

/* sum over k of acc[2 idx[k]] x[k] / (acc[2 idx[k] + 1] + shift), added in
 * the order of k, over the entries whose denominator is positive (with
 * shift = 0, an untouched coordinate has 0 / 0; it adds nothing, and the
 * sum is never -0, so the result is that of skipping it). */
__attribute__((target("avx")))
static inline double quotient_sum_avx(const double *acc, const int32_t *idx, const double *x,
                               ptrdiff_t nnz, double shift)
{
    const __m256d s = _mm256_set1_pd(shift);
    const __m256d zero = _mm256_setzero_pd();
    __m256d u, root;
    double p = 0.0;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        gather_pairs_avx(acc, idx + k, &u, &root);
        __m256d num = _mm256_mul_pd(u, _mm256_loadu_pd(x + k));
        __m256d den = _mm256_add_pd(root, s);
        __m256d quotient = _mm256_div_pd(num, den);
        p = add_lanes_in_order(p, _mm256_and_pd(quotient,
                                                _mm256_cmp_pd(den, zero, _CMP_GT_OQ)));
    }
    for (; k < nnz; k++) {
        const double *a = acc + 2 * (ptrdiff_t)idx[k];
        if (a[1] + shift > 0.0)
            p += a[0] * x[k] / (a[1] + shift);
    }
    return p;
}

/* FTRL-Proximal's margin: row_w[k] = w_j (stored for the update) and the
 * sum over k of w_j x[k], j = idx[k], where w_j = 0 if |z_j| <= l1_shift
 * and -(eta (z_j - copysign(l1_shift, z_j))) / (delta + root_j +
 * eta_l2_shift) otherwise; (z_j, root_j) = (acc[2j], acc[2j + 1]).  The
 * operations and their order are ftrl_weight's, so the weights and the sum
 * are bit-identical to the scalar loop's (a zero weight adds nothing). */
__attribute__((target("avx")))
static inline double ftrl_row_weights_avx(const double *acc, const int32_t *idx,
                                          const double *x, ptrdiff_t nnz, double *row_w,
                                          double eta, double delta, double l1_shift,
                                          double eta_l2_shift)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d eta4 = _mm256_set1_pd(eta);
    const __m256d delta4 = _mm256_set1_pd(delta);
    const __m256d l1_4 = _mm256_set1_pd(l1_shift);
    const __m256d l2_4 = _mm256_set1_pd(eta_l2_shift);
    __m256d z, root;
    double p = 0.0;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        gather_pairs_avx(acc, idx + k, &z, &root);
        __m256d kept = _mm256_cmp_pd(_mm256_andnot_pd(sign, z), l1_4, _CMP_GT_OQ);
        /* copysign(l1_shift, z), l1_shift >= 0 */
        __m256d num = _mm256_mul_pd(eta4, _mm256_sub_pd(z, _mm256_or_pd(l1_4,
                                                                        _mm256_and_pd(sign, z))));
        __m256d den = _mm256_add_pd(_mm256_add_pd(delta4, root), l2_4);
        __m256d w = _mm256_and_pd(_mm256_xor_pd(_mm256_div_pd(num, den), sign), kept);
        _mm256_storeu_pd(row_w + k, w);
        p = add_lanes_in_order(p, _mm256_mul_pd(w, _mm256_loadu_pd(x + k)));
    }
    for (; k < nnz; k++) {
        const double *a = acc + 2 * (ptrdiff_t)idx[k];
        row_w[k] = fabs(a[0]) <= l1_shift ? 0.0
            : -(eta * (a[0] - copysign(l1_shift, a[0]))) / (delta + a[1] + eta_l2_shift);
        p += row_w[k] * x[k];
    }
    return p;
}

/* The dual-averaging weights of four (u, root) pairs, lane by lane:
 * w = -copysign(eta e / ((delta + root) + l2_shift), u) if the excess
 * e = |u| - l1_shift is positive, else 0 (so 0 for u = 0).  The same
 * operations as the scalar da_weight, in the same order, so the same
 * numbers.  Branch-free: whether a weight is past its threshold is
 * unpredictable. */
__attribute__((target("avx")))
static inline __m256d da_weights_avx(__m256d u, __m256d root, double eta, double delta,
                                     double l1_shift, double l2_shift)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d excess = _mm256_sub_pd(_mm256_andnot_pd(sign, u), _mm256_set1_pd(l1_shift));
    __m256d den = _mm256_add_pd(_mm256_add_pd(_mm256_set1_pd(delta), root),
                                _mm256_set1_pd(l2_shift));
    __m256d mag = _mm256_div_pd(_mm256_mul_pd(_mm256_set1_pd(eta), excess), den);
    /* -copysign(mag, u): mag >= 0 where it is kept, so flip u's sign */
    __m256d w = _mm256_xor_pd(_mm256_or_pd(mag, _mm256_and_pd(sign, u)), sign);
    return _mm256_and_pd(w, _mm256_cmp_pd(excess, _mm256_setzero_pd(), _CMP_GT_OQ));
}

/* The l1 dual-averaging margin: sum over k of w_j x[k], j = idx[k], w_j the
 * weight of da_weights_avx from (u_j, root_j) = (acc[2j], acc[2j + 1]).  A
 * zero weight adds nothing (the sum is never -0), so adding its product is
 * the same as skipping it, as the scalar loop does. */
__attribute__((target("avx")))
static inline double threshold_quotient_sum_avx(const double *acc, const int32_t *idx,
                                                const double *x, ptrdiff_t nnz, double eta,
                                                double delta, double l1_shift, double l2_shift)
{
    __m256d u, root;
    double p = 0.0;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        gather_pairs_avx(acc, idx + k, &u, &root);
        __m256d w = da_weights_avx(u, root, eta, delta, l1_shift, l2_shift);
        p = add_lanes_in_order(p, _mm256_mul_pd(w, _mm256_loadu_pd(x + k)));
    }
    for (; k < nnz; k++) {
        const double *a = acc + 2 * (ptrdiff_t)idx[k];
        double e = fabs(a[0]) - l1_shift;
        if (e > 0.0)
            p += -copysign(eta * e / (delta + a[1] + l2_shift), a[0]) * x[k];
    }
    return p;
}

/* For every k with x[k] != 0 and g = d x[k]: acc[2j] += g and
 * acc[2j + 1] = sqrt(acc[2j + 1]^2 + g^2), j = idx[k] (distinct within a
 * row).  Zero entries (of a dense row) are left alone, as in the scalar
 * loop: sqrt(r^2) need not give back r exactly.  Returns how many
 * entries it did (nnz rounded down to a multiple of four): the caller does
 * the rest; sets *nonfinite to 1 if a value it wrote is NaN or infinite. */
__attribute__((target("avx")))
static inline ptrdiff_t root_update_avx(double *acc, const int32_t *idx, const double *x,
                                        ptrdiff_t nnz, double d, int *nonfinite)
{
    const __m256d zero = _mm256_setzero_pd();
    const __m256d d4 = _mm256_set1_pd(d);
    __m256d bad = zero;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        __m256d u, root;
        gather_pairs_avx(acc, idx + k, &u, &root);
        __m256d g = _mm256_mul_pd(d4, _mm256_loadu_pd(x + k));
        __m256d idle = _mm256_cmp_pd(_mm256_loadu_pd(x + k), zero, _CMP_EQ_OQ);
        u = select_avx(_mm256_add_pd(u, g), u, idle);
        root = select_avx(grown_roots_avx(root, g), root, idle);
        bad = _mm256_or_pd(bad, _mm256_or_pd(nonfinite_lanes_avx(u),
                                             nonfinite_lanes_avx(root)));
        scatter_pairs_avx(acc, idx + k, u, root);
    }
    *nonfinite = _mm256_movemask_pd(bad) != 0;
    return k;
}

/* The K pairs (acc[2k], acc[2k + 1]) = (u_k, root_k) of classes k .. k + 3,
 * side by side in memory, as two vectors: lane m holds class k + m's. */
__attribute__((target("avx")))
static inline void load_class_pairs_avx(const double *acc, __m256d *u, __m256d *root)
{
    __m256d lo = _mm256_loadu_pd(acc);      /* u0 r0 u1 r1 */
    __m256d hi = _mm256_loadu_pd(acc + 4);  /* u2 r2 u3 r3 */
    __m256d even = _mm256_permute2f128_pd(lo, hi, 0x20);  /* u0 r0 u2 r2 */
    __m256d odd = _mm256_permute2f128_pd(lo, hi, 0x31);   /* u1 r1 u3 r3 */
    *u = _mm256_unpacklo_pd(even, odd);
    *root = _mm256_unpackhi_pd(even, odd);
}

/* Multinomial dual averaging, the classes of one feature (acc: its K
 * pairs): scores[k] += w_k xj with w_k the weight of da_weights_avx, in the
 * scalar loop's arithmetic. */
__attribute__((target("avx")))
static inline void class_scores_avx(const double *acc, ptrdiff_t n_classes, double xj,
                                    double eta, double delta, double l1_shift,
                                    double l2_shift, double *scores)
{
    const __m256d x4 = _mm256_set1_pd(xj);
    __m256d u, root;
    ptrdiff_t k = 0;
    for (; k + 3 < n_classes; k += 4) {
        load_class_pairs_avx(acc + 2 * k, &u, &root);
        __m256d w = da_weights_avx(u, root, eta, delta, l1_shift, l2_shift);
        _mm256_storeu_pd(scores + k, _mm256_add_pd(_mm256_loadu_pd(scores + k),
                                                   _mm256_mul_pd(w, x4)));
    }
    for (; k < n_classes; k++) {
        double e = fabs(acc[2 * k]) - l1_shift;
        double w = e > 0.0 ? -copysign(eta * e / (delta + acc[2 * k + 1] + l2_shift),
                                       acc[2 * k]) : 0.0;
        scores[k] += w * xj;
    }
}

/* The sums' step of the classes of one feature for the gradient xj d:
 * u_k += g_k and root_k = sqrt(root_k^2 + g_k^2) where g_k = d_k xj is not
 * zero; the others are left as they are (sqrt(r^2) need not give r). */
__attribute__((target("avx")))
static inline void class_sums_step_avx(double *acc, ptrdiff_t n_classes, double xj,
                                       const double *d)
{
    const __m256d zero = _mm256_setzero_pd();
    const __m256d x4 = _mm256_set1_pd(xj);
    __m256d u, root;
    ptrdiff_t k = 0;
    for (; k + 3 < n_classes; k += 4) {
        __m256d g = _mm256_mul_pd(_mm256_loadu_pd(d + k), x4);
        load_class_pairs_avx(acc + 2 * k, &u, &root);
        __m256d idle = _mm256_cmp_pd(g, zero, _CMP_EQ_OQ);
        u = select_avx(_mm256_add_pd(u, g), u, idle);
        root = select_avx(grown_roots_avx(root, g), root, idle);
        __m256d even = _mm256_unpacklo_pd(u, root);  /* u0 r0 u2 r2 */
        __m256d odd = _mm256_unpackhi_pd(u, root);   /* u1 r1 u3 r3 */
        _mm256_storeu_pd(acc + 2 * k, _mm256_permute2f128_pd(even, odd, 0x20));
        _mm256_storeu_pd(acc + 2 * k + 4, _mm256_permute2f128_pd(even, odd, 0x31));
    }
    for (; k < n_classes; k++) {
        double g = d[k] * xj;
        if (g != 0.0) {
            acc[2 * k] += g;
            acc[2 * k + 1] = sqrt(acc[2 * k + 1] * acc[2 * k + 1] + g * g);
        }
    }
}

/* FTRL-Proximal's step for the gradient d x of a row (ftrl_update of
 * _adagrad_fast.pyx) on four entries at a time: for every k with
 * x[k] != 0, j = idx[k] (distinct within a row), g = d x[k], root =
 * acc[2j + 1] and fresh = sqrt(root^2 + g^2): acc[2j] += g - (fresh - root)
 * / eta * row_w[k] and acc[2j + 1] = fresh.  The square roots and divisions
 * in four lanes, the scalar loop's operations in its order, so the same
 * bits.  Returns how many entries it did (nnz rounded down to a multiple of
 * four): the caller does the rest; sets *nonfinite to 1 if a value it wrote
 * is NaN or infinite. */
__attribute__((target("avx")))
static inline ptrdiff_t ftrl_step_avx(double *acc, const int32_t *idx, const double *x,
                                      const double *row_w, ptrdiff_t nnz, double d,
                                      double inv_eta, int *nonfinite)
{
    const __m256d zero = _mm256_setzero_pd();
    const __m256d d4 = _mm256_set1_pd(d);
    const __m256d inv_eta4 = _mm256_set1_pd(inv_eta);
    __m256d bad = zero;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        __m256d z, root;
        gather_pairs_avx(acc, idx + k, &z, &root);
        __m256d g = _mm256_mul_pd(d4, _mm256_loadu_pd(x + k));
        __m256d idle = _mm256_cmp_pd(_mm256_loadu_pd(x + k), zero, _CMP_EQ_OQ);
        __m256d fresh = grown_roots_avx(root, g);
        __m256d sigma = _mm256_mul_pd(_mm256_sub_pd(fresh, root), inv_eta4);
        __m256d z_step = _mm256_sub_pd(g, _mm256_mul_pd(sigma, _mm256_loadu_pd(row_w + k)));
        z = select_avx(_mm256_add_pd(z, z_step), z, idle);
        root = select_avx(fresh, root, idle);
        bad = _mm256_or_pd(bad, _mm256_or_pd(nonfinite_lanes_avx(z),
                                             nonfinite_lanes_avx(root)));
        scatter_pairs_avx(acc, idx + k, z, root);
    }
    *nonfinite = _mm256_movemask_pd(bad) != 0;
    return k;
}

/* Four lanes of adaprox_pow2. */
__attribute__((target("avx")))
static inline __m256d pow2_avx(__m256d n)
{
    __m256i b = _mm256_castpd_si256(_mm256_add_pd(n, _mm256_set1_pd(ADAPROX_ROUND_MAGIC + 1023.0)));
    __m128i lo = _mm_slli_epi64(_mm256_castsi256_si128(b), 52);
    __m128i hi = _mm_slli_epi64(_mm256_extractf128_si256(b, 1), 52);
    return _mm256_castsi256_pd(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1));
}

/* Four lanes of adaprox_exp_series and adaprox_log_series. */
#define ADAPROX_PAIR_AVX(c, i, x) \
    _mm256_add_pd(_mm256_set1_pd((c)[i]), _mm256_mul_pd(_mm256_set1_pd((c)[(i) + 1]), (x)))
#define ADAPROX_ADD_MUL_AVX(a, b, x) _mm256_add_pd((a), _mm256_mul_pd((b), (x)))

__attribute__((target("avx")))
static inline __m256d exp_series_avx(__m256d x)
{
    const double *c = ADAPROX_EXP_TERMS;
    __m256d x2 = _mm256_mul_pd(x, x), x4 = _mm256_mul_pd(x2, x2), x8 = _mm256_mul_pd(x4, x4);
    __m256d q0 = ADAPROX_ADD_MUL_AVX(ADAPROX_PAIR_AVX(c, 0, x), ADAPROX_PAIR_AVX(c, 2, x), x2);
    __m256d q1 = ADAPROX_ADD_MUL_AVX(ADAPROX_PAIR_AVX(c, 4, x), ADAPROX_PAIR_AVX(c, 6, x), x2);
    __m256d q2 = ADAPROX_ADD_MUL_AVX(ADAPROX_PAIR_AVX(c, 8, x), ADAPROX_PAIR_AVX(c, 10, x), x2);
    return ADAPROX_ADD_MUL_AVX(ADAPROX_ADD_MUL_AVX(q0, q1, x4), q2, x8);
}

__attribute__((target("avx")))
static inline __m256d log_series_avx(__m256d x)
{
    const double *c = ADAPROX_LOG_TERMS;
    __m256d x2 = _mm256_mul_pd(x, x), x4 = _mm256_mul_pd(x2, x2), x8 = _mm256_mul_pd(x4, x4);
    __m256d q0 = ADAPROX_ADD_MUL_AVX(ADAPROX_PAIR_AVX(c, 0, x), ADAPROX_PAIR_AVX(c, 2, x), x2);
    __m256d q1 = ADAPROX_ADD_MUL_AVX(ADAPROX_PAIR_AVX(c, 4, x), ADAPROX_PAIR_AVX(c, 6, x), x2);
    return ADAPROX_ADD_MUL_AVX(ADAPROX_ADD_MUL_AVX(q0, q1, x4), ADAPROX_PAIR_AVX(c, 8, x), x8);
}

/* Four lanes of adaprox_log1p_small, operation for operation. */
__attribute__((target("avx")))
static inline __m256d log1p_small_avx(__m256d x)
{
    __m256d p = _mm256_set1_pd(-0.1);
    p = _mm256_add_pd(_mm256_set1_pd(1.0 / 9.0), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(-0.125), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(1.0 / 7.0), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(-1.0 / 6.0), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(0.2), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(-0.25), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(1.0 / 3.0), _mm256_mul_pd(x, p));
    p = _mm256_add_pd(_mm256_set1_pd(-0.5), _mm256_mul_pd(x, p));
    return _mm256_add_pd(x, _mm256_mul_pd(_mm256_mul_pd(x, x), p));
}

/* Four lanes of adaprox_log1p's reduction, operation for operation. */
__attribute__((target("avx")))
static inline __m256d log1p_reduced_avx(__m256d x)
{
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    __m256d u = _mm256_add_pd(one, x);
    __m256i b = _mm256_castpd_si256(u);
    __m128i lo = _mm_srli_epi64(_mm256_castsi256_si128(b), 52);
    __m128i hi = _mm_srli_epi64(_mm256_extractf128_si256(b, 1), 52);
    /* the biased exponent, below 2^11, as the low bits of 2^52's mantissa:
     * the subtraction gives it less 1023, exactly */
    __m256d biased = _mm256_or_pd(
        _mm256_castsi256_pd(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1)), two52);
    __m256d e = _mm256_sub_pd(biased, _mm256_set1_pd(4503599627370496.0 + 1023.0));
    __m256d m = _mm256_or_pd(
        _mm256_and_pd(u, _mm256_castsi256_pd(_mm256_set1_epi64x((long long)ADAPROX_MANTISSA_BITS))),
        one);
    __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(ADAPROX_SQRT2), _CMP_GT_OQ);
    m = select_avx(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
    e = select_avx(e, _mm256_add_pd(e, one), big);
    __m256d f = select_avx(_mm256_sub_pd(m, one), x,
                           _mm256_cmp_pd(e, _mm256_setzero_pd(), _CMP_EQ_OQ));
    __m256d s = _mm256_div_pd(f, _mm256_add_pd(_mm256_set1_pd(2.0), f));
    __m256d z = _mm256_mul_pd(s, s);
    __m256d log_m = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(2.0), s),
                                  _mm256_mul_pd(s, _mm256_mul_pd(z, log_series_avx(z))));
    __m256d log_u = _mm256_add_pd(
        _mm256_mul_pd(e, _mm256_set1_pd(ADAPROX_LN2_HI)),
        _mm256_add_pd(log_m, _mm256_mul_pd(e, _mm256_set1_pd(ADAPROX_LN2_LO))));
    __m256d itself = _mm256_or_pd(_mm256_cmp_pd(u, one, _CMP_EQ_OQ),
                                  _mm256_cmp_pd(x, _mm256_set1_pd(DBL_MAX), _CMP_GT_OQ));
    return select_avx(log_u, x, itself);
}

/* Four lanes of adaprox_log1p: the series where x is small, the reduction
 * elsewhere, each lane as the scalar function takes it (the reduction is
 * skipped when every lane is small). */
__attribute__((target("avx")))
static inline __m256d log1p_avx(__m256d x)
{
    __m256d small = _mm256_cmp_pd(x, _mm256_set1_pd(ADAPROX_LOG1P_SMALL), _CMP_LE_OQ);
    __m256d series = log1p_small_avx(x);
    if (_mm256_movemask_pd(small) == 0xF)
        return series;
    return select_avx(log1p_reduced_avx(x), series, small);
}

/* Four lanes of adaprox_exp_pair, operation for operation. */
__attribute__((target("avx")))
static inline void exp_pair_avx(__m256d y, __m256d *exp_y, __m256d *one_minus)
{
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d magic = _mm256_set1_pd(ADAPROX_ROUND_MAGIC);
    y = _mm256_max_pd(y, _mm256_set1_pd(ADAPROX_EXP_FLOOR));
    __m256d n = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(y, _mm256_set1_pd(ADAPROX_INV_LN2)),
                                            magic), magic);
    __m256d r = _mm256_sub_pd(_mm256_sub_pd(y, _mm256_mul_pd(n, _mm256_set1_pd(ADAPROX_LN2_HI))),
                              _mm256_mul_pd(n, _mm256_set1_pd(ADAPROX_LN2_LO)));
    __m256d q = _mm256_add_pd(r, _mm256_mul_pd(_mm256_mul_pd(r, r),
                                               exp_series_avx(r)));
    __m256d half = _mm256_floor_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), n));
    __m256d scale_a = pow2_avx(half), scale_b = pow2_avx(_mm256_sub_pd(n, half));
    __m256d scale = _mm256_mul_pd(scale_a, scale_b);
    *exp_y = _mm256_mul_pd(_mm256_mul_pd(_mm256_add_pd(one, q), scale_a), scale_b);
    *one_minus = _mm256_sub_pd(_mm256_sub_pd(one, scale), _mm256_mul_pd(scale, q));
}

/* Mirror descent's catch-up (md_idle_steps of _adagrad_rules.pxd) on four
 * weights at a time, in place: w[k] becomes the weight after idle[k] steps
 * without a gradient, its root being root[k].  Same operations in the same
 * order as md_idle_steps, so the same bits; branch-free (which weights have
 * reached zero is unpredictable).  Returns how many entries it did (nnz
 * rounded down to a multiple of four): the caller does the rest.  One
 * division a lane (r, and a only where r is 0) besides log1p's: the l1
 * part's shrinkage a (1 - c^-k) / r is (l1 / l2) (1 - c^-k). */
__attribute__((target("avx")))
static inline ptrdiff_t md_idle_row_avx(double *w, const double *root, const double *idle,
                                        ptrdiff_t nnz, double eta, double delta, double l1,
                                        double l2)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d zero = _mm256_setzero_pd();
    const __m256d eta_l1 = _mm256_set1_pd(eta * l1);
    const __m256d eta_l2 = _mm256_set1_pd(eta * l2);
    const __m256d l1_per_l2 = _mm256_set1_pd(l2 != 0.0 ? l1 / l2 : 0.0);
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        __m256d wk = _mm256_loadu_pd(w + k);
        __m256d steps = _mm256_loadu_pd(idle + k);
        __m256d H = _mm256_add_pd(_mm256_set1_pd(delta), _mm256_loadu_pd(root + k));
        /* the weights that stay as they are (md_idle_steps returns them
         * before any arithmetic) */
        __m256d kept = _mm256_or_pd(_mm256_or_pd(_mm256_cmp_pd(steps, zero, _CMP_LE_OQ),
                                                 _mm256_cmp_pd(wk, zero, _CMP_EQ_OQ)),
                                    _mm256_cmp_pd(H, zero, _CMP_EQ_OQ));
        __m256d decay = _mm256_set1_pd(1.0), shrink;
        if (l2 != 0.0) {
            __m256d r = _mm256_div_pd(eta_l2, H);
            __m256d power, one_minus;
            /* a kept lane's log1p is of 0, so that its r (infinite where
             * H = 0: a weight that never moved) does not send the other
             * lanes through log1p's reduction */
            exp_pair_avx(_mm256_mul_pd(_mm256_xor_pd(steps, sign),
                                       log1p_avx(_mm256_andnot_pd(kept, r))),
                         &power, &one_minus);
            __m256d geometric = _mm256_cmp_pd(r, zero, _CMP_GT_OQ);
            decay = select_avx(decay, power, geometric);
            shrink = _mm256_mul_pd(l1_per_l2, one_minus);
            if (_mm256_movemask_pd(geometric) != 0xF)  /* r underflowed to 0 */
                shrink = select_avx(_mm256_mul_pd(_mm256_div_pd(eta_l1, H), steps),
                                    shrink, geometric);
        } else {
            /* r = 0 (no l2 part): nothing decays, each step shrinks by a */
            shrink = _mm256_mul_pd(_mm256_div_pd(eta_l1, H), steps);
        }
        __m256d mag = _mm256_sub_pd(_mm256_mul_pd(_mm256_andnot_pd(sign, wk), decay), shrink);
        /* copysign(mag, w) where mag > 0, else 0 */
        __m256d moved = _mm256_and_pd(_mm256_or_pd(mag, _mm256_and_pd(sign, wk)),
                                      _mm256_cmp_pd(mag, zero, _CMP_GT_OQ));
        _mm256_storeu_pd(w + k, select_avx(moved, wk, kept));
    }
    return k;
}

/* Mirror descent's step for the gradient d x of a row (md_update of
 * _adagrad_fast.pyx) on four entries at a time.  Coordinate j's entry is
 * acc[4j .. 4j + 3] = (u, root, w, s), the weight w current at step s (a
 * double).  For every k with x[k] != 0, j = idx[k] (distinct within a row)
 * and g = d x[k]: u += g, root = sqrt(root^2 + g^2), H = delta + root and,
 * if H > 0, w = md_prox(w - eta g / H, H) and s = t (the plain step without
 * a penalty, and no step kept).  The four entries are loaded whole and
 * transposed, so that lane m of u, root, w and s is entry m's.  The square roots and
 * divisions in four lanes, the same operations in the same order as the
 * scalar loop, so the same bits.  Returns how many entries it did (nnz
 * rounded down to a multiple of four): the caller does the rest.  Sets
 * *nonfinite_sums (*nonfinite_weights) to 1 if a value it wrote to acc (to
 * w) is NaN or infinite. */
__attribute__((target("avx")))
static inline ptrdiff_t md_step_avx(double *acc, const int32_t *idx, const double *x,
                                    ptrdiff_t nnz, double d, double t, double eta,
                                    double delta, double l1, double l2, int penalised,
                                    int *nonfinite_sums, int *nonfinite_weights)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d zero = _mm256_setzero_pd();
    const __m256d d4 = _mm256_set1_pd(d);
    const __m256d eta4 = _mm256_set1_pd(eta);
    const __m256d t4 = _mm256_set1_pd(t);
    __m256d bad_sums = zero, bad_weights = zero;
    ptrdiff_t k = 0, m;
    for (; k + 3 < nnz; k += 4) {
        double *e[4];
        for (m = 0; m < 4; m++)
            e[m] = acc + 4 * (ptrdiff_t)idx[k + m];
        __m256d u, root, wk, steps;
        transpose_entries_avx(_mm256_loadu_pd(e[0]), _mm256_loadu_pd(e[1]),
                              _mm256_loadu_pd(e[2]), _mm256_loadu_pd(e[3]),
                              &u, &root, &wk, &steps);
        const __m256d old_u = u, old_root = root, old_w = wk;
        __m256d g = _mm256_mul_pd(d4, _mm256_loadu_pd(x + k));
        __m256d idle = _mm256_cmp_pd(_mm256_loadu_pd(x + k), zero, _CMP_EQ_OQ);
        root = grown_roots_avx(root, g);
        __m256d H = _mm256_add_pd(_mm256_set1_pd(delta), root);
        __m256d z = _mm256_sub_pd(wk, _mm256_div_pd(_mm256_mul_pd(eta4, g), H));
        if (penalised) {
            __m256d mag = _mm256_sub_pd(_mm256_andnot_pd(sign, z),
                                        _mm256_div_pd(_mm256_set1_pd(eta * l1), H));
            __m256d scaled = _mm256_div_pd(
                mag, _mm256_add_pd(_mm256_set1_pd(1.0),
                                   _mm256_div_pd(_mm256_set1_pd(eta * l2), H)));
            z = _mm256_and_pd(_mm256_or_pd(scaled, _mm256_and_pd(sign, z)),
                              _mm256_cmp_pd(mag, zero, _CMP_GT_OQ));
        }
        /* the lanes written: x != 0 for the sums, and H > 0 for the weight */
        __m256d moves = _mm256_andnot_pd(idle, _mm256_cmp_pd(H, zero, _CMP_GT_OQ));
        u = _mm256_add_pd(u, g);
        bad_sums = _mm256_or_pd(bad_sums, _mm256_andnot_pd(
            idle, _mm256_or_pd(nonfinite_lanes_avx(u), nonfinite_lanes_avx(root))));
        bad_weights = _mm256_or_pd(bad_weights, _mm256_and_pd(moves, nonfinite_lanes_avx(z)));
        /* a lane of x = 0 keeps its entry (the zeros of a dense row), a
         * lane with H = 0 its weight and step */
        u = select_avx(u, old_u, idle);
        root = select_avx(root, old_root, idle);
        wk = select_avx(old_w, z, moves);
        if (penalised)
            steps = select_avx(steps, t4, moves);
        __m256d out0, out1, out2, out3;
        transpose_entries_avx(u, root, wk, steps, &out0, &out1, &out2, &out3);
        _mm256_storeu_pd(e[0], out0);
        _mm256_storeu_pd(e[1], out1);
        _mm256_storeu_pd(e[2], out2);
        _mm256_storeu_pd(e[3], out3);
    }
    *nonfinite_sums = _mm256_movemask_pd(bad_sums) != 0;
    *nonfinite_weights = _mm256_movemask_pd(bad_weights) != 0;
    return k;
}

#else
#include <stdint.h>

static inline int avx_available(void) { return 0; }

static inline ptrdiff_t ftrl_step_avx(double *acc, const int32_t *idx, const double *x,
                                      const double *row_w, ptrdiff_t nnz, double d,
                                      double inv_eta, int *nonfinite)
{
    (void)acc; (void)idx; (void)x; (void)row_w; (void)nnz; (void)d; (void)inv_eta;
    *nonfinite = 0;
    return 0;  /* never called: avx_available() is 0 */
}

static inline ptrdiff_t md_step_avx(double *acc, const int32_t *idx, const double *x,
                                    ptrdiff_t nnz, double d, double t, double eta,
                                    double delta, double l1, double l2, int penalised,
                                    int *nonfinite_sums, int *nonfinite_weights)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)d; (void)t;
    (void)eta; (void)delta; (void)l1; (void)l2; (void)penalised;
    *nonfinite_sums = *nonfinite_weights = 0;
    return 0;  /* never called: avx_available() is 0 */
}

static inline ptrdiff_t md_idle_row_avx(double *w, const double *root, const double *idle,
                                        ptrdiff_t nnz, double eta, double delta, double l1,
                                        double l2)
{
    (void)w; (void)root; (void)idle; (void)nnz; (void)eta; (void)delta; (void)l1; (void)l2;
    return 0;  /* never called: avx_available() is 0 */
}

static inline void class_scores_avx(const double *acc, ptrdiff_t n_classes, double xj,
                                    double eta, double delta, double l1_shift,
                                    double l2_shift, double *scores)
{
    (void)acc; (void)n_classes; (void)xj; (void)eta; (void)delta; (void)l1_shift;
    (void)l2_shift; (void)scores;  /* never called: avx_available() is 0 */
}

static inline void class_sums_step_avx(double *acc, ptrdiff_t n_classes, double xj,
                                       const double *d)
{
    (void)acc; (void)n_classes; (void)xj; (void)d;  /* never called */
}

static inline double quotient_sum_avx(const double *acc, const int32_t *idx, const double *x,
                               ptrdiff_t nnz, double shift)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)shift;
    return 0.0;  /* never called: avx_available() is 0 */
}

static inline ptrdiff_t root_update_avx(double *acc, const int32_t *idx, const double *x,
                                        ptrdiff_t nnz, double d, int *nonfinite)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)d;
    *nonfinite = 0;
    return 0;  /* never called: avx_available() is 0 */
}

static inline double threshold_quotient_sum_avx(const double *acc, const int32_t *idx,
                                                const double *x, ptrdiff_t nnz, double eta,
                                                double delta, double l1_shift, double l2_shift)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)eta; (void)delta; (void)l1_shift;
    (void)l2_shift;
    return 0.0;  /* never called: avx_available() is 0 */
}

static inline double ftrl_row_weights_avx(const double *acc, const int32_t *idx,
                                          const double *x, ptrdiff_t nnz, double *row_w,
                                          double eta, double delta, double l1_shift,
                                          double eta_l2_shift)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)row_w; (void)eta; (void)delta;
    (void)l1_shift; (void)eta_l2_shift;
    return 0.0;  /* never called: avx_available() is 0 */
}
#endif

#if defined(SKLEARN_ADAPROX_HAVE_SSE2) && defined(SKLEARN_ADAPROX_HAVE_AVX)
#define SKLEARN_ADAPROX_SIMD_PATHS "sse2+avx"
#elif defined(SKLEARN_ADAPROX_HAVE_SSE2)
#define SKLEARN_ADAPROX_SIMD_PATHS "sse2"
#elif defined(SKLEARN_ADAPROX_HAVE_AVX)
#define SKLEARN_ADAPROX_SIMD_PATHS "avx"
#else
#define SKLEARN_ADAPROX_SIMD_PATHS "scalar"
#endif

#endif
