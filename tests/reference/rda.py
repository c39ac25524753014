"""NumPy transcription of RDA (Xiao 2010; Lee & Wright 2012), eager and naive.

Every step recomputes the whole iterate and scans every coordinate for the
sign pattern, so that the lazy Cython kernel (O(nnz log d) per step, a heap
of exit steps) can be checked against it on small data.  Dense input only;
labels in {-1, +1}; logistic loss.
"""
import numpy as np
from scipy.special import expit


def rda_iterate(u, u_b, t, gamma, lam):
    """Lee & Wright, section 5: w = (sqrt(t) / (2 gamma)) soft(-g_bar, lam),
    g_bar = u / t; the intercept is not thresholded; w = 0 before step 1."""
    if t == 0:
        return np.zeros_like(u), 0.0
    g_bar = u / t
    soft = np.sign(-g_bar) * np.maximum(np.abs(g_bar) - lam, 0.0)
    return np.sqrt(t) / (2.0 * gamma) * soft, -np.sqrt(t) / (2.0 * gamma) * (u_b / t)


def sign_pattern(u, t, lam):
    """Brute-force scan: sign of each coordinate of the iterate.  The
    predicate |u_i| > lam t is the iterate being non-zero (|g_bar_i| > lam)."""
    if t == 0:
        return np.zeros(u.shape[0], dtype=np.int8)
    return np.where(np.abs(u) > lam * t, -np.sign(u), 0).astype(np.int8)


def rda_reference(X, y, sample_weight, order, *, gamma, lam, fit_intercept,
                  u=None, u_b=0.0, t=0, last_change=0, target=None):
    """Steps over X[order]; returns a dict with the final state, the iterate,
    the progressive loss, and per position of ``order`` the support size
    and ``last_change`` after that step (-1 for rows of zero weight), plus
    the number of coordinates that left the support without being touched.
    With a sign pattern ``target`` (support M): ``hits`` = first steps at
    which the iterate is a 2x superset (target's signs on M, at most 2|M|
    non-zeros) and has exactly the pattern ``target`` (-1: never)."""
    n, d = X.shape
    u = np.zeros(d) if u is None else np.array(u, dtype=np.float64)
    pattern = sign_pattern(u, t, lam)
    sizes, changes = [], []
    sum_loss = sum_weight = 0.0
    untouched_exits = 0
    hits = [-1, -1]
    for i in order:
        sw = sample_weight[i]
        if sw == 0:
            sizes.append(-1)
            changes.append(-1)
            continue
        w, b = rda_iterate(u, u_b, t, gamma, lam)
        p = X[i] @ w + (b if fit_intercept else 0.0)
        sum_loss += sw * np.logaddexp(0.0, -y[i] * p)
        sum_weight += sw
        dloss = sw * (-y[i] * expit(-y[i] * p))
        g = dloss * X[i]
        u = u + g
        if fit_intercept:
            u_b += dloss
        t += 1
        new = sign_pattern(u, t, lam)
        untouched_exits += int(np.sum((pattern != 0) & (new == 0) & (g == 0)))
        if np.any(new != pattern):
            last_change = t
        pattern = new
        sizes.append(int(np.count_nonzero(pattern)))
        if target is not None:
            M = target != 0
            if np.array_equal(pattern[M], target[M]):
                if hits[0] < 0 and np.count_nonzero(pattern) <= 2 * M.sum():
                    hits[0] = t
                if hits[1] < 0 and np.array_equal(pattern, target):
                    hits[1] = t
        changes.append(last_change)
    w, b = rda_iterate(u, u_b, t, gamma, lam)
    return dict(u=u, u_b=u_b, t=t, last_change=last_change, w=w,
                b=b if fit_intercept else 0.0, pattern=pattern,
                sizes=np.array(sizes), changes=np.array(changes),
                sum_loss=sum_loss, sum_weight=sum_weight,
                untouched_exits=untouched_exits, hits=hits)


def _residual(X, y, sample_weight, w, b, lam):
    """(minimum-norm subgradient residual r of the weights, gradient of the
    intercept) for the weighted average logistic loss (average over the rows
    of non-zero weight) plus lam ||w||_1."""
    N = np.count_nonzero(sample_weight)
    dl = sample_weight * (-y * expit(-y * (X @ w + b))) / N
    g = X.T @ dl
    r = np.where(w != 0, g + lam * np.sign(w),
                 np.sign(g) * np.maximum(np.abs(g) - lam, 0.0))
    return r, dl.sum()


def optimality(X, y, sample_weight, w, b, lam, fit_intercept=True):
    """delta(w) of Lee & Wright (52), written out directly."""
    r, g_b = _residual(X, y, sample_weight, w, b, lam)
    n = w.shape[0]
    sq = r @ r
    if fit_intercept:
        sq += g_b ** 2
        n += 1
    return np.sqrt(sq / n)


def objective(X, y, sample_weight, w, b, lam):
    N = np.count_nonzero(sample_weight)
    return sample_weight @ np.logaddexp(0.0, -y * (X @ w + b)) / N + lam * np.abs(w).sum()


def violation(X, y, sample_weight, w, b, lam, fit_intercept=True):
    """RDA+'s stopping measure, written out directly: the largest violation
    of an optimality condition of the l1 problem, relative to ``lam``."""
    r, g_b = _residual(X, y, sample_weight, w, b, lam)
    worst = np.abs(r).max(initial=0.0)
    if fit_intercept:
        worst = max(worst, abs(g_b))
    return worst / lam
