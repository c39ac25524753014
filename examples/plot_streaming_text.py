"""
==================================================================
Streaming a text corpus: progressive and held-out loss, live table
==================================================================

Learns a spam filter from a JSON-lines file without ever loading it whole:
:class:`~sklearn_adaprox.stream.JsonLinesStream` reads chunks of messages,
hashes their word unigrams and bigrams (``HashingVectorizer``, stateless, so
every chunk lands in the same 2**18 columns), and
:func:`~sklearn_adaprox.stream.fit_stream` feeds them to
``AdaGradClassifier(loss="log_loss").partial_fit``.  Every chunk is scored
before it is learned (progressive validation: an honest estimate of the
loss on unseen data that costs no held-out rows) and a held-out file is
evaluated every 500 rows.  The progress table is printed on stderr while it
runs; the curves of progressive and held-out log loss against rows seen
are saved as a PNG (``--out``).

Data: the UCI SMS Spam Collection (5574 messages, 13% spam), bundled with
``sklearn_adaprox`` as ``sklearn_adaprox/datasets/data/sms_spam.jsonl.gz``
(provenance in that folder's README), or ``sms_spam.jsonl.gz`` in the folder
given with ``--data``.  The whole file is used, no subsampling.  The example
writes every fifth message to a held-out file and the others to a training
file (in a temporary folder) and streams both, two passes.  No paper figure
is mirrored: this is the streaming workflow of the user guide.  Run with::

    python examples/plot_streaming_text.py --out streaming_text.png

matplotlib is needed for the figure only.
"""

import argparse
import gzip
import os
import sys
import tempfile
from importlib.resources import files

import numpy as np
from sklearn.feature_extraction.text import HashingVectorizer

from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.stream import JsonLinesStream, fit_stream

# the copy shipped with the package (no download, no shared folder needed)
BUNDLED_DATA = str(files("sklearn_adaprox.datasets") / "data")


def split_file(source, folder):
    """Every fifth line to holdout.jsonl.gz, the others to train.jsonl.gz."""
    train = os.path.join(folder, "train.jsonl.gz")
    holdout = os.path.join(folder, "holdout.jsonl.gz")
    with gzip.open(source, "rb") as f, gzip.open(train, "wb") as t, \
            gzip.open(holdout, "wb") as h:
        for i, line in enumerate(f):
            (h if i % 5 == 4 else t).write(line)
    return train, holdout


def main():
    parser = argparse.ArgumentParser(
        description="Streaming a text corpus: progressive and held-out loss.")
    parser.add_argument("--data", default=BUNDLED_DATA,
                        help="folder of sms_spam.jsonl.gz (default: the bundled copy)")
    parser.add_argument("--out", default="streaming_text.png")
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    source = os.path.join(args.data, "sms_spam.jsonl.gz")
    if not os.path.exists(source):
        sys.exit(f"{source} not found; give its folder with --data")

    # %%
    # Stream, score each chunk before learning it, evaluate the held-out file
    vectorizer = HashingVectorizer(n_features=2**18, ngram_range=(1, 2),
                                   alternate_sign=False)
    with tempfile.TemporaryDirectory() as folder:
        train, holdout = split_file(source, folder)
        stream = JsonLinesStream(train, vectorizer=vectorizer, chunk_size=500,
                                 shuffle=True, random_state=0)
        held_out = JsonLinesStream(holdout, vectorizer=vectorizer, chunk_size=1000)
        clf = AdaGradClassifier(loss="log_loss", random_state=0)
        history = fit_stream(clf, stream, classes=["ham", "spam"], n_passes=args.passes,
                             holdout=held_out, holdout_every=500, verbose=1)

    # %%
    # The history is plain arrays
    print(f"\n{'rows':>6}  {'progressive log loss':>20}  {'held-out log loss':>17}  "
          f"{'held-out accuracy':>17}  {'held-out ROC AUC':>16}")
    for rows, loss, acc, auc in zip(history["holdout_rows"], history["holdout_loss"],
                                    history["holdout_score"], history["holdout_auc"]):
        at = np.searchsorted(history["rows"], rows)
        print(f"{rows:6d}  {history['progressive_loss'][at]:20.4f}  {loss:17.4f}  "
              f"{acc:17.4f}  {auc:16.4f}")

    try:
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is needed for the figure: pip install matplotlib")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(history["rows"], history["progressive_loss"], label="progressive (average so far)")
    ax.plot(history["rows"], history["chunk_loss"], alpha=0.3, label="progressive (per chunk)")
    ax.plot(history["holdout_rows"], history["holdout_loss"], "o-", label="held-out")
    ax.set_xlabel("rows seen (messages learned, both passes)")
    ax.set_ylabel("log loss (nats per message)")
    ax.set_title("AdaGrad on hashed SMS bigrams, streamed in chunks of 500")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
