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
2**16 to 2**24 columns.

Printed: microseconds per row, for each width and chunk size.
Run: ``python benchmarks/bench_partial_fit.py [--budget 0.5] [--json PATH]``.
"""
import argparse
import os
import time

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from _results import Results
from sklearn_adaprox import AdaGradClassifier

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


def per_row(learn, chunks, budget):
    """Microseconds per row of ``learn(chunk)`` over as many chunks as fit
    in ``budget`` seconds (at least 3)."""
    rows, start = 0, time.perf_counter()
    for k, (X, y) in enumerate(chunks):
        learn(X, y)
        rows += y.shape[0]
        if k >= 2 and time.perf_counter() - start > budget:
            break
    return 1e6 * (time.perf_counter() - start) / rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5,
                        help="seconds per cell (default: 0.5)")
    RESULTS.add_argument(parser)
    args = parser.parse_args()
    RESULTS.table("per_row", "partial_fit: microseconds per row, by width and chunk size",
                  ["width", "chunk rows", "AdaGradClassifier", "SGDClassifier",
                   "river learn_one", "SGD / ours"],
                  notes=f"Text-like rows of about {NNZ} non-zeros; every model continues "
                  "a state fitted on 1000 rows.  river has no chunks: one row per call.")
    try:
        from river import linear_model as river_linear
    except ImportError:
        river_linear = None
        print("river is not installed (pip install river): its column is skipped")

    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"microseconds per row, rows of about {NNZ} non-zeros\n")
    print(f"{'width':>6} {'chunk':>6} {'ours':>9} {'SGD':>9} {'river':>9} {'SGD/ours':>9}")
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
            print(f"2^{int(np.log2(width)):<4d} {chunk:>6d} {ours_cost:9.1f} {sgd_cost:9.1f} "
                  f"{river_cost:9.1f} {sgd_cost / ours_cost:9.2f}", flush=True)
            RESULTS.row("per_row", f"2^{int(np.log2(width))}", chunk, ours_cost, sgd_cost,
                        river_cost, sgd_cost / ours_cost)
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
