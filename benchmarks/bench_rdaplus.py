"""Benchmark: RDA+ against plain RDA, SGDClassifier(l1) and LIBLINEAR.

Part A -- time to optimality, side by side in one run
------------------------------------------------------
For each data set and each ``alpha = f * alpha_max`` (``--fractions``) of
the l1-logistic objective ``(1/N) sum log(1 + exp(-y (<w, x> + b))) +
alpha ||w||_1`` (intercept not penalised; ``alpha_max`` is the smallest
alpha with ``w* = 0``):

* ``RDA+``: ``RDAPlusClassifier(alpha, gamma, tol=1e-4).fit`` -- wall time
  until its ``delta <= 1e-4`` (best of ``--repeat`` runs), the ``delta``
  reached and the non-zeros;
* ``LIBLINEAR``: scikit-learn's ``LogisticRegression(solver="liblinear",
  penalty="l1", C=1 / (N alpha), intercept_scaling=1e4)`` -- liblinear
  penalises its intercept as a feature of value ``intercept_scaling``, so
  the penalty on ``b`` is ``alpha |b| / 1e4``, negligible.  Its own ``tol``
  is not ``delta``: it is run with ``tol = 1e-1, 1e-2, ...`` and the time of
  the loosest ``tol`` whose solution has ``delta <= 1e-4`` is reported (best
  of ``--repeat``; ``random_state=0``: liblinear's coordinate order changes
  its time a lot -- on a9a at 0.05 alpha_max and tol 1e-10, 0.26 s to 14 s
  over four seeds);
* ``RDA``: plain RDA (the Cython kernel of RDA+, no local phase, the same
  ``gamma``), shuffled epochs until RDA+'s time is spent (at least one);
* ``SGD``: ``SGDClassifier(loss="log_loss", penalty="l1", alpha)`` by
  ``partial_fit`` on shuffled copies, epochs until RDA+'s time is spent.

``delta`` is Lee & Wright's optimality measure (their eq. 52), computed the
same way for every solver.  ``same supp``: RDA+'s sign pattern equals
LIBLINEAR's.  Targets: RDA+ within 2x LIBLINEAR's time (``RDA+/LIB <= 2``),
and far below RDA's and SGD's ``delta``.

Data: ionosphere, spambase (standardised), a9a (train split, binary CSR)
from ``../shared/data`` (``--data-dir``) and scikit-learn's digits 6 vs 7
(pixels / 16).

Part B -- Lee & Wright's Table 1 protocol
-----------------------------------------
On glass (window vs non-window), ionosphere, arrhythmia (class 1 vs rest),
spambase and page-blocks (class 1 vs rest), standardised, at three ``lambda``
log-spaced in ``[0.3, 0.9] lambda_max``: the reference solution ``w*`` is
RDA+ run to ``delta <= 1e-9`` (the paper: LPS to 1e-6).  Plain RDA (gamma
``--gamma``) then runs from ``w = 0`` with a fresh random permutation for
every sweep, and the kernel's identification hook records the first
iteration at which the iterate is a "2x superset" of ``w*``'s manifold
(``w*``'s signs on its support, at most twice its non-zeros) and the first at
which it has exactly ``w*``'s sign pattern.  Median and standard deviation
over ``--shuffles`` runs (paper: 100), runs capped at ``--max-epochs``
sweeps (a capped run counts as the cap), and the median ``delta`` at the
moment of identification; the paper's numbers are printed beside ours.  The
paper does not give its ``gamma`` or feature scaling for this table, so the
counts are comparable in shape, not in value.

Part C -- the objective against SGD's defaults on text (``--text``)
-------------------------------------------------------------------
Issue 18 asks ``RDAPlusClassifier()`` for the accuracy of the better of
``SGDClassifier()`` and ``SGDClassifier(loss="log_loss")`` within 0.5
points.  RDA+ returns the minimiser of the l1-logistic objective, so the
question is whether that objective, at any ``alpha``, can.  On the splits
and vectorisers of ``bench_defaults.py`` (``sms_spam`` through
``HashingVectorizer`` and ``TfidfVectorizer``, ``--seeds`` seeds;
``20news`` on request, one seed: its fits take minutes), each row gives the
test accuracy of ``SGDClassifier()`` (hinge), of the l2-logistic
``SGDClassifier(loss="log_loss")``, of ``RDAPlusClassifier()`` with its
``alpha="auto"`` rule at the ratios ``TEXT_RATIOS`` of ``alpha_max`` (the
default is 0.01), and of LIBLINEAR on the same one-vs-rest problems at the
default ratio (the same objective by another solver: the same accuracy
says that the accuracy belongs to the objective), with the fit times and
their ratios to ``SGDClassifier()``'s (the least of 3 fits, as
``bench_defaults.py`` times them).  ``--sets`` also takes the tables of
``bench_defaults.py`` (e.g. ``w8a,reuters``, where RDA+'s default fit is
slow too): LIBLINEAR's time there is what a second solver of the same
objective needs.

How to run (from the repository root, the package built)::

    python benchmarks/bench_rdaplus.py                 # parts A and B
    python benchmarks/bench_rdaplus.py --part A --repeat 3
    python benchmarks/bench_rdaplus.py --part B --shuffles 100
    python benchmarks/bench_rdaplus.py --text          # part C on sms_spam
    python benchmarks/bench_rdaplus.py --text --sets sms_spam,20news
    python benchmarks/bench_rdaplus.py --text --sets sms_spam,w8a,reuters

Only NumPy, SciPy, scikit-learn and sklearn_adaprox are used.  BLAS is
limited to one thread for every solver (the machine is shared).
"""
import argparse
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from scipy.special import expit
from sklearn.datasets import load_digits, load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_adaprox import RDAPlusClassifier
from sklearn_adaprox._dataset import as_row_arrays
from sklearn_adaprox._loss import Log
from sklearn_adaprox._rda_fast import RDAProblem, run_epoch, run_epoch_instrumented

import bench_defaults  # part C: its splits, vectorisers and fit timing
from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_rdaplus")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
TOL = 1e-4
# LIBLINEAR's intercept is a feature of this value, with a penalised weight
LIB_SCALING = 1e4

# Lee & Wright (2012), Table 1: (lambda, 2x superset median (std), optimal
# median (std), delta at identification, nnz of w*)
PAPER_TABLE_1 = {
    "glass": [(0.29, "14 (25)", "20 (27)", 0.068, 1), (0.17, "13 (10)", "116 (428)", 0.063, 2),
              (0.10, "13 (11)", "28392 (6907)", 0.016, 3)],
    "ionosphere": [(0.22, "38 (84)", "122 (95)", 0.015, 2), (0.13, "44 (28)", "30812 (15575)", 0.008, 3),
                   (0.07, "86 (41)", "404 (150)", 0.019, 5)],
    "arrhythmia": [(0.15, "192 (110)", "304 (141)", 0.001, 2), (0.09, "272 (88)", "2036 (1076)", 0.002, 8),
                   (0.05, "447 (195)", "27750 (4590)", 0.001, 13)],
    "spambase": [(0.17, "137 (219)", "357 (325)", 0.006, 1), (0.10, "722 (2495)", "4340 (3097)", 0.004, 8),
                 (0.06, "812 (1247)", "4680 (2209)", 0.004, 17)],
    "page-blocks": [(0.11, "26 (326)", "58 (395)", 0.063, 1), (0.07, "182 (941)", "524 (1233)", 0.040, 3),
                    (0.04, "103 (913)", "461 (1232)", 0.040, 4)],
}


# ----------------------------------------------------------------------
# data
def _svm(data_dir, name, n_features):
    X, y = load_svmlight_file(str(data_dir / name), n_features=n_features,
                              zero_based=False)
    return X, y


def _dense_scaled(X):
    return np.ascontiguousarray(StandardScaler().fit_transform(X.toarray()))


def _int32_csr(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                         shape=X.shape)


def load_part_a(data_dir):
    sets = {}
    X, y = _svm(data_dir, "ionosphere.svm.gz", 34)
    sets["ionosphere"] = (_dense_scaled(X), y)
    X, y = _svm(data_dir, "spambase.svm.gz", 57)
    sets["spambase"] = (_dense_scaled(X), y)
    X, y = _svm(data_dir, "a9a.svm.gz", 123)
    sets["a9a"] = (_int32_csr(X), y)
    d = load_digits()
    keep = np.isin(d.target, [6, 7])
    sets["digits 6v7"] = (np.ascontiguousarray(d.data[keep] / 16.0),
                          np.where(d.target[keep] == 7, 1.0, -1.0))
    return sets


def load_part_b(data_dir):
    sets = {}
    X, y = _svm(data_dir, "glass.svm.gz", 9)
    sets["glass"] = (_dense_scaled(X), np.where(y <= 4, 1.0, -1.0))  # window
    X, y = _svm(data_dir, "ionosphere.svm.gz", 34)
    sets["ionosphere"] = (_dense_scaled(X), y)
    X, y = _svm(data_dir, "arrhythmia.svm.gz", 279)
    sets["arrhythmia"] = (_dense_scaled(X), np.where(y == 1, 1.0, -1.0))
    X, y = _svm(data_dir, "spambase.svm.gz", 57)
    sets["spambase"] = (_dense_scaled(X), y)
    X, y = _svm(data_dir, "page-blocks.svm.gz", 10)
    sets["page-blocks"] = (_dense_scaled(X), np.where(y == 1, 1.0, -1.0))
    return sets


# ----------------------------------------------------------------------
# the objective, written out once for every solver
def gradient(X, yp, w, b):
    dl = -yp * expit(-yp * (X @ w + b)) / X.shape[0]
    return np.asarray(X.T @ dl).ravel(), dl.sum()


def delta(X, yp, w, b, lam):
    g, g_b = gradient(X, yp, w, b)
    r = np.where(w != 0, g + lam * np.sign(w), np.sign(g) * np.maximum(np.abs(g) - lam, 0))
    return np.sqrt((r @ r + g_b**2) / (w.shape[0] + 1))


def violation(X, yp, w, b, lam, b_penalty=0.0):
    """RDA+'s stopping measure: the largest violation of an optimality
    condition, relative to ``lam``.  ``b_penalty``: LIBLINEAR penalises its
    intercept, ``lam |b| / intercept_scaling``; passing that weight measures
    how well it solved its own objective (its intercept condition is then
    ``g_b + b_penalty sign(b) = 0``)."""
    g, g_b = gradient(X, yp, w, b)
    r = np.where(w != 0, g + lam * np.sign(w), np.sign(g) * np.maximum(np.abs(g) - lam, 0))
    r_b = g_b + b_penalty * np.sign(b)
    return max(np.abs(r).max(initial=0.0), abs(r_b)) / lam


def objective(X, yp, w, b, lam):
    return np.logaddexp(0.0, -yp * (X @ w + b)).mean() + lam * np.abs(w).sum()


def alpha_max(X, yp):
    p = np.mean(yp > 0)
    g, _ = gradient(X, yp, np.zeros(X.shape[1]), np.log(p / (1 - p)))
    return np.abs(g).max()


# ----------------------------------------------------------------------
# part A
def time_rdaplus(X, y, alpha, gamma, repeat):
    # one untimed fit first: the first call of a run also pays for imports
    # and page faults (liblinear is timed after RDA+, warm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        RDAPlusClassifier(alpha=alpha, gamma=gamma, tol=TOL).fit(X, y)
    best, model = np.inf, None
    for seed in range(repeat):
        clf = RDAPlusClassifier(alpha=alpha, gamma=gamma, tol=TOL, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            clf.fit(X, y)
            elapsed = time.perf_counter() - t0
        if elapsed < best:
            best, model = elapsed, clf
    return best, model


def liblinear(X, y, alpha, tol, scaling=LIB_SCALING, max_iter=100_000):
    return LogisticRegression(penalty="l1", C=1.0 / (X.shape[0] * alpha),
                              solver="liblinear", tol=tol, intercept_scaling=scaling,
                              max_iter=max_iter, random_state=0)


def time_liblinear(X, y, yp, alpha, repeat, target=TOL, tols=None, budget=np.inf,
                   max_iter=100_000):
    """Time of the loosest liblinear ``tol`` whose solution meets ``target``
    on RDA+'s measure for its own objective (see ``violation``); the
    ``tol`` values are tried from 1e-1 down, and no tighter one once the
    fits took more than ``budget`` seconds in all."""
    tols = 10.0 ** -np.arange(1, 13) if tols is None else tols
    spent = 0.0
    for tol in tols:
        clf = liblinear(X, y, alpha, tol, max_iter=max_iter)
        best = np.inf
        for _ in range(repeat):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                clf.fit(X, y)
                best = min(best, time.perf_counter() - t0)
        spent += best
        v = violation(X, yp, clf.coef_[0], clf.intercept_[0], alpha, alpha / LIB_SCALING)
        if v <= target or spent > budget:
            break
    return best, clf, tol, v


def run_rda_for(X, yp, alpha, gamma, budget, seed=0):
    """Plain RDA (the kernel alone) for shuffled epochs until ``budget`` s."""
    rows = as_row_arrays(X)
    sw = np.ones(X.shape[0])
    u = np.zeros(X.shape[1])
    problem = RDAProblem(loss=Log(), gamma=gamma, l1=alpha, fit_intercept=True,
                         sum_grad=u, intercept_sum_grad=0.0, t=0, last_change=0)
    rng = np.random.RandomState(seed)
    spent, epochs = 0.0, 0
    while epochs == 0 or spent < budget:
        order = rng.permutation(X.shape[0]).astype(np.int64)
        t0 = time.perf_counter()
        run_epoch(problem, *rows, yp, sw, order, 0)
        spent += time.perf_counter() - t0
        epochs += 1
    w = np.zeros(X.shape[1])
    b = problem.weights(w)
    return w, b, epochs, spent


def run_sgd_for(X, y, alpha, budget, seed=0):
    rng = np.random.RandomState(seed)
    copies = []
    for _ in range(4):  # shuffled copies, prepared outside the clock
        p = rng.permutation(X.shape[0])
        copies.append((X[p], y[p]))
    sgd = SGDClassifier(loss="log_loss", penalty="l1", alpha=alpha, random_state=seed)
    spent, epochs = 0.0, 0
    while epochs == 0 or spent < budget:
        Xs, ys = copies[epochs % len(copies)]
        t0 = time.perf_counter()
        sgd.partial_fit(Xs, ys, classes=[-1.0, 1.0])
        spent += time.perf_counter() - t0
        epochs += 1
    return sgd.coef_[0], sgd.intercept_[0], epochs, spent


def part_a(data_dir, fractions, gamma, repeat):
    print("== Part A: time to violation <= 1e-4 (RDA+, LIBLINEAR); RDA and SGD "
          "after RDA+'s time ==\n")
    header = ("data", "a/amax", "RDA+ s", "RDA+ viol", "delta", "nnz", "LIB s",
              "LIB tol", "LIB viol", "delta", "nnz", "RDA+/LIB", "same supp",
              "RDA delta", "nnz", "ep", "SGD delta", "nnz", "ep")
    rows = []
    for name, (X, y) in load_part_a(data_dir).items():
        yp = np.where(y > 0, 1.0, -1.0)
        a_max = alpha_max(X, yp)
        for frac in fractions:
            alpha = frac * a_max
            t_plus, plus = time_rdaplus(X, y, alpha, gamma, repeat)
            w_plus, b_plus = plus.coef_[0], plus.intercept_[0]
            t_lib, lib, lib_tol, v_lib = time_liblinear(X, y, yp, alpha, repeat)
            w, b, ep_rda, _ = run_rda_for(X, yp, alpha, gamma, t_plus)
            ws, bs, ep_sgd, _ = run_sgd_for(X, y, alpha, t_plus)
            rows.append((
                f"{name} ({X.shape[0]}x{X.shape[1]})", f"{frac:g}", f"{t_plus:.4f}",
                f"{violation(X, yp, w_plus, b_plus, alpha):.1e}",
                f"{delta(X, yp, w_plus, b_plus, alpha):.1e}",
                str(np.count_nonzero(w_plus)), f"{t_lib:.4f}", f"{lib_tol:.0e}",
                f"{v_lib:.1e}", f"{delta(X, yp, lib.coef_[0], lib.intercept_[0], alpha):.1e}",
                str(np.count_nonzero(lib.coef_)), f"{t_plus / t_lib:.2f}",
                "yes" if np.array_equal(np.sign(plus.coef_), np.sign(lib.coef_)) else "no",
                f"{delta(X, yp, w, b, alpha):.1e}", str(np.count_nonzero(w)), str(ep_rda),
                f"{delta(X, yp, ws, bs, alpha):.1e}", str(np.count_nonzero(ws)), str(ep_sgd),
            ))
            print(_format([header] + rows[-1:], header_rule=False).splitlines()[-1], flush=True)
    print()
    print(_format([header] + rows))
    ratios = [float(r[11]) for r in rows]
    print(f"\nRDA+/LIBLINEAR time: median {np.median(ratios):.2f}, max {max(ratios):.2f}; "
          f"within 2x in {sum(r <= 2 for r in ratios)}/{len(ratios)} cases.")
    print("(same supp = no: where a9a's solution set is not a point, see "
          "doc/rda_plus.md; compare the violation columns)")
    RESULTS.table("part_a", "Time to an optimality violation <= 1e-4: RDA+ against "
                  "LIBLINEAR; plain RDA and SGD given RDA+'s time", header)
    for row in rows:
        RESULTS.row("part_a", *row)
    return rows


# ----------------------------------------------------------------------
# part B
def identification_runs(X, yp, lam, gamma, target, shuffles, max_epochs):
    rows = as_row_arrays(X)
    sw = np.ones(X.shape[0])
    n = X.shape[0]
    superset, optimal, deltas = [], [], []
    for s in range(shuffles):
        rng = np.random.RandomState(s)
        u = np.zeros(X.shape[1])
        problem = RDAProblem(loss=Log(), gamma=gamma, l1=lam, fit_intercept=True,
                         sum_grad=u, intercept_sum_grad=0.0, t=0, last_change=0)
        hits = np.full(2, -1, dtype=np.int64)
        for _ in range(max_epochs):
            order = rng.permutation(n).astype(np.int64)
            run_epoch_instrumented(problem, *rows, yp, sw, order, 0, None, target, hits)
            if hits[0] >= 0 and hits[1] >= 0:
                break
        cap = max_epochs * n
        superset.append(hits[0] if hits[0] >= 0 else cap)
        optimal.append(hits[1] if hits[1] >= 0 else cap)
        if hits[1] >= 0:  # the kernel stopped at the identification
            w = np.zeros(X.shape[1])
            b = problem.weights(w)
            deltas.append(delta(X, yp, w, b, lam))
    return np.array(superset), np.array(optimal), np.array(deltas)


def part_b(data_dir, gamma, shuffles, max_epochs):
    print(f"== Part B: Lee & Wright Table 1 protocol (plain RDA, gamma={gamma}, "
          f"{shuffles} shuffles, cap {max_epochs} sweeps) ==\n")
    header = ("data (m x n)", "lam/lmax", "lam", "2x superset", "optimal M", "delta",
              "nnz w*", "| paper lam", "2x superset", "optimal M", "delta", "nnz")
    rows = []
    for name, (X, y) in load_part_b(data_dir).items():
        yp = np.where(y > 0, 1.0, -1.0)
        l_max = alpha_max(X, yp)
        for i, frac in enumerate(np.exp(np.linspace(np.log(0.9), np.log(0.3), 3))):
            lam = frac * l_max
            ref = RDAPlusClassifier(alpha=lam, tol=1e-9, random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref.fit(X, y)
            d_ref = delta(X, yp, ref.coef_[0], ref.intercept_[0], lam)
            target = np.sign(ref.coef_[0]).astype(np.int8)
            sup, opt, dl = identification_runs(X, yp, lam, gamma, target, shuffles,
                                               max_epochs)
            cap = max_epochs * X.shape[0]
            capped = int(np.sum(opt >= cap))
            paper = PAPER_TABLE_1[name][i]
            rows.append((
                f"{name} ({X.shape[0]}x{X.shape[1] + 1})", f"{frac:.2f}", f"{lam:.3f}",
                f"{np.median(sup):.0f} ({np.std(sup):.0f})",
                f"{np.median(opt):.0f} ({np.std(opt):.0f})" + (f" [{capped} capped]" if capped else ""),
                f"{np.median(dl):.3f}" if dl.size else "-",
                f"{np.count_nonzero(target)}" + ("" if d_ref <= 1e-6 else f" (d={d_ref:.0e})"),
                f"| {paper[0]:.2f}", paper[1], paper[2], f"{paper[3]:.3f}", str(paper[4]),
            ))
            print(_format([header] + rows[-1:], header_rule=False).splitlines()[-1], flush=True)
    print()
    print(_format([header] + rows))
    RESULTS.table("part_b", "Lee & Wright (2012) Table 1 protocol: samples until the "
                  "support is identified, beside the paper's numbers",
                  list(header[:7]) + ["paper " + h.replace("| paper ", "") for h in header[7:]],
                  notes=f"Plain RDA, gamma={gamma}, {shuffles} shuffles, medians (std); "
                  "the columns after 'paper lam' are the paper's.")
    for row in rows:
        RESULTS.row("part_b", *[c.lstrip("| ") if isinstance(c, str) else c for c in row])
    return rows


# ----------------------------------------------------------------------
# the sweep
SWEEP_FRACTIONS = (0.02, 0.05, 0.1, 0.3, 0.9)
# (file, n_features, kind): "binary" LIBSVM sets as they are (CSR), "table"
# dense tables standardised, "image" pixels scaled to [0, 1] (CSR); the
# multi-class ones as class 1 against the rest.  The .t test splits are the
# same problems and are left out.
SWEEP_SVM = [
    ("a9a.svm.gz", 123, "binary"), ("w8a.svm.gz", 300, "binary"),
    ("ijcnn1.svm.gz", 22, "binary"), ("reuters_lasvm.svm.gz", 8315, "binary"),
    ("german.numer.svm.gz", 24, "table"), ("heart.svm.gz", 13, "table"),
    ("ionosphere.svm.gz", 34, "table"), ("spambase.svm.gz", 57, "table"),
    ("diabetes.svm.gz", 8, "table"), ("glass.svm.gz", 9, "table"),
    ("arrhythmia.svm.gz", 279, "table"), ("page-blocks.svm.gz", 10, "table"),
    ("letter.svm.gz", 16, "table"), ("satimage.svm.gz", 36, "table"),
    ("vehicle.svm.gz", 18, "table"), ("mnist_test10k.svm.gz", 784, "image"),
    ("usps11k.svm.gz", 256, "image"),
]


def hashed_text(data_dir, name):
    """sms_spam (spam against ham) or 20news (alt.atheism against the
    rest), HashingVectorizer(n_features=2**20, ngram_range=(1, 2)); the
    training part (sms_spam: a 75/25 split, random_state=0; 20news: its
    "train" split)."""
    import gzip
    import json
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.model_selection import train_test_split
    with gzip.open(data_dir / name, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f]
    vec = HashingVectorizer(n_features=2**20, ngram_range=(1, 2))
    if name.startswith("sms"):
        y = np.array([1.0 if d["label"] == "spam" else -1.0 for d in docs])
        X = vec.transform([d["text"] for d in docs])
        X, _, y, _ = train_test_split(X, y, test_size=0.25, random_state=0)
        return X, y
    docs = [d for d in docs if d["split"] == "train"]
    y = np.array([1.0 if d["label"] == "alt.atheism" else -1.0 for d in docs])
    return vec.transform([d["text"] for d in docs]), y


def load_sweep(data_dir, names=None):
    """Yield (name, X, y in {-1, +1}) one data set at a time (in the order
    of ``names`` when given)."""
    from sklearn.preprocessing import MaxAbsScaler
    table = SWEEP_SVM
    if names:
        order = {n: i for i, n in enumerate(names)}
        table = sorted((e for e in SWEEP_SVM if e[0][: -len(".svm.gz")] in order),
                       key=lambda e: order[e[0][: -len(".svm.gz")]])
    for file, d, kind in table:
        name = file[: -len(".svm.gz")]
        X, y = _svm(data_dir, file, d)
        yp = np.where(y > 0, 1.0, -1.0) if set(np.unique(y)) <= {-1.0, 1.0} else \
            np.where(y == 1, 1.0, -1.0)
        if kind == "table":
            X = _dense_scaled(X)
        elif kind == "image":
            X = _int32_csr(MaxAbsScaler().fit_transform(X))
        else:
            X = _int32_csr(X)
        yield name, X, yp
    for file in ("sms_spam.jsonl.gz", "20news_bydate.jsonl.gz"):
        name = file.split(".")[0] + " (hashed)"
        if names and file.split(".")[0] not in names:
            continue
        X, yp = hashed_text(data_dir, file)
        yield name, X, yp


def support_agreement(X, yp, w, b, w_ref, alpha):
    """"yes" when the sign patterns agree; "non-unique" when they differ but
    the solution set is not a point: the columns that may be non-zero at an
    optimum (the equicorrelation set E, ``|g_i| = alpha`` to 1e-3 relative)
    and the intercept's constant column are linearly dependent, so a weight
    can move along a flat direction; else "no (k)", k coordinates."""
    if np.array_equal(np.sign(w), np.sign(w_ref)):
        return "yes"
    g, _ = gradient(X, yp, w, b)
    E = np.flatnonzero(np.abs(g) >= alpha * (1 - 1e-3))
    XE = X[:, E]
    XE = XE.toarray() if sp.issparse(XE) else XE
    XE = np.column_stack([XE, np.ones(X.shape[0])])
    if np.linalg.matrix_rank(XE) < XE.shape[1]:
        return "non-unique"
    return f"no ({int(np.sum(np.sign(w) != np.sign(w_ref)))})"


def screened_liblinear(X, yp, w, b, alpha):
    """LIBLINEAR on the columns that may be non-zero at the optimum (RDA+'s
    support and every column with |g_i| >= 0.9 alpha at RDA+'s solution),
    as a reference for problems too wide for it; returns (w, b, violation on
    all the columns, LIBLINEAR's intercept penalty counted), so a screened
    column that mattered shows as a violation."""
    g, _ = gradient(X, yp, w, b)
    columns = np.flatnonzero((np.abs(g) >= 0.9 * alpha) | (w != 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = liblinear(X[:, columns], yp, alpha, tol=1e-7).fit(X[:, columns], yp)
    w_ref = np.zeros(X.shape[1])
    w_ref[columns] = ref.coef_[0]
    b_ref = ref.intercept_[0]
    return w_ref, b_ref, violation(X, yp, w_ref, b_ref, alpha,
                                   b_penalty=alpha / LIB_SCALING)


def sweep(data_dir, names=None, budget=10.0):
    """Every binary problem at every alpha of SWEEP_FRACTIONS: RDA+ with its
    defaults against LIBLINEAR on the same objective."""
    print("== Sweep: RDA+ defaults (tol=1e-4) against LIBLINEAR, alpha = f * "
          "alpha_max ==\n")
    header = ("data (n x d)", "f", "viol", "delta", "epochs", "phases", "nnz",
              "RDA+ s", "LIB s", "RDA+/LIB", "LIB viol", "obj rel diff", "same supp")
    rows = []
    for name, X, yp in load_sweep(data_dir, names):
        a_max = alpha_max(X, yp)
        for frac in SWEEP_FRACTIONS:
            alpha = frac * a_max
            clf = RDAPlusClassifier(alpha=alpha, random_state=0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                clf.fit(X, yp)
                t_plus = time.perf_counter() - t0
            warned = any(issubclass(c.category, ConvergenceWarning) for c in caught)
            w, b = clf.coef_[0], clf.intercept_[0]
            t_lib, _, lib_tol, _ = time_liblinear(X, yp, yp, alpha, 1, budget=budget,
                                                  max_iter=1000)
            # the support reference: liblinear tightened to 1e-6 or until
            # ``budget`` seconds are spent.  Every liblinear fit of the sweep
            # is capped at 1000 of its iterations (beyond, one fit takes
            # minutes: arrhythmia at 0.02 alpha_max, tol 1e-10); a capped
            # timed run counts its time so far, in LIBLINEAR's favour.  Its time is not reported; its tol steps on from
            # where the timed run stopped.
            tols = 10.0 ** -np.arange(-np.log10(lib_tol), 15)
            _, ref, _, v_ref = time_liblinear(X, yp, yp, alpha, 1, target=1e-6,
                                              tols=tols, budget=budget, max_iter=1000)
            w_ref, b_ref = ref.coef_[0], ref.intercept_[0]
            if v_ref > 1e-3:
                # LIBLINEAR did not converge within the budget (hashed text:
                # 2^20 columns).  Solve it on the columns that can be non-zero
                # (RDA+'s support and every |g_i| >= 0.9 alpha at RDA+'s
                # solution), then check its optimality on all the columns.
                w_ref, b_ref, v_ref = screened_liblinear(X, yp, w, b, alpha)
            f_plus = objective(X, yp, w, b, alpha)
            f_ref = objective(X, yp, w_ref, b_ref, alpha)
            rows.append((
                f"{name} ({X.shape[0]}x{X.shape[1]})", f"{frac:g}",
                f"{violation(X, yp, w, b, alpha):.1e}" + (" W" if warned else ""),
                f"{delta(X, yp, w, b, alpha):.1e}", str(clf.n_iter_),
                str(int(clf.n_switches_[0])), str(np.count_nonzero(w)),
                f"{t_plus:.3f}", f"{t_lib:.3f}", f"{t_plus / t_lib:.2f}",
                f"{v_ref:.0e}", f"{(f_plus - f_ref) / f_ref:+.0e}",
                support_agreement(X, yp, w, b, w_ref, alpha),
            ))
            print(_format([header] + rows[-1:], header_rule=False).splitlines()[-1],
                  flush=True)
    print()
    print(_format([header] + rows))
    deltas = [float(r[3]) for r in rows]
    ratios = [float(r[9]) for r in rows]
    same = [r[12] in ("yes", "non-unique") for r in rows]
    print(f"\ndelta <= 1e-4 in {sum(d <= 1e-4 for d in deltas)}/{len(rows)} cases "
          f"(max {max(deltas):.1e}); LIBLINEAR's support (or non-unique) in "
          f"{sum(same)}/{len(rows)}; RDA+/LIBLINEAR time: median "
          f"{np.median(ratios):.2f}, max {max(ratios):.2f}.")
    print("(viol: largest optimality violation / alpha, W: ConvergenceWarning; "
          "LIB viol: the support reference's, on its own objective; obj rel "
          "diff: RDA+'s objective against the reference's)")
    return rows


# ----------------------------------------------------------------------
# part C
# alpha / alpha_max of the "auto" rule tried (rda_plus.AUTO_ALPHA_RATIO is
# the first); smaller ratios keep more columns and cost more Newton work
TEXT_RATIOS = (0.01, 0.003, 0.001, 0.0003)


def _timed_fit(model, X, y):
    """Seconds of ``model.fit(X, y)`` as ``bench_defaults`` times a fit
    (the least of a few, see ``fit_timed``)."""
    with warnings.catch_warnings():
        # scikit-learn >= 1.8 warns of LIBLINEAR's penalty="l1" (deprecated
        # for l1_ratio=1), which still selects the l1 penalty
        warnings.simplefilter("ignore")
        return bench_defaults.fit_timed(model, X, y)


def liblinear_one_vs_rest(X, y, X_test, y_test, alphas):
    """Test accuracy and seconds of LIBLINEAR's l1-logistic regression on
    the binary problems of RDA+'s one-vs-rest (``alphas``: RDA+'s
    ``alpha_``, one per problem)."""
    classes = np.unique(y)
    positives = classes[1:] if classes.shape[0] == 2 else classes
    scores, seconds = [], 0.0
    for alpha, positive in zip(alphas, positives):
        clf = liblinear(X, y == positive, alpha, tol=TOL)
        seconds += _timed_fit(clf, X, y == positive)
        scores.append(clf.decision_function(X_test))
    scores = np.column_stack(scores)
    predicted = (np.where(scores[:, 0] > 0, classes[1], classes[0])
                 if classes.shape[0] == 2 else classes[np.argmax(scores, axis=1)])
    return 100 * np.mean(predicted == y_test), seconds


def part_c(data_dir, sets, seeds):
    """Part C (see the module's docstring)."""
    from sklearn_adaprox import rda_plus
    print("== Part C: test accuracy (%) of the l1-logistic objective at "
          "alpha = r * alpha_max against SGD's defaults, and fit times ==\n")
    header = ("set", "seed", "SGD()", "SGD(log)",
              *[f"RDA+ r={r:g} (nnz)" for r in TEXT_RATIOS], "LIB r=0.01",
              "SGD() s", "RDA+ s", "LIB s", "RDA+/SGD", "LIB/SGD")
    rows = []
    # the text sets, and the tables where RDA+'s default fit is slow
    loaders = {spec[0]: (bench_defaults.text_set, spec) for spec in bench_defaults.TEXT_SETS}
    loaders.update((spec[0], (bench_defaults.table_set, spec))
                   for spec in bench_defaults.TABLE_SETS)
    default_ratio = rda_plus.AUTO_ALPHA_RATIO
    for name in sets:
        load, spec = loaders[name]
        for seed in range(1 if name in bench_defaults.LARGE_SETS else seeds):
            for set_name, X, y, X_test, y_test in load(data_dir, spec, seed):
                sgd = SGDClassifier(random_state=seed)
                t_sgd = _timed_fit(sgd, X, y)
                sgd_log = SGDClassifier(loss="log_loss", random_state=seed).fit(X, y)
                cells, t_plus, alphas = [], None, None
                try:
                    for ratio in TEXT_RATIOS:
                        # the "auto" rule at another ratio: the per-problem
                        # alpha_max of one-vs-rest is the rule's own
                        rda_plus.AUTO_ALPHA_RATIO = ratio
                        plus = RDAPlusClassifier(random_state=seed)
                        seconds = _timed_fit(plus, X, y)
                        if ratio == default_ratio:
                            t_plus, alphas = seconds, plus.alpha_
                        cells.append(f"{100 * plus.score(X_test, y_test):.2f} "
                                     f"({np.count_nonzero(plus.coef_)})")
                finally:
                    rda_plus.AUTO_ALPHA_RATIO = default_ratio
                lib_accuracy, t_lib = liblinear_one_vs_rest(X, y, X_test, y_test, alphas)
                rows.append((set_name, str(seed), f"{100 * sgd.score(X_test, y_test):.2f}",
                             f"{100 * sgd_log.score(X_test, y_test):.2f}", *cells,
                             f"{lib_accuracy:.2f}", f"{t_sgd:.3f}", f"{t_plus:.3f}",
                             f"{t_lib:.3f}", f"{t_plus / t_sgd:.1f}", f"{t_lib / t_sgd:.1f}"))
                print(_format([header] + rows[-1:], header_rule=False).splitlines()[-1],
                      flush=True)
    print()
    print(_format([header] + rows))
    print("\n(RDA+ s and LIB s: the default ratio 0.01; seconds: the least of "
          "3 fits, or one fit of a second or more; BLAS 1 thread)")
    RESULTS.table("part_c", "Test accuracy of the l1-logistic objective (RDA+ at "
                  "alpha = r alpha_max, LIBLINEAR at r = 0.01) against SGD's "
                  "defaults, and the fit times (RDA+ and LIBLINEAR at r = 0.01, "
                  "SGDClassifier()): the least of 3 fits, or one of a second or more",
                  header)
    for row in rows:
        RESULTS.row("part_c", *row)
    return rows


def _format(rows, header_rule=True):
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    out = []
    for i, r in enumerate(rows):
        out.append("  ".join([r[0].ljust(widths[0])] +
                             [c.rjust(w) for c, w in zip(r[1:], widths[1:])]))
        if i == 0 and header_rule:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["A", "B", "both"], default="both")
    parser.add_argument("--sweep", action="store_true",
                        help="run the sweep over every binary problem instead")
    parser.add_argument("--text", action="store_true",
                        help="run part C (the objective on text) instead")
    parser.add_argument("--sets", default="",
                        help="sweep: comma-separated data set names (default all); "
                        "--text: sms_spam, 20news or a table of bench_defaults.py "
                        "(default sms_spam)")
    parser.add_argument("--seeds", type=int, default=3, help="--text: seeds per set")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--fractions", default="0.05,0.3,0.9",
                        help="alpha / alpha_max values of part A")
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shuffles", type=int, default=100)
    parser.add_argument("--max-epochs", type=int, default=300)
    RESULTS.add_argument(parser)
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}, numpy {np.__version__}, scipy "
          f"{scipy.__version__}, scikit-learn {sklearn.__version__}; BLAS 1 thread\n")
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        if args.text:  # its own result file: bench_rdaplus_text.json
            RESULTS.benchmark = "bench_rdaplus_text"
            part_c(args.data_dir, [n for n in args.sets.split(",") if n] or ["sms_spam"],
                   args.seeds)
        elif args.sweep:
            sweep(args.data_dir, [n for n in args.sets.split(",") if n])
        elif args.part in ("A", "both"):
            part_a(args.data_dir, [float(f) for f in args.fractions.split(",")],
                   args.gamma, args.repeat)
            print()
        if not (args.sweep or args.text) and args.part in ("B", "both"):
            part_b(args.data_dir, args.gamma, args.shuffles, args.max_epochs)
    print(f"\ntotal run time {time.perf_counter() - start:.1f} s")
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
