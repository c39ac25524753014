"""NumPy transcription of AOGD / OGD for pairwise AUC learning, eager.

Follows Sun et al. (2023), Algorithms 1
and 2, line by line over every coordinate at every step: no laziness, so the
kernel's lazy momentum, lazy projection scale and archived momentum tails can
be checked against it.  Dense input; labels in {-1, +1}; rows of weight 0
are skipped; a pair is weighted by the product of its two sample weights.
"""
import numpy as np
from scipy.special import expit


def surrogate_derivative(loss, t):
    """l'(t) of the surrogate of the pair margin t."""
    if loss == "hinge":
        return -1.0 if t < 1 else 0.0
    if loss == "square":
        return -2.0 * (1.0 - t)
    if loss == "log_loss":
        return -expit(-t)
    if loss == "logit_square":
        s = expit(t)
        return -2.0 * s * (1.0 - s) ** 2
    raise ValueError(loss)


def surrogate_value(loss, t):
    if loss == "hinge":
        return max(0.0, 1.0 - t)
    if loss == "square":
        return (1.0 - t) ** 2
    if loss == "log_loss":
        return np.logaddexp(0.0, -t)
    if loss == "logit_square":
        return (1.0 - expit(t)) ** 2
    raise ValueError(loss)


def pairwise_auc_reference(
    X, y, sample_weight, *, loss, algorithm, adaptive, eta, theta, radius,
    average=False, state=None,
):
    """One pass; returns the state dict (w, m, v, ssq, t, prev, sums).

    ``sum_loss / sum_weight`` is the progressive pair loss of the pass and
    ``ordered_weight / pair_weight`` the progressive AUC since the start.
    ``w_sum`` / ``n_averaged``: sum and number of the iterates after each step
    (``average``); ``score_stats``: per class (row 0 negative), the sums of
    weight, weight * score and weight * score^2 of the prequential scores,
    weight = sample weight * step index, score = <w, a> before the step, or
    the averaged model's score when averaging (and at least one iterate).

    ``state`` continues a previous pass (the pair partner included).
    """
    n, d = X.shape
    if state is None:
        state = dict(w=np.zeros(d), m=np.zeros(d), v=0.0, ssq=np.zeros(d), t=0,
                     prev=None, sum_loss=0.0, sum_weight=0.0,
                     pair_weight=0.0, ordered_weight=0.0, n_projections=0,
                     w_sum=np.zeros(d), n_averaged=0, score_stats=np.zeros((2, 3)))
    else:
        state = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                 for k, v in state.items()}
        state["sum_loss"] = state["sum_weight"] = 0.0
    w, m, ssq = state["w"], state["m"], state["ssq"]
    if algorithm == "ogd":
        theta = 0.0
    for i in range(n):
        if sample_weight[i] == 0:
            continue
        a, yi, si = X[i], y[i], sample_weight[i]
        k = state["t"] + 1
        if average and state["n_averaged"] > 0:
            score = (state["w_sum"] / state["n_averaged"]) @ a
        else:
            score = w @ a
        state["score_stats"][int(yi > 0)] += si * k * np.array([1.0, score, score**2])
        g = np.zeros(d)
        prev = state["prev"]
        if prev is not None and prev[1] != yi:
            a_prev, y_prev, s_prev = prev
            delta = a - a_prev
            pair_margin = yi * (w @ delta)           # l(w^T(a_pos - a_neg))
            state["sum_loss"] += si * s_prev * surrogate_value(loss, pair_margin)
            state["sum_weight"] += si * s_prev
            state["pair_weight"] += si * s_prev
            state["ordered_weight"] += si * s_prev * (
                1.0 if pair_margin > 0 else 0.5 if pair_margin == 0 else 0.0)
            g = si * s_prev * surrogate_derivative(loss, pair_margin) * yi * delta
        # step 2 / 3 of Algorithm 2
        m = theta * m + (1.0 - theta) * g
        state["v"] += g @ g
        ssq += g * g
        if algorithm == "ogd":
            step = eta / np.sqrt(k) * m
        elif adaptive == "norm":
            v = state["v"]
            if v == 0:
                step = np.zeros(d)
            elif algorithm == "aogd":
                step = eta * m / np.sqrt(v)
            else:  # strongly convex step 4'
                step = eta * m / v
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                if algorithm == "aogd":
                    c = np.where(ssq > 0, eta / np.sqrt(ssq), 0.0)
                else:
                    c = np.where(ssq > 0, eta / ssq, 0.0)
            step = c * m
        w = w - step
        # step 4: projection onto the l2 ball
        if radius is not None:
            norm = np.linalg.norm(w)
            if norm > radius:
                w = w * (radius / norm)
                state["n_projections"] += 1
        if average:
            state["w_sum"] = state["w_sum"] + w
            state["n_averaged"] += 1
        state["prev"] = (a.copy(), yi, si)
        state["t"] = k
    state["w"], state["m"], state["ssq"] = w, m, ssq
    return state
