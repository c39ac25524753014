"""Diagonal AdaGrad kernel (Duchi, Hazan & Singer 2011): one binary problem
with an element-wise penalty (l1, l2, elastic net), lazy, O(nnz) per sample.

The other AdaGrad kernels have modules of their own, all on the closed forms
of ``_adagrad_rules.pxd``: ``_adagrad_coupled_fast`` (the l-infinity penalty
and the l1-ball constraint, whose step couples every coordinate, O(d log d)),
``_adagrad_multinomial_fast`` (one weight matrix for all classes,
element-wise or mixed-norm penalties over its rows, O(n_classes nnz)) and
``_adagrad_full_fast`` (full-matrix AdaGrad, dense linear algebra).

One call of ``run_epoch`` makes one pass over the rows named by ``order`` for
one binary problem.  A step costs O(nnz of the row): a weight whose feature
is absent from the row is not touched and is brought up to date, exactly and
in closed form, the next time its feature is read (``coef_into`` / ``coef_at``
of the Problem read the weights of every, or of some, features at step t).

Per coordinate i the state is ``u_i`` (sum of gradients; for FTRL-Proximal
the shifted sum ``z_i``), ``ssq_i`` (sum of squared gradients) and, for mirror
descent, the weight ``w_i`` with the step ``s_i`` at which it was last
current.  ``H_i = delta + sqrt(ssq_i)``.  A coordinate's entries sit side by
side in one array ``acc``, ``(u_i, sqrt(ssq_i))`` or, for mirror descent,
``(u_i, sqrt(ssq_i), w_i, s_i)`` (``s_i`` an integer held exactly as a
double): a rare feature then costs one cache miss, not one per quantity, and
reading a weight costs no square root (the root is updated as
``sqrt(root_i^2 + g_i^2)`` only when a gradient arrives).
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
cimport numpy as cnp
from cython cimport floating
from libc.math cimport isfinite, sqrt
from libc.stdint cimport int32_t, int64_t

cdef extern from "_simd.h" nogil:
    void div_pair(double a0, double a1, double b0, double b1, double* r0, double* r1)
    void sqrt_pair(double a0, double a1, double* r0, double* r1)
    bint avx_available()
    double quotient_sum_avx(const double* acc, const int32_t* idx, const double* x,
                            Py_ssize_t nnz, double shift)
    Py_ssize_t root_update_avx(double* acc, const int32_t* idx, const double* x,
                               Py_ssize_t nnz, double d, int* nonfinite)
    double threshold_quotient_sum_avx(const double* acc, const int32_t* idx,
                                      const double* x, Py_ssize_t nnz, double eta,
                                      double delta, double l1_shift, double l2_shift)
    double ftrl_row_weights_avx(const double* acc, const int32_t* idx, const double* x,
                                Py_ssize_t nnz, double* row_w, double eta, double delta,
                                double l1_shift, double eta_l2_shift)
    Py_ssize_t md_idle_row_avx(double* w, const double* root, const double* idle,
                               Py_ssize_t nnz, double eta, double delta, double l1, double l2)
    Py_ssize_t ftrl_step_avx(double* acc, const int32_t* idx, const double* x,
                             const double* row_w, Py_ssize_t nnz, double d, double inv_eta,
                             int* nonfinite)
    Py_ssize_t md_step_avx(double* acc, const int32_t* idx, const double* x,
                           Py_ssize_t nnz, double d, double t, double eta, double delta,
                           double l1, double l2, bint penalised, int* nonfinite_sums,
                           int* nonfinite_weights)

from ._adagrad_rules cimport (DUAL_AVERAGING, FTRL_PROXIMAL, MIRROR_DESCENT, Hyper,
                              adaprox_exp_pair, adaprox_log1p,
                              da_intercept, da_root, da_weight, ftrl_weight, ftrl_z_step,
                              intercept_step, make_hyper, md_idle_steps, md_prox)
from ._dataset cimport (RowPass, asks_for_state_ahead, check_pass_input, columns_ahead,
                        float64_values, index_t, learnable_rows, longest_row,
                        plain_rows_largest, prefetch_entries, row_pass, step_row)
from ._loss cimport Loss

cnp.import_array()

# Whether the CPU (and the OS) run AVX: the dual-averaging and FTRL-Proximal
# loops then take four divisions or square roots per instruction (same
# results).
cdef bint HAVE_AVX = avx_available()


def set_avx(bint enabled):
    """Test hook: take the AVX loops when ``enabled`` and the CPU runs AVX,
    else the SSE2 ones, here and in the multinomial kernel.  Returns
    whether AVX was in use before."""
    global HAVE_AVX
    from . import _adagrad_multinomial_fast
    previous = HAVE_AVX
    HAVE_AVX = enabled and avx_available()
    _adagrad_multinomial_fast.set_avx(enabled)
    return previous


def md_catch_up(double[::1] w, const double[::1] root, const double[::1] idle, *,
                double eta, double delta, double l1, double l2, bint four_lanes):
    """Test hook: mirror descent's idle-step closed form on each entry, in
    place: ``w[k]`` becomes the weight after ``idle[k]`` steps (an integer)
    with root ``root[k]``; as the kernel does it: through the AVX loop if
    ``four_lanes`` and the AVX loops are on (``set_avx``; the last
    ``len(w) % 4`` entries by the scalar form), else entry by entry."""
    cdef Hyper h = make_hyper("mirror_descent", eta, delta, l1, l2, True)
    cdef Py_ssize_t k = 0, n = w.shape[0]
    if root.shape[0] != n or idle.shape[0] != n:
        raise ValueError("w, root and idle must have the same length")
    if four_lanes and HAVE_AVX and n > 0:
        k = md_idle_row_avx(&w[0], &root[0], &idle[0], n, eta, delta, l1, l2)
    for k in range(k, n):
        w[k] = md_idle_steps(w[k], root[k], idle[k], h)


def log1p_exp(const double[::1] x, const double[::1] y):
    """Test hook: ``(log1p(x), exp(y), 1 - exp(y))`` as mirror descent's
    catch-up computes them (``x >= 0``, ``y <= 0``), entry by entry."""
    cdef Py_ssize_t k
    out = np.empty((3, x.shape[0]))
    cdef double[:, ::1] o = out
    if y.shape[0] != x.shape[0]:
        raise ValueError("x and y must have the same length")
    for k in range(x.shape[0]):
        o[0, k] = adaprox_log1p(x[k])
        adaprox_exp_pair(y[k], &o[1, k], &o[2, k])
    return out


cdef extern from "_simd.h":
    const char* SIMD_PATHS_C "SKLEARN_ADAPROX_SIMD_PATHS"

# The SIMD paths compiled into this build: "sse2+avx", "sse2", "avx" or
# "scalar" (the plain C fallbacks: non-x86 targets, or a build with
# SKLEARN_ADAPROX_NO_SIMD=1 set).  Build information for tests and CI.
SIMD_PATHS = SIMD_PATHS_C.decode("ascii")


# Mirror descent's entry of a coordinate j in ``acc``: ``(u_j, root_j,
# w_j, s_j)``, the weight and the step s_j at which it is current, an integer
# held exactly as a double (below 2**53 steps).  One entry of 32 bytes: the
# weight, its step and its root arrive in one cache line where three arrays
# cost three (one pass of 20 newsgroups hashed to 2**20 columns, l1: the
# next row's lines asked for by three prefetch loops were half of the pass).
cdef enum:
    MD_WEIGHT = 2
    MD_STEP = 3


# the same columns, for the estimator (adagrad.py)
MD_WEIGHT_COLUMN = MD_WEIGHT
MD_STEP_COLUMN = MD_STEP


cdef inline Py_ssize_t entry_width(Hyper h) noexcept nogil:
    """The columns of ``acc``: 4 for mirror descent, else 2."""
    return 4 if h.update == MIRROR_DESCENT else 2


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class AdaGradProblem:
    """State of one binary AdaGrad problem for one pass, or for reading its
    weights.

    Built by the estimator on a view of its fitted array, which the kernel
    updates in place (a pass costs O(nnz), whatever the width): ``acc``
    (n_features, 2), the accumulators ``(u_j, sqrt(ssq_j))`` side by side
    (z_j for FTRL-Proximal); for mirror descent (n_features, 4), ``(u_j,
    sqrt(ssq_j), w_j, s_j)``, the weight ``w_j`` current at step ``s_j``
    (see MD_WEIGHT).

    The intercept scalars and ``t`` are read back through the attributes,
    and whether the last pass wrote a NaN or infinite entry of ``acc``
    (``wrote_nonfinite_sums``) or of ``w`` (``wrote_nonfinite_weights``):
    each value is tested as it is written, so that the estimator's finite
    checks need not read the state again.
    ``coef_into`` / ``coef_at`` give the weights of step ``t`` without
    changing anything (the estimator's ``coef_``).  It is never kept as
    fitted state.
    """
    cdef Loss loss
    cdef Hyper hyper
    cdef bint fit_intercept
    cdef double[:, ::1] acc
    # FTRL: the weights of the current row's entries; mirror descent: scratch
    cdef double[::1] row_w
    # The entries of the columns a chunk's pass may change, saved before it
    # (``save_columns``) so that a pass can be taken back (``restore_columns``)
    # in O(nnz): column and its entries of ``acc``.
    cdef int64_t[::1] saved_columns
    cdef double[:, ::1] saved_values
    cdef Py_ssize_t saved_capacity  # 0 until the first save: no buffers yet
    cdef Py_ssize_t n_saved
    cdef public double intercept
    cdef public double intercept_sum_grad
    cdef public double intercept_sum_sq_grad
    cdef public int64_t t
    cdef public bint wrote_nonfinite_sums
    cdef public bint wrote_nonfinite_weights

    def __init__(self, *, Loss loss, str update, double eta, double delta,
                 double l1, double l2, bint fit_intercept, double[:, ::1] acc,
                 double intercept, double intercept_sum_grad,
                 double intercept_sum_sq_grad, int64_t t, bint adaptive=True):
        self.hyper = make_hyper(update, eta, delta, l1, l2, adaptive)
        if acc.shape[1] != entry_width(self.hyper):
            raise ValueError(f"acc must have {entry_width(self.hyper)} columns "
                             f"for update={update!r}.")
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.acc = acc
        self.row_w = np.empty(1)
        self.saved_capacity = 0
        self.n_saved = 0
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
            return md_idle_steps(self.acc[j, MD_WEIGHT], self.acc[j, 1],
                                 t - self.acc[j, MD_STEP], h)
        return ftrl_weight(self.acc[j, 0], self.acc[j, 1], t, h)

    cdef int reserve_saved(self, Py_ssize_t n) except -1:
        if self.saved_capacity < n:
            n = max(n, 64)
            self.saved_columns = np.empty(n, dtype=np.int64)
            self.saved_values = np.empty((n, self.acc.shape[1]))
            self.saved_capacity = n
        return 0

    def restore_columns(self):
        """Put back the entries saved by the last ``save_columns``, in the
        reverse order (a column saved twice ends as it was first saved)."""
        cdef Py_ssize_t s, j, e
        for s in range(self.n_saved - 1, -1, -1):
            j = self.saved_columns[s]
            for e in range(self.acc.shape[1]):
                self.acc[j, e] = self.saved_values[s, e]
        self.n_saved = 0

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


cdef int save_columns(AdaGradProblem problem, const index_t[::1] columns) except -1:
    """Save the entries of ``columns`` (repeats allowed) for
    ``problem.restore_columns()``: those a pass over rows of these columns
    may change.  O(len(columns))."""
    cdef Py_ssize_t s, j, e
    problem.reserve_saved(columns.shape[0])
    for s in range(columns.shape[0]):
        j = columns[s]
        problem.saved_columns[s] = j
        for e in range(problem.acc.shape[1]):
            problem.saved_values[s, e] = problem.acc[j, e]
    problem.n_saved = columns.shape[0]
    return 0


def csr_row_scores(list problems, t_value, intercepts, const floating[::1] X_data,
                   const index_t[::1] X_indices, const index_t[::1] X_indptr,
                   Py_ssize_t n_rows):
    """``scores[i, k] = <w_k, x_i> + intercepts[k]`` for ``n_rows`` plain
    CSR rows (``_dataset.plain_rows_largest``; else None), problem k's
    weights of step t read at the rows' columns only (O(nnz)).  Summed in
    each row's order from 0 and then the intercept added, as the
    estimator's general path (``csr_scores`` on ``coef_at``) does: the same
    numbers, bit for bit."""
    cdef Py_ssize_t i, k, q, n_problems = len(problems)
    cdef int64_t t = t_value
    cdef AdaGradProblem problem
    cdef double total
    if n_problems < 1:
        raise ValueError("no problem to score with.")
    # read in place (ValueError unless one per problem)
    cdef const double* intercept = float64_values(intercepts, n_problems, False)
    problem = problems[0]
    if plain_rows_largest(X_data, X_indices, X_indptr, False, problem.acc.shape[0],
                          n_rows) < 0.0:
        return None
    cdef cnp.ndarray scores = np.empty((n_rows, n_problems))
    cdef double* out = <double*> cnp.PyArray_DATA(scores)  # row after row
    for k in range(n_problems):
        problem = problems[k]
        if problem.acc.shape[0] != (<AdaGradProblem> problems[0]).acc.shape[0]:
            raise ValueError("problems of different widths.")
        problem.t = t
        for i in range(n_rows):
            total = 0.0
            for q in range(X_indptr[i], X_indptr[i + 1]):
                total = total + X_data[q] * problem.weight(X_indices[q])
            out[i * n_problems + k] = total + intercept[k]
    return scores


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
        if floating is double and index_t is int32_t:
            if HAVE_AVX:  # four divisions per instruction, the same sum
                return -h.eta * quotient_sum_avx(acc, idx, x, nnz, shift)
        if shift > 0.0:
            # every denominator is positive: two divisions per instruction
            # (bit-identical to the loop below)
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
    if floating is double and index_t is int32_t:
        if HAVE_AVX and h.adaptive and h.l1 > 0.0:  # same results, no branch per entry
            return threshold_quotient_sum_avx(acc, idx, x, nnz, h.eta, h.delta, h.l1 * t,
                                              h.eta * h.l2 * t)
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = 2 * idx[k]
        p += da_weight(acc[j], da_root(acc[j + 1], t, h), t, h) * x[k]
    return p


cdef inline bint da_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                           double d, double* acc) noexcept nogil:
    # The non-zero entries go two at a time through one packed square root
    # (bit-identical to two scalar ones; the indices of a row are distinct).
    # Returns whether a value written is NaN or infinite.
    cdef Py_ssize_t k = 0, j, j0 = -1
    cdef double g, g0 = 0.0
    cdef int nonfinite = 0
    if floating is double and index_t is int32_t:
        if HAVE_AVX:  # four at a time, same results
            k = root_update_avx(acc, idx, x, nnz, d, &nonfinite)
    for k in range(k, nnz):
        if x[k] == 0.0:
            continue
        j = 2 * idx[k]
        g = d * x[k]
        acc[j] += g
        nonfinite |= not isfinite(acc[j])
        if j0 < 0:
            j0 = j
            g0 = g
            continue
        sqrt_pair(acc[j0 + 1] * acc[j0 + 1] + g0 * g0, acc[j + 1] * acc[j + 1] + g * g,
                  &acc[j0 + 1], &acc[j + 1])
        nonfinite |= not (isfinite(acc[j0 + 1]) and isfinite(acc[j + 1]))
        j0 = -1
    if j0 >= 0:
        acc[j0 + 1] = sqrt(acc[j0 + 1] * acc[j0 + 1] + g0 * g0)
        nonfinite |= not isfinite(acc[j0 + 1])
    return nonfinite != 0


cdef inline Py_ssize_t padded_to_lanes(Py_ssize_t n) noexcept nogil:
    """n rounded up to a multiple of four (the AVX loops' lanes)."""
    return (n + 3) & ~(<Py_ssize_t> 3)


cdef inline double md_margin(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             double* acc, int64_t t, Hyper h, double* row,
                             bint* nonfinite) noexcept nogil:
    # Mirror descent: catch each weight up over its idle steps, store it
    # (``nonfinite``: set if a weight stored is NaN or infinite).
    cdef Py_ssize_t k, j
    cdef double p = 0.0
    cdef Py_ssize_t padded = padded_to_lanes(nnz)
    cdef double* row_root = row + padded
    cdef double* row_idle = row + 2 * padded
    if h.l1 == 0.0 and h.l2 == 0.0:
        # nothing shrinks while idle: no catch-up, and no step to keep (a
        # change of options catches every weight up first: adagrad.py)
        for k in range(nnz):
            if x[k] == 0.0:
                continue
            p += acc[4 * idx[k] + MD_WEIGHT] * x[k]
        return p
    # Three loops over the row (``row``: three scratch arrays of its length
    # rounded up to a multiple of four): the first only loads, so that the
    # cache misses of a wide hashed row overlap instead of queueing behind
    # the transcendentals of the catch-up; the second computes, the third
    # stores and sums.  A shuffled pass over 20 newsgroups hashed to 2**20
    # columns (binary, 4.7M non-zeros), l2 and hinge: 180 ms with one loop
    # and the next row prefetched, 137 ms so; without a penalty 90 -> 47 ms.
    for k in range(nnz):
        j = 4 * idx[k]
        row[k] = acc[j + MD_WEIGHT]
        row_root[k] = acc[j + 1]
        row_idle[k] = <double> t - acc[j + MD_STEP]  # exact below 2**53 steps
    k = 0
    if HAVE_AVX:  # four at a time, the same numbers
        # the last entries fill a group of four with lanes of no idle step,
        # which the four-lane loop keeps as they are: an entry of the scalar
        # form cost as much as a group of four (28 ns), and 12 % of w8a's
        # entries were such a remainder
        for k in range(nnz, padded):
            row[k] = row_root[k] = row_idle[k] = 0.0
        k = md_idle_row_avx(row, row_root, row_idle, padded, h.eta, h.delta, h.l1, h.l2)
    for k in range(k, nnz):
        row[k] = md_idle_steps(row[k], row_root[k], row_idle[k], h)
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = 4 * idx[k]
        acc[j + MD_WEIGHT] = row[k]
        acc[j + MD_STEP] = <double> t
        nonfinite[0] |= not isfinite(row[k])
        p += row[k] * x[k]
    return p


cdef inline void md_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                           double d, double* acc, int64_t t, Hyper h,
                           bint* nonfinite_sums, bint* nonfinite_weights) noexcept nogil:
    # The step number t is the one being taken (weights were current at t-1).
    # Sets the flags if a value written is NaN or infinite.
    cdef Py_ssize_t k = 0, j
    cdef double g, H
    cdef bint penalised = h.l1 != 0.0 or h.l2 != 0.0  # else md_prox(z) is z
    cdef int avx_sums = 0, avx_weights = 0
    if floating is double and index_t is int32_t:
        if HAVE_AVX:  # four square roots and divisions at a time, same results
            k = md_step_avx(acc, idx, x, nnz, d, <double> t, h.eta, h.delta, h.l1, h.l2,
                            penalised, &avx_sums, &avx_weights)
            nonfinite_sums[0] |= avx_sums != 0
            nonfinite_weights[0] |= avx_weights != 0
    for k in range(k, nnz):
        if x[k] == 0.0:
            continue
        j = 4 * idx[k]
        g = d * x[k]
        acc[j] += g
        acc[j + 1] = sqrt(acc[j + 1] * acc[j + 1] + g * g)
        nonfinite_sums[0] |= not (isfinite(acc[j]) and isfinite(acc[j + 1]))
        H = h.delta + acc[j + 1]
        if H > 0.0:  # H == 0 only for a zero weight that has never moved
            acc[j + MD_WEIGHT] = acc[j + MD_WEIGHT] - h.eta * g / H
            if penalised:
                acc[j + MD_WEIGHT] = md_prox(acc[j + MD_WEIGHT], H, h)
                acc[j + MD_STEP] = <double> t
            nonfinite_weights[0] |= not isfinite(acc[j + MD_WEIGHT])


cdef inline double ftrl_margin(const floating* x, const index_t* idx, Py_ssize_t nnz,
                               double* row_w, const double* acc, double t,
                               Hyper h) noexcept nogil:
    # FTRL-Proximal: weights are closed forms of (z, root); the row's are kept
    # in ``row_w`` (entry k of the row) because the update needs them.
    cdef Py_ssize_t k, j
    cdef double p = 0.0
    if floating is double and index_t is int32_t:
        if HAVE_AVX:  # four weights at a time, no branch per entry, same results
            return ftrl_row_weights_avx(acc, idx, x, nnz, row_w, h.eta, h.delta, h.l1 * t,
                                        h.eta * h.l2 * t)
    for k in range(nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        row_w[k] = ftrl_weight(acc[2 * j], acc[2 * j + 1], t, h)
        p += row_w[k] * x[k]
    return p


cdef inline bint ftrl_update(const floating* x, const index_t* idx, Py_ssize_t nnz,
                             double d, const double* row_w, double* acc,
                             Hyper h) noexcept nogil:
    # Returns whether a value written is NaN or infinite.
    cdef Py_ssize_t k = 0, j
    cdef double g, root, new_root
    cdef int nonfinite = 0
    if floating is double and index_t is int32_t:
        if HAVE_AVX:  # four square roots and divisions at a time, same results
            k = ftrl_step_avx(acc, idx, x, row_w, nnz, d, h.inv_eta, &nonfinite)
    for k in range(k, nnz):
        if x[k] == 0.0:
            continue
        j = idx[k]
        g = d * x[k]
        root = acc[2 * j + 1]
        new_root = sqrt(root * root + g * g)
        acc[2 * j] += ftrl_z_step(g, root, new_root, row_w[k], h)
        acc[2 * j + 1] = new_root
        nonfinite |= not (isfinite(acc[2 * j]) and isfinite(new_root))
    return nonfinite != 0


def run_epoch(AdaGradProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order,
              bint all_or_nothing=False):
    """One predict-then-learn pass over ``X[order]``; y in {-1, +1}.

    Rows of zero weight are skipped entirely (they are not steps).  Returns
    ``(sum of weight * loss before each step, sum of weights)``; the
    progressive loss of the pass is their ratio.

    ``all_or_nothing``: the entries of X's columns are saved first
    (O(nnz)); if the pass leaves any of them, or the intercept's scalars,
    non-finite, they are put back and None is returned (the Problem's own
    scalars are then those of the failed pass).  ``restore_columns()`` takes
    a successful pass back.
    """
    cdef double sums[2]
    if pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features, y,
                 sample_weight, order, all_or_nothing, sums):
        return None
    return sums[0], sums[1]


def run_problem_epochs(list problems,
                       const floating[::1] X_data,
                       const index_t[::1] X_indices,
                       const index_t[::1] X_indptr,
                       bint is_dense,
                       Py_ssize_t n_features,
                       const double[:, ::1] targets,
                       const double[::1] sample_weight,
                       const int64_t[::1] order,
                       int64_t t):
    """``run_epoch`` of each problem k in turn, on the targets ``targets[k]``
    and from step ``t``: the one-vs-rest pass of a fit in one thread, in one
    call.  Returns the list of each pass's ``(loss, weight)`` sums.  On a
    small table a call per problem cost as much as its pass (glass: 1.5 us
    of arguments against 7 us of rows)."""
    cdef Py_ssize_t k, n_problems = len(problems)
    cdef AdaGradProblem problem
    cdef double sums[2]
    if targets.shape[0] != n_problems:
        raise ValueError("one target row per problem.")
    results = []
    for k in range(n_problems):
        problem = problems[k]
        problem.t = t
        pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features,
                  targets[k], sample_weight, order, False, sums)
        results.append((sums[0], sums[1]))
    return results


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
               intercepts,
               sums_of_gradients,
               sums_of_squares):
    """A short call's passes (``_short_calls.AdaGradPath``), all or
    nothing: problem k's pass over ``X[order]`` with the targets
    ``targets[k]``, from step t and the intercept scalars of entry k, each
    as ``run_epoch(..., all_or_nothing=True)``.

    Returns ``(sum of the passes' losses, sum of weights, t after,
    intercepts after)`` with the intercept sums written in place, or None
    with nothing changed for rows that are not plain or could overflow the
    state (``_dataset.learnable_rows``, with ``largest_factor`` the largest
    target or weight) and when a pass left a non-finite entry.
    Each problem's ``restore_columns()`` takes back a successful call, and
    does nothing after one that raised (which changed nothing).  One
    compiled call instead of a Python loop over the problems and a scan of
    its own: a sixth of a call on one row was those.
    """
    cdef Py_ssize_t k, n_problems = len(problems)
    cdef AdaGradProblem problem
    cdef double sums[2]
    cdef double total_loss = 0.0, total_weight = 0.0
    cdef bint failed
    # First, before anything can fail: nothing to take back yet (the
    # caller's restore_columns() after a failure must not take back an
    # earlier call).  The estimator's arrays are read after that.
    for k in range(n_problems):
        (<AdaGradProblem> problems[k]).n_saved = 0
    if not learnable_rows(X_data, X_indices, X_indptr, is_dense, n_features,
                          order.shape[0], largest_factor, limit):
        return None
    cdef int64_t t = t_value
    if targets.shape[0] != n_problems:
        raise ValueError("one target row per problem.")
    # one value per problem each (ValueError otherwise), in place
    cdef const double* intercept = float64_values(intercepts, n_problems, False)
    cdef double* intercept_sum_grad = float64_values(sums_of_gradients, n_problems, True)
    cdef double* intercept_sum_sq_grad = float64_values(sums_of_squares, n_problems, True)
    cdef cnp.ndarray after = np.empty(n_problems)
    cdef double* new_intercept = <double*> cnp.PyArray_DATA(after)
    for k in range(n_problems):
        problem = problems[k]
        problem.t = t
        problem.intercept = intercept[k]
        problem.intercept_sum_grad = intercept_sum_grad[k]
        problem.intercept_sum_sq_grad = intercept_sum_sq_grad[k]
        try:
            failed = pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features,
                               targets[k], sample_weight, order, True, sums)
        except BaseException:  # e.g. no memory to save the entries in
            restore_problems(problems, k + 1)
            raise
        if failed:  # this pass is taken back already
            restore_problems(problems, k)
            return None
        total_loss += sums[0]
        if k == 0:
            total_weight = sums[1]  # every problem sees the same weights
        new_intercept[k] = problem.intercept
    for k in range(n_problems):
        problem = problems[k]
        intercept_sum_grad[k] = problem.intercept_sum_grad
        intercept_sum_sq_grad[k] = problem.intercept_sum_sq_grad
    return total_loss, total_weight, (<AdaGradProblem> problems[0]).t, after


cdef int restore_problems(list problems, Py_ssize_t n) except -1:
    cdef Py_ssize_t k
    for k in range(n):
        (<AdaGradProblem> problems[k]).restore_columns()
    return 0


cdef int pass_rows(AdaGradProblem problem,
                   const floating[::1] X_data,
                   const index_t[::1] X_indices,
                   const index_t[::1] X_indptr,
                   bint is_dense,
                   Py_ssize_t n_features,
                   const double[::1] y,
                   const double[::1] sample_weight,
                   const int64_t[::1] order,
                   bint all_or_nothing,
                   double* sums) except -1:
    """The pass of ``run_epoch``: 0 with ``sums = (loss, weight)``, or 1
    for a pass taken back (``all_or_nothing``)."""
    cdef Loss loss = problem.loss
    cdef Hyper h = problem.hyper
    cdef bint fit_intercept = problem.fit_intercept
    cdef Py_ssize_t scratch
    if all_or_nothing:
        problem.n_saved = 0  # nothing to take back until the entries are saved
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.acc.shape[0], y.shape[0], sample_weight, order)
    if h.update == FTRL_PROXIMAL or h.update == MIRROR_DESCENT:
        # FTRL: the weights of a row; mirror descent: three arrays of scratch
        # (kept for the next pass if long enough: a short call's Problems
        # live from call to call)
        scratch = max(longest_row(X_indptr, is_dense, n_features, y.shape[0]), 1)
        if h.update == MIRROR_DESCENT:
            scratch = 3 * padded_to_lanes(scratch)
        if problem.row_w.shape[0] < scratch:
            problem.row_w = np.empty(scratch)
    cdef double* row_w = &problem.row_w[0]
    cdef double* acc = &problem.acc[0, 0] if n_features > 0 else NULL
    cdef size_t entry_bytes = problem.acc.shape[1] * sizeof(double)
    cdef double b = problem.intercept
    cdef double u_b = problem.intercept_sum_grad
    cdef double ssq_b = problem.intercept_sum_sq_grad
    cdef int64_t t = problem.t
    if all_or_nothing:
        save_columns(problem, X_indices)

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef const index_t* next_idx = NULL
    cdef Py_ssize_t s, i, nnz, next_nnz
    # on a wide state, each row asks for the next row's (prefetch_entries)
    cdef bint prefetch = asks_for_state_ahead(is_dense, n_features, entry_bytes)
    cdef double sw, yi, p, d
    cdef double sum_loss = 0.0, sum_weight = 0.0
    cdef bint nonfinite_sums = False, nonfinite_weights = False

    with nogil:
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &x, &idx)
            if prefetch:
                next_nnz = columns_ahead(&rows, s, &next_idx)
                prefetch_entries(acc, entry_bytes, next_idx, next_nnz)
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
                p = b + md_margin(x, idx, nnz, acc, t, h, row_w, &nonfinite_weights)
            else:
                p = b + ftrl_margin(x, idx, nnz, row_w, acc, <double> t, h)
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
                nonfinite_sums |= da_update(x, idx, nnz, d, acc)
            elif h.update == MIRROR_DESCENT:
                md_update(x, idx, nnz, d, acc, t, h, &nonfinite_sums, &nonfinite_weights)
            else:
                nonfinite_sums |= ftrl_update(x, idx, nnz, d, row_w, acc, h)

            if fit_intercept:
                b = intercept_step(b, &u_b, &ssq_b, d, <double> t, h)

        if h.update == DUAL_AVERAGING:
            b = da_intercept(u_b, sqrt(ssq_b), <double> t, h)
        problem.t = t

    problem.intercept = b
    problem.intercept_sum_grad = u_b
    problem.intercept_sum_sq_grad = ssq_b
    problem.wrote_nonfinite_sums = nonfinite_sums
    problem.wrote_nonfinite_weights = nonfinite_weights
    if all_or_nothing and (nonfinite_sums or nonfinite_weights
                           or not (isfinite(b) and isfinite(u_b) and isfinite(ssq_b))):
        problem.restore_columns()
        return 1
    sums[0] = sum_loss
    sums[1] = sum_weight
    return 0
