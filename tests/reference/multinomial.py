"""NumPy transcription of multinomial AdaGrad (Duchi, Hazan & Singer 2011,
section 5: one weight matrix W, rows = features, columns = classes; the
mixed-norm penalties lam * sum_j ||W[j, :]||_p split the composite step by
rows).

Eager: every row of W takes every step, including rows whose feature is
absent from the sample, so the lazy kernel can be checked against it.  The
row problems are solved by the independent NumPy solvers of
``reference.prox``.  Dense input; y holds class indices.
"""
import numpy as np
from scipy.special import logsumexp, softmax

from . import prox as reference_prox
from .adagrad import dual_averaging_weights, ftrl_proximal_weights, proximal_root


def multinomial_loss_gradient(loss, p, y):
    """(loss, d loss / d p) of the class scores p for class index y."""
    if loss == "log_loss":
        grad = softmax(p)
        grad[y] -= 1.0
        return logsumexp(p) - p[y], grad
    rivals = np.delete(np.arange(p.shape[0]), y)
    rival = rivals[np.argmax(p[rivals])]  # first one on ties
    value = 1.0 + p[rival] - p[y]
    grad = np.zeros_like(p)
    if value <= 0:
        return 0.0, grad
    grad[rival], grad[y] = 1.0, -1.0
    return value, grad


def _row_prox(penalty, v, D, lam):
    if penalty == "l1_l2":
        return reference_prox.group_l2_prox(v, D, lam)
    return reference_prox.linf_prox(v, D, lam)


def multinomial_adagrad_reference(
    X, y, sample_weight, n_classes, *, loss, update, penalty, eta, delta,
    l1=0.0, l2=0.0, lam=0.0, fit_intercept=True, t0=0, adaptive=True,
):
    """One eager pass; penalty "elementwise" (l1, l2) or "l1_l2"/"l1_linf"
    (lam).  ``adaptive=False`` (dual averaging only): H = delta + sqrt(t)
    everywhere.  Returns (W, b, U, SSQ, b_u, b_ssq, t, sum_loss), W of shape
    (n_features, n_classes)."""
    n, d = X.shape
    W, U, SSQ = (np.zeros((d, n_classes)) for _ in range(3))
    b, b_u, b_ssq = (np.zeros(n_classes) for _ in range(3))
    t, sum_loss = t0, 0.0

    def dual_averaging_intercepts():
        H_b = delta + proximal_root(b_ssq, t, adaptive)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(b_u != 0, -eta * b_u / H_b, 0.0)

    def closed_form_weights():
        if update == "ftrl_proximal":
            return ftrl_proximal_weights(U, delta + np.sqrt(SSQ), t, eta=eta, l1=l1, l2=l2)
        H = delta + proximal_root(SSQ, t, adaptive)
        if penalty == "elementwise":
            return dual_averaging_weights(U, H, t, eta=eta, l1=l1, l2=l2)
        return np.array([_row_prox(penalty, eta * U[j], H[j], eta * lam * t)
                         for j in range(d)])

    for i in range(n):
        if sample_weight[i] == 0:
            continue
        x = X[i]
        if update != "mirror_descent":
            W = closed_form_weights()
        if update == "dual_averaging":
            b = dual_averaging_intercepts()
        value, grad = multinomial_loss_gradient(loss, x @ W + b, int(y[i]))
        sum_loss += sample_weight[i] * value
        dloss = sample_weight[i] * grad
        G = np.outer(x, dloss)
        t += 1
        if update == "ftrl_proximal":
            sigma = (np.sqrt(SSQ + G**2) - np.sqrt(SSQ)) / eta
            U += G - sigma * W
        else:
            U += G
        SSQ += G**2
        if update == "mirror_descent":
            # every row takes the composite step, touched or not
            H = delta + np.sqrt(SSQ)
            if penalty == "elementwise":
                with np.errstate(invalid="ignore", divide="ignore"):
                    Z = W - eta * G / H
                    shrunk = np.maximum(np.abs(Z) - eta * l1 / H, 0.0) / (
                        1.0 + eta * l2 / H)
                W = np.where(H > 0, np.sign(Z) * shrunk, W)
            else:
                W = np.array([_row_prox(penalty, eta * G[j] - H[j] * W[j], H[j],
                                        eta * lam) for j in range(d)])
        if fit_intercept:
            moved = dloss != 0
            if update == "ftrl_proximal":
                sigma = (np.sqrt(b_ssq + dloss**2) - np.sqrt(b_ssq)) / eta
                b_u = np.where(moved, b_u + dloss - sigma * b, b_u)
            else:
                b_u = b_u + dloss
            b_ssq = b_ssq + dloss**2
            with np.errstate(invalid="ignore", divide="ignore"):
                if update == "mirror_descent":
                    b = np.where(moved, b - eta * dloss / (delta + np.sqrt(b_ssq)), b)
                elif update == "ftrl_proximal":
                    b = np.where(moved, -eta * b_u / (delta + np.sqrt(b_ssq)), b)
    if update != "mirror_descent":
        W = closed_form_weights()
    if update == "dual_averaging":
        b = dual_averaging_intercepts()
    return W, b, U, SSQ, b_u, b_ssq, t, sum_loss
