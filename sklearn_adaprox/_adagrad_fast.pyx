"""Diagonal AdaGrad kernel (Duchi, Hazan & Singer 2011) with lazy updates.

One call of ``run_epoch`` makes one pass over the rows named by ``order`` for
one binary problem.  A step costs O(nnz of the row): a weight whose feature
is absent from the row is not touched and is brought up to date, exactly and
in closed form, the next time its feature is read (and for every feature by
``finalize`` at the end of the pass, so the caller's ``coef`` is current).

Per coordinate i the state is ``u_i`` (sum of gradients; for FTRL-Proximal
the shifted sum ``z_i``), ``ssq_i`` (sum of squared gradients) and, for mirror
descent, the weight ``w_i`` with the step at which it was last current.
``H_i = delta + sqrt(ssq_i)``.  With ``t`` steps done:

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

from ._dataset cimport get_row, index_t
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


cdef inline double da_weight(double u, double ssq, double t, Hyper h) noexcept nogil:
    """Dual-averaging weight from the running sums after t steps."""
    cdef double excess
    if u == 0.0:
        return 0.0
    excess = fabs(u) - h.l1 * t
    if excess <= 0.0:
        return 0.0
    # u != 0 implies ssq > 0, so the denominator is positive.
    return -copysign(h.eta * excess / (h.delta + sqrt(ssq) + h.eta * h.l2 * t), u)


cdef inline double ftrl_weight(double z, double ssq, Hyper h) noexcept nogil:
    """FTRL-Proximal weight; exactly zero while |z| <= l1."""
    if fabs(z) <= h.l1:
        return 0.0
    return -(z - copysign(h.l1, z)) / ((h.delta + sqrt(ssq)) / h.eta + h.l2)


cdef inline double md_prox(double z, double H, Hyper h) noexcept nogil:
    """Composite step: argmin_w eta*(l1|w| + l2/2 w^2) + H/2 (w - z)^2."""
    cdef double mag = fabs(z) - h.eta * h.l1 / H
    if mag <= 0.0:
        return 0.0
    return copysign(mag / (1.0 + h.eta * h.l2 / H), z)


cdef inline double md_idle_steps(double w, double ssq, int64_t k, Hyper h) noexcept nogil:
    """Mirror-descent weight after k steps in which its gradient was zero.

    H stays fixed, so each step maps |w| to max(|w| - a, 0) / c with
    a = eta l1 / H and c = 1 + r, r = eta l2 / H.  Unrolled:
    |w_k| = max(|w| c^-k - a (1 - c^-k) / r, 0)   (a k when r = 0),
    and a weight that reaches zero stays there.
    """
    cdef double H, a, r, log_c, decay, total_shrink, mag
    if k <= 0 or w == 0.0:
        return w
    H = h.delta + sqrt(ssq)
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
    """State of one binary AdaGrad problem for the length of one call.

    Built by the estimator from its fitted NumPy arrays (``coef``, ``sum_grad``
    and ``sum_sq_grad`` are views that the kernel updates in place; the
    intercept scalars and ``t`` are read back through the attributes).  It is
    never kept as fitted state.
    """
    cdef Loss loss
    cdef Hyper hyper
    cdef bint fit_intercept
    cdef double[::1] coef
    cdef double[::1] sum_grad
    cdef double[::1] sum_sq_grad
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
        # coef is current on entry (every call ends with finalize).
        self.last_step = np.full(coef.shape[0], t, dtype=np.int64)

    cdef void finalize(self) noexcept nogil:
        """Bring every weight up to step t (O(n_features), once per call)."""
        cdef Py_ssize_t j
        cdef Hyper h = self.hyper
        cdef double t = <double> self.t
        for j in range(self.coef.shape[0]):
            if h.update == DUAL_AVERAGING:
                self.coef[j] = da_weight(self.sum_grad[j], self.sum_sq_grad[j], t, h)
            elif h.update == MIRROR_DESCENT:
                self.coef[j] = md_idle_steps(self.coef[j], self.sum_sq_grad[j],
                                             self.t - self.last_step[j], h)
                self.last_step[j] = self.t
            else:
                self.coef[j] = ftrl_weight(self.sum_grad[j], self.sum_sq_grad[j], h)


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
    cdef double* u = &problem.sum_grad[0]
    cdef double* ssq = &problem.sum_sq_grad[0]
    cdef int64_t* last = &problem.last_step[0]
    cdef double b = problem.intercept
    cdef double u_b = problem.intercept_sum_grad
    cdef double ssq_b = problem.intercept_sum_sq_grad
    cdef int64_t t = problem.t

    cdef const floating* data = NULL
    cdef const index_t* indices = NULL
    cdef const index_t* indptr = &X_indptr[0]
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef Py_ssize_t s, i, k, j, nnz
    cdef double sw, yi, p, d, g, w_j, sigma, H
    cdef double sum_loss = 0.0, sum_weight = 0.0

    if X_data.shape[0] > 0:
        data = &X_data[0]
        indices = &X_indices[0]

    with nogil:
        for s in range(order.shape[0]):
            i = order[s]
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]
            nnz = get_row(data, indices, indptr, is_dense, n_features, i,
                          &row_data, &row_indices)

            # Bring this row's weights up to step t, then predict.
            p = b
            for k in range(nnz):
                j = row_indices[k]
                if h.update == DUAL_AVERAGING:
                    w_j = da_weight(u[j], ssq[j], <double> t, h)
                elif h.update == MIRROR_DESCENT:
                    w_j = md_idle_steps(w[j], ssq[j], t - last[j], h)
                    last[j] = t
                else:
                    w_j = ftrl_weight(u[j], ssq[j], h)
                w[j] = w_j
                p += w_j * row_data[k]

            sum_loss += sw * loss.loss(yi, p)
            sum_weight += sw
            # The gradient of sw * loss(y, <w, x> + b) is d * x.
            d = sw * loss.dloss(yi, p)
            t += 1
            if d == 0.0:
                # A zero gradient step; mirror descent's idle-step closed
                # form accounts for it when the features are next read.
                continue

            for k in range(nnz):
                j = row_indices[k]
                g = d * row_data[k]
                if h.update == FTRL_PROXIMAL:
                    sigma = (sqrt(ssq[j] + g * g) - sqrt(ssq[j])) / h.eta
                    u[j] += g - sigma * w[j]
                    ssq[j] += g * g
                else:
                    u[j] += g
                    ssq[j] += g * g
                    if h.update == MIRROR_DESCENT:
                        H = h.delta + sqrt(ssq[j])
                        if H > 0.0:  # H == 0 only for an untouched zero weight
                            w[j] = md_prox(w[j] - h.eta * g / H, H, h)
                            last[j] = t

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

    problem.intercept = b
    problem.intercept_sum_grad = u_b
    problem.intercept_sum_sq_grad = ssq_b
    return sum_loss, sum_weight
