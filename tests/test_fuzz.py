"""Property-based fuzz of sparse input: any CSR structure, valid or not.

Hypothesis draws a CSR matrix (unsorted, possibly duplicated entries; int32
or int64 indices and indptr), then damages it with up to two random
perturbations of its indices, indptr or array lengths, and may make any of
its three arrays strided.  Whatever comes out goes through ``fit``,
``partial_fit`` (first call or continuing a fitted model) or
``decision_function`` / ``predict`` of a random estimator configuration, in a
forked child of a fuzz server (``hostile_cases.FuzzServer``), so a crash
fails the example instead of the session.  The property:

* if the arrays form a valid CSR matrix (the oracle below, written from the
  definition), the call succeeds with a finite model (or prediction) equal to
  that of the canonical matrix (contiguous, sorted, duplicates summed);
* otherwise it raises ``ValueError("Malformed sparse matrix X: ...")`` and
  the estimator's pickled bytes are unchanged.

Bounded to a few hundred examples (about 10-20 s); derandomised, so a run is
reproducible.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import hostile_cases as hc

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def server():
    s = hc.FuzzServer()
    yield s
    s.close()


def structure_is_valid(data, indices, indptr, shape):
    """The definition of a CSR matrix of ``shape``."""
    n_rows, n_cols = shape
    if not (data.ndim == indices.ndim == indptr.ndim == 1):
        return False
    if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
        return False
    if indptr.shape[0] != n_rows + 1 or indptr[0] != 0:
        return False
    if np.any(np.diff(indptr.astype(np.int64)) < 0):
        return False
    nnz = int(indptr[-1])
    if indices.shape[0] != nnz or data.shape[0] != nnz:
        return False
    return bool(np.all((indices >= 0) & (indices < n_cols)))


@st.composite
def csr_parts(draw):
    n_rows = draw(st.integers(2, 6))
    n_cols = draw(st.integers(1, 6))
    # row by row: columns in any order, repeats allowed
    rows = [draw(st.lists(st.integers(0, n_cols - 1), max_size=n_cols + 1))
            for _ in range(n_rows)]
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    indptr_dtype = draw(st.sampled_from([np.int32, np.int64]))
    indices = np.array([j for row in rows for j in row], dtype=index_dtype)
    indptr = np.cumsum([0] + [len(row) for row in rows]).astype(indptr_dtype)
    seed = draw(st.integers(0, 2**16))
    data = np.random.RandomState(seed).randn(indices.shape[0])

    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from([
            "index", "index", "indptr_entry", "indptr_entry", "indptr_drop_last",
            "indptr_drop_first", "indptr_append", "data_trim", "indices_trim",
            "data_extend", "indices_extend",
        ]))
        if kind == "index" and indices.shape[0]:
            k = draw(st.integers(0, indices.shape[0] - 1))
            bad = [-1, n_cols, n_cols + 1, INT32_MAX, INT32_MIN]
            if indices.dtype == np.int64:
                bad += [2**31 + 5, 2**40]
            indices = indices.copy()
            indices[k] = draw(st.sampled_from(bad) | st.integers(-2, n_cols + 2))
        elif kind == "indptr_entry":
            k = draw(st.integers(0, indptr.shape[0] - 1))
            indptr = indptr.copy()
            indptr[k] = draw(st.integers(-2, int(indptr[-1]) + 2) | st.just(INT32_MAX))
        elif kind == "indptr_drop_last":
            indptr = indptr[:-1].copy()
        elif kind == "indptr_drop_first":
            indptr = indptr[1:].copy()
        elif kind == "indptr_append":
            indptr = np.append(indptr, indptr[-1]).astype(indptr.dtype)
        elif kind == "data_trim" and data.shape[0]:
            data = data[: -draw(st.integers(1, data.shape[0]))].copy()
        elif kind == "indices_trim" and indices.shape[0]:
            indices = indices[: -draw(st.integers(1, indices.shape[0]))].copy()
        elif kind == "data_extend":
            data = np.append(data, np.ones(draw(st.integers(1, 3))))
        elif kind == "indices_extend":
            extra = draw(st.lists(st.integers(0, n_cols - 1), min_size=1, max_size=3))
            indices = np.append(indices, extra).astype(indices.dtype)
    strided = {name: draw(st.booleans()) for name in ("data", "indices", "indptr")}
    return {"shape": (n_rows, n_cols), "data": data, "indices": indices,
            "indptr": indptr, "strided": strided}


def canonical(parts):
    """The valid matrix as scipy's canonical CSR: sorted, duplicates summed."""
    X = sp.csr_matrix((parts["data"], parts["indices"], parts["indptr"]),
                      shape=parts["shape"])
    X = X.copy()
    X.sum_duplicates()
    return X


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(parts=csr_parts(), config=st.sampled_from(list(hc.CONFIGS)),
       method=st.sampled_from(["fit", "partial_fit", "partial_fit_fitted", "predict_like"]))
def test_any_csr_structure_is_refused_cleanly_or_learnt_as_its_canonical_form(
        server, parts, config, method):
    task = hc.config_task(config)
    n_rows, n_cols = parts["shape"]
    if method == "predict_like":
        method = "predict" if task == "regression" else "decision_function"
    if task == "regression":
        y = np.random.RandomState(n_rows).randn(n_rows)
    else:
        y = np.arange(n_rows) % (3 if task == "multiclass" else 2)
    valid = structure_is_valid(parts["data"], parts["indices"], parts["indptr"],
                               parts["shape"])
    request = {**parts, "config": config, "method": method, "n_features": n_cols,
               "y": y, "canonical": canonical(parts) if valid else None}
    result = server.run(request)
    summary = (f"{config}.{method} on a {'valid' if valid else 'malformed'} CSR "
               f"{parts}: {result}")
    if valid:
        assert result["outcome"] == "ok", summary
    else:
        assert result["outcome"] == "clean_error", summary
        assert result["message_ok"], summary


def test_oracle_agrees_with_scipy_full_check():
    """The validity oracle is the definition scipy's full check implements
    (on the structures scipy's constructor lets through)."""
    rng = np.random.RandomState(0)
    for _ in range(300):
        n_rows, n_cols = rng.randint(1, 5), rng.randint(1, 5)
        nnz = rng.randint(0, 6)
        indices = rng.randint(-1, n_cols + 1, size=nnz).astype(np.int32)
        indptr = np.sort(rng.randint(0, nnz + 1, size=n_rows + 1)).astype(np.int32)
        indptr[0] = 0
        if rng.rand() < 0.7:
            indptr[-1] = nnz
        data = rng.randn(nnz)
        try:
            X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))
            X.check_format(full_check=True)
            # scipy drops entries past indptr[-1] instead of refusing them
            scipy_valid = int(indptr[-1]) == nnz
        except ValueError:
            scipy_valid = False
        assert structure_is_valid(data, indices, indptr, (n_rows, n_cols)) == scipy_valid
