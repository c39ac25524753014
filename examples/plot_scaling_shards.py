"""
=========================================================
Training on shards: accuracy per pass against shard count
=========================================================

:class:`~sklearn_adaprox.distributed.DaskShardedTrainer` trains a learner
data-parallel on a Dask cluster: every round, each partition of the data
makes one ``partial_fit`` pass from the same state on the worker that holds
it, and the partitions' states are merged (:func:`sklearn_adaprox.merge`).
For AdaGrad's dual averaging the default merge (``combine="sum"``) adds up
the gradient sums exactly; what changes with the number of shards is only how
stale the weights are at which the gradients are computed: within a round,
each shard sees the steps of its own rows only.  ``combine="average"``
averages the shards' increments instead, per coordinate weighted by their
squared-gradient sums (parameter mixing).

This example starts a :class:`distributed.LocalCluster`, cuts the training
split of the bundled a9a data set (UCI Adult, 32561 rows, 123 binary
features) into 1, 2, 4 and 8 partitions, and draws the test accuracy after
each pass (round) for each, for both merges.  It is the curve to look at before renting a
cluster: how much accuracy per pass the shards cost.  Run with::

    python examples/plot_scaling_shards.py --out scaling_shards.png

The cluster here has two worker *threads* (``processes=False``), which
starts in a fraction of a second for the documentation build; on a real
machine use worker processes (the default of ``LocalCluster``) or connect
a :class:`distributed.Client` to your cluster.  Dask (``pip install
"sklearn_adaprox[dask]"``) and matplotlib are needed.
"""

import argparse
import sys

import numpy as np

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.datasets import load_a9a
from sklearn_adaprox.distributed import DaskShardedTrainer

SHARDS = (1, 2, 4, 8)
PASSES = 3
COMBINES = ("sum", "average")

# %%
# One learner, every shard count
# ------------------------------
# Logistic loss, dual averaging, a light l2 penalty.  ``shuffle=False``
# keeps the partitions in order, so the run is deterministic.  The trainer
# is fitted once per number of passes, and the test accuracy recorded.


def accuracy_per_pass(X_train, y_train, X_test, y_test, combine):
    """{shards: test accuracy after 1..PASSES passes}."""
    import dask.array as da

    learner = AdaGradClassifier(loss="log_loss", alpha=1e-5, eta=0.5)
    results = {}
    for shards in SHARDS:
        rows = -(-X_train.shape[0] // shards)
        X = da.from_array(X_train, chunks=(rows, X_train.shape[1]), asarray=False)
        y = da.from_array(y_train, chunks=rows)
        scores = []
        for passes in range(1, PASSES + 1):
            trainer = DaskShardedTrainer(learner, max_iter=passes, combine=combine,
                                         shuffle=False)
            scores.append(trainer.fit(X, y).score(X_test, y_test))
        results[shards] = np.array(scores)
    return results


def plot(results, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("This example needs matplotlib to draw the figure: pip install matplotlib")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    passes = np.arange(1, PASSES + 1)
    for ax, (combine, by_shards) in zip(axes, results.items()):
        for (shards, scores), marker in zip(by_shards.items(), "osD^"):
            ax.plot(passes, scores, marker=marker,
                    label=f"{shards} shard{'s' * (shards > 1)}")
        ax.set_xlabel("pass (round)")
        ax.set_xticks(passes)
        ax.set_title(f'combine="{combine}"')
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    axes[0].set_ylabel("test accuracy (fraction correct)")
    fig.suptitle("a9a, AdaGrad dual averaging, shards merged after each pass")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nsaved {out}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Test accuracy per pass of AdaGrad trained on 1, 2, 4 and 8 "
        "shards of a9a on a LocalCluster; figure saved to --out.")
    parser.add_argument("--out", default="scaling_shards.png", help="PNG file to write")
    args = parser.parse_args(argv)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        sys.exit('This example needs Dask: pip install "sklearn_adaprox[dask]"')
    X_train, y_train, X_test, y_test = load_a9a()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        results = {combine: accuracy_per_pass(X_train, y_train, X_test, y_test, combine)
                   for combine in COMBINES}
    print("combine  shards  " + "  ".join(f"pass {p}" for p in range(1, PASSES + 1)))
    for combine, by_shards in results.items():
        for shards, scores in by_shards.items():
            print(f"{combine:>7}  {shards:>6}  " + "  ".join(f"{s:.4f}" for s in scores))
    plot(results, args.out)


# %%
# Reading the figure
# ------------------
# One shard is the sequential learner.  With ``combine="sum"`` more shards
# take the same gradient sums, but each computed at weights that have not
# seen the other shards' rows of the round: a whole pass of delay.  Every
# shard then corrects the same error of the state it started from, and the
# coordinates that every row touches (here the intercept) receive the
# correction once per shard: from 4 shards on the model overshoots and the
# accuracy oscillates from pass to pass.  Averaging the increments, weighted
# per coordinate by the squared-gradient sums (Agarwal, Chapelle, Dudik &
# Langford, 2014), counts a correction that every shard makes once, and a
# coordinate that a single shard touched at its full increment: it stays at
# the sequential learner's accuracy for every shard count here.

if __name__ == "__main__":
    main()
