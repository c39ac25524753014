"""Synthetic text-like sparse data with Zipf-distributed feature frequencies."""
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._base import _check_float_dtype

__all__ = ["make_sparse_zipf"]

# Number of feature draws processed per chunk of rows (bounds the temporary
# memory: about 20 bytes per draw, i.e. ~20 MB per chunk).
_CHUNK_DRAWS = 1 << 20

# The number of draws per row is chosen so that a row has ``nnz_per_row``
# distinct features on average; it is never more than this factor times
# ``nnz_per_row`` (reached only when nnz_per_row is close to n_features).
_MAX_DRAWS_FACTOR = 10

# Largest number of buckets of the guide table used for inverse-CDF sampling.
_MAX_GUIDE_BUCKETS = 1 << 23

_INT32_MAX = np.iinfo(np.int32).max


# --------------------------------------------------------------------------
# Argument validation
# --------------------------------------------------------------------------
def _check_int(value, name, *, min_value=1, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}.")
    value = int(value)
    if value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}.")
    return value


def _check_real(value, name, *, low, high, low_open=False, high_open=False):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if not np.isfinite(value) or too_low or too_high:
        interval = (
            ("(" if low_open else "[")
            + f"{low}, {high}"
            + (")" if high_open else "]")
        )
        raise ValueError(f"{name} must be in {interval}, got {value!r}.")
    return value


# --------------------------------------------------------------------------
# Zipf sampling helpers
# --------------------------------------------------------------------------
def _zipf_probabilities(n_features, zipf_exponent):
    """Probabilities p_j proportional to 1 / (j + 1) ** zipf_exponent, and their CDF.

    The CDF is non-decreasing with ``cdf[-1] == 1.0`` exactly, so that
    inverse-CDF sampling of ``u`` in [0, 1) always returns a valid index.
    """
    log_rank = np.log1p(np.arange(n_features, dtype=np.float64))  # log(j + 1)
    weights = np.exp(-zipf_exponent * log_rank)  # weights[0] == 1, no overflow
    p = weights / weights.sum()
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    np.minimum(cdf, 1.0, out=cdf)
    cdf[-1] = 1.0
    return p, cdf


def _guide_table(cdf):
    """Guide table for inverse-CDF sampling (Chen & Asau, 1974).

    With ``n_buckets`` a power of two, ``guide[k]`` is the smallest index j
    with ``cdf[j] > k / n_buckets``, i.e. ``np.searchsorted(cdf, k / n_buckets,
    side="right")``; it is computed in O(n_features + n_buckets) with a
    bincount (``cdf[j] <= k / K`` iff ``ceil(cdf[j] * K) <= k``, exact in
    floating point because K is a power of two).
    """
    n_features = cdf.shape[0]
    # About 4 buckets per feature, between 2**10 and _MAX_GUIDE_BUCKETS.
    log2_buckets = int(np.ceil(np.log2(4 * n_features)))
    n_buckets = 1 << min(max(log2_buckets, 10), _MAX_GUIDE_BUCKETS.bit_length() - 1)
    first_bucket = np.ceil(cdf * n_buckets).astype(np.int64)
    counts = np.bincount(first_bucket, minlength=n_buckets + 1)[:n_buckets]
    index_dtype = np.int32 if n_features <= _INT32_MAX else np.int64
    guide = np.cumsum(counts).astype(index_dtype)
    return guide, n_buckets


def _sample_columns(u, cdf, guide, n_buckets):
    """Vectorised inverse-CDF sampling: ``searchsorted(cdf, u, side="right")``.

    Returns exactly the same indices as ``np.searchsorted`` but faster on large
    CDFs: the guide table gives a lower bound for each draw, which is then
    advanced (vectorised, only over the draws not yet resolved) until
    ``cdf[j] > u``.  With about four buckets per feature only a few passes are
    needed.  ``u`` must lie in [0, 1).
    """
    j = guide[(u * n_buckets).astype(np.intp)]
    todo = np.flatnonzero(cdf[j] <= u)
    while todo.size:
        j[todo] += 1
        todo = todo[cdf[j[todo]] <= u[todo]]
    return j


def _expected_distinct(p_log1m, n_draws):
    """Expected number of distinct features among ``n_draws`` i.i.d. draws."""
    return -np.expm1(n_draws * p_log1m).sum()


def _draws_per_row(p, nnz_per_row, zipf_exponent):
    """Number of draws per row giving ``nnz_per_row`` distinct features on average.

    E[#distinct](m) = sum_j 1 - (1 - p_j) ** m is increasing in m; the integer
    m whose expectation is closest to ``nnz_per_row`` is found by bisection,
    capped at ``_MAX_DRAWS_FACTOR * nnz_per_row`` (with a warning if the cap
    leaves the expectation more than 0.5 below the target).
    """
    with np.errstate(divide="ignore"):  # p_j == 1 when n_features == 1
        p_log1m = np.log1p(-p)
    lo, hi = nnz_per_row, _MAX_DRAWS_FACTOR * nnz_per_row
    expected_hi = _expected_distinct(p_log1m, hi)
    if expected_hi < nnz_per_row:
        if expected_hi < nnz_per_row - 0.5:
            warnings.warn(
                f"nnz_per_row={nnz_per_row} is too close to "
                f"n_features={p.shape[0]} for zipf_exponent={zipf_exponent}: "
                "with at most "
                f"{_MAX_DRAWS_FACTOR} * nnz_per_row draws per row, rows will have "
                f"about {expected_hi:.1f} distinct features on average.",
                UserWarning,
                stacklevel=3,
            )
        return hi
    # Smallest m with E(m) >= nnz_per_row (E(nnz_per_row) <= nnz_per_row).
    while lo < hi:
        mid = (lo + hi) // 2
        if _expected_distinct(p_log1m, mid) >= nnz_per_row:
            hi = mid
        else:
            lo = mid + 1
    if lo > nnz_per_row:
        below = nnz_per_row - _expected_distinct(p_log1m, lo - 1)
        above = _expected_distinct(p_log1m, lo) - nnz_per_row
        if below < above:
            lo -= 1
    return lo


# An informative feature is drawn among the features expected to occur at
# least this many times: rare, yet learnable from the sample.
_MIN_EXPECTED_COUNT = 10


def _make_coef(n_features, n_informative, n_candidates, zipf_exponent, rng,
               informative_scale="rarity"):
    """Hidden weights: non-zero on n_informative features chosen uniformly at
    random among the n_candidates most frequent ranks, a random factor in
    [0.5, 1.5) and a random sign, times 1 / sqrt(p_j) with
    ``informative_scale="rarity"``; unit l2 norm."""
    informative = np.sort(rng.choice(n_candidates, n_informative, replace=False))
    signs = np.where(rng.random_sample(n_informative) < 0.5, -1.0, 1.0)
    magnitudes = rng.uniform(0.5, 1.5, size=n_informative)
    if informative_scale == "rarity":
        # 1 / sqrt(p_j) is proportional to (j + 1) ** (zipf_exponent / 2);
        # work in log space relative to the rarest informative feature to
        # avoid overflow.
        log_scale = 0.5 * zipf_exponent * np.log1p(informative.astype(np.float64))
        scale = np.exp(log_scale - log_scale.max())
    else:
        scale = 1.0
    coef = np.zeros(n_features, dtype=np.float64)
    coef[informative] = signs * magnitudes * scale
    coef /= np.linalg.norm(coef)
    return coef


# --------------------------------------------------------------------------
# Public generator
# --------------------------------------------------------------------------
def make_sparse_zipf(
    n_samples=1000,
    n_features=10_000,
    nnz_per_row=50,
    *,
    zipf_exponent=1.1,
    n_informative=None,
    informative_scale="rarity",
    positive_fraction=0.5,
    flip_y=0.01,
    normalize=True,
    dtype=np.float64,
    random_state=None,
    return_coef=False,
):
    """Generate a text-like sparse binary classification problem.

    Each row is a "document": feature j (0-based, its frequency rank) is drawn
    with probability proportional to ``1 / (j + 1) ** zipf_exponent``, so a
    few features occur in most rows and most features are rare, like words.
    Features are drawn with replacement and duplicates are merged, so the
    values are counts (term frequencies); the number of draws per row is
    chosen so that a row has ``nnz_per_row`` distinct features on average.
    With ``normalize=True`` every row is scaled to unit l2 norm (like tf-idf
    vectors).

    The labels come from a hidden sparse weight vector ``coef`` whose
    ``n_informative`` non-zero features are chosen uniformly at random among
    the features expected to occur at least 10 times in the ``n_samples``
    rows, so most informative features are rare but each is seen often
    enough to be learnt.  Their
    magnitudes grow with rarity (proportional to ``1 / sqrt(p_j)`` times a
    random factor in [0.5, 1.5), random sign, unit l2 norm overall) so that a
    rare feature moves the margin about as much as a frequent one (with the
    default ``informative_scale="rarity"``).  With
    ``margin = X @ coef``, the ``round(positive_fraction * n_samples)``
    samples with the largest margin are labelled 1 (ties broken at random) and
    the others 0; then label noise is added (see ``flip_y``).

    Generation is vectorised (no Python loop over rows) and processed in
    chunks of rows, so the peak memory is about twice the size of the output.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of samples (rows), >= 1.
    n_features : int, default=10_000
        Number of features (columns, the vocabulary size), >= 1.
    nnz_per_row : int, default=50
        Expected number of distinct non-zero features per row,
        ``1 <= nnz_per_row <= n_features``.  The realised number varies
        around this value from row to row and is never smaller than 1.  If it
        cannot be reached with at most ``10 * nnz_per_row`` draws per row
        (``nnz_per_row`` close to ``n_features`` with a steep Zipf law), a
        ``UserWarning`` is issued and rows have fewer distinct features.
    zipf_exponent : float, default=1.1
        Exponent ``s >= 0`` of the Zipf law; 0 gives uniform feature
        frequencies, ~1 is typical of words in natural text.
    n_informative : int or None, default=None
        Number of non-zero entries of the hidden ``coef``,
        ``1 <= n_informative <= n_features``.  None means 10% of the features
        (at least 1), or all the features expected to occur at least 10 times
        if they are fewer.
    informative_scale : {"rarity", "flat"}, default="rarity"
        Magnitudes of the hidden weights.  "rarity": proportional to
        ``1 / sqrt(p_j)`` (times the random factor), so the margin of a row
        is spread over its rare features, each seen a few times only: a
        hard problem, which a single pass over a large sample does not
        learn.  "flat": the random factor alone, so the frequent informative
        features carry the margin and a linear model learns the labels at
        any size (the setting for accuracy figures of large benchmarks).
    positive_fraction : float, default=0.5
        Fraction of samples of class 1, in (0, 1).  Exactly
        ``round(positive_fraction * n_samples)`` samples are positive (at
        least one sample of each class when ``n_samples >= 2``), also after
        the label noise, e.g. 0.01 gives a 1:99 imbalanced problem.
    flip_y : float, default=0.01
        Label noise, in [0, 1].  ``round(flip_y * n_minority)`` randomly chosen
        samples of the minority class swap labels with as many randomly chosen
        samples of the majority class, so the class counts are unchanged.
        With ``positive_fraction=0.5`` this flips a ``flip_y`` fraction of all
        labels; with imbalanced classes a ``flip_y`` fraction of the minority
        class is mislabelled.
    normalize : bool, default=True
        Scale each row to unit l2 norm; otherwise the values are raw counts.
    dtype : {np.float64, np.float32}, default=np.float64
        Data type of ``X``.  The labels do not depend on it (margins are
        computed in float64).
    random_state : int, RandomState instance or None, default=None
        Seed or random number generator, for reproducible output.  ``coef``
        is drawn from its own stream and rows are drawn one after the other,
        so with the same seed and the same other parameters, the rows of a
        smaller ``n_samples`` are a prefix of those of a larger one (the
        labels, which depend on ``coef`` and the margin quantile, may
        differ).
    return_coef : bool, default=False
        Also return the hidden weight vector.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        Canonical CSR matrix (sorted indices, no duplicates, no explicit
        zeros), int32 ``indices``/``indptr`` when the number of non-zeros
        fits, of type ``dtype``.
    y : ndarray of shape (n_samples,), dtype int64
        Labels in {0, 1}.
    coef : ndarray of shape (n_features,), dtype float64
        The hidden weight vector (unit l2 norm), only if ``return_coef`` is
        True.  Before label noise, ``y`` is 1 exactly for the samples whose
        ``X @ coef`` is above its ``1 - positive_fraction`` quantile; note
        that this threshold is in general not 0.

    See Also
    --------
    sklearn.datasets.make_classification : Dense synthetic classification data.
    load_a9a : A real sparse binary data set.

    Notes
    -----
    Columns are sampled by inverse-CDF sampling (equivalent to
    ``np.searchsorted(cdf, u, side="right")`` on uniform draws ``u``) sped up
    with a guide table.  ``make_sparse_zipf(200_000, 1_000_000, 100)`` (20M
    non-zeros) takes a few seconds.

    Examples
    --------
    >>> from sklearn_adaprox.datasets import make_sparse_zipf
    >>> X, y = make_sparse_zipf(n_samples=500, n_features=2000, nnz_per_row=20,
    ...                         random_state=0)
    >>> X.shape
    (500, 2000)
    >>> int(y.sum())
    250
    >>> X, y, coef = make_sparse_zipf(n_samples=1000, positive_fraction=0.01,
    ...                               random_state=0, return_coef=True)
    >>> int(y.sum()), coef.shape
    (10, (10000,))
    """
    n_samples = _check_int(n_samples, "n_samples")
    n_features = _check_int(n_features, "n_features")
    nnz_per_row = _check_int(nnz_per_row, "nnz_per_row")
    if nnz_per_row > n_features:
        raise ValueError(
            f"nnz_per_row must be <= n_features, got nnz_per_row={nnz_per_row} "
            f"> n_features={n_features}."
        )
    zipf_exponent = _check_real(zipf_exponent, "zipf_exponent", low=0.0, high=np.inf)
    n_informative = _check_int(n_informative, "n_informative", allow_none=True)
    if informative_scale not in ("rarity", "flat"):
        raise ValueError(
            f'informative_scale must be "rarity" or "flat", got {informative_scale!r}.')
    if n_informative is not None and n_informative > n_features:
        raise ValueError(
            f"n_informative must be <= n_features, got n_informative="
            f"{n_informative} > n_features={n_features}."
        )
    positive_fraction = _check_real(
        positive_fraction,
        "positive_fraction",
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
    )
    flip_y = _check_real(flip_y, "flip_y", low=0.0, high=1.0)
    dtype = _check_float_dtype(dtype)
    rng = check_random_state(random_state)

    # The hidden weights get their own random stream, so that the rows drawn
    # below do not depend on n_samples (a smaller sample is a prefix).
    coef_rng = np.random.RandomState(rng.randint(np.iinfo(np.int32).max))

    p, cdf = _zipf_probabilities(n_features, zipf_exponent)
    guide, n_buckets = _guide_table(cdf)
    n_draws = _draws_per_row(p, nnz_per_row, zipf_exponent)
    # Candidates for informative features: those expected in at least
    # _MIN_EXPECTED_COUNT rows (p is decreasing in the rank).
    expected_count = n_samples * n_draws * p
    n_candidates = max(1, int(np.count_nonzero(expected_count >= _MIN_EXPECTED_COUNT)))
    if n_informative is None:
        n_informative = min(max(1, n_features // 10), n_candidates)
    n_candidates = max(n_candidates, n_informative)
    coef = _make_coef(n_features, n_informative, n_candidates, zipf_exponent, coef_rng,
                      informative_scale)
    del p, expected_count

    rows_per_chunk = max(1, _CHUNK_DRAWS // n_draws)
    data_chunks, index_chunks = [], []
    row_nnz = np.empty(n_samples, dtype=np.int64)
    margin = np.empty(n_samples, dtype=np.float64)
    for start in range(0, n_samples, rows_per_chunk):
        stop = min(start + rows_per_chunk, n_samples)
        n_rows = stop - start
        u = rng.random_sample(n_rows * n_draws)
        cols = _sample_columns(u, cdf, guide, n_buckets).reshape(n_rows, n_draws)
        del u
        cols.sort(axis=1)
        flat = cols.ravel()
        # First occurrence of each (row, feature) pair in the row-sorted draws.
        is_new = np.empty(flat.shape[0], dtype=bool)
        is_new[0] = True
        np.not_equal(flat[1:], flat[:-1], out=is_new[1:])
        is_new[::n_draws] = True  # every row starts a new run
        run_starts = np.flatnonzero(is_new)
        counts = np.diff(run_starts, append=flat.shape[0]).astype(np.float64)
        indices = flat[run_starts]
        nnz = np.count_nonzero(is_new.reshape(n_rows, n_draws), axis=1)
        del cols, flat, is_new, run_starts
        row_starts = np.zeros(n_rows, dtype=np.int64)
        np.cumsum(nnz[:-1], out=row_starts[1:])
        if normalize:
            norms = np.sqrt(np.add.reduceat(counts * counts, row_starts))
            counts /= np.repeat(norms, nnz)
        margin[start:stop] = np.add.reduceat(counts * coef[indices], row_starts)
        row_nnz[start:stop] = nnz
        data_chunks.append(counts.astype(dtype, copy=False))
        index_chunks.append(indices)
        del counts, indices

    data = np.concatenate(data_chunks)
    del data_chunks
    indices = np.concatenate(index_chunks)
    del index_chunks
    total_nnz = data.shape[0]
    if total_nnz <= _INT32_MAX and n_features <= _INT32_MAX:
        index_dtype = np.int32
    else:
        index_dtype = np.int64
    indptr = np.zeros(n_samples + 1, dtype=index_dtype)
    np.cumsum(row_nnz, out=indptr[1:])
    X = sp.csr_matrix(
        (data, indices.astype(index_dtype, copy=False), indptr),
        shape=(n_samples, n_features),
        copy=False,
    )
    # Canonical by construction: rows sorted, duplicates merged, counts >= 1.
    X.has_canonical_format = True

    # Labels: the n_pos largest margins are positive (random tie-breaking).
    n_pos = int(round(positive_fraction * n_samples))
    if n_samples >= 2:
        n_pos = min(max(n_pos, 1), n_samples - 1)
    order = np.lexsort((rng.random_sample(n_samples), margin))
    y = np.zeros(n_samples, dtype=np.int64)
    y[order[n_samples - n_pos :]] = 1

    # Label noise that keeps the class counts: swap labels of as many
    # minority samples as majority samples.
    n_swap = int(round(flip_y * min(n_pos, n_samples - n_pos)))
    if n_swap > 0:
        positives = np.flatnonzero(y == 1)
        negatives = np.flatnonzero(y == 0)
        to_negative = rng.choice(positives, n_swap, replace=False)
        to_positive = rng.choice(negatives, n_swap, replace=False)
        y[to_negative] = 0
        y[to_positive] = 1

    if return_coef:
        return X, y, coef
    return X, y
