"""Command line: ``python -m sklearn_adaprox <verb>`` (train, predict,
evaluate, info).  ``python -m sklearn_adaprox`` without a verb runs the demo
of ``__main__``.

Exit codes: 0 success; 2 a usage error (unknown option, estimator or
parameter, missing file); 1 bad data (a malformed line, a label not in
``--classes``, a corrupt compressed file); 130 interrupted.  Errors are one
line on stderr, never a traceback.  A model file is written once, at the
end, through a temporary file and a rename: a failed run leaves none.

A model file is a joblib pickle of a dict: ``estimator`` (the fitted
estimator), ``reader`` (how ``predict`` and ``evaluate`` read files for it)
and a summary of the run.  Loading a pickle runs code chosen by whoever
wrote the file: load only model files you made or trust.  A file named
``*.skops`` is written and read with ``skops.io`` instead (when skops is
installed), which builds only types it is told to trust (here: plain
containers, numpy arrays, the estimator classes of this package and
scikit-learn's classes, for the transformer of a tabular model; any other
type is refused) and so does not run code from the file.  A
``--transformer`` file is a joblib pickle too: the same advice applies.
"""
import argparse
import ast
import os
import sys

import numpy as np

MODEL_FORMAT = "sklearn_adaprox-stream-model"
ESTIMATORS = ("AdaGradClassifier", "RDAPlusClassifier", "PairwiseAUCClassifier",
              "ImplicitFTRLClassifier", "ImplicitFTRLRegressor")
PROG = "python -m sklearn_adaprox"


class UsageError(Exception):
    """A mistake in the command line: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints two)
        raise UsageError(f"{self.prog}: {message}")


# ----------------------------------------------------------------------
# arguments

def _reader_args(p):
    p.add_argument("--format", choices=("svmlight", "jsonl", "csv"),
                   help="input format (default: from the file name: *.jsonl[.gz|...] "
                        "-> jsonl, *.csv[...] -> csv, else svmlight)")
    p.add_argument("--n-features", type=int, metavar="N",
                   help="svmlight: number of features (required for svmlight)")
    p.add_argument("--zero-based", choices=("auto", "true", "false"), default="auto",
                   help="svmlight: whether indices start at 0 (default: auto)")
    p.add_argument("--out-of-range", choices=("error", "drop", "hash"), default="error",
                   help="svmlight: what an index >= n_features does (default: error)")
    p.add_argument("--float32", action="store_true", help="svmlight: float32 values")
    p.add_argument("--bits", type=int, default=20, metavar="B",
                   help="text: hash into 2**B features (default: 20)")
    p.add_argument("--ngram", type=int, default=1, metavar="N",
                   help="text: word n-grams up to N (default: 1; 2 = bigrams)")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="text: JSON field or CSV column of the text (default: text)")
    p.add_argument("--label-field", default="label", metavar="NAME",
                   help="text and tables: JSON field or CSV column of the label "
                        "(default: label)")
    p.add_argument("--tabular", action="store_true",
                   help="csv: a table; the columns other than the label are the "
                        "features, numbers as they are (or through --transformer)")
    p.add_argument("--transformer", metavar="FILE",
                   help="csv: a fitted transformer (e.g. a ColumnTransformer) saved with "
                        "joblib, applied to the columns other than the label; implies "
                        "--tabular and is stored in the model")


def _make_parser():
    parser = _Parser(prog=PROG, description="Train, apply and inspect streaming "
                     "linear models on files bigger than memory. Without a verb: the "
                     "a9a demo (see `python -m sklearn_adaprox --help` of the demo).")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    t = verbs.add_parser("train", help="learn a model from files, chunk by chunk",
                         description="Learn a model by partial_fit over files read in "
                         "chunks, with progressive validation and a progress table on "
                         "stderr.")
    t.add_argument("files", nargs="+", help="training files or globs (plain, .gz, .bz2, .xz)")
    t.add_argument("-o", "--output", required=True, metavar="MODEL",
                   help="model file to write (joblib; *.skops: skops)")
    t.add_argument("--estimator", default="AdaGradClassifier", choices=ESTIMATORS,
                   help="estimator (default: AdaGradClassifier)")
    t.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="estimator parameter, repeatable (e.g. -p loss=log_loss -p alpha=1e-5)")
    t.add_argument("--classes", metavar="A,B,...",
                   help="all labels of the stream (required for classifiers)")
    t.add_argument("--passes", type=int, default=1, metavar="N", help="passes (default: 1)")
    t.add_argument("--chunk-size", type=int, default=10000, metavar="N",
                   help="rows per chunk (default: 10000)")
    t.add_argument("--shuffle", action="store_true",
                   help="shuffle the files and the rows within each chunk, per pass")
    t.add_argument("--seed", type=int, default=0, help="seed of --shuffle (default: 0)")
    t.add_argument("--holdout", nargs="+", metavar="FILE", help="held-out files")
    t.add_argument("--holdout-every", type=int, metavar="N",
                   help="rows between held-out evaluations (default: every pass)")
    t.add_argument("--early-stopping", action="store_true",
                   help="stop when the held-out loss stops improving")
    t.add_argument("--checkpoint", metavar="PATH", help="checkpoint file")
    t.add_argument("--checkpoint-every", type=int, metavar="N",
                   help="rows between checkpoints (default: every pass)")
    t.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress table")
    _reader_args(t)

    pr = verbs.add_parser("predict", help="write predictions for a file",
                          description="Predict every row of the files, chunk by chunk: "
                          "one line per row.")
    pr.add_argument("model", help="model file written by train")
    pr.add_argument("files", nargs="+", help="input files or globs")
    pr.add_argument("-o", "--output", metavar="PATH", help="output file (default: stdout)")
    pr.add_argument("--what", choices=("label", "score", "proba"), default="label",
                    help="labels, decision scores, or class probabilities (default: label)")
    pr.add_argument("--chunk-size", type=int, default=10000, metavar="N")

    e = verbs.add_parser("evaluate", help="metrics of a model on a file",
                         description="Loss, accuracy or R^2, and ROC AUC (binary) of a "
                         "model on the files.")
    e.add_argument("model", help="model file written by train")
    e.add_argument("files", nargs="+", help="input files or globs")
    e.add_argument("--chunk-size", type=int, default=10000, metavar="N")

    i = verbs.add_parser("info", help="describe a model file",
                         description="What a model file holds: estimator, parameters, "
                         "rows seen, non-zero weights, reader settings.")
    i.add_argument("model", help="model file written by train")
    return parser


def _parse_value(text):
    """A Python literal (number, True, None, tuple...) or else the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _parse_classes(text, fmt):
    values = [v.strip() for v in text.split(",") if v.strip()]
    if len(values) < 2:
        raise UsageError(f"{PROG} train: --classes needs at least two labels; got {text!r}")
    try:
        return np.array([float(v) for v in values])
    except ValueError:
        if fmt == "svmlight":
            raise UsageError(f"{PROG} train: svmlight labels are numbers; got "
                             f"--classes {text!r}") from None
        return np.array(values)


def _guess_format(path):
    name = os.path.basename(path).lower()
    for suffix in (".gz", ".bz2", ".xz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return "svmlight"


def _reader_settings(args, verb):
    fmt = args.format or _guess_format(args.files[0])
    settings = {"format": fmt}
    if fmt == "svmlight":
        if args.n_features is None:
            raise UsageError(f"{PROG} {verb}: svmlight input needs --n-features")
        if args.n_features < 1:
            raise UsageError(f"{PROG} {verb}: --n-features must be at least 1")
        settings.update(n_features=args.n_features,
                        zero_based={"auto": "auto", "true": True, "false": False}[args.zero_based],
                        out_of_range=args.out_of_range,
                        dtype="float32" if args.float32 else "float64")
    elif fmt == "csv" and (args.tabular or args.transformer):
        settings.update(tabular=True, label_field=args.label_field,
                        transformer=_load_transformer(args.transformer, verb))
    else:
        if not 1 <= args.bits <= 30:
            raise UsageError(f"{PROG} {verb}: --bits must be between 1 and 30")
        if args.ngram < 1:
            raise UsageError(f"{PROG} {verb}: --ngram must be at least 1")
        settings.update(bits=args.bits, ngram=args.ngram, text_field=args.text_field,
                        label_field=args.label_field)
    return settings


def _load_transformer(path, verb):
    """``--transformer``: a fitted transformer from a joblib file (a pickle:
    only files you made or trust), else "passthrough"."""
    if path is None:
        return "passthrough"
    if not os.path.isfile(path):
        raise UsageError(f"{PROG} {verb}: no such transformer file: {path!r}")
    import joblib
    try:
        transformer = joblib.load(path)
    except Exception as exc:  # not a pickle, truncated, ...
        raise ValueError(f"{path}: not a joblib file ({type(exc).__name__}: {exc})") from None
    if not hasattr(transformer, "transform"):
        raise UsageError(f"{PROG} {verb}: {path} holds a {type(transformer).__name__}, "
                         "not a fitted transformer")
    return transformer


def make_stream(settings, files, chunk_size, shuffle=False, seed=0):
    """The reader that a model's ``reader`` settings describe."""
    from .stream import CsvStream, JsonLinesStream, SvmlightStream
    fmt = settings["format"]
    common = dict(chunk_size=chunk_size, shuffle=shuffle, random_state=seed)
    if fmt == "svmlight":
        return SvmlightStream(files, settings["n_features"], zero_based=settings["zero_based"],
                              out_of_range=settings["out_of_range"],
                              dtype=np.dtype(settings["dtype"]), **common)
    if settings.get("tabular"):
        return CsvStream(files, label_column=settings["label_field"],
                         transformer=settings["transformer"], **common)
    from sklearn.feature_extraction.text import HashingVectorizer
    vectorizer = HashingVectorizer(n_features=2 ** settings["bits"],
                                   ngram_range=(1, settings["ngram"]), alternate_sign=False)
    if fmt == "jsonl":
        return JsonLinesStream(files, text_field=settings["text_field"],
                               label_field=settings["label_field"], vectorizer=vectorizer,
                               **common)
    return CsvStream(files, text_column=settings["text_field"],
                     label_column=settings["label_field"], vectorizer=vectorizer, **common)


# ----------------------------------------------------------------------
# model files

def save_model(bundle, path):
    from .stream import save_atomic
    if str(path).endswith(".skops"):
        sio = _skops()
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            sio.dump(bundle, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    else:
        save_atomic(bundle, path)


def _skops():
    try:
        import skops.io as sio
    except ImportError:
        raise UsageError(f"{PROG}: a *.skops model file needs skops "
                         "(pip install skops)") from None
    return sio


def load_model(path):
    """The bundle of a model file (a bare estimator is wrapped in one)."""
    if not os.path.isfile(path):
        raise UsageError(f"{PROG}: no such model file: {path!r}")
    if str(path).endswith(".skops"):
        sio = _skops()
        # skops trusts plain containers and numpy arrays itself; besides
        # those, only the estimator classes of this package and
        # scikit-learn's own classes (a tabular model's transformer) may be
        # built
        allowed = {f"sklearn_adaprox.{module}.{name}" for module, name in (
            ("adagrad", "AdaGradClassifier"), ("rda_plus", "RDAPlusClassifier"),
            ("pairwise_auc", "PairwiseAUCClassifier"),
            ("implicit_ftrl", "ImplicitFTRLClassifier"),
            ("implicit_ftrl", "ImplicitFTRLRegressor"))}
        untrusted = sio.get_untrusted_types(file=path)
        unknown = sorted(t for t in set(untrusted) - allowed if not t.startswith("sklearn."))
        if unknown:
            raise ValueError(f"{path}: refusing to load untrusted types {unknown}")
        bundle = sio.load(path, trusted=untrusted)
    else:
        import joblib
        try:
            bundle = joblib.load(path)
        except Exception as exc:  # not a pickle, truncated, ...
            raise ValueError(f"{path}: not a model file ({type(exc).__name__}: {exc})") from None
    if not (isinstance(bundle, dict) and bundle.get("format") == MODEL_FORMAT):
        if hasattr(bundle, "coef_") and hasattr(bundle, "n_features_in_"):
            bundle = {"format": MODEL_FORMAT, "estimator": bundle,
                      "reader": {"format": "svmlight", "n_features": bundle.n_features_in_,
                                 "zero_based": "auto", "out_of_range": "error",
                                 "dtype": "float64"}}
        else:
            raise ValueError(f"{path}: not a model file of {PROG}")
    est = bundle.get("estimator")
    if type(est).__name__ not in ESTIMATORS or not hasattr(est, "coef_") \
            or not isinstance(bundle.get("reader"), dict):
        raise ValueError(f"{path}: not a fitted model of {PROG}")
    return bundle


# ----------------------------------------------------------------------
# verbs

def _train(args):
    from sklearn.base import is_classifier
    from sklearn.utils._param_validation import InvalidParameterError

    from . import stream as stream_module
    import sklearn_adaprox

    settings = _reader_settings(args, "train")
    for name, value in (("--passes", args.passes), ("--chunk-size", args.chunk_size),
                        ("--holdout-every", args.holdout_every),
                        ("--checkpoint-every", args.checkpoint_every)):
        if value is not None and value < 1:
            raise UsageError(f"{PROG} train: {name} must be at least 1")
    if args.resume and not args.checkpoint:
        raise UsageError(f"{PROG} train: --resume needs --checkpoint")
    if args.early_stopping and not args.holdout:
        raise UsageError(f"{PROG} train: --early-stopping needs --holdout")
    estimator = getattr(sklearn_adaprox, args.estimator)()
    params = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"{PROG} train: --param wants NAME=VALUE; got {item!r}")
        params[name.strip()] = _parse_value(value.strip())
    try:
        estimator.set_params(**params)
        estimator._validate_params()
    except (ValueError, TypeError, InvalidParameterError) as exc:
        raise UsageError(f"{PROG} train: {exc}".splitlines()[0]) from None
    classes = None
    if is_classifier(estimator):
        if not args.classes:
            raise UsageError(f"{PROG} train: a classifier needs --classes (all labels, "
                             "e.g. --classes -1,1)")
        classes = _parse_classes(args.classes, settings["format"])
    try:
        train = make_stream(settings, args.files, args.chunk_size, args.shuffle, args.seed)
        holdout = (make_stream(settings, args.holdout, args.chunk_size)
                   if args.holdout else None)
    except FileNotFoundError as exc:
        raise UsageError(f"{PROG} train: {exc}") from None
    history = stream_module.fit_stream(
        estimator, train, classes=classes, n_passes=args.passes, holdout=holdout,
        holdout_every=args.holdout_every, checkpoint=args.checkpoint,
        checkpoint_every=args.checkpoint_every, resume=args.resume,
        early_stopping=args.early_stopping, verbose=0 if args.quiet else 1)
    bundle = {
        "format": MODEL_FORMAT, "version": 1, "estimator": estimator, "reader": settings,
        "trained_on": [os.path.abspath(f) for f in train.files],
        "rows_seen": int(history["rows"][-1]), "passes": int(history["passes"][-1]),
        "loss_name": history["loss_name"], "score_name": history["score_name"],
        "progressive_loss": float(history["progressive_loss"][-1]),
        "progressive_score": float(history["progressive_score"][-1]),
        "holdout_loss": (float(history["holdout_loss"][-1])
                         if history["holdout_loss"].size else None),
        "stopped_early": bool(history["stopped_early"]),
    }
    save_model(bundle, args.output)
    if not args.quiet:
        print(f"wrote {args.output}: {args.estimator}, {bundle['rows_seen']} rows, "
              f"progressive {bundle['loss_name']} {bundle['progressive_loss']:.6g}",
              file=sys.stderr)
    return 0


def _open_files(bundle, args, verb):
    try:
        return make_stream(bundle["reader"], args.files, args.chunk_size)
    except FileNotFoundError as exc:
        raise UsageError(f"{PROG} {verb}: {exc}") from None


def _predict(args):
    bundle = load_model(args.model)
    est = bundle["estimator"]
    if args.chunk_size < 1:
        raise UsageError(f"{PROG} predict: --chunk-size must be at least 1")
    if args.what == "proba" and not hasattr(est, "predict_proba"):
        raise UsageError(f"{PROG} predict: this model has no probabilities "
                         "(train with -p loss=log_loss or modified_huber)")
    if args.what == "score" and not hasattr(est, "decision_function"):
        raise UsageError(f"{PROG} predict: a regressor has no scores; use --what label")
    from .stream import _read_ahead
    stream = _open_files(bundle, args, "predict")
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        for chunk in _read_ahead(stream):  # parsing overlaps with predicting
            X = chunk[0]
            if args.what == "label":
                values = est.predict(X)
                fmt = "%s" if values.dtype.kind in "USO" else "%.17g"
                if values.dtype.kind == "f" and np.all(values == np.round(values)) \
                        and hasattr(est, "classes_"):
                    fmt = "%.0f"
            else:
                values = est.predict_proba(X) if args.what == "proba" else \
                    est.decision_function(X)
                fmt = "%.9g"
            np.savetxt(out, values, fmt=fmt)
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _evaluate(args):
    from .stream import evaluate_stream
    bundle = load_model(args.model)
    if args.chunk_size < 1:
        raise UsageError(f"{PROG} evaluate: --chunk-size must be at least 1")
    result = evaluate_stream(bundle["estimator"], _open_files(bundle, args, "evaluate"))
    print(f"rows {result['rows']}")
    print(f"{result['loss_name']} {result['loss']:.6f}")
    print(f"{result['score_name']} {result['score']:.6f}")
    if np.isfinite(result["roc_auc"]):
        print(f"roc_auc {result['roc_auc']:.6f}")
        # the AUC of a stream is computed in bounded memory, on binned scores
        print(f"roc_auc_max_error {result['roc_auc_max_error']:.2g}")
    return 0


def _info(args):
    from .merge import resolved_attributes

    bundle = load_model(args.model)
    est = bundle["estimator"]
    coef = np.asarray(est.coef_)
    print(f"estimator {type(est).__name__}")
    params = est.get_params(deep=False)
    print("parameters " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())))
    # what the "auto" parameters resolved to at the first chunk (alpha_,
    # update_, beta_, ...): one value, or one per problem
    resolved = [name for name in resolved_attributes(est) if name in est.__dict__]
    if resolved:
        print("resolved " + ", ".join(
            f"{name}={np.asarray(est.__dict__[name]).tolist()!r}" for name in resolved))
    if hasattr(est, "classes_"):
        print(f"classes {', '.join(map(str, est.classes_.tolist()))}")
    print(f"n_features {est.n_features_in_}")
    print(f"rows_seen {int(getattr(est, 't_', bundle.get('rows_seen', 0)))}")
    print(f"nonzero_weights {np.count_nonzero(coef)} of {coef.size}")
    print("reader " + ", ".join(f"{k}={v!r}" for k, v in bundle["reader"].items()))
    for key in ("passes", "progressive_loss", "progressive_score", "holdout_loss",
                "stopped_early"):
        if bundle.get(key) is not None:
            print(f"{key} {bundle[key]}")
    return 0


VERBS = {"train": _train, "predict": _predict, "evaluate": _evaluate, "info": _info}


def main(argv):
    """Run one verb; returns the exit code (never raises for a user mistake)."""
    argv = list(argv)
    for j in range(len(argv) - 1):  # "--classes -1,1": argparse takes -1,1 for an option
        if argv[j] == "--classes" and argv[j + 1].startswith("-"):
            argv[j:j + 2] = [f"--classes={argv[j + 1]}", ""]
    argv = [a for a in argv if a != ""]
    try:
        args = _make_parser().parse_args(argv)
        return VERBS[args.verb](args)
    except UsageError as exc:
        print(str(exc).splitlines()[0] if str(exc) else PROG, file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `predict ... | head`: the reader has gone
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (ValueError, EOFError, OSError, MemoryError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
