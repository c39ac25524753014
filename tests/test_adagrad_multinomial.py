"""Multinomial AdaGradClassifier: one weight matrix for all classes, the
softmax and multi-class hinge losses, and the mixed-norm penalties that drop
a feature for every class at once (Duchi, Hazan & Singer 2011, section 5)."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax
from sklearn.datasets import load_digits

from reference.multinomial import (
    multinomial_adagrad_reference,
    multinomial_loss_gradient,
)
from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox._loss import make_multinomial_loss

ELEMENTWISE = ["l2", "l1", "elasticnet", None]
MIXED = ["l1_l2", "l1_linf"]
UPDATES = ["dual_averaging", "mirror_descent", "ftrl_proximal"]


@pytest.fixture(scope="module")
def small_multiclass_problem():
    """4 classes, 12 features, many zeros (idle rows exercise the lazy
    catch-up), some zero sample weights."""
    rng = np.random.RandomState(0)
    X = rng.randn(160, 12) * (rng.rand(160, 12) < 0.35)
    W_true = rng.randn(12, 4) * (rng.rand(12, 1) < 0.6)
    y = np.argmax(X @ W_true + 0.3 * rng.randn(160, 4), axis=1)
    sample_weight = rng.uniform(0.2, 2.0, 160)
    sample_weight[::9] = 0.0
    return X, y, sample_weight


def _cases():
    for loss, update, penalty in itertools.product(
        ["log_loss", "hinge"], UPDATES, ELEMENTWISE + MIXED
    ):
        if update == "ftrl_proximal" and penalty in MIXED:
            continue
        yield loss, update, penalty


def _cases_with_matrix():
    for loss, update, penalty in _cases():
        yield loss, update, penalty, "diagonal"
        if update == "dual_averaging":  # the non-adaptive baseline
            yield loss, update, penalty, "identity"


@pytest.mark.parametrize("loss, update, penalty, matrix", list(_cases_with_matrix()))
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_kernel_matches_reference(small_multiclass_problem, loss, update, penalty,
                                  matrix, fit_intercept):
    X, y, sample_weight = small_multiclass_problem
    clf = AdaGradClassifier(
        loss=loss, update=update, penalty=penalty, multi_class="multinomial",
        alpha=0.02 if penalty in MIXED else 1e-2, l1_ratio=0.6, eta=0.5,
        delta=0.05 if update == "mirror_descent" else 0.0, matrix=matrix,
        fit_intercept=fit_intercept, max_iter=1, tol=None, shuffle=False,
    )
    l1, l2 = clf._penalty_strengths()
    W, b, U, SSQ, b_u, b_ssq, t, sum_loss = multinomial_adagrad_reference(
        X, y, sample_weight, 4, loss=loss, update=update,
        penalty=penalty if penalty in MIXED else "elementwise", eta=clf.eta,
        delta=clf.delta, l1=l1, l2=l2, lam=clf.alpha if penalty in MIXED else 0.0,
        fit_intercept=fit_intercept, adaptive=matrix == "diagonal",
    )
    for X_in in (X, sp.csr_matrix(X)):
        clf.fit(X_in, y, sample_weight=sample_weight)
        assert_allclose(clf.coef_, W.T, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_, b, rtol=0, atol=1e-10)
        assert_allclose(clf.sum_gradient_, U.T, rtol=0, atol=1e-10)
        assert_allclose(clf.sum_sq_gradient_, SSQ.T, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_sum_gradient_, b_u, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_sum_sq_gradient_, b_ssq, rtol=0, atol=1e-10)
        assert clf.t_ == t
        assert_allclose(clf.loss_curve_[0], sum_loss / sample_weight.sum(), rtol=1e-10)


@pytest.mark.parametrize("name", ["log_loss", "hinge"])
def test_multinomial_losses_match_numpy_and_finite_differences(name):
    rng = np.random.RandomState(1)
    loss = make_multinomial_loss(name)
    for _ in range(50):
        p = rng.randn(5) * 2
        y = rng.randint(5)
        value, grad = loss.py_loss_gradient(p, y)
        ref_value, ref_grad = multinomial_loss_gradient(name, p, y)
        assert_allclose(value, ref_value, rtol=1e-12, atol=1e-14)
        assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-14)
        h = 1e-6
        numeric = [(loss.py_loss_gradient(p + h * e, y)[0]
                    - loss.py_loss_gradient(p - h * e, y)[0]) / (2 * h)
                   for e in np.eye(5)]
        assert_allclose(grad, numeric, atol=1e-6)  # away from hinge kinks w.p. 1


def test_softmax_is_stable_for_huge_scores():
    value, grad = make_multinomial_loss("log_loss").py_loss_gradient(
        np.array([1e4, -1e4, 0.0]), 1)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert_allclose(value, 2e4)
    assert_allclose(grad, [1.0, -1.0, 0.0])


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def test_predict_proba_is_the_softmax_and_agrees_with_predict(digits):
    X, y = digits
    clf = AdaGradClassifier(loss="log_loss", multi_class="multinomial",
                            random_state=0, max_iter=5, tol=None).fit(X, y)
    proba = clf.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_allclose(proba, softmax(X @ clf.coef_.T + clf.intercept_, axis=1))
    assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    assert clf.score(X, y) > 0.9


def test_two_classes_expose_one_weight_vector(digits):
    X, y = digits
    mask = y < 2
    clf = AdaGradClassifier(loss="log_loss", multi_class="multinomial",
                            max_iter=2, tol=None, random_state=0)
    clf.fit(X[mask], y[mask])
    assert clf.coef_.shape == (1, X.shape[1])
    assert clf.class_coef_.shape == (2, X.shape[1])
    scores = X[mask] @ clf.class_coef_.T + clf.class_intercept_
    assert_allclose(clf.decision_function(X[mask]), scores[:, 1] - scores[:, 0])
    assert_allclose(clf.predict_proba(X[mask]), softmax(scores, axis=1))


@pytest.mark.parametrize("penalty", MIXED)
@pytest.mark.parametrize("update", ["dual_averaging", "mirror_descent"])
def test_mixed_norms_drop_whole_features(digits, penalty, update):
    X, y = digits
    # (the softmax gradient moves every class, so every entry of a touched
    # row takes every step)
    clf = AdaGradClassifier(loss="log_loss", multi_class="multinomial",
                            penalty=penalty, alpha=2e-3, update=update, max_iter=3,
                            tol=None, random_state=0).fit(X, y)
    zero_rows = np.all(clf.coef_ == 0, axis=0)
    # A mixed norm keeps or drops a feature's whole row.
    assert np.count_nonzero(clf.coef_ == 0) == zero_rows.sum() * clf.coef_.shape[0]
    assert 0.1 < zero_rows.mean() < 0.9
    assert clf.score(X, y) > 0.8
    # element-wise l1 at the same strength leaves partial rows
    l1 = AdaGradClassifier(loss="log_loss", multi_class="multinomial",
                           penalty="l1", alpha=2e-3,
                           update=update, max_iter=3, tol=None,
                           random_state=0).fit(X, y)
    partial_rows = np.any(l1.coef_ == 0, axis=0) & ~np.all(l1.coef_ == 0, axis=0)
    assert partial_rows.any()


def test_group_strength_orders_sparsity(digits):
    X, y = digits
    kept = [np.mean(np.any(AdaGradClassifier(
        multi_class="multinomial", penalty="l1_l2", alpha=alpha, max_iter=2,
        tol=None, random_state=0).fit(X, y).coef_ != 0, axis=0))
        for alpha in (1e-4, 1e-3, 1e-2)]
    assert kept[0] >= kept[1] >= kept[2]
    assert kept[0] > kept[2]


@pytest.mark.parametrize("params, message", [
    (dict(multi_class="multinomial", loss="squared_hinge"), "supports loss"),
    (dict(penalty="l1_l2"), "needs multi_class='multinomial'"),
    (dict(multi_class="multinomial", penalty="l1_linf", update="ftrl_proximal"),
     "ftrl_proximal"),
    (dict(multi_class="multinomial", penalty="linf"), "multi_class='ovr'"),
    (dict(multi_class="multinomial", penalty=None, l1_ball=1.0), "multi_class='ovr'"),
    (dict(multi_class="multinomial", penalty=None, matrix="full"), "multi_class='ovr'"),
    (dict(matrix="identity", update="mirror_descent"), "non-adaptive"),
    (dict(matrix="identity", penalty="linf"), "non-adaptive"),
])
def test_refused_combinations_change_nothing(digits, params, message):
    X, y = digits
    clf = AdaGradClassifier(**params)
    with pytest.raises(ValueError, match=message):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_") and not hasattr(clf, "n_features_in_")


@pytest.mark.parametrize("start, change", [
    (dict(multi_class="multinomial"), dict(multi_class="ovr")),
    (dict(), dict(matrix="full")),
    (dict(matrix="full"), dict(fit_intercept=False)),
])
def test_structure_cannot_change_mid_stream(digits, start, change):
    X, y = digits
    clf = AdaGradClassifier(max_iter=2, tol=None, **start)
    clf.partial_fit(X[:100], y[:100], classes=np.unique(y))
    before = {k: np.copy(v) for k, v in vars(clf).items()
              if k.endswith("_") and isinstance(v, np.ndarray)}
    clf.set_params(**change)
    with pytest.raises(ValueError, match="cannot change"):
        clf.partial_fit(X[200:300], y[200:300])
    for name, value in before.items():
        assert_array_equal(getattr(clf, name), value)
    clf.fit(X[:60], y[:60])  # a fresh fit with the new structure is fine


def fitted_state(clf):
    """Copies of the fitted per-class arrays (those computed when read too)
    and the loss curve."""
    state = {name: np.array(getattr(clf, name)) for name in (
        "class_coef_", "sum_gradient_", "sum_sq_gradient_", "class_intercept_",
        "class_accumulators_")}
    state["loss_curve_"] = list(clf.loss_curve_)
    return state


@pytest.mark.parametrize("n_classes", [5, 7])
@pytest.mark.parametrize("loss", ["log_loss", "hinge"])
@pytest.mark.parametrize("penalty", ELEMENTWISE)
def test_avx_and_scalar_class_loops_agree_bit_for_bit(n_classes, loss, penalty):
    """Dual averaging's AVX loops over the classes of a feature (four at a
    time, the rest one by one: 5 and 7 classes) keep the scalar loops'
    arithmetic; with an l1 part some weights are past their threshold and
    some are not, and hinge leaves most classes' gradients zero."""
    from sklearn_adaprox import _adagrad_fast

    rng = np.random.RandomState(1)
    X = sp.random(300, 40, density=0.2, format="csr", random_state=rng)
    y = np.argmax(X @ rng.randn(40, n_classes) + 0.3 * rng.randn(300, n_classes), axis=1)
    clf = AdaGradClassifier(loss=loss, penalty=penalty, multi_class="multinomial",
                            alpha=5e-3 if penalty in ("l1", "elasticnet") else 1e-3,
                            max_iter=3, tol=None, random_state=0)
    previous = _adagrad_fast.set_avx(False)
    try:
        scalar = fitted_state(clf.fit(X, y))
        if not _adagrad_fast.set_avx(True) and not _adagrad_fast.set_avx(True):
            pytest.skip("this CPU has no AVX")
        avx = fitted_state(clf.fit(X, y))
    finally:
        _adagrad_fast.set_avx(previous)
    for name in avx:
        assert_array_equal(avx[name], scalar[name], err_msg=name)
    assert avx["loss_curve_"] == scalar["loss_curve_"]
    if penalty in ("l1", "elasticnet"):
        assert 0.05 < np.mean(avx["class_coef_"] == 0) < 0.95


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("penalty", ["l2", "l1_l2"])
def test_a_fit_s_epochs_are_its_partial_fit_calls(update, penalty):
    """fit keeps one Problem (the state in the kernel's layout) for all its
    epochs; partial_fit makes one per call: the same model, bit for bit."""
    if update == "ftrl_proximal" and penalty in MIXED:
        pytest.skip("FTRL-Proximal has no mixed norm")
    rng = np.random.RandomState(2)
    X = sp.random(200, 30, density=0.25, format="csr", random_state=rng)
    y = rng.randint(0, 4, 200)
    params = dict(update=update, penalty=penalty, alpha=1e-2, multi_class="multinomial",
                  shuffle=False, tol=None, delta=0.05)
    fitted = AdaGradClassifier(max_iter=4, **params).fit(X, y)
    streamed = AdaGradClassifier(max_iter=4, **params)
    for _ in range(4):
        streamed.partial_fit(X, y, classes=np.arange(4))
    for name in ("coef_", "intercept_", "sum_gradient_", "sum_sq_gradient_"):
        assert_array_equal(getattr(fitted, name), getattr(streamed, name), err_msg=name)
    assert fitted.loss_curve_ == streamed.loss_curve_
    assert fitted.t_ == streamed.t_


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("penalty", ["l2", "l1_l2"])
def test_a_call_changes_the_state_in_place_at_its_columns_only(update, penalty):
    """The state is kept in the kernel's layout and updated in place: a
    chunk changes the rows of its own columns and no other, and no array of
    the size of the state is made (O(nnz) per call whatever the width);
    coef_ still equals a model that was given the same rows from the
    start with every weight materialised at each call."""
    if update == "ftrl_proximal" and penalty in MIXED:
        pytest.skip("FTRL-Proximal has no mixed norm")
    rng = np.random.RandomState(3)
    X = sp.random(120, 400, density=0.02, format="csr", random_state=rng)
    y = rng.randint(0, 3, 120)
    clf = AdaGradClassifier(update=update, penalty=penalty, alpha=1e-2,
                            multi_class="multinomial", delta=0.05)
    clf.partial_fit(X[:100], y[:100], classes=np.arange(3))
    state = clf.class_accumulators_
    before = state.copy()
    weights = clf.__dict__.get("class_weights_")
    chunk = X[100:110]
    clf.partial_fit(chunk, y[100:110])
    assert clf.class_accumulators_ is state
    if weights is not None:
        assert clf.class_weights_ is weights
    untouched = np.setdiff1d(np.arange(400), chunk.indices)
    assert chunk.indices.size and untouched.size > 300
    assert_array_equal(state[:, untouched], before[:, untouched])
    assert not np.array_equal(state[:, chunk.indices], before[:, chunk.indices])
    # the same rows as one call, the weights read after it
    whole = AdaGradClassifier(update=update, penalty=penalty, alpha=1e-2,
                              multi_class="multinomial", delta=0.05, shuffle=False,
                              max_iter=1, tol=None).fit(X[:110], y[:110])
    assert_allclose(clf.coef_, whole.coef_, rtol=0, atol=1e-12)
    assert_allclose(clf.intercept_, whole.intercept_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("start, then", [("dual_averaging", "mirror_descent"),
                                         ("mirror_descent", "ftrl_proximal"),
                                         ("mirror_descent", "dual_averaging")])
def test_a_new_update_rule_continues_from_the_old_weights(start, then):
    """Changing ``update`` between calls: mirror descent starts from the
    weights of the old rule at step t_ (a call of weightless rows then
    leaves coef_ as it was); the closed-form rules read the sums, whatever
    weights mirror descent kept, which the state then drops."""
    rng = np.random.RandomState(4)
    X = sp.random(90, 50, density=0.1, format="csr", random_state=rng)
    y = rng.randint(0, 4, 90)
    clf = AdaGradClassifier(update=start, penalty="l1", alpha=1e-2,
                            multi_class="multinomial", delta=0.05)
    clf.partial_fit(X, y, classes=np.arange(4))
    coef = np.array(clf.coef_)
    clf.set_params(update=then).partial_fit(X[:5], y[:5], sample_weight=np.zeros(5))
    assert ("class_weights_" in clf.__dict__) == (then == "mirror_descent")
    if then == "mirror_descent":
        assert_array_equal(clf.coef_, coef)
    else:  # the closed form of the sums and t_ (l1 only: no l2 term)
        u, root = clf.sum_gradient_, np.sqrt(clf.sum_sq_gradient_)
        excess = np.maximum(np.abs(u) - 1e-2 * clf.t_, 0.0)
        expected = -np.sign(u) * clf.eta * excess / (0.05 + root)
        assert_allclose(clf.coef_, expected, rtol=1e-12, atol=1e-15)
        assert not np.array_equal(clf.coef_, coef)
    assert np.count_nonzero(clf.coef_) > 10
