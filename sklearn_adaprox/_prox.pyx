"""Exact proximal solvers with a diagonal metric (AdaGrad's structured penalties).

Duchi, Hazan & Singer (2011), "Adaptive Subgradient Methods for Online
Learning and Stochastic Optimization", JMLR 12, section 5, reduce the AdaGrad
step for the l2 (group) penalty, the l-infinity penalty and the l1-ball
constraint under the metric ``diag(H)`` to two primitives:

* a one-dimensional root (the l2 case: ``alpha(theta) = -(D^-1 + theta I)^-1
  D^-1 v`` with ``||alpha|| = lam``), found here by Newton's method on the
  concave secular equation ``1 / ||alpha(theta)|| = 1 / lam``, monotone from
  a bracketing start, run until a step no longer moves ``theta`` (the paper
  suggests bisection; Newton reaches the same root to round-off in a few
  steps);
* a projection onto a weighted l1 ball, ``min 0.5 ||z - q||^2`` s.t.
  ``sum a_i |z_i| <= c``, solved by the sort-based threshold of the paper's
  Figure 3: with ``r_i = |q_i| / a_i`` in decreasing order, ``rho`` is the
  largest index with ``sum_{j<=rho} a_j |q_j| - r_rho sum_{j<=rho} a_j^2 < c``,
  ``theta = (sum_{j<=rho} a_j |q_j| - c) / sum_{j<=rho} a_j^2`` and
  ``z_i = sign(q_i) max(|q_i| - theta a_i, 0)``.

The l-infinity prox (through its dual, an l1-ball projection in the metric
``D^-1``) and the l1-ball solve (through ``z = D^1/2 x``) are both instances
of the projection.  Written out, the substitutions cancel every square root:
only the triples ``(r_i, a_i |q_i|, a_i^2)`` enter the threshold, and they are

* l-infinity: ``(|v_i| / D_i, |v_i|, D_i)``, then
  ``x_i = -sign(v_i) min(|v_i| / D_i, theta)`` (clip the unpenalised step);
* l1 ball: ``(|v_i|, |v_i| / D_i, 1 / D_i)``, then
  ``x_i = -sign(v_i) max(|v_i| - theta, 0) / D_i`` (soft threshold).

Computing ``x`` from ``theta`` this way rather than as ``-(v - beta) / D``
from the dual variable avoids a cancellation and yields exact zeros.

Instead of a full sort, the threshold search puts the triples in a binary
max-heap keyed by ``r`` (O(n)) and pops them in decreasing order only until
the condition fails, so it costs O(n + k log n) where k is the number of
coordinates above the threshold; O(n log n) at worst.  Entries with
``r_i == 0`` never enter the heap: they cannot be above a nonnegative
threshold.
"""
import numpy as np

from libc.math cimport copysign, fabs, fmax, fmin, sqrt


cdef Py_ssize_t prox_work_size(Py_ssize_t n) noexcept nogil:
    # One triple (r, a|q|, a^2) per coordinate for the threshold heap.
    return 3 * n if n > 0 else 1


# ----------------------------------------------------------------------
# Threshold of the weighted l1 projection from packed triples.
# heap[3k] = r_k (key), heap[3k + 1] = a_k |q_k|, heap[3k + 2] = a_k^2.

cdef inline void _sift_down(double* heap, Py_ssize_t k, Py_ssize_t m) noexcept nogil:
    """Restore the max-heap order below position k of a heap of m triples."""
    cdef double r = heap[3 * k], aq = heap[3 * k + 1], aa = heap[3 * k + 2]
    cdef Py_ssize_t child
    while True:
        child = 2 * k + 1
        if child >= m:
            break
        if child + 1 < m and heap[3 * child + 3] > heap[3 * child]:
            child += 1
        if not heap[3 * child] > r:
            break
        # move the larger child up into the hole at k
        heap[3 * k] = heap[3 * child]
        heap[3 * k + 1] = heap[3 * child + 1]
        heap[3 * k + 2] = heap[3 * child + 2]
        k = child
    heap[3 * k] = r
    heap[3 * k + 1] = aq
    heap[3 * k + 2] = aa


cdef double _l1_threshold(double* heap, Py_ssize_t m, double total,
                          double c) noexcept nogil:
    """Multiplier theta >= 0 of the weighted l1 projection (Figure 3).

    ``heap`` holds m triples with r > 0 in any order (it is reordered);
    ``total`` is the sum of their a|q| (the constraint's value at z = q).
    Returns 0 when the point is feasible.
    """
    cdef Py_ssize_t k
    cdef double s1 = 0.0, s2 = 0.0, r_last = 0.0, r_next = 0.0
    cdef double r, aq, aa, theta
    if m == 0 or total <= c:
        return 0.0
    if not c > 0.0:
        # Radius 0: everything goes, theta is the largest ratio.
        r = 0.0
        for k in range(m):
            r = fmax(r, heap[3 * k])
        return r
    for k in range(m // 2 - 1, -1, -1):
        _sift_down(heap, k, m)
    # Pop in decreasing r while the popped element stays above the threshold
    # it would give; the left-hand side is nondecreasing along the order, so
    # the first failure ends the search.  The first element always passes in
    # exact arithmetic (its left-hand side is 0 < c): accept it regardless of
    # round-off (r_last > 0 once an element has been accepted, as every r > 0).
    while m > 0:
        r = heap[0]
        aq = heap[1]
        aa = heap[2]
        if r_last > 0.0 and not (s1 + aq) - r * (s2 + aa) < c:
            r_next = r
            break
        s1 += aq
        s2 += aa
        r_last = r
        m -= 1
        if m > 0:
            heap[0] = heap[3 * m]
            heap[1] = heap[3 * m + 1]
            heap[2] = heap[3 * m + 2]
            _sift_down(heap, 0, m)
    theta = (s1 - c) / s2
    # In exact arithmetic r_next <= theta < r_last; clamp away round-off so
    # that the coordinates below the threshold are exactly zero.
    return fmin(fmax(theta, r_next), r_last)


# ----------------------------------------------------------------------
# The solvers (declared in _prox.pxd).

cdef void weighted_l1_projection(const double* q, const double* a, Py_ssize_t n,
                                 double c, double* z, double* work) noexcept nogil:
    cdef Py_ssize_t i, m = 0
    cdef double total = 0.0, aq, theta
    for i in range(n):
        if a[i] > 0.0 and q[i] != 0.0:
            aq = a[i] * fabs(q[i])
            work[3 * m] = fabs(q[i]) / a[i]
            work[3 * m + 1] = aq
            work[3 * m + 2] = a[i] * a[i]
            total += aq
            m += 1
    theta = _l1_threshold(work, m, total, c)
    for i in range(n):
        if theta == 0.0 or not a[i] > 0.0:
            z[i] = q[i]
        else:
            z[i] = copysign(fmax(fabs(q[i]) - theta * a[i], 0.0), q[i])


cdef enum:
    # Cap on the Newton iterations of group_l2_prox; monotone convergence
    # from the left takes a handful, the cap is a guard.
    GROUP_NEWTON_MAX_ITER = 100


cdef void group_l2_prox(const double* v, const double* D, Py_ssize_t n,
                        double lam, double* x) noexcept nogil:
    cdef Py_ssize_t i
    cdef double norm2 = 0.0, norm, d_min = 0.0, d_max = 0.0
    cdef double lo, hi, theta, new_theta, phi, slope, e, r
    cdef bint first = True
    cdef int _it
    for i in range(n):
        if D[i] > 0.0 and v[i] != 0.0:
            norm2 += v[i] * v[i]
            if first:
                d_min = D[i]
                d_max = D[i]
                first = False
            else:
                d_min = fmin(d_min, D[i])
                d_max = fmax(d_max, D[i])
    norm = sqrt(norm2)
    if norm <= lam:
        for i in range(n):
            x[i] = 0.0
        return
    if not lam > 0.0:
        # No penalty: the unconstrained minimiser -v / D.
        for i in range(n):
            x[i] = -v[i] / D[i] if D[i] > 0.0 else 0.0
        return
    # phi(theta) = sum_i v_i^2 / (1 + theta D_i)^2 decreases from ||v||^2 and
    # ||v|| / (1 + theta D_max) <= sqrt(phi) <= ||v|| / (1 + theta D_min), so
    # the root of sqrt(phi) = lam lies in [excess / D_max, excess / D_min]
    # (a single point, the closed form, when the D_i are equal).
    lo = (norm / lam - 1.0) / d_max
    hi = (norm / lam - 1.0) / d_min
    theta = lo
    if lo < hi:
        # Newton on psi(theta) = 1 / sqrt(phi(theta)) - 1 / lam: this is the
        # secular equation of a trust-region step (v_i / D_i over
        # 1 / D_i + theta), and psi is increasing and concave, so Newton from
        # the left end of the bracket climbs monotonically to the root and
        # never overshoots (in exact arithmetic); it stops when a step no
        # longer moves theta, i.e. at the root to round-off.
        for _it in range(GROUP_NEWTON_MAX_ITER):
            phi = 0.0
            slope = 0.0  # -phi'(theta) / 2
            for i in range(n):
                if D[i] > 0.0:
                    r = 1.0 / (1.0 + theta * D[i])
                    e = v[i] * r
                    phi += e * e
                    slope += e * e * D[i] * r
            if not slope > 0.0:
                break
            new_theta = fmin(theta + phi * (sqrt(phi) / lam - 1.0) / slope, hi)
            if not new_theta > theta:
                break
            theta = new_theta
    for i in range(n):
        if D[i] > 0.0:
            x[i] = -theta * v[i] / (1.0 + theta * D[i])
        else:
            x[i] = 0.0


cdef void linf_prox(const double* v, const double* D, Py_ssize_t n, double lam,
                    double* x, double* work) noexcept nogil:
    # Dual: beta* = argmin 0.5 (beta - v)^T D^-1 (beta - v) s.t. ||beta||_1 <= lam
    # and x = -D^-1 (v - beta*).  With zeta = D^-1/2 beta it is the weighted
    # projection of q = v / sqrt(D) with a = sqrt(D), c = lam: triples
    # (|v|/D, |v|, D).  The theta of that projection is ||x||_inf.
    cdef Py_ssize_t i, m = 0
    cdef double total = 0.0, theta
    for i in range(n):
        if D[i] > 0.0 and v[i] != 0.0:
            work[3 * m] = fabs(v[i]) / D[i]
            work[3 * m + 1] = fabs(v[i])
            work[3 * m + 2] = D[i]
            total += fabs(v[i])
            m += 1
    theta = _l1_threshold(work, m, total, lam)
    for i in range(n):
        if D[i] > 0.0:
            x[i] = -copysign(fmin(fabs(v[i]) / D[i], theta), v[i])
        else:
            x[i] = 0.0


cdef void l1_ball_solve(const double* v, const double* D, Py_ssize_t n,
                        double radius, double* x, double* work) noexcept nogil:
    # With z = D^1/2 x the problem is the weighted projection of
    # q = -v / sqrt(D) with a = 1 / sqrt(D), c = radius: triples
    # (|v|, |v|/D, 1/D).  Here theta is the multiplier of ||x||_1 <= radius.
    cdef Py_ssize_t i, m = 0
    cdef double total = 0.0, theta, ratio
    for i in range(n):
        if D[i] > 0.0 and v[i] != 0.0:
            ratio = fabs(v[i]) / D[i]
            work[3 * m] = fabs(v[i])
            work[3 * m + 1] = ratio
            work[3 * m + 2] = 1.0 / D[i]
            total += ratio
            m += 1
    theta = _l1_threshold(work, m, total, radius)
    for i in range(n):
        if D[i] > 0.0:
            if theta == 0.0:
                x[i] = -v[i] / D[i]
            else:
                x[i] = -copysign(fmax(fabs(v[i]) - theta, 0.0), v[i]) / D[i]
        else:
            x[i] = 0.0


# ----------------------------------------------------------------------
# Python hooks for the tests.

def _as_vector(values, n=None):
    out = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    if n is not None and out.shape[0] != n:
        raise ValueError(f"expected {n} values, got {out.shape[0]}")
    return out


def _check_metric(double[::1] D):
    if np.any(np.asarray(D) < 0) or not np.all(np.isfinite(D)):
        raise ValueError("D must be finite and nonnegative")


cdef enum:
    PROJECTION = 0
    GROUP_L2 = 1
    LINF = 2
    L1_BALL = 3


def _solve(int solver, v, D, double strength, str strength_name):
    """Validate the inputs of a hook, run one solver, return its solution."""
    cdef double[::1] v_ = _as_vector(v)
    cdef double[::1] D_ = _as_vector(D, v_.shape[0])
    cdef Py_ssize_t n = v_.shape[0]
    if strength < 0:
        raise ValueError(f"{strength_name} must be >= 0")
    _check_metric(D_)
    x = np.zeros(n)
    cdef double[::1] x_ = x
    cdef double[::1] work = np.empty(prox_work_size(n))
    if n > 0:
        with nogil:
            if solver == PROJECTION:
                weighted_l1_projection(&v_[0], &D_[0], n, strength, &x_[0], &work[0])
            elif solver == GROUP_L2:
                group_l2_prox(&v_[0], &D_[0], n, strength, &x_[0])
            elif solver == LINF:
                linf_prox(&v_[0], &D_[0], n, strength, &x_[0], &work[0])
            else:
                l1_ball_solve(&v_[0], &D_[0], n, strength, &x_[0], &work[0])
    return x


def py_weighted_l1_projection(q, a, double c):
    """argmin_z 0.5 ||z - q||^2 s.t. sum_i a_i |z_i| <= c, as a NumPy array."""
    return _solve(PROJECTION, q, a, c, "c")


def py_group_l2_prox(v, D, double lam):
    """argmin_x <v, x> + 0.5 <x, diag(D) x> + lam ||x||_2, as a NumPy array."""
    return _solve(GROUP_L2, v, D, lam, "lam")


def py_linf_prox(v, D, double lam):
    """argmin_x <v, x> + 0.5 <x, diag(D) x> + lam ||x||_inf, as a NumPy array."""
    return _solve(LINF, v, D, lam, "lam")


def py_l1_ball_solve(v, D, double radius):
    """argmin_x <v, x> + 0.5 <x, diag(D) x> s.t. ||x||_1 <= radius, as an array."""
    return _solve(L1_BALL, v, D, radius, "radius")
