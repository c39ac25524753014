"""Full-matrix AdaGrad kernel against its NumPy transcription, and its own
promises (Duchi, Hazan & Singer 2011, H = delta I + G^{1/2})."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from reference.full_matrix import full_matrix_adagrad_reference, psd_sqrt
from sklearn_adaprox._adagrad_fast import AdaGradProblem, run_epoch
from sklearn_adaprox._adagrad_full_fast import FULL_MATRIX_MAX_FEATURES, FullMatrixProblem
from sklearn_adaprox._adagrad_full_fast import run_epoch as run_epoch_full
from sklearn_adaprox._dataset import as_row_arrays
from sklearn_adaprox._loss import make_loss

UPDATES = ["dual_averaging", "mirror_descent"]
EPS = np.finfo(np.float64).eps


def _full(X, y, sample_weight, *, loss, update, eta, delta, l2, fit_intercept,
          state=None, t=0, order=None):
    """One kernel pass; returns (w, u, G, sum_loss, sum_weight).  ``state``
    (w, u, G) is copied, never modified."""
    m = X.shape[1] + int(fit_intercept)
    if state is None:
        w, u, G = np.zeros(m), np.zeros(m), np.zeros((m, m))
    else:
        w, u, G = (np.array(a, dtype=np.float64) for a in state)
    if order is None:
        order = np.arange(X.shape[0])
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    d = X.shape[1]
    problem = FullMatrixProblem(
        loss=make_loss(loss), update=update, eta=eta, delta=delta, l2=l2,
        fit_intercept=fit_intercept, coef=w[:d], sum_grad=u[:d], sum_outer_grad=G,
        intercept=w[d] if fit_intercept else 0.0,
        intercept_sum_grad=u[d] if fit_intercept else 0.0, t=t)
    sum_loss, sum_weight = run_epoch_full(
        problem, data, indices, indptr, is_dense, n_features,
        np.asarray(y, dtype=np.float64), np.asarray(sample_weight, dtype=np.float64),
        np.asarray(order, dtype=np.int64),
    )
    if fit_intercept:  # the intercept is the last coordinate of w and u
        w[d], u[d] = problem.intercept, problem.intercept_sum_grad
    return w, u, G, sum_loss, sum_weight


def _input_formats(X):
    """The same rows as dense float64/float32 and CSR with int32/int64
    indices; float32 values are the ones both sides read."""
    X32 = X.astype(np.float32)
    csr64 = sp.csr_matrix(X)
    csr64.indices = csr64.indices.astype(np.int64)
    csr64.indptr = csr64.indptr.astype(np.int64)
    return {
        "dense float64": X,
        "dense float32": X32,
        "csr int32": sp.csr_matrix(X),
        "csr int64": csr64,
        "csr float32": sp.csr_matrix(X32),
    }


@pytest.fixture(scope="module")
def correlated_problem():
    """40 x 6 rows with correlated columns (Toeplitz correlation 0.6^|i-j|),
    a fifth of the entries zero, weights including zeros."""
    rng = np.random.RandomState(0)
    corr = 0.6 ** np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    X = rng.randn(40, 6) @ np.linalg.cholesky(corr).T
    X[rng.rand(40, 6) < 0.2] = 0.0
    y = np.where(X @ rng.randn(6) + 0.5 * rng.randn(40) > 0, 1.0, -1.0)
    sample_weight = rng.uniform(0.2, 2.0, 40)
    sample_weight[::7] = 0.0
    return X, y, sample_weight


@pytest.mark.parametrize(
    "update, l2, fit_intercept, loss, delta",
    list(itertools.product(UPDATES, [0.0, 1e-2], [True, False],
                           ["hinge", "log_loss"], [0.0, 0.1])),
)
def test_kernel_matches_numpy_transcription(
    correlated_problem, update, l2, fit_intercept, loss, delta
):
    X, y, sample_weight = correlated_problem
    params = dict(loss=loss, update=update, eta=0.5, delta=delta, l2=l2,
                  fit_intercept=fit_intercept)
    results = {}
    for name, X_in in _input_formats(X).items():
        X_ref = X_in.toarray() if sp.issparse(X_in) else X_in
        w_ref, u_ref, G_ref, t_ref, loss_ref, weight_ref = (
            full_matrix_adagrad_reference(X_ref, y, sample_weight, **params)
        )
        assert t_ref == np.count_nonzero(sample_weight)
        w, u, G, sum_loss, sum_weight = _full(X_in, y, sample_weight, **params)
        assert_allclose(w, w_ref, rtol=1e-10, atol=1e-10, err_msg=name)
        assert_allclose(u, u_ref, rtol=1e-10, atol=1e-10, err_msg=name)
        assert_allclose(G, G_ref, rtol=1e-10, atol=1e-10, err_msg=name)
        assert_array_equal(G, G.T)
        assert_allclose(sum_loss, loss_ref, rtol=1e-10, err_msg=name)
        assert_allclose(sum_weight, weight_ref, rtol=1e-12, err_msg=name)
        results[name] = (w, u, G, sum_loss)
    # A dense row's zeros have zero gradient: dense and CSR rows (sorted
    # indices) take exactly the same arithmetic.
    for dense, csr in [("dense float64", "csr int32"), ("dense float64", "csr int64"),
                       ("dense float32", "csr float32")]:
        for a, b in zip(results[dense], results[csr]):
            assert_array_equal(a, b)


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("l2", [0.0, 1e-2])
def test_two_chunks_equal_one_pass(correlated_problem, update, l2):
    """Consecutive calls carry (w, u, G) and t (advanced by the rows of
    non-zero weight) and give the pass over the concatenation."""
    X, y, sample_weight = correlated_problem
    params = dict(loss="log_loss", update=update, eta=0.5, delta=0.1, l2=l2,
                  fit_intercept=True)
    order = np.random.RandomState(1).permutation(X.shape[0])
    whole = _full(X, y, sample_weight, order=order, **params)
    first, second = order[:17], order[17:]
    w, u, G, loss1, weight1 = _full(X, y, sample_weight, order=first, **params)
    t = np.count_nonzero(sample_weight[first])
    w, u, G, loss2, weight2 = _full(X, y, sample_weight, order=second,
                                    state=(w, u, G), t=t, **params)
    for a, b in zip((w, u, G), whole[:3]):
        assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert_allclose(loss1 + loss2, whole[3], rtol=1e-12)
    assert_allclose(weight1 + weight2, whole[4], rtol=1e-12)
    # and the permuted order is the transcription's
    ref = full_matrix_adagrad_reference(X, y, sample_weight, order=order, **params)
    assert_allclose(whole[0], ref[0], rtol=1e-10, atol=1e-10)


def test_pseudo_inverse_convention_with_unpenalised_intercept():
    """delta = 0, l2 > 0, an intercept among features of scale 1e6: H + cP
    (c = eta l2 t, P leaving the intercept out) is singular to working
    precision, so the pseudo-inverse's threshold decides the weights.  The
    kernel follows the transcription there too."""
    rng = np.random.RandomState(0)
    X = rng.randn(40, 6) * 1e6
    y = np.where(X @ rng.randn(6) + 0.5e6 * rng.randn(40) > 0, 1.0, -1.0)
    sample_weight = np.ones(40)
    params = dict(loss="log_loss", update="dual_averaging", eta=0.5, delta=0.0,
                  l2=1e-2, fit_intercept=True)
    # The situation the test is about: along the pass, H + cP has
    # eigenvalues that the pseudo-inverse treats as zero.
    w_ref, u_ref, G_ref, t = np.zeros(7), np.zeros(7), np.zeros((7, 7)), 0
    P = np.diag([1.0] * 6 + [0.0])
    singular_steps = 0
    for i in range(40):
        w_ref, u_ref, G_ref, t, _, _ = full_matrix_adagrad_reference(
            X, y, sample_weight, w=w_ref, u=u_ref, G=G_ref, t0=t, order=[i],
            **params)
        mu = np.linalg.eigvalsh(psd_sqrt(G_ref) + 0.5 * 1e-2 * t * P)
        singular_steps += mu[0] <= 7 * EPS * mu[-1]
    assert singular_steps >= 10
    w, u, G, _, _ = _full(X, y, sample_weight, **params)
    assert_allclose(w, w_ref, rtol=1e-10, atol=1e-10)
    assert_allclose(G, G_ref, rtol=1e-10)


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("l2", [0.0, 1e-2])
@pytest.mark.parametrize("delta", [0.0, 0.5])
@pytest.mark.parametrize("loss", ["hinge", "log_loss"])
def test_one_hot_rows_reduce_to_diagonal_adagrad(update, l2, delta, loss):
    """Rows with one non-zero feature and no intercept keep G diagonal, so
    H = delta I + diag(sqrt(G_ii)) and the full-matrix rule is the diagonal
    one (existing kernel, l1 = 0)."""
    rng = np.random.RandomState(2)
    n, d = 300, 8
    X = np.zeros((n, d))
    X[np.arange(n), rng.randint(d, size=n)] = rng.uniform(0.5, 2.0, n) * rng.choice(
        [-1, 1], n)
    y = np.where(rng.rand(n) < 0.6, 1.0, -1.0)
    sample_weight = rng.uniform(0.5, 1.5, n)
    sample_weight[::9] = 0.0
    eta = 0.3
    w, u, G, sum_loss, sum_weight = _full(
        X, y, sample_weight, loss=loss, update=update, eta=eta, delta=delta,
        l2=l2, fit_intercept=False)

    acc = np.zeros((d, 4 if update == "mirror_descent" else 2))
    problem = AdaGradProblem(
        loss=make_loss(loss), update=update, eta=eta, delta=delta, l1=0.0, l2=l2,
        fit_intercept=False, acc=acc, intercept=0.0,
        intercept_sum_grad=0.0, intercept_sum_sq_grad=0.0, t=0)
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    diag_loss, diag_weight = run_epoch(problem, data, indices, indptr, is_dense, n_features, y,
                                       sample_weight, np.arange(n, dtype=np.int64))
    coef = np.empty(d)
    problem.coef_into(coef)
    sum_grad, sum_sq_grad = acc[:, 0], acc[:, 1] ** 2

    assert_array_equal(G, np.diag(np.diag(G)))
    assert_allclose(w, coef, rtol=1e-10, atol=1e-10)
    assert_allclose(u, sum_grad, rtol=1e-10, atol=1e-12)
    assert_allclose(np.diag(G), sum_sq_grad, rtol=1e-10)
    assert_allclose(sum_loss, diag_loss, rtol=1e-10)
    assert sum_weight == diag_weight
    assert problem.t == np.count_nonzero(sample_weight)


def _correlated_stream(seed, n=3000, d=8):
    """x = A z with A = U diag(1 ... 1e-2) V^T (condition number 100, rotated
    so that no coordinate is aligned with the singular directions); labels
    are a noisy linear rule."""
    rng = np.random.RandomState(seed)
    U, _ = np.linalg.qr(rng.randn(d, d))
    V, _ = np.linalg.qr(rng.randn(d, d))
    A = U @ np.diag(np.logspace(0, -2, d)) @ V.T
    Z = rng.randn(n, d)
    y = np.where(Z @ rng.randn(d) + 0.1 * rng.randn(n) > 0, 1.0, -1.0)
    return Z @ A.T, y


@pytest.mark.parametrize("update", UPDATES)
def test_full_matrix_beats_diagonal_on_correlated_features(update):
    """Duchi et al.'s motivation: the full proximal matrix adapts to the
    geometry of correlated features.  Each method at its best eta over the
    same grid; progressive (predict-then-learn) loss of one pass."""
    X, y = _correlated_stream(0)
    n, d = X.shape
    ones, order = np.ones(n), np.arange(n, dtype=np.int64)
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    etas = [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0]
    full, diag = [], []
    for eta in etas:
        _, _, _, sum_loss, sum_weight = _full(
            X, y, ones, loss="log_loss", update=update, eta=eta, delta=1e-3,
            l2=0.0, fit_intercept=True)
        full.append(sum_loss / sum_weight)
        problem = AdaGradProblem(
            loss=make_loss("log_loss"), update=update, eta=eta, delta=1e-3, l1=0.0, l2=0.0,
            fit_intercept=True, acc=np.zeros((d, 4 if update == "mirror_descent" else 2)),
            intercept=0.0, intercept_sum_grad=0.0, intercept_sum_sq_grad=0.0, t=0)
        sum_loss, sum_weight = run_epoch(problem, data, indices, indptr, is_dense, n_features,
                                         y, ones, order)
        diag.append(sum_loss / sum_weight)
    # the best of each is inside the grid, not at its edge
    assert 0 < np.argmin(full) < len(etas) - 1
    assert 0 < np.argmin(diag) < len(etas) - 1
    # margin: at least 20% lower progressive loss
    assert min(full) < 0.8 * min(diag), (min(full), min(diag))


def test_rows_of_zero_weight_are_not_steps(correlated_problem):
    X, y, sample_weight = correlated_problem
    keep = sample_weight != 0
    params = dict(loss="hinge", update="dual_averaging", eta=0.5, delta=0.1,
                  l2=1e-2, fit_intercept=True)
    with_zeros = _full(X, y, sample_weight, **params)
    without = _full(X[keep], y[keep], sample_weight[keep], **params)
    for a, b in zip(with_zeros, without):
        assert_array_equal(a, b)


def test_invalid_arguments(correlated_problem):
    X, y, sample_weight = correlated_problem
    params = dict(loss="hinge", eta=0.5, delta=0.1, l2=0.0, fit_intercept=True)
    with pytest.raises(ValueError, match="update"):
        _full(X, y, sample_weight, update="ftrl_proximal", **params)
    data, indices, indptr, is_dense, n_features = as_row_arrays(X)
    with pytest.raises(ValueError, match="G"):
        problem = FullMatrixProblem(
            loss=make_loss("hinge"), update="dual_averaging", eta=0.5, delta=0.1, l2=0.0,
            fit_intercept=True, coef=np.zeros(6), sum_grad=np.zeros(6),
            sum_outer_grad=np.zeros((6, 6)), intercept=0.0, intercept_sum_grad=0.0, t=0)
        run_epoch_full(problem, data, indices, indptr, is_dense, n_features, y,
                       sample_weight, np.arange(40, dtype=np.int64))


def test_max_features_is_a_positive_int():
    assert isinstance(FULL_MATRIX_MAX_FEATURES, int)
    assert FULL_MATRIX_MAX_FEATURES > 0


# --- through the estimator ------------------------------------------------
def test_estimator_full_matrix_lower_online_loss_than_diagonal():
    from sklearn_adaprox import AdaGradClassifier

    X, y = _correlated_stream(1)
    best = {}
    for matrix in ("full", "diagonal"):
        best[matrix] = min(
            AdaGradClassifier(loss="log_loss", matrix=matrix, penalty=None, eta=eta,
                              delta=1e-3, max_iter=1, tol=None, shuffle=False)
            .fit(X, y).loss_curve_[0]
            for eta in (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
        )
    assert best["full"] < 0.8 * best["diagonal"], best


def test_estimator_refuses_too_many_features_and_changes_nothing():
    from sklearn_adaprox import AdaGradClassifier

    X = np.zeros((4, FULL_MATRIX_MAX_FEATURES + 1))
    clf = AdaGradClassifier(matrix="full")
    with pytest.raises(ValueError, match="limited to n_features"):
        clf.fit(X, [0, 1, 0, 1])
    assert not hasattr(clf, "coef_") and not hasattr(clf, "n_features_in_")
    with pytest.raises(ValueError, match="penalty='l2' or None"):
        AdaGradClassifier(matrix="full", penalty="l1").fit(X[:, :5], [0, 1, 0, 1])


def test_l1_ball_is_refused_with_the_full_matrix_and_nothing_changes():
    """The l1-ball projection is in the diagonal metric: with matrix='full'
    the constraint would be dropped silently, so the combination is refused
    before any state exists, and a fitted model is left as it was."""
    from sklearn_adaprox import AdaGradClassifier

    rng = np.random.RandomState(0)
    X, y = rng.randn(30, 4), np.tile([0, 1], 15)
    clf = AdaGradClassifier(matrix="full", penalty=None, l1_ball=1.0)
    with pytest.raises(ValueError, match="l1_ball is implemented for the diagonal"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")
    fitted = AdaGradClassifier(matrix="full", penalty=None, random_state=0).fit(X, y)
    coef = fitted.coef_.copy()
    with pytest.raises(ValueError, match="l1_ball is implemented for the diagonal"):
        fitted.set_params(l1_ball=1.0).partial_fit(X, y)
    assert_array_equal(fitted.coef_, coef)
