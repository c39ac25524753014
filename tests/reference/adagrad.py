"""NumPy transcriptions of the update rules, eager over every coordinate.

These follow the papers' update rules line by line, with no laziness and no
cleverness, so that the Cython kernels (lazy, O(nnz)) can be checked against
them on small data.  Dense input only; labels in {-1, +1}.
"""
import numpy as np
from scipy.special import expit

from .losses import derivative as loss_derivative
from .losses import value as loss_value


# ----------------------------------------------------------------------
# AdaGrad (Duchi, Hazan & Singer 2011), diagonal: the closed-form weights
# of the element-wise penalties, shared by the binary and the multinomial
# transcriptions (any array shape; H = delta + root).
def dual_averaging_weights(u, H, t, *, eta, l1, l2):
    """-sign(u) eta max(|u| - l1 t, 0) / (H + eta l2 t)."""
    excess = np.maximum(np.abs(u) - l1 * t, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        wd = -np.sign(u) * eta * excess / (H + eta * l2 * t)
    return np.where(excess > 0, wd, 0.0)


def proximal_root(sum_sq, t, adaptive):
    """The root in H = delta + root: AdaGrad's sqrt(sum of squared
    gradients), or sqrt(t) for every coordinate (the non-adaptive baseline)."""
    return np.sqrt(sum_sq) if adaptive else np.sqrt(t) + 0.0 * sum_sq


def ftrl_proximal_weights(z, H, t, *, eta, l1, l2):
    """McMahan's FTRL-Proximal weights after t steps, with the penalty of
    every step counted (strengths l1 t and l2 t): 0 while |z| <= l1 t, else
    -(z - sign(z) l1 t) / (H / eta + l2 t)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        wf = -(z - np.sign(z) * l1 * t) / (H / eta + l2 * t)
    return np.where(np.abs(z) <= l1 * t, 0.0, wf)


def adagrad_reference(
    X, y, sample_weight, *, loss, update, eta, delta, l1, l2, fit_intercept, t0=0,
    adaptive=True,
):
    """One pass of eager AdaGrad; returns (w, b, u, ssq, b_u, b_ssq, t, sum_loss).

    ``adaptive=False`` (dual averaging only): ``H = delta + sqrt(t)`` for every
    coordinate and the intercept, the non-adaptive baseline."""
    n, d = X.shape
    w, u, ssq = np.zeros(d), np.zeros(d), np.zeros(d)
    b = b_u = b_ssq = 0.0
    t = t0
    sum_loss = 0.0

    def dual_averaging_intercept():
        if b_u == 0:
            return 0.0
        return -eta * b_u / (delta + proximal_root(b_ssq, t, adaptive))

    def dual_averaging_weights_now():
        H = delta + proximal_root(ssq, t, adaptive)
        return dual_averaging_weights(u, H, t, eta=eta, l1=l1, l2=l2)

    def ftrl_weights():
        return ftrl_proximal_weights(u, delta + np.sqrt(ssq), t, eta=eta, l1=l1, l2=l2)

    for i in range(n):
        if sample_weight[i] == 0:
            continue
        x = X[i]
        if update == "dual_averaging":
            w, b = dual_averaging_weights_now(), dual_averaging_intercept()
        elif update == "ftrl_proximal":
            w = ftrl_weights()
        p = w @ x + b
        sum_loss += sample_weight[i] * loss_value(loss, y[i], p)
        dloss = sample_weight[i] * loss_derivative(loss, y[i], p)
        g = dloss * x
        t += 1
        if update == "ftrl_proximal":
            sigma = (np.sqrt(ssq + g**2) - np.sqrt(ssq)) / eta
            u += g - sigma * w
            ssq += g**2
        else:
            u += g
            ssq += g**2
        if update == "mirror_descent":
            # every coordinate takes the composite step, g_i = 0 or not
            H = delta + np.sqrt(ssq)
            touched = H > 0
            z = w.copy()
            z[touched] -= eta * g[touched] / H[touched]
            shrunk = np.zeros(d)
            shrunk[touched] = np.maximum(
                np.abs(z[touched]) - eta * l1 / H[touched], 0.0
            ) / (1.0 + eta * l2 / H[touched])
            w = np.where(touched, np.sign(z) * shrunk, w)
        if fit_intercept and dloss != 0:
            if update == "ftrl_proximal":
                sigma = (np.sqrt(b_ssq + dloss**2) - np.sqrt(b_ssq)) / eta
                b_u += dloss - sigma * b
                b_ssq += dloss**2
                b = -eta * b_u / (delta + np.sqrt(b_ssq))
            else:
                b_u += dloss
                b_ssq += dloss**2
                if update == "mirror_descent":
                    b -= eta * dloss / (delta + np.sqrt(b_ssq))
    if update == "dual_averaging":
        w, b = dual_averaging_weights_now(), dual_averaging_intercept()
    elif update == "ftrl_proximal":
        w = ftrl_weights()
    return w, b, u, ssq, b_u, b_ssq, t, sum_loss


def ftrl_proximal_mcmahan(X, y, *, alpha, beta, lambda1, lambda2, per_round=False):
    """McMahan et al. (2013), Algorithm 1, per-coordinate FTRL-Proximal with
    logistic loss, no intercept, transcribed as published (y in {0, 1}).

    ``per_round=True``: the regulariser of every round so far counts once,
    as in McMahan (2011)'s composite-objective FTRL-Proximal: before round
    t (t rows seen) the strengths are ``lambda1 * t`` and ``lambda2 * t``."""
    n, d = X.shape
    z, nsum = np.zeros(d), np.zeros(d)

    def strengths(t):
        scale = t if per_round else 1
        return lambda1 * scale, lambda2 * scale

    for t in range(n):
        x = X[t]
        w = np.zeros(d)
        l1, l2 = strengths(t)
        for i in np.flatnonzero(x):
            if abs(z[i]) <= l1:
                w[i] = 0.0
            else:
                w[i] = -(z[i] - np.sign(z[i]) * l1) / (
                    (beta + np.sqrt(nsum[i])) / alpha + l2
                )
        p = expit(x @ w)
        for i in np.flatnonzero(x):
            g = (p - y[t]) * x[i]
            sigma = (np.sqrt(nsum[i] + g * g) - np.sqrt(nsum[i])) / alpha
            z[i] += g - sigma * w[i]
            nsum[i] += g * g
    l1, l2 = strengths(n)
    w = np.where(
        np.abs(z) <= l1,
        0.0,
        -(z - np.sign(z) * l1) / ((beta + np.sqrt(nsum)) / alpha + l2),
    )
    return w, z, nsum
