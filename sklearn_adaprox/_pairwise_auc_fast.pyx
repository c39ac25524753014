"""Online pairwise AUC maximisation: AOGD and OGD with lazy O(nnz) steps.

AOGD is Algorithm 2 of Sun, Wang, Lei, Li & Wang, "Pairwise Learning with
Adaptive Online Gradient Descent", TMLR 2023; OGD is their Algorithm 1 (Yang
et al., 2021).  Step ``k`` pairs sample ``k`` with sample ``k - 1`` of the
stream; with ``D = a_k - a_{k-1}`` and ``z = <w_k, D>`` the pair loss is
``l(y_k z)`` when the two labels differ and 0 otherwise, so its gradient is
``g_k = s * dloss(y_k, z) * D`` (``s`` the pair weight).  Then

    m_k     = theta m_{k-1} + (1 - theta) g_k
    w_{k+1} = rho_k (w_k - gamma_k C m_k),  rho_k = min(1, R / ||w_k - gamma_k C m_k||)

with ``gamma_k`` a global step and ``C = diag(c_j)`` a per-coordinate one:
``adaptive="norm"`` (the paper's scalar ``v_k = sum ||g||^2``): gamma =
eta / sqrt(v_k) (AOGD) or eta / v_k (strongly convex variant), c_j = 1;
``adaptive="coordinate"``: gamma = 1, c_j = eta / sqrt(ssq_j) (or eta /
ssq_j); OGD: theta = 0, gamma = eta / sqrt(k), c_j = 1.  A zero accumulator
gives a zero step ("skip the step while v_k = 0").

Every sample is a step, even when the pair has equal labels (g = 0): the
momentum keeps moving w.  A step costs O(nnz(a_k) + nnz(a_{k-1}) + J/K): the
coordinates of the two rows (the "union") are updated eagerly and "stamped"
with the step; every other coordinate is brought up to date in closed form
when next read:

* the projection is a global scale: with P_k = rho_1 ... rho_{k-1}, an idle
  weight is multiplied by P_k / P_s (P is kept as mantissa * 2^(-500 e) so it
  never underflows);
* an idle coordinate stamped at s has momentum theta^(k-s) m_j, and its
  weight moves by c_j m_j B(s, k) with
  B(s, k) = sum_{i=s}^{k-1} theta^(i-s+1) gamma_i rho_i ... rho_{k-1}.
  Stamps are grouped in blocks of K consecutive steps, K the largest with
  theta^-(K-1) < 2^10; one accumulator per block b,
  F_b(k) = sum_{i=b}^{k-1} theta^(i-b) gamma_i rho_i ... rho_{k-1},
  gives B(s, k) = theta^(1-(s-b)) (F_b(k) - (P_k / P_s) F_b(s)), losing at
  most 10 bits to the subtraction.  Only the blocks of the last J steps are
  live (about J/K + 2 <= 10 accumulator updates per step, whatever theta):
  J is the smallest window with theta^(J+1) <= 1e-17 (1 - theta) (J = 393
  for theta = 0.9), after which the rest of a stamp's momentum is below
  double resolution; the stamp's B is then archived (one scalar per step)
  and only rescaled by P.
* the norm ||w - gamma C m|| of the projection comes from three running
  scalars, A = ||w||^2, X = sum c_j w_j m_j, Y = sum c_j^2 m_j^2, which idle
  coordinates update in closed form (X -> rho theta (X - gamma Y), Y ->
  theta^2 Y, A -> rho^2 ||u||^2) and union coordinates correct exactly.
  They are recomputed from scratch at the start of every call.

Iterate averaging (``average``): ``coef_sum`` accumulates the iterates
after every step, ``sum_{k} w_{k+1}``.  An idle coordinate stamped at ``s``
and read at ``k`` adds ``w_j Q(s, k) - c_j m_j C(s, k)`` with
``Q(s, k) = sum_{i=s+1}^{k} P_i / P_s`` and ``C(s, k) = sum_{i=s+1}^{k} B(s, i)``.
Differences of running sums would cancel catastrophically once the
projection has shrunk P by many orders of magnitude, so these two range sums
come from a segment tree over the steps of the call instead: step ``i`` is
the linear map of the state ``(p, Q, tau, B, C)``

    p' = rho_i p,  Q' = Q + rho_i p,  tau' = theta tau,
    B' = rho_i (B + gamma_i theta tau),  C' = C + B',

a range of steps is the composition of its maps (five non-negative numbers,
``STEP_MAP``), and ``Q``, ``C`` of ``(s, k)`` are read from the composition
over steps ``s .. k - 1`` applied to ``(1, 0, 1, 0, 0)``: O(log(k - s))
compositions of non-negative terms, no subtraction.  Setting a leaf costs
O(log n_rows) per step.  The tree is the bottom-up kind with ``n_rows``
leaves (any count; its queries keep the order of the maps, as they must),
allocated only when averaging: 80 bytes per row of the call.

Every call ends with ``finalize`` (O(n_features), once per call), so the
caller's ``coef``, ``momentum`` and ``coef_sum`` are exact and current.
"""
import numpy as np

from cython cimport floating
from libc.math cimport ldexp, sqrt
from libc.stdint cimport int64_t

from ._dataset cimport (check_pass_input, data_pointers, get_row, index_t, longest_row,
                        prefetch_row)
from ._loss cimport Loss

cdef enum:
    AOGD = 0
    AOGD_STRONGLY_CONVEX = 1
    OGD = 2

ALGORITHM_CODES = {
    "aogd": AOGD,
    "aogd_strongly_convex": AOGD_STRONGLY_CONVEX,
    "ogd": OGD,
}

# The projection scale P is kept as P_mant * 2^(-SCALE_BITS * P_exp).
cdef enum:
    SCALE_BITS = 500

# theta^(J+1) <= MOMENTUM_TAIL * (1 - theta) defines the momentum window J.
cdef double MOMENTUM_TAIL = 1e-17


def momentum_window(double theta):
    """Smallest J with theta^(J+1) <= 1e-17 (1 - theta) (0 for theta = 0)."""
    if theta <= 0.0:
        return 0
    return max(0, int(np.ceil(np.log(MOMENTUM_TAIL * (1.0 - theta)) / np.log(theta))) - 1)


def block_length(double theta):
    """Stamps per block: the largest K with theta^-(K-1) < 2^10 (>= 1)."""
    if theta <= 0.0:
        return 1
    return max(1, int(np.floor(10.0 * np.log(2.0) / -np.log(theta))))


# --- composition of step maps (iterate averaging) --------------------------
# A map is (a, b, th, u, w): p' = a p, Q' = Q + b p, tau' = th tau,
# B' = a B + u tau, C' = C + b B + w tau (see the module docstring; the
# coefficient of B in C' obeys the same recurrence as b, from the same
# leaves, so it is b).
cdef enum:
    STEP_MAP = 5


cdef inline void set_identity(double* f) noexcept nogil:
    f[0] = 1.0
    f[1] = 0.0
    f[2] = 1.0
    f[3] = 0.0
    f[4] = 0.0


cdef inline void compose(const double* x, const double* y, double* out) noexcept nogil:
    """``out`` = the map ``x`` followed by ``y`` (``out`` may alias neither)."""
    out[0] = y[0] * x[0]
    out[1] = x[1] + y[1] * x[0]
    out[2] = y[2] * x[2]
    out[3] = y[0] * x[3] + y[3] * x[2]
    out[4] = x[4] + y[1] * x[3] + y[4] * x[2]


cdef class PairwiseAUCProblem:
    """State of one pairwise AUC problem for the length of one call.

    Built by the estimator from its fitted NumPy arrays (views updated in
    place; scalars read back through the attributes); never kept as fitted
    state.  ``n_rows`` bounds the number of steps of the call (it sizes the
    archive of expired momentum stamps).
    """
    cdef Loss loss
    cdef int algorithm
    cdef bint coordinate
    cdef double eta, theta, radius
    cdef bint project
    # fitted arrays (views)
    cdef double[::1] coef
    cdef double[::1] momentum
    cdef double[::1] ssq
    cdef double[:, ::1] score_stats
    cdef public double v
    cdef public int64_t t
    cdef public double pair_weight, ordered_weight
    # previous sample of the stream (the pair partner of the next step)
    cdef public double prev_label, prev_weight
    cdef int64_t[::1] prev_idx
    cdef Py_ssize_t prev_nnz
    cdef double[::1] prev_dense
    # lazy representation
    cdef int64_t k0                 # first step of this call
    cdef int64_t[::1] stamp         # w_j is current at the start of step stamp[j]
    cdef double[::1] p_mant_at      # P at that stamp
    cdef int64_t[::1] p_exp_at
    cdef double p_mant
    cdef int64_t p_exp
    cdef Py_ssize_t J, L
    cdef Py_ssize_t K, NB            # block length, number of block slots
    cdef double[::1] powers         # theta^n, n = 0 .. J + K + 1
    cdef double[::1] inv_powers     # theta^(1-n), n = 0 .. K - 1
    cdef double[::1] fblock         # F_b(k) of the live blocks, slot (b-k0)/K % NB
    cdef double[::1] fstamp         # F_b(s) of the live stamps, slot s % L
    cdef double[::1] pstamp_mant    # P at the live stamps, slot s % L
    cdef int64_t[::1] pstamp_exp
    cdef double[::1] b_final        # archived B of expired stamps (index s - k0)
    cdef double[::1] b_final_mant   # P when the stamp expired
    cdef int64_t[::1] b_final_exp
    # capacities of the call's workspaces: steps, and non-zeros of one row
    cdef Py_ssize_t max_steps, max_row_nnz
    # per-step scratch
    cdef int64_t[::1] mark
    cdef int64_t[::1] union_idx
    cdef double[::1] union_delta
    # running norms for the projection
    cdef double A, X, Y
    # iterate averaging: the sums and the segment tree of step maps
    cdef bint average
    cdef double[::1] coef_sum
    cdef public int64_t n_averaged
    cdef double[:, ::1] tree
    cdef Py_ssize_t tree_leaves

    def __init__(self, Loss loss, str algorithm, str adaptive, double eta,
                 double theta, radius,
                 double[::1] coef, double[::1] momentum, double[::1] ssq,
                 double v, int64_t t, double[:, ::1] score_stats,
                 double pair_weight, double ordered_weight,
                 const int64_t[::1] prev_indices, const double[::1] prev_values,
                 double prev_label, double prev_weight,
                 Py_ssize_t n_rows, Py_ssize_t max_row_nnz,
                 double[::1] coef_sum=None, int64_t n_averaged=0):
        cdef Py_ssize_t d = coef.shape[0], q, j
        cdef Py_ssize_t cap
        if (momentum.shape[0] != d or ssq.shape[0] != d
                or score_stats.shape[0] != 2 or score_stats.shape[1] != 3
                or prev_values.shape[0] != prev_indices.shape[0]
                or (prev_indices.shape[0] and not
                    (0 <= np.min(prev_indices) and np.max(prev_indices) < d))):
            raise ValueError("The pairwise AUC state arrays do not fit one another.")
        self.max_steps = n_rows
        self.max_row_nnz = max_row_nnz
        self.loss = loss
        self.algorithm = ALGORITHM_CODES[algorithm]
        self.coordinate = adaptive == "coordinate" and self.algorithm != OGD
        self.eta = eta
        self.theta = 0.0 if self.algorithm == OGD else theta
        self.project = radius is not None
        self.radius = float(radius) if radius is not None else 0.0
        self.coef = coef
        self.momentum = momentum
        self.ssq = ssq
        self.v = v
        self.t = t
        self.score_stats = score_stats
        self.pair_weight = pair_weight
        self.ordered_weight = ordered_weight
        self.prev_label = prev_label
        self.prev_weight = prev_weight

        self.prev_dense = np.zeros(d, dtype=np.float64)
        cap = min(d, 2 * max(max_row_nnz, prev_indices.shape[0]))
        self.prev_idx = np.zeros(max(cap, 1), dtype=np.int64)
        self.prev_nnz = prev_indices.shape[0]
        for q in range(self.prev_nnz):
            j = prev_indices[q]
            self.prev_idx[q] = j
            self.prev_dense[j] = prev_values[q]
        self.mark = np.full(d, -1, dtype=np.int64)
        self.union_idx = np.zeros(max(cap, 1), dtype=np.int64)
        self.union_delta = np.zeros(max(cap, 1), dtype=np.float64)

        self.k0 = t + 1
        self.stamp = np.full(d, self.k0, dtype=np.int64)
        self.p_mant = 1.0
        self.p_exp = 0
        self.p_mant_at = np.ones(d, dtype=np.float64)
        self.p_exp_at = np.zeros(d, dtype=np.int64)
        self.J = momentum_window(self.theta)
        self.L = self.J + 1
        self.K = block_length(self.theta)
        self.NB = (self.J + self.K) // self.K + 4
        self.powers = self.theta ** np.arange(self.J + self.K + 2, dtype=np.float64)
        self.powers[0] = 1.0
        if self.theta > 0.0:
            self.inv_powers = self.theta ** (1.0 - np.arange(self.K, dtype=np.float64))
        else:
            self.inv_powers = np.zeros(1, dtype=np.float64)
        # stamp k0 opens block k0 with F = 0 and P = 1
        self.fblock = np.zeros(self.NB, dtype=np.float64)
        self.fstamp = np.zeros(self.L, dtype=np.float64)
        self.pstamp_mant = np.ones(self.L, dtype=np.float64)
        self.pstamp_exp = np.zeros(self.L, dtype=np.int64)
        self.b_final = np.zeros(n_rows + 1, dtype=np.float64)
        self.b_final_mant = np.ones(n_rows + 1, dtype=np.float64)
        self.b_final_exp = np.zeros(n_rows + 1, dtype=np.int64)
        self.recompute_norms()

        # averaging: a segment tree with a leaf per step of the call
        self.average = coef_sum is not None
        self.n_averaged = n_averaged
        self.tree_leaves = 1
        if self.average:
            if coef_sum.shape[0] != d:
                raise ValueError("coef_sum needs one entry per feature")
            self.coef_sum = coef_sum
            self.tree_leaves = max(n_rows, 1)
            self.tree = np.tile(np.array([1.0, 0.0, 1.0, 0.0, 0.0]),
                                (2 * self.tree_leaves, 1))

    cdef inline double coord_step(self, Py_ssize_t j) noexcept nogil:
        """Per-coordinate factor c_j of the step (1 unless adaptive per coordinate)."""
        cdef double s
        if not self.coordinate:
            return 1.0
        s = self.ssq[j]
        if s <= 0.0:
            return 0.0
        if self.algorithm == AOGD_STRONGLY_CONVEX:
            return self.eta / s
        return self.eta / sqrt(s)

    cdef void recompute_norms(self) noexcept nogil:
        """A, X, Y from the (current) arrays; O(n_features)."""
        cdef Py_ssize_t j
        cdef double c, w, m
        self.A = 0.0
        self.X = 0.0
        self.Y = 0.0
        if not self.project:
            return
        for j in range(self.coef.shape[0]):
            c = self.coord_step(j)
            w = self.coef[j]
            m = self.momentum[j]
            self.A += w * w
            self.X += c * w * m
            self.Y += c * c * m * m

    cdef inline double scale_since(self, double mant, int64_t e) noexcept nogil:
        """P_now / P_then for P_then = mant * 2^(-SCALE_BITS e)."""
        return ldexp(self.p_mant / mant, -SCALE_BITS * <int>(self.p_exp - e))

    cdef inline double live_b(self, int64_t s, double ratio) noexcept nogil:
        """B(s, k) of a live stamp s at the current step k, given P_k / P_s.

        With b the start of the block of s, F_b(k) = sum_{i=b}^{k-1}
        theta^(i-b) gamma_i rho_i ... rho_{k-1}, and B(s, k) =
        theta^(1-(s-b)) (F_b(k) - (P_k / P_s) F_b(s)).  The subtraction
        loses at most a factor theta^-(s-b) < 2^10 of relative precision.
        """
        cdef int64_t q = (s - self.k0) // self.K
        cdef int64_t off = (s - self.k0) - q * self.K
        return self.inv_powers[off] * (self.fblock[q % self.NB]
                                       - ratio * self.fstamp[s % self.L])

    cdef void set_step_map(self, int64_t k, double rho, double gamma) noexcept nogil:
        """Leaf of step k, then its ancestors: O(log n_rows)."""
        cdef Py_ssize_t node = self.tree_leaves + (k - self.k0)
        cdef double* leaf = &self.tree[node, 0]
        leaf[0] = rho
        leaf[1] = rho
        leaf[2] = self.theta
        leaf[3] = rho * gamma * self.theta
        leaf[4] = rho * gamma * self.theta
        node //= 2
        while node >= 1:
            compose(&self.tree[2 * node, 0], &self.tree[2 * node + 1, 0],
                    &self.tree[node, 0])
            node //= 2

    cdef void range_sums(self, int64_t s, int64_t k, double* Q, double* C) noexcept nogil:
        """Q(s, k) and C(s, k): the composed maps of steps s .. k - 1."""
        cdef double left[STEP_MAP]
        cdef double right[STEP_MAP]
        cdef double tmp[STEP_MAP]
        cdef Py_ssize_t lo = self.tree_leaves + (s - self.k0)
        cdef Py_ssize_t hi = self.tree_leaves + (k - self.k0)  # exclusive
        cdef int q
        set_identity(left)
        set_identity(right)
        while lo < hi:
            if lo & 1:
                compose(left, &self.tree[lo, 0], tmp)
                for q in range(STEP_MAP):
                    left[q] = tmp[q]
                lo += 1
            if hi & 1:
                hi -= 1
                compose(&self.tree[hi, 0], right, tmp)
                for q in range(STEP_MAP):
                    right[q] = tmp[q]
            lo //= 2
            hi //= 2
        compose(left, right, tmp)
        # applied to (p, Q, tau, B, C) = (1, 0, 1, 0, 0)
        Q[0] = tmp[1]
        C[0] = tmp[4]

    cdef inline void catch_up(self, Py_ssize_t j, int64_t k) noexcept nogil:
        """Bring w_j to the start of step k and m_j to m_{j,k-1}; restamp at k
        (and, when averaging, add the idle iterates w_{s+1..k} to the sum)."""
        cdef int64_t s = self.stamp[j]
        cdef int64_t n = k - s
        cdef double m, w, c, b, ratio, Q, C
        if n == 0:
            return
        if self.average:
            self.range_sums(s, k, &Q, &C)
            self.coef_sum[j] += self.coef[j] * Q
        ratio = self.scale_since(self.p_mant_at[j], self.p_exp_at[j])
        w = self.coef[j] * ratio
        m = self.momentum[j]
        if m != 0.0:
            c = self.coord_step(j)
            if self.average:
                self.coef_sum[j] -= c * m * C
            if n <= self.J:
                b = self.live_b(s, ratio)
                m = m * self.powers[n]
            else:
                b = self.b_final[s - self.k0] * self.scale_since(
                    self.b_final_mant[s - self.k0], self.b_final_exp[s - self.k0])
                # theta^n < 1e-17 (1 - theta): below double resolution
                m = 0.0
            w -= c * self.momentum[j] * b
            self.momentum[j] = m
        self.coef[j] = w
        self.stamp[j] = k
        self.p_mant_at[j] = self.p_mant
        self.p_exp_at[j] = self.p_exp

    cdef void finalize(self) noexcept nogil:
        """Bring every coordinate to the start of the next step (O(n_features))."""
        cdef Py_ssize_t j
        cdef int64_t k = self.t + 1
        for j in range(self.coef.shape[0]):
            self.catch_up(j, k)


def run_epoch(PairwiseAUCProblem problem,
              const floating[::1] X_data,
              const index_t[::1] X_indices,
              const index_t[::1] X_indptr,
              bint is_dense,
              Py_ssize_t n_features,
              const double[::1] y,
              const double[::1] sample_weight,
              const int64_t[::1] order):
    """One pass over ``X[order]`` (y in {-1, +1}); rows of weight 0 are skipped.

    Returns ``(sum of pair weight * pair loss, sum of pair weights)`` over the
    pairs with different labels, each loss measured before its step, and the
    (indices, values) of the last row used (None if no row had weight).
    """
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.coef.shape[0], y.shape[0], sample_weight, order)
    # the call's workspaces were sized for at most max_steps rows of at most
    # max_row_nnz non-zeros, and at most n_features of them (a longer row
    # repeats a column: duplicates must have been summed)
    cdef Py_ssize_t longest = longest_row(X_indptr, is_dense, n_features, y.shape[0])
    if (order.shape[0] > problem.max_steps or longest > problem.max_row_nnz
            or longest > n_features):
        raise ValueError("The rows exceed the capacity the problem was built for.")
    cdef Loss loss = problem.loss
    cdef double* w = &problem.coef[0]
    cdef double* mom = &problem.momentum[0]
    cdef double* ssq = &problem.ssq[0]
    cdef double* prev_dense = &problem.prev_dense[0]
    cdef int64_t* prev_idx = &problem.prev_idx[0]
    cdef int64_t* mark = &problem.mark[0]
    cdef int64_t* uidx = &problem.union_idx[0]
    cdef double* udelta = &problem.union_delta[0]
    cdef double* fblock = &problem.fblock[0]
    cdef const double* powers = &problem.powers[0]
    cdef Py_ssize_t K = problem.K, NB = problem.NB
    cdef int64_t k0 = problem.k0, q_hi, q_lo, qb, b_start
    cdef Py_ssize_t J = problem.J, L = problem.L
    cdef double theta = problem.theta, eta = problem.eta
    cdef bint coordinate = problem.coordinate, project = problem.project
    cdef int algorithm = problem.algorithm
    cdef double radius = problem.radius

    cdef const floating* data = NULL
    cdef const index_t* indices = NULL
    cdef const index_t* indptr = &X_indptr[0]
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef Py_ssize_t s_pos, i, q, j, nnz, n_union, last_row = -1, slot
    cdef int64_t k, s_old
    cdef double sw, yi, pair_w, z, score, d, g, c, m_new, gamma, rho, usq
    cdef double x_old, y_old, x_new, y_new, sq_delta, lval
    cdef double sum_loss = 0.0, sum_weight = 0.0, step_w
    cdef bint has_prev, active

    data_pointers(X_data, X_indices, &data, &indices)

    with nogil:
        for s_pos in range(order.shape[0]):
            i = order[s_pos]
            if s_pos + 1 < order.shape[0]:
                prefetch_row(data, indices, indptr, is_dense, n_features, order[s_pos + 1])
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            yi = y[i]
            k = problem.t + 1           # this step
            nnz = get_row(data, indices, indptr, is_dense, n_features, i,
                          &row_data, &row_indices)
            has_prev = problem.prev_weight > 0.0
            active = has_prev and yi != problem.prev_label

            # Union of the two supports, with D = a_k - a_{k-1}; bring its
            # coordinates to the start of step k.
            n_union = 0
            score = 0.0
            z = 0.0
            x_old = 0.0
            y_old = 0.0
            for q in range(nnz):
                j = row_indices[q]
                mark[j] = k
                problem.catch_up(j, k)
                uidx[n_union] = j
                udelta[n_union] = row_data[q] - prev_dense[j]
                score += w[j] * row_data[q]
                n_union += 1
            for q in range(problem.prev_nnz):
                j = prev_idx[q]
                if mark[j] == k:
                    continue
                problem.catch_up(j, k)
                uidx[n_union] = j
                udelta[n_union] = -prev_dense[j]
                n_union += 1
            sq_delta = 0.0
            for q in range(n_union):
                j = uidx[q]
                z += w[j] * udelta[q]
                sq_delta += udelta[q] * udelta[q]
                if project:
                    c = problem.coord_step(j)
                    x_old += c * w[j] * mom[j]
                    y_old += c * c * mom[j] * mom[j]

            # Pair loss and the scalar d of g = d * D.
            d = 0.0
            if active:
                pair_w = sw * problem.prev_weight
                lval = loss.loss(yi, z)
                sum_loss += pair_w * lval
                sum_weight += pair_w
                problem.pair_weight += pair_w
                if yi * z > 0.0:
                    problem.ordered_weight += pair_w
                elif z == 0.0:
                    problem.ordered_weight += 0.5 * pair_w
                d = pair_w * loss.dloss(yi, z)
            problem.v += d * d * sq_delta

            # Score statistics for the threshold, weighted by the step index
            # (the score of the averaged model when averaging: it is the model
            # that decision_function uses).
            if problem.average and problem.n_averaged > 0:
                score = 0.0
                for q in range(nnz):
                    score += problem.coef_sum[row_indices[q]] * row_data[q]
                score /= <double> problem.n_averaged
            step_w = sw * <double> k
            q = 1 if yi > 0 else 0
            problem.score_stats[q, 0] += step_w
            problem.score_stats[q, 1] += step_w * score
            problem.score_stats[q, 2] += step_w * score * score

            # Global step.
            if algorithm == OGD:
                gamma = eta / sqrt(<double> k)
            elif coordinate:
                gamma = 1.0
            elif problem.v > 0.0:
                if algorithm == AOGD_STRONGLY_CONVEX:
                    gamma = eta / problem.v
                else:
                    gamma = eta / sqrt(problem.v)
            else:
                gamma = 0.0

            # Momentum (and accumulators) of the union coordinates.
            x_new = 0.0
            y_new = 0.0
            for q in range(n_union):
                j = uidx[q]
                g = d * udelta[q]
                ssq[j] += g * g
                m_new = theta * mom[j] + (1.0 - theta) * g
                mom[j] = m_new
                if project:
                    c = problem.coord_step(j)
                    x_new += c * w[j] * m_new
                    y_new += c * c * m_new * m_new

            # Projection factor from the running norms.
            rho = 1.0
            if project:
                problem.X = theta * (problem.X - x_old) + x_new
                problem.Y = theta * theta * (problem.Y - y_old) + y_new
                usq = problem.A - 2.0 * gamma * problem.X + gamma * gamma * problem.Y
                if usq < 0.0:
                    usq = 0.0
                if usq > radius * radius:
                    rho = radius / sqrt(usq)
                problem.A = rho * rho * usq
                problem.X = rho * (problem.X - gamma * problem.Y)

            # Move the union coordinates and stamp them at step k + 1.
            problem.p_mant *= rho
            if problem.p_mant < ldexp(1.0, -SCALE_BITS):
                problem.p_mant = ldexp(problem.p_mant, SCALE_BITS)
                problem.p_exp += 1
            for q in range(n_union):
                j = uidx[q]
                w[j] = rho * (w[j] - gamma * problem.coord_step(j) * mom[j])
                if problem.average:
                    problem.coef_sum[j] += w[j]
                problem.stamp[j] = k + 1
                problem.p_mant_at[j] = problem.p_mant
                problem.p_exp_at[j] = problem.p_exp

            # Idle coordinates: F_b(k + 1) = rho (F_b(k) + theta^(k-b) gamma)
            # for the blocks b that live stamps can still read ...
            if gamma != 0.0 or rho != 1.0:
                q_hi = (k - k0) // K
                q_lo = q_hi - (J + K) // K - 1
                if q_lo < 0:
                    q_lo = 0
                for qb in range(q_lo, q_hi + 1):
                    b_start = k0 + qb * K
                    if k - b_start <= J + K:
                        slot = qb % NB
                        fblock[slot] = rho * (fblock[slot] + powers[k - b_start] * gamma)
            # ... archive stamp k - J (its momentum is now below resolution) ...
            s_old = k - J
            if s_old >= k0:
                slot = s_old % L
                problem.b_final[s_old - k0] = problem.live_b(
                    s_old, problem.scale_since(problem.pstamp_mant[slot],
                                               problem.pstamp_exp[slot]))
                problem.b_final_mant[s_old - k0] = problem.p_mant
                problem.b_final_exp[s_old - k0] = problem.p_exp
            # ... and open stamp k + 1 (a new block starts with F = 0).
            qb = (k + 1 - k0) // K
            if k + 1 == k0 + qb * K:
                fblock[qb % NB] = 0.0
            slot = (k + 1) % L
            problem.fstamp[slot] = fblock[qb % NB]
            problem.pstamp_mant[slot] = problem.p_mant
            problem.pstamp_exp[slot] = problem.p_exp

            if problem.average:
                problem.set_step_map(k, rho, gamma)
                problem.n_averaged += 1

            # This row becomes the partner of the next one.
            for q in range(problem.prev_nnz):
                prev_dense[prev_idx[q]] = 0.0
            for q in range(nnz):
                prev_idx[q] = row_indices[q]
                prev_dense[row_indices[q]] = row_data[q]
            problem.prev_nnz = nnz
            problem.prev_label = yi
            problem.prev_weight = sw
            last_row = i
            problem.t = k

        problem.finalize()

    last = None
    if last_row >= 0:
        last_indices = np.asarray(problem.prev_idx)[:problem.prev_nnz].copy()
        last = (last_indices, np.asarray(problem.prev_dense)[last_indices])
    return sum_loss, sum_weight, last
