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
momentum keeps moving w.  A step with a gradient costs O(nnz(a_k) +
nnz(a_{k-1}) + J/K): the coordinates of the two rows (the "union") are
updated eagerly and "stamped" with the step.  A step without one (equal
labels, or a pair on which the loss is flat) reads a_k's coordinates for
its score, O(nnz(a_k) + J/K), and a pair's union for its margin: with g = 0
every coordinate moves as an idle one.  A hinge pair that is certainly
flat reads a_k alone: its partner's score <w_k, a_{k-1}> is carried over
from the step before, and the margin compared with the hinge's threshold
with room for the rounding of either way of summing it
(``certainly_flat``); otherwise the union is gathered.  The same steps, to
the bit.  An idle coordinate is brought up
to date in closed form when a step with a gradient moves it; the other
steps read it in that form and store nothing (a fifth fewer instructions
a pass on SMS spam tf-idf and w8a than when every read brought it up to
date, as a read still does with a projection or averaging).  The closed
forms:

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
``STEP_MAP``; the tree is in ``_step_maps.pxd``), and ``Q``, ``C`` of ``(s, k)`` are read from the composition
over steps ``s .. k - 1`` applied to ``(1, 0, 1, 0, 0)``: O(log(k - s))
compositions of non-negative terms, no subtraction.  Setting a leaf costs
O(log n_rows) per step.  The tree is the bottom-up kind with ``n_rows``
leaves (any count; its queries keep the order of the maps, as they must),
allocated only when averaging: 80 bytes per row of the call.

Without momentum (theta = 0: the estimator's default, and OGD), a
projection or averaging, an idle coordinate does not move at all
(``momentum_free``): a step reads the weights where they are, and one with
a gradient writes its union's weights and accumulators only; nothing is
stamped, no block sum kept, and the momentum, which lasts one step, is
written by ``finalize`` for the last step alone.  The same weights as the
general rule's, a third of the state read per non-zero.

Every call ends with ``finalize``, so the caller's ``coef``, ``momentum``
and ``coef_sum`` are exact and current.  It catches up the coordinates
whose weight or momentum is non-zero; the others stay zero.  The per-feature
workspaces start at zero (stamps are kept relative to the call's first step,
and the projection scale of a stamp is read from a per-step history), so a
call costs O(nnz + steps) plus one read of the weights and the momentum;
without projection or averaging, the caller may instead name the only
coordinates the call can move (``moving``: its rows', the partner's and
those of non-zero momentum, which ``momentum_support`` lists at the end of
the previous call), and that read is of those alone.
"""
cimport cython
cimport numpy as cnp
import numpy as np

from cython cimport floating
from libc.math cimport INFINITY, fabs, isfinite, ldexp, log, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

cdef extern from "_simd.h" nogil:
    void prefetch_line(const void* p)

# How many entries of a row ahead the catch-up asks for a coordinate's state.
cdef enum:
    PREFETCH_AHEAD = 16

from ._dataset cimport (RowPass, asks_for_state_ahead, check_pass_input, columns_ahead,
                        float64_values, index_t, learnable_rows, longest_row,
                        merge_sorted, prefetch_entries, row_pass, step_row,
                        vector_length)
from ._loss cimport Loss

from ._dataset import touched_columns
from ._loss import Hinge
from ._step_maps cimport STEP_MAP, compose_range, set_step_map

cnp.import_array()


# Arrays made by the C API: a short call makes a few small ones, and
# np.empty's lookups and keywords cost more than their contents.
cdef inline cnp.ndarray int64_array(Py_ssize_t n):
    cdef cnp.npy_intp size = n
    return cnp.PyArray_EMPTY(1, &size, cnp.NPY_INT64, 0)


cdef inline cnp.ndarray float64_array(Py_ssize_t n):
    cdef cnp.npy_intp size = n
    return cnp.PyArray_EMPTY(1, &size, cnp.NPY_FLOAT64, 0)


cdef inline const int64_t* first_of(const int64_t[::1] columns) noexcept nogil:
    """The address of the first entry, or NULL for none (``&columns[0]`` is
    out of bounds then)."""
    return &columns[0] if columns.shape[0] > 0 else NULL


cdef inline const double* first_float_of(const double[::1] values) noexcept nogil:
    return &values[0] if values.shape[0] > 0 else NULL

# The sums over a step's union, gathered in a local struct that the
# compiler keeps in registers: as fields of the problem they went back to
# memory at every entry of the union, since the store of a weight (a
# double) might have changed them.  With the ldexp that a pass without a
# projection no longer makes (scale_since), 5-8 % fewer instructions a
# pass (callgrind, two epochs: w8a 97.7 -> 90.2 million).
cdef struct UnionSums:
    Py_ssize_t nnz          # entries listed in union_index, union_diff
    double margin           # <w_k, D>
    double sq_norm_diff     # ||D||^2
    double dot_old          # the union's part of sum c_j w_j m_j
    double sq_old           # and of sum c_j^2 m_j^2

# an empty union, the start of every gathering (read only)
cdef UnionSums NO_UNION = UnionSums(0, 0.0, 0.0, 0.0, 0.0)

# What measure_row reads of a row a_k at step k, in local variables again.
cdef struct RowMeasure:
    double score            # <w_k, a_k>, as gather_row sums it
    double scale            # sum (|coef_j| + |c_j m_j B|) |a_kj|: what the
    #                         rounding of the score and of w_k is relative to
    double momentum_dot     # sum c_j m_{j,k-1} a_kj
    double momentum_scale   # sum |c_j m_{j,k-1} a_kj|
    double sq_norm          # ||a_k||^2

cdef RowMeasure NO_MEASURE = RowMeasure(0.0, 0.0, 0.0, 0.0, 0.0)

# The relative size of the rounding that certainly_flat allows for, per
# term of the two sums it compares: 2^-40, 2^12 times a double's unit
# roundoff (the lazy weights lose at most 10 bits, see live_b).
cdef double FLAT_ROUNDING = 2.0 ** -40
# ||a_k||^2 + ||a_{k-1}||^2 below this: ||a_k - a_{k-1}||^2 is finite.
cdef double FINITE_SQ_NORMS = 1e300


cdef enum:
    AOGD = 0
    AOGD_STRONGLY_CONVEX = 1
    OGD = 2

ALGORITHM_CODES = {
    "aogd": AOGD,
    "aogd_strongly_convex": AOGD_STRONGLY_CONVEX,
    "ogd": OGD,
}

# The projection scale P is kept as mant * 2^(-SCALE_BITS * exp), so that
# thousands of projections cannot underflow it.
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


@cython.final
cdef class PairwiseWorkspace:
    """The per-feature scratch arrays of a call, reusable by the next one.

    All zero between calls: ``run_epoch`` hands them back clean, in
    O(nnz) (it lists the coordinates it stamps).  The passes of one
    ``fit`` share one workspace, so its pages are mapped once rather than
    once per epoch (a fresh page costs more than the step that touches it).
    One pass at a time: ``run_epoch`` refuses a workspace in use (two
    threads fitting one estimator at once), which two passes would corrupt.
    """
    cdef readonly Py_ssize_t n_features
    cdef int64_t[::1] stamp         # offset of the step a weight is current at
    cdef int64_t[::1] stamped       # the coordinates whose stamp is not 0
    cdef Py_ssize_t n_stamped
    cdef public bint in_use         # a pass is using it
    # Scratch of the per-step and per-row arrays of a pass (see
    # PairwiseAUCProblem.__init__), grown as needed and re-initialised by
    # each pass: on a small table a dozen fresh arrays per epoch cost as
    # much as the epoch's steps.
    cdef double[::1] float_scratch
    cdef int64_t[::1] int_scratch
    # the tables of a theta (window, block length, powers), computed once
    cdef double tables_theta
    cdef tuple tables

    def __init__(self, Py_ssize_t n_features):
        self.n_features = n_features
        self.stamp = np.zeros(n_features, dtype=np.int64)
        self.stamped = np.empty(n_features, dtype=np.int64)
        self.n_stamped = 0
        self.in_use = False
        self.float_scratch = np.zeros(0, dtype=np.float64)
        self.int_scratch = np.zeros(0, dtype=np.int64)
        self.tables_theta = -1.0
        self.tables = None

    cdef tuple theta_tables(self, double theta):
        """(J, K, theta^n for n = 0 .. J + K + 1, theta^(1-n) for
        n = 0 .. K - 1) of ``theta`` (see the module doc); read only."""
        cdef Py_ssize_t window, block_len
        if self.tables is None or self.tables_theta != theta:
            window = momentum_window(theta)
            block_len = block_length(theta)
            theta_pow = theta ** np.arange(window + block_len + 2, dtype=np.float64)
            theta_pow[0] = 1.0
            if theta > 0.0:
                theta_inv_pow = theta ** (1.0 - np.arange(block_len, dtype=np.float64))
            else:
                theta_inv_pow = np.zeros(1, dtype=np.float64)
            self.tables = (window, block_len, theta_pow, theta_inv_pow)
            self.tables_theta = theta
        return self.tables

    cdef double[::1] floats(self, Py_ssize_t n):
        """Scratch of at least n doubles (contents undefined)."""
        if self.float_scratch.shape[0] < n:
            self.float_scratch = np.empty(max(n, 2 * self.float_scratch.shape[0]),
                                          dtype=np.float64)
        return self.float_scratch

    cdef int64_t[::1] ints(self, Py_ssize_t n):
        """Scratch of at least n int64 (contents undefined)."""
        if self.int_scratch.shape[0] < n:
            self.int_scratch = np.empty(max(n, 2 * self.int_scratch.shape[0]),
                                        dtype=np.int64)
        return self.int_scratch


@cython.final
cdef class PairwiseAUCProblem:
    """State of one pairwise AUC problem for the length of one call.

    Built by the estimator from its fitted NumPy arrays (views updated in
    place; scalars read back through the attributes); never kept as fitted
    state.  ``n_rows`` bounds the number of steps of the call (it sizes the
    archive of expired momentum stamps).  ``workspace`` (a clean
    ``PairwiseWorkspace`` of n_features, used by one problem at a time)
    holds the per-feature scratch.
    """
    cdef Loss loss
    cdef int algorithm
    cdef bint coordinate            # one accumulator per coordinate
    cdef double eta, theta, radius
    cdef bint project
    # theta = 0 (OGD, or AOGD without momentum), no projection, no
    # averaging: an idle coordinate does not move (theta^n m = 0), so every
    # stored weight is current and a read is of coef alone (see weight_at),
    # and the momentum lasts one step: the pass stamps nothing and stores
    # no momentum; finalize writes the last step's (see free_step_union)
    cdef bint momentum_free
    cdef int64_t moved_at           # the last step with a gradient (0: none)
    cdef double moved_d             # and its d
    cdef bint moved_nonfinite       # a step wrote a NaN or an infinity
    # fitted arrays (views)
    cdef double[::1] coef
    cdef double[::1] momentum
    cdef double[::1] sum_sq_gradient
    cdef double[:, ::1] score_stats
    cdef public double total_sq_gradient
    cdef public int64_t t
    cdef public double pair_weight, ordered_weight
    # the previous sample of the stream, the pair partner of the next step:
    # its entries (copied from the pass's row only when a step reads them,
    # see run_epoch)
    cdef public double partner_label, partner_weight
    cdef int64_t[::1] partner_indices
    cdef double[::1] partner_values
    cdef Py_ssize_t partner_nnz
    # For a step with a pair, the partner's columns in an open-addressing
    # table (linear probing, Fibonacci hashing) of (column, position in the
    # partner) pairs, -1 for an empty slot, at most a quarter full: a row's
    # entry finds its partner value there, a few cache lines in all, where
    # a dense partner row of n_features cost a cache miss an entry on wide
    # hashed rows.  partner_matched[q]: partner entry q is also in the row.
    # Filled by fill_partner_table and emptied by empty_partner_table.
    cdef int64_t[::1] partner_table
    cdef int64_t[::1] partner_slot_of   # the table slot of partner entry q
    cdef int64_t[::1] partner_matched
    cdef int partner_shift              # 64 - log2(slots of this step's table)
    cdef PairwiseWorkspace workspace
    # lazy representation: w_j is current at the start of step
    # first_step + stamp[j], when the projection scale was P at that step
    cdef int64_t first_step         # the first step of this call
    cdef int64_t[::1] stamp
    cdef int64_t[::1] stamped       # the coordinates with stamp[j] != 0
    cdef double[::1] step_scale_mant  # P at the start of each step of the call
    cdef int64_t[::1] step_scale_exp  # (index s - first_step)
    cdef double scale_mant          # P now
    cdef int64_t scale_exp
    cdef Py_ssize_t window          # J: steps a stamp stays live
    cdef Py_ssize_t block_len       # K
    cdef Py_ssize_t block_slots     # ring of the live blocks
    cdef double[::1] theta_pow      # theta^n, n = 0 .. J + K + 1
    cdef double[::1] theta_inv_pow  # theta^(1-n), n = 0 .. K - 1
    cdef double[::1] block_sum      # F_b(k) of the live blocks, slot (b - first_step) / K % block_slots
    # per stamp s (index s - first_step), what live_b reads of it, set when
    # the stamp opens: F_b(s), the ring slot of its block b and
    # theta^(1-(s-b)) (no integer division per catch-up)
    cdef double[::1] stamp_block_sum
    cdef int64_t[::1] stamp_block_slot
    cdef double[::1] stamp_theta_inv
    cdef double[::1] archived_b     # B of the expired stamps (index s - first_step)
    cdef double[::1] final_b        # finalize's B(s, k) of every stamp (index s - first_step)
    cdef double[::1] archived_scale_mant  # P when the stamp expired
    cdef int64_t[::1] archived_scale_exp
    # capacities of the call's workspaces: steps, and non-zeros of one row
    cdef Py_ssize_t max_steps, max_row_nnz
    # the union of the supports of a step's two rows, with D = a_k - a_{k-1}
    cdef int64_t[::1] union_index
    cdef double[::1] union_diff     # D on the union
    cdef double[::1] union_weight   # w_j at the start of the step, as gathered
    cdef Py_ssize_t union_nnz
    cdef double pair_margin         # <w_k, D>
    cdef double sq_norm_diff        # ||D||^2
    # running scalars of the projection's norm ||w - gamma C m||:
    # ||w||^2, sum c_j w_j m_j and sum c_j^2 m_j^2, and the union's part of
    # the last two before and after its momentum moves
    cdef double sq_norm_coef, coef_dot_step, sq_norm_step
    cdef double union_dot_old, union_sq_old, union_dot_new, union_sq_new
    # A hinge pair whose margin is certainly at least flat_from (the hinge's
    # threshold; INFINITY: another loss, a projection or averaging) has no
    # gradient, and its step reads only its row: the partner's score
    # <w_k, a_{k-1}> is carried over from the step before (see
    # certainly_flat), with the scale of its rounding, the partner's
    # ||a_{k-1}||^2 and non-zeros, when partner_measured.
    cdef double flat_from
    cdef public int64_t n_flat_reads    # pairs so read (for the tests)
    cdef bint partner_measured
    cdef double partner_score, partner_scale, partner_sq_norm
    cdef Py_ssize_t partner_measured_nnz
    # iterate averaging: the sums and the segment tree of step maps
    cdef bint average
    cdef double[::1] coef_sum
    cdef public int64_t n_averaged
    cdef double[:, ::1] step_maps
    cdef Py_ssize_t n_leaves
    cdef const int64_t[::1] moving  # see finalize; None: any coordinate
    # what finalize finds in the moving coordinates as it brings them up to
    # date (read by nonfinite_state and momentum_support): the first state
    # array left non-finite, and the columns of non-zero momentum
    cdef int moving_nonfinite
    cdef cnp.ndarray moving_support_array  # a new array each call: the list kept
    cdef int64_t* moving_support
    cdef Py_ssize_t n_moving_support
    # a short call's (learn_rows, save_moving): the caller's coef_, written by finalize
    # in the moving coordinates, and what they held before the call
    cdef bint keeps_moving
    cdef double[::1] coef_out
    cdef double[::1] saved          # 4 entries per moving coordinate, grown as needed
    # learn_rows's merges of the moving columns (its own, grown as needed),
    # and the estimator's coef_ it writes (keep_coef_out)
    cdef int64_t[::1] merge_parts, merge_out
    cdef double[::1] short_coef_out

    def __init__(self, *, Loss loss, str algorithm, str adaptive, double eta,
                 double theta, radius,
                 double[::1] coef, double[::1] momentum, double[::1] sum_sq_gradient,
                 double total_sq_gradient, int64_t t, double[:, ::1] score_stats,
                 double pair_weight, double ordered_weight,
                 const int64_t[::1] partner_indices, const double[::1] partner_values,
                 double partner_label, double partner_weight,
                 Py_ssize_t n_rows, Py_ssize_t max_row_nnz,
                 PairwiseWorkspace workspace not None,
                 double[::1] coef_sum=None, int64_t n_averaged=0,
                 const int64_t[::1] moving=None,
                 bint read_flat_pairs=True):
        cdef Py_ssize_t d = coef.shape[0]
        if (momentum.shape[0] != d or sum_sq_gradient.shape[0] != d
                or score_stats.shape[0] != 2 or score_stats.shape[1] != 3
                or workspace.stamp.shape[0] != d or workspace.n_stamped != 0):
            raise ValueError("The pairwise AUC state arrays do not fit one another.")
        # A pass on this workspace is running (another thread on the same
        # estimator): building this problem would carve and clear the scratch
        # that pass reads.  Its stamps said so too, but a pass without
        # momentum stamps nothing (a race test read index -1 under ASan).
        if workspace.in_use:
            raise ValueError("The pairwise AUC workspace is in use by another pass "
                             "(concurrent calls on one estimator are not supported).")
        if coef_sum is not None and coef_sum.shape[0] != d:
            raise ValueError("coef_sum needs one entry per feature")
        self.loss = loss
        self.algorithm = ALGORITHM_CODES[algorithm]
        self.coordinate = adaptive == "coordinate" and self.algorithm != OGD
        self.eta = eta
        self.theta = 0.0 if self.algorithm == OGD else theta
        self.project = radius is not None
        self.radius = float(radius) if radius is not None else 0.0
        self.coef = coef
        self.momentum = momentum
        self.sum_sq_gradient = sum_sq_gradient
        self.score_stats = score_stats
        self.workspace = workspace
        self.stamp = workspace.stamp
        self.stamped = workspace.stamped
        self.window, self.block_len, self.theta_pow, self.theta_inv_pow = (
            workspace.theta_tables(self.theta))
        self.block_slots = (self.window + self.block_len) // self.block_len + 4
        self.average = coef_sum is not None
        if self.average:
            self.coef_sum = coef_sum
        self.momentum_free = self.theta == 0.0 and not (self.project or self.average)
        # a short call's buffers, grown as needed (a memoryview attribute
        # left unset is neither None nor readable)
        self.saved = float64_array(64)
        self.merge_parts = int64_array(64)
        self.merge_out = int64_array(64)
        self.short_coef_out = None
        # read_flat_pairs=False: every pair gathers its union (the tests
        # compare the two ways)
        self.flat_from = INFINITY
        if (read_flat_pairs and isinstance(loss, Hinge) and loss.threshold > 0.0
                and not (self.project or self.average)):
            self.flat_from = loss.threshold
        if partner_values.shape[0] != partner_indices.shape[0]:
            raise ValueError("The pairwise AUC state arrays do not fit one another.")
        self.start_call(t, total_sq_gradient, pair_weight, ordered_weight,
                        first_of(partner_indices), first_float_of(partner_values),
                        partner_indices.shape[0], partner_label, partner_weight, n_rows,
                        max_row_nnz, n_averaged, moving, None)

    cdef int start_call(self, int64_t t, double total_sq_gradient, double pair_weight,
                        double ordered_weight, const int64_t* partner_indices,
                        const double* partner_values, Py_ssize_t partner_nnz,
                        double partner_label, double partner_weight, Py_ssize_t n_rows,
                        Py_ssize_t max_row_nnz, int64_t n_averaged,
                        const int64_t[::1] moving, double[::1] coef_out) except -1:
        """The state of a call from the fitted values (the arrays are the
        problem's own views, see __init__; the partner row's ``partner_nnz``
        entries are copied): what a new problem starts from, and what
        ``learn_rows`` resets a kept one to.  Checked before any of it is
        written."""
        cdef Py_ssize_t d = self.coef.shape[0], q, m, cap, table, n_floats, n_ints
        cdef double[::1] floats
        cdef int64_t[::1] ints
        cdef bint indices_in_range = True
        for q in range(partner_nnz):
            indices_in_range &= 0 <= partner_indices[q] < d
        if moving is not None:  # strictly increasing (momentum_support's order)
            for q in range(moving.shape[0]):
                indices_in_range &= 0 <= moving[q] < d and (q == 0 or moving[q - 1] < moving[q])
        if self.workspace.n_stamped != 0 or not indices_in_range:
            raise ValueError("The pairwise AUC state arrays do not fit one another.")
        if coef_out is not None and (self.project or self.average or moving is None
                                     or coef_out.shape[0] != d):
            raise ValueError("coef_out needs the moving coordinates and one entry "
                             "per feature")
        self.max_steps = n_rows
        self.max_row_nnz = max_row_nnz
        self.total_sq_gradient = total_sq_gradient
        self.t = t
        self.pair_weight = pair_weight
        self.ordered_weight = ordered_weight
        self.partner_label = partner_label
        self.partner_weight = partner_weight
        self.first_step = t + 1
        self.scale_mant = 1.0
        self.scale_exp = 0

        # The arrays of the pass, carved from the workspace's scratch and
        # initialised here: per step of the call (index s - first_step) P at
        # its start (mantissa, exponent), what a catch-up reads of its stamp
        # (F_b(s), the block's ring slot, theta^(1-(s-b))) and the B and P of
        # an expired stamp; the live blocks' F_b; per entry of a row pair
        # the partner row, its table and the union.
        cap = max(min(d, 2 * max(max_row_nnz, partner_nnz)), 1)
        m = n_rows + 1
        # the partner's table: a power of two of slots, at least four times as
        # many as the longest partner has entries
        table = 8
        while table < 4 * max(max_row_nnz, partner_nnz):
            table *= 2
        n_floats = 6 * m + self.block_slots + 3 * cap
        n_ints = 3 * m + 2 * cap + 2 * table + 2 * cap
        floats = self.workspace.floats(n_floats)
        ints = self.workspace.ints(n_ints)
        floats[:m] = 1.0
        floats[m:4 * m] = 0.0
        floats[4 * m:5 * m] = 1.0
        floats[5 * m:n_floats] = 0.0
        ints[:n_ints] = 0
        self.step_scale_mant = floats[:m]
        self.stamp_block_sum = floats[m:2 * m]
        self.stamp_theta_inv = floats[2 * m:3 * m]
        self.archived_b = floats[3 * m:4 * m]
        self.archived_scale_mant = floats[4 * m:5 * m]
        self.block_sum = floats[5 * m:5 * m + self.block_slots]
        q = 5 * m + self.block_slots
        self.partner_values = floats[q:q + cap]
        self.union_diff = floats[q + cap:q + 2 * cap]
        self.final_b = floats[q + 2 * cap:q + 2 * cap + m]
        self.union_weight = floats[q + 2 * cap + m:q + 3 * cap + m]
        self.step_scale_exp = ints[:m]
        self.stamp_block_slot = ints[m:2 * m]
        self.archived_scale_exp = ints[2 * m:3 * m]
        self.partner_indices = ints[3 * m:3 * m + cap]
        self.union_index = ints[3 * m + cap:3 * m + 2 * cap]
        q = 3 * m + 2 * cap
        self.partner_table = ints[q:q + 2 * table]
        self.partner_table[:] = -1
        self.partner_slot_of = ints[q + 2 * table:q + 2 * table + cap]
        self.partner_matched = ints[q + 2 * table + cap:q + 2 * table + 2 * cap]
        self.partner_shift = 0
        # stamp first_step opens its block with F = 0 and P = 1
        self.stamp_theta_inv[0] = self.theta_inv_pow[0]
        self.partner_nnz = partner_nnz
        for q in range(partner_nnz):
            self.partner_indices[q] = partner_indices[q]
            self.partner_values[q] = partner_values[q]
        self.recompute_norms()
        # what a step leaves for the next one: nothing yet
        self.union_nnz = 0
        self.pair_margin = self.sq_norm_diff = 0.0
        self.union_dot_old = self.union_sq_old = 0.0
        self.union_dot_new = self.union_sq_new = 0.0
        self.partner_measured = False
        self.partner_score = self.partner_scale = self.partner_sq_norm = 0.0
        self.partner_measured_nnz = 0
        self.n_flat_reads = 0
        self.moved_at = 0
        self.moved_d = 0.0
        self.moved_nonfinite = False
        self.n_averaged = n_averaged
        # without projection or averaging a weight moves only by its
        # momentum, so finalize needs only the coordinates that can have any
        self.moving = moving if not (self.project or self.average) else None
        self.moving_nonfinite = -1
        self.n_moving_support = 0
        if self.moving is not None:
            self.moving_support_array = int64_array(self.moving.shape[0])
            self.moving_support = <int64_t*> cnp.PyArray_DATA(self.moving_support_array)
        # averaging: a segment tree with a leaf per step of the call, every
        # map the identity until its step is taken
        self.n_leaves = 1
        if self.average:
            self.n_leaves = max(n_rows, 1)
            self.step_maps = np.tile(np.array([1.0, 0.0, 1.0, 0.0, 0.0]),
                                     (2 * self.n_leaves, 1))
        self.keeps_moving = False
        if coef_out is not None:
            self.save_moving(coef_out)
        return 0

    cdef void save_moving(self, double[::1] coef_out):
        """A short call (``_short_calls.PairwiseAUCPath``): keep the
        entries of the moving coordinates in the weights, the momentum, the
        accumulators and ``coef_out`` (the estimator's coef_, which finalize
        then writes there), for ``restore_moving``.  One read of each, a few
        coordinates ahead of their use: they are scattered over n_features,
        and these misses are the ones the call's later reads then hit."""
        cdef Py_ssize_t q, j, n_moving = self.moving.shape[0]
        self.keeps_moving = True
        self.coef_out = coef_out
        if self.saved.shape[0] < 4 * n_moving:
            self.saved = float64_array(max(4 * n_moving, 64))
        for q in range(n_moving):
            if q + PREFETCH_AHEAD < n_moving:
                j = self.moving[q + PREFETCH_AHEAD]
                self.prefetch(j, True)
                prefetch_line(&coef_out[j])
            j = self.moving[q]
            self.saved[4 * q] = self.coef[j]
            self.saved[4 * q + 1] = self.momentum[j]
            self.saved[4 * q + 2] = self.sum_sq_gradient[j]
            self.saved[4 * q + 3] = coef_out[j]

    cdef void put_back_moving(self) noexcept:
        """Put back what ``save_moving`` kept (after a pass that left a
        value that is not finite, or was interrupted), once."""
        cdef Py_ssize_t q, j
        if not self.keeps_moving:
            return
        for q in range(self.moving.shape[0]):
            j = self.moving[q]
            self.coef[j] = self.saved[4 * q]
            self.momentum[j] = self.saved[4 * q + 1]
            self.sum_sq_gradient[j] = self.saved[4 * q + 2]
            self.coef_out[j] = self.saved[4 * q + 3]
        self.keeps_moving = False

    def restore_moving(self):
        """Take back the pass of the last ``learn_rows`` call, unless
        ``commit`` has made it part of the fitted state (or it was taken
        back already); nothing while a pass uses the problem (another
        thread's, whose entries these are not)."""
        if not self.workspace.in_use:
            self.put_back_moving()

    def keep_coef_out(self, double[::1] coef_out not None):
        """The array (the estimator's coef_) whose entries ``learn_rows``
        writes in the columns its pass can change."""
        if coef_out.shape[0] != self.coef.shape[0]:
            raise ValueError("coef_out needs one entry per feature")
        self.short_coef_out = coef_out

    def commit(self):
        """The pass of the last ``learn_rows`` call is in the fitted state:
        ``restore_moving`` no longer takes it back."""
        self.keeps_moving = False

    # -- the lazy representation -------------------------------------------

    cdef inline double coord_step(self, Py_ssize_t j) noexcept nogil:
        """Per-coordinate factor c_j of the step (1 unless adaptive per coordinate)."""
        cdef double s
        if not self.coordinate:
            return 1.0
        s = self.sum_sq_gradient[j]
        if s <= 0.0:
            return 0.0
        if self.algorithm == AOGD_STRONGLY_CONVEX:
            return self.eta / s
        return self.eta / sqrt(s)

    cdef void recompute_norms(self) noexcept nogil:
        """The projection's running scalars from the (current) arrays; O(n_features)."""
        cdef Py_ssize_t j
        cdef double c, w, m
        self.sq_norm_coef = 0.0
        self.coef_dot_step = 0.0
        self.sq_norm_step = 0.0
        if not self.project:
            return
        for j in range(self.coef.shape[0]):
            c = self.coord_step(j)
            w = self.coef[j]
            m = self.momentum[j]
            self.sq_norm_coef += w * w
            self.coef_dot_step += c * w * m
            self.sq_norm_step += c * c * m * m

    cdef inline double scale_since(self, double mant, int64_t e) noexcept nogil:
        """P_now / P_then for P_then = mant * 2^(-SCALE_BITS e).  Without a
        projection P stays 1: the ratio is 1.0 exactly, with no ldexp."""
        if not self.project:
            return 1.0
        return ldexp(self.scale_mant / mant, -SCALE_BITS * <int>(self.scale_exp - e))

    cdef inline double live_b(self, int64_t s, double ratio) noexcept nogil:
        """B(s, k) of a live stamp s at the current step k, given P_k / P_s.

        With b the start of the block of s, F_b(k) = sum_{i=b}^{k-1}
        theta^(i-b) gamma_i rho_i ... rho_{k-1}, and B(s, k) =
        theta^(1-(s-b)) (F_b(k) - (P_k / P_s) F_b(s)).  The subtraction
        loses at most a factor theta^-(s-b) < 2^10 of relative precision.
        """
        cdef int64_t at = s - self.first_step
        return self.stamp_theta_inv[at] * (
            self.block_sum[self.stamp_block_slot[at]] - ratio * self.stamp_block_sum[at])

    cdef inline void range_sums(self, int64_t s, int64_t k, double* Q, double* C) noexcept nogil:
        """Q(s, k) and C(s, k): the composed maps of steps s .. k - 1."""
        cdef double f[STEP_MAP]
        compose_range(&self.step_maps[0, 0], self.n_leaves,
                      s - self.first_step, k - self.first_step, f)
        # applied to (p, Q, tau, B, C) = (1, 0, 1, 0, 0)
        Q[0] = f[1]
        C[0] = f[4]

    cdef inline void prefetch(self, Py_ssize_t j, bint pair) noexcept nogil:
        """Ask for coordinate j's entries a few coordinates ahead of their
        use: a shuffled pass reads them at random places of arrays of
        n_features, and so their cache misses overlap instead of queueing.
        ``pair``: also those of a step with a partner row.  A hint only.
        One epoch of AOGD (defaults) on 20 newsgroups hashed to 2**20
        columns: 266 ms without, 230 ms with (before the partner's table)."""
        prefetch_line(&self.coef[j])
        if not self.momentum_free:  # else the pass reads coef alone
            prefetch_line(&self.momentum[j])
            prefetch_line(&self.stamp[j])
        if self.coordinate or pair:  # c_j, or the step's accumulator
            prefetch_line(&self.sum_sq_gradient[j])
        if self.average:
            prefetch_line(&self.coef_sum[j])

    cdef inline void prefetch_row(self, const index_t* columns, Py_ssize_t n) noexcept nogil:
        """Ask for the entries of a whole row's ``columns`` (the next row
        of a pass over a wide state, ``columns_ahead``), those ``prefetch``
        asks for with a partner: the in-row requests of ``prefetch``, 16
        entries ahead, start too late for a wide row's misses, which then
        queue (one epoch on 20 newsgroups hashed: the loads of ``coef`` and
        of the step's accumulator were 60 % of the pass)."""
        prefetch_entries(&self.coef[0], sizeof(double), columns, n)
        prefetch_entries(&self.sum_sq_gradient[0], sizeof(double), columns, n)
        if not self.momentum_free:
            prefetch_entries(&self.momentum[0], sizeof(double), columns, n)
            prefetch_entries(&self.stamp[0], sizeof(int64_t), columns, n)
        if self.average:
            prefetch_entries(&self.coef_sum[0], sizeof(double), columns, n)

    cdef inline void catch_up(self, Py_ssize_t j, int64_t k) noexcept nogil:
        """Bring w_j to the start of step k and m_j to m_{j,k-1}; restamp at k
        (and, when averaging, add the idle iterates w_{s+1..k} to the sum).

        The case without projection and averaging (P stays 1) is written
        out here, small enough for the compiler to inline into the row
        loops: the weight weight_at reads, and the momentum's decay; it
        takes the same operations as ``catch_up_general``."""
        cdef int64_t offset = self.stamp[j]
        cdef int64_t n = k - self.first_step - offset
        cdef double m
        if n == 0:
            return
        if self.project or self.average:
            self.catch_up_general(j, k)
            return
        m = self.momentum[j]
        if m != 0.0:
            self.coef[j] = self.weight_at(j, k)
            # below double resolution past the window
            self.momentum[j] = m * self.theta_pow[n] if n <= self.window else 0.0
        self.set_stamp(j, offset, k - self.first_step)

    cdef inline double weight_at(self, Py_ssize_t j, int64_t k) noexcept nogil:
        """w_j at the start of step k in closed form, without storing it (no
        projection or averaging): what a step without a gradient reads, and
        what catch_up stores.  Without momentum (``momentum_free``) that is
        the stored weight: an idle coordinate moves by multiples of theta,
        and B is 0; reading coef alone, a pass on text reads a third of the
        state it read."""
        cdef int64_t offset, n
        cdef double m
        if self.momentum_free:
            return self.coef[j]
        offset = self.stamp[j]
        n = k - self.first_step - offset
        m = self.momentum[j]
        if n == 0 or m == 0.0:
            return self.coef[j]
        return self.coef[j] - self.coord_step(j) * m * self.stamp_b(offset, n)

    cdef inline double read_weight(self, Py_ssize_t j, int64_t k, double* scale,
                                   double* step_momentum) noexcept nogil:
        """``weight_at`` (the same operations: the same value), with
        |coef_j| + |c_j m_j B|, the size of what its rounding is relative
        to, in ``scale``, and c_j m_{j,k-1} in ``step_momentum``: at a step
        without a gradient w_j moves by gamma_k theta times that.  Written
        apart from weight_at, which went through it slower: default fits
        on w8a 62.5 -> 64.5 ms (medians of 5 alternations), 66.2 ms with
        this function's branches arranged as weight_at's.  Without momentum
        the stored weight, and no move at a step without a gradient."""
        cdef int64_t offset
        cdef int64_t n
        cdef double m
        cdef double w = self.coef[j]
        cdef double c, cmb
        if self.momentum_free:
            scale[0] = fabs(w)
            step_momentum[0] = 0.0
            return w
        offset = self.stamp[j]
        n = k - self.first_step - offset
        m = self.momentum[j]
        if m == 0.0:
            scale[0] = fabs(w)
            step_momentum[0] = 0.0
            return w
        c = self.coord_step(j)
        if n == 0:  # current: m is m_{j,k-1}
            scale[0] = fabs(w)
            step_momentum[0] = c * m
            return w
        cmb = c * m * self.stamp_b(offset, n)
        scale[0] = fabs(w) + fabs(cmb)
        step_momentum[0] = c * m * self.theta_pow[n] if n <= self.window else 0.0
        return w - cmb

    cdef inline double stamp_b(self, int64_t offset, int64_t n) noexcept nogil:
        """B of the stamp at ``offset`` (index s - first_step) after n >= 1
        steps, without projection: live, or archived past the window."""
        if n <= self.window:
            return self.live_b(self.first_step + offset, 1.0)
        return self.archived_b[offset]

    cdef void catch_up_general(self, Py_ssize_t j, int64_t k) noexcept nogil:
        """``catch_up`` in every case: the projection's scale, an expired
        stamp, the averaged sum."""
        cdef int64_t offset = self.stamp[j]
        cdef int64_t s = self.first_step + offset
        cdef int64_t n = k - s
        cdef double m, w, c, b, ratio, Q, C
        if self.average:
            self.range_sums(s, k, &Q, &C)
            self.coef_sum[j] += self.coef[j] * Q
        ratio = self.scale_since(self.step_scale_mant[offset], self.step_scale_exp[offset])
        w = self.coef[j] * ratio
        m = self.momentum[j]
        if m != 0.0:
            c = self.coord_step(j)
            if self.average:
                self.coef_sum[j] -= c * m * C
            if n <= self.window:
                b = self.live_b(s, ratio)
                m = m * self.theta_pow[n]
            else:
                b = self.archived_b[s - self.first_step] * self.scale_since(
                    self.archived_scale_mant[s - self.first_step],
                    self.archived_scale_exp[s - self.first_step])
                # theta^n < 1e-17 (1 - theta): below double resolution
                m = 0.0
            w -= c * self.momentum[j] * b
            self.momentum[j] = m
        self.coef[j] = w
        self.set_stamp(j, offset, k - self.first_step)

    cdef inline void set_stamp(self, Py_ssize_t j, int64_t old, int64_t new) noexcept nogil:
        """Stamp j at offset ``new`` (> 0); the first such stamp of the call
        lists j, so that the workspace can be cleaned in O(nnz)."""
        if old == 0:
            self.stamped[self.workspace.n_stamped] = j
            self.workspace.n_stamped += 1
        self.stamp[j] = new

    cdef int nonfinite_state(self) noexcept nogil:
        """Which of coef, momentum, sum_sq_gradient and coef_sum (0 .. 3)
        holds a NaN or an infinity at a coordinate this call changed, or -1.
        Every coordinate a call changes is stamped (and listed), and the
        others are as finite as they were: O(touched), where a read of the
        arrays would be O(n_features) per pass.  Given ``moving``, finalize
        has looked already."""
        cdef Py_ssize_t q, j
        cdef int bad
        if self.moving is not None:
            return self.moving_nonfinite
        if self.momentum_free:
            # nothing is stamped; a step said whether it wrote one, and
            # only then are the arrays read (the call fails)
            if self.moved_nonfinite:
                for j in range(self.coef.shape[0]):
                    bad = self.nonfinite_entry(j)
                    if bad >= 0:
                        return bad
            return -1
        for q in range(self.workspace.n_stamped):
            bad = self.nonfinite_entry(self.stamped[q])
            if bad >= 0:
                return bad
        return -1

    cdef inline int nonfinite_entry(self, Py_ssize_t j) noexcept nogil:
        """Which of coef, momentum, sum_sq_gradient and coef_sum (0 .. 3)
        is first NaN or infinite at coordinate j, or -1."""
        if not isfinite(self.coef[j]):
            return 0
        if not isfinite(self.momentum[j]):
            return 1
        if not isfinite(self.sum_sq_gradient[j]):
            return 2
        if self.average and not isfinite(self.coef_sum[j]):
            return 3
        return -1

    def momentum_support(self):
        """The sorted coordinates of non-zero momentum after ``finalize``
        (each is stamped: a step caught it up), or None if the call took
        no step (nothing is stamped, the momentum is unchanged).
        O(stamped); before ``release_workspace``.  Given ``moving``, which
        holds every such coordinate in increasing order, those of it (no
        sort: it took as long as a one-row call's own kernel work), which
        finalize lists as it goes."""
        cdef Py_ssize_t q, j, n = 0
        cdef int64_t[::1] out
        if self.t < self.first_step:
            return None
        if self.moving is not None:  # listed by finalize, in moving's order
            return self.moving_support_array[:self.n_moving_support]
        if self.momentum_free:  # the last step's union, if it moved
            if self.moved_at != self.t:
                return np.empty(0, dtype=np.int64)
            support = np.asarray(self.union_index)[:self.union_nnz].copy()
            support = support[np.asarray(self.momentum)[support] != 0.0]
            support.sort()
            return support
        support = np.empty(self.workspace.n_stamped, dtype=np.int64)
        out = support
        for q in range(self.workspace.n_stamped):
            j = self.stamped[q]
            if self.momentum[j] != 0.0:
                out[n] = j
                n += 1
        support = support[:n]
        support.sort()
        return support

    cdef tuple last_row(self):
        """(indices, values) of the last row a step used: copies of the
        partner's entries (the next call's first partner)."""
        cdef cnp.ndarray indices = int64_array(self.partner_nnz)
        cdef cnp.ndarray values = float64_array(self.partner_nnz)
        if self.partner_nnz > 0:
            memcpy(cnp.PyArray_DATA(indices), &self.partner_indices[0],
                   self.partner_nnz * sizeof(int64_t))
            memcpy(cnp.PyArray_DATA(values), &self.partner_values[0],
                   self.partner_nnz * sizeof(double))
        return indices, values

    cdef void release_workspace(self) noexcept nogil:
        """Zero the workspace again (after the call's last read of it)."""
        cdef Py_ssize_t q
        for q in range(self.workspace.n_stamped):
            self.stamp[self.stamped[q]] = 0
        self.workspace.n_stamped = 0
        self.workspace.in_use = False

    cdef void finalize(self) noexcept nogil:
        """Bring every coordinate to the start of the next step.  One
        whose weight and momentum are zero stays zero (every lazy term is a
        multiple of the two, and so is its part of the averaged sum), so
        only a read of the two arrays is O(n_features); without a projection
        or averaging, one of zero momentum does not move either, and is
        neither restamped nor listed (on SMS spam tf-idf, after an epoch,
        about 15,000 non-zero weights and 100-800 non-zero momenta: the
        restamped were then read three more times, by nonfinite_state,
        momentum_support and release_workspace).  Given ``moving``
        (no projection or averaging), only those coordinates are read: the
        caller vouches that every other one has zero momentum and is in no
        row of the call, so that it does not move; with ``coef_out`` (see
        ``save_moving``) their weights are written there too."""
        cdef Py_ssize_t j, q
        cdef int64_t k = self.t + 1
        cdef int64_t now = k - self.first_step
        cdef double* w = &self.coef[0]
        cdef double* mom = &self.momentum[0]
        cdef Py_ssize_t n_moving
        cdef bint write_out = self.keeps_moving
        if self.project or self.average:
            for j in range(self.coef.shape[0]):
                if w[j] != 0.0 or mom[j] != 0.0:
                    self.catch_up(j, k)
            return
        if self.momentum_free:
            self.finalize_momentum_free()
            return
        # weight_at's B depends on the stamp alone: once per stamp, here
        for q in range(now):
            self.final_b[q] = self.stamp_b(q, now - q)
        if self.moving is not None:
            # scattered over n_features: ask for the entries a few
            # coordinates ahead, so that their cache misses overlap.  The
            # loop also makes nonfinite_state's and momentum_support's reads
            # of the same entries, which were two more passes over scattered
            # memory (one-row calls on 2**24 columns, text-like rows: 433
            # -> 381 us a call, medians of 6 runs; on 2**16, within noise)
            n_moving = self.moving.shape[0]
            self.moving_nonfinite, self.n_moving_support = -1, 0
            for q in range(n_moving):
                if q + PREFETCH_AHEAD < n_moving:
                    self.prefetch(self.moving[q + PREFETCH_AHEAD], False)
                j = self.moving[q]
                if mom[j] != 0.0:
                    self.catch_up_to_end(j, now)
                if write_out:
                    self.coef_out[j] = w[j]
                if self.stamp[j] != 0 and self.moving_nonfinite < 0:  # changed by the call
                    self.moving_nonfinite = self.nonfinite_entry(j)
                if mom[j] != 0.0:
                    self.moving_support[self.n_moving_support] = j
                    self.n_moving_support += 1
            return
        for j in range(self.coef.shape[0]):
            if mom[j] != 0.0:
                self.catch_up_to_end(j, now)

    cdef void finalize_momentum_free(self) noexcept nogil:
        """``finalize`` without momentum: the weights are current; the
        momentum of the call's start lasted one step (0 if the call took
        one), and the last step's union holds its own if it moved.  Given
        ``moving``, only those coordinates are read, as finalize reads them."""
        cdef Py_ssize_t j, q, n_moving
        cdef double* mom = &self.momentum[0]
        if self.t < self.first_step:  # no step: nothing moved
            if self.moving is not None:
                self.list_moving_support()
            return
        if self.moving is None:
            for j in range(self.coef.shape[0]):
                if mom[j] != 0.0:
                    mom[j] = 0.0
        else:
            n_moving = self.moving.shape[0]
            for q in range(n_moving):
                if q + PREFETCH_AHEAD < n_moving:
                    j = self.moving[q + PREFETCH_AHEAD]
                    prefetch_line(&mom[j])
                    prefetch_line(&self.coef[j])
                j = self.moving[q]
                mom[j] = 0.0
                if self.keeps_moving:
                    self.coef_out[j] = self.coef[j]
        if self.moved_at == self.t:
            # free_step_union's momentum: theta m + (1 - theta) g, theta = 0
            for q in range(self.union_nnz):
                mom[self.union_index[q]] = (1.0 - self.theta) * (self.moved_d
                                                                 * self.union_diff[q])
        if self.moving is not None:
            self.list_moving_support()

    cdef void list_moving_support(self) noexcept nogil:
        """finalize's findings in ``moving`` without momentum (see
        nonfinite_state and momentum_support)."""
        cdef Py_ssize_t j, q
        self.moving_nonfinite, self.n_moving_support = -1, 0
        for q in range(self.moving.shape[0]):
            j = self.moving[q]
            if self.moved_nonfinite and self.moving_nonfinite < 0:
                self.moving_nonfinite = self.nonfinite_entry(j)
            if self.momentum[j] != 0.0:
                self.moving_support[self.n_moving_support] = j
                self.n_moving_support += 1

    cdef inline void catch_up_to_end(self, Py_ssize_t j, int64_t now) noexcept nogil:
        """``catch_up`` (no projection or averaging) to the call's end,
        offset ``now``, with B from finalize's table: the same operations."""
        cdef int64_t offset = self.stamp[j]
        cdef int64_t n = now - offset
        cdef double m
        if n == 0:
            return
        m = self.momentum[j]
        if m != 0.0:
            self.coef[j] = self.coef[j] - self.coord_step(j) * m * self.final_b[offset]
            self.momentum[j] = m * self.theta_pow[n] if n <= self.window else 0.0
        self.set_stamp(j, offset, now)

    # -- the steps of one sample k, in the order run_epoch takes them -------

    cdef inline Py_ssize_t partner_home(self, int64_t j) noexcept nogil:
        """The first slot of column j in the partner's table (Fibonacci
        hashing: the top bits of j times 2^64 / golden ratio)."""
        return <Py_ssize_t> ((<uint64_t> j * <uint64_t> 0x9E3779B97F4A7C15ULL)
                             >> self.partner_shift)

    cdef inline Py_ssize_t partner_position(self, int64_t j) noexcept nogil:
        """The partner's entry of column j, or -1 if it has none."""
        cdef Py_ssize_t slot = self.partner_home(j)
        cdef Py_ssize_t mask = (<Py_ssize_t> 1 << (64 - self.partner_shift)) - 1
        cdef int64_t column
        while True:
            column = self.partner_table[2 * slot]
            if column == j:
                return self.partner_table[2 * slot + 1]
            if column < 0:
                return -1
            slot = (slot + 1) & mask

    cdef inline double matched_partner_value(self, int64_t j) noexcept nogil:
        """The partner's value in column j (0 if it has none), its entry
        marked as matched by the row."""
        cdef Py_ssize_t at = self.partner_position(j)
        if at < 0:
            return 0.0
        self.partner_matched[at] = 1
        return self.partner_values[at]

    cdef inline void add_partner_rest(self, int64_t k, UnionSums* sums) noexcept nogil:
        """Add the partner's entries the row did not match to the union (the
        marks cleared for the next step)."""
        cdef Py_ssize_t q
        for q in range(self.partner_nnz):
            if self.partner_matched[q]:
                self.partner_matched[q] = 0
            else:
                self.add_to_union(self.partner_indices[q], -self.partner_values[q], k, sums)

    cdef inline double add_to_union(self, Py_ssize_t j, double diff, int64_t k,
                                    UnionSums* sums) noexcept nogil:
        """Read w_j at the start of step k, list j with its entry of D, and
        add it to <w_k, D>, ||D||^2 and the union's part of the projection's
        running scalars (in the order of the list: one pass over the union
        where there were two), in ``sums``; returns w_j.  With a projection
        or averaging j is caught up here, else only when the step has a
        gradient (update_momentum): a pair the loss is flat on moves none
        of its weights."""
        cdef double c, w, m
        if self.project or self.average:
            self.catch_up(j, k)
            w = self.coef[j]
        else:
            w = self.weight_at(j, k)
        self.union_index[sums.nnz] = j
        self.union_diff[sums.nnz] = diff
        self.union_weight[sums.nnz] = w
        sums.nnz += 1
        sums.margin += w * diff
        sums.sq_norm_diff += diff * diff
        if self.project:
            c = self.coord_step(j)
            m = self.momentum[j]
            sums.dot_old += c * w * m
            sums.sq_old += c * c * m * m
        return w

    cdef inline void keep_union(self, UnionSums* sums) noexcept nogil:
        """The union gathered in ``sums`` (see UnionSums), as the step's."""
        self.union_nnz = sums.nnz
        self.pair_margin = sums.margin
        self.sq_norm_diff = sums.sq_norm_diff
        self.union_dot_old = sums.dot_old
        self.union_sq_old = sums.sq_old

    cdef inline bint certainly_flat(self, double label, const RowMeasure* row,
                                    Py_ssize_t nnz) noexcept nogil:
        """Whether the pair of a hinge step has no gradient, read without
        its union: its margin label <w_k, a_k - a_{k-1}> is the row's score
        less the partner's carried over, and counts as at least the hinge's
        threshold only when it exceeds it by more than the rounding of
        either way of summing it can account for (FLAT_ROUNDING per term,
        of the terms' sizes).  Then gathering the union would have found
        the hinge flat too, with the same loss (0) and ranking, and
        ||a_k - a_{k-1}||^2 finite (a zero gradient): the same step.  If
        so, the margin is left as the step's, with an empty union."""
        cdef double z, bound
        if not self.partner_measured:
            return False
        z = row.score - self.partner_score
        bound = (FLAT_ROUNDING * <double> (nnz + self.partner_measured_nnz + 64)
                 * (row.scale + self.partner_scale))
        if not (label * z >= self.flat_from + bound
                and row.sq_norm + self.partner_sq_norm <= FINITE_SQ_NORMS):
            return False
        self.empty_union()
        self.pair_margin = z
        self.n_flat_reads += 1
        return True

    cdef inline void keep_partner_measures(self, double score, double scale,
                                           const RowMeasure* row,
                                           Py_ssize_t nnz) noexcept nogil:
        """The row's measures as the next step's partner's: its score at
        that step and the scale of its rounding, with the row's ||a||^2 and
        non-zeros from ``row``."""
        self.partner_score = score
        self.partner_scale = scale
        self.partner_sq_norm = row.sq_norm
        self.partner_measured_nnz = nnz
        self.partner_measured = True

    cdef inline void carry_partner_score(self, const RowMeasure* row, Py_ssize_t nnz,
                                         double gamma) noexcept nogil:
        """The next step's partner measures, of a row read by measure_row at
        a step that moved its weights lazily (no gradient): each moved by
        gamma theta c_j m_{j,k-1}."""
        self.keep_partner_measures(
            row.score - gamma * self.theta * row.momentum_dot,
            row.scale + fabs(gamma * self.theta) * row.momentum_scale, row, nnz)

    cdef inline bint has_pair(self, double label) noexcept nogil:
        """Whether a sample of ``label`` forms a pair with the partner (a
        previous sample of weight > 0 and the other label)."""
        return self.partner_weight > 0.0 and label != self.partner_label

    cdef inline double pair_gradient(self, double label, double weight,
                                     double* sum_loss, double* sum_weight) noexcept nogil:
        """The scalar d of the pair's gradient g = d * D (0 for equal labels),
        after adding the pair's loss and ranking to the sums."""
        cdef double pair_w, z = self.pair_margin
        cdef double d = 0.0
        if self.has_pair(label):
            pair_w = weight * self.partner_weight
            sum_loss[0] += pair_w * self.loss.loss(label, z)
            sum_weight[0] += pair_w
            self.pair_weight += pair_w
            if label * z > 0.0:
                self.ordered_weight += pair_w
            elif z == 0.0:
                self.ordered_weight += 0.5 * pair_w
            d = pair_w * self.loss.dloss(label, z)
        self.total_sq_gradient += d * d * self.sq_norm_diff
        return d

    cdef inline void add_score(self, double label, double weight, int64_t k,
                               double score) noexcept nogil:
        """The prequential score of sample k into the threshold's statistics,
        weighted by k so that later iterates count more."""
        cdef double step_w = weight * <double> k
        cdef Py_ssize_t cls = 1 if label > 0 else 0
        self.score_stats[cls, 0] += step_w
        self.score_stats[cls, 1] += step_w * score
        self.score_stats[cls, 2] += step_w * score * score

    cdef inline void empty_union(self) noexcept nogil:
        """An empty union, and zero sums over it, as the step's."""
        cdef UnionSums none = NO_UNION
        self.keep_union(&none)

    cdef inline void drop_union(self) noexcept nogil:
        """Leave the union's coordinates to the lazy representation (their
        stamps say they are current at this step), with their part of the
        projection's running scalars, which then all move by the closed
        forms of idle coordinates."""
        self.union_nnz = 0
        self.union_dot_old = 0.0
        self.union_sq_old = 0.0

    cdef inline double global_step(self, int64_t k) noexcept nogil:
        """gamma_k (the per-coordinate factor c_j comes on top of it)."""
        if self.algorithm == OGD:
            return self.eta / sqrt(<double> k)
        if self.coordinate:
            return 1.0
        if self.total_sq_gradient > 0.0:
            if self.algorithm == AOGD_STRONGLY_CONVEX:
                return self.eta / self.total_sq_gradient
            return self.eta / sqrt(self.total_sq_gradient)
        # the paper's "skip the step while v_k = 0"
        return 0.0

    cdef inline void update_momentum(self, double d, int64_t k) noexcept nogil:
        """Momentum and accumulators of the union coordinates (first caught
        up to step k, if add_to_union left them), with the union's new part
        of the projection's running scalars.  The other coordinates have no
        gradient: their momentum decays lazily."""
        cdef Py_ssize_t q, j
        cdef double g, m_new, c
        cdef double* w = &self.coef[0]
        cdef double* mom = &self.momentum[0]
        cdef double* ssq = &self.sum_sq_gradient[0]
        self.union_dot_new = 0.0
        self.union_sq_new = 0.0
        for q in range(self.union_nnz):
            j = self.union_index[q]
            self.catch_up(j, k)
            g = d * self.union_diff[q]
            ssq[j] += g * g
            m_new = self.theta * mom[j] + (1.0 - self.theta) * g
            mom[j] = m_new
            if self.project:
                c = self.coord_step(j)
                self.union_dot_new += c * w[j] * m_new
                self.union_sq_new += c * c * m_new * m_new

    cdef inline void step_union(self, double d, int64_t k, double gamma) noexcept nogil:
        """update_momentum and move_union in one pass over the union, without
        a projection or averaging (rho = 1: P stays 1): on each coordinate
        the same operations in the same order, so the same model bit for
        bit, with the weight ``add_to_union`` read (catch_up's) taken from
        the union rather than computed again."""
        cdef Py_ssize_t q, j
        cdef int64_t offset, n
        cdef int64_t now = k - self.first_step
        cdef double g, m
        cdef double* w = &self.coef[0]
        cdef double* mom = &self.momentum[0]
        cdef double* ssq = &self.sum_sq_gradient[0]
        for q in range(self.union_nnz):
            j = self.union_index[q]
            offset = self.stamp[j]
            n = now - offset
            m = mom[j]
            if n != 0 and m != 0.0:  # catch_up's decay
                m = m * self.theta_pow[n] if n <= self.window else 0.0
            g = d * self.union_diff[q]
            ssq[j] += g * g
            m = self.theta * m + (1.0 - self.theta) * g
            mom[j] = m
            w[j] = self.union_weight[q] - gamma * self.coord_step(j) * m
            self.set_stamp(j, offset, now + 1)

    cdef inline void free_step_union(self, double d, int64_t k, double gamma) noexcept nogil:
        """``step_union`` without momentum: each coordinate of the union
        takes the step of its gradient, m = theta m' + (1 - theta) g with
        theta = 0, the same weights; the momentum is not stored (it lasts
        the step: finalize writes the last step's) and nothing is stamped
        (a pass on text read and wrote the momentum and the stamp of every
        coordinate it moved)."""
        cdef Py_ssize_t q, j
        cdef double g, m, ssq_j, w_j
        cdef double* w = &self.coef[0]
        cdef double* ssq = &self.sum_sq_gradient[0]
        if self.union_nnz == 0:
            return
        for q in range(self.union_nnz):
            j = self.union_index[q]
            g = d * self.union_diff[q]
            ssq_j = ssq[j] + g * g
            ssq[j] = ssq_j
            m = (1.0 - self.theta) * g
            w_j = self.union_weight[q] - gamma * self.coord_step(j) * m
            w[j] = w_j
            if not (isfinite(w_j) and isfinite(ssq_j)):
                self.moved_nonfinite = True
        self.moved_at = k
        self.moved_d = d

    cdef inline double projection_factor(self, double gamma) noexcept nogil:
        """rho_k from the running scalars, with no pass over the coordinates:
        idle ones enter by closed forms (X -> theta X, Y -> theta^2 Y), the
        union by the exact parts measured before and after its update."""
        cdef double usq, rho = 1.0
        if not self.project:
            return 1.0
        self.coef_dot_step = (self.theta * (self.coef_dot_step - self.union_dot_old)
                              + self.union_dot_new)
        self.sq_norm_step = (self.theta * self.theta * (self.sq_norm_step - self.union_sq_old)
                             + self.union_sq_new)
        usq = (self.sq_norm_coef - 2.0 * gamma * self.coef_dot_step
               + gamma * gamma * self.sq_norm_step)
        if usq < 0.0:
            usq = 0.0                # round-off of the running scalars
        if usq > self.radius * self.radius:
            rho = self.radius / sqrt(usq)
        self.sq_norm_coef = rho * rho * usq
        self.coef_dot_step = rho * (self.coef_dot_step - gamma * self.sq_norm_step)
        return rho

    cdef inline void move_union(self, int64_t k, double rho, double gamma) noexcept nogil:
        """Take the step on the union coordinates and stamp them at k + 1;
        every other coordinate takes it through the scale P."""
        cdef Py_ssize_t q, j
        cdef double* w = &self.coef[0]
        self.scale_mant *= rho
        if self.scale_mant < ldexp(1.0, -SCALE_BITS):
            self.scale_mant = ldexp(self.scale_mant, SCALE_BITS)
            self.scale_exp += 1
        for q in range(self.union_nnz):
            j = self.union_index[q]
            w[j] = rho * (w[j] - gamma * self.coord_step(j) * self.momentum[j])
            if self.average:
                self.coef_sum[j] += w[j]
            self.set_stamp(j, k - self.first_step, k + 1 - self.first_step)

    cdef inline void advance_idle(self, int64_t k, double rho, double gamma) noexcept nogil:
        """The lazy catch-up's sums after step k: F_b(k + 1) for the blocks
        that live stamps can still read, the archive of the stamp whose
        momentum just fell below resolution, and stamp k + 1 opened."""
        cdef int64_t first = self.first_step
        cdef int64_t K = self.block_len
        cdef int64_t block, last_block, oldest_block, block_start, expired
        cdef Py_ssize_t slot
        if gamma != 0.0 or rho != 1.0:
            # F_b(k + 1) = rho (F_b(k) + theta^(k-b) gamma); blocks older
            # than the window are read by no live stamp
            last_block = (k - first) // K
            oldest_block = last_block - (self.window + K) // K - 1
            if oldest_block < 0:
                oldest_block = 0
            slot = oldest_block % self.block_slots  # then stepped along the ring
            for block in range(oldest_block, last_block + 1):
                block_start = first + block * K
                if k - block_start <= self.window + K:
                    self.block_sum[slot] = rho * (self.block_sum[slot]
                                                  + self.theta_pow[k - block_start] * gamma)
                slot += 1
                if slot == self.block_slots:
                    slot = 0
        expired = k - self.window
        if expired >= first:
            self.archived_b[expired - first] = self.live_b(
                expired, self.scale_since(self.step_scale_mant[expired - first],
                                          self.step_scale_exp[expired - first]))
            self.archived_scale_mant[expired - first] = self.scale_mant
            self.archived_scale_exp[expired - first] = self.scale_exp
        # the sum of a block that starts at k + 1 is still empty
        block = (k + 1 - first) // K
        slot = block % self.block_slots
        if k + 1 == first + block * K:
            self.block_sum[slot] = 0.0
        self.stamp_block_sum[k + 1 - first] = self.block_sum[slot]
        self.stamp_block_slot[k + 1 - first] = slot
        self.stamp_theta_inv[k + 1 - first] = self.theta_inv_pow[k + 1 - first - block * K]
        self.step_scale_mant[k + 1 - first] = self.scale_mant
        self.step_scale_exp[k + 1 - first] = self.scale_exp

    cdef inline void record_step_map(self, int64_t k, double rho, double gamma) noexcept nogil:
        set_step_map(&self.step_maps[0, 0], self.n_leaves, k - self.first_step,
                     rho, gamma, self.theta)
        self.n_averaged += 1


# The steps that read the row are functions rather than methods: they are
# specialised for the two floating types of the data.

cdef inline double gather_union(PairwiseAUCProblem problem, const floating* row_data,
                                const index_t* row_indices, Py_ssize_t nnz,
                                int64_t k) noexcept nogil:
    """Read the union of the supports of sample k and its partner at the
    start of step k, list it with D = a_k - a_{k-1} and measure it
    (``add_to_union``): the row's entries, then the partner's others, in
    their orders; returns <w_k, a_k>.  The partner is in its table."""
    cdef Py_ssize_t q, j
    cdef double score = 0.0
    cdef UnionSums sums = NO_UNION
    for q in range(nnz):
        if q + PREFETCH_AHEAD < nnz:
            problem.prefetch(row_indices[q + PREFETCH_AHEAD], True)
        j = row_indices[q]
        score += problem.add_to_union(j, row_data[q] - problem.matched_partner_value(j), k,
                                      &sums) * row_data[q]
    problem.add_partner_rest(k, &sums)
    problem.keep_union(&sums)
    return score


cdef inline double gather_aligned_union(PairwiseAUCProblem problem, const floating* row_data,
                                        const index_t* row_indices, Py_ssize_t nnz,
                                        const floating* partner_data, int64_t k) noexcept nogil:
    """``gather_union`` for a pair of rows of one dense pass: both hold
    every column in the same order, so the partner's entry of the row's
    q-th column is its q-th, with no table to find it in and no partner
    entry left over (the same union, in the same order).  An 11-epoch fit
    on ionosphere (34 columns): 1.8-2.0 -> 1.64 ms."""
    cdef Py_ssize_t q
    cdef double score = 0.0
    cdef UnionSums sums = NO_UNION
    for q in range(nnz):
        score += (problem.add_to_union(row_indices[q], row_data[q] - <double> partner_data[q],
                                       k, &sums) * row_data[q])
    problem.keep_union(&sums)
    return score


cdef inline double gather_row(PairwiseAUCProblem problem, const floating* row_data,
                              const index_t* row_indices, Py_ssize_t nnz,
                              int64_t k) noexcept nogil:
    """A step with no pair (equal labels, or no partner yet) has no
    gradient: read the row's coordinates at step k, for its score (brought
    up to date only with a projection or averaging), and leave the union
    empty (every coordinate then moves lazily); returns <w_k, a_k>."""
    cdef Py_ssize_t q, j
    cdef double score = 0.0
    cdef double* w = &problem.coef[0]
    problem.empty_union()
    if not (problem.project or problem.average):
        for q in range(nnz):
            if q + PREFETCH_AHEAD < nnz:
                problem.prefetch(row_indices[q + PREFETCH_AHEAD], False)
            score += problem.weight_at(row_indices[q], k) * row_data[q]
        return score
    for q in range(nnz):
        if q + PREFETCH_AHEAD < nnz:
            problem.prefetch(row_indices[q + PREFETCH_AHEAD], False)
        j = row_indices[q]
        problem.catch_up(j, k)
        score += w[j] * row_data[q]
    return score


cdef inline RowMeasure measure_row(PairwiseAUCProblem problem, const floating* row_data,
                                   const index_t* row_indices, Py_ssize_t nnz,
                                   int64_t k) noexcept nogil:
    """``gather_row``'s read of the row (the same score, the same weights,
    which are listed as the union's first entries for ``complete_union``),
    with what ``certainly_flat`` and ``carry_partner_score`` need of it."""
    cdef Py_ssize_t q, j
    cdef double a, w, scale, step_momentum
    cdef RowMeasure row = NO_MEASURE
    for q in range(nnz):
        if q + PREFETCH_AHEAD < nnz:
            problem.prefetch(row_indices[q + PREFETCH_AHEAD], False)
        j = row_indices[q]
        a = row_data[q]
        w = problem.read_weight(j, k, &scale, &step_momentum)
        problem.union_index[q] = j
        problem.union_weight[q] = w
        row.score += w * a
        row.scale += scale * fabs(a)
        row.momentum_dot += step_momentum * a
        row.momentum_scale += fabs(step_momentum * a)
        row.sq_norm += a * a
    return row


cdef inline void complete_union(PairwiseAUCProblem problem, const floating* row_data,
                                Py_ssize_t nnz, int64_t k) noexcept nogil:
    """``gather_union`` after ``measure_row``: the row's weights are read,
    the partner (in its table) is added: the same union, with the same sums
    in the same order."""
    cdef Py_ssize_t q
    cdef double diff
    cdef UnionSums sums = NO_UNION
    for q in range(nnz):
        diff = row_data[q] - problem.matched_partner_value(problem.union_index[q])
        problem.union_diff[q] = diff
        sums.margin += problem.union_weight[q] * diff
        sums.sq_norm_diff += diff * diff
    sums.nnz = nnz
    problem.add_partner_rest(k, &sums)
    problem.keep_union(&sums)


cdef inline void complete_aligned_union(PairwiseAUCProblem problem, const floating* row_data,
                                        Py_ssize_t nnz,
                                        const floating* partner_data) noexcept nogil:
    """``gather_aligned_union`` after ``measure_row``."""
    cdef Py_ssize_t q
    cdef double diff
    cdef UnionSums sums = NO_UNION
    for q in range(nnz):
        diff = row_data[q] - <double> partner_data[q]
        problem.union_diff[q] = diff
        sums.margin += problem.union_weight[q] * diff
        sums.sq_norm_diff += diff * diff
    sums.nnz = nnz
    problem.keep_union(&sums)


cdef inline void measure_moved_row(PairwiseAUCProblem problem, const floating* row_data,
                                   Py_ssize_t nnz, const RowMeasure* row) noexcept nogil:
    """The next step's partner measures, of a row whose weights a step
    with a gradient moved (the union's first entries, current at the next
    step): read where they are."""
    cdef Py_ssize_t q
    cdef double w, score = 0.0, scale = 0.0
    for q in range(nnz):
        w = problem.coef[problem.union_index[q]]
        score += w * row_data[q]
        scale += fabs(w * row_data[q])
    problem.keep_partner_measures(score, scale, row, nnz)


cdef inline double averaged_score(PairwiseAUCProblem problem, const floating* row_data,
                                  const index_t* row_indices, Py_ssize_t nnz) noexcept nogil:
    """The row's score under the averaged model, the one decision_function uses."""
    cdef Py_ssize_t q
    cdef double score = 0.0
    for q in range(nnz):
        score += problem.coef_sum[row_indices[q]] * row_data[q]
    return score / <double> problem.n_averaged


cdef inline void keep_partner(PairwiseAUCProblem problem, const floating* row_data,
                              const index_t* row_indices, Py_ssize_t nnz) noexcept nogil:
    """Copy a row into the partner buffers (indices and values)."""
    cdef Py_ssize_t q
    for q in range(nnz):
        problem.partner_indices[q] = row_indices[q]
        problem.partner_values[q] = row_data[q]
    problem.partner_nnz = nnz


cdef inline void fill_partner_table(PairwiseAUCProblem problem) noexcept nogil:
    """Put the partner's columns in its table, sized for this partner."""
    cdef Py_ssize_t q, slot, mask
    cdef int bits = 3
    while (<Py_ssize_t> 1 << bits) < 4 * problem.partner_nnz:
        bits += 1
    problem.partner_shift = 64 - bits
    mask = (<Py_ssize_t> 1 << bits) - 1
    for q in range(problem.partner_nnz):
        slot = problem.partner_home(problem.partner_indices[q])
        while problem.partner_table[2 * slot] >= 0:
            slot = (slot + 1) & mask
        problem.partner_table[2 * slot] = problem.partner_indices[q]
        problem.partner_table[2 * slot + 1] = q
        problem.partner_slot_of[q] = slot


cdef inline void empty_partner_table(PairwiseAUCProblem problem) noexcept nogil:
    """Empty the slots the partner took (the rest of the table is empty)."""
    cdef Py_ssize_t q
    for q in range(problem.partner_nnz):
        problem.partner_table[2 * problem.partner_slot_of[q]] = -1


cdef int claim_workspace(PairwiseWorkspace workspace) except -1:
    """Mark the workspace in use by a pass (with the GIL held, so that no
    other pass can take it too), or raise if one is using it."""
    if workspace.in_use:
        raise ValueError("The pairwise AUC workspace is in use by another pass "
                         "(concurrent calls on one estimator are not supported).")
    workspace.in_use = True
    return 0


cdef Py_ssize_t pass_rows(PairwiseAUCProblem problem,
                          const floating[::1] X_data,
                          const index_t[::1] X_indices,
                          const index_t[::1] X_indptr,
                          bint is_dense,
                          Py_ssize_t n_features,
                          const double[::1] y,
                          const double[::1] sample_weight,
                          const int64_t[::1] order,
                          bint claimed,
                          double* sums) except -2:
    """The steps of one pass over ``X[order]`` and the problem's finalize:
    ``run_epoch`` without its results.  Adds the pairs' weighted loss and
    weight to ``sums[0]`` and ``sums[1]``; returns the last row used (-1:
    none).  ``claimed``: the caller has claimed the workspace already."""
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     problem.coef.shape[0], y.shape[0], sample_weight, order)
    # the call's workspaces were sized for at most max_steps rows of at most
    # max_row_nnz non-zeros, and at most n_features of them (a longer row
    # repeats a column: duplicates must have been summed)
    cdef Py_ssize_t longest = longest_row(X_indptr, is_dense, n_features, y.shape[0])
    if (order.shape[0] > problem.max_steps or longest > problem.max_row_nnz
            or longest > n_features):
        raise ValueError("The rows exceed the capacity the problem was built for.")

    cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense, n_features, order)
    cdef const floating* row_data
    cdef const index_t* row_indices
    # on a wide state, each row asks for the next row's entries
    cdef bint prefetch = n_features > 0 and asks_for_state_ahead(is_dense, n_features,
                                                                 sizeof(double))
    cdef const index_t* next_indices = NULL
    cdef Py_ssize_t next_nnz
    # the partner when it is a row of this pass (partner_nnz >= 0); else it
    # is in the problem's partner buffers
    cdef const floating* partner_data = NULL
    cdef const index_t* partner_indices = NULL
    cdef Py_ssize_t partner_nnz = -1
    cdef Py_ssize_t s, i, nnz, last_row = -1
    cdef int64_t k
    cdef double sw, label, d, gamma, rho
    cdef double score = 0.0
    cdef bint measured
    cdef RowMeasure row

    # taken with the GIL held, so that no other pass can take it too
    if not claimed:
        claim_workspace(problem.workspace)
    with nogil:
        # the workspace is written only from here on, where nothing can fail
        for s in range(rows.n_steps):
            nnz = step_row(&rows, s, &i, &row_data, &row_indices)
            if prefetch:
                next_nnz = columns_ahead(&rows, s, &next_indices)
                problem.prefetch_row(next_indices, next_nnz)
            sw = sample_weight[i]
            if sw == 0.0:
                continue
            label = y[i]
            k = problem.t + 1

            # a hinge step that is a pair, or whose row is likely the next
            # pair's partner (the next row has the other label), measures
            # its row: see certainly_flat
            measured = problem.flat_from < INFINITY and (
                problem.has_pair(label)
                or (s + 1 < rows.n_steps and y[order[s + 1]] != label))
            if measured:
                row = measure_row(problem, row_data, row_indices, nnz, k)
                score = row.score
            if not problem.has_pair(label):
                if measured:
                    problem.empty_union()
                else:
                    score = gather_row(problem, row_data, row_indices, nnz, k)
            elif measured and problem.certainly_flat(label, &row, nnz):
                pass  # no union to gather
            elif rows.is_dense and partner_nnz >= 0:
                # the partner is the pass's previous row, dense as this one
                if measured:
                    complete_aligned_union(problem, row_data, nnz, partner_data)
                else:
                    score = gather_aligned_union(problem, row_data, row_indices, nnz,
                                                 partner_data, k)
            else:
                if partner_nnz >= 0:
                    keep_partner(problem, partner_data, partner_indices, partner_nnz)
                    partner_nnz = -1
                fill_partner_table(problem)
                if measured:
                    complete_union(problem, row_data, nnz, k)
                else:
                    score = gather_union(problem, row_data, row_indices, nnz, k)
                empty_partner_table(problem)
            d = problem.pair_gradient(label, sw, &sums[0], &sums[1])
            if d == 0.0:
                # no gradient (equal labels, or a pair the loss is flat on):
                # the union's momentum only decays and its weights move,
                # which the lazy representation does for it
                problem.drop_union()
            if problem.average and problem.n_averaged > 0:
                score = averaged_score(problem, row_data, row_indices, nnz)
            problem.add_score(label, sw, k, score)

            gamma = problem.global_step(k)
            if problem.project or problem.average:
                problem.update_momentum(d, k)
                rho = problem.projection_factor(gamma)
                problem.move_union(k, rho, gamma)
            elif problem.momentum_free:
                rho = 1.0
                problem.free_step_union(d, k, gamma)
            else:
                rho = 1.0
                problem.step_union(d, k, gamma)
            if not problem.momentum_free:  # no idle coordinate moves
                problem.advance_idle(k, rho, gamma)
            if problem.average:
                problem.record_step_map(k, rho, gamma)
            if not measured:
                problem.partner_measured = False
            elif d == 0.0:
                problem.carry_partner_score(&row, nnz, gamma)
            else:
                measure_moved_row(problem, row_data, nnz, &row)

            # the row is the next step's partner; it is copied only if a
            # step needs it (a pair with different labels, or the pass's end)
            partner_data, partner_indices, partner_nnz = row_data, row_indices, nnz
            problem.partner_label = label
            problem.partner_weight = sw
            last_row = i
            problem.t = k

        if partner_nnz >= 0:
            keep_partner(problem, partner_data, partner_indices, partner_nnz)
        problem.finalize()
    return last_row


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
    pairs with different labels, each loss measured before its step, the
    (indices, values) of the last row used (None if no row had weight),
    ``nonfinite_state()``: which state array the pass left with a NaN or an
    infinity (-1: none), and ``momentum_support()``: the sorted columns of
    non-zero momentum (None: the pass took no step).
    """
    cdef double sums[2]
    sums[0] = sums[1] = 0.0
    cdef Py_ssize_t last_row = pass_rows(problem, X_data, X_indices, X_indptr, is_dense,
                                         n_features, y, sample_weight, order, False, sums)
    last = None
    if last_row >= 0:
        last = problem.last_row()
    nonfinite = problem.nonfinite_state()
    support = problem.momentum_support()
    problem.release_workspace()
    return sums[0], sums[1], last, nonfinite, support


cdef double lda_threshold(const double[:, ::1] score_stats) noexcept nogil:
    """The score threshold between the classes of the weighted score
    statistics ``[[w, sum s, sum s^2] of the negatives, of the positives]``
    (see ``PairwiseAUCClassifier``'s Notes): 0 while a class has no weight."""
    cdef double w_neg = score_stats[0, 0], s_neg = score_stats[0, 1]
    cdef double q_neg = score_stats[0, 2], w_pos = score_stats[1, 0]
    cdef double s_pos = score_stats[1, 1], q_pos = score_stats[1, 2]
    cdef double mu_neg, mu_pos, var, tau
    if w_neg <= 0.0 or w_pos <= 0.0:
        return 0.0
    mu_neg = s_neg / w_neg
    mu_pos = s_pos / w_pos
    var = (q_neg - w_neg * (mu_neg * mu_neg)) + (q_pos - w_pos * (mu_pos * mu_pos))
    if 0.0 > var:  # not fmax: a NaN stays NaN (and fails the finite checks)
        var = 0.0
    var /= w_neg + w_pos
    tau = 0.5 * (mu_neg + mu_pos)
    if mu_pos > mu_neg:
        tau += var * log(w_neg / w_pos) / (mu_pos - mu_neg)
    elif w_neg != w_pos:
        # the scores do not order the classes: no threshold separates them,
        # so lean towards the (weighted) majority class
        tau += (3.0 if w_neg > w_pos else -3.0) * sqrt(var)
    return tau


def score_threshold(const double[:, ::1] score_stats):
    """``lda_threshold`` of a (2, 3) array of score statistics."""
    if score_stats.shape[0] != 2 or score_stats.shape[1] != 3:
        raise ValueError("score statistics are a (2, 3) array")
    return lda_threshold(score_stats)


cdef const double* score_stats_values(object score_stats) except NULL:
    """The six values of a (2, 3) float64 array read in place, else
    ValueError."""
    cdef cnp.ndarray a
    if cnp.PyArray_Check(score_stats):
        a = score_stats
        if (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISCARRAY_RO(a)
                and cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_NDIM(a) == 2
                and cnp.PyArray_DIM(a, 0) == 2 and cnp.PyArray_DIM(a, 1) == 3):
            return <const double*> cnp.PyArray_DATA(a)
    raise ValueError("expected a contiguous (2, 3) float64 array of score statistics.")


cdef bint increasing(const int64_t* columns, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t q
    for q in range(1, n):
        if columns[q] <= columns[q - 1]:
            return False
    return True


def learn_rows(PairwiseAUCProblem problem,
               const floating[::1] X_data,
               const index_t[::1] X_indices,
               const index_t[::1] X_indptr,
               bint is_dense,
               Py_ssize_t n_features,
               const double[::1] y,
               const double[::1] sample_weight,
               const int64_t[::1] order,
               double largest_factor,
               double limit,
               int64_t t,
               double total_sq_gradient,
               double pair_weight,
               double ordered_weight,
               partner_indices,
               partner_values,
               double partner_label,
               double partner_weight,
               score_stats,
               momentum_support,
               bint fit_intercept):
    """A short call's pass (``_short_calls.PairwiseAUCPath``) on a problem
    kept between calls: ``run_epoch`` over ``X[order]`` from the fitted
    values (t, the accumulated squared gradients, the pair weights, the
    partner, the score statistics), without momentum outside
    ``momentum_support`` (the sorted columns the last call listed), with
    the weights of the columns the pass can change written to the
    problem's ``keep_coef_out`` array.  The fitted arrays are read in place
    (``_dataset.vector_length``: contiguous, of their types, else
    ValueError, before anything changes).

    Returns ``(sum of pair losses, their weight, t, pair_weight,
    ordered_weight, partner_label, partner_weight, (indices, values) of the
    last row or None, score_stats, total_sq_gradient, intercept,
    momentum_support)``: the three arrays after the last row are views of
    one new array (the new fitted arrays of those names), the last the
    columns of non-zero momentum after the pass.  Returns None, with the
    state as it was, for rows that are not plain or could overflow the
    state (``_dataset.learnable_rows``) and when the pass leaves a value
    that is not finite (the general path then names the fault).  Raises,
    changing nothing, if another pass uses the problem or the fitted arrays
    are not as described.  Until the problem's ``commit``, its
    ``restore_moving`` takes the pass back.
    """
    cdef PairwiseWorkspace workspace = problem.workspace
    cdef Py_ssize_t n_rows = order.shape[0], n_between, n_moving, last, q, nnz, size
    cdef Py_ssize_t n_partner_row = vector_length(partner_indices, cnp.NPY_INT64)
    cdef Py_ssize_t n_partner = n_partner_row
    cdef Py_ssize_t n_support = vector_length(momentum_support, cnp.NPY_INT64)
    cdef const int64_t* partner = <const int64_t*> cnp.PyArray_DATA(partner_indices)
    cdef const int64_t* support = <const int64_t*> cnp.PyArray_DATA(momentum_support)
    cdef const double* values = float64_values(partner_values, n_partner, False)
    cdef const double* stats_before = score_stats_values(score_stats)
    cdef double sums[2]
    cdef const int64_t[::1] columns, sorted_partner
    cdef int64_t[::1] parts, moving
    cdef double intercept
    cdef bint finite
    if problem.short_coef_out is None:
        raise ValueError("learn_rows needs the problem's keep_coef_out array.")
    sums[0] = sums[1] = 0.0
    # before anything is read or written: a pass of another thread reads
    # the problem's scalars and scratch
    claim_workspace(workspace)
    problem.keeps_moving = False  # nothing of this call to put back yet
    try:
        if not learnable_rows(X_data, X_indices, X_indptr, is_dense, n_features, n_rows,
                              largest_factor, limit):
            workspace.in_use = False
            return None
        # the columns the pass can change (see the estimator's
        # _changeable_columns): those of non-zero momentum, the partner's and
        # the rows', merged in O(nnz); all of them for dense rows
        if is_dense:
            moving = np.arange(n_features, dtype=np.int64)
        else:
            if not increasing(support, n_support):
                raise ValueError("The pairwise AUC state arrays do not fit one another.")
            if not increasing(partner, n_partner):
                sorted_partner = np.unique(partner_indices)
                partner = first_of(sorted_partner)
                n_partner = sorted_partner.shape[0]
            nnz = X_indptr[n_rows]
            if n_rows > 1:
                columns = touched_columns(np.asarray(X_indices)[:nnz], n_features)
                nnz = columns.shape[0]
            size = n_support + n_partner + nnz + 1
            if problem.merge_out.shape[0] < size:
                problem.merge_parts = int64_array(2 * size)
                problem.merge_out = int64_array(2 * size)
            parts = problem.merge_parts
            n_between = merge_sorted(support, n_support, partner, n_partner, &parts[0])
            if n_rows == 1:  # a plain row's columns: strictly increasing already
                for q in range(nnz):
                    parts[n_between + q] = X_indices[q]
            else:
                parts[n_between:n_between + nnz] = columns
            n_moving = merge_sorted(&parts[0], n_between, &parts[n_between], nnz,
                                    &problem.merge_out[0])
            moving = problem.merge_out[:n_moving]
        for q in range(6):
            problem.score_stats[q // 3, q % 3] = stats_before[q]
        problem.start_call(t, total_sq_gradient, pair_weight, ordered_weight,
                           <const int64_t*> cnp.PyArray_DATA(partner_indices), values,
                           n_partner_row, partner_label,
                           partner_weight, n_rows,
                           longest_row(X_indptr, is_dense, n_features, n_rows), 0, moving,
                           problem.short_coef_out)
        last = pass_rows(problem, X_data, X_indices, X_indptr, is_dense, n_features, y,
                         sample_weight, order, True, sums)
        intercept = -lda_threshold(problem.score_stats) if fit_intercept else 0.0
        finite = (problem.nonfinite_state() < 0 and isfinite(problem.total_sq_gradient)
                  and isfinite(intercept))
        for q in range(6):
            finite &= isfinite(problem.score_stats[q // 3, q % 3])
        if not finite:
            problem.put_back_moving()
            problem.release_workspace()
            return None
        # the fitted arrays of the result: new ones, as a general call makes
        after = float64_array(8)
        memcpy(cnp.PyArray_DATA(after), &problem.score_stats[0, 0], 6 * sizeof(double))
        (<double*> cnp.PyArray_DATA(after))[6] = problem.total_sq_gradient
        (<double*> cnp.PyArray_DATA(after))[7] = intercept
        result = (sums[0], sums[1], problem.t, problem.pair_weight, problem.ordered_weight,
                  problem.partner_label, problem.partner_weight,
                  problem.last_row() if last >= 0 else None, after[:6].reshape(2, 3),
                  after[6:7], after[7:8], problem.momentum_support())
    except BaseException:
        # e.g. no memory for an array: the state as it was
        problem.put_back_moving()
        problem.release_workspace()
        raise
    problem.release_workspace()
    return result
