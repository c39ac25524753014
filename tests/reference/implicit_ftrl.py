"""NumPy transcription of generalized implicit FTRL (Chen & Orabona 2023).

Eager and literal: every round forms the whole vectors w_t = theta_t / lambda_t
and w_{t+1}, the gradient g_t, the choice z_t and ||w_{t+1} - w_t||^2 directly,
with no running sums and no laziness, so that the O(nnz) kernel can be checked
against it.  Dense input only.  The intercept is the weight of an appended
constant-1 feature.  The proximal operators are the closed forms of
the paper's section 4 and Appendix A (plus the Huber and
epsilon-insensitive ones derived the same way); the logistic one is found by
bracketing the scalar optimality condition with scipy's brentq.
"""
import numpy as np
from scipy.optimize import brentq

from . import losses


def prox_scalar(loss, y, p, sq, eta, epsilon=None):
    """c with Prox_{eta l(y, <., s>)}(w) = w + c s, given p = <w, s>, sq = ||s||^2."""
    if loss == "hinge":
        return y * min(eta, max(0.0, 1.0 - y * p) / sq)
    if loss == "absolute_error":
        return -np.sign(p - y) * min(eta, abs(p - y) / sq)
    if loss == "epsilon_insensitive":
        excess = max(0.0, abs(p - y) - epsilon)
        return -np.sign(p - y) * min(eta, excess / sq)
    if loss == "squared_error":
        return -(p - y) / (1.0 / eta + sq)
    if loss == "huber":
        # quadratic piece if it stays there, otherwise a full clipped step
        c = -(p - y) / (1.0 / eta + sq)
        if abs(p + c * sq - y) <= epsilon:
            return c
        return -np.sign(p - y) * eta * epsilon
    if loss == "log_loss":
        # c + eta l'(y, p + c sq) = 0 is increasing in c; root between 0 and c0
        c0 = -eta * losses.derivative(loss, y, p)
        if c0 == 0.0:
            return 0.0
        lo, hi = min(0.0, c0), max(0.0, c0)
        return brentq(lambda c: c + eta * losses.derivative(loss, y, p + c * sq),
                      lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    raise ValueError(loss)


def implicit_ftrl_reference(X, y, sample_weight, *, loss, update, beta, G,
                            fit_intercept, epsilon=None):
    """One pass of generalized implicit FTRL over the rows of X in order.

    Returns a dict: coef, intercept, theta, theta_intercept, lam (lambda_{T+1}),
    gamma (the last gamma_T), lambdas (lambda_t used at every step),
    sum_loss (sum of h l(w_t)), sum_weight, t.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    S = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    theta = np.zeros(S.shape[1])
    lam = G / beta                     # lambda_1
    gamma_prev = 0.0                   # gamma_{t-1}; lambda_2 = lambda_1
    sum_loss = sum_weight = 0.0
    lambdas = []
    t = 0

    def ell(h, yi, w, s):
        return h * losses.value(loss, yi, w @ s, epsilon=epsilon)

    def grad(h, yi, w, s):
        return h * losses.derivative(loss, yi, w @ s, epsilon=epsilon) * s

    for i in range(n):
        h = sample_weight[i]
        if h == 0:
            continue
        s, yi = S[i], y[i]
        w = theta / lam                                   # w_t
        lt = ell(h, yi, w, s)
        sum_loss += lt
        sum_weight += h
        g = grad(h, yi, w, s)
        if not np.any(s):
            z = np.zeros_like(s)
        elif update == "linear":
            z = g
        elif update == "truncated":
            gg = g @ g
            z = g * min(1.0, lam * lt / gg) if gg > 0 else np.zeros_like(s)
        elif update == "twostep":
            z = grad(h, yi, w - g / lam, s)
        elif update == "proximal":
            prox = w + prox_scalar(loss, yi, w @ s, s @ s, h / lam, epsilon) * s
            z = lam * (w - prox)
        else:
            raise ValueError(update)
        theta = theta - z
        lam_next = lam + gamma_prev / beta**2            # Corollary 4.3
        w_next = theta / lam_next                         # w_{t+1}
        gamma = lt - ell(h, yi, w_next, s) - 0.5 * lam * np.sum((w_next - w) ** 2)
        gamma_prev = max(gamma, 0.0)
        lambdas.append(lam)
        lam = lam_next
        t += 1

    coef = theta / lam
    return dict(
        coef=coef[:d], intercept=coef[d] if fit_intercept else 0.0,
        theta=theta[:d], theta_intercept=theta[d] if fit_intercept else 0.0,
        lam=lam, gamma=gamma_prev, lambdas=np.array(lambdas),
        sum_loss=sum_loss, sum_weight=sum_weight, t=t,
    )


def gradient_bound_reference(X, y, sample_weight, *, loss, fit_intercept, beta,
                             epsilon=None):
    """The documented default G: max_i h_i L_i ||s_i||.

    L_i bounds |l'(y_i, <w, s_i>)|: the Lipschitz constant of a Lipschitz
    loss; for the squared error, |<w, s_i> - y_i| over the ball ||w|| <= beta,
    i.e. |y_i| + beta ||s_i|| (Cauchy-Schwarz).
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.sqrt((X**2).sum(axis=1) + (1.0 if fit_intercept else 0.0))
    if loss == "squared_error":
        L = np.abs(y) + beta * norms
    elif loss == "huber":
        L = np.full(len(y), epsilon)
    else:
        L = np.ones(len(y))
    G = float(np.max(sample_weight * L * norms))
    return G if G > 0 else 1.0
