"""Benchmark: the cost of partial_fit per row, by chunk size and width.

Text-like rows (about 50 non-zeros each, Zipf-distributed columns hashed
over the width) are learnt in chunks of 1, 10, 100 and 1000 rows by
``AdaGradClassifier`` (default: dual averaging, l2, hinge) and by
``SGDClassifier`` (hinge, l2), both through ``partial_fit`` on CSR chunks,
and row by row by river's ``LogisticRegression.learn_one`` on dicts (when
river is installed: ``pip install river``; it has no chunks, so its figure
is repeated in every row of the table).  A model is first fitted on 1000
rows so that every contender continues a fitted state, then timed over a
budget of about ``--budget`` seconds per cell.  The cost of a call that
does not depend on the width shows as a per-row time that stays flat from
2**16 to 2**24 columns.  Every chunk here is at most 1,024 plain CSR rows,
so ``AdaGradClassifier``'s calls take its short path (``_short_calls``).
``PairwiseAUCClassifier`` (defaults) is timed the same way beside its SGD
twin, ``SGDClassifier(loss="log_loss")`` (its calls take a short path of
their own: its weights move by their momentum alone), and so are the implicit FTRL
estimators (defaults): ``ImplicitFTRLClassifier`` (hinge) beside
``SGDClassifier``, ``ImplicitFTRLRegressor`` (squared error, the labels as
targets) beside ``SGDRegressor``; their calls take the short path too once
the first call has fixed G.  ``AdaGradClassifier(multi_class="multinomial")``
(two classes here) shows that its state, updated in place, makes a call
cost what its rows cost too; its calls take a short path of their own.
``RDAPlusClassifier(local_phase=False)`` (dual averaging with l1, log loss)
goes through the general path: its calls cost their rows and the iterate's
support (a call changes coef_ there alone); with the local phase (the
default) a call also measures the iterate on its reservoir of up to 10,000
rows (on these rows of random labels the sign pattern never holds for
``tau`` steps, and the phase does not run), narrowed to the call's columns.
A third table times one-row calls of ``RDAPlusClassifier(alpha=0.01,
tau=5)`` on a stream whose support settles (rows over 60 columns spread
over the width, labels of a linear model, 3,000 rows fitted first): there
the local phase solves the l1 problem on the reservoir at most calls.

A second table scores one row at a time: ``decision_function`` of each
model (the multinomial and pairwise AUC ones included) on a one-row CSR matrix against the plain products a user could
write instead (scipy's ``row @ w`` and NumPy's ``data @ w[indices]``) and
river's ``predict_proba_one``.

Printed: microseconds per row, for each width and chunk size, beside the
floor of a call: the product of the chunk with a weight vector (``X @ w``,
one read of each non-zero and of its weight).
Run: ``python benchmarks/bench_partial_fit.py [--budget 0.5] [--json PATH]``.
"""
import argparse
import gc
import os
import time

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier, SGDRegressor

from _results import Results
from sklearn_adaprox import (AdaGradClassifier, ImplicitFTRLClassifier, ImplicitFTRLRegressor,
                             PairwiseAUCClassifier, RDAPlusClassifier)

RESULTS = Results("bench_partial_fit")

WIDTHS = (2**16, 2**20, 2**24)
CHUNKS = (1, 10, 100, 1000)
NNZ = 50


def text_like_rows(n_rows, width, seed=0):
    rng = np.random.RandomState(seed)
    rows, cols = [], []
    for i in range(n_rows):
        words = np.unique((rng.zipf(1.3, NNZ) * 2654435761) % width)
        rows.append(np.full(words.shape[0], i))
        cols.append(words)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n_rows, width))
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    y = np.where(rng.rand(n_rows) < 0.5, 1, -1)
    return X, y


def settling_rows(n_rows, width, used=60, seed=0):
    """Rows of about 12 non-zeros over ``used`` columns spread over the
    width, labels a linear model's: dual averaging's sign pattern settles."""
    rng = np.random.RandomState(seed)
    columns = np.sort(rng.choice(width, used, replace=False))
    values = rng.standard_normal((n_rows, used)) * (rng.rand(n_rows, used) < 0.2)
    rows, at = np.nonzero(values)
    X = sp.csr_matrix((values[rows, at], (rows, columns[at])), shape=(n_rows, width))
    return X, (values @ rng.standard_normal(used) > 0).astype(int)


def per_row(learn, chunks, budget):
    """Microseconds per row of ``learn(chunk)`` over as many chunks as fit
    in ``budget`` seconds (at least 3).  Garbage is collected first, so that
    no learner pays for a collection of what the set-up left (the Python
    objects of 4000 rows in river's dicts, say)."""
    gc.collect()
    rows, start = 0, time.perf_counter()
    for k, (X, y) in enumerate(chunks):
        learn(X, y)
        rows += y.shape[0]
        if k >= 2 and time.perf_counter() - start > budget:
            break
    return 1e6 * (time.perf_counter() - start) / rows


def per_call(score, rows, budget):
    """Microseconds per ``score(row)`` over the rows, cycled within ``budget``
    seconds (at least one full cycle), garbage collected first."""
    gc.collect()
    calls, start = 0, time.perf_counter()
    while calls < len(rows) or time.perf_counter() - start < budget:
        score(rows[calls % len(rows)])
        calls += 1
    return 1e6 * (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5,
                        help="seconds per cell (default: 0.5)")
    RESULTS.add_argument(parser)
    args = parser.parse_args()
    RESULTS.table("per_row", "partial_fit: microseconds per row, by width and chunk size",
                  ["width", "chunk rows", "AdaGradClassifier", "SGDClassifier",
                   "river learn_one", "SGD / ours", "PairwiseAUCClassifier",
                   "SGDClassifier(log_loss)", "ImplicitFTRLClassifier",
                   "ImplicitFTRLRegressor", "SGDRegressor", "AdaGrad multinomial",
                   "RDAPlus(local_phase=False)", "RDAPlusClassifier", "floor: chunk @ w"],
                  notes=f"Text-like rows of about {NNZ} non-zeros; every model continues "
                  "a state fitted on 1000 rows.  river has no chunks: one row per call.  "
                  "The floor reads each non-zero and its weight once (scipy's product of "
                  "the chunk with a weight vector of the width), a call per chunk.")
    RESULTS.table("score_one", "Scoring one row: microseconds per call, by width",
                  ["width", "AdaGradClassifier", "SGDClassifier", "scipy row @ w",
                   "numpy data @ w[indices]", "river predict_proba_one",
                   "ImplicitFTRLClassifier", "AdaGrad multinomial", "PairwiseAUCClassifier",
                   "RDAPlusClassifier", "AdaGradClassifier predict"],
                  notes="decision_function (the last column: predict) on a one-row CSR "
                  "matrix of a fitted model; the plain products use a weight vector of the "
                  "width.")
    RESULTS.table("local_phase", "RDAPlusClassifier: one-row calls that run the local phase",
                  ["width", "microseconds per call", "calls", "local phases run",
                   "reservoir rows"],
                  notes="RDAPlusClassifier(alpha=0.01, tau=5) continuing 3,000 rows of a "
                  "stream whose support settles (settling_rows); timed over the budget, "
                  "at least 3 calls.")
    try:
        from river import linear_model as river_linear
    except ImportError:
        river_linear = None
        print("river is not installed (pip install river): its column is skipped")

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"microseconds per row, rows of about {NNZ} non-zeros\n")
    print(f"{'width':>6} {'chunk':>6} {'ours':>9} {'SGD':>9} {'river':>9} {'SGD/ours':>9} "
          f"{'pairwise':>9} {'SGD(log)':>9} {'iFTRL':>9} {'iFTRL reg':>9} {'SGDReg':>9} "
          f"{'multinom':>9} {'RDA+ DA':>9} {'RDA+':>9} {'floor':>9}")
    for width in WIDTHS:
        X, y = text_like_rows(4000, width)
        warm_X, warm_y = X[:1000], y[:1000]
        river_cost = np.nan
        if river_linear is not None:
            model = river_linear.LogisticRegression()
            dicts = [dict(zip(X.indices[X.indptr[i]:X.indptr[i + 1]].tolist(),
                              X.data[X.indptr[i]:X.indptr[i + 1]].tolist()))
                     for i in range(X.shape[0])]
            for i in range(1000):
                model.learn_one(dicts[i], bool(y[i] > 0))
            river_cost = per_row(lambda d, t: model.learn_one(d, bool(t[0] > 0)),
                                 ((dicts[i], y[i:i + 1]) for i in range(1000, 4000)),
                                 args.budget)
        for chunk in CHUNKS:
            ours = AdaGradClassifier().partial_fit(warm_X, warm_y, classes=[-1, 1])
            sgd = SGDClassifier().partial_fit(warm_X, warm_y, classes=[-1, 1])
            pieces = [(X[lo:lo + chunk], y[lo:lo + chunk]) for lo in range(1000, 4000, chunk)]
            ours_cost = per_row(ours.partial_fit, pieces, args.budget)
            sgd_cost = per_row(sgd.partial_fit, pieces, args.budget)
            pairwise = PairwiseAUCClassifier().partial_fit(warm_X, warm_y, classes=[-1, 1])
            sgd_log = SGDClassifier(loss="log_loss").partial_fit(warm_X, warm_y,
                                                                 classes=[-1, 1])
            pairwise_cost = per_row(pairwise.partial_fit, pieces, args.budget)
            sgd_log_cost = per_row(sgd_log.partial_fit, pieces, args.budget)
            ftrl = ImplicitFTRLClassifier().partial_fit(warm_X, warm_y, classes=[-1, 1])
            ftrl_cost = per_row(ftrl.partial_fit, pieces, args.budget)
            # the regressors learn the labels as numbers
            numeric = [(X_chunk, y_chunk.astype(np.float64)) for X_chunk, y_chunk in pieces]
            ftrl_reg = ImplicitFTRLRegressor().partial_fit(warm_X, warm_y.astype(np.float64))
            ftrl_reg_cost = per_row(ftrl_reg.partial_fit, numeric, args.budget)
            sgd_reg = SGDRegressor().partial_fit(warm_X, warm_y.astype(np.float64))
            sgd_reg_cost = per_row(sgd_reg.partial_fit, numeric, args.budget)
            multinomial = AdaGradClassifier(multi_class="multinomial").partial_fit(
                warm_X, warm_y, classes=[-1, 1])
            multinomial_cost = per_row(multinomial.partial_fit, pieces, args.budget)
            rda_costs = []
            for local_phase in (False, True):
                rda = RDAPlusClassifier(local_phase=local_phase).partial_fit(
                    warm_X, warm_y, classes=[-1, 1])
                rda_costs.append(per_row(rda.partial_fit, pieces, args.budget))
            weights = np.random.RandomState(0).standard_normal(width)
            floor_cost = per_row(lambda X_chunk, _: X_chunk @ weights, pieces, args.budget)
            print(f"2^{int(np.log2(width)):<4d} {chunk:>6d} {ours_cost:9.1f} {sgd_cost:9.1f} "
                  f"{river_cost:9.1f} {sgd_cost / ours_cost:9.2f} {pairwise_cost:9.1f} "
                  f"{sgd_log_cost:9.1f} {ftrl_cost:9.1f} {ftrl_reg_cost:9.1f} "
                  f"{sgd_reg_cost:9.1f} {multinomial_cost:9.1f} {rda_costs[0]:9.1f} "
                  f"{rda_costs[1]:9.1f} {floor_cost:9.1f}", flush=True)
            RESULTS.row("per_row", f"2^{int(np.log2(width))}", chunk, ours_cost, sgd_cost,
                        river_cost, sgd_cost / ours_cost, pairwise_cost, sgd_log_cost,
                        ftrl_cost, ftrl_reg_cost, sgd_reg_cost, multinomial_cost,
                        *rda_costs, floor_cost)
        rows = [X[i:i + 1] for i in range(1000, 2000)]
        w = np.random.RandomState(0).standard_normal(width)
        costs = [per_call(ours.decision_function, rows, args.budget),
                 per_call(sgd.decision_function, rows, args.budget),
                 per_call(lambda r: r @ w, rows, args.budget),
                 per_call(lambda r: r.data @ w[r.indices], rows, args.budget),
                 per_call(model.predict_proba_one, dicts[1000:2000], args.budget)
                 if river_linear is not None else np.nan,
                 per_call(ftrl.decision_function, rows, args.budget),
                 per_call(multinomial.decision_function, rows, args.budget),
                 per_call(pairwise.decision_function, rows, args.budget),
                 per_call(rda.decision_function, rows, args.budget),
                 per_call(ours.predict, rows, args.budget)]
        print(f"2^{int(np.log2(width)):<4d} score one row: ours {costs[0]:.1f}, SGD "
              f"{costs[1]:.1f}, row @ w {costs[2]:.1f}, data @ w[indices] {costs[3]:.1f}, "
              f"river {costs[4]:.1f}, implicit FTRL {costs[5]:.1f}, multinomial "
              f"{costs[6]:.1f}, pairwise AUC {costs[7]:.1f}, RDA+ {costs[8]:.1f}, "
              f"ours predict {costs[9]:.1f} us", flush=True)
        RESULTS.row("score_one", f"2^{int(np.log2(width))}", *costs)
    for width in WIDTHS:
        X, y = settling_rows(6000, width)
        rda = RDAPlusClassifier(alpha=0.01, tau=5).partial_fit(X[:3000], y[:3000],
                                                               classes=[0, 1])
        before = int(rda.n_switches_[0])
        cost = per_row(rda.partial_fit, ((X[i:i + 1], y[i:i + 1]) for i in range(3000, 6000)),
                       args.budget)
        calls = int(rda.n_seen_) - 3000
        print(f"2^{int(np.log2(width)):<4d} RDA+ one-row calls running the local phase: "
              f"{cost:.1f} us a call, {int(rda.n_switches_[0]) - before} phases in {calls} "
              f"calls", flush=True)
        RESULTS.row("local_phase", f"2^{int(np.log2(width))}", cost, calls,
                    int(rda.n_switches_[0]) - before, int(rda.reservoir_y_.shape[0]))
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
