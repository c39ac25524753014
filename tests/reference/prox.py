"""Independent NumPy versions of the solvers of ``sklearn_adaprox._prox`` and a
NumPy transcription of the coupled AdaGrad kernel (``_adagrad_coupled_fast``).

The Cython solvers find the weighted-l1 threshold by (partial) sorting and
the group-l2 root by bisection on theta; here the threshold is found by
bisection on theta of the (piecewise linear, decreasing) constraint value and
the root by ``scipy.optimize.brentq``.  The l-infinity prox goes through its
dual exactly as in Duchi, Hazan & Singer (2011), section 5 (a projection,
then ``x = -D^-1 (v - beta)``), and the l1-ball solve through ``z = D^1/2 x``,
without the simplifications the Cython code uses.  A coordinate with
``D_i == 0`` is absent: ``x_i = 0``.
"""
import numpy as np
from scipy.optimize import brentq

from .losses import derivative as loss_derivative
from .losses import value as loss_value


def _bisect_decreasing(f, lo, hi):
    """Largest-precision root of a nonincreasing f with f(lo) > 0 >= f(hi)."""
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def weighted_l1_projection(q, a, c):
    """argmin_z 0.5 ||z - q||^2 s.t. sum a_i |z_i| <= c (a_i > 0)."""
    q = np.asarray(q, dtype=float)
    a = np.asarray(a, dtype=float)
    if np.sum(a * np.abs(q)) <= c:
        return q.copy()

    def excess(theta):
        return np.sum(a * np.maximum(np.abs(q) - theta * a, 0.0)) - c

    theta = _bisect_decreasing(excess, 0.0, np.max(np.abs(q) / a))
    return np.sign(q) * np.maximum(np.abs(q) - theta * a, 0.0)


def group_l2_prox(v, D, lam):
    """argmin_x <v,x> + 0.5 <x, diag(D) x> + lam ||x||_2."""
    v = np.asarray(v, dtype=float)
    D = np.asarray(D, dtype=float)
    present = D > 0
    x = np.zeros_like(v)
    vp, Dp = v[present], D[present]
    norm = np.linalg.norm(vp)
    if norm <= lam:
        return x
    if lam == 0:
        x[present] = -vp / Dp
        return x

    def f(theta):
        return np.sum(vp**2 / (1.0 + theta * Dp) ** 2) - lam**2

    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
    theta = brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                   maxiter=10_000)
    x[present] = -theta * vp / (1.0 + theta * Dp)
    return x


def linf_prox(v, D, lam):
    """argmin_x <v,x> + 0.5 <x, diag(D) x> + lam ||x||_inf, through the dual."""
    v = np.asarray(v, dtype=float)
    D = np.asarray(D, dtype=float)
    present = D > 0
    x = np.zeros_like(v)
    vp, Dp = v[present], D[present]
    root = np.sqrt(Dp)
    # beta* = argmin 0.5 (beta - v)^T D^-1 (beta - v) s.t. ||beta||_1 <= lam;
    # with zeta = D^-1/2 beta: project q = D^-1/2 v with weights a = D^1/2.
    zeta = weighted_l1_projection(vp / root, root, lam)
    beta = root * zeta
    x[present] = -(vp - beta) / Dp
    return x


def l1_ball_solve(v, D, radius):
    """argmin_x <v,x> + 0.5 <x, diag(D) x> s.t. ||x||_1 <= radius."""
    v = np.asarray(v, dtype=float)
    D = np.asarray(D, dtype=float)
    present = D > 0
    x = np.zeros_like(v)
    root = np.sqrt(D[present])
    z = weighted_l1_projection(-v[present] / root, 1.0 / root, radius)
    x[present] = z / root
    return x


# ----------------------------------------------------------------------
def adagrad_global_reference(
    X, y, sample_weight, *, loss, update, penalty, eta, delta, strength,
    fit_intercept, w=None, u=None, ssq=None, intercept_state=(0.0, 0.0, 0.0), t0=0,
    callback=None,
):
    """One eager pass of binary AdaGrad with the l-infinity penalty or the
    l1-ball constraint, the rules of ``_adagrad_coupled_fast`` written out.

    Returns ``(w, u, ssq, [b, u_b, ssq_b], t, sum_loss, sum_weight)``;
    ``callback(w)`` is called after every step.
    """
    n, d = X.shape
    w = np.zeros(d) if w is None else np.array(w, dtype=float)
    u = np.zeros(d) if u is None else np.array(u, dtype=float)
    ssq = np.zeros(d) if ssq is None else np.array(ssq, dtype=float)
    b, b_u, b_ssq = intercept_state
    t = t0
    sum_loss = sum_weight = 0.0
    solve = {"linf": linf_prox, "l1_ball": l1_ball_solve}[penalty]
    for i in range(n):
        sw = sample_weight[i]
        if sw == 0:
            continue
        x = np.asarray(X[i], dtype=float)
        p = w @ x + b
        sum_loss += sw * loss_value(loss, y[i], p)
        sum_weight += sw
        dloss = sw * loss_derivative(loss, y[i], p)
        g = dloss * x
        t += 1
        u += g
        ssq += g**2
        H = delta + np.sqrt(ssq)
        if penalty == "linf":
            lam = eta * strength * t if update == "dual_averaging" else eta * strength
        else:
            lam = strength
        if update == "dual_averaging":
            w = solve(eta * u, H, lam)
        else:
            w = solve(eta * g - H * w, H, lam)
        if fit_intercept and dloss != 0:
            b_u += dloss
            b_ssq += dloss**2
            if update == "dual_averaging":
                b = -eta * b_u / (delta + np.sqrt(b_ssq))
            else:
                b -= eta * dloss / (delta + np.sqrt(b_ssq))
        if callback is not None:
            callback(w)
    return w, u, ssq, np.array([b, b_u, b_ssq]), t, sum_loss, sum_weight
