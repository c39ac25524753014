"""Instructions per epoch of AdaGrad as the number of features grows.

Wall time on a shared machine mixes the work done with cache misses and
noise.  This script counts the instructions executed by one epoch of
``AdaGradClassifier`` (the Cython ``run_epoch``, including its once-per-call
O(n_features) ``finalize``/``store``) with valgrind's callgrind, which is
repeatable to the instruction.  At a fixed number of non-zeros per row, the
per-sample work must not depend on ``n_features``: the counts at 10k and 1M
features should differ only by the once-per-call part.

Run from the repository root (needs ``valgrind``; about a minute per run)::

    python benchmarks/count_instructions.py
    python benchmarks/count_instructions.py --n-samples 20000 --penalty l1
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ONE_EPOCH = """
import sys
from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.datasets import make_sparse_zipf
n_samples, n_features, penalty = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
X, y = make_sparse_zipf(n_samples, n_features, 100, random_state=0)
AdaGradClassifier(penalty=penalty, alpha=1e-6, max_iter=1, tol=None,
                  random_state=0).fit(X, y)
print(X.nnz)
"""


def count(n_samples, n_features, penalty):
    """(instructions in run_epoch and below, of which finalize + store, nnz)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "one_epoch.py")
        out = os.path.join(tmp, "callgrind.out")
        with open(script, "w") as f:
            f.write(ONE_EPOCH)
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=*run_epoch*",
             f"--callgrind-out-file={out}", sys.executable, script,
             str(n_samples), str(n_features), penalty],
            capture_output=True, text=True, check=True,
        )
        nnz = int(run.stdout.split()[-1])
        report = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", out],
            capture_output=True, text=True, check=True,
        ).stdout
    total = int(re.search(r"([\d,]+)\s+\(100\.0%\)\s+PROGRAM TOTALS", report)
                .group(1).replace(",", ""))
    per_call = sum(
        int(m.group(1).replace(",", ""))
        for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\S*AdaGradProblem_(?:finalize|store)",
                             report, re.M)
    )
    return total, per_call, nnz


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=100_000)
    parser.add_argument("--penalty", default="l2", choices=["l2", "l1"])
    args = parser.parse_args(argv)
    print(f"one epoch of AdaGradClassifier(update='dual_averaging', "
          f"penalty={args.penalty!r}) on make_sparse_zipf({args.n_samples}, "
          f"n_features, 100): instructions counted by callgrind")
    print(f"{'n_features':>10} {'nnz':>10} {'epoch':>13} {'once per call':>14} "
          f"{'per-sample part':>16} {'per nnz':>8}")
    rows = []
    for n_features in (10_000, 1_000_000):
        total, per_call, nnz = count(args.n_samples, n_features, args.penalty)
        per_sample = total - per_call
        rows.append(per_sample / nnz)
        print(f"{n_features:>10} {nnz:>10} {total:>13,} {per_call:>14,} "
              f"{per_sample:>16,} {per_sample / nnz:>8.2f}")
    print(f"per-nnz instructions, 1M / 10k features: {rows[1] / rows[0]:.3f}")


if __name__ == "__main__":
    main()
