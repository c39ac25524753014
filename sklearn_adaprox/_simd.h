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
 * SKLEARN_ADAPROX_NO_SIMD (defined by setup.py when the environment
 * variable of that name is set at build time) compiles the plain fallbacks
 * only, as on targets other than x86, so that CI tests them on any machine.
 * SKLEARN_ADAPROX_SIMD_PATHS names the paths compiled in: "sse2+avx",
 * "sse2", "avx" or "scalar" (_adagrad_fast.SIMD_PATHS in Python; whether
 * the AVX loops run also depends on the CPU, see avx_available).
 */
#ifndef SKLEARN_ADAPROX_SIMD_H
#define SKLEARN_ADAPROX_SIMD_H

#include <math.h>
#include <stddef.h>

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
 * and -(z_j - copysign(l1_shift, z_j)) / ((delta + root_j) / eta +
 * l2_shift) otherwise; (z_j, root_j) = (acc[2j], acc[2j + 1]).  The
 * operations and their order are ftrl_weight's, so the weights and the sum
 * are bit-identical to the scalar loop's (a zero weight adds nothing). */
__attribute__((target("avx")))
static inline double ftrl_row_weights_avx(const double *acc, const int32_t *idx,
                                          const double *x, ptrdiff_t nnz, double *row_w,
                                          double eta, double delta, double l1_shift,
                                          double l2_shift)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d eta4 = _mm256_set1_pd(eta);
    const __m256d delta4 = _mm256_set1_pd(delta);
    const __m256d l1_4 = _mm256_set1_pd(l1_shift);
    const __m256d l2_4 = _mm256_set1_pd(l2_shift);
    __m256d z, root;
    double p = 0.0;
    ptrdiff_t k = 0;
    for (; k + 3 < nnz; k += 4) {
        gather_pairs_avx(acc, idx + k, &z, &root);
        __m256d kept = _mm256_cmp_pd(_mm256_andnot_pd(sign, z), l1_4, _CMP_GT_OQ);
        /* copysign(l1_shift, z), l1_shift >= 0 */
        __m256d num = _mm256_sub_pd(z, _mm256_or_pd(l1_4, _mm256_and_pd(sign, z)));
        __m256d den = _mm256_add_pd(_mm256_div_pd(_mm256_add_pd(delta4, root), eta4), l2_4);
        __m256d w = _mm256_and_pd(_mm256_xor_pd(_mm256_div_pd(num, den), sign), kept);
        _mm256_storeu_pd(row_w + k, w);
        p = add_lanes_in_order(p, _mm256_mul_pd(w, _mm256_loadu_pd(x + k)));
    }
    for (; k < nnz; k++) {
        const double *a = acc + 2 * (ptrdiff_t)idx[k];
        row_w[k] = fabs(a[0]) <= l1_shift ? 0.0
            : -(a[0] - copysign(l1_shift, a[0])) / ((delta + a[1]) / eta + l2_shift);
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
 * loop: sqrt(r^2) need not give back r exactly. */
__attribute__((target("avx")))
static inline void root_update_avx(double *acc, const int32_t *idx, const double *x,
                            ptrdiff_t nnz, double d)
{
    const __m256d zero = _mm256_setzero_pd();
    double r[4];
    ptrdiff_t k = 0, m;
    for (; k + 3 < nnz; k += 4) {
        double *a[4];
        double g[4];
        for (m = 0; m < 4; m++) {
            a[m] = acc + 2 * (ptrdiff_t)idx[k + m];
            g[m] = d * x[k + m];
            if (x[k + m] != 0.0)
                a[m][0] += g[m];
        }
        __m256d gv = _mm256_set_pd(g[3], g[2], g[1], g[0]);
        __m256d root = _mm256_set_pd(a[3][1], a[2][1], a[1][1], a[0][1]);
        __m256d fresh = _mm256_sqrt_pd(
            _mm256_add_pd(_mm256_mul_pd(root, root), _mm256_mul_pd(gv, gv)));
        __m256d idle = _mm256_cmp_pd(_mm256_loadu_pd(x + k), zero, _CMP_EQ_OQ);
        _mm256_storeu_pd(r, _mm256_blendv_pd(fresh, root, idle));
        for (m = 0; m < 4; m++)
            a[m][1] = r[m];
    }
    for (; k < nnz; k++) {
        double *a = acc + 2 * (ptrdiff_t)idx[k];
        double gk = d * x[k];
        if (x[k] == 0.0)
            continue;
        a[0] += gk;
        a[1] = sqrt(a[1] * a[1] + gk * gk);
    }
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
        u = _mm256_blendv_pd(_mm256_add_pd(u, g), u, idle);
        root = _mm256_blendv_pd(
            _mm256_sqrt_pd(_mm256_add_pd(_mm256_mul_pd(root, root), _mm256_mul_pd(g, g))),
            root, idle);
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

#else
#include <stdint.h>

static inline int avx_available(void) { return 0; }

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

static inline void root_update_avx(double *acc, const int32_t *idx, const double *x,
                            ptrdiff_t nnz, double d)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)d;
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
                                          double l2_shift)
{
    (void)acc; (void)idx; (void)x; (void)nnz; (void)row_w; (void)eta; (void)delta;
    (void)l1_shift; (void)l2_shift;
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
