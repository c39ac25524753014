"""The measurements behind design choices of the engine.

Some choices in the code exist only because they were measured to pay off;
their comments name this benchmark instead of quoting numbers that a
different machine would change.  Four tables, on one core:

1. ``row_order``: the row order of a shuffled pass, ``shuffled_order``
   (Fisher-Yates on SplitMix64 draws, ``_dataset.pyx``) against NumPy's
   ``RandomState.permutation``, beside a one-pass ``AdaGradClassifier`` fit
   on as many text-like rows, which every epoch of ``fit`` pays it for;
2. ``problem_call``: a task through a joblib thread pool and through a
   plain thread pool (``problem_threads`` in ``_base.py``, which calls a
   single problem directly), beside ``partial_fit`` chunks of 10 and 300
   rows;
3. ``take_columns``: gathering the columns of a chunk from a wide
   one-vs-rest state with ``np.take`` against fancy indexing
   (``take_columns`` in ``_base.py``, used by the rollback copy and
   ``coef_`` at the touched columns);
4. ``full_matrix``: the cost of one step of full-matrix AdaGrad (dual
   averaging, one m x m eigendecomposition) by width, with one BLAS thread:
   ``FULL_MATRIX_MAX_FEATURES`` in ``_adagrad_full_fast.pyx`` is the widest
   m whose step stays well under 0.1 s here.

    python benchmarks/bench_design_choices.py [--repeat 5] [--json PATH]
"""
import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox._adagrad_full_fast import FULL_MATRIX_MAX_FEATURES
from sklearn_adaprox._dataset import shuffled_order
from sklearn_adaprox.datasets import make_sparse_zipf

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_design_choices")


def best_time(call, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def row_order_table(repeat):
    RESULTS.table("row_order", "Row order of a shuffled pass (ms)",
                  ["rows", "shuffled_order", "RandomState.permutation",
                   "one-pass fit", "saved / fit"],
                  notes="Text-like Zipf rows (50 non-zeros, 2**16 columns); the fit "
                  "is AdaGradClassifier(max_iter=1, tol=None), which draws one order.")
    print("rows      shuffled_order  permutation   one-pass fit   saved / fit")
    for n in (40_000, 1_000_000):
        X, y = make_sparse_zipf(n, 2**16, random_state=0)[:2]
        ours = best_time(lambda: shuffled_order(n, 42), repeat)
        numpy = best_time(lambda: np.random.RandomState(42).permutation(n), repeat)
        est = AdaGradClassifier(max_iter=1, tol=None, random_state=0)
        fit = best_time(lambda: est.fit(X, y), repeat)
        saved = (numpy - ours) / fit
        print(f"{n:>9} {1e3 * ours:12.3f} {1e3 * numpy:12.3f} {1e3 * fit:14.1f} "
              f"{saved:12.1%}")
        RESULTS.row("row_order", n, 1e3 * ours, 1e3 * numpy, 1e3 * fit, f"{saved:.1%}")


def problem_call_table(repeat):
    RESULTS.table("problem_call", "One binary problem: direct call or a joblib pool (ms)",
                  ["what", "time (ms)"],
                  notes="A no-op task through Parallel(n_jobs=2, prefer='threads') "
                  "and through a plain ThreadPoolExecutor (what the estimators use), "
                  "against a direct call, beside partial_fit of text-like chunks "
                  "(2**16 columns) that continue a fitted binary model.")
    X, y = make_sparse_zipf(2_000, 2**16, random_state=0)[:2]
    est = AdaGradClassifier(random_state=0).partial_fit(X[:1000], y[:1000],
                                                        classes=np.unique(y))
    direct = best_time(lambda: [None for _ in range(1)], repeat * 100)
    pool = best_time(lambda: Parallel(n_jobs=2, prefer="threads", require="sharedmem")(
        delayed(lambda: None)() for _ in range(1)), repeat * 20)
    def plain_pool():
        with ThreadPoolExecutor(max_workers=2) as threads:
            list(threads.map(lambda k: None, range(2)))

    plain = best_time(plain_pool, repeat * 20)
    rows = [("direct call", direct), ("joblib thread pool, one task", pool),
            ("plain thread pool (started, two tasks, joined)", plain)]
    for size in (10, 300):
        rows.append((f"partial_fit of {size} rows",
                     best_time(lambda: est.partial_fit(X[1000:1000 + size],
                                                       y[1000:1000 + size]), repeat * 20)))
    for what, seconds in rows:
        print(f"{what:<32} {1e3 * seconds:9.4f} ms")
        RESULTS.row("problem_call", what, 1e3 * seconds)


def take_columns_table(repeat):
    RESULTS.table("take_columns", "Gathering a chunk's columns from a wide state (ms)",
                  ["state", "columns", "np.take", "fancy indexing", "ratio"],
                  notes="A float64 state of 20 one-vs-rest rows; sorted random columns.")
    rng = np.random.RandomState(0)
    print("state              columns   np.take   fancy   ratio")
    for width in (2**16, 2**20):
        state = rng.rand(20, width)
        for n_columns in (500, 20_000):
            columns = np.sort(rng.choice(width, n_columns, replace=False))
            take = best_time(lambda: np.take(state, columns, axis=1), repeat * 10)
            fancy = best_time(lambda: state[:, columns], repeat * 10)
            print(f"20 x {width:<12} {n_columns:>8} {1e3 * take:9.3f} {1e3 * fancy:7.3f} "
                  f"{fancy / take:7.2f}")
            RESULTS.row("take_columns", f"20 x {width}", n_columns, 1e3 * take,
                        1e3 * fancy, fancy / take)


def full_matrix_table(repeat):
    RESULTS.table("full_matrix", "Full-matrix AdaGrad: one step by width (ms)",
                  ["features m", "ms per step", "limit"],
                  notes="Dense Gaussian rows, dual averaging, l2; one BLAS thread. "
                  f"FULL_MATRIX_MAX_FEATURES = {FULL_MATRIX_MAX_FEATURES}.")
    rng = np.random.RandomState(0)
    print("m      ms per step")
    for m in (50, 100, 200, 400, 800):
        n = max(20, 2000 // m)
        X = rng.randn(n, m)
        y = np.where(X[:, 0] > 0, 1, -1)
        est = AdaGradClassifier(matrix="full", max_iter=1, tol=None, random_state=0)
        with threadpool_limits(1):
            seconds = best_time(lambda: est.fit(X, y), repeat) / n
        mark = "the limit" if m == FULL_MATRIX_MAX_FEATURES else ""
        print(f"{m:<6} {1e3 * seconds:10.2f} {mark}")
        RESULTS.row("full_matrix", m, 1e3 * seconds, mark)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="best of (default: 5)")
    RESULTS.add_argument(parser)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    row_order_table(args.repeat)
    problem_call_table(args.repeat)
    take_columns_table(args.repeat)
    full_matrix_table(args.repeat)
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
