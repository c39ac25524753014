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

import numpy as np

cimport cython
cimport numpy as cnp
from cython cimport floating
from libc.float cimport DBL_MAX
from libc.math cimport NAN, fabs, fmin, isfinite
from libc.stdint cimport int64_t

from ._dataset cimport (RowPass, asks_for_state_ahead, check_pass_input, columns_ahead,
                        float64_values, index_t, learnable_rows, plain_rows_largest,
                        prefetch_entries, row_pass, step_row)
from ._loss cimport Loss, positive_part

cnp.import_array()

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
    # theta's entries at the columns of a short call's rows, saved before
    # its pass (``save_columns``) so that the call can be taken back
    # (``restore_columns``) in O(nnz)
    cdef int64_t[::1] saved_columns
    cdef double[::1] saved_values
    cdef Py_ssize_t n_saved
    cdef public double theta_intercept
    cdef public double intercept
    cdef public double lam
    cdef public double gamma
    cdef public double sq_norm_theta
    cdef public int64_t t
    # whether the last pass wrote a NaN or infinite entry of theta: each is
    # tested as it is written, so that the estimator's finite checks need
    # not read theta again
    cdef public bint wrote_nonfinite

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
        self.saved_columns = np.empty(0, dtype=np.int64)
        self.saved_values = np.empty(0)
        self.n_saved = 0

    def restore_columns(self):
        """Put back the entries saved by the last ``save_columns``, in the
        reverse order (a column saved twice ends as it was first saved)."""
        cdef Py_ssize_t s
        for s in range(self.n_saved - 1, -1, -1):
            self.theta[self.saved_columns[s]] = self.saved_values[s]
        self.n_saved = 0


cdef int save_columns(ImplicitFTRLProblem problem, const index_t[::1] columns) except -1:
    """Save theta's entries at ``columns`` (in range, repeats allowed) for
    ``problem.restore_columns()``."""
    cdef Py_ssize_t s, n = columns.shape[0]
    if problem.saved_columns.shape[0] < n:
        problem.saved_columns = np.empty(max(n, 64), dtype=np.int64)
        problem.saved_values = np.empty(max(n, 64))
    for s in range(n):
        problem.saved_columns[s] = columns[s]
        problem.saved_values[s] = problem.theta[columns[s]]
    problem.n_saved = n
    return 0


# the values a short call's passes give each problem (learn_rows), in the
# order of the rows of its result
cdef enum:
    AFTER_THETA_INTERCEPT = 0
    AFTER_INTERCEPT = 1
    AFTER_LAMBDA = 2
    AFTER_GAMMA = 3
    AFTER_SQ_NORM = 4
    AFTER_LOSS = 5
    AFTER_WEIGHT = 6
    N_AFTER = 7


def learn_rows(list problems,
               const floating[::1] X_data,
               const index_t[::1] X_indices,
               const index_t[::1] X_indptr,
               bint is_dense,
               Py_ssize_t n_features,
               const double[:, ::1] targets,
               const double[::1] sample_weight,
               const int64_t[::1] order,
               double largest_factor,
               double limit,
               t_value,
               theta_intercepts,
               lambdas,
               gammas,
               sq_norms,
               cumulative_losses,
               cumulative_weights):
    """A short call's passes (``_short_calls.ImplicitFTRLPath``), all or
    nothing: problem k's ``run_epoch`` over ``X[order]`` with the targets
    ``targets[k]``, from step t and entry k of the estimator's arrays of
    theta's intercept, lambda, the pending gamma, ||theta||^2, the
    cumulative loss and weight.

    Returns ``(after, t after, sum of the passes' losses, their weight,
    average loss)``, ``after`` a (7, n_problems) array whose rows are the
    problems' theta intercept, intercept, lambda, gamma, ||theta||^2,
    cumulative loss and cumulative weight, and the average loss the
    cumulative losses' sum over the first problem's weight (NaN for none),
    summed in problem order as ``_update_average_loss`` sums them; or None, with theta as it was, for rows that are
    not plain or could overflow the state (``_dataset.learnable_rows``,
    with ``largest_factor`` the largest target or weight) and
    when any of those or of theta's entries at the rows' columns is not
    finite.  Each problem's ``restore_columns()`` takes back a successful
    call, and does nothing after one that raised (which changed nothing).
    """
    cdef Py_ssize_t k, r, n_problems = len(problems)
    cdef ImplicitFTRLProblem problem
    cdef double sums[2]
    cdef double total_loss = 0.0, total = 0.0, weight = 0.0, cumulative = 0.0, average
    # First, before anything can fail: nothing to take back yet (the
    # caller's restore_columns() after a failure must not take back an
    # earlier call).  The estimator's arrays are read after that.
    for k in range(n_problems):
        (<ImplicitFTRLProblem> problems[k]).n_saved = 0
    if not learnable_rows(X_data, X_indices, X_indptr, is_dense, n_features,
                          order.shape[0], largest_factor, limit):
        return None
    cdef int64_t t = t_value
    if targets.shape[0] != n_problems:
        raise ValueError("one target row per problem.")
    # one value per problem each (ValueError otherwise), read in place
    cdef const double* theta_intercept = float64_values(theta_intercepts, n_problems, False)
    cdef const double* lam = float64_values(lambdas, n_problems, False)
    cdef const double* gamma = float64_values(gammas, n_problems, False)
    cdef const double* sq_norm = float64_values(sq_norms, n_problems, False)
    cdef const double* cumulative_loss = float64_values(cumulative_losses, n_problems, False)
    cdef const double* cumulative_weight = float64_values(cumulative_weights, n_problems, False)
    cdef cnp.ndarray result = np.empty((N_AFTER, n_problems))
    # after[r * n_problems + k]: row r of the result, problem k
    cdef double* after = <double*> cnp.PyArray_DATA(result)
    for k in range(n_problems):
        problem = problems[k]
        problem.t = t
        problem.theta_intercept = theta_intercept[k]
        problem.lam = lam[k]
        problem.gamma = gamma[k]
        problem.sq_norm_theta = sq_norm[k]
        try:
            pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features,
                      targets[k], sample_weight, order, True, sums)
        except BaseException:  # e.g. no memory to save the entries in
            restore_problems(problems, k + 1)
            raise
        after[AFTER_THETA_INTERCEPT * n_problems + k] = problem.theta_intercept
        after[AFTER_INTERCEPT * n_problems + k] = problem.intercept
        after[AFTER_LAMBDA * n_problems + k] = problem.lam
        after[AFTER_GAMMA * n_problems + k] = problem.gamma
        after[AFTER_SQ_NORM * n_problems + k] = problem.sq_norm_theta
        after[AFTER_LOSS * n_problems + k] = sums[0] + cumulative_loss[k]
        after[AFTER_WEIGHT * n_problems + k] = sums[1] + cumulative_weight[k]
        total_loss += sums[0]
        cumulative += after[AFTER_LOSS * n_problems + k]
        if k == 0:
            weight = sums[1]  # every problem sees the same weights
        for r in range(N_AFTER):
            total += after[r * n_problems + k]
        if not fabs(total) <= DBL_MAX or problem.wrote_nonfinite:
            restore_problems(problems, k + 1)
            return None
    # every problem sees the same weights
    average = (cumulative / after[AFTER_WEIGHT * n_problems]
               if after[AFTER_WEIGHT * n_problems] > 0.0 else NAN)
    return result, (<ImplicitFTRLProblem> problems[0]).t, total_loss, weight, average


cdef int restore_problems(list problems, Py_ssize_t n) except -1:
    cdef Py_ssize_t k
    for k in range(n):
        (<ImplicitFTRLProblem> problems[k]).restore_columns()
    return 0


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
    cdef double sums[2]
    pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features, y, sample_weight,
              order, False, sums)
    return sums[0], sums[1]


cdef int pass_rows(ImplicitFTRLProblem problem,
                   const floating[::1] X_data,
                   const index_t[::1] X_indices,
                   const index_t[::1] X_indptr,
                   bint is_dense,
                   Py_ssize_t n_features,
                   const double[::1] y,
                   const double[::1] sample_weight,
                   const int64_t[::1] order,
                   bint save,
                   double* sums) except -1:
    """The pass of ``run_epoch``, its sums into ``sums``; ``save``: theta's
    entries at X's columns are saved first (``save_columns``)."""
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.theta.shape[0], y.shape[0], sample_weight, order)
    if save:
        save_columns(problem, X_indices)
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
    cdef const index_t* next_indices = NULL
    cdef Py_ssize_t s, i, k, nnz, next_nnz
    cdef double h, yi, v, dot, sq, p, lv, d, cz, lam_next, delta, dw2, p_new, theta_j
    # 1 / lambda, carried from row to row: one row's 1 / lambda_{t+1} is the
    # next row's 1 / lambda_t (the same division, made once).  The row's
    # quotients by lambda are products with it (all but the two-step
    # update's inner margin, which keeps its division): one division a row
    # where there were five, whose latencies lay on the chain from one
    # row's lambda to the next (cadata, 8 dense columns: 660 -> 535 us an
    # epoch)
    cdef double inv_lam = 1.0 / lam, inv_lam_next
    cdef double sum_loss = 0.0, sum_weight = 0.0
    cdef bint nonfinite = False
    # on a wide theta, each row asks for the next row's (prefetch_entries)
    cdef bint prefetch = asks_for_state_ahead(is_dense, n_features, sizeof(double))

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &row_data, &row_indices)
            if prefetch:
                next_nnz = columns_ahead(&rows, s, &next_indices)
                prefetch_entries(theta, sizeof(double), next_indices, next_nnz)
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
            p = dot * inv_lam
            lv = h * loss.loss(yi, p)
            sum_loss += lv
            sum_weight += h
            lam_next = lam + gamma * inv_beta2

            # z_t = cz * s; the proximal update does not read d = h l'(y, p)
            d = h * loss.dloss(yi, p) if update != PROXIMAL else 0.0
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
                cz = -lam * loss.prox_step(yi, p, sq, h * inv_lam)

            if cz != 0.0:
                for k in range(nnz):
                    theta_j = theta[row_indices[k]] - cz * row_data[k]
                    theta[row_indices[k]] = theta_j
                    nonfinite |= not isfinite(theta_j)
                if fit_intercept:
                    theta_b -= cz

            # ||w_{t+1} - w_t||^2 and ||theta_{t+1}||^2 from running sums.
            inv_lam_next = 1.0 / lam_next
            delta = inv_lam_next - inv_lam
            dw2 = (delta * delta * S - 2.0 * delta * cz * dot * inv_lam_next
                   + cz * cz * sq * (inv_lam_next * inv_lam_next))
            dw2 = positive_part(dw2)
            S = positive_part(S - 2.0 * cz * dot + cz * cz * sq)
            p_new = (dot - cz * sq) * inv_lam_next
            gamma = positive_part(lv - h * loss.loss(yi, p_new) - 0.5 * lam * dw2)
            lam = lam_next
            inv_lam = inv_lam_next
            t += 1

        problem.lam = lam
        problem.t = t

    problem.theta_intercept = theta_b
    problem.intercept = theta_b / lam
    problem.gamma = gamma
    problem.sq_norm_theta = S
    problem.wrote_nonfinite = nonfinite
    sums[0] = sum_loss
    sums[1] = sum_weight
    return 0


def csr_row_scores(const double[:, ::1] theta, lambdas, intercepts,
                   const floating[::1] X_data, const index_t[::1] X_indices,
                   const index_t[::1] X_indptr, Py_ssize_t n_rows):
    """``scores[i, k] = <w_k, x_i> + intercepts[k]`` for ``n_rows`` plain
    CSR rows (``_dataset.plain_rows_largest``; else None), with problem k's
    weights ``theta[k] * (1 / lambdas[k])`` computed at the rows' columns
    only (O(nnz)).  The weights are those of the estimator's ``_weights``
    and the sums those of its general path (``csr_scores`` from 0 in each
    row's order, then the intercept added): the same numbers, bit for bit.
    The lambdas must be fixed (finite, > 0)."""
    cdef Py_ssize_t i, k, q
    cdef Py_ssize_t n_problems = theta.shape[0]
    # read in place (ValueError unless one per problem)
    cdef const double* lam = float64_values(lambdas, n_problems, False)
    cdef const double* intercept = float64_values(intercepts, n_problems, False)
    cdef double total, inverse
    if plain_rows_largest(X_data, X_indices, X_indptr, False, theta.shape[1], n_rows) < 0.0:
        return None
    cdef cnp.ndarray scores = np.empty((n_rows, n_problems))
    cdef double* out = <double*> cnp.PyArray_DATA(scores)  # row after row
    with nogil:
        for k in range(n_problems):
            inverse = 1.0 / lam[k]
            for i in range(n_rows):
                total = 0.0
                for q in range(X_indptr[i], X_indptr[i + 1]):
                    total = total + X_data[q] * (theta[k, X_indices[q]] * inverse)
                out[i * n_problems + k] = total + intercept[k]
    return scores
