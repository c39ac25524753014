"""What the input checks and the all-or-nothing calls cost.

Two tables, on one core:

1. the checks of ``fit`` against a one-pass ``AdaGradClassifier(max_iter=1)``
   fit: the sparse-structure scan (``check_sparse_structure``) and the value
   check (``check_values``, which replaces scikit-learn's finiteness check of
   X, timed beside it), on a text-like Zipf matrix and on w8a;
2. ``partial_fit`` per call in chunks of 100 and 1000 rows at 2^16 .. 2^22
   features (50 non-zeros per row), where a call that continues a model
   copies its state and checks it for finiteness: O(size of the state).

    python benchmarks/bench_input_checks.py [--data-dir ../shared/data]
"""
import argparse
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.utils.validation import _assert_all_finite

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox._base import check_values
from sklearn_adaprox._dataset import check_sparse_structure
from sklearn_adaprox.datasets import make_sparse_zipf

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_input_checks")

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"


def best_time(call, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def checks_table(data_dir, repeat):
    sets = [("zipf 200k x 1M",) + tuple(make_sparse_zipf(200_000, 1_000_000,
                                                        random_state=0)[:2])]
    w8a = data_dir / "w8a.svm.gz"
    if w8a.exists():
        sets.append(("w8a",) + tuple(load_svmlight_file(w8a, n_features=300)))
    print("data set          nnz    one-pass fit   structure scan      value check"
          "   (scikit-learn's finiteness check)")
    for name, X, y in sets:
        X = sp.csr_matrix(X)
        est = AdaGradClassifier(max_iter=1, tol=None, random_state=0)
        ones = np.ones(X.shape[0])
        fit = best_time(lambda: est.fit(X, y), repeat)
        scan = best_time(lambda: check_sparse_structure(X), repeat)
        values = best_time(lambda: check_values(est, X, ones), repeat)
        sklearn = best_time(lambda: _assert_all_finite(X.data), repeat)
        print(f"{name:15s} {X.nnz:>9d}  {fit * 1e3:9.1f} ms  "
              f"{scan * 1e3:7.2f} ms ({scan / fit:5.1%})  "
              f"{values * 1e3:7.2f} ms ({values / fit:5.1%})   "
              f"{sklearn * 1e3:7.2f} ms ({sklearn / fit:5.1%})")
        RESULTS.table("checks", "The input checks of fit against a one-pass fit",
                      ["data set", "nnz", "one-pass fit (ms)", "structure scan (ms)",
                       "value check (ms)", "scikit-learn's finiteness check (ms)"])
        RESULTS.row("checks", name, X.nnz, fit * 1e3, scan * 1e3, values * 1e3,
                    sklearn * 1e3)


def partial_fit_table(n_rows=3000, nnz_per_row=50):
    rng = np.random.RandomState(0)
    print("\nfeatures  chunk  partial_fit per call  per row")
    for log_width in (16, 18, 20, 22):
        width = 2**log_width
        indices = rng.randint(0, width, n_rows * nnz_per_row).astype(np.int32)
        X = sp.csr_matrix((rng.rand(indices.shape[0]), indices,
                           np.arange(0, indices.shape[0] + 1, nnz_per_row)),
                          shape=(n_rows, width))
        X.sum_duplicates()
        y = rng.randint(0, 2, n_rows)
        for chunk in (100, 1000):
            est = AdaGradClassifier()
            est.partial_fit(X[:chunk], y[:chunk], classes=[0, 1])
            start, calls = time.perf_counter(), 0
            for lo in range(chunk, n_rows, chunk):
                est.partial_fit(X[lo:lo + chunk], y[lo:lo + chunk])
                calls += 1
            per_call = (time.perf_counter() - start) / calls
            print(f"2^{log_width:<6d} {chunk:6d}  {per_call * 1e3:12.2f} ms"
                  f"  {per_call / chunk * 1e6:8.1f} us")
            RESULTS.table("partial_fit", "partial_fit per call (50 non-zeros per row)",
                          ["features", "chunk", "per call (ms)", "per row (us)"])
            RESULTS.row("partial_fit", f"2^{log_width}", chunk, per_call * 1e3,
                        per_call / chunk * 1e6)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--repeat", type=int, default=9)
    RESULTS.add_argument(parser)
    args = parser.parse_args(argv)
    checks_table(args.data_dir, args.repeat)
    partial_fit_table()
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
