"""Benchmark: end-to-end file -> model throughput of streaming learners.

One generated svmlight file (``--rows`` rows, default 3 million, of about
30 hashed word counts each: Zipf-distributed indices spread over 2**20
columns, labels from a sparse linear rule; 64 distinct blocks of 4096 rows
cycled) and the same rows in Vowpal Wabbit's text format.  Each contender
reads the file from disk, parses it and learns a logistic model in one
pass, progressive loss included where it is part of the tool:

* ``CLI``: ``python -m sklearn_adaprox train FILE --n-features 1048576
  --classes -1,1 -p loss=log_loss --chunk-size N -q`` in a subprocess
  (interpreter start-up and imports included);
* ``fit_stream``: the Python driver in this process (``SvmlightStream`` +
  ``fit_stream`` of ``AdaGradClassifier(loss="log_loss")``, progressive
  validation on);
* ``sklearn loop``: ``load_svmlight_file(FILE, offset=, length=)`` over byte
  ranges of about ``--chunk-bytes`` and ``SGDClassifier(loss="log_loss")
  .partial_fit`` on each (scikit-learn's own streaming tools);
* ``vw``: Vowpal Wabbit's driver (``--loss_function logistic -b 20``, no
  cache file), run through the ``vowpalwabbit`` package's ``Workspace``
  with ``-d FILE`` in a subprocess; the package ships no ``vw`` executable,
  and that call runs the same C++ driver (parser, learner, progress).

Printed: seconds, rows/s and non-zeros/s per contender, and the ratio of
each to ours.  Run: ``python benchmarks/bench_stream.py [--rows N]``.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from _results import Results  # --json: the tables as a result file

RESULTS = Results("bench_stream")
N_FEATURES = 2**20
BLOCK_ROWS = 4096


def make_blocks(seed=0, n_blocks=64):
    """Distinct blocks of rows as (svmlight bytes, vw bytes, nnz)."""
    rng = np.random.RandomState(seed)
    w = rng.standard_normal(N_FEATURES) * (rng.rand(N_FEATURES) < 0.01)
    blocks = []
    for _ in range(n_blocks):
        svm, vw, nnz = [], [], 0
        for _ in range(BLOCK_ROWS):
            idx = np.unique(np.minimum(rng.zipf(1.3, 30), N_FEATURES) - 1)
            idx = np.unique((idx * 2654435761) % N_FEATURES)
            counts = rng.randint(1, 4, idx.shape[0])
            label = 1 if w[idx] @ counts + 0.1 * rng.standard_normal() > 0 else -1
            feats = " ".join(f"{i}:{c}" for i, c in zip(idx, counts))
            svm.append(f"{label} {feats}")
            vw.append(f"{label} | {feats}")
            nnz += idx.shape[0]
        blocks.append((("\n".join(svm) + "\n").encode(), ("\n".join(vw) + "\n").encode(), nnz))
    return blocks


def write_files(folder, n_rows):
    blocks = make_blocks()
    svm_path, vw_path = os.path.join(folder, "data.svm"), os.path.join(folder, "data.vw")
    rows = nnz = 0
    with open(svm_path, "wb") as f, open(vw_path, "wb") as g:
        b = 0
        while rows < n_rows:
            svm, vw, block_nnz = blocks[b % len(blocks)]
            f.write(svm)
            g.write(vw)
            rows += BLOCK_ROWS
            nnz += block_nnz
            b += 1
    return svm_path, vw_path, rows, nnz


def run_cli(path, chunk_size):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    model = path + ".model"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sklearn_adaprox", "train", path, "-o", model,
                    "--n-features", str(N_FEATURES), "--classes=-1,1", "-p", "loss=log_loss",
                    "--chunk-size", str(chunk_size), "--zero-based", "true", "-q"],
                   check=True, env=env)
    return time.perf_counter() - start


def run_driver(path, chunk_size):
    from sklearn_adaprox import AdaGradClassifier
    from sklearn_adaprox.stream import SvmlightStream, fit_stream
    start = time.perf_counter()
    stream = SvmlightStream(path, N_FEATURES, chunk_size=chunk_size, zero_based=True)
    history = fit_stream(AdaGradClassifier(loss="log_loss"), stream, classes=[-1, 1])
    return time.perf_counter() - start, history["progressive_loss"][-1]


def run_sklearn(path, chunk_bytes):
    from sklearn.datasets import load_svmlight_file
    from sklearn.linear_model import SGDClassifier
    start = time.perf_counter()
    size = os.path.getsize(path)
    clf = SGDClassifier(loss="log_loss")
    for offset in range(0, size, chunk_bytes):
        X, y = load_svmlight_file(path, n_features=N_FEATURES, zero_based=True,
                                  offset=offset, length=chunk_bytes)
        if X.shape[0]:
            # SGD's kernels refuse int64 indices, which this loader returns
            X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
            clf.partial_fit(X, y, classes=[-1, 1])
    return time.perf_counter() - start


def run_vw(path):
    code = ("import sys\nfrom vowpalwabbit import Workspace\n"
            "Workspace(f'-d {sys.argv[1]} --loss_function logistic -b 20 --quiet "
            "-f {sys.argv[1]}.vwmodel').finish()\n")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, path], check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--chunk-size", type=int, default=50_000,
                        help="rows per chunk of ours (default: 50000)")
    parser.add_argument("--chunk-bytes", type=int, default=8 << 20,
                        help="bytes per load_svmlight_file call (default: 8 MiB)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["cli", "driver", "sklearn", "vw"])
    RESULTS.add_argument(parser)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        svm_path, vw_path, rows, nnz = write_files(folder, args.rows)
        print(f"{rows} rows, {nnz} non-zeros, {os.path.getsize(svm_path) / 1e6:.0f} MB "
              f"svmlight ({time.perf_counter() - t:.0f} s to write)\n")
        results = []
        if "cli" not in args.skip:
            results.append(("CLI (python -m sklearn_adaprox train)",
                            run_cli(svm_path, args.chunk_size)))
        if "driver" not in args.skip:
            seconds, loss = run_driver(svm_path, args.chunk_size)
            results.append((f"fit_stream (progressive log loss {loss:.4f})", seconds))
        if "sklearn" not in args.skip:
            results.append(("load_svmlight_file + SGDClassifier.partial_fit",
                            run_sklearn(svm_path, args.chunk_bytes)))
        if "vw" not in args.skip:
            try:
                import vowpalwabbit  # noqa: F401
                results.append(("Vowpal Wabbit (no cache)", run_vw(vw_path)))
            except ImportError:
                print("vowpalwabbit is not installed (pip install vowpalwabbit): skipped")
        width = max(len(name) for name, _ in results)
        ours = results[0][1] if results else np.nan
        print(f"{'contender'.ljust(width)}  {'seconds':>8}  {'rows/s':>10}  "
              f"{'non-zeros/s':>12}  {'time / ours':>11}")
        for name, seconds in results:
            print(f"{name.ljust(width)}  {seconds:8.1f}  {rows / seconds:10.0f}  "
                  f"{nnz / seconds:12.0f}  {seconds / ours:11.2f}")
        RESULTS.table("throughput", "File to model in one pass: throughput against "
                      "scikit-learn's loop and Vowpal Wabbit",
                      ["contender", "seconds", "rows/s", "non-zeros/s", "time / ours"],
                      notes=f"{rows} rows, {nnz} non-zeros, 2**20 hashed columns; "
                      "'ours' is the first row (the command line).")
        for name, seconds in results:
            RESULTS.row("throughput", name, seconds, rows / seconds, nnz / seconds,
                        seconds / ours)
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
