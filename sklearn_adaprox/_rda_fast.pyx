"""Regularised dual averaging kernel (Xiao 2010) with support tracking.

This is the dual-averaging phase of RDA+ (Lee & Wright, "Manifold
Identification in Dual Averaging for Regularized Stochastic Online Learning",
JMLR 2012, Algorithm 2) for the l1-regularised logistic loss.  With the
prox-function ``h(w) = ||w||^2`` and ``beta_t = gamma sqrt(t)``, the iterate
after ``t`` steps is the closed form (section 5 of the paper)

    w_i = (sqrt(t) / (2 gamma)) soft(-u_i / t, l1)
        = -sign(u_i) (|u_i| - l1 t) / (2 gamma sqrt(t))   if |u_i| > l1 t, else 0,

where ``u = t * g_bar`` is the running sum of the gradients.  The second form
is the one computed: it is exactly zero if and only if ``|u_i| > l1 t`` is
false in floating point, the very predicate the support is tracked with.  The
intercept is one more coordinate (feature 1) that is not thresholded:
``b = -u_b / (2 gamma sqrt(t))``.  ``w = 0`` before the first step.

A weight is a function of ``(u_i, t)`` only, so nothing but ``u`` is stored and
a step costs O(nnz of the row).

Support tracking.  The sign pattern of the iterate changes in two ways: a
coordinate of the row just seen moves (its ``u_i`` changed), or an untouched
coordinate leaves the support because ``l1 t`` has grown past its fixed
``|u_i|``.  The second kind happens at a step known in advance, the *exit
step* ``T_i = min {T : not (|u_i| > l1 T)}``.  Every coordinate of the support
sits in an indexed binary min-heap under a key that never exceeds its exit
step.  A touched coordinate whose ``|u_i|`` grew keeps its (now early) key: its
exit step only moved later, and the key is corrected when it reaches the top
of the heap (recomputed, and sifted down if the exit step has not come).  Only
a coordinate whose ``|u_i|`` shrank gets its exit step computed and, when it
is earlier than the key, sifted up.  Every step pops the coordinates whose
exit step has come, so a step costs O(nnz log d), never O(d), and on dense
rows about half the touches skip the heap.  The kernel
keeps the current pattern (``sign``), its size, and ``last_change``, the step
after which the pattern last differed from the one before; the iterates after
steps ``last_change, ..., t`` share one pattern, ``t - last_change + 1`` of
them.
"""
import numpy as np

cimport cython
from cython cimport floating
from libc.math cimport ceil, copysign, exp, fabs, log1p, sqrt
from libc.stdint cimport INT32_MAX, INT64_MAX, int8_t, int64_t, uint8_t
from scipy.linalg.cython_blas cimport dgemm, dgemv
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs

from ._dataset cimport (RowPass, asks_for_state_ahead, check_pass_input, columns_ahead,
                        index_t, prefetch_entries, row_pass, step_row)
from scipy.linalg import lstsq as _lstsq

from ._dataset import _check_bounds, _first_decrease
from ._loss cimport Loss

# Exit step of a coordinate that never leaves the support (l1 == 0).
NEVER = INT64_MAX


cdef inline int64_t exit_step(double abs_u, double l1) noexcept nogil:
    """Smallest integer T >= 0 with ``not (abs_u > l1 * T)`` in floating point."""
    return exit_step_inv(abs_u, l1, 1.0 / l1 if l1 > 0.0 else 0.0)


cdef inline int64_t exit_step_inv(double abs_u, double l1, double inv_l1) noexcept nogil:
    """``exit_step`` given ``inv_l1 = 1 / l1`` (a product instead of a
    division in the kernel's loop; the loops below settle the rounding)."""
    cdef double T
    if not l1 > 0.0:
        return INT64_MAX if abs_u > 0.0 else 0
    T = ceil(abs_u * inv_l1)
    if T >= 4.0e18:
        return INT64_MAX
    # The division rounds; settle the boundary with the exact predicate.
    while T > 0.0 and not (abs_u > l1 * (T - 1.0)):
        T -= 1.0
    while abs_u > l1 * T:
        T += 1.0
    return <int64_t> T


# rda_weight and rda_intercept are the dual-averaging closed forms of
# _adagrad_rules (da_weight, da_intercept) at eta = 1, delta = l2 = 0 and
# root = 2 gamma sqrt(t), but written out here on purpose: through da_weight
# the same values would come from other operations (a product by eta = 1, two
# sums with 0), its zero test is ``excess <= 0`` where the support is tracked
# with ``not (|u| > l1 t)`` (they part on a NaN), and da_intercept returns +0
# for u_b = 0 where -u_b / (...) is -0.  The support must be exactly the
# one of the transcription's predicate (tests/reference/rda.py), and a
# resumed fit the same bits as a straight one.
cdef inline double rda_weight(double u, int64_t t, double l1, double gamma) noexcept nogil:
    cdef double excess
    if t <= 0 or u == 0.0:
        return 0.0
    excess = fabs(u) - l1 * <double> t
    if not excess > 0.0:
        return 0.0
    return -copysign(excess / (2.0 * gamma * sqrt(<double> t)), u)


cdef inline double rda_intercept(double u_b, int64_t t, double gamma) noexcept nogil:
    if t <= 0:
        return 0.0
    return -u_b / (2.0 * gamma * sqrt(<double> t))


# --- indexed binary min-heap of exit steps ---------------------------------
cdef inline void heap_swap(int64_t* heap, int64_t* pos, Py_ssize_t a,
                           Py_ssize_t b) noexcept nogil:
    cdef int64_t ja = heap[a], jb = heap[b]
    heap[a] = jb
    heap[b] = ja
    pos[jb] = a
    pos[ja] = b


cdef inline void sift_up(int64_t* heap, int64_t* pos, const int64_t* key,
                         Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t parent
    while i > 0:
        parent = (i - 1) // 2
        if key[heap[parent]] <= key[heap[i]]:
            break
        heap_swap(heap, pos, i, parent)
        i = parent


cdef inline void sift_down(int64_t* heap, int64_t* pos, const int64_t* key,
                           Py_ssize_t i, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t left, smallest
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        smallest = left
        if left + 1 < size and key[heap[left + 1]] < key[heap[left]]:
            smallest = left + 1
        if key[heap[i]] <= key[heap[smallest]]:
            break
        heap_swap(heap, pos, i, smallest)
        i = smallest


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class RDAProblem:
    """State of one binary RDA problem for the passes over its sums.

    Built from the estimator's fitted NumPy arrays: ``sum_grad`` is a view the
    kernel updates in place; the intercept sum, ``t`` and ``last_change`` are
    read back through the attributes.  ``switch_from`` and ``tau`` are the
    call's switching rule: a pass stops after a step ``t >= switch_from``
    once ``tau`` consecutive iterates kept one sign pattern (the defaults
    never switch); both may be set between passes.  The sign pattern and
    the heap are rebuilt from ``(u, t)`` here (O(d log d)) and are never
    kept as fitted state; a pass leaves them as a rebuild would (the exit
    steps are exact), so the passes of one call, and the calls of a
    stream, share one problem as long as nothing else writes ``sum_grad``
    (``describes`` tells whether it still is the state of given sums).
    """
    cdef Loss loss
    cdef double gamma
    cdef double l1
    cdef bint fit_intercept
    cdef double[::1] sum_grad
    cdef int8_t[::1] sign
    cdef int64_t[::1] heap
    cdef int64_t[::1] pos
    cdef int64_t[::1] key
    cdef Py_ssize_t heap_size
    cdef public int64_t switch_from
    cdef public int64_t tau
    cdef public double intercept_sum_grad
    cdef public int64_t t
    cdef public int64_t last_change
    cdef public int64_t support_size

    def __init__(self, *, Loss loss, double gamma, double l1, bint fit_intercept,
                 double[::1] sum_grad, double intercept_sum_grad, int64_t t,
                 int64_t last_change, int64_t switch_from=NEVER, int64_t tau=NEVER):
        cdef Py_ssize_t d = sum_grad.shape[0]
        cdef Py_ssize_t j
        cdef double au
        self.loss = loss
        self.gamma = gamma
        self.l1 = l1
        self.fit_intercept = fit_intercept
        self.sum_grad = sum_grad
        self.switch_from = switch_from
        self.tau = tau
        self.intercept_sum_grad = intercept_sum_grad
        self.t = t
        self.last_change = last_change
        self.sign = np.zeros(d, dtype=np.int8)
        self.heap = np.zeros(max(d, 1), dtype=np.int64)
        self.pos = np.full(max(d, 1), -1, dtype=np.int64)
        self.key = np.zeros(max(d, 1), dtype=np.int64)
        self.heap_size = 0
        self.support_size = 0
        with nogil:
            for j in range(d):
                au = fabs(sum_grad[j])
                if t > 0 and au > l1 * <double> t:
                    self.sign[j] = 1 if sum_grad[j] < 0.0 else -1
                    self.support_size += 1
                    self.key[j] = exit_step(au, l1)
                    self.heap[self.heap_size] = j
                    self.pos[j] = self.heap_size
                    self.heap_size += 1
            for j in range(self.heap_size // 2 - 1, -1, -1):
                sift_down(&self.heap[0], &self.pos[0], &self.key[0], j,
                          self.heap_size)

    cdef inline void set_key(self, Py_ssize_t j, int64_t k) noexcept nogil:
        cdef int64_t* heap = &self.heap[0]
        cdef int64_t* pos = &self.pos[0]
        cdef int64_t* key = &self.key[0]
        cdef int64_t old
        cdef Py_ssize_t i
        if pos[j] < 0:
            key[j] = k
            i = self.heap_size
            heap[i] = j
            pos[j] = i
            self.heap_size += 1
            sift_up(heap, pos, key, i)
        else:
            old = key[j]
            key[j] = k
            if k < old:
                sift_up(heap, pos, key, pos[j])
            elif k > old:
                sift_down(heap, pos, key, pos[j], self.heap_size)

    cdef inline void remove(self, Py_ssize_t j) noexcept nogil:
        cdef int64_t* heap = &self.heap[0]
        cdef int64_t* pos = &self.pos[0]
        cdef int64_t* key = &self.key[0]
        cdef Py_ssize_t i = pos[j]
        cdef Py_ssize_t last = self.heap_size - 1
        if i < 0:
            return
        cdef int64_t moved
        if i != last:
            heap_swap(heap, pos, i, last)
        self.heap_size -= 1
        pos[j] = -1
        if i != last:
            # the former last element now sits at i: restore the order
            moved = heap[i]
            sift_up(heap, pos, key, i)
            sift_down(heap, pos, key, pos[moved], self.heap_size)

    def weights(self, double[::1] coef):
        """Write the iterate into ``coef`` (O(d)); return the intercept."""
        if coef.shape[0] != self.sum_grad.shape[0]:
            raise ValueError(
                f"coef has {coef.shape[0]} entries for a state of "
                f"{self.sum_grad.shape[0]} features (the estimator changed "
                "during this call: one estimator must not be fitted by two "
                "threads at once)."
            )
        return iterate(self.sum_grad, self.intercept_sum_grad, self.t, self.l1, self.gamma,
                       self.fit_intercept, coef)

    def weights_at(self, const int64_t[::1] columns, double[::1] out):
        """Write the iterate's weights of ``columns`` into ``out`` (the
        same numbers as ``weights``, O(len(columns))); return the intercept."""
        cdef Py_ssize_t q, d = self.sum_grad.shape[0]
        if out.shape[0] != columns.shape[0]:
            raise ValueError("out needs one entry per column.")
        for q in range(columns.shape[0]):
            if not 0 <= columns[q] < d:
                raise ValueError("A column is outside the state.")
        with nogil:
            for q in range(columns.shape[0]):
                out[q] = rda_weight(self.sum_grad[columns[q]], self.t, self.l1, self.gamma)
        if not self.fit_intercept:
            return 0.0
        return rda_intercept(self.intercept_sum_grad, self.t, self.gamma)

    def describes(self, const double[::1] sum_grad, double intercept_sum_grad, int64_t t,
                  int64_t last_change, double l1, double gamma, bint fit_intercept):
        """Whether this problem is the state of these sums and values (its
        sums the very array ``sum_grad``), so that a later call may continue
        it instead of rebuilding its pattern and heap."""
        return (sum_grad.shape[0] == self.sum_grad.shape[0] and sum_grad.shape[0] > 0
                and &sum_grad[0] == &self.sum_grad[0]
                and intercept_sum_grad == self.intercept_sum_grad and t == self.t
                and last_change == self.last_change and l1 == self.l1
                and gamma == self.gamma and fit_intercept == self.fit_intercept)

    def signs(self):
        """The tracked sign pattern (a copy): -1, 0 or +1 per feature."""
        return np.asarray(self.sign).copy()

    def heap_is_valid(self):
        """Test hook: heap order, positions and keys are consistent (a key is
        at most the exit step, see the module docstring)."""
        cdef Py_ssize_t i, j
        for i in range(self.heap_size):
            j = self.heap[i]
            if self.pos[j] != i or self.sign[j] == 0:
                return False
            if i > 0 and self.key[self.heap[(i - 1) // 2]] > self.key[j]:
                return False
            if self.key[j] > exit_step(fabs(self.sum_grad[j]), self.l1):
                return False
        return self.heap_size == self.support_size


def iterate(const double[::1] sum_grad, double intercept_sum_grad, int64_t t, double l1,
            double gamma, bint fit_intercept, double[::1] coef):
    """The RDA iterate of the sums ``(u, u_b)`` after ``t`` steps into
    ``coef`` (O(d)); returns the intercept.  What ``RDAProblem.weights``
    gives, without building a problem's sign pattern and heap (O(d) arrays
    of their own, which on 2**20 hashed columns cost more than this)."""
    cdef Py_ssize_t j
    if coef.shape[0] != sum_grad.shape[0]:
        raise ValueError("coef and sum_grad differ in length.")
    with nogil:
        for j in range(coef.shape[0]):
            coef[j] = rda_weight(sum_grad[j], t, l1, gamma)
    if not fit_intercept:
        return 0.0
    return rda_intercept(intercept_sum_grad, t, gamma)


def safeguarded_support(const double[::1] sum_grad, int64_t t, double threshold,
                        const double[::1] coef):
    """RDA+'s safeguarded support, ``coef != 0`` or ``|sum_grad / t| >
    threshold`` (a bool array), in one pass with no temporary: the NumPy
    expression made four arrays of the width (13 ms at 2**20 columns)."""
    cdef Py_ssize_t j, d = coef.shape[0]
    cdef double steps = <double> t
    if sum_grad.shape[0] != d:
        raise ValueError("coef and sum_grad differ in length.")
    support = np.empty(d, dtype=bool)
    cdef uint8_t[::1] out = support.view(np.uint8)
    with nogil:
        for j in range(d):
            out[j] = coef[j] != 0.0 or fabs(sum_grad[j] / steps) > threshold
    return support


def py_exit_step(double abs_u, double l1):
    """Test hook for the exit step."""
    return exit_step(abs_u, l1)


cdef struct PassEnd:
    double sum_loss
    double sum_weight
    Py_ssize_t position
    bint switched


# The pass itself, shared by the production entry point (run_epoch) and the
# one that tests and benchmarks use (run_epoch_instrumented).  run_epoch
# passes NULL for every instrument and the constant False for
# ``instrumented``: once inlined, the compiler drops the instruments'
# branches from its loop.
# ``row_data`` / ``row_indices`` receive the row of each step (their types,
# the caller's, are the types of X).
cdef inline PassEnd _rda_pass(
        RDAProblem problem, Loss loss, RowPass* rows, const floating** row_data,
        const index_t** row_indices, Py_ssize_t n_features, const double* y,
        const double* sample_weight, Py_ssize_t start, bint instrumented,
        int64_t* trace, Py_ssize_t trace_stride, bint have_target, const int8_t* tgt,
        int64_t* hit, int64_t target_size, int64_t mismatch) noexcept nogil:
    cdef double gamma = problem.gamma
    cdef double l1 = problem.l1
    cdef bint fit_intercept = problem.fit_intercept
    cdef double* u = &problem.sum_grad[0] if n_features > 0 else NULL
    cdef int8_t* sign = &problem.sign[0] if n_features > 0 else NULL
    cdef int64_t* heap = &problem.heap[0]
    cdef int64_t* key = &problem.key[0]
    cdef double u_b = problem.intercept_sum_grad
    cdef int64_t t = problem.t
    cdef int64_t last_change = problem.last_change
    cdef int64_t size = problem.support_size
    cdef const floating* x
    cdef const index_t* idx
    cdef const index_t* next_idx = NULL
    cdef Py_ssize_t s, i, k, j, nnz, next_nnz, position = start
    cdef double sw, yi, p, d, g, au, au_old, uj, excess, threshold
    cdef int64_t T
    cdef double inv_l1 = 1.0 / l1 if l1 > 0.0 else 0.0
    cdef int8_t new_sign
    cdef bint changed, switched = False
    cdef double sum_loss = 0.0, sum_weight = 0.0
    cdef PassEnd end
    # on a wide u, each row asks for the next row's entries of u and of the
    # sign pattern (prefetch_entries): both are read at every touch
    cdef bint prefetch = asks_for_state_ahead(rows.is_dense, n_features, sizeof(double))
    if not instrumented:
        trace = NULL
        have_target = False

    for s in range(start, rows.n_steps):
        nnz = step_row(rows, s, &i, row_data, row_indices)
        if prefetch:
            next_nnz = columns_ahead(rows, s, &next_idx)
            prefetch_entries(u, sizeof(double), next_idx, next_nnz)
            prefetch_entries(sign, sizeof(int8_t), next_idx, next_nnz)
        x = row_data[0]
        idx = row_indices[0]
        position = s + 1
        sw = sample_weight[i]
        if sw == 0.0:
            if trace != NULL:
                trace[s * trace_stride] = -1
                trace[s * trace_stride + 1] = -1
            continue
        yi = y[i]

        # predict with the iterate w_t (a closed form of u and t - 1):
        # sum over the support of -sign(u_j) (|u_j| - l1 t) x_j, scaled
        # once by 1 / (2 gamma sqrt(t)) (rda_weight, term by term)
        p = 0.0
        if t > 0:
            threshold = l1 * <double> t
            for k in range(nnz):
                uj = u[idx[k]]
                excess = fabs(uj) - threshold
                if excess > 0.0:
                    p -= copysign(excess, uj) * x[k]
            p /= 2.0 * gamma * sqrt(<double> t)
            if fit_intercept:
                p += rda_intercept(u_b, t, gamma)
        sum_loss += sw * loss.loss(yi, p)
        sum_weight += sw
        d = sw * loss.dloss(yi, p)
        t += 1
        changed = False

        # touched coordinates: new sum, new sign, new exit step
        if d != 0.0:
            for k in range(nnz):
                g = d * x[k]
                if g == 0.0:
                    continue
                j = idx[k]
                au_old = fabs(u[j])
                u[j] += g
                au = fabs(u[j])
                new_sign = 0
                if au > l1 * <double> t:
                    new_sign = 1 if u[j] < 0.0 else -1
                if new_sign == 0:
                    if sign[j] != 0:
                        problem.remove(j)
                elif sign[j] == 0:
                    problem.set_key(j, exit_step_inv(au, l1, inv_l1))
                elif au < au_old:
                    # the exit step moved earlier: lower the key if needed
                    T = exit_step_inv(au, l1, inv_l1)
                    if T < key[j]:
                        problem.set_key(j, T)
                if new_sign != sign[j]:
                    changed = True
                    if have_target and tgt[j] != 0:
                        mismatch += (new_sign != tgt[j]) - (sign[j] != tgt[j])
                    if sign[j] == 0:
                        size += 1
                    elif new_sign == 0:
                        size -= 1
                    sign[j] = new_sign
            if fit_intercept:
                u_b += d

        # coordinates whose threshold l1 t has overtaken |u_j| (an early
        # key is corrected and its coordinate stays)
        while problem.heap_size > 0 and key[heap[0]] <= t:
            j = heap[0]
            T = exit_step_inv(fabs(u[j]), l1, inv_l1)
            if T > t:
                problem.set_key(j, T)
                continue
            problem.remove(j)
            if have_target and tgt[j] != 0:
                mismatch += (tgt[j] != 0) - (sign[j] != tgt[j])
            sign[j] = 0
            size -= 1
            changed = True

        if changed:
            last_change = t
        if trace != NULL:
            trace[s * trace_stride] = size
            trace[s * trace_stride + 1] = last_change
        if have_target and mismatch == 0:
            if hit[0] < 0 and size <= 2 * target_size:
                hit[0] = t
            if hit[1] < 0 and size == target_size:
                hit[1] = t
            if hit[0] >= 0 and hit[1] >= 0:
                break
        if t >= problem.switch_from and t - last_change + 1 >= problem.tau:
            switched = True
            break

    problem.t = t
    problem.last_change = last_change
    problem.support_size = size
    problem.intercept_sum_grad = u_b
    end.sum_loss, end.sum_weight, end.position, end.switched = (
        sum_loss, sum_weight, position, switched)
    return end


def run_epoch(RDAProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order,
              Py_ssize_t start):
    """Predict-then-learn RDA steps over ``X[order[start:]]``; y in {-1, +1}.

    Rows of zero weight are not steps.  After a step ``t`` with
    ``t >= problem.switch_from`` and ``t - last_change + 1 >= problem.tau``
    (``tau`` consecutive iterates on one sign pattern) the pass stops early:
    the caller switches to the local phase and may resume at the returned
    position.

    Returns ``(sum of weight * loss before each step, sum of weights,
    position after the last row processed, switched)``.
    """
    cdef int64_t[:, ::1] no_trace = None
    cdef const int8_t[::1] no_target = None
    cdef int64_t[::1] no_hits = None
    return _checked_pass(problem, X_data, X_indices, X_indptr, is_dense, n_features, y,
                         sample_weight, order, start, False, no_trace, no_target, no_hits)


def run_epoch_instrumented(RDAProblem problem,
                           const floating[::1] X_data,
                           const index_t[::1] X_indices,
                           const index_t[::1] X_indptr,
                           bint is_dense,
                           Py_ssize_t n_features,
                           const double[::1] y,
                           const double[::1] sample_weight,
                           const int64_t[::1] order,
                           Py_ssize_t start,
                           int64_t[:, ::1] trace=None,
                           const int8_t[::1] target=None,
                           int64_t[::1] hits=None):
    """``run_epoch`` with the instruments of the tests and benchmarks.

    ``trace`` (test hook, shape ``(len(order), 2)``): row ``s`` receives
    ``(support size, last_change)`` after the step on ``order[s]`` (-1, -1
    for a row of weight 0).

    ``target`` and ``hits`` (benchmark hook: manifold identification, Lee &
    Wright's Table 1): ``target`` is a sign pattern with support ``M``;
    ``hits[0]`` / ``hits[1]`` receive the first step ``t`` at which the
    iterate is a "2x superset" (the signs of ``target`` on ``M``, at most
    ``2 |M|`` non-zeros) / has exactly the pattern ``target`` (if not yet
    set, i.e. negative); the pass stops once both are set.  The mismatch
    count is kept up to date at each sign change, O(1).
    """
    return _checked_pass(problem, X_data, X_indices, X_indptr, is_dense, n_features, y,
                         sample_weight, order, start, True, trace, target, hits)


cdef tuple _checked_pass(RDAProblem problem,
                         const floating[::1] X_data,
                         const index_t[::1] X_indices,
                         const index_t[::1] X_indptr,
                         bint is_dense,
                         Py_ssize_t n_features,
                         const double[::1] y,
                         const double[::1] sample_weight,
                         const int64_t[::1] order,
                         Py_ssize_t start,
                         bint instrumented,
                         int64_t[:, ::1] trace,
                         const int8_t[::1] target,
                         int64_t[::1] hits):
    """Both entry points: the input checked, then the pass without the GIL
    (instrumented or not: two copies of the inlined pass)."""
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.sum_grad.shape[0], y.shape[0], sample_weight, order)
    if not 0 <= start <= order.shape[0]:
        raise ValueError(f"start={start} is outside the order of {order.shape[0]} rows.")
    if trace is not None and (trace.shape[0] < order.shape[0] or trace.shape[1] < 2):
        raise ValueError("trace needs a row of two slots per entry of order.")
    cdef int64_t* trace_ptr = NULL
    cdef Py_ssize_t trace_stride = 0, j
    cdef bint have_target = target is not None
    cdef const int8_t* tgt = NULL
    cdef int64_t* hit = NULL
    cdef int64_t mismatch = 0, target_size = 0
    if trace is not None and trace.shape[0] > 0:
        trace_ptr = &trace[0, 0]
        trace_stride = trace.shape[1]
    if have_target:
        if target.shape[0] != n_features or hits is None or hits.shape[0] < 2:
            raise ValueError("target needs n_features signs and hits 2 slots")
        tgt = &target[0] if n_features > 0 else NULL
        hit = &hits[0]
        for j in range(n_features):
            if tgt[j] != 0:
                target_size += 1
                if problem.sign[j] != tgt[j]:
                    mismatch += 1
    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef const double* y_ptr = &y[0] if y.shape[0] > 0 else NULL
    cdef const double* sw_ptr = &sample_weight[0] if sample_weight.shape[0] > 0 else NULL
    cdef PassEnd end
    cdef Loss loss = problem.loss
    with nogil:
        if instrumented:
            end = _rda_pass(problem, loss, &rows, &row_data, &row_indices, n_features,
                            y_ptr, sw_ptr, start, True, trace_ptr,
                            trace_stride, have_target, tgt, hit, target_size, mismatch)
        else:
            end = _rda_pass(problem, loss, &rows, &row_data, &row_indices, n_features,
                            y_ptr, sw_ptr, start, False, NULL, 0, False,
                            NULL, NULL, 0, 0)
    return end.sum_loss, end.sum_weight, end.position, end.switched


def _check_csr_arrays(data, const index_t[::1] indices, const index_t[::1] indptr,
                      Py_ssize_t n_columns):
    """ValueError unless ``(data, indices, indptr)`` is a CSR matrix of
    ``n_columns`` columns that the products below may read without bounds
    checks: row pointers from 0, non-decreasing, within the entries, and
    every column index in range."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    if n_rows > 0 and (indptr[0] != 0 or indptr[n_rows] > indices.shape[0]
                       or indices.shape[0] != data.shape[0]):
        raise ValueError("Inconsistent CSR arrays.")
    if _first_decrease(indptr) >= 0:
        raise ValueError("Inconsistent CSR row pointers.")
    _check_bounds(np.asarray(indices), n_columns, "column", (n_rows, n_columns))


def csr_gram(const floating[::1] data, const index_t[::1] indices,
             const index_t[::1] indptr, const double[::1] weights, Py_ssize_t n_columns,
             position=None):
    """``X^T diag(weights) X`` of the CSR matrix ``(data, indices, indptr)``
    with ``n_columns`` columns, as a dense array: the Hessian of the local
    phase on a small support (``_l1_logistic._Restricted.hessian``).

    ``position`` (optional, one integer per column) restricts it to some
    columns without copying them out of X: column ``c`` becomes row and
    column ``position[c]`` of the result, and is left out where
    ``position[c] < 0``; the result has ``max(position) + 1`` rows.

    Row by row, every pair of the row's kept entries adds ``weights[i] * x_a
    * x_b`` to entry ``(a, b)``: O(sum of the squared row lengths), where
    densifying blocks of rows for BLAS costs O(rows * n_columns**2)
    (w8a's 37,311 rows of 11.6 non-zeros among 300 columns: about 2 ms
    against 370 ms).  Each unordered pair is visited once and the two
    triangles are added at the end.  Any order of the indices, duplicates
    included.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, i, p, q, m, a, b, n_out, longest = 0
    cdef double va
    if weights.shape[0] != n_rows:
        raise ValueError("weights needs one entry per row.")
    _check_csr_arrays(data, indices, indptr, n_columns)
    if position is None:
        position = np.arange(n_columns, dtype=np.int64)
    position = np.asarray(position, dtype=np.int64)
    if position.shape != (n_columns,):
        raise ValueError("position needs one entry per column.")
    cdef const int64_t[::1] at = position
    n_out = int(position.max(initial=-1)) + 1
    for i in range(n_rows):
        longest = max(longest, indptr[i + 1] - indptr[i])
    # the kept entries of the current row: their output positions and values
    cdef int64_t[::1] row_at = np.empty(longest, dtype=np.int64)
    cdef double[::1] row_value = np.empty(longest)
    gram = np.zeros((n_out, n_out))
    cdef double[:, ::1] g = gram
    with nogil:
        for i in range(n_rows):
            if weights[i] == 0.0:
                continue
            m = 0
            for p in range(indptr[i], indptr[i + 1]):
                a = at[indices[p]]
                if a >= 0 and data[p] != 0.0:
                    row_at[m] = a
                    row_value[m] = data[p]
                    m += 1
            for p in range(m):
                a = row_at[p]
                va = weights[i] * row_value[p]
                g[a, a] += va * row_value[p]
                for q in range(p + 1, m):
                    b = row_at[q]
                    if b == a:  # a duplicate entry: its pair counts both ways
                        g[a, a] += 2.0 * va * row_value[q]
                    else:
                        g[a, b] += va * row_value[q]
        for a in range(n_out):
            for b in range(a + 1, n_out):
                va = g[a, b] + g[b, a]
                g[a, b] = va
                g[b, a] = va
    return gram


def csr_normal_product(const double[::1] data, const index_t[::1] indices,
                       const index_t[::1] indptr, const double[::1] v, double offset,
                       const double[::1] weights, double[::1] z not None,
                       double[::1] out not None):
    """``X^T diag(weights) (X v + offset)`` of the CSR matrix ``(data,
    indices, indptr)`` into ``out`` (zeroed here), and ``z = weights * (X v
    + offset)``: a Hessian-vector product of the local phase's conjugate
    gradients (``_l1_logistic._Restricted.hessian_operator``) in one pass
    over the rows, where ``X @ v`` then ``X.T @ z`` read them twice.  The
    sums are those of SciPy's two products, in the same order."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, n_columns = out.shape[0], i, p
    cdef double s
    if v.shape[0] != n_columns or weights.shape[0] != n_rows or z.shape[0] != n_rows:
        raise ValueError("Inconsistent shapes.")
    _check_csr_arrays(data, indices, indptr, n_columns)
    with nogil:
        for p in range(n_columns):
            out[p] = 0.0
        for i in range(n_rows):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += data[p] * v[indices[p]]
            s = (s + offset) * weights[i]
            z[i] = s
            for p in range(indptr[i], indptr[i + 1]):
                out[indices[p]] += data[p] * s


# ----------------------------------------------------------------------
# The local phase on a narrow dense design, compiled
#
# ``_l1_logistic.local_phase`` is vectorised NumPy: on a table of a few
# hundred rows and a few dozen columns each of its iterations is a hundred
# small array operations, 150-450 us of interpreter and dispatch for a few
# microseconds of arithmetic (glass: 70 iterations, three quarters of
# RDA+'s fit).  ``dense_local_phase`` runs the same iterations, decision for
# decision, in C: BLAS for the products with X, LAPACK's Cholesky for the
# Newton systems.  It serves float64 C-ordered X with at most
# ``max_newton_support`` columns, where every Newton system is a direct
# solve; the sums are BLAS's and C loops', so the models agree with the
# NumPy path to round-off, not bit for bit (as dense and CSR input do).

cdef inline double _sign(double x) noexcept nogil:
    # np.sign: 0 stays 0 and NaN stays NaN
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return x


cdef inline double _soft(double x, double a) noexcept nogil:
    # sign(x) max(|x| - a, 0), NaN in NaN out (np.maximum propagates it)
    cdef double t = fabs(x) - a
    if t < 0.0:
        t = 0.0
    return _sign(x) * t


cdef inline double _residual(double g, double w, double lam) noexcept nogil:
    # _l1_logistic._residual: the minimum-norm subgradient of f + lam |w|
    return g + lam * _sign(w) if w != 0.0 else _soft(g, lam)


cdef inline double _logistic_loss(double z, double e) noexcept nogil:
    # log(1 + e^-z) = np.logaddexp(0, -z), given e = exp(-|z|)
    return (-z if z < 0.0 else 0.0) + log1p(e)


cdef class _DenseSurrogate:
    """The surrogate ``f`` of ``_l1_logistic.Surrogate`` over a dense X,
    with the buffers of one local phase."""
    cdef const double[:, ::1] X
    cdef const double[::1] y, sw
    cdef double N, lam
    cdef int n, d
    cdef double[::1] m, dl, dd, g, gather, scaled

    def __cinit__(self, const double[:, ::1] X, const double[::1] y,
                  const double[::1] sw, double N, double lam, bint hessians):
        if y.shape[0] != X.shape[0] or sw.shape[0] != X.shape[0]:
            raise ValueError("Inconsistent shapes.")
        self.X, self.y, self.sw, self.N, self.lam = X, y, sw, N, lam
        self.n, self.d = X.shape[0], X.shape[1]
        self.m = np.empty(self.n)
        self.dl = np.empty(self.n)
        self.dd = np.empty(self.n)
        self.g = np.empty(self.d)
        if self.n > INT32_MAX // max(self.d, 1):
            raise ValueError("X is too large for the compiled local phase.")
        if hessians:  # the columns of a Hessian, and them times dd
            self.gather = np.empty(self.n * self.d)
            self.scaled = np.empty(self.n * self.d)

    cdef double measures(self, const double[::1] w, double g_b, bint fit_intercept,
                         double scale, double* violation) noexcept nogil:
        """``_l1_logistic._measures`` of ``w`` from the gradient ``g`` and
        ``g_b``: returns delta, writes the violation.  Over every column: a
        column without data has g = 0 and w = 0, a residual of 0, as off
        the live columns NumPy's measures are taken on."""
        cdef double sq = 0.0, worst = 0.0, rj
        cdef int j
        for j in range(self.d):
            rj = _residual(self.g[j], w[j], self.lam)
            sq += rj * rj
            if fabs(rj) > worst or rj != rj:
                worst = fabs(rj)
        if fit_intercept:
            sq += g_b * g_b
            if fabs(g_b) > worst or g_b != g_b:
                worst = fabs(g_b)
        violation[0] = worst / scale
        return sqrt(sq) / sqrt(max(self.d + (1 if fit_intercept else 0), 1))

    cdef void matvec(self, const double[::1] w, double b, double[::1] out) noexcept nogil:
        """out = X w + b."""
        cdef char trans = b'T'
        cdef int inc = 1, i
        cdef double one = 1.0, zero = 0.0
        if self.n == 0:
            return
        # C-ordered X is the Fortran matrix X^T (d x n)
        dgemv(&trans, &self.d, &self.n, &one, <double*> &self.X[0, 0], &self.d,
              <double*> &w[0], &inc, &zero, &out[0], &inc)
        for i in range(self.n):
            out[i] += b

    cdef double value(self, const double[::1] m) noexcept nogil:
        cdef double s = 0.0, z
        cdef int i
        for i in range(self.n):
            z = self.y[i] * m[i]
            s += self.sw[i] * _logistic_loss(z, exp(-fabs(z)))
        return s / self.N

    cdef double derivatives(self) noexcept nogil:
        """f at ``self.m``; its row derivatives into ``dl``, ``dd``.  One
        exponential a row: log(1 + e^-z), sigma(z) and sigma(-z) all come
        from e = exp(-|z|) (three for NumPy's logaddexp and two expit)."""
        cdef double s = 0.0, z, e, p, right, wrong, weight
        cdef int i
        for i in range(self.n):
            z = self.y[i] * self.m[i]
            e = exp(-fabs(z))
            s += self.sw[i] * _logistic_loss(z, e)
            p = 1.0 / (1.0 + e)  # sigma(|z|)
            if z >= 0.0:
                right, wrong = p, e * p
            else:
                right, wrong = e * p, p
            weight = self.sw[i] / self.N
            self.dl[i] = -self.y[i] * wrong * weight
            self.dd[i] = right * wrong * weight
        return s / self.N

    cdef double gradient(self) noexcept nogil:
        """g = X^T dl; returns the intercept's sum(dl)."""
        cdef char trans = b'N'
        cdef int inc = 1, i
        cdef double one = 1.0, zero = 0.0, s = 0.0
        if self.n == 0:
            for i in range(self.d):
                self.g[i] = 0.0
            return 0.0
        dgemv(&trans, &self.d, &self.n, &one, <double*> &self.X[0, 0], &self.d,
              <double*> &self.dl[0], &inc, &zero, &self.g[0], &inc)
        for i in range(self.n):
            s += self.dl[i]
        return s

    cdef void hessian(self, const int64_t[::1] cols, int f, bint fit_intercept,
                      double[::1, :] H) noexcept nogil:
        """Hessian of f in the columns ``cols[:f]`` (and the intercept,
        last) into ``H``: ``XF^T (XF * dd)`` by BLAS, as NumPy's product."""
        cdef char trans_a = b'T', trans_b = b'N'
        cdef int k = H.shape[0], n_rows = self.n
        cdef Py_ssize_t i, j, n = self.n  # n * f may pass 2**31
        cdef double one = 1.0, zero = 0.0, s
        for j in range(f):
            for i in range(n):
                self.gather[i + j * n] = self.X[i, cols[j]]
                self.scaled[i + j * n] = self.X[i, cols[j]] * self.dd[i]
        if f > 0 and n > 0:
            dgemm(&trans_a, &trans_b, &f, &f, &n_rows, &one, &self.gather[0], &n_rows,
                  &self.scaled[0], &n_rows, &zero, &H[0, 0], &k)
        elif f > 0:
            for j in range(f):
                for i in range(f):
                    H[i, j] = 0.0
        if fit_intercept:
            for j in range(f):
                s = 0.0
                for i in range(n):
                    s += self.gather[i + j * n] * self.dd[i]
                H[f, j] = s
                H[j, f] = s
            s = 0.0
            for i in range(n):
                s += self.dd[i]
            H[f, f] = s

    cdef void hessian_diagonal(self, const int64_t[::1] cols, int f, bint fit_intercept,
                               double[::1] h) noexcept nogil:
        cdef int i, j
        cdef double s, x
        for j in range(f):
            s = 0.0
            for i in range(self.n):
                x = self.X[i, cols[j]]
                s += x * x * self.dd[i]
            h[j] = s
        if fit_intercept:
            s = 0.0
            for i in range(self.n):
                s += self.dd[i]
            h[f] = s


cdef int _count_nonzero(const double[::1] w, const int64_t[::1] A, int nA) noexcept:
    cdef int q, count = 0
    for q in range(nA):
        if w[A[q]] != 0.0:
            count += 1
    return count


def dense_local_phase(const double[:, ::1] X, const double[::1] y, const double[::1] sw,
                      double N, double lam, double[::1] w not None, double b,
                      A_start, double target, double scale, bint fit_intercept, record,
                      int max_iter, double armijo, int max_halvings,
                      int newton_halvings, int newton_attempts):
    """``_l1_logistic.local_phase`` on a dense float64 X (see the comment
    above): the same iterations, the same decisions, compiled.

    ``w`` (all the columns, 0 off ``A_start``) is the start and receives the
    solution; ``A_start`` the sorted columns of the support M.  The other
    arguments are local_phase's and its constants.  Returns ``(b, delta,
    violation, objective, reached, n_iter)``, ``reached``: the violation
    met ``target``."""
    cdef _DenseSurrogate S = _DenseSurrogate(X, y, sw, N, lam, True)
    cdef int n = S.n, d = S.d, i, j, q, f, k, nA, it = 0, _attempt, _halving, info
    cdef int nrhs = 1
    cdef char uplo = b'L'
    if w.shape[0] != d:
        raise ValueError("Inconsistent shapes.")
    cdef int64_t[::1] A = np.empty(d, dtype=np.int64)
    cdef int64_t[::1] cols = np.empty(d, dtype=np.int64)  # the non-zeros F, as columns
    cdef unsigned char[::1] in_A = np.zeros(d, dtype=np.uint8)
    cdef double[::1] w_new = np.empty(d), m_new = np.empty(n)
    cdef double[::1] r = np.empty(d + 1), step = np.empty(d + 1), h = np.empty(d + 1)
    cdef double[::1, :] H, Hk
    cdef double f_val, g_b, delta, violation, rj, phi, phi_new
    cdef double inside, outside, sq_nz, sq_zero, damping = 0.0, a, slope0
    cdef double b_new, trace, hmax, move, t, l1_new
    cdef bint reached = False, accepted, newton
    cdef const int64_t[::1] start = np.asarray(A_start, dtype=np.int64)
    nA = start.shape[0]
    for j in range(nA):
        A[j] = start[j]
        in_A[A[j]] = 1
    with nogil:
        S.matvec(w, b, S.m)
        f_val = S.derivatives()
    while True:
        with nogil:
            g_b = S.gradient()
        delta = S.measures(w, g_b, fit_intercept, scale, &violation)
        if record is not None:
            record(delta, violation, _count_nonzero(w, A, nA))
        if violation * scale <= target:
            reached = True
            break
        if it >= max_iter:
            break
        inside = fabs(g_b) if fit_intercept else 0.0
        outside = 0.0
        for j in range(d):
            rj = _residual(S.g[j], w[j], lam)
            if in_A[j]:
                inside = max(inside, fabs(rj))
            else:
                outside = max(outside, fabs(rj))
        if outside > target and inside <= max(0.5 * target, 0.1 * outside):
            # M grows by the largest violations outside it (NumPy's choice:
            # the same argpartition over the same values)
            g_np = np.asarray(S.g)
            r_out = np.sign(g_np) * np.maximum(np.abs(g_np) - lam, 0.0)
            r_out[np.asarray(A)[:nA]] = 0.0
            cand = np.flatnonzero(np.abs(r_out) > target)
            k = max(_count_nonzero(w, A, nA), 16)
            if cand.shape[0] > k:
                cand = cand[np.argpartition(-np.abs(r_out[cand]), k - 1)[:k]]
            for j in cand:
                in_A[j] = 1
            nA = 0
            for j in range(d):
                if in_A[j]:
                    A[nA] = j
                    nA += 1
        it += 1
        phi = f_val
        for q in range(nA):
            phi += lam * fabs(w[A[q]])
        # F: the non-zeros of A; r: their reduced gradient (and g_b)
        f, sq_nz, sq_zero = 0, 0.0, 0.0
        for q in range(nA):
            j = A[q]
            rj = _residual(S.g[j], w[j], lam)
            if w[j] != 0.0:
                cols[f] = j
                r[f] = rj
                sq_nz += rj * rj
                f += 1
            else:
                sq_zero += rj * rj
        if fit_intercept:
            r[f] = g_b
            sq_nz += g_b * g_b
        k = f + (1 if fit_intercept else 0)
        newton = sq_zero <= sq_nz and k > 0
        accepted = False
        if newton:
            for _attempt in range(newton_attempts):
                H = np.empty((k, k), order="F")
                with nogil:
                    S.hessian(cols, f, fit_intercept, H)
                trace = 0.0
                for j in range(k):
                    trace += H[j, j]
                trace = max(trace / k, 1e-300)
                for j in range(k):
                    H[j, j] += damping * H[j, j] + 1e-12 * trace
                Hk = H.copy_fortran()
                for j in range(k):
                    step[j] = r[j]
                dpotrf(&uplo, &k, &Hk[0, 0], &k, &info)
                if info == 0:
                    dpotrs(&uplo, &k, &nrhs, &Hk[0, 0], &k, &step[0], &k, &info)
                if info != 0:
                    # not positive definite: least squares, as NumPy's path
                    solution = _lstsq(np.asarray(H), np.asarray(r[:k]))[0]
                    for j in range(k):
                        step[j] = solution[j]
                slope0 = 0.0
                for j in range(k):
                    step[j] = -step[j]
                    slope0 += r[j] * step[j]
                a = 1.0
                for _halving in range(newton_halvings if slope0 < 0 else 0):
                    for j in range(d):
                        w_new[j] = w[j]
                    l1_new = 0.0
                    for q in range(f):
                        j = cols[q]
                        t = w[j] + a * step[q]
                        if _sign(w[j]) * t <= 0.0:
                            t = 0.0  # sign flip: set to zero, drop
                        w_new[j] = t
                    for q in range(nA):
                        l1_new += fabs(w_new[A[q]])
                    b_new = b + a * step[f] if fit_intercept else 0.0
                    with nogil:
                        S.matvec(w_new, b_new, m_new)
                        phi_new = S.value(m_new) + lam * l1_new
                    if phi_new <= phi + armijo * a * slope0:
                        accepted = True
                        break
                    a *= 0.5
                if accepted:
                    if a == 1.0:
                        damping = damping / 10 if damping > 1e-6 else 0.0
                    break
                damping = max(10 * damping, 1e-3)
        if not accepted:
            # proximal reduced-gradient step on all of M (and the intercept)
            with nogil:
                S.hessian_diagonal(A, nA, fit_intercept, h)
            hmax = 0.0
            for j in range(nA + (1 if fit_intercept else 0)):
                if h[j] > hmax or h[j] != h[j]:
                    hmax = h[j]
            hmax = 1e-12 * max(hmax, 1e-300)
            for j in range(nA + (1 if fit_intercept else 0)):
                if h[j] < hmax:
                    h[j] = hmax
            a = 1.0
            for _halving in range(max_halvings):
                for j in range(d):
                    w_new[j] = w[j]
                l1_new = 0.0
                move = 0.0
                for q in range(nA):
                    j = A[q]
                    w_new[j] = _soft(w[j] - a * S.g[j] / h[q], a * lam / h[q])
                    l1_new += fabs(w_new[j])
                    move += h[q] * (w_new[j] - w[j]) ** 2
                b_new = b - a * g_b / h[nA] if fit_intercept else 0.0
                if fit_intercept:
                    move += h[nA] * (b_new - b) ** 2
                with nogil:
                    S.matvec(w_new, b_new, m_new)
                    phi_new = S.value(m_new) + lam * l1_new
                if move > 0 and phi_new <= phi - armijo * move / a:
                    accepted = True
                    break
                a *= 0.5
        if not accepted:
            break
        for j in range(d):
            w[j] = w_new[j]
        for i in range(n):
            S.m[i] = m_new[i]
        b = b_new
        with nogil:
            f_val = S.derivatives()
    phi = f_val
    for q in range(nA):
        phi += lam * fabs(w[A[q]])
    return b, delta, violation, phi, reached, it


def dense_measures(const double[:, ::1] X, const double[::1] y, const double[::1] sw,
                   double N, double lam, const double[::1] w not None, double b,
                   bint fit_intercept, double scale):
    """``Surrogate.measures`` on a dense float64 X, compiled: ``(delta,
    violation)`` of the model ``(w, b)``, as ``_l1_logistic._measures``."""
    cdef _DenseSurrogate S = _DenseSurrogate(X, y, sw, N, lam, False)
    cdef double violation, delta
    if w.shape[0] != S.d:
        raise ValueError("Inconsistent shapes.")
    S.matvec(w, b, S.m)
    S.derivatives()
    delta = S.measures(w, S.gradient(), fit_intercept, scale, &violation)
    return delta, violation
