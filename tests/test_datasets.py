"""Tests for sklearn_adaprox.datasets (load_a9a, make_sparse_zipf)."""
import hashlib
import subprocess
import sys
import warnings
from importlib import resources

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from sklearn_adaprox.datasets import load_a9a, make_sparse_zipf
from sklearn_adaprox.datasets._zipf import (
    _guide_table,
    _sample_columns,
    _zipf_probabilities,
)


def assert_canonical_csr(X):
    """Check the CSR arrays themselves (not the cached flags)."""
    assert type(X) is sp.csr_matrix
    n_rows, n_cols = X.shape
    indptr, indices = X.indptr, X.indices
    assert indptr.shape == (n_rows + 1,)
    assert indptr[0] == 0 and indptr[-1] == X.nnz == indices.shape[0]
    assert np.all(np.diff(indptr) >= 0)
    if X.nnz:
        assert indices.min() >= 0 and indices.max() < n_cols
    # Strictly increasing column indices inside every row.
    row_of = np.repeat(np.arange(n_rows), np.diff(indptr))
    same_row = row_of[1:] == row_of[:-1]
    assert np.all(np.diff(indices.astype(np.int64))[same_row] > 0)
    assert np.all(X.data != 0)
    assert X.has_canonical_format


# --------------------------------------------------------------------------
# load_a9a
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def a9a():
    return load_a9a()


def test_load_a9a_shapes_and_types(a9a):
    X_train, y_train, X_test, y_test = a9a
    assert X_train.shape == (32561, 123)
    assert X_test.shape == (16281, 123)
    assert y_train.shape == (32561,) and y_test.shape == (16281,)
    for X in (X_train, X_test):
        assert_canonical_csr(X)
        assert X.dtype == np.float64
    for y in (y_train, y_test):
        assert y.dtype == np.int64


def test_load_a9a_label_counts(a9a):
    _, y_train, _, y_test = a9a
    labels, counts = np.unique(y_train, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist())) == {-1: 24720, 1: 7841}
    labels, counts = np.unique(y_test, return_counts=True)
    assert dict(zip(labels.tolist(), counts.tolist())) == {-1: 12435, 1: 3846}


def test_load_a9a_binary_features(a9a):
    X_train, _, X_test, _ = a9a
    for X in (X_train, X_test):
        # Only explicit ones: the dense matrix has values in {0, 1}.
        assert np.all(X.data == 1.0)
        assert X.nnz > 0
    # The test set also uses the last (123rd) column range: the width is
    # fixed by n_features, not inferred from the data.
    assert X_train.indices.max() <= 122 and X_test.indices.max() <= 122


def test_load_a9a_float32(a9a):
    X_train, y_train, X_test, y_test = load_a9a(dtype=np.float32)
    assert X_train.dtype == np.float32 and X_test.dtype == np.float32
    assert_canonical_csr(X_train)
    assert_canonical_csr(X_test)
    X64_train, y64_train, X64_test, y64_test = a9a
    assert (X_train != X64_train).nnz == 0
    assert (X_test != X64_test).nnz == 0
    np.testing.assert_array_equal(y_train, y64_train)
    np.testing.assert_array_equal(y_test, y64_test)


@pytest.mark.parametrize("dtype", [np.int64, np.float16, "not a dtype"])
def test_load_a9a_bad_dtype(dtype):
    with pytest.raises(ValueError, match="dtype"):
        load_a9a(dtype=dtype)


def test_a9a_package_data_checksums():
    # sha256 of the shipped files, as listed in data/README.md and in the
    # project's data MANIFEST.
    expected = {
        "a9a.svm.gz": (
            "afbcb331031fb497e7520a662cca28ceba98132f3ff9212ecffb3f4da7290157"
        ),
        "a9a.t.svm.gz": (
            "0f678997b134284d6c7e2b58738ec6d818531f37c206d181aed768d6607f4819"
        ),
    }
    data = resources.files("sklearn_adaprox.datasets").joinpath("data")
    readme = data.joinpath("README.md").read_text(encoding="utf-8")
    for name, digest in expected.items():
        assert hashlib.sha256(data.joinpath(name).read_bytes()).hexdigest() == digest
        assert digest in readme


def test_datasets_import_is_standalone():
    # The subpackage must not import anything (compiled) from the parent
    # package.  Load it under an empty stand-in for the parent package, so the
    # check does not depend on what sklearn_adaprox/__init__.py imports.
    code = (
        "import importlib.util, sys, types\n"
        "spec = importlib.util.find_spec('sklearn_adaprox')\n"
        "parent = types.ModuleType('sklearn_adaprox')\n"
        "parent.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['sklearn_adaprox'] = parent\n"
        "import sklearn_adaprox.datasets as d\n"
        "d.make_sparse_zipf(20, 50, 5, random_state=0)\n"
        "assert d.load_a9a()[0].shape == (32561, 123)\n"
        "print(sorted(m for m in sys.modules if m.startswith('sklearn_adaprox.')\n"
        "             and not m.startswith('sklearn_adaprox.datasets')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------
# make_sparse_zipf
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zipf_data():
    """A medium problem: many rows, a vocabulary of 1000 features."""
    return make_sparse_zipf(
        n_samples=4000,
        n_features=1000,
        nnz_per_row=20,
        random_state=0,
        return_coef=True,
    )


def test_make_sparse_zipf_shape_and_types(zipf_data):
    X, y, coef = zipf_data
    assert X.shape == (4000, 1000)
    assert X.dtype == np.float64
    assert y.shape == (4000,) and y.dtype == np.int64
    assert set(np.unique(y).tolist()) == {0, 1}
    assert coef.shape == (1000,) and coef.dtype == np.float64
    assert_canonical_csr(X)
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32


def test_make_sparse_zipf_default_call_returns_pair():
    out = make_sparse_zipf(random_state=0)
    assert len(out) == 2
    X, y = out
    assert X.shape == (1000, 10_000)
    assert y.shape == (1000,)


def test_make_sparse_zipf_nnz_per_row_large_vocabulary():
    X, _ = make_sparse_zipf(2000, 200_000, 40, random_state=1)
    row_nnz = np.diff(X.indptr)
    assert row_nnz.min() >= 1
    assert abs(row_nnz.mean() - 40) <= 0.05 * 40
    # "About" nnz_per_row: the bulk of the rows is near the target.
    assert np.mean(np.abs(row_nnz - 40) <= 10) > 0.9


@pytest.mark.parametrize("n_features, nnz_per_row", [(1, 1), (5, 1), (50, 3), (30, 30)])
def test_make_sparse_zipf_rows_never_empty(n_features, nnz_per_row):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X, _ = make_sparse_zipf(300, n_features, nnz_per_row, random_state=0)
    row_nnz = np.diff(X.indptr)
    assert row_nnz.min() >= 1
    assert row_nnz.max() <= n_features
    assert_canonical_csr(X)


def test_make_sparse_zipf_unreachable_nnz_warns():
    # A steep Zipf law over 20 features cannot give 20 distinct features a
    # row with a bounded number of draws.
    with pytest.warns(UserWarning, match="distinct features"):
        X, _ = make_sparse_zipf(100, 20, 20, zipf_exponent=3.0, random_state=0)
    assert np.diff(X.indptr).min() >= 1


def test_make_sparse_zipf_unit_row_norms(zipf_data):
    X, _, _ = zipf_data
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    assert np.all(X.data > 0)


def test_make_sparse_zipf_counts_without_normalize():
    X, _ = make_sparse_zipf(500, 300, 15, normalize=False, random_state=0)
    # Term frequencies: positive integers, with repeated frequent features.
    np.testing.assert_array_equal(X.data, np.round(X.data))
    assert X.data.min() >= 1
    assert X.data.max() > 1
    assert_canonical_csr(X)
    # Same draws as the normalised version, only the scaling differs.
    Xn, _ = make_sparse_zipf(500, 300, 15, normalize=True, random_state=0)
    np.testing.assert_array_equal(Xn.indices, X.indices)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    np.testing.assert_allclose(
        Xn.data, X.data / np.repeat(norms, np.diff(X.indptr)), rtol=1e-12
    )


def test_make_sparse_zipf_frequencies_decrease_with_rank(zipf_data):
    X, _, _ = zipf_data
    doc_freq = np.bincount(X.indices, minlength=X.shape[1])
    rho = spearmanr(np.arange(X.shape[1]), doc_freq).statistic
    assert rho < -0.9
    # A few features are in most rows, most features are rare.
    assert doc_freq[0] > 0.5 * X.shape[0]
    assert np.median(doc_freq) < 0.05 * X.shape[0]


def test_make_sparse_zipf_exponent_zero_is_uniform():
    X, _ = make_sparse_zipf(4000, 200, 10, zipf_exponent=0.0, random_state=0)
    doc_freq = np.bincount(X.indices, minlength=X.shape[1])
    assert abs(spearmanr(np.arange(X.shape[1]), doc_freq).statistic) < 0.3
    assert doc_freq.max() < 1.5 * doc_freq.mean()
    assert doc_freq.min() > 0.5 * doc_freq.mean()


@pytest.mark.parametrize("positive_fraction", [0.5, 0.2, 0.01, 0.9])
def test_make_sparse_zipf_positive_fraction(positive_fraction):
    _, y = make_sparse_zipf(
        5000, 2000, 20, positive_fraction=positive_fraction, random_state=0
    )
    assert abs(y.mean() - positive_fraction) <= max(0.1 * positive_fraction, 0.005)
    assert 0 < y.sum() < y.shape[0]


def test_make_sparse_zipf_deterministic_with_seed():
    kwargs = dict(n_samples=500, n_features=3000, nnz_per_row=25, return_coef=True)
    X1, y1, c1 = make_sparse_zipf(**kwargs, random_state=42)
    X2, y2, c2 = make_sparse_zipf(**kwargs, random_state=42)
    X3, y3, c3 = make_sparse_zipf(**kwargs, random_state=np.random.RandomState(42))
    for X, y, c in ((X2, y2, c2), (X3, y3, c3)):
        np.testing.assert_array_equal(X.indptr, X1.indptr)
        np.testing.assert_array_equal(X.indices, X1.indices)
        np.testing.assert_array_equal(X.data, X1.data)
        np.testing.assert_array_equal(y, y1)
        np.testing.assert_array_equal(c, c1)


def test_make_sparse_zipf_different_seeds_differ():
    kwargs = dict(n_samples=500, n_features=3000, nnz_per_row=25, return_coef=True)
    X1, y1, c1 = make_sparse_zipf(**kwargs, random_state=0)
    X2, y2, c2 = make_sparse_zipf(**kwargs, random_state=1)
    assert X1.shape == X2.shape
    assert (X1 != X2).nnz > 0
    assert not np.array_equal(c1, c2)
    assert not np.array_equal(y1, y2)


def test_make_sparse_zipf_rows_are_a_prefix():
    # Documented: same seed, fewer samples -> the first rows are the same.
    X_small, _ = make_sparse_zipf(300, 2000, 20, random_state=3)
    X_large, _ = make_sparse_zipf(700, 2000, 20, random_state=3)
    assert (X_large[:300] != X_small).nnz == 0


def test_make_sparse_zipf_float32():
    X64, y64 = make_sparse_zipf(800, 2000, 20, random_state=5)
    X32, y32 = make_sparse_zipf(800, 2000, 20, dtype=np.float32, random_state=5)
    assert X32.dtype == np.float32
    assert_canonical_csr(X32)
    np.testing.assert_array_equal(X32.indices, X64.indices)
    np.testing.assert_allclose(X32.data, X64.data, rtol=1e-6)
    # Labels do not depend on the output dtype.
    np.testing.assert_array_equal(y32, y64)


@pytest.mark.parametrize("flip_y", [0.0, 0.05])
def test_make_sparse_zipf_coef_recovers_labels(flip_y):
    X, y, coef = make_sparse_zipf(
        4000, 5000, 30, flip_y=flip_y, random_state=0, return_coef=True
    )
    margin = X @ coef
    # Labels are the margin thresholded at its (1 - positive_fraction)
    # quantile, up to the label noise.
    pred = (margin > np.quantile(margin, 0.5)).astype(np.int64)
    accuracy = np.mean(pred == y)
    assert accuracy >= 1 - flip_y - 0.02
    assert roc_auc_score(y, margin) >= 1 - flip_y - 0.02
    # Flipped labels really are noise: the accuracy is not perfect.
    if flip_y > 0:
        assert accuracy < 1 - flip_y / 2


def test_make_sparse_zipf_coef_ranks_imbalanced():
    X, y, coef = make_sparse_zipf(
        20_000, 5000, 30, positive_fraction=0.01, random_state=0, return_coef=True
    )
    assert abs(y.mean() - 0.01) <= 0.002
    # The hidden margin ranks the rare positives well above the negatives.
    assert roc_auc_score(y, X @ coef) > 0.95


def test_make_sparse_zipf_informative_features_are_mostly_rare(zipf_data):
    X, _, coef = zipf_data
    n_features = X.shape[1]
    informative = np.flatnonzero(coef)
    assert informative.size == n_features // 10  # default: 10% of features
    doc_freq = np.bincount(X.indices, minlength=n_features)
    # Rare: most informative features occur less often than the average one ...
    assert np.median(doc_freq[informative]) < np.mean(doc_freq)
    # ... but each one is seen often enough to be learnt.
    assert doc_freq[informative].min() >= 3
    # Rarer informative features get larger weights.
    rho = spearmanr(informative, np.abs(coef[informative])).statistic
    assert rho > 0.5
    np.testing.assert_allclose(np.linalg.norm(coef), 1.0)


def test_make_sparse_zipf_informative_features_are_seen_in_large_vocabularies():
    # With a huge vocabulary most features occur once or never; the hidden
    # weights stay on features that the sample shows often enough.
    X, _, coef = make_sparse_zipf(2000, 200_000, 30, random_state=0, return_coef=True)
    informative = np.flatnonzero(coef)
    doc_freq = np.bincount(X.indices, minlength=X.shape[1])
    assert informative.size < 200_000 // 10
    assert np.median(doc_freq[informative]) >= 5


def test_make_sparse_zipf_n_informative():
    _, _, coef = make_sparse_zipf(
        200, 500, 10, n_informative=7, random_state=0, return_coef=True
    )
    assert np.count_nonzero(coef) == 7
    _, _, coef = make_sparse_zipf(50, 5, 2, random_state=0, return_coef=True)
    assert np.count_nonzero(coef) == 1  # 10% of 5 features, at least 1


def test_sample_columns_matches_searchsorted():
    rng = np.random.RandomState(0)
    for n_features, exponent in [(1, 1.1), (7, 0.0), (1000, 1.1), (50_000, 2.0)]:
        _, cdf = _zipf_probabilities(n_features, exponent)
        guide, n_buckets = _guide_table(cdf)
        u = rng.random_sample(20_000)
        # Edge cases: the ends of [0, 1) and draws exactly on CDF values.
        u[:4] = [0.0, np.nextafter(1.0, 0.0), cdf[0] % 1.0, cdf[n_features // 2] % 1.0]
        expected = np.searchsorted(cdf, u, side="right")
        got = _sample_columns(u, cdf, guide, n_buckets)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_samples=0), "n_samples"),
        (dict(n_samples=-3), "n_samples"),
        (dict(n_samples=10.0), "n_samples"),
        (dict(n_samples=True), "n_samples"),
        (dict(n_features=0), "n_features"),
        (dict(n_features="100"), "n_features"),
        (dict(nnz_per_row=0), "nnz_per_row"),
        (dict(n_features=10, nnz_per_row=11), "nnz_per_row"),
        (dict(zipf_exponent=-0.5), "zipf_exponent"),
        (dict(zipf_exponent=np.nan), "zipf_exponent"),
        (dict(zipf_exponent=np.inf), "zipf_exponent"),
        (dict(n_informative=0), "n_informative"),
        (dict(informative_scale="steep"), "informative_scale"),
        (dict(n_features=10, nnz_per_row=2, n_informative=11), "n_informative"),
        (dict(positive_fraction=0.0), "positive_fraction"),
        (dict(positive_fraction=1.0), "positive_fraction"),
        (dict(positive_fraction=-0.1), "positive_fraction"),
        (dict(flip_y=-0.01), "flip_y"),
        (dict(flip_y=1.5), "flip_y"),
        (dict(dtype=np.int32), "dtype"),
        (dict(dtype=np.float16), "dtype"),
    ],
)
def test_make_sparse_zipf_bad_arguments(kwargs, match):
    params = dict(n_samples=10, n_features=100, nnz_per_row=5, random_state=0)
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        make_sparse_zipf(**params)


def test_make_sparse_zipf_flat_scale_is_learnt_in_one_pass_at_large_width():
    """With informative_scale="flat" the frequent informative features carry
    the margin: one SGD pass learns it where "rarity" leaves a model near
    chance (its margins are spread over features seen a few times)."""
    from sklearn.linear_model import SGDClassifier
    scores = {}
    for scale in ("flat", "rarity"):
        X, y = make_sparse_zipf(60_000, 200_000, 50, informative_scale=scale,
                                random_state=0)
        sgd = SGDClassifier(max_iter=1, tol=None, random_state=0).fit(X[:50_000], y[:50_000])
        scores[scale] = sgd.score(X[50_000:], y[50_000:])
    assert scores["flat"] > 0.7
    assert scores["flat"] > scores["rarity"] + 0.1
