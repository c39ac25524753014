"""
=================================================================
Implicit FTRL updates are robust to the step-size parameter beta
=================================================================

Chen & Orabona (ICML 2023, Figures 1-3) plot the averaged online loss
``(1/T) sum_t l_t(w_t)`` of one pass of generalized implicit FTRL against its
single hyper-parameter ``beta``: FTRL on linearised losses ("linear")
degrades sharply when ``beta`` is too large, while the implicit updates
("truncated" = aProx, "proximal") stay near their best.

This example redraws those curves with the data bundled with
``sklearn_adaprox`` and scikit-learn (no download):

* hinge and logistic loss on a9a (:func:`sklearn_adaprox.datasets.load_a9a`,
  the first 10 000 training rows), ``beta`` in [1e-3, 1e3];
* absolute loss on scikit-learn's diabetes data (standardised features, raw
  targets), ``beta`` in [1e-3, 1e8];

for the four updates of :class:`~sklearn_adaprox.ImplicitFTRLClassifier` /
:class:`~sklearn_adaprox.ImplicitFTRLRegressor` and, on the same axis,
scikit-learn's ``SGDClassifier`` / ``SGDRegressor`` with step ``beta/sqrt(t)``
(``learning_rate="invscaling"``, ``eta0=beta``) and, for the absolute loss,
passive-aggressive regression (``SGDRegressor(learning_rate="pa1",
eta0=beta)``, i.e. PA-I with ``C=beta``).  scikit-learn reports no online loss,
so theirs is measured on chunks of 50 rows: predict the chunk, then
``partial_fit`` it.  Each curve is the mean over 3 shuffles (the benchmark
``benchmarks/bench_ftrl.py`` runs the paper's 15 on the LIBSVM files).

Run with::

    python examples/plot_implicit_ftrl_beta.py --out implicit_ftrl_beta.png

It prints the table and saves the figure (matplotlib needed for the figure
only); it takes well under a minute.
"""

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.preprocessing import StandardScaler

from sklearn_adaprox import ImplicitFTRLClassifier, ImplicitFTRLRegressor
from sklearn_adaprox.datasets import load_a9a

UPDATES = ("linear", "truncated", "twostep", "proximal")
N_SHUFFLES = 3
CHUNK = 50

# %%
# The three problems
# ------------------
# (title, task, loss, X, y, betas)


def problems():
    X, y, _, _ = load_a9a()
    X, y = X[:10_000], y[:10_000]
    Xd, yd = load_diabetes(return_X_y=True)
    Xd = StandardScaler().fit_transform(Xd)
    clf_betas, reg_betas = np.logspace(-3, 3, 7), np.logspace(-3, 8, 12)
    return [
        ("a9a, hinge loss", "clf", "hinge", X, y, clf_betas),
        ("a9a, logistic loss", "clf", "log_loss", X, y, clf_betas),
        ("diabetes, absolute loss", "reg", "absolute_error", Xd, yd, reg_betas),
    ]


# %%
# Averaged online loss of one pass
# --------------------------------
# ``average_loss_`` is exact: every sample is scored before it is learnt.


def ftrl_loss(task, loss, update, beta, X, y):
    cls = ImplicitFTRLClassifier if task == "clf" else ImplicitFTRLRegressor
    est = cls(loss=loss, update=update, beta=beta, max_iter=1, tol=None, shuffle=False)
    with np.errstate(all="ignore"):
        value = est.fit(X, y).average_loss_
    return value if np.isfinite(value) else np.inf


def sklearn_loss(kind, task, loss, beta, X, y):
    if task == "clf":
        est = SGDClassifier(loss=loss, penalty=None, learning_rate="invscaling",
                            eta0=beta, power_t=0.5, shuffle=False)
    elif kind == "SGD":
        est = SGDRegressor(loss="epsilon_insensitive", epsilon=0.0, penalty=None,
                           learning_rate="invscaling", eta0=beta, power_t=0.5,
                           shuffle=False)
    else:  # passive-aggressive (PA-I) on the absolute loss
        est = SGDRegressor(loss="epsilon_insensitive", epsilon=0.0, penalty=None,
                           learning_rate="pa1", eta0=beta, shuffle=False)
    total, fitted = 0.0, False
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for lo in range(0, X.shape[0], CHUNK):
            Xc, yc = X[lo:lo + CHUNK], y[lo:lo + CHUNK]
            p = np.zeros(len(yc))
            if fitted:
                p = est.decision_function(Xc) if task == "clf" else est.predict(Xc)
            if task == "clf":
                total += np.logaddexp(0, -yc * p).sum() if loss == "log_loss" \
                    else np.maximum(0, 1 - yc * p).sum()
            else:
                total += np.abs(p - yc).sum()
            try:
                if task == "clf":
                    est.partial_fit(Xc, yc, classes=np.array([-1.0, 1.0]))
                else:
                    est.partial_fit(Xc, yc)
            except ValueError:  # overflow
                return np.inf
            fitted = True
    value = total / X.shape[0]
    return value if np.isfinite(value) else np.inf


def sweep(task, loss, X, y, betas):
    methods = list(UPDATES) + ["SGD"] + (["PA"] if task == "reg" else [])
    curves = {m: np.zeros(len(betas)) for m in methods}
    for seed in range(N_SHUFFLES):
        order = np.random.RandomState(seed).permutation(X.shape[0])
        Xs, ys = X[order], y[order]
        for j, beta in enumerate(betas):
            for m in methods:
                if m in UPDATES:
                    value = ftrl_loss(task, loss, m, beta, Xs, ys)
                else:
                    value = sklearn_loss(m, task, loss, beta, Xs, ys)
                curves[m][j] += value / N_SHUFFLES
    return curves


# %%
# Table and figure
# ----------------


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Averaged online loss of implicit FTRL against beta.")
    parser.add_argument("--out", default="implicit_ftrl_beta.png",
                        help="file name of the figure (PNG)")
    args = parser.parse_args(argv)

    results = []
    for title, task, loss, X, y, betas in problems():
        curves = sweep(task, loss, X, y, betas)
        results.append((title, betas, curves))
        print(f"\n{title}: averaged online loss, mean of {N_SHUFFLES} shuffles")
        print(f"{'beta':<10}" + "".join(f"{b:>10.0e}" for b in betas))
        for m, c in curves.items():
            print(f"{m:<10}" + "".join(
                f"{v:>10.4g}" if np.isfinite(v) else f"{'inf':>10}" for v in c))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: table only (pip install matplotlib).")
        return 0
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4))
    styles = {"linear": "o-", "truncated": "s-", "twostep": "^-", "proximal": "x--",
              "SGD": "k:", "PA": "k-."}
    for ax, (title, betas, curves) in zip(axes, results):
        for m, c in curves.items():
            ax.plot(betas, np.where(np.isfinite(c), c, np.nan), styles[m], label=m)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("beta (SGD: eta0, PA: C), log scale")
        ax.set_ylabel("averaged online loss (log scale)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.suptitle("One pass of implicit FTRL against beta (cf. Chen & Orabona 2023, "
                 "Figures 1-3)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"\nfigure saved to {args.out}")
    return 0


if __name__ == "__main__":
    main()
