"""Benchmark: data-parallel training by merged shards, side by side.

Per pass, on each data set: wall time and test accuracy / log loss of

* ``memory``: the in-memory estimator on one core (``partial_fit`` over the
  whole training split, one pass per call: X checked at every call);
* ``one core, one fit``: the epochs of the estimator's own ``fit`` (X
  checked once), each the difference between fits of p and p - 1 epochs
  (the quickest of up to 5 fits each; pass 1 is a whole fit of one epoch,
  set-up included); the second speed-up column is against these;
* ``threads``: ``ThreadShardedTrainer(n_jobs=2)`` (two row shards per pass,
  in threads, merged), one ``fit`` with ``warm_start`` per pass (X checked
  every pass, as ``memory`` checks it);
* ``threads, one fit``: the same, the passes of one ``fit`` (X checked
  once), timed by its verbose lines;
* ``floor of 2 threads``: what two threads can do on this machine at best:
  each half of the rows passed over by its own model in its own thread, as
  the trainer's shards are, without a merge (no model to score);
* ``dask``: ``DaskShardedTrainer`` on a ``LocalCluster`` of 2 worker
  processes of one thread each, the data persisted on the workers first;
  the rounds of one fit, timed by its verbose lines;
* ``incremental``: ``dask_ml.wrappers.Incremental`` on the same cluster (the
  blocks one after the other);
* ``dask round, no work``: the fixed cost of a round on that cluster: a
  chain of tasks of a round's shape (a task on each worker, their sum, the
  next state, the summary sent to the client) that compute nothing;
* ``dask round, no pass``: the same chain, its tasks returning arrays of
  the sizes of this learner's state and increment (zeros, measured as in
  the simulation below): the rounds' transfers without the passes and the
  merge.

The learner is ``AdaGradClassifier(loss="log_loss")`` (dual averaging, l2);
the trainers run with ``--combine`` (default ``average``), and once more,
timed the same way, with the other merge (``threads, one fit, sum``, ``dask,
sum``).  Then a
simulation of scale: 2, 4, 8, 16, 32 shards (threads), test accuracy per
pass against shard count for both merges, and the bytes a round sends,
measured: the pickled state and the pickled increment of one shard.  On
Dask, one worker per shard, a round moves shards - 1 increments up the
reduction tree (each addition runs where one of its two inputs is) and
shards - 1 copies of the next state, made where the reduction ends, to
the other workers.

Data: a text-like CSR of ``--rows`` rows (default 1 million) over 2**20
hashed columns (``make_sparse_zipf``, 80 % train), and, when
``--shared-data`` (default ``../shared/data`` next to the repository) holds
them, ``reuters_lasvm`` (svmlight train/test) and 20 Newsgroups comp.* vs
rec.* hashed to 2**20 columns.

Run: ``python benchmarks/bench_distributed.py [--rows N] [--passes P]``;
``--smoke`` runs everything on tiny sizes (a check that the script works,
not a measurement).
"""
import argparse
import gzip
import json
import os
import pickle
import sys
import time

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score, log_loss

from _results import Results  # --json: the tables as a result file

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.datasets import make_sparse_zipf
from sklearn_adaprox.distributed import DaskShardedTrainer, ThreadShardedTrainer
from sklearn_adaprox.merge import _increment, _rule_of

RESULTS = Results("bench_distributed")
N_FEATURES = 2**20
HERE = os.path.dirname(os.path.abspath(__file__))


def learner():
    return AdaGradClassifier(loss="log_loss", alpha=1e-6, eta=0.5)


# ----------------------------------------------------------------------
# data sets
def synthetic(rows, seed=0):
    X, y = make_sparse_zipf(rows, N_FEATURES, 30, random_state=seed)
    cut = int(0.8 * rows)
    return "zipf", X[:cut], y[:cut], X[cut:], y[cut:]


def reuters(folder):
    from sklearn.datasets import load_svmlight_files

    train = os.path.join(folder, "reuters_lasvm.svm.gz")
    test = os.path.join(folder, "reuters_lasvm.t.svm.gz")
    if not (os.path.exists(train) and os.path.exists(test)):
        return None
    with gzip.open(train) as a, gzip.open(test) as b:
        X, y, Xt, yt = load_svmlight_files([a, b])
    return "reuters_lasvm", X.tocsr(), y, Xt.tocsr(), yt


def newsgroups(folder):
    from sklearn.feature_extraction.text import HashingVectorizer

    path = os.path.join(folder, "20news_bydate.jsonl.gz")
    if not os.path.exists(path):
        return None
    docs = {"train": ([], []), "test": ([], [])}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            group = rec["label"].split(".")[0]
            if group in ("comp", "rec"):
                docs[rec["split"]][0].append(rec["text"])
                docs[rec["split"]][1].append(1 if group == "comp" else -1)
    vec = HashingVectorizer(n_features=N_FEATURES, alternate_sign=False, norm="l2")
    rng = np.random.RandomState(0)  # the file is grouped by class
    order = rng.permutation(len(docs["train"][1]))
    X = vec.transform(docs["train"][0])[order]
    y = np.asarray(docs["train"][1])[order]
    return ("20news comp/rec", X, y, vec.transform(docs["test"][0]),
            np.asarray(docs["test"][1]))


def metrics(model, X_test, y_test):
    proba = model.predict_proba(X_test)
    return (accuracy_score(y_test, model.classes_[proba.argmax(axis=1)]),
            log_loss(y_test, proba, labels=model.classes_))


# ----------------------------------------------------------------------
# the contenders, pass by pass: yield (seconds, fitted estimator)
def run_memory(X, y, passes):
    est = clone(learner())
    classes = np.unique(y)
    for _ in range(passes):
        start = time.perf_counter()
        est.partial_fit(X, y, classes=classes)
        yield time.perf_counter() - start, est


def run_one_fit(X, y, passes):
    times = [0.0]
    for p in range(1, passes + 1):
        best, spent = np.inf, 0.0
        for _ in range(5):  # the quickest of a few fits (or of 2 s of them)
            est = learner().set_params(max_iter=p, tol=None, shuffle=False)
            start = time.perf_counter()
            est.fit(X, y)
            seconds = time.perf_counter() - start
            best, spent = min(best, seconds), spent + seconds
            if spent > 2.0:
                break
        times.append(best)
        yield times[p] - (times[p - 1] if p > 1 else 0.0), est


def run_threads(X, y, passes, combine):
    trainer = ThreadShardedTrainer(learner(), n_jobs=2, max_iter=1, combine=combine,
                                   shuffle=False, warm_start=True)
    for _ in range(passes):
        start = time.perf_counter()
        trainer.fit(X, y)
        yield time.perf_counter() - start, trainer.estimator_


def rounds_of_one_fit(make, fit, passes):
    """The passes of one fit of ``make(passes, verbose=1)`` (``fit``: the
    trainer -> fitted trainer), timed by its verbose lines; the model after
    pass p is that of a fit of p passes (the same passes: no shuffling),
    fitted untimed."""
    import contextlib
    import io
    import re

    lines = io.StringIO()
    with contextlib.redirect_stdout(lines):
        fit(make(passes, verbose=1))
    elapsed = [float(t) for t in re.findall(r"elapsed ([0-9.]+) s", lines.getvalue())]
    for p, seconds in enumerate(np.diff([0.0] + elapsed), start=1):
        yield seconds, fit(make(p)).estimator_


def run_threads_one_fit(X, y, passes, combine):
    """The passes of one fit: X checked once, the shards kept (pass 1
    excludes the set-up before the first pass)."""
    return rounds_of_one_fit(
        lambda rounds, verbose=0: ThreadShardedTrainer(
            learner(), n_jobs=2, max_iter=rounds, combine=combine, shuffle=False,
            verbose=verbose),
        lambda trainer: trainer.fit(X, y), passes)


def run_floor(X, y, passes):
    """The floor of two threads on this machine: the two halves of the rows
    each passed over by its own model in its own thread, as a shard of the
    thread trainer is (rows checked once, in place, no rollback), and no
    merge; no model to score."""
    from concurrent.futures import ThreadPoolExecutor

    from sklearn_adaprox._base import disposable

    classes = np.unique(y)
    first = clone(learner()).partial_fit(X[:1], y[:1], classes=classes,
                                         sample_weight=np.zeros(1))
    prepared = first._prepare_rows(X, y, classes=classes)
    halves = np.array_split(np.arange(X.shape[0]), 2)
    models = [pickle.loads(pickle.dumps(first)) for _ in halves]

    def half(k):
        with disposable():
            models[k]._pass_over_rows(prepared, halves[k])

    with ThreadPoolExecutor(2) as pool:
        for _ in range(passes):
            start = time.perf_counter()
            list(pool.map(half, range(2)))
            yield time.perf_counter() - start, None


def _dask_collections(client, X, y, partitions):
    import dask.array as da

    rows = -(-X.shape[0] // partitions)
    Xd = da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
    yd = da.from_array(y, chunks=rows)
    Xd, yd = client.persist([Xd, yd])
    from distributed import wait

    wait([Xd, yd])
    return Xd, yd


def run_dask(client, X, y, passes, combine):
    """The rounds of one fit (the state stays on the workers from round to
    round; a fit of one round per pass with ``warm_start`` would send it
    back and forth from the client); pass 1 includes a fit's set-up (the
    partitions' rows checked, the first state made)."""
    Xd, yd = _dask_collections(client, X, y, 2)
    classes = np.unique(y)
    return rounds_of_one_fit(
        lambda rounds, verbose=0: DaskShardedTrainer(
            learner(), max_iter=rounds, combine=combine, shuffle=False, verbose=verbose),
        lambda trainer: trainer.fit(Xd, yd, classes=classes), passes)


def _zeros(n_bytes, *inputs):
    return None if n_bytes is None else np.zeros(n_bytes // 8)


def run_dask_round_trip(client, passes, sizes=(None, None)):
    """Rounds of the shape of ``DaskShardedTrainer``'s, with no data and no
    work: what a round costs on this cluster before any pass.  ``sizes``:
    (state, increment) bytes that the tasks return (None: nothing)."""
    state_bytes, increment_bytes = sizes
    workers = sorted(client.scheduler_info()["workers"])[:2]
    state = client.submit(_zeros, state_bytes, pure=False, workers=[workers[0]])
    for _ in range(passes):
        start = time.perf_counter()
        parts = [client.submit(_zeros, increment_bytes, state, pure=False, workers=[w])
                 for w in workers]
        total = client.submit(_zeros, increment_bytes, *parts, pure=False,
                              workers=[workers[0]])
        state = client.submit(_zeros, state_bytes, total, pure=False, workers=[workers[0]])
        client.submit(_zeros, None, total, state, pure=False, workers=[workers[0]]).result()
        yield time.perf_counter() - start, None


def round_bytes(state, X, y, shards, combine):
    """(state, increment) bytes of a round of ``shards`` partitions from
    ``state``, pickled as Dask sends them."""
    rows = np.arange(min(X.shape[0], -(-X.shape[0] // shards)))
    shard = pickle.loads(pickle.dumps(state)).partial_fit(X[rows], y[rows])
    rule = _rule_of(state)
    increment = _increment(rule, shard, rule.sums(state), 0, combine)
    return len(pickle.dumps(state, protocol=5)), len(pickle.dumps(increment, protocol=5))


def run_incremental(client, X, y, passes):
    from dask_ml.wrappers import Incremental

    Xd, yd = _dask_collections(client, X, y, 2)
    inc = Incremental(learner(), shuffle_blocks=False)
    for _ in range(passes):
        start = time.perf_counter()
        inc.partial_fit(Xd, yd, classes=np.unique(y))
        yield time.perf_counter() - start, inc.estimator_


# ----------------------------------------------------------------------
def side_by_side(name, X, y, Xt, yt, passes, combine, client):
    table = f"passes_{name}"
    RESULTS.table(table, f"{name}: {X.shape[0]} training rows, {X.shape[1]} columns, "
                  f"{X.nnz} non-zeros; per pass",
                  ["contender", "pass", "seconds", "speed-up", "speed-up vs fit", "accuracy",
                   "log loss"],
                  notes=f"AdaGradClassifier(loss='log_loss'); trainers with combine='{combine}'")
    print(f"\n== {name}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}")
    print(f"{'contender':>26} {'pass':>4} {'seconds':>8} {'speed-up':>8} {'vs fit':>8} "
          f"{'accuracy':>8} {'log loss':>8}")
    other = "sum" if combine == "average" else "average"
    contenders = [("memory", lambda: run_memory(X, y, passes)),
                  ("one core, one fit", lambda: run_one_fit(X, y, passes)),
                  ("threads", lambda: run_threads(X, y, passes, combine)),
                  ("threads, one fit", lambda: run_threads_one_fit(X, y, passes, combine)),
                  (f"threads, one fit, {other}",
                   lambda: run_threads_one_fit(X, y, passes, other)),
                  ("floor of 2 threads", lambda: run_floor(X, y, passes))]
    if client is not None:
        contenders += [("dask", lambda: run_dask(client, X, y, passes, combine)),
                       (f"dask, {other}", lambda: run_dask(client, X, y, passes, other)),
                       ("incremental", lambda: run_incremental(client, X, y, passes)),
                  ("dask round, no work", lambda: run_dask_round_trip(client, passes)),
                  ("dask round, no pass", lambda: run_dask_round_trip(
                      client, passes, round_bytes(learner().partial_fit(
                          X, y, classes=np.unique(y)), X, y, 2, combine)))]
    reference = {}
    for label, run in contenders:
        for p, (seconds, model) in enumerate(run(), start=1):
            if label in ("memory", "one core, one fit"):
                reference.setdefault(label, []).append(seconds)
            acc, ll = metrics(model, Xt, yt) if model is not None else (np.nan, np.nan)
            speed = reference["memory"][p - 1] / seconds
            speed_fit = (reference["one core, one fit"][p - 1] / seconds
                         if label != "memory" else np.nan)
            print(f"{label:>26} {p:>4} {seconds:>8.4f} {speed:>8.2f} {speed_fit:>8.2f} "
                  f"{acc:>8.4f} {ll:>8.4f}")
            RESULTS.row(table, label, p, seconds, speed, speed_fit, acc, ll)


def shard_simulation(name, X, y, Xt, yt, passes, shard_counts):
    table = f"shards_{name}"
    RESULTS.table(table, f"{name}: test accuracy per pass against shard count (threads)",
                  ["combine", "shards", *[f"pass {p}" for p in range(1, passes + 1)],
                   "state bytes", "increment bytes", "bytes per round"])
    print(f"\n== {name}: accuracy per pass against shards; bytes per round")
    for combine in ("sum", "average"):
        for shards in shard_counts:
            trainer = ThreadShardedTrainer(learner(), n_jobs=2, n_shards=shards, max_iter=1,
                                           combine=combine, shuffle=False, warm_start=True)
            scores = []
            for _ in range(passes):
                trainer.fit(X, y)
                scores.append(metrics(trainer.estimator_, Xt, yt)[0])
            # one round's traffic on Dask (see the module's docstring)
            state_bytes, inc_bytes = round_bytes(trainer.estimator_, X, y, shards, combine)
            total = (shards - 1) * (state_bytes + inc_bytes)
            print(f"{combine:>8} {shards:>4} " + " ".join(f"{s:.4f}" for s in scores)
                  + f"  state {state_bytes} B, increment {inc_bytes} B, round {total} B")
            RESULTS.row(table, combine, shards, *scores, state_bytes, inc_bytes, total)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--combine", choices=("sum", "average"), default="average")
    parser.add_argument("--shards", default="2,4,8,16,32",
                        help="shard counts of the simulation")
    parser.add_argument("--shared-data",
                        default=os.path.join(HERE, "..", "..", "shared", "data"))
    parser.add_argument("--no-dask", action="store_true", help="threads and memory only")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: checks that the script runs")
    RESULTS.add_argument(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.passes, args.shards = 4000, 2, "2,4"
    shard_counts = [int(s) for s in args.shards.split(",")]

    sets = [synthetic(args.rows)]
    if not args.smoke:
        sets += [s for s in (reuters(args.shared_data), newsgroups(args.shared_data)) if s]

    client = cluster = None
    if not args.no_dask:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            sys.exit('Dask is needed (pip install "sklearn_adaprox[dask]"), or --no-dask')
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        for name, X, y, Xt, yt in sets:
            side_by_side(name, X, y, Xt, yt, args.passes, args.combine, client)
            shard_simulation(name, X, y, Xt, yt, args.passes, shard_counts)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    RESULTS.write(args.json)


if __name__ == "__main__":
    main()
