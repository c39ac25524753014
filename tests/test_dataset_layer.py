"""The row-access layer hands X to the kernels without copying it; the
RandomStates of its shuffles are lent without the cost of making one."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_adaprox._dataset import (as_row_arrays, columns_finite, csr_has_duplicates,
                                       csr_scores,
                                      shuffled_order, touched_columns)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_is_not_copied(dtype, container, index_dtype):
    X = container(sp.random(50, 30, density=0.2, random_state=0, dtype=dtype))
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    assert not is_dense
    assert data is X.data and indices is X.indices and indptr is X.indptr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_is_a_view(dtype):
    X = np.random.RandomState(0).rand(40, 7).astype(dtype)
    X.flags.writeable = False
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    assert is_dense and np.shares_memory(data, X)
    assert data.dtype == dtype
    np.testing.assert_array_equal(indices, np.arange(7))


def test_unsorted_rows_are_used_as_they_are():
    X = sp.csr_matrix(np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 4.0]]))
    X.indices[:2] = X.indices[:2][::-1]
    X.data[:2] = X.data[:2][::-1]
    X.has_sorted_indices = False
    data, indices, _, _, _ = as_row_arrays(X)
    assert indices is X.indices


def test_duplicates_are_summed_into_a_new_matrix():
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([1, 1, 0]),
                       np.array([0, 2, 3])), shape=(2, 3))
    assert csr_has_duplicates(X.indices, X.indptr, 3)
    data, indices, indptr, _, _ = as_row_arrays(X)
    np.testing.assert_array_equal(
        sp.csr_matrix((data, indices, indptr), shape=(2, 3)).toarray(),
        [[0.0, 3.0, 0.0], [5.0, 0.0, 0.0]],
    )
    np.testing.assert_array_equal(X.data, [1.0, 2.0, 5.0])  # caller's untouched
    assert not csr_has_duplicates(indices, indptr, 3)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_shuffled_order_is_a_reproducible_permutation(n):
    order = shuffled_order(n, 12345)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    np.testing.assert_array_equal(order, shuffled_order(n, 12345))
    if n > 2:
        assert not np.array_equal(order, shuffled_order(n, 12346))


def test_shuffled_order_draws_every_permutation_equally_often():
    # all 24 permutations of 4 rows over 24,000 seeds: each count is
    # Binomial(24000, 1/24), mean 1000, sd 31; a Fisher-Yates with a biased
    # bounded draw (or the classic off-by-one) fails this by far
    counts = {}
    for seed in range(24_000):
        key = tuple(shuffled_order(4, seed))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 24
    assert all(850 < c < 1150 for c in counts.values())
    # the chi-square statistic (23 degrees of freedom) is below its 0.999 quantile
    chi2 = sum((c - 1000) ** 2 / 1000 for c in counts.values())
    assert chi2 < 49.7



@pytest.mark.parametrize("nnz", [0, 1, 30, 5000])
@pytest.mark.parametrize("n_features", [1, 64, 1000, 1003, 2**22])
def test_touched_columns_are_the_sorted_distinct_indices(nnz, n_features):
    indices = np.random.RandomState(nnz).randint(0, n_features, nnz).astype(np.int32)
    got = touched_columns(indices, n_features)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.unique(indices))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_csr_scores_are_scipys_product_bit_for_bit(dtype, index_dtype, n_outputs):
    """The scores of a few rows against the weights of their own columns:
    the numbers of scipy's product with the whole weight matrix, in its
    order of summation, empty rows and unsorted indices included."""
    rng = np.random.RandomState(0)
    X = sp.random(40, 5000, density=0.01, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.standard_normal(n) * 1e3).astype(dtype)
    X = sp.vstack([X[:10], sp.csr_matrix((2, 5000), dtype=dtype), X[10:]], format="csr")
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    X.indices[X.indptr[3]:X.indptr[4]] = X.indices[X.indptr[3]:X.indptr[4]][::-1].copy()
    assert np.any(np.diff(X.indptr) == 0)
    W = rng.standard_normal((n_outputs, 5000))
    columns = touched_columns(X.indices, X.shape[1])
    got = csr_scores(X.data, np.searchsorted(columns, X.indices), X.indptr,
                     np.ascontiguousarray(W[:, columns]))
    np.testing.assert_array_equal(got, X @ W.T)


@pytest.mark.parametrize("shape, axis", [((50,), 0), ((3, 50), 1), ((50, 2), 0),
                                         ((2, 50, 5), 1)])
def test_columns_finite_reads_the_listed_columns_in_place(shape, axis):
    # the per-pass check of a wide model's state reads X's columns where
    # they are: the same answer as a copy of them through np.take
    rng = np.random.RandomState(0)
    columns = np.array([0, 7, 8, 31, 49], dtype=np.int64)
    unlisted = 20
    for bad in (np.nan, np.inf, -np.inf):
        for where in (*columns, unlisted):
            array = rng.standard_normal(shape)
            index = [n - 1 for n in shape]  # the last entry of column ``where``
            index[axis] = where
            array[tuple(index)] = bad
            expected = bool(np.isfinite(np.take(array, columns, axis=axis)).all())
            assert expected == (where == unlisted)
            assert columns_finite(array, columns, axis) is expected
            # other layouts go through NumPy, with the same answer
            assert columns_finite(array.astype(np.float32), columns, axis) is expected
            assert columns_finite(np.asfortranarray(array), columns, axis) is expected
    assert columns_finite(np.full(shape, np.nan), np.array([], dtype=np.int64), axis)


def test_columns_finite_refuses_columns_and_axes_out_of_range():
    array = np.zeros((3, 10))
    with pytest.raises(ValueError, match=r"columns must lie in \[0, 10\)"):
        columns_finite(array, np.array([2, 10], dtype=np.int64), 1)
    with pytest.raises(ValueError, match=r"columns must lie in \[0, 10\)"):
        columns_finite(array, np.array([-1, 2], dtype=np.int64), 1)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        columns_finite(array, np.array([0], dtype=np.int64), 2)


def test_columns_are_read_in_place_only_where_that_reads_less():
    # the per-pass check reads X's columns where they are when their cache
    # lines are at most a quarter of the array's, else streams the whole
    from sklearn_adaprox._base import columns_are_worth_reading

    width = 2**20
    few = np.arange(0, width, 64, dtype=np.int64)  # 1/64 of the columns
    many = np.arange(0, width, 8, dtype=np.int64)  # 1/8, as 20 newsgroups' unigrams
    multinomial = np.empty((1, width, 40))  # 320 bytes a column: five lines
    pairs = np.empty((width, 2))  # a one-vs-rest problem's (u, root)
    weights = np.empty((20, width))  # 8 bytes a column
    assert columns_are_worth_reading(multinomial, many)
    assert not columns_are_worth_reading(multinomial, np.arange(0, width, 3, dtype=np.int64))
    assert not columns_are_worth_reading(pairs, many, 0)
    assert columns_are_worth_reading(pairs, few, 0)
    assert not columns_are_worth_reading(weights, many)
    assert columns_are_worth_reading(weights, np.arange(0, width, 512, dtype=np.int64))
    assert not columns_are_worth_reading(multinomial, None)


def test_lent_random_state_is_check_random_state_s_stream():
    """An integer seed lends a RandomState of ``np.random.RandomState(seed)``'s
    stream, reseeded for every borrower (after one that stopped mid-stream
    too), never one instance to two borrowers at once; None and RandomState
    instances are ``check_random_state``'s; a seed out of range raises as
    RandomState does."""
    from sklearn.utils import check_random_state

    from sklearn_adaprox._base import lent_random_state

    for seed in (0, 7, 2**32 - 1, np.int64(12345)):
        with lent_random_state(seed) as rng:
            np.testing.assert_array_equal(rng.permutation(50),
                                          np.random.RandomState(seed).permutation(50))
        with lent_random_state(seed) as first, lent_random_state(seed) as second:
            assert first is not second
            first.rand(3)  # a borrower that stops mid-stream
            assert second.randint(10**9) == np.random.RandomState(seed).randint(10**9)
        with lent_random_state(seed) as again:
            assert again.randint(10**9) == np.random.RandomState(seed).randint(10**9)
    with lent_random_state(None) as rng:
        assert rng is check_random_state(None)
    mine = np.random.RandomState(1)
    with lent_random_state(mine) as rng:
        assert rng is mine
    for bad in (-1, 2**32):
        with pytest.raises(ValueError):
            np.random.RandomState(bad)
        with pytest.raises(ValueError):
            with lent_random_state(bad):
                pass
