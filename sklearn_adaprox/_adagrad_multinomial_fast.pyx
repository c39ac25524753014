"""Multinomial AdaGrad kernel (Duchi, Hazan & Singer 2011).

One weight matrix W (n_features x n_classes) for all
classes, learnt from a multinomial loss of the class scores
p_k = <W[:, k], x> + b_k.  Every entry W[j, k] has its own AdaGrad sums
(u_jk, ssq_jk), so H is diagonal over the entries.  The gradient of a row x
is x_j * d_k on entry (j, k) (d = dloss/dp), so a step touches the rows of
W whose feature is in x: O(n_classes * nnz).

Penalties: element-wise ("l2", "l1", elastic net: the binary closed forms
entry by entry), or a mixed norm over the rows of W,
phi(W) = lam * sum_j ||W[j, :]||_p with p = 2 ("l1_l2") or p = inf
("l1_linf"), which drops a feature for every class at once.  With diagonal
H the composite step splits by rows into
    min_x  <v, x> + 1/2 <x, diag(D) x> + lam' ||x||_p
solved exactly by ``_prox`` (paper, section 5):
* dual averaging: v = eta u_j, D = H_j, lam' = eta lam t: a closed form of
  the row's sums and t, read lazily like the binary case;
* mirror descent: v = eta g_j - H_j w_j, D = H_j, lam' = eta lam.  A row
  that the step does not touch still shrinks (v = -H_j w_j).  For p = inf
  k such steps are one step with k lam' (see weights_at_t); for p = 2 with
  unequal D there is no closed form, so the idle steps are replayed when
  the row is next read, stopping as soon as the row reaches zero (where it
  stays).

The state is the estimator's own, in this layout (a feature's classes side
by side), updated in place: a pass writes the rows of its features only.
"""
import numpy as np

cimport cython
cimport numpy as cnp
from cython cimport floating
from libc.float cimport DBL_MAX
from libc.math cimport fabs, sqrt
from libc.stdint cimport int64_t

from ._adagrad_rules cimport (DUAL_AVERAGING, FTRL_PROXIMAL, MIRROR_DESCENT, Hyper,
                              da_intercept, da_root, da_weight, ftrl_weight, ftrl_z_step,
                              intercept_step, make_hyper, md_idle_steps, md_prox)
from ._dataset cimport (RowPass, check_pass_input, float64_values, index_t, learnable_rows,
                        plain_rows_largest, row_pass, step_row)
from ._loss cimport MultinomialLoss
from ._prox cimport group_l2_prox, linf_prox, prox_work_size

cnp.import_array()

cdef extern from "_simd.h" nogil:
    void prefetch_stream(const void* p, size_t nbytes)
    bint avx_available()
    void class_scores_avx(const double* acc, Py_ssize_t n_classes, double xj, double eta,
                          double delta, double l1_shift, double l2_shift, double* scores)
    void class_sums_step_avx(double* acc, Py_ssize_t n_classes, double xj, const double* d)

# Whether the CPU (and the OS) run AVX: dual averaging's loops over the
# classes of a feature then take four classes per instruction (same results).
cdef bint HAVE_AVX = avx_available()


def set_avx(bint enabled):
    """Test hook (``_adagrad_fast.set_avx`` calls it): take the AVX loops
    when ``enabled`` and the CPU runs AVX.  Returns whether AVX was in use."""
    global HAVE_AVX
    previous = HAVE_AVX
    HAVE_AVX = enabled and avx_available()
    return previous


cdef enum:
    ELEMENTWISE = 0
    GROUP_L2 = 1
    GROUP_LINF = 2

cdef enum:
    # entries of a row between the request of a feature's sums and their use
    PREFETCH_AHEAD = 8

PENALTY_CODES = {"elementwise": ELEMENTWISE, "l1_l2": GROUP_L2, "l1_linf": GROUP_LINF}


# final: the kernel's calls of its cdef methods are direct (no vtable),
# so the C compiler can inline them into the inner loops
@cython.final
cdef class MultinomialProblem:
    """The kernel's view of a multinomial AdaGrad state, updated in place.

    The estimator keeps the state in the kernel's layout (rows = features,
    so that a touched feature's entries are adjacent): ``acc`` (n_features,
    2 n_classes), the (u, root) pairs of each class, and for mirror descent
    ``weights`` (n_features, n_classes) with ``last_step`` (n_features,),
    the step at which each row of weights is current.  A pass changes the
    rows of the features it reads only, so a call costs O(n_classes * nnz)
    whatever n_features; ``coef_into`` computes the weights of step t
    without changing the state.
    """
    cdef MultinomialLoss loss
    cdef Hyper hyper
    cdef int penalty
    cdef double group_strength
    cdef bint fit_intercept
    cdef Py_ssize_t n_classes
    # W: mirror descent's weights (the caller's array), or for FTRL-Proximal
    # and dual averaging with a mixed norm the weights of step t of the rows
    # read so far (closed forms of the sums, computed when a row is read;
    # a scratch array, whose untouched pages are never mapped), or (0,
    # n_classes) for dual averaging with an element-wise penalty (the
    # default): its weights are computed where they are read, and on 20
    # newsgroups hashed (20 classes x 2**20 features) W alone is 168 MB
    cdef double[:, ::1] W
    cdef bint closed_form
    cdef double[:, ::1] acc            # (n_features, 2 n_classes): (u, root) pairs
    cdef int64_t[::1] last_step        # mirror descent: step at which row j is current
    cdef double[::1] intercept
    cdef double[::1] intercept_sum_grad
    cdef double[::1] intercept_sum_sq_grad
    # scratch rows: scores, gradient, v, D, prox work, a row of coef_into
    cdef double[:, ::1] work
    cdef public int64_t t
    # The rows of the features a short call's pass may change, saved before
    # it (``learn_rows``) so that the call can be taken back in
    # O(n_classes nnz): feature, its sums and mirror descent's weights and step.
    cdef int64_t[::1] saved_features
    cdef double[:, ::1] saved_acc
    cdef double[:, ::1] saved_weights
    cdef int64_t[::1] saved_steps
    cdef Py_ssize_t saved_capacity  # 0 until the first save: no buffers yet
    cdef Py_ssize_t n_saved

    def __init__(self, *, MultinomialLoss loss, str update, str penalty, double eta,
                 double delta, double l1, double l2, double group_strength,
                 bint fit_intercept, double[:, ::1] acc, weights, last_step,
                 double[::1] intercept, double[::1] intercept_sum_grad,
                 double[::1] intercept_sum_sq_grad, int64_t t, bint adaptive=True):
        self.n_classes = intercept.shape[0]
        n_features = acc.shape[0]
        if (acc.shape[1] != 2 * self.n_classes
                or intercept_sum_grad.shape[0] != self.n_classes
                or intercept_sum_sq_grad.shape[0] != self.n_classes):
            raise ValueError("The per-class state arrays must have one shape.")
        self.loss = loss
        self.hyper = make_hyper(update, eta, delta, l1, l2, adaptive)
        self.penalty = PENALTY_CODES[penalty]
        self.group_strength = group_strength
        self.fit_intercept = fit_intercept
        self.acc = acc
        self.intercept = intercept
        self.intercept_sum_grad = intercept_sum_grad
        self.intercept_sum_sq_grad = intercept_sum_sq_grad
        self.t = t
        self.closed_form = (self.hyper.update == DUAL_AVERAGING
                            and self.penalty == ELEMENTWISE)
        if self.hyper.update == MIRROR_DESCENT:
            if (weights is None or last_step is None
                    or weights.shape != (n_features, self.n_classes)
                    or last_step.shape != (n_features,)):
                raise ValueError("mirror descent: weights and last_step must have a "
                                 "row per feature.")
            self.W = weights
            self.last_step = last_step
        else:
            self.W = np.zeros((0 if self.closed_form else n_features, self.n_classes))
            self.last_step = np.zeros(0, dtype=np.int64)
        self.work = np.zeros((6, self.n_classes + prox_work_size(self.n_classes)))
        self.saved_capacity = 0
        self.n_saved = 0

    cdef int save_features(self, const index_t[::1] features) except -1:
        """Save the rows of ``features`` (repeats allowed) for
        ``restore_features``.  O(n_classes len(features))."""
        cdef Py_ssize_t s, j, k, K = self.n_classes, n = features.shape[0]
        cdef bint md = self.hyper.update == MIRROR_DESCENT
        if self.saved_capacity < n:
            n = max(n, 64)
            self.saved_features = np.empty(n, dtype=np.int64)
            self.saved_acc = np.empty((n, 2 * K))
            self.saved_weights = np.empty((n, K if md else 0))
            self.saved_steps = np.empty(n, dtype=np.int64)
            self.saved_capacity = n
        for s in range(features.shape[0]):
            j = features[s]
            self.saved_features[s] = j
            for k in range(2 * K):
                self.saved_acc[s, k] = self.acc[j, k]
            if md:
                for k in range(K):
                    self.saved_weights[s, k] = self.W[j, k]
                self.saved_steps[s] = self.last_step[j]
        self.n_saved = features.shape[0]
        return 0

    def restore_features(self):
        """Put back the rows saved by the last ``save_features``, in the
        reverse order (a feature saved twice ends as it was first saved)."""
        cdef Py_ssize_t s, j, k, K = self.n_classes
        cdef bint md = self.hyper.update == MIRROR_DESCENT
        for s in range(self.n_saved - 1, -1, -1):
            j = self.saved_features[s]
            for k in range(2 * K):
                self.acc[j, k] = self.saved_acc[s, k]
            if md:
                for k in range(K):
                    self.W[j, k] = self.saved_weights[s, k]
                self.last_step[j] = self.saved_steps[s]
        self.n_saved = 0

    cdef bint saved_features_finite(self) noexcept nogil:
        """Whether the saved features' rows and the intercepts' values are
        all finite now: what a pass over rows of those features can have
        made infinite or NaN."""
        cdef Py_ssize_t s, j, k, K = self.n_classes
        cdef bint md = self.hyper.update == MIRROR_DESCENT
        cdef double total = 0.0
        for k in range(K):
            total += (self.intercept[k] + self.intercept_sum_grad[k]
                      + self.intercept_sum_sq_grad[k])
        for s in range(self.n_saved):
            j = self.saved_features[s]
            # a sum is finite only if every term is (NaN and infinities
            # propagate), unless it overflows, which only refuses more
            for k in range(2 * K):
                total += self.acc[j, k]
            if md:
                for k in range(K):
                    total += self.W[j, k]
        return fabs(total) <= DBL_MAX

    cdef void current_row(self, Py_ssize_t j) noexcept nogil:
        """Bring row j of W to step t (weights of step t, before step t+1)."""
        cdef int64_t idle = 0
        if self.hyper.update == MIRROR_DESCENT:
            idle = self.t - self.last_step[j]
            self.last_step[j] = self.t
        self.weights_at_t(j, &self.W[j, 0], idle)

    cdef void weights_at_t(self, Py_ssize_t j, double* w, int64_t idle) noexcept nogil:
        """The weights of row j at step t, into w: for mirror descent, w
        holds them as of ``idle`` steps earlier; the other rules compute
        them from the sums."""
        cdef Py_ssize_t k, K = self.n_classes
        cdef Hyper h = self.hyper
        cdef double* acc = &self.acc[j, 0]
        cdef double* v = &self.work[2, 0]
        cdef double* D = &self.work[3, 0]
        cdef int64_t idle_steps
        cdef double lam_scale
        if h.update == MIRROR_DESCENT:
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
                w[k] = ftrl_weight(acc[2 * k], acc[2 * k + 1], <double> self.t, h)
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

    def coef_into(self, double[:, ::1] out not None, columns=None):
        """The weights of step t, class by class, into ``out`` (n_classes,
        n_columns): of every feature, or of the sorted int64 ``columns``.
        The state is not changed (mirror descent's rows are caught up in a
        copy)."""
        cdef Py_ssize_t c, k, j, K = self.n_classes, n_features = self.acc.shape[0]
        cdef const int64_t[::1] cols = (np.arange(n_features, dtype=np.int64)
                                        if columns is None else columns)
        if out.shape[0] != K or out.shape[1] != cols.shape[0]:
            raise ValueError("out needs a row per class and a column per feature read.")
        if cols.shape[0] > 0 and (np.min(cols) < 0 or np.max(cols) >= n_features):
            raise ValueError("columns outside the state.")
        cdef double* w = &self.work[5, 0]
        cdef bint md = self.hyper.update == MIRROR_DESCENT
        with nogil:
            for c in range(cols.shape[0]):
                j = cols[c]
                if md:
                    for k in range(K):
                        w[k] = self.W[j, k]
                self.weights_at_t(j, w, self.t - self.last_step[j] if md else 0)
                for k in range(K):
                    out[k, c] = w[k]

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
        cdef double* acc = &self.acc[j, 0]
        cdef double* w = NULL if self.closed_form else &self.W[j, 0]  # no W: never read
        cdef double* v = &self.work[2, 0]
        cdef double* D = &self.work[3, 0]
        cdef double g, root, H
        if self.closed_form and HAVE_AVX:  # the sums only, four classes at a time
            class_sums_step_avx(acc, K, xj, d)
            return
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

    cdef void add_scores(self, Py_ssize_t j, double xj, double* scores) noexcept nogil:
        """scores += xj * (row j of W at step t), bringing the row to step t
        first where W is kept."""
        cdef Py_ssize_t k
        cdef double* acc
        cdef double t = <double> self.t
        if self.closed_form:
            acc = &self.acc[j, 0]
            if self.hyper.adaptive and HAVE_AVX:
                class_scores_avx(acc, self.n_classes, xj, self.hyper.eta, self.hyper.delta,
                                 self.hyper.l1 * t, self.hyper.eta * self.hyper.l2 * t, scores)
                return
            for k in range(self.n_classes):
                scores[k] += da_weight(acc[2 * k], da_root(acc[2 * k + 1], t, self.hyper),
                                       t, self.hyper) * xj
            return
        self.current_row(j)
        for k in range(self.n_classes):
            scores[k] += self.W[j, k] * xj


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


def run_epoch(MultinomialProblem problem,
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
    cdef double sums[2]
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.acc.shape[0], y.shape[0], sample_weight, order)
    if not all_class_indices(y, problem.n_classes):
        raise ValueError(f"y must hold class indices in [0, {problem.n_classes}).")
    pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features, y, sample_weight,
              order, sums)
    return sums[0], sums[1]


def learn_rows(MultinomialProblem problem,
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
    """A short call's pass (``_short_calls.MultinomialPath``), all or
    nothing: ``run_epoch`` on the class indices ``targets[0]`` from step t
    and the per-class intercept arrays given (the estimator's, read only),
    after saving the rows of the features it may change.  The problem works
    on intercept arrays of its own, into which those values are copied
    first.

    Returns ``(sum of weight * loss, sum of weights, t after, after,
    published)``: ``after`` a new (3, n_classes) array whose rows are the
    class intercepts and their two sums after the pass, and for two
    classes ``published`` the new array ``[b_1 - b_0]``, the ``intercept_``
    of the estimator's ``_publish_class_intercepts`` (None for more
    classes).  Returns None with nothing changed for rows that are not
    plain or could overflow the state (``_dataset.learnable_rows``, with
    ``largest_factor`` the largest weight) and when the pass left a
    non-finite value, ``b_1 - b_0`` included.  ``restore_features()``
    takes back a successful call, and does nothing after one that raised
    (which changed nothing).  ``X_indices`` names every feature the rows
    may have (for dense rows: every column).  The small arrays are read and
    written through their pointers (``_dataset.float64_values``): with the
    copies the caller no longer makes, a one-row partial_fit went from 9.0
    to 7.7 us (timeit, two classes)."""
    cdef double sums[2]
    cdef Py_ssize_t k, K = problem.n_classes
    if targets.shape[0] != 1:
        raise ValueError("one row of targets: the class indices.")
    cdef const double[::1] y = targets[0]
    problem.n_saved = 0  # nothing to take back until the rows are saved
    if not learnable_rows(X_data, X_indices, X_indptr, is_dense, n_features,
                          order.shape[0], largest_factor, limit):
        return None
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.acc.shape[0], y.shape[0], sample_weight, order)
    if not all_class_indices(y, K):
        raise ValueError(f"y must hold class indices in [0, {K}).")
    # one value per class each (ValueError otherwise)
    cdef const double* intercept = float64_values(intercepts, K, False)
    cdef const double* sum_grad = float64_values(sums_of_gradients, K, False)
    cdef const double* sum_sq = float64_values(sums_of_squares, K, False)
    cdef double difference = 0.0
    for k in range(K):
        problem.intercept[k] = intercept[k]
        problem.intercept_sum_grad[k] = sum_grad[k]
        problem.intercept_sum_sq_grad[k] = sum_sq[k]
    problem.t = t_value
    problem.save_features(X_indices)
    pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features, y, sample_weight,
              order, sums)
    if K == 2:
        # the published intercept_ of two classes may overflow where the
        # class intercepts do not
        difference = problem.intercept[1] - problem.intercept[0]
    if not (problem.saved_features_finite() and fabs(difference) <= DBL_MAX):
        problem.restore_features()
        return None
    cdef cnp.ndarray result = np.empty((3, K))
    cdef double* after = <double*> cnp.PyArray_DATA(result)
    for k in range(K):
        after[k] = problem.intercept[k]
        after[K + k] = problem.intercept_sum_grad[k]
        after[2 * K + k] = problem.intercept_sum_sq_grad[k]
    cdef cnp.ndarray published = None
    if K == 2:
        published = np.empty(1)
        (<double*> cnp.PyArray_DATA(published))[0] = difference
    return sums[0], sums[1], problem.t, result, published


def csr_row_scores(MultinomialProblem problem, t_value, intercepts,
                   const floating[::1] X_data, const index_t[::1] X_indices,
                   const index_t[::1] X_indptr, Py_ssize_t n_rows):
    """``scores[i, k] = <coef_k, x_i> + intercepts[k]`` for ``n_rows`` plain
    CSR rows (``_dataset.plain_rows_largest``; else None), ``coef_`` being
    the class weights of step t (for two classes its one row, class 1's
    weights less class 0's) read at the rows' columns only.  Summed in each
    row's order from 0 and then the intercept added, as the estimator's
    general path (``csr_scores`` on ``_coef_at``) does: the same numbers,
    bit for bit.  The state is not changed."""
    cdef Py_ssize_t i, k, q, j, K = problem.n_classes
    cdef Py_ssize_t n_out = K if K > 2 else 1
    # read in place (ValueError unless one per row of coef_)
    cdef const double* intercept = float64_values(intercepts, n_out, False)
    cdef bint md = problem.hyper.update == MIRROR_DESCENT
    if plain_rows_largest(X_data, X_indices, X_indptr, False, problem.acc.shape[0],
                          n_rows) < 0.0:
        return None
    problem.t = t_value
    cdef cnp.ndarray scores = np.empty((n_rows, n_out))
    cdef double* out = <double*> cnp.PyArray_DATA(scores)
    cdef double* total  # row i of scores: the sums, then the scores
    cdef double* w = &problem.work[5, 0]  # as coef_into reads a row
    with nogil:
        for i in range(n_rows):
            total = out + i * n_out
            for k in range(n_out):
                total[k] = 0.0
            for q in range(X_indptr[i], X_indptr[i + 1]):
                j = X_indices[q]
                if md:
                    for k in range(K):
                        w[k] = problem.W[j, k]
                problem.weights_at_t(j, w, problem.t - problem.last_step[j] if md else 0)
                if K > 2:
                    for k in range(K):
                        total[k] = total[k] + X_data[q] * w[k]
                else:
                    total[0] = total[0] + X_data[q] * (w[1] - w[0])
            for k in range(n_out):
                total[k] = total[k] + intercept[k]
    return scores


cdef int pass_rows(MultinomialProblem problem,
                   const floating[::1] X_data,
                   const index_t[::1] X_indices,
                   const index_t[::1] X_indptr,
                   bint is_dense,
                   Py_ssize_t n_features,
                   const double[::1] y,
                   const double[::1] sample_weight,
                   const int64_t[::1] order,
                   double* sums) except -1:
    """The pass of ``run_epoch`` (its input checked), ``sums = (loss,
    weight)``."""
    cdef Py_ssize_t K = problem.n_classes
    cdef double* scores = &problem.work[0, 0]
    cdef size_t row_bytes = 2 * K * sizeof(double)
    cdef double* d = &problem.work[1, 0]
    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* x
    cdef const index_t* idx
    cdef Py_ssize_t s, i, k, e, nnz
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
                # the sums of a feature span 2 K doubles (5 cache lines for
                # 20 classes) at a random place: ask for those of a later
                # entry of the row, so that the misses overlap
                if e + PREFETCH_AHEAD < nnz:
                    prefetch_stream(&problem.acc[idx[e + PREFETCH_AHEAD], 0], row_bytes)
                if x[e] != 0.0:
                    problem.add_scores(idx[e], x[e], scores)
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

        problem.current_intercepts()
    sums[0] = sum_loss
    sums[1] = sum_weight
    return 0
