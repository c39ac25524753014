"""The walk-through of doc/architecture.md, followed: a plain SGD classifier
(hinge loss, constant step, l2 penalty) built on the base class with its two
hooks, its pass written in NumPy.  The base class then gives it the
contract: validation before any change, sample weights, one-vs-rest,
``partial_fit`` over chunks equal to one pass, dense equal to CSR."""
import pickle
from numbers import Real

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.utils._param_validation import Interval

from sklearn_adaprox._base import BaseOnlineLinearClassifier


class PlainSGDClassifier(BaseOnlineLinearClassifier):
    """Per row: ``w <- (1 - eta alpha) w + eta sw y x`` when the margin
    ``y (w.x + b)`` is below 1 (the hinge loss), the loss measured before
    the step."""

    _parameter_constraints = {
        **BaseOnlineLinearClassifier._parameter_constraints,
        "eta": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, eta=0.05, alpha=1e-4, fit_intercept=True, max_iter=5, tol=None,
                 n_iter_no_change=5, shuffle=True, random_state=None, warm_start=False,
                 class_weight=None, n_jobs=None, verbose=0):
        self.eta = eta
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _init_state(self, n_problems, n_features):
        self.coef_ = np.zeros((n_problems, n_features))
        self.intercept_ = np.zeros(n_problems)

    def _run_epoch(self, k, rows, y, sample_weight, order):
        data, indices, indptr, is_dense, n_features = rows
        w = self.coef_[k]
        total_loss = total_weight = 0.0
        for i in order:
            sw = sample_weight[i]
            if sw == 0.0:  # not a step
                continue
            if is_dense:
                columns = np.arange(n_features)
                x = data[i * n_features:(i + 1) * n_features]
            else:
                columns = indices[indptr[i]:indptr[i + 1]]
                x = data[indptr[i]:indptr[i + 1]]
            margin = y[i] * (x @ w[columns] + self.intercept_[k])
            total_loss += sw * max(0.0, 1.0 - margin)
            total_weight += sw
            w *= 1.0 - self.eta * self.alpha  # O(n_features): fine in a test
            if margin < 1.0:
                w[columns] += self.eta * sw * y[i] * x
                if self.fit_intercept:
                    self.intercept_[k] += self.eta * sw * y[i]
        return total_loss, total_weight


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 6) * (rng.rand(200, 6) < 0.7)
    y = np.where(X @ rng.randn(6) + 0.2 * rng.randn(200) > 0, 1, 0)
    return X, y


def test_it_learns_and_is_an_estimator(data):
    X, y = data
    model = PlainSGDClassifier(random_state=0).fit(X, y)
    assert model.score(X, y) > 0.9
    assert len(model.loss_curve_) == 5 and model.loss_curve_[-1] < model.loss_curve_[0]
    assert clone(model).get_params() == model.get_params()
    assert pickle.loads(pickle.dumps(model)).score(X, y) == model.score(X, y)


def test_chunks_dense_csr_and_weights_follow_the_contract(data):
    X, y = data
    one = PlainSGDClassifier().partial_fit(X, y, classes=[0, 1])
    chunks = PlainSGDClassifier()
    for lo in range(0, 200, 30):
        chunks.partial_fit(X[lo:lo + 30], y[lo:lo + 30], classes=[0, 1])
    assert_array_equal(chunks.coef_, one.coef_)
    csr = PlainSGDClassifier().partial_fit(sp.csr_matrix(X), y, classes=[0, 1])
    assert_allclose(csr.coef_, one.coef_, rtol=1e-12, atol=1e-14)
    weights = np.where(np.arange(200) % 3 == 0, 0.0, 1.0)
    weighted = PlainSGDClassifier().partial_fit(X, y, classes=[0, 1], sample_weight=weights)
    kept = weights > 0
    dropped = PlainSGDClassifier().partial_fit(X[kept], y[kept], classes=[0, 1])
    assert_array_equal(weighted.coef_, dropped.coef_)


def test_bad_input_raises_and_changes_nothing(data):
    X, y = data
    model = PlainSGDClassifier().partial_fit(X, y, classes=[0, 1])
    before = pickle.dumps(model)
    X_bad = X.copy()
    X_bad[-1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(X_bad, y)
    with pytest.raises(ValueError, match="labels"):
        model.partial_fit(X, np.where(y == 1, 1, 7))
    assert pickle.dumps(model) == before


def test_one_vs_rest_comes_from_the_base_class(data):
    X, _ = data
    y3 = np.argmax(X[:, :3], axis=1)
    model = PlainSGDClassifier(random_state=0, max_iter=10).fit(X, y3)
    assert model.coef_.shape == (3, 6)
    assert model.score(X, y3) > 0.8
