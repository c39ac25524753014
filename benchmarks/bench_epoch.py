"""Benchmark: one epoch of every estimator against SGDClassifier.

The time of one pass (``max_iter=1, tol=None``) of each estimator of the
package with its default update, beside ``SGDClassifier`` with the same
loss where there is one (hinge; log_loss for the learners whose default
loss is logistic), on the same matrices, interleaved, best of
``--repeat``: a9a (bundled, 123 dense-ish features) and a text-like Zipf
matrix (``make_sparse_zipf``, 50 non-zeros per row, 2**20 columns).
``ratio`` is the time against SGD's (< 1: faster than SGD).  It is the
quick check that a change of the engine (the pass loop, the kernels'
calling convention) left every estimator's speed where it was: run it
before and after, on a quiet machine.

    python benchmarks/bench_epoch.py [--rows 200000] [--repeat 5] [--json PATH]
"""
import argparse
import os
import time

import numpy as np
from sklearn.linear_model import SGDClassifier

from sklearn_adaprox import (
    AdaGradClassifier,
    ImplicitFTRLClassifier,
    PairwiseAUCClassifier,
    RDAPlusClassifier,
)
from sklearn_adaprox.datasets import load_a9a, make_sparse_zipf

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_epoch")

ONE_PASS = dict(max_iter=1, tol=None, random_state=0)

# (name, estimator, the SGDClassifier loss it is compared with)
LEARNERS = [
    ("AdaGrad dual averaging", lambda: AdaGradClassifier(**ONE_PASS), "hinge"),
    ("AdaGrad mirror descent",
     lambda: AdaGradClassifier(update="mirror_descent", **ONE_PASS), "hinge"),
    ("AdaGrad FTRL-Proximal",
     lambda: AdaGradClassifier(update="ftrl_proximal", **ONE_PASS), "hinge"),
    ("ImplicitFTRLClassifier", lambda: ImplicitFTRLClassifier(**ONE_PASS), "hinge"),
    ("PairwiseAUCClassifier", lambda: PairwiseAUCClassifier(**ONE_PASS), "hinge"),
    ("RDAPlusClassifier (no local phase)",
     lambda: RDAPlusClassifier(max_iter=1, local_phase=False, random_state=0), "log_loss"),
]


def data_sets(n_rows):
    X, y, _, _ = load_a9a()
    yield "a9a", X, y
    X, y = make_sparse_zipf(n_rows, 2**20, random_state=0)[:2]
    yield f"zipf {n_rows // 1000}k x 2**20", X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000,
                        help="rows of the Zipf matrix (default: 200000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of (default: 5)")
    RESULTS.add_argument(parser)
    args = parser.parse_args()
    RESULTS.table("epoch", "One epoch against SGDClassifier",
                  ["data", "learner", "time (s)", "SGD (s)", "ratio"],
                  notes="Default parameters, max_iter=1; SGDClassifier(alpha=1e-4, same "
                  "loss); best of the interleaved repeats.")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for data, X, y in data_sets(args.rows):
        contenders = {name: make for name, make, _ in LEARNERS}
        contenders["SGD hinge"] = lambda: SGDClassifier(**ONE_PASS)
        contenders["SGD log_loss"] = lambda: SGDClassifier(loss="log_loss", **ONE_PASS)
        best = {name: np.inf for name in contenders}
        for _ in range(args.repeat):
            for name, make in contenders.items():
                est = make()
                start = time.perf_counter()
                est.fit(X, y)
                best[name] = min(best[name], time.perf_counter() - start)
        for name, _, loss in LEARNERS:
            sgd = best[f"SGD {loss}"]
            print(f"{data:<20} {name:<36} {best[name]:8.3f} s  SGD {sgd:7.3f} s  "
                  f"ratio {best[name] / sgd:5.2f}")
            RESULTS.row("epoch", data, name, best[name], sgd, best[name] / sgd)
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
