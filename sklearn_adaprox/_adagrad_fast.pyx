"""Diagonal AdaGrad kernels (Duchi, Hazan & Singer 2011).

Three kernels, one per shape of the composite step:

* ``run_epoch``: one binary problem with an element-wise penalty (l1, l2,
  elastic net), lazy, O(nnz) per sample -- described below;
* ``run_epoch_global``: one binary problem with the l-infinity penalty or the
  l1-ball constraint, whose step couples every coordinate, O(d log d);
* ``run_epoch_multinomial``: one weight matrix for all classes, element-wise
  or mixed-norm penalties over its rows, O(n_classes nnz).

(Full-matrix AdaGrad is the dense linear algebra of ``_adagrad_full_fast``.)

One call of ``run_epoch`` makes one pass over the rows named by ``order`` for
one binary problem.  A step costs O(nnz of the row): a weight whose feature
is absent from the row is not touched and is brought up to date, exactly and
in closed form, the next time its feature is read (and for every feature by
``finish`` at the end of the pass, so the caller's ``coef`` is current).

Per coordinate i the state is ``u_i`` (sum of gradients; for FTRL-Proximal
the shifted sum ``z_i``), ``ssq_i`` (sum of squared gradients) and, for mirror
descent, the weight ``w_i`` with the step at which it was last current.
``H_i = delta + sqrt(ssq_i)``.  During a pass the kernel keeps the pair
``(u_i, sqrt(ssq_i))`` side by side in one workspace array ``acc`` (built at
the start of the pass, written back at the end): a rare feature then costs one
cache miss instead of two, and reading a weight costs no square root (the root
is updated as ``sqrt(root_i^2 + g_i^2)`` only when a gradient arrives).
With ``t`` steps done:

* dual averaging: ``w_i = -sign(u_i) eta max(|u_i| - l1 t, 0) / (H_i + eta l2 t)``
  depends on (u_i, ssq_i, t) only;
* mirror descent: one step is ``z = w_i - eta g_i / H_i`` then
  ``w_i = sign(z) max(|z| - eta l1 / H_i, 0) / (1 + eta l2 / H_i)``; k steps
  without gradient (H_i fixed) have the closed form in ``md_idle_steps``;
* FTRL-Proximal (McMahan et al. 2013, Algorithm 1 with alpha = eta,
  beta = delta, lambda_1 = l1, lambda_2 = l2): ``w_i = 0`` if ``|z_i| <= l1``
  else ``-(z_i - sign(z_i) l1) / (H_i / eta + l2)``.

The intercept is one more coordinate whose feature is the constant 1, with
its own accumulators and no penalty.  Labels are +-1 here.
"""
import numpy as np

cimport cython
from cython cimport floating
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t

cdef extern from "_simd.h" nogil:
    void div_pair(double a0, double a1, double b0, double b1, double* r0, double* r1)
    void sqrt_pair(double a0, double a1, double* r0, double* r1)
    bint avx_available()
    double quotient_sum_avx(const double* acc, const int32_t* idx, const double* x,
                            Py_ssize_t nnz, double shift)
    void root_update_avx(double* acc, const int32_t* idx, const double* x,
                         Py_ssize_t nnz, double d)

from ._adagrad_rules cimport (DUAL_AVERAGING, FTRL_PROXIMAL, MIRROR_DESCENT, Hyper,
                              da_intercept, da_root, da_weight, ftrl_weight, ftrl_z_step,
                              intercept_step, make_hyper, md_idle_steps, md_prox)
from ._dataset cimport RowPass, check_pass_input, index_t, longest_row, row_pass, step_row
from ._loss cimport Loss, MultinomialLoss
from ._prox cimport group_l2_prox, l1_ball_solve, linf_prox, prox_work_size

# Whether the CPU (and the OS) run AVX: the dual-averaging loops then take
# four divisions or square roots per instruction (same results).
cdef bint HAVE_AVX = avx_available()


def set_avx(bint enabled):
    """Test hook: take the AVX loops when ``enabled`` and the CPU runs AVX,
    else the SSE2 ones.  Returns whether AVX was in use before."""
    global HAVE_AVX
    previous = HAVE_AVX
    HAVE_AVX = enabled and avx_available()
    return previous


cdef extern from "_simd.h":
    const char* SIMD_PATHS_C "SKLEARN_ADAPROX_SIMD_PATHS"

# The SIMD paths compiled into this build: "sse2+avx", "sse2", "avx" or
# "scalar" (the plain C fallbacks: non-x86 targets, or a build with
# SKLEARN_ADAPROX_NO_SIMD=1 set).  Build information for tests and CI.
SIMD_PATHS = SIMD_PATHS_C.decode("ascii")


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class AdaGradProblem:
    """State of one binary AdaGrad problem for one pass, or for reading its
    weights.

    Built by the estimator on views of its fitted arrays, which the kernel
    updates in place (a pass costs O(nnz), whatever the width):

    * ``acc`` (n_features, 2): the accumulators, ``(u_j, sqrt(ssq_j))``
      side by side (z_j for FTRL-Proximal);
    * mirror descent: ``w`` the weights, ``w[j]`` current at step
      ``last_step[j]`` (one-element stand-ins for the other rules).

    The intercept scalars and ``t`` are read back through the attributes.
    ``coef_into`` / ``coef_at`` give the weights of step ``t`` without
    changing anything (the estimator's ``coef_``).  It is never kept as
    fitted state.
    """
    cdef Loss loss
    cdef Hyper hyper
    cdef bint fit_intercept
    cdef double[:, ::1] acc
    cdef double[::1] w
    cdef int64_t[::1] last_step
    cdef double[::1] row_w  # FTRL: the weights of the current row's entries
    cdef public double intercept
    cdef public double intercept_sum_grad
    cdef public double intercept_sum_sq_grad
    cdef public int64_t t

    def __init__(self, *, Loss loss, str update, double eta, double delta,
                 double l1, double l2, bint fit_intercept, double[:, ::1] acc,
                 double[::1] w, int64_t[::1] last_step, double intercept,
                 double intercept_sum_grad, double intercept_sum_sq_grad, int64_t t,
                 bint adaptive=True):
        self.hyper = make_hyper(update, eta, delta, l1, l2, adaptive)
        if acc.shape[1] != 2:
            raise ValueError("acc must have two columns.")
        if self.hyper.update == MIRROR_DESCENT and (
                w.shape[0] != acc.shape[0] or last_step.shape[0] != acc.shape[0]):
            raise ValueError("mirror descent: w and last_step must have a "
                             "length of n_features.")
        if w.shape[0] < 1 or last_step.shape[0] < 1:
            raise ValueError("w and last_step must not be empty.")
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.acc = acc
        self.w = w
        self.last_step = last_step
        self.row_w = np.empty(1)
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.intercept_sum_sq_grad = intercept_sum_sq_grad
        self.t = t

    cdef inline double weight(self, Py_ssize_t j) noexcept nogil:
        """Weight j after t steps (read only)."""
        cdef Hyper h = self.hyper
        cdef double t = <double> self.t
        if h.update == DUAL_AVERAGING:
            return da_weight(self.acc[j, 0], da_root(self.acc[j, 1], t, h), t, h)
        if h.update == MIRROR_DESCENT:
            return md_idle_steps(self.w[j], self.acc[j, 1], self.t - self.last_step[j], h)
        return ftrl_weight(self.acc[j, 0], self.acc[j, 1], h)

    def coef_into(self, double[::1] out not None):
        """Every weight of step t into ``out`` (O(n_features))."""
        if out.shape[0] != self.acc.shape[0]:
            raise ValueError("out must have a length of n_features.")
        cdef Py_ssize_t j
        with nogil:
            for j in range(out.shape[0]):
                out[j] = self.weight(j)

    def coef_at(self, const int64_t[::1] columns not None, double[::1] out not None):
        """The weights of step t of ``columns`` into ``out``."""
        if out.shape[0] != columns.shape[0]:
            raise ValueError("out and columns differ in length.")
        cdef Py_ssize_t k, n = self.acc.shape[0]
        for k in range(columns.shape[0]):
            if not 0 <= columns[k] < n:
                raise ValueError("column out of range.")
        with nogil:
            for k in range(columns.shape[0]):
                out[k] = self.weight(columns[k])


# ----------------------------------------------------------------------
# One row: its margin with every weight brought up to step t, and its update.
# ``acc`` points at the interleaved pairs: acc[2j] = u_j (z_j for FTRL),
# acc[2j + 1] = sqrt(ssq_j).  Each update rule has its own pair of loops so
# that the inner loops carry no branch on the rule.  Entries equal to zero
# (the zeros of a dense row) are skipped: their gradient is zero, so a dense
# row and its CSR form take exactly the same arithmetic.

cdef inline double da_margin(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             const double* acc, double t, Hyper h) noexcept nogil:
    # Dual averaging: weights are closed forms of (u, root, t); none is stored.
    cdef Py_ssize_t k, j, j1
    cdef double p = 0.0, shift, den, q0, q1
    if h.l1 == 0.0:
        # No threshold: w_j = -eta u_j / (root_j + delta + eta l2 t), where
        # the denominator is 0 only for an untouched (u_j = 0) coordinate.
        shift = h.delta + h.eta * h.l2 * t
        if not h.adaptive:  # one denominator for every coordinate
            den = sqrt(t) + shift
            if den <= 0.0:
                return 0.0  # t == 0: nothing learnt yet
            for k in range(nnz):
                p += acc[2 * idx[k]] * x[k]
            return -h.eta * p / den
        if shift > 0.0:
            # every denominator is positive: four (AVX) or two divisions per
            # instruction (bit-identical to the loop below)
            if floating is double and index_t is int32_t:
                if HAVE_AVX:
                    return -h.eta * quotient_sum_avx(acc, idx, x, nnz, shift)
            k = 0
            while k + 1 < nnz:
                j = 2 * idx[k]
                j1 = 2 * idx[k + 1]
                div_pair(acc[j] * x[k], acc[j1] * x[k + 1],
                         acc[j + 1] + shift, acc[j1 + 1] + shift, &q0, &q1)
                p += q0
                p += q1
                k += 2
            if k < nnz:
                j = 2 * idx[k]
                p += acc[j] * x[k] / (acc[j + 1] + shift)
            return -h.eta * p
        for k in range(nnz):
            j = 2 * idx[k]
            den = acc[j + 1] + shift
            if den > 0.0:
                p += acc[j] * x[k] / den
        return -h.eta * p
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = 2 * idx[k]
        p += da_weight(acc[j], da_root(acc[j + 1], t, h), t, h) * x[k]
    return p


cdef inline void da_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                           double d, double* acc) noexcept nogil:
    # The non-zero entries go two at a time through one packed square root
    # (bit-identical to two scalar ones; the indices of a row are distinct).
    cdef Py_ssize_t k, j, j0 = -1
    cdef double g, g0 = 0.0
    if floating is double and index_t is int32_t:
        if HAVE_AVX:  # four at a time, same results
            root_update_avx(acc, idx, x, nnz, d)
            return
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = 2 * idx[k]
        g = d * x[k]
        acc[j] += g
        if j0 < 0:
            j0 = j
            g0 = g
            continue
        sqrt_pair(acc[j0 + 1] * acc[j0 + 1] + g0 * g0, acc[j + 1] * acc[j + 1] + g * g,
                  &acc[j0 + 1], &acc[j + 1])
        j0 = -1
    if j0 >= 0:
        acc[j0 + 1] = sqrt(acc[j0 + 1] * acc[j0 + 1] + g0 * g0)


cdef inline double md_margin(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             double* w, const double* acc, int64_t* last,
                             int64_t t, Hyper h) noexcept nogil:
    # Mirror descent: catch each weight up over its idle steps, store it.
    cdef Py_ssize_t k, j
    cdef double p = 0.0
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        w[j] = md_idle_steps(w[j], acc[2 * j + 1], t - last[j], h)
        last[j] = t
        p += w[j] * x[k]
    return p


cdef inline void md_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                           double d, double* w, double* acc, int64_t* last,
                           int64_t t, Hyper h) noexcept nogil:
    # The step number t is the one being taken (weights were current at t-1).
    cdef Py_ssize_t k, j
    cdef double g, H
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        g = d * x[k]
        acc[2 * j] += g
        acc[2 * j + 1] = sqrt(acc[2 * j + 1] * acc[2 * j + 1] + g * g)
        H = h.delta + acc[2 * j + 1]
        if H > 0.0:  # H == 0 only for a zero weight that has never moved
            w[j] = md_prox(w[j] - h.eta * g / H, H, h)
            last[j] = t


cdef inline double ftrl_margin(const floating* x, const index_t* idx, Py_ssize_t nnz,
                               double* row_w, const double* acc, Hyper h) noexcept nogil:
    # FTRL-Proximal: weights are closed forms of (z, root); the row's are kept
    # in ``row_w`` (entry k of the row) because the update needs them.
    cdef Py_ssize_t k, j
    cdef double p = 0.0
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        row_w[k] = ftrl_weight(acc[2 * j], acc[2 * j + 1], h)
        p += row_w[k] * x[k]
    return p


cdef inline void ftrl_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             double d, const double* row_w, double* acc,
                             Hyper h) noexcept nogil:
    cdef Py_ssize_t k, j
    cdef double g, root, new_root
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        g = d * x[k]
        root = acc[2 * j + 1]
        new_root = sqrt(root * root + g * g)
        acc[2 * j] += ftrl_z_step(g, root, new_root, row_w[k], h)
        acc[2 * j + 1] = new_root


def run_epoch(AdaGradProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order):
    """One predict-then-learn pass over ``X[order]``; y in {-1, +1}.

    Rows of zero weight are skipped entirely (they are not steps).  Returns
    ``(sum of weight * loss before each step, sum of weights)``; the
    progressive loss of the pass is their ratio.
    """
    cdef Loss loss = problem.loss
    cdef Hyper h = problem.hyper
    cdef bint fit_intercept = problem.fit_intercept
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.acc.shape[0], y.shape[0], sample_weight, order)
    if h.update == FTRL_PROXIMAL:
        problem.row_w = np.empty(max(longest_row(X_indptr, is_dense, n_features, y.shape[0]), 1))
    cdef double* w = &problem.w[0]
    cdef double* row_w = &problem.row_w[0]
    cdef double* acc = &problem.acc[0, 0] if n_features > 0 else NULL
    cdef int64_t* last = &problem.last_step[0]
    cdef double b = problem.intercept
    cdef double u_b = problem.intercept_sum_grad
    cdef double ssq_b = problem.intercept_sum_sq_grad
    cdef int64_t t = problem.t

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, nnz
    cdef double sw, yi, p, d
    cdef double sum_loss = 0.0, sum_weight = 0.0

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &x, &idx)
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]

            # Predict with the weights of step t ...
            if h.update == DUAL_AVERAGING:
                if not h.adaptive:  # the intercept moves with t too
                    b = da_intercept(u_b, 0.0, <double> t, h)
                p = b + da_margin(x, idx, nnz, acc, <double> t, h)
            elif h.update == MIRROR_DESCENT:
                p = b + md_margin(x, idx, nnz, w, acc, last, t, h)
            else:
                p = b + ftrl_margin(x, idx, nnz, row_w, acc, h)
            sum_loss += sw * loss.loss(yi, p)
            sum_weight += sw

            # ... then take step t + 1.  The gradient of
            # sw * loss(y, <w, x> + b) is d * x.
            d = sw * loss.dloss(yi, p)
            t += 1
            if d == 0.0:
                # Nothing to accumulate; mirror descent's idle-step closed
                # form covers this step when the features are next read.
                continue
            if h.update == DUAL_AVERAGING:
                da_update(x, idx, nnz, d, acc)
            elif h.update == MIRROR_DESCENT:
                md_update(x, idx, nnz, d, w, acc, last, t, h)
            else:
                ftrl_update(x, idx, nnz, d, row_w, acc, h)

            if fit_intercept:
                b = intercept_step(b, &u_b, &ssq_b, d, <double> t, h)

        if h.update == DUAL_AVERAGING:
            b = da_intercept(u_b, sqrt(ssq_b), <double> t, h)
        problem.t = t

    problem.intercept = b
    problem.intercept_sum_grad = u_b
    problem.intercept_sum_sq_grad = ssq_b
    return sum_loss, sum_weight


# ======================================================================
# Binary AdaGrad kernel for penalties whose step couples all coordinates.
#
# Duchi, Hazan & Singer (2011), "Adaptive Subgradient Methods for Online
# Learning and Stochastic Optimization", JMLR 12, section 5: with the metric
# ``H = diag(delta + sqrt(ssq))`` the AdaGrad step for the l-infinity penalty
# and for the l1-ball constraint is no longer separable.  Each step solves
#
# * dual averaging, l-infinity:
#   ``w = argmin eta <u, w> + eta lam t ||w||_inf + 0.5 <w, H w>``
#   (``linf_prox(eta u, H, eta lam t)``);
# * mirror descent, l-infinity:
#   ``w = argmin eta <g, w> + eta lam ||w||_inf + 0.5 <w - w_old, H (w - w_old)>``
#   (``linf_prox(eta g - H w_old, H, eta lam)``);
# * dual averaging, l1 ball:
#   ``w = argmin eta <u, w> + 0.5 <w, H w>  s.t. ||w||_1 <= c``
#   (``l1_ball_solve(eta u, H, c)``);
# * mirror descent, l1 ball:
#   ``w = argmin eta <g, w> + 0.5 <w - w_old, H (w - w_old)>  s.t. ||w||_1 <= c``
#   (``l1_ball_solve(eta g - H w_old, H, c)``),
#
# with the exact solvers of ``_prox`` (the sort-based threshold of the paper's
# Figure 3).  ``u`` is the sum of the gradients, ``ssq`` the sum of their
# squares and ``t`` the number of steps taken, this one included.  A
# coordinate with ``H_i == 0`` (no gradient yet and ``delta == 0``) has
# ``w_i = 0``.
#
# Cost.  Every step touches every coordinate: O(d) to form the solver's input
# plus the threshold search, O(d + k log d) with k the coordinates above the
# threshold, O(d log d) at worst; the sparsity of the row does not help.  This
# kernel is meant for dense, moderate-dimensional data; the lazy kernel above
# is the one for large sparse problems.
#
# The intercept is one more coordinate with feature 1, never penalised and
# outside the constraint, updated exactly as in ``run_epoch``.  Labels are
# +-1 here.

cdef enum:
    LINF = 0
    L1_BALL = 1

COUPLED_PENALTY_CODES = {"linf": LINF, "l1_ball": L1_BALL}


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class CoupledProblem:
    """State of one binary AdaGrad problem with the l-infinity penalty or the
    l1-ball constraint, for the length of one pass.

    ``update`` is "dual_averaging" or "mirror_descent"; ``penalty`` is "linf"
    (``strength`` = lambda) or "l1_ball" (``strength`` = the radius c).
    ``coef`` (the current weights w, read by mirror descent), ``sum_grad``
    (u) and ``sum_sq_grad`` (ssq) are views of the estimator's arrays, which
    the kernel updates in place; the intercept scalars and ``t`` are read
    back through the attributes.  Never kept as fitted state.
    """
    cdef Loss loss
    cdef Hyper hyper
    cdef int penalty
    cdef double strength
    cdef bint fit_intercept
    cdef double[::1] coef
    cdef double[::1] sum_grad
    cdef double[::1] sum_sq_grad
    cdef public double intercept
    cdef public double intercept_sum_grad
    cdef public double intercept_sum_sq_grad
    cdef public int64_t t

    def __init__(self, *, Loss loss not None, str update, str penalty, double eta,
                 double delta, double strength, bint fit_intercept, double[::1] coef,
                 double[::1] sum_grad, double[::1] sum_sq_grad, double intercept,
                 double intercept_sum_grad, double intercept_sum_sq_grad, int64_t t):
        self.hyper = make_hyper(update, eta, delta, 0.0, 0.0, True)
        if self.hyper.update == FTRL_PROXIMAL:
            raise ValueError(f"Unknown update {update!r}; expected 'dual_averaging' "
                             "or 'mirror_descent'.")
        if penalty not in COUPLED_PENALTY_CODES:
            raise ValueError(f"Unknown penalty {penalty!r}; expected one of "
                             f"{', '.join(map(repr, COUPLED_PENALTY_CODES))}.")
        # Not a memory check: the estimator validates alpha and l1_ball first;
        # kept for the direct callers of the kernel (its tests).
        if not strength >= 0.0:
            raise ValueError(f"strength must be >= 0, got {strength!r}.")
        if sum_grad.shape[0] != coef.shape[0] or sum_sq_grad.shape[0] != coef.shape[0]:
            raise ValueError("coef, sum_grad and sum_sq_grad must have the same length.")
        self.loss = loss
        self.penalty = COUPLED_PENALTY_CODES[penalty]
        self.strength = strength
        self.fit_intercept = fit_intercept
        self.coef = coef
        self.sum_grad = sum_grad
        self.sum_sq_grad = sum_sq_grad
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.intercept_sum_sq_grad = intercept_sum_sq_grad
        self.t = t


def run_epoch_global(CoupledProblem problem,
                     const floating[::1] X_data,
                     const index_t[::1] X_indices,
                     const index_t[::1] X_indptr,
                     bint is_dense,
                     Py_ssize_t n_features,
                     const double[::1] y,
                     const double[::1] sample_weight,
                     const int64_t[::1] order):
    """One predict-then-learn pass of binary AdaGrad over ``X[order]``, y in {-1, +1}.

    Rows of zero weight are skipped entirely (they are not steps).  For every
    other row: the loss is recorded with the current weights, then
    ``g = sw * dloss(y, p) * x`` is accumulated (entries equal to zero are
    skipped, so a dense row and its CSR form do the same arithmetic) and the
    new weights are the solution of the rule above (module docstring),
    computed even when ``g == 0`` because the rule may still move them.  A
    step costs O(n_features log n_features): for dense, moderate-dimensional
    data.  Returns ``(sum of weight * loss before each step, sum of weights)``.
    """
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.coef.shape[0], y.shape[0], sample_weight, order)
    cdef Loss loss = problem.loss
    cdef Hyper h = problem.hyper
    cdef int pen = problem.penalty
    cdef double strength = problem.strength
    cdef double eta = h.eta
    cdef double delta = h.delta
    cdef bint fit_intercept = problem.fit_intercept
    # Workspaces, once per pass: H = delta + sqrt(ssq) kept current (only the
    # coordinates of a row change it), the solver's input v, its work buffer.
    cdef double[::1] H_buf = delta + np.sqrt(np.asarray(problem.sum_sq_grad))
    cdef double[::1] v_buf = np.zeros(max(n_features, 1))
    cdef double[::1] work_buf = np.empty(prox_work_size(n_features))
    cdef double* w = NULL
    cdef double* u = NULL
    cdef double* ssq = NULL
    cdef double* H = NULL
    cdef double* v = &v_buf[0]
    cdef double* work = &work_buf[0]
    if n_features > 0:
        w = &problem.coef[0]
        u = &problem.sum_grad[0]
        ssq = &problem.sum_sq_grad[0]
        H = &H_buf[0]

    cdef double b = problem.intercept
    cdef double u_b = problem.intercept_sum_grad
    cdef double ssq_b = problem.intercept_sum_sq_grad
    cdef int64_t t = problem.t

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, j, k, nnz
    cdef double sw, yi, p, dd, g
    cdef double sum_loss = 0.0, sum_weight = 0.0

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &x, &idx)
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]

            # Predict with the current weights ...
            p = b
            for k in range(nnz):
                if x[k] != 0.0:
                    p += w[idx[k]] * x[k]
            sum_loss += sw * loss.loss(yi, p)
            sum_weight += sw

            # ... then take step t + 1; the gradient is dd * x.
            dd = sw * loss.dloss(yi, p)
            t += 1

            if h.update == MIRROR_DESCENT:
                # v = eta g - H w_old, g nonzero on the row only.
                for j in range(n_features):
                    v[j] = -H[j] * w[j]

            if dd != 0.0:
                for k in range(nnz):
                    if x[k] == 0.0:
                        continue
                    j = idx[k]
                    g = dd * x[k]
                    u[j] += g
                    ssq[j] += g * g
                    H[j] = delta + sqrt(ssq[j])
                    if h.update == MIRROR_DESCENT:
                        # H w_old uses the old H: recompute with the new one
                        v[j] = eta * g - H[j] * w[j]
                if fit_intercept:
                    b = intercept_step(b, &u_b, &ssq_b, dd, <double> t, h)
            elif h.update == DUAL_AVERAGING and pen == L1_BALL:
                # u, H and the radius are unchanged: the same problem, the
                # same (deterministic) solution, already in w.
                continue

            if h.update == DUAL_AVERAGING:
                for j in range(n_features):
                    v[j] = eta * u[j]
                if pen == LINF:
                    # the penalty of the dual-averaging objective grows with t
                    linf_prox(v, H, n_features, eta * strength * <double> t, w, work)
                else:
                    l1_ball_solve(v, H, n_features, strength, w, work)
            else:
                if pen == LINF:
                    linf_prox(v, H, n_features, eta * strength, w, work)
                else:
                    l1_ball_solve(v, H, n_features, strength, w, work)

        problem.t = t

    problem.intercept = b
    problem.intercept_sum_grad = u_b
    problem.intercept_sum_sq_grad = ssq_b
    return sum_loss, sum_weight


# ======================================================================
# Multinomial AdaGrad: one weight matrix W (n_features x n_classes) for all
# classes, learnt from a multinomial loss of the class scores
# p_k = <W[:, k], x> + b_k.  Every entry W[j, k] has its own AdaGrad sums
# (u_jk, ssq_jk), so H is diagonal over the entries.  The gradient of a row x
# is x_j * d_k on entry (j, k) (d = dloss/dp), so a step touches the rows of
# W whose feature is in x: O(n_classes * nnz).
#
# Penalties: element-wise ("l2", "l1", elastic net: the binary closed forms
# entry by entry), or a mixed norm over the rows of W,
# phi(W) = lam * sum_j ||W[j, :]||_p with p = 2 ("l1_l2") or p = inf
# ("l1_linf"), which drops a feature for every class at once.  With diagonal
# H the composite step splits by rows into
#     min_x  <v, x> + 1/2 <x, diag(D) x> + lam' ||x||_p
# solved exactly by ``_prox`` (paper, section 5):
# * dual averaging: v = eta u_j, D = H_j, lam' = eta lam t: a closed form of
#   the row's sums and t, read lazily like the binary case;
# * mirror descent: v = eta g_j - H_j w_j, D = H_j, lam' = eta lam.  A row
#   that the step does not touch still shrinks (v = -H_j w_j).  For p = inf
#   k such steps are one step with k lam' (see current_row); for p = 2 with
#   unequal D there is no closed form, so the idle steps are replayed when
#   the row is next read, stopping as soon as the row reaches zero (where it
#   stays).

cdef enum:
    ELEMENTWISE = 0
    GROUP_L2 = 1
    GROUP_LINF = 2

PENALTY_CODES = {"elementwise": ELEMENTWISE, "l1_l2": GROUP_L2, "l1_linf": GROUP_LINF}


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class MultinomialProblem:
    """State of a multinomial AdaGrad model for the length of one pass.

    Built from the estimator's per-class arrays of shape (n_classes,
    n_features); the kernel works on their transposes (rows = features, so a
    touched feature's entries are adjacent) and ``store`` writes them back.
    """
    cdef MultinomialLoss loss
    cdef Hyper hyper
    cdef int penalty
    cdef double group_strength
    cdef bint fit_intercept
    cdef Py_ssize_t n_classes
    cdef double[:, ::1] coef_out       # caller's (n_classes, n_features) arrays
    cdef double[:, ::1] sum_grad_out
    cdef double[:, ::1] sum_sq_grad_out
    cdef double[:, ::1] W              # (n_features, n_classes)
    cdef double[:, ::1] acc            # (n_features, 2 n_classes): (u, root) pairs
    cdef int64_t[::1] last_step        # mirror descent: step at which row j is current
    cdef double[::1] intercept
    cdef double[::1] intercept_sum_grad
    cdef double[::1] intercept_sum_sq_grad
    cdef double[:, ::1] work           # scratch rows: scores, gradient, v, D, prox work
    cdef public int64_t t

    def __init__(self, *, MultinomialLoss loss, str update, str penalty, double eta,
                 double delta, double l1, double l2, double group_strength,
                 bint fit_intercept, double[:, ::1] coef, double[:, ::1] sum_grad,
                 double[:, ::1] sum_sq_grad, double[::1] intercept,
                 double[::1] intercept_sum_grad, double[::1] intercept_sum_sq_grad,
                 int64_t t, bint adaptive=True):
        if (sum_grad.shape[0] != coef.shape[0] or sum_grad.shape[1] != coef.shape[1]
                or sum_sq_grad.shape[0] != coef.shape[0]
                or sum_sq_grad.shape[1] != coef.shape[1]
                or intercept.shape[0] != coef.shape[0]
                or intercept_sum_grad.shape[0] != coef.shape[0]
                or intercept_sum_sq_grad.shape[0] != coef.shape[0]):
            raise ValueError("The per-class state arrays must have one shape.")
        self.loss = loss
        self.hyper = make_hyper(update, eta, delta, l1, l2, adaptive)
        self.penalty = PENALTY_CODES[penalty]
        self.group_strength = group_strength
        self.fit_intercept = fit_intercept
        self.n_classes = coef.shape[0]
        self.coef_out = coef
        self.sum_grad_out = sum_grad
        self.sum_sq_grad_out = sum_sq_grad
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.intercept_sum_sq_grad = intercept_sum_sq_grad
        self.t = t
        n_features = coef.shape[1]
        self.W = np.ascontiguousarray(np.asarray(coef).T)
        acc = np.empty((n_features, 2 * self.n_classes))
        acc[:, 0::2] = np.asarray(sum_grad).T
        acc[:, 1::2] = np.sqrt(np.asarray(sum_sq_grad).T)
        self.acc = acc
        self.last_step = np.full(n_features, t, dtype=np.int64)
        self.work = np.zeros((5, self.n_classes + prox_work_size(self.n_classes)))

    cdef void current_row(self, Py_ssize_t j) noexcept nogil:
        """Bring row j of W to step t (weights of step t, before step t+1)."""
        cdef Py_ssize_t k, K = self.n_classes
        cdef Hyper h = self.hyper
        cdef double* w = &self.W[j, 0]
        cdef double* acc = &self.acc[j, 0]
        cdef double* v = &self.work[2, 0]
        cdef double* D = &self.work[3, 0]
        cdef int64_t idle, idle_steps
        cdef double lam_scale
        if h.update == MIRROR_DESCENT:
            idle = self.t - self.last_step[j]
            self.last_step[j] = self.t
            if self.penalty == ELEMENTWISE:
                for k in range(K):
                    w[k] = md_idle_steps(w[k], acc[2 * k + 1], idle, h)
                return
            if self.penalty == GROUP_LINF and idle > 0:
                # An idle l-infinity step clips the row's magnitudes at the
                # theta with sum_k D_k (|w_k| - theta)_+ = eta lam; a second
                # one clips the clipped row, and the two sums add up, so k
                # idle steps are one step with k eta lam: exact, O(K log K).
                idle_steps = 1
                lam_scale = <double> idle
            else:
                idle_steps = idle
                lam_scale = 1.0
            # l1/l2 (unequal D): no closed form, replay the idle steps
            while idle_steps > 0 and not row_is_zero(w, K):
                for k in range(K):
                    D[k] = h.delta + acc[2 * k + 1]
                    v[k] = -D[k] * w[k]
                self.row_prox(h.eta * self.group_strength * lam_scale, w)
                idle_steps -= 1
            return
        if h.update == FTRL_PROXIMAL:
            for k in range(K):
                w[k] = ftrl_weight(acc[2 * k], acc[2 * k + 1], h)
            return
        # dual averaging
        if self.penalty == ELEMENTWISE:
            for k in range(K):
                w[k] = da_weight(acc[2 * k], da_root(acc[2 * k + 1], self.t, h),
                                 <double> self.t, h)
            return
        for k in range(K):
            D[k] = h.delta + da_root(acc[2 * k + 1], self.t, h)
            v[k] = h.eta * acc[2 * k]
        self.row_prox(h.eta * self.group_strength * self.t, w)

    cdef void row_prox(self, double lam, double* x) noexcept nogil:
        """x = argmin <v, x> + 1/2 <x, diag(D) x> + lam ||x||_p with v, D in
        the scratch rows 2 and 3."""
        cdef Py_ssize_t K = self.n_classes
        if self.penalty == GROUP_L2:
            group_l2_prox(&self.work[2, 0], &self.work[3, 0], K, lam, x)
        else:
            linf_prox(&self.work[2, 0], &self.work[3, 0], K, lam, x, &self.work[4, 0])

    cdef void step_feature(self, Py_ssize_t j, double xj, const double* d) noexcept nogil:
        """Step t on row j (already current at t - 1) for the gradient
        x_j * d (d = dloss/dp, zero on the classes the loss did not move)."""
        cdef Py_ssize_t k, K = self.n_classes
        cdef Hyper h = self.hyper
        cdef double* w = &self.W[j, 0]
        cdef double* acc = &self.acc[j, 0]
        cdef double* v = &self.work[2, 0]
        cdef double* D = &self.work[3, 0]
        cdef double g, root, H
        for k in range(K):
            g = d[k] * xj
            root = acc[2 * k + 1]
            if g != 0.0:
                root = sqrt(root * root + g * g)
                if h.update == FTRL_PROXIMAL:
                    acc[2 * k] += ftrl_z_step(g, acc[2 * k + 1], root, w[k], h)
                else:
                    acc[2 * k] += g
                acc[2 * k + 1] = root
            if h.update != MIRROR_DESCENT:
                continue  # weights are closed forms of the sums
            H = h.delta + root
            if self.penalty == ELEMENTWISE:
                if H > 0.0:  # H == 0 only for a zero weight that never moved
                    w[k] = md_prox(w[k] - h.eta * g / H, H, h)
            else:
                D[k] = H
                v[k] = h.eta * g - H * w[k]
        if h.update == MIRROR_DESCENT:
            self.last_step[j] = self.t
            if self.penalty != ELEMENTWISE:
                self.row_prox(h.eta * self.group_strength, w)

    cdef void step_intercept(self, const double* d) noexcept nogil:
        cdef Py_ssize_t k
        for k in range(self.n_classes):
            if d[k] != 0.0:
                self.intercept[k] = intercept_step(
                    self.intercept[k], &self.intercept_sum_grad[k],
                    &self.intercept_sum_sq_grad[k], d[k], <double> self.t, self.hyper)

    cdef void current_intercepts(self) noexcept nogil:
        """The non-adaptive dual-averaging intercepts depend on t as well."""
        cdef Py_ssize_t k
        if self.hyper.update == DUAL_AVERAGING and not self.hyper.adaptive:
            for k in range(self.n_classes):
                self.intercept[k] = da_intercept(self.intercept_sum_grad[k], 0.0,
                                                 <double> self.t, self.hyper)

    cdef void store(self) noexcept nogil:
        """Every row current at t, then everything back to the caller."""
        cdef Py_ssize_t j, k
        self.current_intercepts()
        for j in range(self.W.shape[0]):
            self.current_row(j)
            for k in range(self.n_classes):
                self.coef_out[k, j] = self.W[j, k]
                self.sum_grad_out[k, j] = self.acc[j, 2 * k]
                self.sum_sq_grad_out[k, j] = self.acc[j, 2 * k + 1] * self.acc[j, 2 * k + 1]


cdef inline bint row_is_zero(const double* w, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        if w[k] != 0.0:
            return False
    return True


cdef bint all_class_indices(const double[::1] y, Py_ssize_t n_classes) noexcept nogil:
    """True if every entry of y is an integer in [0, n_classes): the kernel
    indexes the class scores with it."""
    cdef Py_ssize_t i
    for i in range(y.shape[0]):
        if not (0.0 <= y[i] < n_classes) or y[i] != <double> <Py_ssize_t> y[i]:
            return False
    return True


def run_epoch_multinomial(MultinomialProblem problem,
                          const floating[::1] X_data,
                          const index_t[::1] X_indices,
                          const index_t[::1] X_indptr,
                          bint is_dense,
                          Py_ssize_t n_features,
                          const double[::1] y,
                          const double[::1] sample_weight,
                          const int64_t[::1] order):
    """One predict-then-learn pass over ``X[order]``; y holds class indices
    (0 .. n_classes - 1, as floats).  Rows of zero weight are not steps.
    Returns ``(sum of weight * loss before each step, sum of weights)``."""
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.W.shape[0], y.shape[0], sample_weight, order)
    cdef Py_ssize_t K = problem.n_classes
    if not all_class_indices(y, K):
        raise ValueError(f"y must hold class indices in [0, {K}).")
    cdef double* scores = &problem.work[0, 0]
    cdef double* d = &problem.work[1, 0]
    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, k, e, j, nnz
    cdef double sw, value, sum_loss = 0.0, sum_weight = 0.0
    cdef bint moved

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &x, &idx)
            sw = sample_weight[i]
            if sw == 0.0:
                continue

            # Predict with the weights of step t ...
            problem.current_intercepts()
            for k in range(K):
                scores[k] = problem.intercept[k]
            for e in range(nnz):
                if x[e] == 0.0:
                    continue
                j = idx[e]
                problem.current_row(j)
                for k in range(K):
                    scores[k] += problem.W[j, k] * x[e]
            value = problem.loss.loss_gradient(scores, K, <Py_ssize_t> y[i], d)
            sum_loss += sw * value
            sum_weight += sw

            # ... then take step t + 1 with gradient x_j * sw * d on W[j, :].
            problem.t += 1
            moved = False
            for k in range(K):
                d[k] *= sw
                moved = moved or d[k] != 0.0
            if not moved:
                continue  # idle step: covered when the rows are next read
            for e in range(nnz):
                if x[e] != 0.0:
                    problem.step_feature(idx[e], x[e], d)
            if problem.fit_intercept:
                problem.step_intercept(d)

        problem.store()
    return sum_loss, sum_weight
