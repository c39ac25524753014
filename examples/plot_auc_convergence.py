"""
=================================================
Test AUC against iterations: AOGD, OGD and SGD
=================================================

The analogue of Figure 2 of Sun et al. (2023): the test ROC AUC of an online
learner after ``N`` samples of the stream, with ``N`` on a log scale, for

* :class:`~sklearn_adaprox.PairwiseAUCClassifier` with ``algorithm="aogd"``
  (momentum theta = 0.9 and the adaptive step ``eta m / sqrt(v)``), with the
  paper's scalar ``adaptive="norm"`` and with ``adaptive="coordinate"``;
* the same with ``algorithm="ogd"`` (step ``eta / sqrt(k)``, no momentum;
  Yang et al. 2021), the paper's baseline, also with ``average=True`` (the
  mean of the iterates, as Yang et al.'s reference code reports);
* scikit-learn's :class:`~sklearn.linear_model.SGDClassifier` with the
  logistic loss, a pointwise learner.

All learners read the same stream: the training split of the bundled a9a
data set (UCI Adult, 123 binary features, 24 % positive), shuffled once and
repeated for ``--passes`` passes, fed by ``partial_fit`` in chunks that end
at ``N = 2^4, 2^5, ...``.  The pairwise learners use the hinge surrogate,
eta = 1 and the l2 ball of radius 10 (the values of the paper's ablation).
The curves are saved as a PNG (``--out``, default ``auc_convergence.png``)
and printed as a table.  Run with::

    python examples/plot_auc_convergence.py --out auc_convergence.png

matplotlib is needed for the figure only; it is not a dependency of
``sklearn_adaprox``.
"""

import argparse
import sys

import numpy as np
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score

from sklearn_adaprox import PairwiseAUCClassifier
from sklearn_adaprox.datasets import load_a9a

# %%
# The learners
# ------------

LEARNERS = {
    "AOGD (norm)": lambda: PairwiseAUCClassifier(eta=1.0, radius=10.0, theta=0.9),
    "AOGD (coordinate)": lambda: PairwiseAUCClassifier(
        eta=1.0, radius=10.0, theta=0.9, adaptive="coordinate"),
    "OGD": lambda: PairwiseAUCClassifier(algorithm="ogd", eta=1.0, radius=10.0),
    "OGD averaged": lambda: PairwiseAUCClassifier(algorithm="ogd", eta=1.0, radius=10.0,
                                                  average=True),
    "SGDClassifier log_loss": lambda: SGDClassifier(loss="log_loss", random_state=0),
}


def auc_curves(passes, seed=0):
    """Test AUC of every learner at N = 2^4, 2^5, ... samples of the stream."""
    X_train, y_train, X_test, y_test = load_a9a()
    rng = np.random.RandomState(seed)
    order = np.concatenate([rng.permutation(X_train.shape[0]) for _ in range(passes)])
    checkpoints = [2**p for p in range(4, int(np.log2(order.shape[0])) + 1)]
    curves = {}
    for name, make in LEARNERS.items():
        est, start, aucs = make(), 0, []
        for stop in checkpoints:
            rows = order[start:stop]
            est.partial_fit(X_train[rows], y_train[rows], classes=[-1, 1])
            start = stop
            aucs.append(roc_auc_score(y_test, est.decision_function(X_test)))
        curves[name] = aucs
    return checkpoints, curves


# %%
# Run, print and plot
# -------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description="Test AUC against iterations.")
    parser.add_argument("--out", default="auc_convergence.png")
    parser.add_argument("--passes", type=int, default=4)
    args = parser.parse_args(argv)

    checkpoints, curves = auc_curves(args.passes)
    print(f"{'N':>8}  " + "  ".join(f"{name:>22}" for name in curves))
    for i, n in enumerate(checkpoints):
        print(f"{n:>8}  " + "  ".join(f"{curves[name][i]:>22.4f}" for name in curves))

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is needed for the figure: pip install matplotlib")
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, aucs in curves.items():
        ax.plot(np.log2(checkpoints), aucs, marker="o", markersize=3, label=name)
    ax.set_xlabel("samples seen N (log2 scale)")
    ax.set_ylabel("test ROC AUC (1 = perfect ranking)")
    ax.set_title("a9a: online AUC maximisation (cf. Sun et al. 2023, Fig. 2)")
    ax.set_ylim(0.5, 1.0)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
