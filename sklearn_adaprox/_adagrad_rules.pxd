# The closed forms of the AdaGrad update rules (Duchi, Hazan & Singer 2011;
# FTRL-Proximal: McMahan et al. 2013), shared by every AdaGrad kernel
# (_adagrad_fast, _adagrad_coupled_fast, _adagrad_multinomial_fast,
# _adagrad_full_fast).  All inline: the kernels' inner loops call them.
#
# Per coordinate the state is ``u`` (the sum of the gradients; McMahan's
# shifted sum ``z`` for FTRL-Proximal) and ``root = sqrt(ssq)``, the root of
# the sum of the squared gradients; ``H = delta + root``.  With ``t`` steps
# done:
#
# * dual averaging: ``w = -sign(u) eta max(|u| - l1 t, 0) / (H + eta l2 t)``;
# * mirror descent: one step is ``z = w - eta g / H`` then
#   ``w = sign(z) max(|z| - eta l1 / H, 0) / (1 + eta l2 / H)``; k steps
#   without a gradient (H fixed) have the closed form of ``md_idle_steps``;
# * FTRL-Proximal: ``w = 0`` if ``|z| <= l1`` else
#   ``-(z - sign(z) l1) / (H / eta + l2)``.
#
# The intercept is a coordinate of feature 1 with its own sums, never
# penalised (``intercept_step``, ``da_intercept``).
from libc.math cimport copysign, fabs, sqrt


cdef extern from "_simd.h" nogil:
    # log1p, e^y and 1 - e^y in arithmetic that _simd.h's four-lane
    # catch-up of mirror descent repeats bit for bit (md_idle_row_avx)
    double adaprox_log1p(double x)
    void adaprox_exp_pair(double y, double* exp_y, double* one_minus)

# Codes of the ``update`` parameter inside the kernels.
cdef enum:
    DUAL_AVERAGING = 0
    MIRROR_DESCENT = 1
    FTRL_PROXIMAL = 2


cdef struct Hyper:
    int update
    double eta
    double inv_eta  # 1 / eta: FTRL-Proximal's sigma multiplies by it (no division a weight)
    double delta
    double l1
    double l2
    double l1_per_l2  # l1 / l2 (0 without l2): mirror descent's catch-up
    # False: the non-adaptive baseline H = (delta + sqrt(t)) I of the paper's
    # comparisons (Xiao's RDA with beta_t = sqrt(t) / eta), dual averaging only
    bint adaptive


cdef inline int update_code(str update) except -1:
    """The code of an update rule's name (ValueError for an unknown one: the
    kernels branch on the code)."""
    if update == "dual_averaging":
        return DUAL_AVERAGING
    if update == "mirror_descent":
        return MIRROR_DESCENT
    if update == "ftrl_proximal":
        return FTRL_PROXIMAL
    raise ValueError(f"Unknown update {update!r}; expected 'dual_averaging', "
                     "'mirror_descent' or 'ftrl_proximal'.")


cdef inline Hyper make_hyper(str update, double eta, double delta, double l1, double l2,
                             bint adaptive) except *:
    """The rule's constants; ``adaptive`` is read by dual averaging only (the
    estimator refuses it with the other rules)."""
    cdef Hyper h
    h.update = update_code(update)
    h.eta, h.delta, h.l1, h.l2, h.adaptive = eta, delta, l1, l2, adaptive
    h.inv_eta = 1.0 / eta
    h.l1_per_l2 = l1 / l2 if l2 != 0.0 else 0.0
    return h


cdef inline double da_root(double root, double t, Hyper h) noexcept nogil:
    """The root in H = delta + root: AdaGrad's sqrt(ssq), or sqrt(t)."""
    return root if h.adaptive else sqrt(t)


cdef inline double da_intercept(double u_b, double root_b, double t,
                                Hyper h) noexcept nogil:
    """Dual-averaging intercept (never penalised) after t steps."""
    if u_b == 0.0:
        return 0.0
    return -h.eta * u_b / (h.delta + da_root(root_b, t, h))


cdef inline double intercept_step(double b, double* u_b, double* ssq_b, double d,
                                  double t, Hyper h) noexcept nogil:
    """Step t on the intercept, a never penalised coordinate of feature 1,
    for the gradient d != 0: update its sums, return its new value."""
    cdef double sigma
    if h.update == FTRL_PROXIMAL:
        sigma = (sqrt(ssq_b[0] + d * d) - sqrt(ssq_b[0])) / h.eta
        u_b[0] += d - sigma * b
    else:
        u_b[0] += d
    ssq_b[0] += d * d
    if h.update == MIRROR_DESCENT:
        return b - h.eta * d / (h.delta + sqrt(ssq_b[0]))
    if h.update == FTRL_PROXIMAL:
        return -h.eta * u_b[0] / (h.delta + sqrt(ssq_b[0]))
    return da_intercept(u_b[0], sqrt(ssq_b[0]), t, h)


cdef inline double da_weight(double u, double root, double t, Hyper h) noexcept nogil:
    """Dual-averaging weight from the running sums after t steps."""
    cdef double excess
    if u == 0.0:
        return 0.0
    excess = fabs(u) - h.l1 * t
    if excess <= 0.0:
        return 0.0
    # u != 0 implies root > 0, so the denominator is positive.
    return -copysign(h.eta * excess / (h.delta + root + h.eta * h.l2 * t), u)


cdef inline double ftrl_weight(double z, double root, double t, Hyper h) noexcept nogil:
    """FTRL-Proximal weight after t steps; exactly zero while |z| <= l1 t.

    The penalty of every step so far counts once (``t * alpha * penalty``,
    the average-loss strength ``alpha`` of the other updates), as in
    McMahan's (2011) composite-objective FTRL-Proximal.  Written with one
    division, ``-eta (z - sign(z) l1 t) / (H + eta l2 t)``, the paper's
    ``-(z - sign(z) l1 t) / (H / eta + l2 t)`` times eta / eta: the pass
    computes one of these a non-zero."""
    cdef double threshold = h.l1 * t
    if fabs(z) <= threshold:
        return 0.0
    return -(h.eta * (z - copysign(threshold, z))) / (h.delta + root + h.eta * h.l2 * t)


cdef inline double ftrl_z_step(double g, double root, double new_root, double w,
                               Hyper h) noexcept nogil:
    """Change of McMahan's z for the gradient g: g - sigma w with
    sigma = (new_root - root) / eta, new_root = sqrt(root^2 + g^2)."""
    return g - (new_root - root) * h.inv_eta * w


cdef inline double md_prox(double z, double H, Hyper h) noexcept nogil:
    """Composite step: argmin_w eta*(l1|w| + l2/2 w^2) + H/2 (w - z)^2."""
    cdef double mag = fabs(z) - h.eta * h.l1 / H
    if mag <= 0.0:
        return 0.0
    return copysign(mag / (1.0 + h.eta * h.l2 / H), z)


cdef inline double md_idle_steps(double w, double root, double k, Hyper h) noexcept nogil:
    """Mirror-descent weight after k steps in which its gradient was zero.

    H stays fixed, so each step maps |w| to max(|w| - a, 0) / c with
    a = eta l1 / H and c = 1 + r, r = eta l2 / H.  Unrolled:
    |w_k| = max(|w| c^-k - a (1 - c^-k) / r, 0)   (a k when r = 0),
    and a weight that reaches zero stays there.  a / r is l1 / l2 whatever
    H: the shrinkage of the l1 part costs no division.  k is a whole number
    held as a double (exact below 2**53), as the four-lane loop reads it;
    under a penalty, one that is not a number (a damaged state) sends the
    weight to 0, as that loop does.
    """
    cdef double H, r, decay, one_minus, total_shrink, mag
    if k <= 0 or w == 0.0:
        return w
    H = h.delta + root
    if H == 0.0 or (h.l1 == 0.0 and h.l2 == 0.0):  # no penalty: nothing shrinks
        return w
    r = h.eta * h.l2 / H
    if r > 0.0:
        # c^-k = e^(-k log1p(r)) and 1 - c^-k (without cancellation) from
        # one reduction, as the four-lane loop computes them
        adaprox_exp_pair(-k * adaprox_log1p(r), &decay, &one_minus)
        total_shrink = h.l1_per_l2 * one_minus
    else:
        decay = 1.0
        total_shrink = h.eta * h.l1 / H * k
    mag = fabs(w) * decay - total_shrink
    # a root so small that r or a overflows decays the weight to 0 or
    # shrinks it by inf, the limit being 0; "not >" also sends a NaN to 0
    if not mag > 0.0:
        return 0.0
    return copysign(mag, w)
