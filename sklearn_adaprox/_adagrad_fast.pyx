"""Diagonal AdaGrad kernel (Duchi, Hazan & Singer 2011) with lazy updates.

One call of ``run_epoch`` makes one pass over the rows named by ``order`` for
one binary problem.  A step costs O(nnz of the row): a weight whose feature
is absent from the row is not touched and is brought up to date, exactly and
in closed form, the next time its feature is read (and for every feature by
``finalize`` at the end of the pass, so the caller's ``coef`` is current).

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

from cython cimport floating
from libc.math cimport copysign, exp, expm1, fabs, log1p, sqrt
from libc.stdint cimport int64_t

from ._dataset cimport data_pointers, get_row, index_t
from ._loss cimport Loss

# Codes of the ``update`` parameter inside the kernel.
cdef enum:
    DUAL_AVERAGING = 0
    MIRROR_DESCENT = 1
    FTRL_PROXIMAL = 2

UPDATE_CODES = {
    "dual_averaging": DUAL_AVERAGING,
    "mirror_descent": MIRROR_DESCENT,
    "ftrl_proximal": FTRL_PROXIMAL,
}


cdef struct Hyper:
    int update
    double eta
    double delta
    double l1
    double l2


cdef inline double da_weight(double u, double root, double t, Hyper h) noexcept nogil:
    """Dual-averaging weight from the running sums after t steps."""
    cdef double excess
    if u == 0.0:
        return 0.0
    excess = fabs(u) - h.l1 * t
    if excess <= 0.0:
        return 0.0
    # u != 0 implies root > 0, so the denominator is positive.
    return -copysign(h.eta * excess / (h.delta + root + h.eta * h.l2 * t), u)


cdef inline double ftrl_weight(double z, double root, Hyper h) noexcept nogil:
    """FTRL-Proximal weight; exactly zero while |z| <= l1."""
    if fabs(z) <= h.l1:
        return 0.0
    return -(z - copysign(h.l1, z)) / ((h.delta + root) / h.eta + h.l2)


cdef inline double md_prox(double z, double H, Hyper h) noexcept nogil:
    """Composite step: argmin_w eta*(l1|w| + l2/2 w^2) + H/2 (w - z)^2."""
    cdef double mag = fabs(z) - h.eta * h.l1 / H
    if mag <= 0.0:
        return 0.0
    return copysign(mag / (1.0 + h.eta * h.l2 / H), z)


cdef inline double md_idle_steps(double w, double root, int64_t k, Hyper h) noexcept nogil:
    """Mirror-descent weight after k steps in which its gradient was zero.

    H stays fixed, so each step maps |w| to max(|w| - a, 0) / c with
    a = eta l1 / H and c = 1 + r, r = eta l2 / H.  Unrolled:
    |w_k| = max(|w| c^-k - a (1 - c^-k) / r, 0)   (a k when r = 0),
    and a weight that reaches zero stays there.
    """
    cdef double H, a, r, log_c, decay, total_shrink, mag
    if k <= 0 or w == 0.0:
        return w
    H = h.delta + root
    if H == 0.0:
        return w
    a = h.eta * h.l1 / H
    r = h.eta * h.l2 / H
    if r > 0.0:
        log_c = log1p(r)
        decay = exp(-k * log_c)
        total_shrink = a * (-expm1(-k * log_c) / r)
    else:
        decay = 1.0
        total_shrink = a * k
    mag = fabs(w) * decay - total_shrink
    if mag <= 0.0:
        return 0.0
    return copysign(mag, w)


cdef class AdaGradProblem:
    """State of one binary AdaGrad problem for the length of one pass.

    Built by the estimator from its fitted NumPy arrays: ``coef`` is a view
    that the kernel updates in place; ``sum_grad`` and ``sum_sq_grad`` are
    copied into the interleaved workspace ``acc`` and written back by
    ``store``; the intercept scalars and ``t`` are read back through the
    attributes.  It is never kept as fitted state.
    """
    cdef Loss loss
    cdef Hyper hyper
    cdef bint fit_intercept
    cdef double[::1] coef
    cdef double[::1] sum_grad
    cdef double[::1] sum_sq_grad
    cdef double[:, ::1] acc      # acc[j] = (u_j, sqrt(ssq_j)) during the pass
    cdef int64_t[::1] last_step  # mirror descent: step at which coef[j] is current
    cdef public double intercept
    cdef public double intercept_sum_grad
    cdef public double intercept_sum_sq_grad
    cdef public int64_t t

    def __init__(self, Loss loss, str update, double eta, double delta,
                 double l1, double l2, bint fit_intercept,
                 double[::1] coef, double[::1] sum_grad, double[::1] sum_sq_grad,
                 double intercept, double intercept_sum_grad,
                 double intercept_sum_sq_grad, int64_t t):
        self.loss = loss
        self.hyper.update = UPDATE_CODES[update]
        self.hyper.eta = eta
        self.hyper.delta = delta
        self.hyper.l1 = l1
        self.hyper.l2 = l2
        self.fit_intercept = fit_intercept
        self.coef = coef
        self.sum_grad = sum_grad
        self.sum_sq_grad = sum_sq_grad
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.intercept_sum_sq_grad = intercept_sum_sq_grad
        self.t = t
        self.acc = np.column_stack([sum_grad, np.sqrt(sum_sq_grad)])
        # coef is current on entry (every pass ends with finalize).
        self.last_step = np.full(coef.shape[0], t, dtype=np.int64)

    cdef void finalize(self) noexcept nogil:
        """Bring every weight up to step t (O(n_features), once per pass)."""
        cdef Py_ssize_t j
        cdef Hyper h = self.hyper
        cdef double t = <double> self.t
        for j in range(self.coef.shape[0]):
            if h.update == DUAL_AVERAGING:
                self.coef[j] = da_weight(self.acc[j, 0], self.acc[j, 1], t, h)
            elif h.update == MIRROR_DESCENT:
                self.coef[j] = md_idle_steps(self.coef[j], self.acc[j, 1],
                                             self.t - self.last_step[j], h)
                self.last_step[j] = self.t
            else:
                self.coef[j] = ftrl_weight(self.acc[j, 0], self.acc[j, 1], h)

    cdef void store(self) noexcept nogil:
        """Write the accumulators back to the caller's arrays."""
        cdef Py_ssize_t j
        for j in range(self.coef.shape[0]):
            self.sum_grad[j] = self.acc[j, 0]
            self.sum_sq_grad[j] = self.acc[j, 1] * self.acc[j, 1]


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
    cdef Py_ssize_t k, j
    cdef double p = 0.0, shift, den
    if h.l1 == 0.0:
        # No threshold: w_j = -eta u_j / (root_j + delta + eta l2 t), where
        # the denominator is 0 only for an untouched (u_j = 0) coordinate.
        shift = h.delta + h.eta * h.l2 * t
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
        p += da_weight(acc[j], acc[j + 1], t, h) * x[k]
    return p


cdef inline void da_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                           double d, double* acc) noexcept nogil:
    cdef Py_ssize_t k, j
    cdef double g
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = 2 * idx[k]
        g = d * x[k]
        acc[j] += g
        acc[j + 1] = sqrt(acc[j + 1] * acc[j + 1] + g * g)


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
                               double* w, const double* acc, Hyper h) noexcept nogil:
    # FTRL-Proximal: weights are closed forms of (z, root); stored because the
    # update needs them.
    cdef Py_ssize_t k, j
    cdef double p = 0.0
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        w[j] = ftrl_weight(acc[2 * j], acc[2 * j + 1], h)
        p += w[j] * x[k]
    return p


cdef inline void ftrl_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             double d, const double* w, double* acc,
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
        # McMahan's sigma_j = (new_root - root) / eta
        acc[2 * j] += g - (new_root - root) / h.eta * w[j]
        acc[2 * j + 1] = new_root


def run_epoch(AdaGradProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
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
    cdef Py_ssize_t n_features = problem.coef.shape[0]
    cdef double* w = &problem.coef[0]
    cdef double* acc = &problem.acc[0, 0]
    cdef int64_t* last = &problem.last_step[0]
    cdef double b = problem.intercept
    cdef double u_b = problem.intercept_sum_grad
    cdef double ssq_b = problem.intercept_sum_sq_grad
    cdef int64_t t = problem.t

    cdef const floating* data = NULL
    cdef const index_t* indices = NULL
    cdef const index_t* indptr = &X_indptr[0]
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, nnz
    cdef double sw, yi, p, d, sigma
    cdef double sum_loss = 0.0, sum_weight = 0.0

    data_pointers(X_data, X_indices, &data, &indices)

    with nogil:
        for s in range(order.shape[0]):
            i = order[s]
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]
            nnz = get_row(data, indices, indptr, is_dense, n_features, i, &x, &idx)

            # Predict with the weights of step t ...
            if h.update == DUAL_AVERAGING:
                p = b + da_margin(x, idx, nnz, acc, <double> t, h)
            elif h.update == MIRROR_DESCENT:
                p = b + md_margin(x, idx, nnz, w, acc, last, t, h)
            else:
                p = b + ftrl_margin(x, idx, nnz, w, acc, h)
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
                ftrl_update(x, idx, nnz, d, w, acc, h)

            if fit_intercept:
                if h.update == FTRL_PROXIMAL:
                    sigma = (sqrt(ssq_b + d * d) - sqrt(ssq_b)) / h.eta
                    u_b += d - sigma * b
                    ssq_b += d * d
                    b = -h.eta * u_b / (h.delta + sqrt(ssq_b))
                else:
                    u_b += d
                    ssq_b += d * d
                    if h.update == DUAL_AVERAGING:
                        b = -h.eta * u_b / (h.delta + sqrt(ssq_b))
                    else:
                        b -= h.eta * d / (h.delta + sqrt(ssq_b))

        problem.t = t
        problem.finalize()
        problem.store()

    problem.intercept = b
    problem.intercept_sum_grad = u_b
    problem.intercept_sum_sq_grad = ssq_b
    return sum_loss, sum_weight
