"""Generalized implicit FTRL kernel (Chen & Orabona, ICML 2023), O(nnz) per step.

Regulariser ``psi_t(w) = (lambda_t / 2) ||w||^2`` and ``theta_1 = 0``.  Round
``t`` on the sample ``(s, y)`` of importance weight ``h`` (``s`` = the row,
plus a constant-1 coordinate for the intercept), with ``l_t(w) = h l(y, <w, s>)``:

* predict with ``w_t = theta_t / lambda_t``, margin ``p = <theta_t, s> / lambda_t``;
* pay ``l_t(w_t)``; ``g_t = d s`` with ``d = h l'(y, p)``;
* pick ``z_t = c_z s`` (every choice is a scalar times ``s``):

  - linear:    ``c_z = d``;
  - truncated: ``c_z = min(1, lambda_t l_t(w_t) / (d^2 ||s||^2)) d`` (aProx);
  - twostep:   ``c_z = h l'(y, p - d ||s||^2 / lambda_t)``, the gradient at the
    look-ahead point ``w_t - g_t / lambda_t``;
  - proximal:  ``c_z = -lambda_t c`` where ``w_t + c s = Prox_{l_t/lambda_t}(w_t)``
    (``Loss.prox_step(y, p, ||s||^2, h / lambda_t)``);

* ``theta_{t+1} = theta_t - z_t`` (only ``supp(s)`` changes);
* ``lambda_{t+1} = lambda_t + gamma_{t-1} / beta^2`` (Corollary 4.3, "two steps
  behind": ``gamma_{t-1}`` is known before round ``t`` starts, ``gamma_0 = 0``,
  ``lambda_1 = G / beta``);
* ``gamma_t = max(0, l_t(w_t) - l_t(w_{t+1}) - lambda_t/2 ||w_{t+1} - w_t||^2)``.

Nothing is stored per step but ``theta``: a weight is ``theta_j / lambda``,
read with the current ``lambda`` when its feature is touched (the estimator
computes its ``coef_`` the same way, when it is read), so a call costs
O(nnz) whatever the width.  The global
``||w_{t+1} - w_t||^2`` needs the running ``S = ||theta||^2``: with
``delta = 1/lambda_{t+1} - 1/lambda_t``,
``w_{t+1} - w_t = delta theta_t - z_t / lambda_{t+1}``, so
``||w_{t+1} - w_t||^2 = delta^2 S - 2 delta <theta_t, z_t> / lambda_{t+1}
+ ||z_t||^2 / lambda_{t+1}^2`` and ``S_{t+1} = S - 2 <theta_t, z_t> + ||z_t||^2``,
where ``<theta_t, z_t> = c_z <theta_t, s>`` and ``||z_t||^2 = c_z^2 ||s||^2``
come from the row alone.
"""

cimport cython
from cython cimport floating
from libc.math cimport fmax, fmin
from libc.stdint cimport int64_t

from ._dataset cimport RowPass, check_pass_input, index_t, row_pass, step_row
from ._loss cimport Loss

cdef enum:
    LINEAR = 0
    TRUNCATED = 1
    TWOSTEP = 2
    PROXIMAL = 3

UPDATE_CODES = {
    "linear": LINEAR,
    "truncated": TRUNCATED,
    "twostep": TWOSTEP,
    "proximal": PROXIMAL,
}


@cython.final
cdef class ImplicitFTRLProblem:
    """State of one (binary or regression) problem for the length of one call.

    ``theta`` is a view of the estimator's fitted array, updated in place;
    the scalars are read back through the attributes.  Never kept as fitted
    state.
    """
    cdef Loss loss
    cdef int update
    cdef double beta
    cdef bint fit_intercept
    cdef double[::1] theta
    cdef public double theta_intercept
    cdef public double intercept
    cdef public double lam
    cdef public double gamma
    cdef public double sq_norm_theta
    cdef public int64_t t

    def __init__(self, *, Loss loss, str update, double beta, bint fit_intercept,
                 double[::1] theta, double theta_intercept, double lam, double gamma,
                 double sq_norm_theta, int64_t t):
        if not lam > 0.0:
            raise ValueError(f"lambda must be > 0, got {lam!r}.")
        self.loss = loss
        self.update = UPDATE_CODES[update]
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.theta = theta
        self.theta_intercept = theta_intercept
        self.intercept = theta_intercept / lam
        self.lam = lam
        self.gamma = gamma
        self.sq_norm_theta = sq_norm_theta
        self.t = t


def run_epoch(ImplicitFTRLProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order):
    """One predict-then-learn pass over ``X[order]``.

    Rows of zero weight are skipped (they are not rounds).  Returns
    ``(sum of h * loss before each step, sum of h)``.
    """
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.theta.shape[0], y.shape[0], sample_weight, order)
    cdef Loss loss = problem.loss
    cdef int update = problem.update
    cdef double inv_beta2 = 1.0 / (problem.beta * problem.beta)
    cdef bint fit_intercept = problem.fit_intercept
    cdef double* theta = &problem.theta[0] if n_features > 0 else NULL
    cdef double theta_b = problem.theta_intercept
    cdef double lam = problem.lam
    cdef double gamma = problem.gamma
    cdef double S = problem.sq_norm_theta
    cdef int64_t t = problem.t

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef Py_ssize_t s, i, k, nnz
    cdef double h, yi, v, dot, sq, p, lv, d, cz, lam_next, delta, dw2, p_new
    cdef double sum_loss = 0.0, sum_weight = 0.0

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &row_data, &row_indices)
            h = sample_weight[i]
            if h == 0.0:
                continue
            yi = y[i]

            # <theta_t, s> and ||s||^2 over the row (and the intercept).
            if fit_intercept:
                dot = theta_b
                sq = 1.0
            else:
                dot = 0.0
                sq = 0.0
            for k in range(nnz):
                v = row_data[k]
                dot += theta[row_indices[k]] * v
                sq += v * v
            p = dot / lam
            lv = h * loss.loss(yi, p)
            sum_loss += lv
            sum_weight += h
            d = h * loss.dloss(yi, p)
            lam_next = lam + gamma * inv_beta2

            # z_t = cz * s
            if sq == 0.0:
                cz = 0.0
            elif update == LINEAR:
                cz = d
            elif update == TRUNCATED:
                if d == 0.0:
                    cz = 0.0
                else:
                    cz = d * fmin(1.0, lam * lv / (d * d * sq))
            elif update == TWOSTEP:
                cz = h * loss.dloss(yi, p - d * sq / lam)
            else:
                cz = -lam * loss.prox_step(yi, p, sq, h / lam)

            if cz != 0.0:
                for k in range(nnz):
                    theta[row_indices[k]] -= cz * row_data[k]
                if fit_intercept:
                    theta_b -= cz

            # ||w_{t+1} - w_t||^2 and ||theta_{t+1}||^2 from running sums.
            delta = 1.0 / lam_next - 1.0 / lam
            dw2 = (delta * delta * S - 2.0 * delta * cz * dot / lam_next
                   + cz * cz * sq / (lam_next * lam_next))
            dw2 = fmax(dw2, 0.0)
            S = fmax(S - 2.0 * cz * dot + cz * cz * sq, 0.0)
            p_new = (dot - cz * sq) / lam_next
            gamma = fmax(lv - h * loss.loss(yi, p_new) - 0.5 * lam * dw2, 0.0)
            lam = lam_next
            t += 1

        problem.lam = lam
        problem.t = t

    problem.theta_intercept = theta_b
    problem.intercept = theta_b / lam
    problem.gamma = gamma
    problem.sq_norm_theta = S
    return sum_loss, sum_weight
