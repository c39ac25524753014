# Segment tree of the step maps of the pairwise AUC kernel (iterate averaging).
#
# Step i of a call acts on the state (p, Q, tau, B, C) of an idle coordinate
# (see the docstring of _pairwise_auc_fast) by a linear map with five
# non-negative coefficients (a, b, th, u, w):
#
#     p' = a p,  Q' = Q + b p,  tau' = th tau,
#     B' = a B + u tau,  C' = C + b B + w tau.
#
# The coefficient of B in C' obeys the same recurrence as b, from the same
# leaves, so it is b and needs no slot of its own.  A range of steps is the
# composition of their maps: composing only adds and multiplies non-negative
# numbers, so the range sums never cancel, unlike differences of running sums
# once the projection has shrunk the scale by many orders of magnitude.
#
# The tree is stored bottom up in a C-contiguous (2 * n_leaves, STEP_MAP)
# array: node 1 is the root, the children of node n are 2n and 2n + 1, and
# leaf i is node n_leaves + i.  Any n_leaves works; a query keeps the order of
# the maps, which do not commute.

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


cdef inline void set_step_map(double* tree, Py_ssize_t n_leaves, Py_ssize_t leaf,
                              double rho, double gamma, double theta) noexcept nogil:
    """The map of a step with projection factor ``rho`` and global step
    ``gamma`` at ``leaf``, then its ancestors again: O(log n_leaves)."""
    cdef Py_ssize_t node = n_leaves + leaf
    cdef double* f = tree + STEP_MAP * node
    f[0] = rho
    f[1] = rho
    f[2] = theta
    f[3] = rho * gamma * theta
    f[4] = rho * gamma * theta
    node //= 2
    while node >= 1:
        compose(tree + STEP_MAP * (2 * node), tree + STEP_MAP * (2 * node + 1),
                tree + STEP_MAP * node)
        node //= 2


cdef inline void compose_range(const double* tree, Py_ssize_t n_leaves,
                               Py_ssize_t first, Py_ssize_t stop,
                               double* out) noexcept nogil:
    """``out`` = the composition of the maps of leaves ``first .. stop - 1``."""
    cdef double left[STEP_MAP]
    cdef double right[STEP_MAP]
    cdef double tmp[STEP_MAP]
    cdef Py_ssize_t lo = n_leaves + first
    cdef Py_ssize_t hi = n_leaves + stop
    cdef int q
    set_identity(left)
    set_identity(right)
    # Nodes taken at the low end go after ``left`` and nodes taken at the
    # high end before ``right``: the maps do not commute, so order matters.
    while lo < hi:
        if lo & 1:
            compose(left, tree + STEP_MAP * lo, tmp)
            for q in range(STEP_MAP):
                left[q] = tmp[q]
            lo += 1
        if hi & 1:
            hi -= 1
            compose(tree + STEP_MAP * hi, right, tmp)
            for q in range(STEP_MAP):
                right[q] = tmp[q]
        lo //= 2
        hi //= 2
    compose(left, right, out)
