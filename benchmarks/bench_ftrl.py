"""Benchmark: averaged online loss of generalized implicit FTRL against beta.

The experiment of Chen & Orabona (ICML 2023), section 7 (Figures 1-3): one
online pass over a shuffled data set, and the paper's metric, the averaged
online loss ``(1/T) sum_t l_t(w_t)`` (each sample is predicted *before* the
model learns from it), plotted against the one hyper-parameter ``beta``.

What is measured
----------------
* ``ImplicitFTRLClassifier`` (hinge, log_loss; a9a and ijcnn1) and
  ``ImplicitFTRLRegressor`` (absolute loss; abalone, housing and cadata) with
  ``update`` in {linear, truncated, twostep, proximal}, ``G=None`` (estimated
  from the data, see the estimator docs), ``max_iter=1``, ``shuffle=False``
  on a pre-shuffled copy of the data; the value is ``average_loss_``, exact
  per sample.
* Baselines on the same axis, their step-size parameter set to beta:
  ``SGDClassifier`` / ``SGDRegressor`` (absolute loss =
  ``epsilon_insensitive`` with ``epsilon=0``) with ``penalty=None``,
  ``learning_rate="invscaling"``, ``power_t=0.5``, ``eta0=beta`` (step
  ``beta / sqrt(t)``, the step-size scaling of FTRL with fixed G), and for
  regression ``PassiveAggressiveRegressor(C=beta, epsilon=0)`` (PA-I: the
  proximal step of the absolute loss with a constant step C).  scikit-learn
  does not report a progressive loss, so theirs is measured chunk-wise: the
  shuffled data are cut into ``--chunks`` chunks (default 200, but at least
  5 rows a chunk); each chunk is
  scored with the current model, then learnt by ``partial_fit`` (the weights
  are up to one chunk stale, which penalises the baselines a little).  A run that overflows is reported as ``inf``.
* beta grid: one point per decade, 1e-3 .. 1e3 for the classification losses,
  1e-3 .. 1e8 for the absolute loss (as in the paper).
* ``--shuffles`` (default 15, as in the paper) random orders per data set;
  every cell is the mean over the shuffles, and the largest 95% confidence
  half-width (Student t, n - 1 degrees of freedom) of each row is printed.
* Preprocessing, ``--norm``: ``maxabs`` scales every feature to [-1, 1]
  (``MaxAbsScaler``; keeps sparsity); ``l2`` additionally scales every row to
  unit Euclidean norm (``Normalizer``), which is our reading of the paper's
  "we normalize the datasets"; ``both`` (default) runs the two.  The
  intercept (``fit_intercept=True``) is the paper's added constant feature.
  Targets are left as they are.

Targets (issue 6), on every set, over beta in [1e-3, 1e3]:
* "linear": max / min of the averaged loss > 10 (it degrades sharply);
* "truncated" and "proximal": max / min <= 2.5 (they stay near their best);
* "twostep": reported as measured.
The summary prints these ratios twice: over the whole range, and with the
maximum taken over beta in [1, 1e3] only (what a too *large* beta costs; at
small beta every update is equally slow, lambda_1 = G / beta being too large
for one pass to get far from w = 0).

How to run (from the repository root, package built)::

    python benchmarks/bench_ftrl.py                 # full run
    python benchmarks/bench_ftrl.py --quick         # 3 shuffles, 5000 rows max
    python benchmarks/bench_ftrl.py --norm l2 --sets a9a housing

Data: ``../shared/data`` next to the repository (``--data-dir``); missing
files are skipped with a note.  Only NumPy, SciPy, scikit-learn and
sklearn_adaprox are used.
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy import stats
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.preprocessing import MaxAbsScaler, Normalizer

from sklearn_adaprox import ImplicitFTRLClassifier, ImplicitFTRLRegressor

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_ftrl")

try:  # deprecated in scikit-learn 1.8, removed in 1.10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sklearn.linear_model import PassiveAggressiveRegressor
except ImportError:  # pragma: no cover
    PassiveAggressiveRegressor = None

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
UPDATES = ("linear", "truncated", "twostep", "proximal")

# name -> (file, n_features, task, losses)
DATA_SETS = {
    "a9a": ("a9a.svm.gz", 123, "clf", ("hinge", "log_loss")),
    "ijcnn1": ("ijcnn1.svm.gz", 22, "clf", ("hinge", "log_loss")),
    "abalone": ("abalone_scale.svm.gz", 8, "reg", ("absolute_error",)),
    "housing": ("housing.svm.gz", 13, "reg", ("absolute_error",)),
    "cadata": ("cadata_sklearn.svm.gz", 8, "reg", ("absolute_error",)),
}
TARGET_RANGE = (1e-3, 1e3)


def as_int32_csr(X):
    """float64 CSR with int32 indices (scikit-learn's SGD refuses int64)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )


def load(data_dir, name, norm, max_rows, seed=0):
    file, n_features, task, losses = DATA_SETS[name]
    X, y = load_svmlight_file(str(data_dir / file), n_features=n_features,
                              zero_based=False)
    if max_rows and X.shape[0] > max_rows:
        keep = np.random.RandomState(seed).permutation(X.shape[0])[:max_rows]
        X, y = X[np.sort(keep)], y[np.sort(keep)]
    X = MaxAbsScaler().fit_transform(X)
    if norm == "l2":
        X = Normalizer().fit_transform(X)
    return as_int32_csr(X), y, task, losses


def loss_of(loss, y, p):
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * p)
    if loss == "log_loss":
        return np.logaddexp(0.0, -y * p)
    return np.abs(p - y)


def ftrl_averaged_loss(task, loss, update, beta, X, y):
    cls = ImplicitFTRLClassifier if task == "clf" else ImplicitFTRLRegressor
    est = cls(loss=loss, update=update, beta=beta, max_iter=1, tol=None, shuffle=False)
    with np.errstate(all="ignore"):
        est.fit(X, y)
    value = est.average_loss_
    return value if np.isfinite(value) else np.inf


def baseline_estimator(kind, task, loss, beta):
    if kind == "SGD":
        common = dict(penalty=None, learning_rate="invscaling", eta0=beta,
                      power_t=0.5, shuffle=False, random_state=0)
        if task == "clf":
            return SGDClassifier(loss=loss, **common)
        return SGDRegressor(loss="epsilon_insensitive", epsilon=0.0, **common)
    if PassiveAggressiveRegressor is not None:
        return PassiveAggressiveRegressor(C=beta, epsilon=0.0, shuffle=False,
                                          random_state=0)
    return SGDRegressor(loss="epsilon_insensitive", epsilon=0.0, penalty=None,
                        learning_rate="pa1", eta0=beta, shuffle=False)


def baseline_averaged_loss(kind, task, loss, beta, X, y, n_chunks):
    """Chunk-wise progressive loss of a scikit-learn learner (see module doc)."""
    # at least 5 rows a chunk on the small sets
    n_chunks = max(1, min(n_chunks, X.shape[0] // 5))
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(int)
    total = 0.0
    fitted = False
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # PassiveAggressive's deprecation
        est = baseline_estimator(kind, task, loss, beta)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if hi <= lo:
                continue
            Xc, yc = X[lo:hi], y[lo:hi]
            p = (est.decision_function(Xc) if task == "clf" else est.predict(Xc)) \
                if fitted else np.zeros(hi - lo)
            if not np.all(np.isfinite(p)):
                return np.inf
            total += loss_of(loss, yc, p).sum()
            try:
                if task == "clf":
                    est.partial_fit(Xc, yc, classes=np.array([-1.0, 1.0]))
                else:
                    est.partial_fit(Xc, yc)
            except ValueError:  # "Floating-point under-/overflow occurred"
                return np.inf
            fitted = True
    value = total / X.shape[0]
    return value if np.isfinite(value) else np.inf


def run_block(name, loss, task, X, y, betas, args):
    methods = list(UPDATES) + ["SGD"] + (["PA"] if task == "reg" else [])
    values = {m: np.empty((args.shuffles, len(betas))) for m in methods}
    for s in range(args.shuffles):
        order = np.random.RandomState(1000 + s).permutation(X.shape[0])
        Xs, ys = X[order], y[order]
        for j, beta in enumerate(betas):
            for m in methods:
                if m in UPDATES:
                    values[m][s, j] = ftrl_averaged_loss(task, loss, m, beta, Xs, ys)
                else:
                    values[m][s, j] = baseline_averaged_loss(
                        m, task, loss, beta, Xs, ys, args.chunks)
    return values


def fmt(v):
    if not np.isfinite(v):
        return "inf"
    return f"{v:.4g}" if v < 1e5 else f"{v:.2e}"


def print_block(title, betas, values):
    print(f"\n== {title}")
    head = f"{'beta':<10}" + "".join(f"{b:>10.0e}" for b in betas) + f"{'CI95 max':>10}"
    print(head)
    print("-" * len(head))
    t_q = stats.t.ppf(0.975, max(1, next(iter(values.values())).shape[0] - 1))
    for m, v in values.items():
        mean = v.mean(axis=0)
        n = v.shape[0]
        with np.errstate(invalid="ignore"):
            half = t_q * v.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(len(betas))
        finite = np.isfinite(half)
        ci = fmt(half[finite].max()) if finite.any() else "-"
        print(f"{m:<10}" + "".join(f"{fmt(x):>10}" for x in mean) + f"{ci:>10}")


def spread(betas, mean, lo=TARGET_RANGE[0], hi=TARGET_RANGE[1]):
    """max / min of the mean averaged loss over beta in [lo, hi]."""
    sel = (betas >= lo * 0.999) & (betas <= hi * 1.001)
    m = mean[sel]
    return np.inf if not np.all(np.isfinite(m)) else m.max() / m.min()


def large_beta_spread(betas, mean, hi=TARGET_RANGE[1]):
    """max over beta in [1, hi] / min over the whole target range: how much a
    too large beta costs against the best beta (small betas excluded)."""
    sel = (betas >= TARGET_RANGE[0] * 0.999) & (betas <= hi * 1.001)
    big = sel & (betas >= 0.999)
    if not np.all(np.isfinite(mean[sel])):
        return np.inf
    return mean[big].max() / mean[sel].min()


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    parser.add_argument("--sets", nargs="+", default=list(DATA_SETS),
                        choices=list(DATA_SETS))
    parser.add_argument("--norm", choices=("maxabs", "l2", "both"), default="both")
    parser.add_argument("--shuffles", type=int, default=15)
    parser.add_argument("--chunks", type=int, default=200,
                        help="chunks of the scikit-learn baselines' progressive loss")
    parser.add_argument("--max-rows", type=int, default=0,
                        help="subsample larger sets to this many rows (0: all)")
    parser.add_argument("--quick", action="store_true",
                        help="3 shuffles and at most 5000 rows per set")
    RESULTS.add_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.shuffles = min(args.shuffles, 3)
        args.max_rows = args.max_rows or 5000
    if args.shuffles < 1:
        parser.error("--shuffles must be >= 1")
    data_dir = Path(args.data_dir)
    norms = ("maxabs", "l2") if args.norm == "both" else (args.norm,)

    start = time.perf_counter()
    print("Generalized implicit FTRL: averaged online loss (1/T) sum_t l_t(w_t) "
          "against beta, one pass")
    print(f"shuffles {args.shuffles}, baselines' progressive loss over "
          f"{args.chunks} chunks, norms {', '.join(norms)}"
          f"{', max rows ' + str(args.max_rows) if args.max_rows else ''}")
    summary = []
    for norm in norms:
        for name in args.sets:
            file = DATA_SETS[name][0]
            if not (data_dir / file).is_file():
                print(f"\nnote: skipping {name}: {file} not found in {data_dir}")
                continue
            X, y, task, losses = load(data_dir, name, norm, args.max_rows)
            for loss in losses:
                betas = np.logspace(-3, 3 if task == "clf" else 8,
                                    7 if task == "clf" else 12)
                t0 = time.perf_counter()
                values = run_block(name, loss, task, X, y, betas, args)
                title = (f"{name} ({X.shape[0]} x {X.shape[1]}), {loss}, "
                         f"norm={norm}  [{time.perf_counter() - t0:.1f} s]")
                print_block(title, betas, values)
                RESULTS.table("loss", "Averaged online loss against beta (Chen & Orabona "
                              "2023, Figures 1-3)",
                              ["data set", "loss", "norm", "method", "beta",
                               "averaged online loss"],
                              notes=f"Mean over {args.shuffles} shuffles, one pass.")
                for m, v in values.items():
                    for b, x in zip(betas, v.mean(axis=0)):
                        RESULTS.row("loss", name, loss, norm, m, b,
                                    x if np.isfinite(x) else None)
                summary.append((f"{name}/{loss}/{norm}", {
                    m: (spread(betas, v.mean(axis=0)),
                        large_beta_spread(betas, v.mean(axis=0)))
                    for m, v in values.items()}))

    methods = list(UPDATES) + ["SGD", "PA"]
    for which, label_ in ((0, "max/min of the mean averaged loss over beta in [1e-3, 1e3]"),
                          (1, "max over beta in [1, 1e3] / min over [1e-3, 1e3] "
                              "(the cost of a too large beta)")):
        print(f"\n== targets, {label_}")
        head = f"{'set/loss/norm':<34}" + "".join(f"{m:>10}" for m in methods) + "  verdict"
        print(head)
        print("-" * len(head))
        for label, sp_ in summary:
            cells = "".join(
                f"{fmt(sp_[m][which]) if m in sp_ else '-':>10}" for m in methods)
            ok_lin = sp_["linear"][which] > 10
            ok_imp = sp_["truncated"][which] <= 2.5 and sp_["proximal"][which] <= 2.5
            verdict = ("linear>10x " + ("ok" if ok_lin else "MISSED") + ", "
                       "trunc&prox<=2.5x " + ("ok" if ok_imp else "MISSED"))
            print(f"{label:<34}{cells}  {verdict}")
            RESULTS.table(f"targets{which}", label_, ["set/loss/norm"] + methods)
            RESULTS.row(f"targets{which}", label, *[
                sp_[m][which] if m in sp_ and np.isfinite(sp_[m][which]) else None
                for m in methods])
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s")
    RESULTS.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
