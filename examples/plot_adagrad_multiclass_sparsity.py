"""
=====================================================================
Sparsity against accuracy: AdaGrad-DA and its non-adaptive twin
=====================================================================

An analogue of Figure 7 of Duchi, Hazan & Singer (2011, "Adaptive
Subgradient Methods for Online Learning and Stochastic Optimization", JMLR
12:2121-2159): the test error against the fraction of features kept as the
regularisation strength ``lambda`` sweeps from a dense to an (almost) empty
model, for AdaGrad's regularised dual averaging and for its non-adaptive
counterpart.  Each pair is :class:`~sklearn_adaprox.AdaGradClassifier` twice,
with the same loss, penalty and zeroing threshold ``lambda t``: once with
AdaGrad's per-coordinate proximal term ``delta + sqrt(sum g_i^2)``
(``matrix="diagonal"``, the default) and once with ``matrix="identity"``,
``H = sqrt(t) I`` for every coordinate -- Xiao's RDA, the paper's baseline.
One pass (``max_iter=1, tol=None``), no intercept (the paper's predictors
have none), mean and standard deviation over 5 random training orders.

Two problems, both available offline:

* **a9a** (:func:`sklearn_adaprox.datasets.load_a9a`, shipped with the
  package; 32561 training / 16281 test rows, 123 one-hot features whose
  training frequencies range from 0.003 % to 95 %, median 3 %): binary, hinge
  loss, ``penalty="l1"``; ``lambda`` 1e-5 .. 0.1.  The paper's Figure 7 is
  binary l1 on text (RCV1), so this is the closest analogue available
  without a download.  x-axis: fraction of non-zero weights.
* **digits** (scikit-learn's 8x8 digits, pixels / 16, stratified 2/3 for
  training): 10 classes, ``multi_class="multinomial"``, multi-class hinge,
  mixed norm ``penalty="l1_l2"`` (a pixel is dropped for all classes at
  once, as in the paper's Table 3); ``lambda`` 1e-4 .. 0.1.  x-axis:
  fraction of pixels used by any class (about 10 % of the pixels are never
  lit in training, so it stays below 0.91).

Step sizes are fixed along each sweep, one per learner, chosen beforehand by
a quick check: each learner trained on the first 80 % of 5 permuted training
parts with ``eta`` in {0.01, 0.03, ..., 30} at a small ``lambda`` (a9a 1e-6
and 1e-5, digits 1e-4 and 1e-3), and the value of lowest mean error on the
remaining 20 % kept.  a9a: AdaGrad ``eta=0.1`` (validation error 0.156),
identity ``eta=1`` (0.159; 0.3 gave 0.160).  digits: AdaGrad ``eta=0.1``
(0.076), identity ``eta=0.3`` (0.095).  The test set played no part.

The tables are printed and the curves saved as a PNG (``--out``, default
``adagrad_multiclass_sparsity.png``).  Run with::

    python examples/plot_adagrad_multiclass_sparsity.py --out adagrad_multiclass_sparsity.png

The sweeps take about 3 seconds and the whole script about 7 (one core,
mostly imports).
matplotlib is needed for the figure only; it is not a dependency of
``sklearn_adaprox``.  The companion benchmark
``benchmarks/bench_adagrad_multiclass.py`` makes the comparison at equal
``lambda`` with the step re-chosen for each ``lambda``, on MNIST and 20
newsgroups as well.
"""

import argparse
import sys
import time
from functools import partial

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.datasets import load_a9a

# %%
# The problems, the learners and the grid
# ---------------------------------------
# One pass each (``max_iter=1, tol=None``), dual averaging, no intercept.
# Each problem has one learner pair that differs only in ``matrix``: AdaGrad's
# per-coordinate ``H`` (``"diagonal"``) or the non-adaptive ``sqrt(t) I``
# (``"identity"``).  Each learner keeps one step size for the whole sweep (see
# the docstring for how it was chosen).  The rows are permuted here and
# passed with ``shuffle=False``, so that both learners of a pair see the very
# same orders.

N_ORDERS = 5


def load_problems():
    """{title: (X_train, y_train, X_test, y_test, lambdas, learners,
    (x label, log x axis?, upper limit of the error axis))}."""
    X_tr, y_tr, X_te, y_te = load_a9a()
    hinge_l1 = partial(AdaGradClassifier, loss="hinge", penalty="l1",
                       update="dual_averaging")
    a9a = (
        X_tr, y_tr, X_te, y_te, np.logspace(-5, -1, 13),
        [("AdaGrad-DA l1 hinge, eta=0.1", partial(hinge_l1, eta=0.1)),
         ("RDA (identity) l1 hinge, eta=1", partial(hinge_l1, eta=1.0,
                                                     matrix="identity"))],
        ("fraction of non-zero weights", True, None),
    )
    digits = load_digits()
    # pixels / 16: one [0, 1] scale for all pixels
    X_tr, X_te, y_tr, y_te = train_test_split(
        digits.data / 16.0, digits.target, train_size=2 / 3,
        stratify=digits.target, random_state=0,
    )
    mixed = partial(AdaGradClassifier, loss="hinge", multi_class="multinomial",
                    penalty="l1_l2")
    dig = (
        X_tr, y_tr, X_te, y_te, np.logspace(-4, -1, 13),
        [("AdaGrad-DA l1/l2 hinge, eta=0.1", partial(mixed, eta=0.1)),
         ("RDA (identity) l1/l2 hinge, eta=0.3", partial(mixed, eta=0.3,
                                                          matrix="identity"))],
        ("fraction of pixels used by any class", False, 0.3),
    )
    return {"a9a, binary, l1": a9a, "digits, 10 classes, l1/l2": dig}


def sweep(X_train, y_train, X_test, y_test, lambdas, learners):
    """{learner name: array of rows (lambda, non-zero fraction, test error,
    its std over the orders)}, means over ``N_ORDERS`` training orders."""
    orders = [np.random.RandomState(s).permutation(len(y_train))
              for s in range(N_ORDERS)]
    results = {}
    for name, factory in learners:
        rows = []
        for lam in lambdas:
            used, error = [], []
            for order in orders:
                clf = factory(alpha=lam, fit_intercept=False, max_iter=1, tol=None,
                              shuffle=False)
                clf.fit(X_train[order], y_train[order])
                # a feature counts as used when any class has a non-zero weight
                used.append(np.any(clf.coef_ != 0, axis=0).mean())
                error.append(1.0 - clf.score(X_test, y_test))
            rows.append((lam, np.mean(used), np.mean(error), np.std(error)))
        results[name] = np.array(rows)
    return results


def print_table(title, results):
    names = list(results)
    print(f"== {title}: mean over {N_ORDERS} training orders ==")
    print(f"{'lambda':>8}  " + "  ".join(f"{n:>38}" for n in names))
    print(f"{'':>8}  " + "  ".join(f"{'non-zero   test error (std)':>38}"
                                   for _ in names))
    for i, lam in enumerate(results[names[0]][:, 0]):
        cells = [f"{results[n][i, 1]:>21.3f}{results[n][i, 2]:>9.3f} "
                 f"({results[n][i, 3]:.3f})" for n in names]
        print(f"{lam:>8.1e}  " + "  ".join(cells))
    print()


def plot(all_results, axes_info, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(
            "This example needs matplotlib to draw the figure (the tables above "
            "were printed without it): pip install matplotlib"
        )
    fig, axes = plt.subplots(1, len(all_results), figsize=(11, 4.3))
    for ax, (title, results) in zip(axes, all_results.items()):
        x_label, x_log, y_top = axes_info[title]
        for (name, rows), marker in zip(results.items(), "os"):
            # an empty model has no place on a log axis; the table lists it
            keep = rows[:, 1] > 0 if x_log else rows[:, 1] >= 0
            ax.errorbar(rows[keep, 1], rows[keep, 2], yerr=rows[keep, 3],
                        marker=marker, capsize=2, label=name)
        if x_log:
            ax.set_xscale("log")
        ax.set_xlabel(x_label + (" (log scale)" if x_log else ""))
        ax.set_ylabel("test error (fraction misclassified)")
        if y_top is not None:
            # the (nearly) empty models are off the scale; the table lists them
            ax.set_ylim(0.0, y_top)
            ax.set_xlim(0.25, 1.0)
        ax.set_title(f"{title}: one pass, lambda sweep")
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"saved {out}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Test error against the fraction of features used as lambda "
        "sweeps, AdaGrad-DA against matrix='identity' on a9a (l1) and digits "
        "(l1/l2): tables printed, figure saved to --out."
    )
    parser.add_argument(
        "--out", default="adagrad_multiclass_sparsity.png", help="PNG file to write"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    all_results, axes_info = {}, {}
    for title, (*data, lambdas, learners, info) in load_problems().items():
        all_results[title] = sweep(*data, lambdas, learners)
        axes_info[title] = info
        print_table(title, all_results[title])
    print(f"sweeps took {time.perf_counter() - start:.1f} s")
    plot(all_results, axes_info, args.out)


# %%
# Reading the figure
# ------------------
# Down and to the left is better: fewer features for the same error.  Compare
# the curves, not the points of equal ``lambda``: the threshold ``lambda t``
# is the same for both learners, but the sums ``u`` it is compared with
# depend on the step (a larger step makes fewer margin errors, smaller
# gradient sums and a sparser model), so which learner is sparser at a given
# ``lambda`` says more about the two steps than about the proximal term.
#
# *digits (l1/l2)*: AdaGrad's curve lies 1.3 to 2.4 points below the
# baseline's over the whole range from 62 % to 90 % of the pixels (0.066
# against 0.079 test error at ~82 %, 0.070 against 0.090 at ~73 %), two to
# three times the standard deviation over the orders.  Below 40 % of the
# pixels both collapse together (0.21-0.24 at ~35 %, ~0.81 with 3 % of the
# pixels).  This is the paper's claim in a small form.
#
# *a9a (l1)*: no advantage for AdaGrad.  Down to ~35 % of the weights the
# curves coincide (0.152-0.155 test error for both; scikit-learn's
# ``LogisticRegression`` reaches 0.150); below that the baseline is ahead
# (at ~13 % of the weights 0.169 against ~0.19 for AdaGrad by
# interpolation; AdaGrad reaches the all-negative predictor, error 0.236,
# at 3 % of the weights, the baseline still has 0.208 at 2 %).  That sparse
# end depends on the fixed steps, chosen at small ``lambda``: with the step
# re-chosen by validation at each ``lambda`` (a quick check, 5 orders),
# AdaGrad prefers larger steps there and the gap closes (``lambda=1e-2``:
# AdaGrad ``eta=0.3`` 0.171 test error with 15.8 % of the weights, identity
# ``eta=1`` 0.171 with 12.8 %; ``lambda=2.2e-2``: AdaGrad ``eta=3`` 0.196
# with 4.7 %, identity ``eta=10`` 0.193 with 4.7 %).
#
# So a9a, although its feature frequencies spread widely, shows no gain
# from the adaptive step in this one-pass setting; why was not investigated
# here (it has only 123 features, a row sets at most one feature of each of
# its 14 one-hot groups).  On MNIST pixels and 20 newsgroups words the
# benchmark finds AdaGrad more accurate at equal ``lambda`` by up to 2 to 2.5
# points, on dense UCI data (letter, satimage, vehicle) the two tie.

if __name__ == "__main__":
    main()
