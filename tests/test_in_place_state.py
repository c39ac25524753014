"""AdaGrad's element-wise state and implicit FTRL's theta are updated in
place: a partial_fit call and the scoring of a sparse row cost what the rows
cost, whatever n_features, and the model is the one the documented coef_
describes."""
import pickle
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import is_classifier
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_adaprox import (AdaGradClassifier, ImplicitFTRLClassifier, ImplicitFTRLRegressor,
                             _short_calls)

UPDATES = ["dual_averaging", "mirror_descent", "ftrl_proximal"]
WIDE = 2**22  # a fitted state of 2**22 x 16 bytes = 64 MiB (plus the intercept)


def _stream(n_rows=400, n_features=50, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, n_features, density=0.2, format="csr", random_state=rng)
    y = np.where(X @ rng.standard_normal(n_features) > 0, 1, -1)
    return X, y


@pytest.fixture(params=["short path", "general path"])
def call_path(request, monkeypatch):
    """AdaGradClassifier's calls on a few rows through its short path
    (``_short_calls``), or all through the general one."""
    if request.param == "general path":
        monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    return request.param


def _peak_bytes(call):
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("update", UPDATES)
def test_a_one_row_call_allocates_what_the_row_needs(update, call_path):
    """numpy reports its buffers to tracemalloc: the peak of a continuing
    call on one row of a 2**22-column model must be far below the state."""
    rng = np.random.RandomState(0)
    cols = rng.choice(WIDE, 30, replace=False)
    X = sp.csr_matrix((rng.standard_normal(30), (rng.randint(0, 3, 30), cols)),
                      shape=(3, WIDE))
    clf = AdaGradClassifier(update=update, penalty="l1", alpha=1e-3, random_state=0)
    clf.partial_fit(X, [1, -1, 1], classes=[-1, 1])
    row = X[1]
    assert _peak_bytes(lambda: clf.partial_fit(row, [-1])) < 2**20
    assert _peak_bytes(lambda: clf.decision_function(row)) < 2**20
    assert _peak_bytes(lambda: clf.predict(row)) < 2**20
    assert clf.t_ == 4


@pytest.mark.parametrize("update", UPDATES)
def test_sparse_scores_from_the_columns_of_x_equal_the_full_product(update, call_path):
    X, y = _stream()
    wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], 10_000))
    clf = AdaGradClassifier(update=update, penalty="elasticnet", alpha=1e-3,
                            random_state=0).fit(wide, y)
    few = wide[:7]  # fewer non-zeros than weights: the column path
    assert 2 * few.nnz < few.shape[1]
    got = clf.decision_function(few)
    assert_array_equal(got, (few @ clf.coef_.T).ravel() + clf.intercept_)
    # dense rows: BLAS sums in its own order
    np.testing.assert_allclose(got, clf.decision_function(few.toarray()), rtol=1e-12)


@pytest.mark.parametrize("update", UPDATES)
def test_coef_keeps_its_meaning_after_set_params(update):
    X, y = _stream()
    clf = AdaGradClassifier(update=update, penalty="l1", alpha=1e-3).fit(X, y)
    coef = clf.coef_.copy()
    clf.set_params(alpha=1.0, eta=5.0)
    assert_array_equal(clf.coef_, coef)
    copy = pickle.loads(pickle.dumps(clf))
    assert_array_equal(copy.coef_, coef)
    assert "coef_" not in vars(copy)  # a function of the state, not stored


@pytest.mark.parametrize("update", ["dual_averaging", "mirror_descent"])
def test_switching_layouts_mid_stream_keeps_the_state(update):
    """l2 (in place) -> linf (arrays) -> l2: a chunk of zero sample weights
    takes no step, so every switch must leave the model exactly as it was."""
    X, y = _stream()
    clf = AdaGradClassifier(update=update, penalty="l2", alpha=1e-3, random_state=0)
    clf.partial_fit(X[:200], y[:200], classes=[-1, 1])
    before = {name: np.array(getattr(clf, name)) for name in
              ("coef_", "sum_gradient_", "sum_sq_gradient_", "intercept_")}
    accumulators = clf.accumulators_.copy()
    zero = np.zeros(10)
    for penalty in ("linf", "l2"):
        clf.set_params(penalty=penalty, alpha=0.0 if penalty == "linf" else 1e-3)
        clf.partial_fit(X[200:210], y[200:210], sample_weight=zero)
        assert ("accumulators_" in vars(clf)) == (penalty == "l2")
        for name, value in before.items():
            assert_array_equal(getattr(clf, name), value, err_msg=f"{penalty}: {name}")
    # the root survives its square (mirror descent's weights are restarted
    # at step t_, the same coef_: checked above)
    assert_array_equal(clf.accumulators_[..., :2], accumulators[..., :2])


def test_mirror_descent_entries_hold_weights_and_steps_on_cache_lines():
    """Mirror descent's state is one entry of four doubles a coordinate,
    (u, root, w, step), each in one cache line: the array starts a line
    after a fit, after a change of rule and after a merge, and a state that
    does not (unpickled) is realigned by the call that continues it, to the
    model the state would have given in place.  md_weights_ and md_steps_
    read the entries."""
    from sklearn_adaprox import merge

    X, y = _stream()
    clf = AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-3,
                            random_state=0).partial_fit(X[:200], y[:200], classes=[-1, 1])
    acc = clf.accumulators_
    assert acc.shape == (1, X.shape[1], 4) and acc.ctypes.data % 64 == 0
    assert_array_equal(clf.md_weights_, acc[..., 2])
    assert clf.md_steps_.dtype == np.int64 and clf.md_steps_.max() == clf.t_
    assert_array_equal(clf.md_steps_, acc[..., 3])
    assert not clf.md_weights_.flags.writeable  # changed by fitting only

    moved = pickle.loads(pickle.dumps(clf))  # NumPy aligns to 16 bytes only
    acc = moved.accumulators_
    buffer = np.empty(acc.size + 16)  # and here, 16 bytes past a cache line
    start = next(i for i in range(8) if (buffer.ctypes.data + 8 * i) % 64 == 16)
    moved.accumulators_ = buffer[start:start + acc.size].reshape(acc.shape)
    moved.accumulators_[...] = acc
    resumed = moved.partial_fit(X[200:], y[200:])
    assert resumed.accumulators_.ctypes.data % 64 == 0
    clf.partial_fit(X[200:], y[200:])
    assert_array_equal(resumed.accumulators_, clf.accumulators_)
    assert_array_equal(resumed.coef_, clf.coef_)

    other = AdaGradClassifier(update="dual_averaging", penalty="l1", alpha=1e-3,
                              random_state=0).partial_fit(X[:50], y[:50], classes=[-1, 1])
    assert other.accumulators_.shape[-1] == 2 and not hasattr(other, "md_weights_")
    other.set_params(update="mirror_descent").partial_fit(X[50:60], y[50:60])
    assert other.accumulators_.shape[-1] == 4
    assert other.accumulators_.ctypes.data % 64 == 0
    merged = merge([clf, resumed])
    assert merged.accumulators_.ctypes.data % 64 == 0
    assert_array_equal(merged.md_steps_, merged.t_)


def test_a_model_pickled_with_mirror_descent_weights_in_arrays_of_their_own_loads():
    """Before its entries held them, mirror descent kept md_weights_ and
    md_steps_ as fitted arrays beside the (u, root) pairs: such a pickle
    loads into the entries, predicts and resumes as the model it was."""
    X, y = _stream()
    est = AdaGradClassifier(update="mirror_descent", penalty="l2", alpha=1e-3,
                            random_state=0).partial_fit(X[:200], y[:200], classes=[-1, 1])
    old_state = dict(est.__getstate__())
    acc = old_state.pop("accumulators_")
    old_state.update(accumulators_=acc[..., :2].copy(), md_weights_=acc[..., 2].copy(),
                     md_steps_=acc[..., 3].astype(np.int64))
    loaded = AdaGradClassifier.__new__(AdaGradClassifier)
    loaded.__setstate__(pickle.loads(pickle.dumps(old_state)))
    assert "md_weights_" not in vars(loaded)
    assert_array_equal(loaded.accumulators_, est.accumulators_)
    assert_array_equal(loaded.predict(X), est.predict(X))
    loaded.partial_fit(X[200:], y[200:])
    est.partial_fit(X[200:], y[200:])
    assert_array_equal(loaded.accumulators_, est.accumulators_)
    assert_array_equal(loaded.coef_, est.coef_)


def test_a_failing_call_restores_the_touched_columns_only_it_changed(monkeypatch):
    X, y = _stream()
    clf = AdaGradClassifier(random_state=0).partial_fit(X[:300], y[:300], classes=[-1, 1])
    before = pickle.dumps(clf)
    from sklearn_adaprox import _base

    def fail(self, when):
        raise ValueError("injected")

    monkeypatch.setattr(_base.BaseOnlineLinearModel, "_check_finite_state", fail)
    # the general path's transaction (the short path's: test_short_calls.py)
    monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    with pytest.raises(ValueError, match="injected"):
        clf.partial_fit(X[300:], y[300:])
    assert pickle.dumps(clf) == before


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_quick_checks_of_a_continuing_call_give_the_general_path_model(
        dense, dtype, monkeypatch):
    """Arrays of the fitted width and labels that are classes take a few
    cheap checks instead of scikit-learn's validation; lists of labels take
    the general path: the models must be the same, and what the quick checks
    decline (a label that is not a class, a NaN) gets the general message.
    (The transaction's checks, without the short path of test_short_calls.)"""
    monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    X, y = _stream(seed=1)
    X = (X.toarray() if dense else X).astype(dtype)
    labels = np.where(y > 0, "spam", "ham")
    quick = AdaGradClassifier(random_state=0).partial_fit(X[:50], labels[:50],
                                                          classes=["ham", "spam"])
    general = AdaGradClassifier(random_state=0).partial_fit(X[:50], labels[:50],
                                                            classes=["ham", "spam"])
    for i in range(50, 120):
        quick.partial_fit(X[i:i + 1], labels[i:i + 1])
        general.partial_fit(X[i:i + 1], labels[i:i + 1].tolist())
    assert_array_equal(quick.coef_, general.coef_)
    assert_array_equal(quick.intercept_, general.intercept_)
    with pytest.raises(ValueError, match=r"labels \['eggs'\] that are not in classes"):
        quick.partial_fit(X[:2], np.array(["ham", "eggs"]))
    numeric = AdaGradClassifier().partial_fit(X[:50], y[:50], classes=[-1, 1])
    with pytest.raises(ValueError, match="NaN"):
        numeric.partial_fit(X[:2], np.array([1.0, np.nan]))


@pytest.mark.parametrize("est", [ImplicitFTRLClassifier(G=1.0), ImplicitFTRLRegressor(G=1.0)],
                         ids=lambda e: type(e).__name__)
def test_implicit_ftrl_one_row_calls_and_column_scores(est):
    rng = np.random.RandomState(0)
    X = sp.csr_matrix((rng.standard_normal(60), (rng.randint(0, 6, 60),
                                                 rng.choice(WIDE, 60, replace=False))),
                      shape=(6, WIDE))
    y = np.array([1, -1, 1, 1, -1, 1])
    est = est.partial_fit(X[:3], y[:3], **({"classes": [-1, 1]} if is_classifier(est) else {}))
    row = X[3]
    assert _peak_bytes(lambda: est.partial_fit(row, y[3:4])) < 2**20
    assert _peak_bytes(lambda: est.predict(row)) < 2**20
    expected = (X[3:] @ est.coef_.T).ravel() + est.intercept_[0]
    scores = est.decision_function(X[3:]) if hasattr(est, "decision_function") \
        else est.predict(X[3:])
    assert_array_equal(scores, expected)
    # times the reciprocal, as the kernel reads a weight
    np.testing.assert_allclose(est.coef_, est.scaled_coef_ / est.lambda_[:, None]
                               if est.scaled_coef_.ndim == 2 else est.scaled_coef_ / est.lambda_[0],
                               rtol=1e-15)


@pytest.mark.parametrize("est", [AdaGradClassifier(loss="log_loss", random_state=0),
                                 ImplicitFTRLClassifier(random_state=0)], ids=repr)
def test_a_new_fit_never_reads_the_weights_cached_for_the_last_one(est):
    """The computed coef_ is cached per state; a new fit (and every call
    after it) names its state afresh, so that scores read after it are the
    new model's, whatever the width of either fit."""
    rng = np.random.RandomState(0)
    wide = sp.random(60, 400, density=0.05, random_state=rng, format="csr")
    narrow = sp.random(60, 30, density=0.3, random_state=rng, format="csr")
    y = np.arange(60) % 2
    for X in (wide, narrow, wide):
        est.set_params(max_iter=3, tol=None).fit(X, y)
        expected = X @ est.coef_.T + est.intercept_
        assert_allclose(est.decision_function(X), expected.ravel(), rtol=1e-12)
        assert est.coef_.shape == (1, X.shape[1])
