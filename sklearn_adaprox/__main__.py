"""Demo: ``python -m sklearn_adaprox``.

Fits every learner of ``LEARNERS`` on the training split of the bundled a9a
data set (no network access), evaluates it on the test split and prints one
aligned table.  A new estimator joins the demo by adding one
``(name, factory)`` pair to ``LEARNERS``; ``factory()`` returns an unfitted
binary classifier with ``decision_function`` and ``coef_``.

``python -m sklearn_adaprox train|predict|evaluate|info ...`` is the
streaming command line instead (``sklearn_adaprox._cli``).
"""
import argparse
import sys
import time
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score

from . import AdaGradClassifier, ImplicitFTRLClassifier, ImplicitFTRLRegressor
from .datasets import load_a9a
from .pairwise_auc import PairwiseAUCClassifier
from .rda_plus import RDAPlusClassifier

LEARNERS = [
    ("AdaGrad", partial(AdaGradClassifier, random_state=0)),
    ("AdaGrad log_loss", partial(AdaGradClassifier, loss="log_loss", random_state=0)),
    (
        "AdaGrad l1 alpha=1e-4",
        partial(AdaGradClassifier, penalty="l1", alpha=1e-4, random_state=0),
    ),
    (
        "AdaGrad mirror_descent",
        partial(AdaGradClassifier, update="mirror_descent", random_state=0),
    ),
    (
        "AdaGrad FTRL log_loss l1 alpha=1e-4",
        partial(
            AdaGradClassifier,
            update="ftrl_proximal",
            loss="log_loss",
            penalty="l1",
            alpha=1e-4,
            random_state=0,
        ),
    ),
    ("ImplicitFTRL proximal", partial(ImplicitFTRLClassifier, random_state=0)),
    ("ImplicitFTRL log_loss", partial(ImplicitFTRLClassifier, loss="log_loss", random_state=0)),
    ("PairwiseAUC AOGD hinge", partial(PairwiseAUCClassifier, random_state=0)),
    ("RDA+ l1 alpha=1e-3", partial(RDAPlusClassifier, alpha=1e-3, random_state=0)),
    ("SGDClassifier", partial(SGDClassifier, random_state=0)),
    ("SGDClassifier log_loss", partial(SGDClassifier, loss="log_loss", random_state=0)),
]

COLUMNS = ("learner", "accuracy", "log loss", "ROC AUC", "non-zero", "fit (s)", "epochs")

FOOTER = (
    "Scores on the test split. log loss: only for learners with predict_proba;\n"
    "ROC AUC: from decision_function; non-zero: fraction of coef_ entries != 0;\n"
    "fit (s): wall-clock fit time; epochs: n_iter_ (* = stopped by max_iter)."
)


def _int32_indices(X):
    """CSR with int32 index arrays: scikit-learn's SGD kernels refuse int64."""
    if X.indices.dtype == np.int32 and X.indptr.dtype == np.int32:
        return X
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
        shape=X.shape,
    )


def evaluate(name, factory, X_train, y_train, X_test, y_test, max_iter=None):
    """Fit one learner and return its row of the table (strings)."""
    est = factory()
    if max_iter is not None:
        est.set_params(max_iter=max_iter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.perf_counter()
        est.fit(X_train, y_train)
        fit_time = time.perf_counter() - start
    stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)

    scores = est.decision_function(X_test)
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X_test)
        loss = f"{log_loss(y_test, proba, labels=est.classes_):.4f}"
    else:
        loss = "-"
    return (
        name,
        f"{accuracy_score(y_test, est.predict(X_test)):.4f}",
        loss,
        f"{roc_auc_score(y_test, scores):.4f}",
        f"{np.count_nonzero(est.coef_) / est.coef_.size:.3f}",
        f"{fit_time:.3f}",
        f"{est.n_iter_}{'*' if stopped else ''}",
    )


def format_table(rows):
    """Left-align the first column, right-align the others."""
    rows = [COLUMNS, *rows]
    widths = [max(len(row[j]) for row in rows) for j in range(len(COLUMNS))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_regression_table(quiet=False):
    """ImplicitFTRLRegressor vs SGDRegressor on scikit-learn's diabetes data:
    test R^2 at a sensible and at a 1000x too large step-size parameter."""
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import SGDRegressor
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    learners = [
        (f"ImplicitFTRL {update} beta={beta:g}",
         partial(ImplicitFTRLRegressor, update=update, beta=beta, max_iter=20,
                 tol=None, random_state=0))
        for beta in (10.0, 1e4) for update in ("proximal", "linear")
    ] + [
        (f"SGDRegressor eta0={eta0:g}",
         partial(SGDRegressor, eta0=eta0, max_iter=20, tol=None, random_state=0))
        for eta0 in (0.01, 10.0)
    ]
    rows = []
    for name, factory in learners:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            try:  # a too large step makes SGDRegressor raise, linear FTRL overflow
                est = factory().fit(X_train, y_train)
                pred = est.predict(X_test)
            except ValueError:
                pred = np.array([np.nan])
            elapsed = time.perf_counter() - start
        if np.all(np.isfinite(pred)):
            r2 = f"{1 - np.mean((y_test - pred) ** 2) / np.var(y_test):.4g}"
        else:
            r2 = "diverged"
        rows.append((name, r2, f"{elapsed:.3f}"))
    width = max(len(r[0]) for r in rows)
    if not quiet:
        print("\ndiabetes (scikit-learn), squared error, 20 epochs: test R^2")
    print(f"\n{'regressor'.ljust(width)}  {'R^2':>10}  {'fit (s)':>7}")
    for name, r2, elapsed in rows:
        print(f"{name.ljust(width)}  {r2:>10}  {elapsed:>7}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("train", "predict", "evaluate", "info"):
        from ._cli import main as cli_main

        return cli_main(argv)
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_adaprox",
        description="Compare the sklearn_adaprox learners with scikit-learn's "
        "SGDClassifier on the bundled a9a data set.",
        epilog="Streaming command line: python -m sklearn_adaprox "
        "{train,predict,evaluate,info} --help",
    )
    parser.add_argument(
        "--max-iter",
        type=int,
        default=None,
        metavar="N",
        help="override max_iter (maximum epochs) of every learner",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print the table only"
    )
    args = parser.parse_args(argv)
    if args.max_iter is not None and args.max_iter < 1:
        parser.error("--max-iter must be at least 1")

    X_train, y_train, X_test, y_test = load_a9a()
    X_train, X_test = _int32_indices(X_train), _int32_indices(X_test)
    if not args.quiet:
        print(
            f"a9a: train {X_train.shape[0]} x {X_train.shape[1]} "
            f"({X_train.nnz} non-zeros, {np.mean(y_train == 1):.1%} positive), "
            f"test {X_test.shape[0]} x {X_test.shape[1]}\n"
        )
    rows = [
        evaluate(name, factory, X_train, y_train, X_test, y_test, args.max_iter)
        for name, factory in LEARNERS
    ]
    print(format_table(rows))
    if not args.quiet:
        print(f"\n{FOOTER}")
    print_regression_table(args.quiet)  # ImplicitFTRLRegressor on diabetes
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
