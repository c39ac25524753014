"""Loaders for the real data sets shipped in ``sklearn_adaprox/datasets/data``."""
import gzip
import json
from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

__all__ = ["load_a9a", "load_sms_spam"]

#: Package holding the ``data/`` directory (resolved with importlib.resources,
#: so the files are found wherever the package is installed, zip included).
_DATA_PACKAGE = __package__

_A9A_N_FEATURES = 123


def _check_float_dtype(dtype):
    try:
        dtype = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(
            f"dtype must be np.float32 or np.float64, got {dtype!r}."
        ) from exc
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be np.float32 or np.float64, got {dtype!r}.")
    return dtype


def _load_svmlight_resource(name, n_features, dtype):
    """Load the gzipped svmlight file ``data/<name>`` of this package.

    Returns ``(X, y)`` with ``X`` a canonical CSR matrix (sorted indices, int32
    index arrays when they fit) of exactly ``n_features`` columns and ``y`` the
    raw float labels.
    """
    resource = resources.files(_DATA_PACKAGE).joinpath("data", name)
    with resource.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as f:
        X, y = load_svmlight_file(
            f, n_features=n_features, dtype=dtype, zero_based=False
        )
    X = sp.csr_matrix(X)
    X.sum_duplicates()  # also sorts the indices; a no-op on these files
    if X.nnz <= np.iinfo(np.int32).max and n_features <= np.iinfo(np.int32).max:
        X = sp.csr_matrix(
            (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
            shape=X.shape,
            copy=False,
        )
    X.has_sorted_indices = True
    return X, y


def load_a9a(*, dtype=np.float64):
    """Load the LIBSVM ``a9a`` binary classification data set (train and test).

    ``a9a`` is the Adult census income data set (predict whether a person
    earns more than 50K USD a year) as preprocessed for LIBSVM: the 14 original
    attributes (continuous ones quantised into quantiles) are one-hot encoded
    into 123 binary features.  It is shipped with the package, so loading
    needs no network access; nothing is cached on disk.

    ============================  ========================
    training samples (X_train)    32561 (-1: 24720, +1: 7841)
    test samples (X_test)         16281 (-1: 12435, +1: 3846)
    features                      123, binary (0/1), ~14 non-zeros per row
    classes                       -1 (income <= 50K), +1 (income > 50K)
    ============================  ========================

    Parameters
    ----------
    dtype : {np.float64, np.float32}, default=np.float64
        Data type of the feature matrices.

    Returns
    -------
    X_train : scipy.sparse.csr_matrix of shape (32561, 123)
        Training features, canonical CSR (sorted indices, no duplicates),
        values in {0, 1}.
    y_train : ndarray of shape (32561,), dtype int64
        Training labels in {-1, +1}; +1 means income > 50K.
    X_test : scipy.sparse.csr_matrix of shape (16281, 123)
        Test features, same format as ``X_train``.
    y_test : ndarray of shape (16281,), dtype int64
        Test labels in {-1, +1}.

    Notes
    -----
    Provenance: UCI Machine Learning Repository, "Adult" data set
    (Becker & Kohavi, 1996; R. Kohavi, "Scaling Up the Accuracy of
    Naive-Bayes Classifiers: a Decision-Tree Hybrid", KDD 1996), in the
    preprocessing of J. Platt, "Fast Training of Support Vector Machines using
    Sequential Minimal Optimization" (1998), as distributed on the LIBSVM data
    sets page (files ``a9a`` and ``a9a.t``).  Licence: CC BY 4.0 (UCI).  The
    checksums and origin of the shipped files are listed in
    ``sklearn_adaprox/datasets/data/README.md``.

    Examples
    --------
    >>> from sklearn_adaprox.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> X_train.shape, X_test.shape
    ((32561, 123), (16281, 123))
    """
    dtype = _check_float_dtype(dtype)
    X_train, y_train = _load_svmlight_resource("a9a.svm.gz", _A9A_N_FEATURES, dtype)
    X_test, y_test = _load_svmlight_resource("a9a.t.svm.gz", _A9A_N_FEATURES, dtype)
    return X_train, y_train.astype(np.int64), X_test, y_test.astype(np.int64)


def load_sms_spam():
    """Load the SMS Spam Collection: 5574 short text messages, spam or ham.

    Shipped with the package (``data/sms_spam.jsonl.gz``, provenance in that
    folder's README), so loading needs no network access.  The messages are
    raw text, in the collection's order: vectorise them (for example with
    :class:`~sklearn.feature_extraction.text.HashingVectorizer` or
    :class:`~sklearn.feature_extraction.text.TfidfVectorizer`) and split or
    shuffle them as the experiment needs.

    ============================  ========================
    samples                       5574 (ham: 4827, spam: 747)
    classes                       "ham", "spam"
    ============================  ========================

    Returns
    -------
    texts : list of str
        The messages.
    labels : ndarray of shape (5574,), dtype str
        ``"spam"`` or ``"ham"`` for each message.

    Examples
    --------
    >>> from sklearn_adaprox.datasets import load_sms_spam
    >>> texts, labels = load_sms_spam()
    >>> len(texts), sorted(set(labels.tolist()))
    (5574, ['ham', 'spam'])
    """
    resource = resources.files(_DATA_PACKAGE).joinpath("data", "sms_spam.jsonl.gz")
    with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return [r["text"] for r in records], np.array([r["label"] for r in records])
