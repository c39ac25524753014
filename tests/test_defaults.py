"""Defaults that learn: the data-aware "auto" values (resolved by the first
call from its data, then fixed) and, with loose thresholds, the quality of
every estimator's defaults beside scikit-learn's SGD defaults on bundled real
data -- text (the SMS spam collection) and a table (a9a, and scikit-learn's
diabetes regression set).  ``benchmarks/bench_defaults.py`` measures the
same on every set at full size."""
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from bundled_text import sms_tfidf
from reference.implicit_ftrl import gradient_bound_reference
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import Ridge, SGDClassifier, SGDRegressor
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_adaprox import (AdaGradClassifier, ImplicitFTRLClassifier,
                             ImplicitFTRLRegressor, PairwiseAUCClassifier,
                             RDAPlusClassifier)
from sklearn_adaprox.datasets import load_a9a


# ----------------------------------------------------------------------------
# implicit FTRL: beta="auto"
def auto_beta_reference(X, y, sample_weight, *, fit_intercept, regression):
    """The documented rule: c * target scale / row scale, both weighted
    root mean squares (rows with the intercept's constant 1); c = 20 for a
    classifier (target scale 1), 2 for a regressor."""
    X = X.toarray() if sp.issparse(X) else X
    sq_norms = (X.astype(np.float64) ** 2).sum(axis=1) + (1.0 if fit_intercept else 0.0)
    total = sample_weight.sum()
    row_scale = np.sqrt(np.dot(sample_weight, sq_norms) / total)
    target_scale = np.sqrt(np.dot(sample_weight, y**2) / total) if regression else 1.0
    return (2.0 if regression else 20.0) * target_scale / row_scale


@pytest.fixture
def regression_problem():
    rng = np.random.RandomState(0)
    X = rng.randn(120, 6) * rng.uniform(0.5, 3.0, 6)
    X[rng.rand(*X.shape) < 0.4] = 0.0
    y = X @ rng.randn(6) + 3.0 + 0.1 * rng.randn(120)
    sample_weight = rng.uniform(0.0, 2.0, 120)
    sample_weight[:5] = 0.0
    return X, y, sample_weight


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_auto_beta_follows_its_definition(regression_problem, layout, fit_intercept):
    X, y, sample_weight = regression_problem
    Xl = sp.csr_matrix(X) if layout == "csr" else X
    reg = ImplicitFTRLRegressor(fit_intercept=fit_intercept, max_iter=1, tol=None,
                                random_state=0)
    reg.fit(Xl, y, sample_weight=sample_weight)
    expected = auto_beta_reference(X, y, sample_weight, fit_intercept=fit_intercept,
                                   regression=True)
    assert_allclose(reg.beta_, [expected], rtol=1e-13)
    # G of the squared error is estimated on the ball of the resolved beta
    G = gradient_bound_reference(X, y, sample_weight, loss="squared_error",
                                 fit_intercept=fit_intercept, beta=expected)
    assert_allclose(reg.G_, [G], rtol=1e-13)
    # a classifier's target scale is 1, the same for every one-vs-rest problem
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    clf = ImplicitFTRLClassifier(fit_intercept=fit_intercept, max_iter=1, tol=None,
                                 random_state=0)
    clf.fit(Xl, labels, sample_weight=sample_weight)
    expected = auto_beta_reference(X, labels, sample_weight,
                                   fit_intercept=fit_intercept, regression=False)
    assert_allclose(clf.beta_, np.full(3, expected), rtol=1e-13)


def test_auto_beta_is_fixed_by_the_first_call_and_explicit_beta_is_kept(
        regression_problem):
    X, y, _ = regression_problem
    reg = ImplicitFTRLRegressor(random_state=0)
    reg.partial_fit(X[:40], y[:40], sample_weight=np.zeros(40))
    assert np.isnan(reg.beta_[0])  # nothing learnt yet: not resolved
    reg.partial_fit(X[:40], y[:40])
    first = auto_beta_reference(X[:40], y[:40], np.ones(40), fit_intercept=True,
                                regression=True)
    assert_allclose(reg.beta_, [first], rtol=1e-13)
    reg.partial_fit(10 * X[40:], 100 * y[40:])  # other scales: beta stays
    assert_allclose(reg.beta_, [first], rtol=1e-13)
    # a new fit resolves it again, from all of its data
    reg.fit(X, y)
    assert_allclose(reg.beta_, [auto_beta_reference(
        X, y, np.ones(120), fit_intercept=True, regression=True)], rtol=1e-13)
    assert ImplicitFTRLRegressor(beta=2.5).fit(X, y).beta_[0] == 2.5


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_auto_beta_makes_the_regressor_equivariant_to_scale(regression_problem, loss):
    """X times c and y times d: the same model up to scale, weights times
    d / c (powers of two: every rescaled operation is exact)."""
    X, y, _ = regression_problem
    params = dict(loss=loss, fit_intercept=False, max_iter=3, tol=None, random_state=0)
    base = ImplicitFTRLRegressor(**params).fit(X, y)
    for c, d in ((4.0, 1.0), (1.0, 2.0**10), (0.25, 2.0**-6)):
        scaled = ImplicitFTRLRegressor(**params).fit(c * X, d * y)
        assert_allclose(scaled.coef_, base.coef_ * d / c, rtol=1e-12, atol=0)
        assert_allclose(scaled.predict(c * X), d * base.predict(X), rtol=1e-12)


def test_auto_beta_keeps_a_large_target_learnable():
    """Raw targets far from unit scale (the defaults' failure before "auto":
    R^2 0.60 at y * 100, 0.01 at y * 1e4)."""
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    ridge = Ridge().fit(X_train, y_train).score(X_test, y_test)
    for scale in (1.0, 100.0, 1e4):
        reg = ImplicitFTRLRegressor(random_state=0).fit(X_train, scale * y_train)
        assert reg.score(X_test, scale * y_test) > ridge - 0.05


# ----------------------------------------------------------------------------
# RDA+: alpha="auto"
def alpha_max_reference(X, y, sample_weight):
    """The smallest l1 penalty with w = 0: the largest gradient entry at
    the best intercept-only logistic model (weighted)."""
    X = X.toarray() if sp.issparse(X) else X
    positive = (y > 0).astype(float)
    share = np.dot(sample_weight, positive) / sample_weight.sum()
    n_rows = np.count_nonzero(sample_weight)  # the objective's (1/N) sum
    return np.abs(X.T @ (sample_weight * (share - positive))).max() / n_rows


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_auto_alpha_is_a_hundredth_of_alpha_max(layout):
    X, y, _, _ = load_a9a()
    X, y = X[:3000], y[:3000]
    sample_weight = np.random.RandomState(0).uniform(0.5, 2.0, 3000)
    Xl = X.toarray() if layout == "dense" else X
    est = RDAPlusClassifier(max_iter=2, random_state=0)
    est.fit(Xl, y, sample_weight=sample_weight)
    alpha_max = alpha_max_reference(X, y, sample_weight)
    assert_allclose(est.alpha_, [0.01 * alpha_max], rtol=1e-12)
    assert np.count_nonzero(est.coef_) > 0
    # alpha_max is what it says: just above it, the model is empty
    empty = RDAPlusClassifier(alpha=1.01 * alpha_max, random_state=0)
    assert np.count_nonzero(empty.fit(Xl, y, sample_weight=sample_weight).coef_) == 0
    # an explicit alpha is used as it is, on every call
    assert_array_equal(RDAPlusClassifier(alpha=1e-3, max_iter=2).fit(X, y).alpha_, [1e-3])


def test_auto_alpha_per_one_vs_rest_problem():
    X, y, _, _ = load_a9a()
    X, y = X[:2000], y[:2000]
    labels = np.where(y > 0, 2, np.arange(2000) % 2)  # three classes
    est = RDAPlusClassifier(max_iter=1, tol=None, local_phase=False, random_state=0)
    est.fit(X, labels)
    weights = np.ones(2000)
    expected = [0.01 * alpha_max_reference(X, np.where(labels == k, 1, -1), weights)
                for k in range(3)]
    assert_allclose(est.alpha_, expected, rtol=1e-12)


def auto_gamma_reference(X, sample_weight):
    """The documented rule: the weighted mean square of the non-zero values
    of the rows (stored zeros not counted)."""
    X = X.toarray() if sp.issparse(X) else X
    sq_norms = (X.astype(np.float64) ** 2).sum(axis=1)
    nonzero = np.count_nonzero(X, axis=1)
    return np.dot(sample_weight, sq_norms) / np.dot(sample_weight, nonzero)


def _text_like_rows(n=300, d=400, seed=0):
    """Sparse rows of unit norm (as a vectoriser's), about 20 non-zeros."""
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=rng)
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))
    y = np.where(X @ rng.randn(d) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("layout", ["dense", "csr", "csr with stored zeros"])
def test_auto_gamma_follows_its_definition(layout):
    X, y = _text_like_rows()
    sample_weight = np.random.RandomState(1).uniform(0.0, 2.0, X.shape[0])
    sample_weight[:9] = 0.0
    Xl = X.toarray() if layout == "dense" else X.copy()
    if layout == "csr with stored zeros":
        Xl.data[::7] = 0.0  # stored, and not counted
    expected = auto_gamma_reference(Xl, sample_weight)
    assert 0.03 < expected < 0.07  # about 1 / (non-zeros per row): not 1
    params = dict(local_phase=False, max_iter=2, tol=None, random_state=0)
    est = RDAPlusClassifier(**params).fit(Xl, y, sample_weight=sample_weight)
    assert_allclose(est.gamma_, [expected], rtol=1e-13)
    # the model is the one of that gamma given explicitly
    explicit = RDAPlusClassifier(gamma=float(est.gamma_[0]), **params)
    assert_array_equal(explicit.fit(Xl, y, sample_weight=sample_weight).coef_, est.coef_)
    # standardised and binary features: 1, the former default
    table = StandardScaler().fit_transform(load_diabetes().data)
    assert_allclose(RDAPlusClassifier(**params).fit(table, table[:, 0] > 0).gamma_, [1.0],
                    rtol=1e-13)
    X, y, _, _ = load_a9a()
    assert RDAPlusClassifier(**params).fit(X[:500], y[:500]).gamma_[0] == 1.0


def test_auto_gamma_is_fixed_by_the_first_call_and_explicit_gamma_is_kept():
    X, y = _text_like_rows()
    labels = np.arange(300) % 3  # one-vs-rest: one gamma, the same for every problem
    est = RDAPlusClassifier(local_phase=False, max_iter=2, tol=None, random_state=0)
    est.partial_fit(X[:100], labels[:100], classes=[0, 1, 2], sample_weight=np.zeros(100))
    assert np.all(np.isnan(est.gamma_))  # nothing learnt yet: not resolved
    est.partial_fit(X[:100], labels[:100])
    first = auto_gamma_reference(X[:100], np.ones(100))
    assert_allclose(est.gamma_, [first] * 3, rtol=1e-13)
    est.partial_fit(10 * X[100:], labels[100:])  # rows of another scale: gamma stays
    assert_allclose(est.gamma_, [first] * 3, rtol=1e-13)
    # a new fit resolves it again, from all of its data
    est.fit(X, labels)
    assert_allclose(est.gamma_, [auto_gamma_reference(X, np.ones(300))] * 3, rtol=1e-13)
    est.set_params(gamma=0.5).partial_fit(X[:10], labels[:10])
    assert_array_equal(est.gamma_, [0.5] * 3)


@pytest.mark.parametrize("local_phase", [False, True])
def test_auto_gamma_makes_the_model_equivariant_to_scale(local_phase):
    """X times a: alpha_ times a, gamma_ times a**2, the dual-averaging
    iterate divided by a, at every step (a power of two: every rescaled
    operation is exact); the local phase solves the rescaled problem.
    Without an intercept: its constant feature is not rescaled, and its
    step follows gamma too."""
    X, y = _text_like_rows()
    params = dict(local_phase=local_phase, max_iter=3 if not local_phase else 100,
                  tol=None if not local_phase else 1e-8, fit_intercept=False, random_state=0)
    base = RDAPlusClassifier(**params).fit(X, y)
    for a in (4.0, 2.0**-5):
        scaled = RDAPlusClassifier(**params).fit(a * X, y)
        if local_phase:
            assert scaled.violation_[0] <= 1e-8 and base.violation_[0] <= 1e-8
        assert_allclose(scaled.alpha_, a * base.alpha_, rtol=1e-15)
        assert_allclose(scaled.gamma_, a * a * base.gamma_, rtol=1e-15)
        assert_array_equal(scaled.sum_gradient_, a * base.sum_gradient_)
        assert_array_equal(scaled.last_support_change_, base.last_support_change_)
        if not local_phase:
            assert_array_equal(scaled.coef_, base.coef_ / a)
        else:  # two solutions to violation <= 1e-8 of the same problem
            assert_array_equal(scaled.support_, base.support_)
            assert_allclose(scaled.coef_, base.coef_ / a, rtol=1e-6, atol=0)
    # a fixed gamma is not: the path of the rescaled data is another one
    fixed = dict(params, gamma=1.0)
    assert not np.array_equal(RDAPlusClassifier(**fixed).fit(4.0 * X, y).sum_gradient_,
                              4.0 * RDAPlusClassifier(**fixed).fit(X, y).sum_gradient_)


# ----------------------------------------------------------------------------
# AdaGrad: alpha="auto"
def adagrad_auto_alpha_reference(X, sample_weight, penalty, update):
    """The documented rule: 1e-4 (1e-5 for l1) times max(1, q / 10), q the
    weighted mean squared norm of the rows (no intercept); mirror descent:
    unscaled."""
    base = 1e-5 if penalty == "l1" else 1e-4
    if update == "mirror_descent":
        return base
    X = X.toarray() if sp.issparse(X) else X
    q = np.dot(sample_weight, (X**2).sum(axis=1)) / sample_weight.sum()
    return base * max(1.0, q / 10.0)


def _wide_rows(n=150, d=30, seed=0):
    """Rows of mean squared norm about 25, past the threshold of 10."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X[rng.rand(n, d) < 0.2] = 0.0
    y = np.where(X @ rng.randn(d) + 0.5 * rng.randn(n) > 0, 1, -1)
    sample_weight = rng.uniform(0.0, 2.0, n)
    sample_weight[:6] = 0.0
    return X, y, sample_weight


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("penalty, update", [
    ("l2", "dual_averaging"), ("l1", "dual_averaging"), ("elasticnet", "ftrl_proximal"),
    ("linf", "dual_averaging"), ("l2", "mirror_descent"), ("l1", "mirror_descent"),
])
def test_adagrad_auto_alpha_follows_its_definition(layout, penalty, update):
    X, y, sample_weight = _wide_rows()
    Xl = sp.csr_matrix(X) if layout == "csr" else X
    params = dict(penalty=penalty, update=update, max_iter=2, tol=None, random_state=0)
    est = AdaGradClassifier(**params).fit(Xl, y, sample_weight=sample_weight)
    expected = adagrad_auto_alpha_reference(X, sample_weight, penalty, update)
    assert_allclose(est.alpha_, expected, rtol=1e-13)
    if update != "mirror_descent":
        assert est.alpha_ > 1.2 * (1e-5 if penalty == "l1" else 1e-4)  # it did grow
    # the model is the one of that alpha given explicitly
    explicit = AdaGradClassifier(alpha=expected, **params)
    explicit.fit(Xl, y, sample_weight=sample_weight)
    assert_allclose(explicit.coef_, est.coef_, rtol=1e-12, atol=1e-15)
    assert explicit.alpha_ == expected


def test_adagrad_auto_alpha_is_scikit_learns_on_unit_rows_and_fixed_by_the_first_call():
    X, y, _ = _wide_rows()
    # rows of unit norm (text), or of squared norm up to 10: SGD's alpha
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert AdaGradClassifier().fit(unit, y).alpha_ == 1e-4
    assert AdaGradClassifier(penalty="l1").fit(3 * unit, y).alpha_ == 1e-5
    est = AdaGradClassifier(random_state=0)
    # every weight zero: the rows count alike
    est.partial_fit(X[:50], y[:50], classes=[-1, 1], sample_weight=np.zeros(50))
    first = adagrad_auto_alpha_reference(X[:50], np.ones(50), "l2", "dual_averaging")
    assert_allclose(est.alpha_, first, rtol=1e-13)
    est.partial_fit(10 * X[50:], y[50:])  # rows of another scale: alpha stays
    assert_allclose(est.alpha_, first, rtol=1e-13)
    # a new fit resolves it again, from all of its data
    est.fit(X, y)
    assert_allclose(est.alpha_, adagrad_auto_alpha_reference(
        X, np.ones(len(y)), "l2", "dual_averaging"), rtol=1e-13)
    # an explicit alpha is used as it is, on every call
    est.set_params(alpha=0.5).partial_fit(X, y)
    assert est.alpha_ == 0.5


def test_adagrad_model_from_before_alpha_was_resolved_keeps_its_alpha():
    """A pickle made before ``alpha_`` existed was trained with the unscaled
    "auto" value: it continues with it."""
    X, y, _ = _wide_rows()
    params = dict(max_iter=2, tol=None, random_state=0)
    old = AdaGradClassifier(alpha=1e-4, **params).fit(X, y).set_params(alpha="auto")
    del old.__dict__["alpha_"]
    reference = AdaGradClassifier(alpha=1e-4, **params).fit(X, y)
    old.partial_fit(X, y)
    reference.partial_fit(X, y)
    assert_allclose(old.coef_, reference.coef_, rtol=1e-13, atol=1e-15)
    assert old.alpha_ == 1e-4


# ----------------------------------------------------------------------------
# AdaGrad: update="auto"
def adagrad_auto_update_reference(X, sample_weight, penalty):
    """The documented rule: mirror descent for l1 or elastic net (one-vs-rest,
    diagonal matrix) when at least half of the entries of X are non-zero and
    the weighted mean squared norm of the rows is at most 100."""
    X = X.toarray() if sp.issparse(X) else X
    dense = np.count_nonzero(X) >= 0.5 * X.size
    narrow = np.dot(sample_weight, (X**2).sum(axis=1)) / sample_weight.sum() <= 100.0
    if dense and narrow and penalty in ("l1", "elasticnet"):
        return "mirror_descent"
    return "dual_averaging"


def _rows_of_density(density, n=150, d=12, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    X[rng.rand(n, d) >= density] = 0.0
    y = np.where(X @ rng.randn(d) + 0.5 * rng.randn(n) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("layout", ["dense", "csr", "csr with stored zeros"])
@pytest.mark.parametrize("penalty", ["l1", "elasticnet", "l2", None])
@pytest.mark.parametrize("density, scale", [(0.3, 1), (0.45, 1), (0.55, 1), (1.0, 1),
                                            (1.0, 2.6), (1.0, 3.2), (1.0, 5)])
def test_adagrad_auto_update_follows_its_definition(layout, penalty, density, scale):
    X, y = _rows_of_density(density)
    X *= scale  # mean squared norm about 12 scale^2, past 100 from 2.9
    sample_weight = np.random.RandomState(1).uniform(0.0, 2.0, X.shape[0])
    if layout == "dense":
        Xl = X
    elif layout == "csr":
        Xl = sp.csr_matrix(X)
    else:  # every entry stored: the non-zero values count, not the entries
        Xl = sp.csr_matrix(np.where(X == 0, 1.0, X))
        Xl.data[(X == 0).ravel()] = 0.0
    expected = adagrad_auto_update_reference(X, sample_weight, penalty)
    params = dict(penalty=penalty, max_iter=3, tol=None, random_state=0)
    est = AdaGradClassifier(**params).fit(Xl, y, sample_weight=sample_weight)
    assert est.update_ == expected
    # the model (and alpha="auto", which follows the update) of that rule
    # given explicitly
    explicit = AdaGradClassifier(update=expected, **params)
    explicit.fit(Xl, y, sample_weight=sample_weight)
    assert est.alpha_ == explicit.alpha_
    assert_array_equal(est.coef_, explicit.coef_)
    assert_array_equal(est.intercept_, explicit.intercept_)


@pytest.mark.parametrize("params", [
    dict(penalty="l1", multi_class="multinomial"), dict(penalty="l1", matrix="identity"),
    dict(penalty="l2", matrix="full"), dict(penalty="linf"), dict(penalty=None, l1_ball=3.0),
], ids=repr)
def test_adagrad_auto_update_is_dual_averaging_where_the_options_leave_no_choice(params):
    X, y = _rows_of_density(1.0)
    est = AdaGradClassifier(max_iter=2, tol=None, random_state=0, **params).fit(X, y)
    assert est.update_ == "dual_averaging"
    explicit = AdaGradClassifier(update="dual_averaging", max_iter=2, tol=None,
                                 random_state=0, **params).fit(X, y)
    assert_array_equal(est.coef_, explicit.coef_)


def test_adagrad_auto_update_is_fixed_by_the_first_call():
    dense, y = _rows_of_density(1.0)
    sparse, _ = _rows_of_density(0.2, seed=1)
    est = AdaGradClassifier(penalty="l1", random_state=0)
    # every weight zero: the rows decide all the same
    est.partial_fit(dense[:20], y[:20], classes=[-1, 1], sample_weight=np.zeros(20))
    assert est.update_ == "mirror_descent"
    est.partial_fit(sp.csr_matrix(sparse[20:]), y[20:])  # sparse rows: kept
    assert est.update_ == "mirror_descent"
    reference = AdaGradClassifier(penalty="l1", update="mirror_descent", random_state=0)
    reference.partial_fit(dense[:20], y[:20], classes=[-1, 1], sample_weight=np.zeros(20))
    reference.partial_fit(sp.csr_matrix(sparse[20:]), y[20:])
    assert_array_equal(est.coef_, reference.coef_)
    # a new fit chooses again
    assert est.fit(sparse, y).update_ == "dual_averaging"
    # options that leave no choice take dual averaging, also where the
    # last fit chose mirror descent (the identity matrix refuses it)
    est.fit(dense, y)
    assert est.update_ == "mirror_descent"
    assert est.set_params(matrix="identity").fit(dense, y).update_ == "dual_averaging"
    # an explicit update is used as it is, on every call
    est.set_params(matrix="diagonal", update="ftrl_proximal").partial_fit(dense, y)
    assert est.update_ == "ftrl_proximal"
    assert est._rule["update"] == "ftrl_proximal"


# ----------------------------------------------------------------------------
# pairwise AUC: eta="auto"
def auto_eta_reference(X, sample_weight, algorithm, adaptive="norm"):
    """The documented rule: c / s**p, s the root mean square of the norms
    of the rows of non-zero weight; p = 1 (AOGD), 2 (OGD), 0 (strongly
    convex AOGD); c = 4, or 0.5 for AOGD's per-coordinate steps."""
    X = X.toarray() if sp.issparse(X) else X
    sq_norms = (X.astype(np.float64) ** 2).sum(axis=1)[sample_weight != 0]
    power = {"aogd": 1, "ogd": 2, "aogd_strongly_convex": 0}[algorithm]
    c = 0.5 if adaptive == "coordinate" and algorithm != "ogd" else 4.0
    return c / np.sqrt(sq_norms.mean()) ** power


def _pairwise_problem():
    rng = np.random.RandomState(0)
    X = rng.randn(200, 12) * rng.uniform(0.5, 3.0, 12)
    X[rng.rand(*X.shape) < 0.5] = 0.0
    y = np.where(X @ rng.randn(12) + 0.5 * rng.randn(200) > 0, 1, -1)
    sample_weight = rng.uniform(0.0, 2.0, 200)
    sample_weight[:7] = 0.0
    return X, y, sample_weight


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("adaptive", ["norm", "coordinate"])
@pytest.mark.parametrize("algorithm", ["aogd", "ogd", "aogd_strongly_convex"])
def test_auto_eta_follows_its_definition(layout, algorithm, adaptive):
    X, y, sample_weight = _pairwise_problem()
    Xl = sp.csr_matrix(X) if layout == "csr" else X
    params = dict(algorithm=algorithm, adaptive=adaptive, max_iter=1, tol=None,
                  random_state=0)
    est = PairwiseAUCClassifier(loss="square", **params)
    est.fit(Xl, y, sample_weight=sample_weight)
    expected = auto_eta_reference(X, sample_weight, algorithm, adaptive)
    assert_allclose(est.eta_, [expected], rtol=1e-13)
    # the model is the one of that eta given explicitly
    explicit = PairwiseAUCClassifier(loss="square", eta=expected, **params)
    explicit.fit(Xl, y, sample_weight=sample_weight)
    assert_allclose(explicit.coef_, est.coef_, rtol=1e-12, atol=1e-15)
    # class weights multiply the pairs, not the rows' scale: the same step
    balanced = PairwiseAUCClassifier(class_weight={1: 3.0}, **params)
    assert_allclose(balanced.fit(Xl, y, sample_weight=sample_weight).eta_, [expected],
                    rtol=1e-13)


def test_auto_eta_is_fixed_by_the_first_call_and_explicit_eta_is_kept():
    X, y, _ = _pairwise_problem()
    est = PairwiseAUCClassifier(random_state=0)
    est.partial_fit(X[:50], y[:50], classes=[-1, 1], sample_weight=np.zeros(50))
    assert np.isnan(est.eta_[0])  # nothing learnt yet: not resolved
    est.partial_fit(X[:50], y[:50])
    first = auto_eta_reference(X[:50], np.ones(50), "aogd")
    assert_allclose(est.eta_, [first], rtol=1e-13)
    est.partial_fit(10 * X[50:], y[50:])  # rows of another scale: eta stays
    assert_allclose(est.eta_, [first], rtol=1e-13)
    # a new fit resolves it again, from all of its data
    est.fit(X, y)
    assert_allclose(est.eta_, [auto_eta_reference(X, np.ones(200), "aogd")], rtol=1e-13)
    assert PairwiseAUCClassifier(eta=0.25).fit(X, y).eta_[0] == 0.25


@pytest.mark.parametrize("params", [
    dict(), dict(adaptive="coordinate", average=True), dict(algorithm="ogd"),
    dict(algorithm="aogd_strongly_convex", loss="square"), dict(loss="log_loss"),
], ids=repr)
def test_auto_eta_makes_the_model_equivariant_to_scale(params):
    """X times a: weights divided by a, the same scores and threshold
    (powers of two: every rescaled operation is exact; 3: to round-off)."""
    X, y, _ = _pairwise_problem()
    params = dict(params, max_iter=3, tol=None, random_state=0)
    base = PairwiseAUCClassifier(**params).fit(X, y)
    for a, rtol in ((4.0, 1e-13), (2.0**-5, 1e-13), (3.0, 1e-9)):
        scaled = PairwiseAUCClassifier(**params).fit(a * X, y)
        assert_allclose(scaled.coef_, base.coef_ / a, rtol=rtol, atol=0)
        assert_allclose(scaled.decision_function(a * X), base.decision_function(X),
                        rtol=rtol, atol=1e-12)
    if params.get("algorithm") == "aogd_strongly_convex":
        return  # its step eta m / v scales as 1 / X already: "auto" is 4
    # a fixed eta is not: its steps are too large or too small for one scale
    fixed = dict(params, eta=1.0)
    assert not np.allclose(PairwiseAUCClassifier(**fixed).fit(4.0 * X, y).coef_,
                           PairwiseAUCClassifier(**fixed).fit(X, y).coef_ / 4.0)


# ----------------------------------------------------------------------------
# stopping: each one-vs-rest problem on its own loss
@pytest.mark.parametrize("Estimator", [AdaGradClassifier, ImplicitFTRLClassifier])
def test_one_vs_rest_fit_runs_until_every_problem_has_stopped(Estimator):
    """As scikit-learn's one-vs-rest SGD: each binary problem stops on its
    own loss, and n_iter_ is the most epochs any of them needed.  Here all
    problems run until the last stops (they share the step count), so each
    row of coef_ is its binary problem fitted for n_iter_ epochs.  A test
    on the mean loss stopped the hard problems when the easy ones had
    settled."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    ovr = Estimator(random_state=0).fit(X, y)
    alone = [Estimator(random_state=0).fit(X, y == c).n_iter_ for c in ovr.classes_]
    assert ovr.n_iter_ == max(alone) > min(alone)
    for k, c in enumerate(ovr.classes_):
        binary = Estimator(max_iter=ovr.n_iter_, tol=None, random_state=0).fit(X, y == c)
        assert_array_equal(binary.coef_[0], ovr.coef_[k])
        assert_array_equal(binary.intercept_[0], ovr.intercept_[k])


# ----------------------------------------------------------------------------
# the defaults beside scikit-learn's, loose thresholds on bundled real data
def _a9a():
    X, y, X_test, y_test = load_a9a()
    return X, y, X_test, y_test


DEFAULT_CLASSIFIERS = [
    AdaGradClassifier(random_state=0),
    AdaGradClassifier(penalty="l1", random_state=0),
    AdaGradClassifier(loss="log_loss", random_state=0),
    ImplicitFTRLClassifier(random_state=0),
    PairwiseAUCClassifier(random_state=0),
    RDAPlusClassifier(random_state=0),
]


@pytest.mark.parametrize("data", [sms_tfidf, _a9a], ids=["sms_spam", "a9a"])
@pytest.mark.parametrize("est", DEFAULT_CLASSIFIERS, ids=repr)
def test_defaults_learn_as_well_as_sgd_defaults(data, est):
    """Accuracy within 1.5 points of the better of SGDClassifier's defaults
    (hinge, and the same loss and penalty), or for PairwiseAUCClassifier, a
    ROC AUC at most 0.5 points below SGD's."""
    X, y, X_test, y_test = data()
    params = {k: v for k, v in est.get_params().items() if k in ("loss", "penalty")}
    if params.get("loss") not in (None, "hinge", "log_loss"):
        params.pop("loss")
    anchors = [SGDClassifier(random_state=0).fit(X, y),
               SGDClassifier(random_state=0, **params).fit(X, y)]
    model = est.fit(X, y)
    if isinstance(est, PairwiseAUCClassifier):
        positive = y_test == model.classes_[1]
        best = max(roc_auc_score(positive, a.decision_function(X_test)) for a in anchors)
        assert roc_auc_score(positive, model.decision_function(X_test)) >= best - 0.005
    else:
        best = max(a.score(X_test, y_test) for a in anchors)
        assert model.score(X_test, y_test) >= best - 0.015


def test_regressor_defaults_learn_as_well_as_sgd_defaults():
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    sgd = SGDRegressor(random_state=0).fit(X_train, y_train).score(X_test, y_test)
    ours = ImplicitFTRLRegressor(random_state=0).fit(X_train, y_train)
    assert ours.score(X_test, y_test) >= sgd - 0.02
