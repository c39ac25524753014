"""NumPy transcription of full-matrix AdaGrad (Duchi, Hazan & Singer 2011).

J. Duchi, E. Hazan and Y. Singer, "Adaptive Subgradient Methods for Online
Learning and Stochastic Optimization", JMLR 12 (2011): proximal matrix
``H_t = delta I + G_t^{1/2}`` with ``G_t = sum_{s <= t} g_s g_s^T``.

Written step by step from the rule, with a fresh ``numpy.linalg.eigh`` for
every matrix function, so that the Cython kernel (which works in one cached
eigenbasis and uses Sherman-Morrison) can be checked against it.  Dense input
only; labels in {-1, +1}.
"""
import numpy as np

from .losses import derivative as loss_derivative
from .losses import value as loss_value

EPS = np.finfo(np.float64).eps


def psd_sqrt(G):
    """G^{1/2}; eigenvalues <= m * eps * max eigenvalue count as 0."""
    lam, Q = np.linalg.eigh(G)
    lam = np.where(lam <= G.shape[0] * EPS * lam.max(), 0.0, lam)
    return Q @ np.diag(np.sqrt(lam)) @ Q.T


def psd_pinv(M):
    """Pseudo-inverse of a symmetric PSD M, inverting only the eigenvalues
    above m * eps * max eigenvalue."""
    lam, Q = np.linalg.eigh(M)
    keep = lam > M.shape[0] * EPS * lam.max()
    inv = np.zeros_like(lam)
    inv[keep] = 1.0 / lam[keep]
    return Q @ np.diag(inv) @ Q.T


def full_matrix_adagrad_reference(
    X, y, sample_weight, *, loss, update, eta, delta, l2, fit_intercept,
    w=None, u=None, G=None, t0=0, order=None,
):
    """One pass of full-matrix AdaGrad over ``X[order]``.

    ``w``, ``u`` (length m = n_features + fit_intercept, intercept last) and
    ``G`` (m x m) are the state before the pass (zeros if None; not modified).
    Returns ``(w, u, G, t, sum_loss, sum_weight)``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    m = d + int(fit_intercept)
    w = np.zeros(m) if w is None else np.array(w, dtype=np.float64)
    u = np.zeros(m) if u is None else np.array(u, dtype=np.float64)
    G = np.zeros((m, m)) if G is None else np.array(G, dtype=np.float64)
    P = np.eye(m)
    if fit_intercept:
        P[d, d] = 0.0  # the intercept is not penalised
    t = t0
    sum_loss = sum_weight = 0.0
    if update not in ("dual_averaging", "mirror_descent"):
        raise ValueError(update)

    for i in range(n) if order is None else order:
        sw = sample_weight[i]
        if sw == 0:
            continue
        x = np.append(X[i], 1.0) if fit_intercept else X[i]
        p = w @ x
        sum_loss += sw * loss_value(loss, y[i], p)
        sum_weight += sw
        dd = sw * loss_derivative(loss, y[i], p)
        t += 1
        g = dd * x
        if dd != 0:
            u = u + g
            G = G + np.outer(g, g)
        elif l2 == 0:
            continue  # nothing moved
        H = delta * np.eye(m) + psd_sqrt(G)
        if update == "dual_averaging":
            w = -eta * psd_pinv(H + eta * l2 * t * P) @ u
        else:
            w = psd_pinv(H + eta * l2 * P) @ (H @ w - eta * g)
    return w, u, G, t, sum_loss, sum_weight
