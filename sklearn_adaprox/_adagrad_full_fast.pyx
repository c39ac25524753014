"""Full-matrix AdaGrad kernel (Duchi, Hazan & Singer 2011).

J. Duchi, E. Hazan and Y. Singer, "Adaptive Subgradient Methods for Online
Learning and Stochastic Optimization", JMLR 12 (2011), 2121-2159: the
full-matrix variant with proximal matrix ``H_t = delta I + G_t^{1/2}``,
``G_t = sum_{s <= t} g_s g_s^T``.

One call of ``run_epoch`` makes one pass over the rows named by
``order`` for one binary problem (labels +-1), a ``FullMatrixProblem``.  Its
state is over ``m = n_features + fit_intercept`` coordinates (the intercept,
when fitted, is the last one and its "feature" is the constant 1):

* ``w`` the weights, ``u = sum_t g_t``, ``G = sum_t g_t g_t^T`` (m x m), and
  ``t`` the number of steps taken.

With ``P = diag(1, ..., 1, 0)`` when ``fit_intercept`` (the intercept is not
penalised), else ``I``, every step t (after adding its gradient g to u, G):

* dual averaging:  ``w = -eta (H + eta l2 t P)^+ u``;
* mirror descent:  ``w <- (H + eta l2 P)^+ (H w - eta g)``.

``G^{1/2}`` and the pseudo-inverses ``^+`` are taken through symmetric
eigendecompositions, treating every eigenvalue ``<= m * DBL_EPSILON * (largest
eigenvalue)`` as zero (for the root) or as not invertible (for ``^+``).

Cost of a step: O(nnz^2) to add ``g g^T`` to G, one LAPACK ``dsyevd`` of G
(O(m^3)) and a few O(m^2) matrix-vector products.  All of H's functions are
evaluated in G's eigenbasis ``G = Q diag(lam) Q^T``, where
``H = Q diag(mu) Q^T`` with ``mu = delta + sqrt(lam)``:

* when ``P = I`` (or the penalty is 0), ``H + cP`` has the eigenvalues
  ``mu + c`` in the same basis, so its pseudo-inverse costs two products
  with Q;
* with an unpenalised intercept ``H + cP = (H + cI) - c e e^T`` (``e`` the
  intercept's unit vector) is a rank-one downdate of a matrix that is
  diagonal in that basis, solved by Sherman-Morrison at the same cost.  Its
  smallest eigenvalue is at least ``min(mu + c) * den`` (interlacing, see
  ``solve_shifted``), so when that bound clears the pseudo-inverse threshold
  the inverse *is* the pseudo-inverse; only otherwise (in practice: delta = 0
  and a nearly singular matrix) is ``H + cP`` formed and decomposed itself.

A step whose loss derivative is 0 leaves u and G (hence the eigenbasis)
unchanged: with l2 = 0 it changes nothing and costs O(nnz); with l2 > 0 the
weights are recomputed from the cached decomposition in O(m^2).
"""
import numpy as np

cimport cython
from cython cimport floating
from libc.float cimport DBL_EPSILON
from libc.math cimport sqrt
from libc.stdint cimport int64_t
from libc.string cimport memcpy
from scipy.linalg.cython_blas cimport dgemv, dsyrk
from scipy.linalg.cython_lapack cimport dsyevd

from ._adagrad_rules cimport DUAL_AVERAGING, MIRROR_DESCENT, update_code
from ._dataset cimport RowPass, check_pass_input, index_t, row_pass, step_row
from ._loss cimport Loss

# Largest n_features the estimator accepts for the full-matrix update.  A
# dense step is one m x m eigendecomposition, O(m^3): at 800 a step stays
# well under 0.1 s on a laptop-class core, with room for a slower machine
# (measured by benchmarks/bench_design_choices.py, table full_matrix).
FULL_MATRIX_MAX_FEATURES = 800

# A sufficient condition for "every eigenvalue of H + cP is above the
# pseudo-inverse threshold" must leave room for the round-off of an
# eigensolver run on the same matrix; the bound is required to clear the
# threshold by this factor before the closed form is trusted.
cdef double CERTIFICATE_MARGIN = 2.0


cdef struct Workspace:
    int m
    # Eigenvectors of G, column-major as LAPACK returns them: eigenvector j
    # is Q[j * m : (j + 1) * m], its intercept component Q[j * m + m - 1].
    double* Q
    double* lam      # eigenvalues of G, ascending
    double* mu       # eigenvalues of H = delta I + G^{1/2} in the same basis
    double* s        # a vector in eigen-coordinates
    double* gbuf     # dense scatter of the current gradient, zero elsewhere
    double* work     # dsyevd workspaces
    int lwork
    int* iwork
    int liwork
    # Fallback of solve_shifted: H + cP formed and decomposed itself.
    double* B        # m x m: H + cP, then its eigenvectors (column-major)
    double* C        # m x m: Q diag(sqrt(mu)), whose Gram matrix is H
    double* lam2     # eigenvalues of H + cP
    double* r        # a vector in the original coordinates


cdef int sym_eig(double* A, double* lam, Workspace* ws) noexcept nogil:
    """Eigendecomposition of the symmetric A (lower triangle read) in place:
    eigenvalues ascending in lam, eigenvectors in A (column-major)."""
    cdef char jobz = b'V'
    cdef char uplo = b'L'
    cdef int m = ws.m
    cdef int info = 0
    dsyevd(&jobz, &uplo, &m, A, &m, lam, ws.work, &ws.lwork, ws.iwork,
           &ws.liwork, &info)
    return info


cdef inline void times_q(const double* Q, double* x, double* out, int m,
                         double alpha, double beta, bint transpose) noexcept nogil:
    """out = alpha * Q x + beta * out (Q^T x if transpose); Q column-major."""
    cdef char trans = b'T' if transpose else b'N'
    cdef int inc = 1
    dgemv(&trans, &m, &m, &alpha, <double*> Q, &m, x, &inc, &beta, out, &inc)


cdef int decompose(const double* G, double delta, Workspace* ws) noexcept nogil:
    """Eigenbasis Q of G and the eigenvalues mu of H = delta I + G^{1/2}.

    Eigenvalues at or below m * DBL_EPSILON * max(lam) are round-off of an
    exact zero (G is a sum of t rank-one terms, singular while t < m) or
    negative; their square root is taken as 0.
    """
    cdef int m = ws.m
    cdef Py_ssize_t i
    cdef double tol
    cdef int info
    memcpy(ws.Q, G, m * m * sizeof(double))
    info = sym_eig(ws.Q, ws.lam, ws)
    if info != 0:
        return info
    tol = m * DBL_EPSILON * ws.lam[m - 1]
    for i in range(m):
        ws.mu[i] = delta + (sqrt(ws.lam[i]) if ws.lam[i] > tol else 0.0)
    return 0


cdef int solve_shifted(Workspace* ws, double c, bint free_last, double alpha,
                       double* out) noexcept nogil:
    """out = alpha * (H + cP)^+ Q s, with s = ws.s in G's eigen-coordinates.

    P = I, or diag(1, ..., 1, 0) when ``free_last``; c >= 0.  ws.s is
    overwritten.
    """
    cdef int m = ws.m
    cdef Py_ssize_t i, j
    cdef double d, dmin, dmax, tol, den, q, v_last, coef
    cdef int info
    cdef char uplo = b'L'
    cdef char no_trans = b'N'
    cdef double one = 1.0, zero = 0.0

    if c == 0.0 or not free_last:
        # H + cI = Q diag(mu + c) Q^T: its eigenvalues are mu + c.
        dmax = ws.mu[0] + c
        for i in range(1, m):
            dmax = max(dmax, ws.mu[i] + c)
        tol = m * DBL_EPSILON * dmax
        for i in range(m):
            d = ws.mu[i] + c
            ws.s[i] = ws.s[i] / d if d > tol else 0.0
        times_q(ws.Q, ws.s, out, m, alpha, 0.0, False)
        return 0

    # H + cP = A - c e e^T with A = H + cI = Q diag(d) Q^T, d = mu + c > 0.
    # Sherman-Morrison: (A - c e e^T)^{-1} = A^{-1} + c A^{-1} e e^T A^{-1} / den
    # with den = 1 - c e^T A^{-1} e = sum_i q_i^2 mu_i / d_i (q = Q^T e, and
    # sum q_i^2 = 1), a sum of non-negative terms: no cancellation.
    # In eigen-coordinates, with v_last = e^T A^{-1} Q s:
    #   (H + cP)^{-1} Q s = Q diag(1/d) (s + (c v_last / den) q).
    den = 0.0
    v_last = 0.0
    dmin = ws.mu[0] + c
    dmax = dmin
    for i in range(m):
        d = ws.mu[i] + c
        q = ws.Q[i * m + m - 1]
        den += q * q * ws.mu[i] / d
        v_last += q * ws.s[i] / d
        dmin = min(dmin, d)
        dmax = max(dmax, d)
    # Certificate that every eigenvalue of H + cP clears the pseudo-inverse
    # threshold.  The eigenvalues x_1 <= ... <= x_m of diag(d) - c q q^T
    # interlace those of diag(d) (sorted d_1 <= ... <= d_m): x_i <= d_i and
    # prod x_i = det = prod d_i * den, so x_1 >= d_1 * den = dmin * den.  The
    # largest is at most dmax.
    if dmin * den > CERTIFICATE_MARGIN * m * DBL_EPSILON * dmax:
        coef = c * v_last / den
        for i in range(m):
            ws.s[i] = (ws.s[i] + coef * ws.Q[i * m + m - 1]) / (ws.mu[i] + c)
        times_q(ws.Q, ws.s, out, m, alpha, 0.0, False)
        return 0

    # Near-singular H + cP (possible only with delta = 0): decompose it.
    # r = Q s back in the original coordinates.
    times_q(ws.Q, ws.s, ws.r, m, 1.0, 0.0, False)
    # H = C C^T with C = Q diag(sqrt(mu)) (mu >= 0); dsyrk fills the lower
    # triangle of B, which is all that dsyevd reads.
    for i in range(m):
        d = sqrt(ws.mu[i])
        for j in range(m):
            ws.C[i * m + j] = ws.Q[i * m + j] * d
    dsyrk(&uplo, &no_trans, &m, &m, &one, ws.C, &m, &zero, ws.B, &m)
    for i in range(m - 1):
        ws.B[i * m + i] += c
    info = sym_eig(ws.B, ws.lam2, ws)
    if info != 0:
        return info
    tol = m * DBL_EPSILON * ws.lam2[m - 1]
    times_q(ws.B, ws.r, ws.s, m, 1.0, 0.0, True)
    for i in range(m):
        ws.s[i] = ws.s[i] / ws.lam2[i] if ws.lam2[i] > tol else 0.0
    times_q(ws.B, ws.s, out, m, alpha, 0.0, False)
    return 0


# final: no subclass, so the calls of its cdef methods are direct (no vtable)
@cython.final
cdef class FullMatrixProblem:
    """State of one binary full-matrix AdaGrad problem for the length of one
    pass.

    ``coef`` and ``sum_grad`` (length n_features) and ``sum_outer_grad``
    (``G``, m x m with ``m = n_features + fit_intercept``, the intercept
    last) are views of the estimator's arrays; ``G`` is updated in place,
    ``coef`` and ``sum_grad`` at the end of the pass.  The kernel works on
    ``w`` and ``u`` over the m coordinates (the intercept scalars as their
    last entries when fitted); the intercept scalars and ``t`` are read back
    through the attributes.  Never kept as fitted state.
    """
    cdef Loss loss
    cdef int update
    cdef double eta
    cdef double delta
    cdef double l2
    cdef bint fit_intercept
    cdef double[::1] coef
    cdef double[::1] sum_grad
    cdef double[:, ::1] G
    cdef double[::1] w              # (coef, intercept), m entries
    cdef double[::1] u              # (sum_grad, intercept_sum_grad)
    cdef public double intercept
    cdef public double intercept_sum_grad
    cdef public int64_t t

    def __init__(self, *, Loss loss not None, str update, double eta, double delta,
                 double l2, bint fit_intercept, double[::1] coef, double[::1] sum_grad,
                 double[:, ::1] sum_outer_grad, double intercept, double intercept_sum_grad,
                 int64_t t):
        self.update = update_code(update)
        if self.update not in (DUAL_AVERAGING, MIRROR_DESCENT):
            raise ValueError("update must be one of ['dual_averaging', "
                             f"'mirror_descent'], got {update!r}.")
        cdef Py_ssize_t d = coef.shape[0]
        cdef Py_ssize_t m = d + fit_intercept
        if m == 0:
            raise ValueError("The problem must have at least one coordinate.")
        if (sum_grad.shape[0] != d or sum_outer_grad.shape[0] != m
                or sum_outer_grad.shape[1] != m):
            raise ValueError(
                f"sum_grad must have length {d} and G shape ({m}, {m}); got "
                f"{sum_grad.shape[0]} and ({sum_outer_grad.shape[0]}, "
                f"{sum_outer_grad.shape[1]}).")
        self.loss = loss
        self.eta = eta
        self.delta = delta
        self.l2 = l2
        self.fit_intercept = fit_intercept
        self.coef = coef
        self.sum_grad = sum_grad
        self.G = sum_outer_grad
        w = np.empty(m)
        u = np.empty(m)
        w[:d] = coef
        u[:d] = sum_grad
        if fit_intercept:
            w[d] = intercept
            u[d] = intercept_sum_grad
        self.w = w
        self.u = u
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.t = t

    cdef void store(self) noexcept:
        """The m coordinates back into coef, sum_grad and the intercept."""
        cdef Py_ssize_t j, d = self.coef.shape[0]
        for j in range(d):
            self.coef[j] = self.w[j]
            self.sum_grad[j] = self.u[j]
        if self.fit_intercept:
            self.intercept = self.w[d]
            self.intercept_sum_grad = self.u[d]


def run_epoch(FullMatrixProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order):
    """One predict-then-learn pass of full-matrix AdaGrad over ``X[order]``.

    Duchi, Hazan & Singer (2011), full-matrix proximal term
    ``H = delta I + G^{1/2}``; see the module docstring for the rules.  A row
    of sample weight 0 is skipped entirely (it is not a step), so after the
    pass the step count is ``t`` plus the number of rows of ``order`` with
    non-zero weight.  y in {-1, +1}.

    Returns ``(sum of weight * loss before each step, sum of weights)``.
    """
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.coef.shape[0], y.shape[0], sample_weight, order)
    cdef int code = problem.update
    cdef int m = problem.w.shape[0]
    cdef double eta = problem.eta
    cdef double delta = problem.delta
    cdef double l2 = problem.l2
    cdef bint fit_intercept = problem.fit_intercept
    cdef Loss loss = problem.loss
    cdef int64_t t = problem.t

    # Workspaces, once per pass.  dsyevd's sizes come from its own query.
    cdef Workspace ws
    cdef double work_query = 0.0
    cdef int iwork_query = 0
    cdef int info = 0
    cdef char jobz = b'V'
    cdef char uplo = b'L'
    ws.m = m
    ws.lwork = -1
    ws.liwork = -1
    # (a workspace query reads neither the matrix nor the eigenvalues)
    dsyevd(&jobz, &uplo, &m, &work_query, &m, &work_query, &work_query, &ws.lwork,
           &iwork_query, &ws.liwork, &info)
    ws.lwork = max(<int> work_query, 1 + 6 * m + 2 * m * m)
    ws.liwork = max(iwork_query, 3 + 5 * m)

    cdef double[::1] Q_arr = np.empty(m * m)
    cdef double[:, ::1] vec_arr = np.zeros((6, m))
    cdef double[::1] work_arr = np.empty(ws.lwork)
    cdef int[::1] iwork_arr = np.empty(ws.liwork, dtype=np.intc)
    # H + cP needs decomposing on its own only with an unpenalised intercept.
    cdef bint free_last = fit_intercept and l2 > 0.0
    cdef double[:, ::1] fallback_arr = np.empty(
        (2, m * m if free_last else 1))
    cdef Py_ssize_t[::1] cols_arr = np.empty(m, dtype=np.intp)
    cdef double[::1] grad_arr = np.empty(m)
    ws.Q = &Q_arr[0]
    ws.lam = &vec_arr[0, 0]
    ws.mu = &vec_arr[1, 0]
    ws.s = &vec_arr[2, 0]
    ws.gbuf = &vec_arr[3, 0]
    ws.lam2 = &vec_arr[4, 0]
    ws.r = &vec_arr[5, 0]
    ws.work = &work_arr[0]
    ws.iwork = &iwork_arr[0]
    ws.B = &fallback_arr[0, 0]
    ws.C = &fallback_arr[1, 0]

    cdef double* wp = &problem.w[0]
    cdef double* up = &problem.u[0]
    cdef double* Gp = &problem.G[0, 0]
    cdef Py_ssize_t* cols = &cols_arr[0]
    cdef double* grad = &grad_arr[0]

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, k, a, b, nnz, n_nz
    cdef double sw, yi, p, dd, ga, c
    cdef double* G_row
    cdef double sum_loss = 0.0, sum_weight = 0.0
    # ws.Q / ws.mu describe the current G; false until the first decompose
    # and whenever a gradient changes G.
    cdef bint eigen_current = False

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &x, &idx)
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]

            # The row's non-zeros (a dense row's zeros have zero gradient, so
            # dense and CSR input take the same arithmetic) and the margin.
            n_nz = 0
            p = 0.0
            for k in range(nnz):
                if x[k] == 0.0:
                    continue
                cols[n_nz] = idx[k]
                grad[n_nz] = x[k]
                p += wp[idx[k]] * x[k]
                n_nz += 1
            if fit_intercept:
                p += wp[n_features]
                cols[n_nz] = n_features
                grad[n_nz] = 1.0
                n_nz += 1

            sum_loss += sw * loss.loss(yi, p)
            sum_weight += sw
            dd = sw * loss.dloss(yi, p)
            t += 1

            if dd != 0.0:
                # g = dd * [x, 1]; u += g; G += g g^T on the row's block only.
                for a in range(n_nz):
                    grad[a] *= dd
                    up[cols[a]] += grad[a]
                for a in range(n_nz):
                    ga = grad[a]
                    G_row = Gp + cols[a] * m
                    for b in range(n_nz):
                        G_row[cols[b]] += ga * grad[b]
                eigen_current = False
            elif l2 == 0.0:
                # Neither H, u nor the penalty moved: the weights stand.
                continue

            if not eigen_current:
                info = decompose(Gp, delta, &ws)
                if info != 0:
                    break
                eigen_current = True

            if code == DUAL_AVERAGING:
                # w = -eta (H + eta l2 t P)^+ u
                times_q(ws.Q, up, ws.s, m, 1.0, 0.0, True)
                c = eta * l2 * <double> t
                info = solve_shifted(&ws, c, free_last, -eta, wp)
            else:
                # w <- (H + eta l2 P)^+ (H w - eta g); in eigen-coordinates
                # Q^T (H w - eta g) = mu * (Q^T w) - eta Q^T g.
                times_q(ws.Q, wp, ws.s, m, 1.0, 0.0, True)
                for k in range(m):
                    ws.s[k] *= ws.mu[k]
                if dd != 0.0:
                    for a in range(n_nz):
                        ws.gbuf[cols[a]] = grad[a]
                    times_q(ws.Q, ws.gbuf, ws.s, m, -eta, 1.0, True)
                    for a in range(n_nz):
                        ws.gbuf[cols[a]] = 0.0
                info = solve_shifted(&ws, eta * l2, free_last, 1.0, wp)
            if info != 0:
                break

    problem.t = t
    problem.store()
    if info != 0:
        raise np.linalg.LinAlgError(
            f"LAPACK dsyevd failed to converge (info={info}); u and G include "
            "the gradient of the failed step, w does not.")
    return sum_loss, sum_weight
