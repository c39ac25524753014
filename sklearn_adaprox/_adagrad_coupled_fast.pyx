"""Binary AdaGrad kernel for penalties whose step couples all coordinates.

Duchi, Hazan & Singer (2011), "Adaptive Subgradient Methods for Online
Learning and Stochastic Optimization", JMLR 12, section 5: with the metric
``H = diag(delta + sqrt(ssq))`` the AdaGrad step for the l-infinity penalty
and for the l1-ball constraint is no longer separable.  Each step solves

* dual averaging, l-infinity:
  ``w = argmin eta <u, w> + eta lam t ||w||_inf + 0.5 <w, H w>``
  (``linf_prox(eta u, H, eta lam t)``);
* mirror descent, l-infinity:
  ``w = argmin eta <g, w> + eta lam ||w||_inf + 0.5 <w - w_old, H (w - w_old)>``
  (``linf_prox(eta g - H w_old, H, eta lam)``);
* dual averaging, l1 ball:
  ``w = argmin eta <u, w> + 0.5 <w, H w>  s.t. ||w||_1 <= c``
  (``l1_ball_solve(eta u, H, c)``);
* mirror descent, l1 ball:
  ``w = argmin eta <g, w> + 0.5 <w - w_old, H (w - w_old)>  s.t. ||w||_1 <= c``
  (``l1_ball_solve(eta g - H w_old, H, c)``),

with the exact solvers of ``_prox`` (the sort-based threshold of the paper's
Figure 3).  ``u`` is the sum of the gradients, ``ssq`` the sum of their
squares and ``t`` the number of steps taken, this one included.  A
coordinate with ``H_i == 0`` (no gradient yet and ``delta == 0``) has
``w_i = 0``.

Cost.  Every step touches every coordinate: O(d) to form the solver's input
plus the threshold search, O(d + k log d) with k the coordinates above the
threshold, O(d log d) at worst; the sparsity of the row does not help.  This
kernel is meant for dense, moderate-dimensional data; the lazy kernel of
``_adagrad_fast`` is the one for large sparse problems.

The intercept is one more coordinate with feature 1, never penalised and
outside the constraint, updated exactly as in ``_adagrad_fast``.  Labels are
+-1 here.
"""
import numpy as np

cimport cython
from cython cimport floating
from libc.math cimport sqrt
from libc.stdint cimport int64_t

from ._adagrad_rules cimport (DUAL_AVERAGING, FTRL_PROXIMAL, MIRROR_DESCENT, Hyper,
                              intercept_step, make_hyper)
from ._dataset cimport RowPass, check_pass_input, index_t, row_pass, step_row
from ._loss cimport Loss
from ._prox cimport l1_ball_solve, linf_prox, prox_work_size

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


def run_epoch(CoupledProblem problem,
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
