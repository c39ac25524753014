"""NumPy transcription of "K shard passes from the same state, then merge".

Each learner's pass is written out eagerly over every coordinate, starting
from an explicit state dict (not from zero as the single-pass transcriptions
of the sibling modules), and the merge is written from its definition:

* a sum over the steps (AdaGrad's u and sum of squares, the intercept's,
  implicit FTRL's theta and lambda + gamma / beta^2, the AUC learner's
  squared-gradient sums, score statistics and pair counts, RDA's u, and t)
  merges as  base + sum_k (shard_k - base);
* mirror descent's weights (and intercept) are averaged per coordinate,
  weighted by each shard's increment of the sum of squared gradients (a
  plain mean where no shard has any);
* the AUC iterate and momentum are averaged, weighted by each shard's number
  of steps; the pair partner is the one of the last shard that took a step;
* with ``combine="average"`` (AdaGrad here) the increments of the sums are
  averaged too, per coordinate weighted by the increments of the sum of
  squared gradients.

Dense input, labels in {-1, +1}.
"""
import numpy as np

from . import losses
from .adagrad import dual_averaging_weights, ftrl_proximal_weights
from .implicit_ftrl import prox_scalar
from .pairwise_auc import pairwise_auc_reference
from .rda import rda_iterate, rda_reference


def weighted_mean(values, weights):
    """Per coordinate sum_k w_k v_k / sum_k w_k, the plain mean where the
    weights sum to zero."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    weights = np.broadcast_to(weights, values.shape)
    total = weights.sum(axis=0)
    plain = values.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (weights * values).sum(axis=0) / total, plain)


# ----------------------------------------------------------------------
# AdaGrad, element-wise (binary problem)
def adagrad_state(d):
    return dict(u=np.zeros(d), ssq=np.zeros(d), w=np.zeros(d), b=0.0, b_u=0.0,
                b_ssq=0.0, t=0)


def adagrad_weights(s, *, update, eta, delta, l1, l2, adaptive=True):
    """(w, b) of a state: closed forms for dual averaging and FTRL-Proximal,
    the stored iterate for mirror descent."""
    if update == "dual_averaging":
        root = np.sqrt(s["ssq"]) if adaptive else np.sqrt(s["t"]) + 0 * s["ssq"]
        w = dual_averaging_weights(s["u"], delta + root, s["t"], eta=eta, l1=l1, l2=l2)
        root_b = np.sqrt(s["b_ssq"]) if adaptive else np.sqrt(s["t"])
        b = 0.0 if s["b_u"] == 0 else -eta * s["b_u"] / (delta + root_b)
        return w, b
    if update == "ftrl_proximal":
        w = ftrl_proximal_weights(s["u"], delta + np.sqrt(s["ssq"]), s["t"], eta=eta,
                                  l1=l1, l2=l2)
        b = 0.0 if s["b_u"] == 0 else -eta * s["b_u"] / (delta + np.sqrt(s["b_ssq"]))
        return w, b
    return s["w"].copy(), s["b"]


def adagrad_pass(X, y, sw, state, *, loss, update, eta, delta, l1, l2, fit_intercept,
                 adaptive=True):
    """One pass over the rows in order from ``state``; a new state."""
    s = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
    hyper = dict(update=update, eta=eta, delta=delta, l1=l1, l2=l2, adaptive=adaptive)
    for i in range(X.shape[0]):
        if sw[i] == 0:
            continue
        x = X[i]
        w, b = adagrad_weights(s, **hyper)
        p = w @ x + b
        d = sw[i] * losses.derivative(loss, y[i], p)
        g = d * x
        s["t"] += 1
        if update == "ftrl_proximal":
            sigma = (np.sqrt(s["ssq"] + g**2) - np.sqrt(s["ssq"])) / eta
            s["u"] = s["u"] + g - sigma * w
        else:
            s["u"] = s["u"] + g
        s["ssq"] = s["ssq"] + g**2
        if update == "mirror_descent":
            H = delta + np.sqrt(s["ssq"])
            on = H > 0
            z = w.copy()
            z[on] -= eta * g[on] / H[on]
            shrunk = np.zeros_like(z)
            shrunk[on] = np.maximum(np.abs(z[on]) - eta * l1 / H[on], 0.0) / (
                1.0 + eta * l2 / H[on])
            s["w"] = np.where(on, np.sign(z) * shrunk, w)
        if fit_intercept and d != 0:
            if update == "ftrl_proximal":
                sigma = (np.sqrt(s["b_ssq"] + d**2) - np.sqrt(s["b_ssq"])) / eta
                s["b_u"] += d - sigma * b
            else:
                s["b_u"] += d
            s["b_ssq"] += d**2
            if update == "mirror_descent":
                s["b"] = b - eta * d / (delta + np.sqrt(s["b_ssq"]))
    return s


def adagrad_merge(base, shards, *, update, eta, delta, l1, l2, adaptive=True,
                  combine="sum"):
    """The merged state of shard states that continued ``base``.
    ``combine="average"``: the increments averaged instead of added, per
    coordinate weighted by the increments of the sum of squares, t by its
    plain mean (rounded)."""
    merged = dict(base)
    if combine == "average":
        for key, by in (("u", "ssq"), ("ssq", "ssq"), ("b_u", "b_ssq"), ("b_ssq", "b_ssq")):
            merged[key] = base[key] + weighted_mean(
                [s[key] - base[key] for s in shards], [s[by] - base[by] for s in shards])
        merged["t"] = base["t"] + int(np.rint(np.mean([s["t"] - base["t"] for s in shards])))
    else:
        for key in ("u", "ssq", "b_u", "b_ssq", "t"):
            merged[key] = base[key] + sum(s[key] - base[key] for s in shards)
    if update == "mirror_descent":
        hyper = dict(update=update, eta=eta, delta=delta, l1=l1, l2=l2, adaptive=adaptive)
        ws = [adagrad_weights(s, **hyper)[0] for s in shards]
        merged["w"] = weighted_mean(ws, [s["ssq"] - base["ssq"] for s in shards])
        merged["b"] = float(weighted_mean([s["b"] for s in shards],
                                          [s["b_ssq"] - base["b_ssq"] for s in shards]))
    return merged


# ----------------------------------------------------------------------
# generalized implicit FTRL (Chen & Orabona 2023); the intercept is the
# weight of a constant-1 feature
def implicit_ftrl_state(d, *, G, beta, fit_intercept):
    return dict(theta=np.zeros(d + bool(fit_intercept)), lam=G / beta, gamma=0.0, t=0)


def implicit_ftrl_pass(X, y, sw, state, *, loss, update, beta, fit_intercept,
                       epsilon=None):
    n = X.shape[0]
    S = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    theta, lam, gamma_prev, t = state["theta"].copy(), state["lam"], state["gamma"], state["t"]

    def ell(h, yi, w, s):
        return h * losses.value(loss, yi, w @ s, epsilon=epsilon)

    def grad(h, yi, w, s):
        return h * losses.derivative(loss, yi, w @ s, epsilon=epsilon) * s

    for i in range(n):
        h = sw[i]
        if h == 0:
            continue
        s, yi = S[i], y[i]
        w = theta / lam
        lt = ell(h, yi, w, s)
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
        else:
            prox = w + prox_scalar(loss, yi, w @ s, s @ s, h / lam, epsilon) * s
            z = lam * (w - prox)
        theta = theta - z
        lam_next = lam + gamma_prev / beta**2
        w_next = theta / lam_next
        gamma = lt - ell(h, yi, w_next, s) - 0.5 * lam * np.sum((w_next - w) ** 2)
        gamma_prev = max(gamma, 0.0)
        lam = lam_next
        t += 1
    return dict(theta=theta, lam=lam, gamma=gamma_prev, t=t)


def implicit_ftrl_merge(base, shards, *, beta):
    """theta and lambda + gamma / beta^2 are sums; the merged lambda takes
    every pending gamma in."""
    total = lambda s: s["lam"] + s["gamma"] / beta**2
    return dict(
        theta=base["theta"] + sum(s["theta"] - base["theta"] for s in shards),
        lam=total(base) + sum(total(s) - total(base) for s in shards),
        gamma=0.0,
        t=base["t"] + sum(s["t"] - base["t"] for s in shards),
    )


# ----------------------------------------------------------------------
# AOGD / OGD for the pairwise AUC
def pairwise_auc_pass(X, y, sw, state, **params):
    if state is None:
        return pairwise_auc_reference(X, y, sw, **params)
    return pairwise_auc_reference(X, y, sw, state=state, **params)


def pairwise_auc_merge(base, shards):
    merged = dict(base)
    for key in ("ssq", "v", "score_stats", "pair_weight", "ordered_weight", "w_sum",
                "n_averaged", "t"):
        merged[key] = base[key] + sum(s[key] - base[key] for s in shards)
    steps = [float(s["t"] - base["t"]) for s in shards]
    merged["w"] = weighted_mean([s["w"] for s in shards], np.array(steps)[:, None])
    merged["m"] = weighted_mean([s["m"] for s in shards], np.array(steps)[:, None])
    stepping = [s for s, k in zip(shards, steps) if k > 0]
    merged["prev"] = stepping[-1]["prev"] if stepping else base["prev"]
    return merged


def pairwise_auc_zero(d):
    return dict(w=np.zeros(d), m=np.zeros(d), v=0.0, ssq=np.zeros(d), t=0,
                prev=None, sum_loss=0.0, sum_weight=0.0, pair_weight=0.0,
                ordered_weight=0.0, n_projections=0, w_sum=np.zeros(d), n_averaged=0,
                score_stats=np.zeros((2, 3)))


# ----------------------------------------------------------------------
# RDA (the dual-averaging phase of RDA+)
def rda_pass(X, y, sw, state, *, gamma, lam, fit_intercept):
    return rda_reference(X, y, sw, np.arange(X.shape[0]), gamma=gamma, lam=lam,
                         fit_intercept=fit_intercept, u=state["u"], u_b=state["u_b"],
                         t=state["t"])


def rda_merge(base, shards, *, gamma, lam, fit_intercept):
    merged = {key: base[key] + sum(s[key] - base[key] for s in shards)
              for key in ("u", "u_b", "t")}
    w, b = rda_iterate(merged["u"], merged["u_b"], merged["t"], gamma, lam)
    merged["w"], merged["b"] = w, (b if fit_intercept else 0.0)
    return merged
