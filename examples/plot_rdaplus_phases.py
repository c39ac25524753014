"""
==================================================================
RDA+: optimality and support size against time, with the switch
==================================================================

The analogue of Figure 1 of Lee & Wright (2012) on the bundled a9a data:
for three l1 strengths ``alpha`` (fractions of ``alpha_max``, the smallest
``alpha`` whose solution is ``w = 0``), the optimality measure ``delta`` of
the paper (eq. 52) and the number of non-zero weights of

* ``RDAPlusClassifier`` -- dual averaging, then, once the support has been
  stable for ``tau`` iterates, the Newton local phase on that support (its
  ``optimality_history_`` / ``support_size_history_``; the dotted vertical
  line marks the switch),
* plain RDA -- the same estimator with ``local_phase=False``,
* scikit-learn's ``SGDClassifier(loss="log_loss", penalty="l1")``,

against the compute time of each.  RDA and SGD learn by ``partial_fit`` on
chunks of a shuffled copy of the data; ``delta`` on the whole training set is
computed between chunks, outside their clocks.  RDA+ records ``delta`` at
the end of each dual-averaging epoch and at every local-phase iterate.

Run from the repository root::

    python examples/plot_rdaplus_phases.py --out rdaplus_phases.png

It prints the final ``delta`` and non-zeros of each method and, with
matplotlib installed, saves the figure (a few seconds).
"""
# %%
import argparse
import time

import numpy as np
from scipy.special import expit
from sklearn.linear_model import SGDClassifier

from sklearn_adaprox import RDAPlusClassifier
from sklearn_adaprox.datasets import load_a9a


def delta(X, yp, w, b, lam):
    """Lee & Wright's optimality measure, eq. (52), intercept included."""
    dl = -yp * expit(-yp * (X @ w + b)) / X.shape[0]
    g = np.asarray(X.T @ dl).ravel()
    r = np.where(w != 0, g + lam * np.sign(w), np.sign(g) * np.maximum(np.abs(g) - lam, 0))
    return np.sqrt((r @ r + dl.sum() ** 2) / (w.shape[0] + 1))


def stream_curve(make_step, X, yp, lam, budget, n_chunks=10, seed=0):
    """Time / delta / non-zeros of a partial_fit learner along shuffled
    epochs, ``n_chunks`` checkpoints per epoch, until ``budget`` seconds."""
    rng = np.random.RandomState(seed)
    times, deltas, nnz = [], [], []
    spent = 0.0
    while spent < budget:
        perm = rng.permutation(X.shape[0])
        Xs, ys = X[perm], yp[perm]
        for idx in np.array_split(np.arange(X.shape[0]), n_chunks):
            t0 = time.perf_counter()
            w, b = make_step(Xs[idx], ys[idx])
            spent += time.perf_counter() - t0
            times.append(spent)
            deltas.append(delta(X, yp, w, b, lam))
            nnz.append(np.count_nonzero(w))
    return np.array(times), np.array(deltas), np.array(nnz)


def main(argv=None):
    parser = argparse.ArgumentParser(description="RDA+ phases on a9a")
    parser.add_argument("--out", default="rdaplus_phases.png")
    parser.add_argument("--fractions", default="0.05,0.2,0.6")
    args = parser.parse_args(argv)

    X, y, _, _ = load_a9a()
    yp = np.where(y > 0, 1.0, -1.0)
    p = np.mean(yp > 0)
    dl0 = -yp * expit(-yp * np.log(p / (1 - p))) / X.shape[0]
    alpha_max = np.abs(X.T @ dl0).max()

    results = []
    for frac in [float(f) for f in args.fractions.split(",")]:
        lam = frac * alpha_max
        t0 = time.perf_counter()
        plus = RDAPlusClassifier(alpha=lam, random_state=0).fit(X, y)
        t_plus = time.perf_counter() - t0
        budget = 3 * t_plus

        rda = RDAPlusClassifier(alpha=lam, local_phase=False)

        def rda_step(Xc, yc):
            rda.partial_fit(Xc, yc, classes=[-1.0, 1.0])
            return rda.coef_[0], rda.intercept_[0]

        sgd = SGDClassifier(loss="log_loss", penalty="l1", alpha=lam, random_state=0)

        def sgd_step(Xc, yc):
            sgd.partial_fit(Xc, yc, classes=[-1.0, 1.0])
            return sgd.coef_[0], sgd.intercept_[0]

        curves = {
            "RDA": stream_curve(rda_step, X, yp, lam, budget),
            "SGD": stream_curve(sgd_step, X, yp, lam, budget),
        }
        hist, sup = plus.optimality_history_[0], plus.support_size_history_[0]
        curves["RDA+"] = (hist[:, 1], hist[:, 2], sup[:, 2])
        switch_time = hist[np.searchsorted(hist[:, 0], plus.switch_iter_[0][0]), 1]
        results.append((frac, lam, curves, switch_time))
        print(f"alpha = {frac:g} alpha_max = {lam:.4g}:")
        for name, (t, d, k) in curves.items():
            print(f"  {name:5s} after {t[-1]:.3f} s: delta {d[-1]:.2e}, non-zeros {int(k[-1])}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib to draw the figure")
        return 0
    fig, axes = plt.subplots(len(results), 2, figsize=(10, 3.2 * len(results)),
                             squeeze=False)
    styles = {"RDA+": "C3-", "RDA": "C0-", "SGD": "C2-"}
    for row, (frac, lam, curves, switch_time) in zip(axes, results):
        for name, (t, d, k) in curves.items():
            row[0].semilogy(t, d, styles[name], label=name, marker=".", ms=3)
            row[1].plot(t, k, styles[name], label=name, marker=".", ms=3)
        for ax in row:
            ax.axvline(switch_time, color="C3", ls=":", lw=1,
                       label="RDA+ switches to the local phase")
            ax.set_xlabel("time (s)")
        row[0].axhline(1e-4, color="gray", lw=0.5, label="tolerance 1e-4")
        row[0].set_ylabel("delta (optimality measure, log scale)")
        row[1].set_ylabel("non-zero weights (count)")
        row[0].set_title(f"optimality, alpha = {frac:g} alpha_max", fontsize=10)
        row[1].set_title(f"support size, alpha = {frac:g} alpha_max", fontsize=10)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("RDA+ against plain RDA and SGD on a9a (cf. Lee & Wright 2012, Figure 1)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    main()
