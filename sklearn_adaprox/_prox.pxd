# Exact proximal solvers with a diagonal metric, shared by the AdaGrad
# kernels whose penalty couples the coordinates (Duchi, Hazan & Singer 2011,
# "Adaptive Subgradient Methods for Online Learning and Stochastic
# Optimization", JMLR 12, section 5 and Figure 3).
#
# Every array is a C pointer of length n.  D_i >= 0; a coordinate with
# D_i == 0 is treated as absent (x_i = 0): in the kernels it is a weight that
# has never had a gradient (delta == 0), whose v_i is then 0 as well.
# "Exact" means to round-off: thresholds found by (partial) sorting, roots by
# Newton steps that stop when theta no longer moves; no fixed iteration
# counts.  ``work`` is a caller-allocated buffer of ``prox_work_size(n)``
# doubles; nothing here allocates.

# Number of doubles the ``work`` buffer of the solvers below must hold.
cdef Py_ssize_t prox_work_size(Py_ssize_t n) noexcept nogil

# z = argmin 0.5 ||z - q||^2  s.t.  sum_i a_i |z_i| <= c   (a_i > 0, c >= 0).
# z = q when q is feasible; otherwise z_i = sign(q_i) max(|q_i| - theta a_i, 0)
# with the threshold theta of the paper's Figure 3.  O(n + k log n) for k
# coordinates left nonzero.  (An a_i == 0 is an unconstrained coordinate:
# z_i = q_i.)
cdef void weighted_l1_projection(const double* q, const double* a, Py_ssize_t n,
                                 double c, double* z, double* work) noexcept nogil

# x = argmin <v, x> + 0.5 <x, diag(D) x> + lam ||x||_2.
# x = 0 if ||v||_2 <= lam, else x_i = -theta v_i / (1 + theta D_i) with
# theta > 0 the root of sum_i v_i^2 / (1 + theta D_i)^2 = lam^2.
cdef void group_l2_prox(const double* v, const double* D, Py_ssize_t n,
                        double lam, double* x) noexcept nogil

# x = argmin <v, x> + 0.5 <x, diag(D) x> + lam ||x||_inf.
# x_i = -sign(v_i) min(|v_i| / D_i, theta): the unpenalised minimiser clipped
# at theta = ||x||_inf (x = 0 when ||v||_1 <= lam).  ``x`` must not alias ``v``
# or ``D``.
cdef void linf_prox(const double* v, const double* D, Py_ssize_t n, double lam,
                    double* x, double* work) noexcept nogil

# x = argmin <v, x> + 0.5 <x, diag(D) x>  s.t.  ||x||_1 <= radius.
# x_i = -sign(v_i) max(|v_i| - theta, 0) / D_i with theta >= 0 the multiplier
# of the constraint (0 when -v / D is feasible).  ``x`` must not alias ``v``
# or ``D``.
cdef void l1_ball_solve(const double* v, const double* D, Py_ssize_t n,
                        double radius, double* x, double* work) noexcept nogil
