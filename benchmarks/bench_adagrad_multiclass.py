"""Benchmark: multi-class AdaGrad-DA against non-adaptive RDA at equal lambda.

The analogue of Table 3 of Duchi, Hazan & Singer (2011), "Adaptive
Subgradient Methods for Online Learning and Stochastic Optimization", JMLR
12:2121-2159: one pass of regularised dual averaging with and without
AdaGrad's per-coordinate proximal term, multi-class hinge loss with the mixed
norm l1/l2 on MNIST, comparing test error and sparsity at the same ``lambda``.
The claim under test: *at equal lambda AdaGrad-RDA is both sparser and more
accurate than non-adaptive RDA*.

Methods (all ``update="dual_averaging"``, one pass, ``fit_intercept=False``)
----------------------------------------------------------------------------
(1) ``AdaGradClassifier("hinge", multi_class="multinomial",
    penalty="l1_l2")``: AdaGrad-RDA with ``lambda sum_j ||W[:, j]||_2`` (a
    feature dropped for all classes at once), the paper's Table-3 setting;
(2) the same with ``matrix="identity"``: ``H = sqrt(t) I`` for every
    coordinate instead of ``delta + sqrt(sum g^2)`` per coordinate, all else
    identical (loss, penalty, threshold ``lambda t``).  This is Xiao's RDA,
    the paper's non-adaptive baseline (with ``fit_intercept=False`` it
    reproduces ``RDAPlusClassifier(local_phase=False, gamma=1/(2 eta))``);
(3) and (4): the same pair with ``penalty="l1_linf"``;
(5) ``AdaGradClassifier("log_loss", penalty="l1")``, one-vs-rest, against
(6) ``RDAPlusClassifier(local_phase=False)``: plain RDA on the very same
    objective, a third like-for-like pair (RDA's ``gamma`` is ``1/(2 eta)``).
(1)-(2), (3)-(4), (5)-(6) are the pairs compared.  scikit-learn's
``LogisticRegression`` (multinomial, l2, C=1, lbfgs, with intercept, all
training rows) is printed as a batch accuracy reference.

Protocol
--------
* Training orders: ``--shuffles`` (default 3) permutations of the training
  part, ``np.random.RandomState(s).permutation(n_train)``.  The last 20 % of
  each permuted training part is held out for validation, the learners are
  fitted on the first 80 % in that order (``shuffle=False``, so the two
  members of a pair see identical sequences and their differences are
  paired).
* Step choice, per method, data set and ``lambda``: every value of the
  method's grid is run on every order and the value of lowest mean
  *validation* error is kept; the test error and the fraction of non-zero
  feature rows (``np.any(coef_ != 0, axis=0).mean()``, features used by any
  class) of those same fitted models are reported, mean +- std over the
  orders.  The test set plays no part in the choice.  The paper selected
  MNIST's step on held-out training examples.  (Choosing by the progressive
  hinge loss is not safe for the non-adaptive learner in general: for large
  steps that loss grows in proportion to the step, so a grid lying wholly in
  that regime picks its smallest value, whatever the error.  On the grids
  used here it would have chosen about the same steps -- measured at
  ``lambda=1e-3`` on MNIST and ``3e-5`` on 20news, l1/l2, the lowest
  progressive loss and the lowest validation error fall on the same step
  for both learners, except 20news identity, 100 against 30 and 100 tied.)
* Step grids, per data set and learner (printed with the results), widened
  until the chosen values sit inside.  The two learners need different
  grids: multiplying X by ``c`` (and ``lambda`` by ``c``) leaves the model
  unchanged if AdaGrad's ``eta`` is divided by ``c`` (``delta=0``) but the
  identity learner's by ``c**2``, and their good steps differ by orders of
  magnitude on the same data.  Typical choices: AdaGrad 0.03 (MNIST),
  0.1-0.3 (20news, dense sets); identity 0.1-0.3 (MNIST), 30-100 (20news),
  0.3-3 (dense sets).  ``*`` marks a choice at an end of its grid; ``=`` one at an end
  where the neighbour has the same validation error (for very small steps
  the predictions stop depending on the step -- the scores only scale with
  it -- so a wider grid would not change anything).  The remaining ``*`` are
  on nearly empty models (l1/l2 at MNIST ``lambda=0.1`` and satimage
  ``0.3``), where the validation error is noisy.
* ``lambda`` grids, per data set, from (nearly) dense to (nearly) empty;
  l1/linf zeroes a row later than l1/l2 at equal ``lambda`` (its threshold
  is on the l1 norm of the row's gradient sums, not the l2 norm).

Why no intercept
----------------
The paper's predictors have none, and an intercept is an always-on feature
of value 1 whose weight the identity learner moves with the same step as
every other coordinate, so its effect on the baseline depends on how the
features are scaled relative to 1.  Measured on MNIST (multinomial hinge, no
penalty, all 8000 training rows, 3 orders): on the stored scale (pixels in
[0, 1]) an intercept changes little (identity ``eta=0.1``: 0.100 test error
with it, 0.102 without; AdaGrad ``eta=0.03``: 0.080 / 0.081).  With the
pixels divided by 255 once more (so in [0, 1/255], the intercept now 255
times larger than any pixel) the identity learner with an intercept predicts
a single class (test error 0.901 at ``eta=6502.5`` and at ``1e4``, both
3 orders), without one it gets 0.102 / 0.100; AdaGrad, which scales each
coordinate separately, keeps all ten classes (0.155 with, 0.161 without,
at the same ``eta=0.03``).
Without intercept the identity learner is exactly invariant to rescaling X
by ``c`` with ``eta -> eta / c^2`` (0.1 on [0, 1] and 6502.5 on [0, 1/255]
give identical models).  Leaving the intercept out keeps the pair like for
like whatever the scaling.

Data (``--data-dir``, default ``../shared/data`` next to the repository)
------------------------------------------------------------------------
* ``mnist``: ``mnist_test10k.svm.gz`` (the official 10k MNIST test images,
  stored as pixels / 255, used as stored -- do *not* divide again), first
  8000 rows for training (6400 fit + 1600 validation per order), last 2000
  for test, 784 features, CSR.  Border pixels are rarely lit: feature
  frequencies vary a lot, the setting where adaptivity should matter.
* ``20news``: ``20news_bydate.jsonl.gz``, the "bydate" train split (11314
  posts) for training and the test split (7532) for test,
  ``TfidfVectorizer(min_df=3, sublinear_tf=True)`` fitted on the training
  split (38871 features, ~148 non-zeros a row, document frequencies
  Zipf-like: median 7 documents, 1 % of the words in more than 570), 20
  classes -- the text setting of the paper.  Not subsampled: a pass of
  l1/l2 costs ~0.6 s there, l1/linf ~0.55 s.  Its test split is later in
  time than the training split: test errors (~0.16) are about twice the
  validation errors (~0.08).
* ``digits`` (scikit-learn, pixels / 16, stratified 2/3 split, seed 0);
  ``letter`` (first 16000 rows train, last 4000 test), ``satimage`` (first
  4435 / last 2000), ``vehicle`` (stratified 80/20 split, seed 0): dense, few
  features, the UCI sets standardised with ``StandardScaler`` fitted on the
  training part (their raw features have large offsets; without intercept
  centring matters even more).
A missing file is skipped with a note.

Verdicts
--------
Per data set, ``lambda`` and pair: mean test errors, their paired
difference (mean +- std over the orders), non-zero row fractions, and
``HOLDS`` (lower error and fewer rows), ``HOLDS, sparsity tie`` (lower
error, as many rows), ``FAILS`` with the reason and the margin, or ``both
empty``.  An error difference smaller than twice its standard error is
marked ``(within noise)`` (``~`` in the summary); a row difference of less
than half a feature (mean over the orders) is a tie.  The summary counts the
verdicts per pair, with the largest margins, and a per-data-set table.

Results of the default run (3 orders; see the output for all numbers)
---------------------------------------------------------------------
* Accuracy: AdaGrad is more accurate where feature frequencies vary.
  MNIST, ``lambda`` <= 1e-3, all three pairs: 0.081-0.091 against
  0.092-0.106 test error (0.9-1.9 points, beyond noise in 5 of 6 cases),
  0.2-1.4 points at 3e-3 to 3e-2; 20news, ``lambda`` >= 3e-5, hinge pairs:
  1.0-2.5 points lower, beyond noise in all 6 cases (tied at 1e-5).  On
  digits the hinge pairs lead by 0.5-3.6 points for ``lambda`` <= 1e-2,
  beyond noise in 2 of 6 cases (600 test digits); on letter, satimage and
  vehicle the pairs tie within noise.  Neither hinge
  pair is ever less accurate beyond noise; the OvR log pair is in 4 of 29
  cases, by 0.2-0.3 points, and by 1.8 on vehicle (170 test rows).
* Sparsity at equal ``lambda`` does *not* follow the paper: per pair,
  AdaGrad is sparser in 7-8 of the 29 cases, denser in 7-11 and tied in
  the rest; on 20news it is denser in 8 of 12 (l1/linf at
  ``lambda=3e-5``: 0.886 against 0.736 of the words).  The threshold
  ``lambda t`` is the same for both learners; what differs are the gradient
  sums it is compared with, and those shrink as the step grows (fewer margin
  violations): on 20news, l1/linf ``lambda=3e-5``, one order, AdaGrad keeps
  0.886 of the rows at ``eta=0.1`` and 0.767 at 0.3, the identity learner
  0.858 at ``eta=30`` and 0.734 at 100.  Which learner is sparser at
  equal ``lambda`` therefore mostly reflects the two chosen steps.  The
  sparsity-accuracy *curves* (``examples/plot_adagrad_multiclass_sparsity.py``)
  are the fairer comparison of sparsity.
* Counts over the 29 (data set, ``lambda``) cases per pair are printed at
  the end of the output.

How to run (from the repository root, the package built)::

    python benchmarks/bench_adagrad_multiclass.py                      # ~6 min
    python benchmarks/bench_adagrad_multiclass.py --quick              # vehicle + digits, ~7 s
    python benchmarks/bench_adagrad_multiclass.py --datasets mnist,20news --shuffles 5
    python benchmarks/bench_adagrad_multiclass.py --datasets digits --show-grid

Measured on the shared 2-core machine this was written on (one core used,
another job on the second core part of the time): the default run took
354 s and 361 s of wall time in two runs (MNIST ~103 s, 20news ~194 s,
letter ~42 s, satimage ~10 s, digits ~7 s, vehicle 2 s); ``--quick`` 3.8 s
(7 s with interpreter start-up and imports).  A pass costs ~0.6 s on
20news (20 classes, 9051 rows), 0.07-0.19 s on MNIST; the l1/l2 AdaGrad
pass is the most expensive (bisection per touched row; the identity
learner's rows have equal ``H`` entries and a closed form).

Only NumPy, SciPy, scikit-learn and sklearn_adaprox are used; BLAS is limited
to one thread (the machine is shared).
"""
import argparse
import gzip
import json
import platform
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_digits, load_svmlight_file
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_adaprox import AdaGradClassifier, RDAPlusClassifier

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_adagrad_multiclass")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"

VALIDATION_FRACTION = 0.2

# ----------------------------------------------------------------------
# methods: (key, label, step name, grid kind, factory(step, lambda))
def _adagrad(loss, penalty, multi_class, matrix):
    def make(step, lam):
        return AdaGradClassifier(
            loss, penalty=penalty, multi_class=multi_class, alpha=lam, eta=step,
            matrix=matrix, update="dual_averaging", fit_intercept=False,
            max_iter=1, tol=None, shuffle=False,
        )
    return make


def _rda(step, lam):
    return RDAPlusClassifier(
        alpha=lam, gamma=step, local_phase=False, fit_intercept=False,
        max_iter=1, tol=None, shuffle=False,
    )


# grid kinds: "ada" AdaGrad's eta (multinomial hinge), "id" the identity
# baseline's eta, "ovr" AdaGrad's eta for one-vs-rest log loss, "rda" RDA's gamma
METHODS = (
    ("1", "AdaGrad-DA l1/l2 mult. hinge", "eta", "ada",
     _adagrad("hinge", "l1_l2", "multinomial", "diagonal")),
    ("2", "RDA l1/l2 mult. hinge (identity)", "eta", "id",
     _adagrad("hinge", "l1_l2", "multinomial", "identity")),
    ("3", "AdaGrad-DA l1/linf mult. hinge", "eta", "ada",
     _adagrad("hinge", "l1_linf", "multinomial", "diagonal")),
    ("4", "RDA l1/linf mult. hinge (identity)", "eta", "id",
     _adagrad("hinge", "l1_linf", "multinomial", "identity")),
    ("5", "AdaGrad-DA l1 OvR log", "eta", "ovr",
     _adagrad("log_loss", "l1", "ovr", "diagonal")),
    ("6", "RDAPlus l1 OvR log (no local ph.)", "gamma", "rda", _rda),
)
PAIRS = (("1", "2"), ("3", "4"), ("5", "6"))

# per data set: lambda grid and step grids (see the module docstring)
_DENSE_GRIDS = {
    "ada": (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
    "id": (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
    "ovr": (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
    "rda": (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0),
}
CONFIG = {
    "mnist": {
        "lambdas": (1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
        "grids": {"ada": (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0),
                  "id": (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0),
                  "ovr": (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0),
                  "rda": (0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)},
    },
    "20news": {
        "lambdas": (1e-5, 3e-5, 1e-4, 3e-4),
        "grids": {"ada": (0.03, 0.1, 0.3, 1.0, 3.0),
                  "id": (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0),
                  "ovr": (0.1, 0.3, 1.0, 3.0, 10.0),
                  "rda": (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)},
    },
    "digits": {"lambdas": (1e-3, 3e-3, 1e-2, 3e-2, 1e-1), "grids": _DENSE_GRIDS},
    "satimage": {"lambdas": (1e-3, 1e-2, 3e-2, 1e-1, 3e-1), "grids": _DENSE_GRIDS},
    "letter": {"lambdas": (1e-3, 1e-2, 3e-2, 1e-1), "grids": _DENSE_GRIDS},
    "vehicle": {"lambdas": (1e-3, 1e-2, 3e-2, 1e-1, 3e-1), "grids": _DENSE_GRIDS},
}
DATASETS = ("mnist", "20news", "digits", "satimage", "letter", "vehicle")
QUICK_DATASETS = ("vehicle", "digits")


# ----------------------------------------------------------------------
# data
def _svm(data_dir, name, n_features=None):
    X, y = load_svmlight_file(str(data_dir / f"{name}.svm.gz"), n_features=n_features)
    return X, y


def data_file(name, data_dir):
    if name == "digits":
        return None
    if name == "20news":
        return data_dir / "20news_bydate.jsonl.gz"
    if name == "mnist":
        return data_dir / "mnist_test10k.svm.gz"
    return data_dir / f"{name}.svm.gz"


def load_dataset(name, data_dir):
    """(X_train, y_train, X_test, y_test, note on split and scaling)."""
    if name == "digits":
        d = load_digits()
        X_tr, X_te, y_tr, y_te = train_test_split(
            d.data / 16.0, d.target, train_size=2 / 3, stratify=d.target, random_state=0
        )
        return X_tr, y_tr, X_te, y_te, "stratified 2/3 split, pixels / 16"
    if name == "mnist":
        # stored as pixels / 255 already: in [0, 1], used as they are
        X, y = _svm(data_dir, "mnist_test10k", n_features=784)
        X = X.tocsr()
        return (X[:8000], y[:8000], X[8000:], y[8000:],
                "MNIST t10k: first 8000 / last 2000, pixels / 255 as stored, CSR")
    if name == "20news":
        with gzip.open(data_file(name, data_dir), "rt", encoding="utf-8") as f:
            docs = [json.loads(line) for line in f]
        train = [d for d in docs if d["split"] == "train"]
        test = [d for d in docs if d["split"] == "test"]
        vec = TfidfVectorizer(min_df=3, sublinear_tf=True)
        X_tr = vec.fit_transform([d["text"] for d in train])
        X_te = vec.transform([d["text"] for d in test])
        y_tr = np.array([d["label"] for d in train])
        y_te = np.array([d["label"] for d in test])
        note = ("bydate split, TfidfVectorizer(min_df=3, sublinear_tf=True) "
                "fitted on train, CSR")
        return X_tr, y_tr, X_te, y_te, note
    X, y = _svm(data_dir, name)
    X = X.toarray()
    if name == "vehicle":
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.2, stratify=y, random_state=0
        )
        note = "stratified 80/20 split, StandardScaler"
    else:
        n_train = {"letter": 16000, "satimage": 4435}[name]
        X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        note = "source split, StandardScaler"
    scaler = StandardScaler().fit(X_tr)
    X_tr = np.ascontiguousarray(scaler.transform(X_tr))
    X_te = np.ascontiguousarray(scaler.transform(X_te))
    return X_tr, y_tr, X_te, y_te, note


def _rows(X, idx):
    out = X[idx]
    return out if sp.issparse(out) else np.ascontiguousarray(out)


# ----------------------------------------------------------------------
# runs
def run_method(factory, grid, lam, orders, X_te, y_te):
    """Fit every grid value on the fitting part of every order; keep the value
    of lowest mean validation error.  Returns, for that value, per-order arrays
    of validation error, test error and non-zero row fraction, plus the mean
    validation error of every grid value, the fit time and number of fits."""
    per_step = []
    fit_time, n_fits = 0.0, 0
    for step in grid:
        val, err, rows = [], [], []
        for X_fit, y_fit, X_val, y_val in orders:
            clf = factory(step, lam)
            start = time.perf_counter()
            clf.fit(X_fit, y_fit)
            fit_time += time.perf_counter() - start
            n_fits += 1
            if not np.all(np.isfinite(clf.coef_)):
                val.append(np.inf)
                err.append(np.nan)
                rows.append(np.nan)
                continue
            val.append(1.0 - clf.score(X_val, y_val))
            err.append(1.0 - clf.score(X_te, y_te))
            rows.append(np.any(clf.coef_ != 0, axis=0).mean())
        per_step.append({"step": step, "val": np.array(val), "err": np.array(err),
                         "rows": np.array(rows)})
    mean_val = [np.mean(r["val"]) for r in per_step]
    best = dict(per_step[int(np.argmin(mean_val))])  # first of equal errors
    best["grid_val"] = mean_val
    best["fit_time"], best["n_fits"] = fit_time, n_fits
    return best


def _edge_mark(grid, r):
    """'*' when the chosen step is at an end of its grid (the grid may be too
    narrow), '=' when it is but its neighbour has the very same mean
    validation error: for tiny steps every learner here (and for huge steps
    the unpenalised identity hinge) predicts like its limit, the scores only
    scale with the step, so a wider grid would not change the choice."""
    i = grid.index(r["step"])
    if 0 < i < len(grid) - 1:
        return " "
    j = 1 if i == 0 else len(grid) - 2
    return "=" if r["grid_val"][j] == r["grid_val"][i] else "*"


def batch_reference(X_tr, y_tr, X_te, y_te):
    clf = LogisticRegression(max_iter=1000)
    start = time.perf_counter()
    clf.fit(X_tr, y_tr)
    return 1.0 - clf.score(X_te, y_te), time.perf_counter() - start


def _pm(a, digits=3):
    return f"{np.mean(a):.{digits}f} +- {np.std(a):.{digits}f}"


def run_dataset(name, data_dir, lambdas, n_shuffles, show_grid=False):
    X_tr, y_tr, X_te, y_te, note = load_dataset(name, data_dir)
    grids = CONFIG[name]["grids"]
    n_train = X_tr.shape[0]
    n_fit = n_train - round(VALIDATION_FRACTION * n_train)
    n_classes = np.unique(y_tr).size
    print(f"== {name}: {n_train} train ({n_fit} fit + {n_train - n_fit} validation) / "
          f"{X_te.shape[0]} test ({note}), {X_tr.shape[1]} features, "
          f"{n_classes} classes, {n_shuffles} training orders ==")
    print("step grids: " + "; ".join(f"{k} {v}" for k, v in grids.items()))
    orders = []
    for s in range(n_shuffles):
        perm = np.random.RandomState(s).permutation(n_train)
        fit, val = perm[:n_fit], perm[n_fit:]
        orders.append((_rows(X_tr, fit), y_tr[fit], _rows(X_tr, val), y_tr[val]))

    lr_err, lr_time = batch_reference(X_tr, y_tr, X_te, y_te)
    print(f"batch reference: LogisticRegression (multinomial, l2, C=1, lbfgs, "
          f"intercept, all {n_train} training rows): test error {lr_err:.3f}")
    header = (f"{'lambda':>7}  {'method':<40} {'step':>12}  {'val. error':>10}  "
              f"{'test error':>15}  {'non-zero rows':>13}")
    print(header)
    print("-" * len(header))
    results = {}
    times = {key: [0.0, 0] for key, *_ in METHODS}
    for lam in lambdas:
        for key, label, step_name, kind, factory in METHODS:
            grid = grids[kind]
            r = run_method(factory, grid, lam, orders, X_te, y_te)
            results[lam, key] = r
            times[key][0] += r["fit_time"]
            times[key][1] += r["n_fits"]
            edge = _edge_mark(grid, r)
            print(f"{lam:>7.0e}  ({key}) {label:<36} {step_name}={r['step']:<6g}{edge}"
                  f"  {np.mean(r['val']):>10.3f}  {_pm(r['err']):>15}"
                  f"  {_pm(r['rows'], 3):>13}", flush=True)
            RESULTS.table(
                "errors", "One pass at equal lambda: AdaGrad against its non-adaptive "
                "twin (Duchi, Hazan & Singer 2011, Table 3 setting)",
                ["data set", "lambda", "method", "step", "validation error",
                 "test error", "test error std", "non-zero rows", "non-zero rows std"],
                notes="Mean and std over the training orders; the step of each method "
                "and lambda is chosen by the validation error.")
            RESULTS.row("errors", name, lam, f"({key}) {label}", f"{step_name}={r['step']:g}",
                        np.mean(r["val"]), np.mean(r["err"]), np.std(r["err"]),
                        np.mean(r["rows"]), np.std(r["rows"]))
            if show_grid:
                print("          validation error per step: " + "  ".join(
                    f"{s:g}:{v:.3f}" for s, v in zip(grid, r["grid_val"])))
        print()
    per_fit = "  ".join(f"({k}) {t / max(n, 1):.2f}" for k, (t, n) in times.items())
    print(f"seconds per one-pass fit: {per_fit};  LogisticRegression {lr_time:.2f}")
    print("(* : chosen step at the edge of its grid; = : at the edge, but the "
          "validation error is flat there, the limit of its grid side reached)\n")
    return results, X_tr.shape[1]


# ----------------------------------------------------------------------
# verdict
def compare(ada, base, n_features):
    """Verdict of the Table-3 claim for one AdaGrad result against its
    non-adaptive twin's."""
    diff = ada["err"] - base["err"]  # paired: same training orders
    sem = np.std(diff, ddof=1) / np.sqrt(diff.size) if diff.size > 1 else np.inf
    noise = " (within noise)" if abs(diff.mean()) <= 2 * sem else ""
    rows_a, rows_b = ada["rows"].mean(), base["rows"].mean()
    # mean number of features used; less than half a feature apart is a tie
    # (the fractions are averages of multiples of 1 / n_features)
    extra = (rows_a - rows_b) * n_features
    text = (f"error {ada['err'].mean():.3f} vs {base['err'].mean():.3f} "
            f"(diff {diff.mean():+.3f} +- {np.std(diff):.3f}{noise}), "
            f"rows {rows_a:.3f} vs {rows_b:.3f}")
    if rows_a == 0 and rows_b == 0:
        return text, "both empty"
    problems = []
    if diff.mean() >= 0:
        problems.append(f"less accurate by {diff.mean():.3f}{noise}")
    if extra >= 0.5:
        problems.append(f"denser by {rows_a - rows_b:.3f} ({extra:.1f} features)")
    if problems:
        return text, "FAILS: " + ", ".join(problems)
    if extra > -0.5:
        return text, "HOLDS, sparsity tie" + (" (accuracy within noise)" if noise else "")
    return text, "HOLDS" + (" (accuracy within noise)" if noise else "")


def _kind(verdict):
    """Tally class: HOLDS / HOLDS, sparsity tie / FAILS: less accurate /
    FAILS: denser / FAILS: both / both empty; '~' when the error difference
    is within noise."""
    if verdict.startswith("FAILS"):
        acc, dense = "less accurate" in verdict, "denser" in verdict
        kind = ("FAILS: both" if acc and dense else
                "FAILS: less accurate" if acc else "FAILS: denser")
    else:
        kind = verdict.split(" (")[0]
    return kind + (" ~" if "within noise" in verdict else "")


def print_verdicts(all_results, n_features, lambdas_of):
    print("== Table-3 target: at equal lambda AdaGrad is sparser and more accurate "
          "than non-adaptive RDA ==")
    print("pairs (same loss, penalty, threshold lambda t; only the proximal matrix "
          "differs): (1) vs (2) l1/l2, (3) vs (4) l1/linf, (5) vs (6) l1 OvR log\n")
    cases = {}
    for name, results in all_results.items():
        for lam in lambdas_of[name]:
            for a, b in PAIRS:
                ada, base = results[lam, a], results[lam, b]
                text, verdict = compare(ada, base, n_features[name])
                rows = ada["rows"].mean() - base["rows"].mean()
                cases.setdefault((a, b), []).append({
                    "kind": _kind(verdict), "case": f"{name} {lam:g}",
                    "diff": np.mean(ada["err"] - base["err"]),
                    "noise": "within noise" in text,
                    "rows": rows, "extra": rows * n_features[name],
                })
                print(f"{name:<8} lambda={lam:<6g} ({a}) vs ({b}): {text} -> {verdict}")
        print()
    print("summary per pair (~ : error difference within twice its standard error):")
    for (a, b), cs in cases.items():
        kinds = [c["kind"] for c in cs]
        parts = []
        for v in ("HOLDS", "HOLDS, sparsity tie", "FAILS: less accurate",
                  "FAILS: denser", "FAILS: both", "both empty"):
            n, k = kinds.count(v) + kinds.count(v + " ~"), kinds.count(v + " ~")
            if n:
                parts.append(f"{v} {n}" + (f" ({k} ~)" if k else ""))
        print(f"  ({a}) vs ({b}), {len(cs)} cases: " + "; ".join(parts))
        better = [c for c in cs if c["diff"] < 0 and not c["noise"]]
        worse = [c for c in cs if c["diff"] >= 0 and not c["noise"]]
        line = (f"      error: AdaGrad lower in {len(better)}, higher in {len(worse)} "
                f"beyond noise, {len(cs) - len(better) - len(worse)} within noise")
        if better:
            c = min(better, key=lambda c: c["diff"])
            line += f"; lower by up to {-c['diff']:.3f} ({c['case']})"
        if worse:
            c = max(worse, key=lambda c: c["diff"])
            line += f"; higher by up to {c['diff']:.3f} ({c['case']})"
        print(line)
        sparser = [c for c in cs if c["extra"] <= -0.5]
        denser = [c for c in cs if c["extra"] >= 0.5]
        line = (f"      rows: AdaGrad sparser in {len(sparser)}, denser in {len(denser)}, "
                f"tie (< half a feature apart) in {len(cs) - len(sparser) - len(denser)}")
        if sparser:
            c = min(sparser, key=lambda c: c["rows"])
            line += f"; row fraction lower by up to {-c['rows']:.3f} ({c['case']})"
        if denser:
            c = max(denser, key=lambda c: c["rows"])
            line += (", " if sparser else "; row fraction ") + (
                f"higher by up to {c['rows']:.3f} ({c['case']})")
        print(line)
    print("\nper data set, AdaGrad against its twin over the lambdas: error lower / "
          "higher beyond noise, rows sparser / denser")
    print(f"{'':<9}" + "".join(f"{f'({a}) vs ({b})':>20}" for a, b in cases))
    for name in all_results:
        cells = []
        for all_cs in cases.values():
            cs = [c for c in all_cs if c["case"].split()[0] == name]
            lower = sum(c["diff"] < 0 and not c["noise"] for c in cs)
            higher = sum(c["diff"] >= 0 and not c["noise"] for c in cs)
            sparser = sum(c["extra"] <= -0.5 for c in cs)
            denser = sum(c["extra"] >= 0.5 for c in cs)
            cells.append(f"{lower}/{higher}, {sparser}/{denser} of {len(cs)}")
        print(f"{name:<9}" + "".join(f"{c:>20}" for c in cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--datasets", default=None,
                        help=f"comma-separated subset of {','.join(DATASETS)}")
    parser.add_argument("--shuffles", type=int, default=None,
                        help="training orders per setting (default 3, --quick 2)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: digits, 3 lambdas, 2 orders")
    parser.add_argument("--show-grid", action="store_true",
                        help="print the mean validation error of every step value")
    RESULTS.add_argument(parser)
    args = parser.parse_args(argv)
    datasets = (args.datasets.split(",") if args.datasets
                else QUICK_DATASETS if args.quick else DATASETS)
    shuffles = args.shuffles or (2 if args.quick else 3)
    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy "
          f"{scipy.__version__}, scikit-learn {sklearn.__version__}; BLAS 1 thread")
    print(f"one pass, no intercept; step chosen per method and lambda by the lowest "
          f"mean validation error (last {VALIDATION_FRACTION:.0%} of each shuffled "
          f"training part)\n")
    start = time.perf_counter()
    all_results, n_features, lambdas_of = {}, {}, {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name in datasets:
            if name not in CONFIG:
                raise SystemExit(f"unknown data set {name!r}; choose from {DATASETS}")
            path = data_file(name, args.data_dir)
            if path is not None and not path.exists():
                print(f"-- {name}: {path} not found, skipped\n")
                continue
            lambdas = CONFIG[name]["lambdas"]
            if args.quick:
                lambdas = lambdas[::2]
            lambdas_of[name] = lambdas
            t0 = time.perf_counter()
            all_results[name], n_features[name] = run_dataset(
                name, args.data_dir, lambdas, shuffles, args.show_grid)
            print(f"({name}: {time.perf_counter() - t0:.0f} s)\n")
    if all_results:
        print_verdicts(all_results, n_features, lambdas_of)
    print(f"\ntotal run time {time.perf_counter() - start:.1f} s")
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
