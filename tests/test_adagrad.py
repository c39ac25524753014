"""AdaGradClassifier against its NumPy transcription, and its own promises."""
import itertools
import os
import platform
import re

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score

from reference.adagrad import adagrad_reference, ftrl_proximal_mcmahan
from sklearn_adaprox import AdaGradClassifier, _adagrad_fast, _dataset
from sklearn_adaprox.datasets import load_a9a, make_sparse_zipf

LOSSES = ["hinge", "log_loss", "squared_hinge", "modified_huber"]
UPDATES = ["dual_averaging", "mirror_descent", "ftrl_proximal"]
PENALTIES = ["l2", "l1", "elasticnet", None]


@pytest.fixture(scope="module")
def small_sparse_problem():
    """A few hundred rows with many zeros, so most weights sit idle for a
    while and the lazy catch-up is exercised."""
    rng = np.random.RandomState(0)
    X = rng.randn(300, 20) * (rng.rand(300, 20) < 0.3)
    true_coef = np.r_[rng.randn(8), np.zeros(12)]  # 12 irrelevant features
    y = np.where(X @ true_coef + 0.3 * rng.randn(300) > 0, 1, -1)
    sample_weight = rng.uniform(0.2, 2.0, 300)
    sample_weight[::11] = 0.0
    return X, y, sample_weight


def _kernel_vs_reference(X, y, sample_weight, fit_intercept, **params):
    clf = AdaGradClassifier(
        max_iter=1, tol=None, shuffle=False, fit_intercept=fit_intercept,
        l1_ratio=0.6, eta=0.5, **params,
    )
    l1, l2 = clf._penalty_strengths()
    expected = adagrad_reference(
        X, y, sample_weight, loss=clf.loss, update=clf.update, eta=clf.eta,
        delta=clf.delta, l1=l1, l2=l2, fit_intercept=fit_intercept,
        adaptive=clf.matrix != "identity",
    )
    w, b, u, ssq, b_u, b_ssq, t, sum_loss = expected
    for X_in in (X, sp.csr_matrix(X)):
        clf.fit(X_in, y, sample_weight=sample_weight)
        assert_allclose(clf.coef_[0], w, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_[0], b, rtol=0, atol=1e-10)
        assert_allclose(clf.sum_gradient_[0], u, rtol=0, atol=1e-10)
        assert_allclose(clf.sum_sq_gradient_[0], ssq, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_sum_gradient_[0], b_u, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_sum_sq_gradient_[0], b_ssq, rtol=0, atol=1e-10)
        assert clf.t_ == t
        assert_allclose(clf.loss_curve_[0], sum_loss / sample_weight.sum(), rtol=1e-10)
    return clf


@pytest.mark.parametrize(
    "loss, update, penalty", list(itertools.product(LOSSES, UPDATES, PENALTIES))
)
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
def test_kernel_matches_numpy_transcription(
    small_sparse_problem, loss, update, penalty, fit_intercept, weighted
):
    X, y, sample_weight = small_sparse_problem
    if not weighted:
        sample_weight = np.ones_like(sample_weight)
    delta = 0.0 if update == "mirror_descent" else 0.1
    # strengths at which l1 zeroes some but not all weights
    alpha = {"dual_averaging": 0.05, "mirror_descent": 0.2, "ftrl_proximal": 0.05}
    clf = _kernel_vs_reference(
        X, y, sample_weight, fit_intercept, alpha=alpha[update],
        loss=loss, update=update, penalty=penalty, delta=delta,
    )
    if penalty in ("l1", "elasticnet"):
        # the comparison must have covered exact zeros too
        assert 0 < np.count_nonzero(clf.coef_) < clf.coef_.size


@pytest.mark.parametrize("loss, penalty", list(itertools.product(LOSSES, PENALTIES)))
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("delta", [0.0, 0.1])
def test_non_adaptive_baseline_matches_numpy_transcription(
    small_sparse_problem, loss, penalty, fit_intercept, delta
):
    # matrix="identity": H = delta + sqrt(t) for every coordinate
    X, y, sample_weight = small_sparse_problem
    _kernel_vs_reference(
        X, y, sample_weight, fit_intercept, alpha=0.05, loss=loss,
        penalty=penalty, delta=delta, matrix="identity", update="dual_averaging",
    )


def test_non_adaptive_baseline_is_plain_rda():
    # Xiao's RDA with beta_t = gamma sqrt(t) and h(w) = ||w||^2 is
    # RDAPlusClassifier(local_phase=False); with h = ||w||^2 / 2 and
    # beta_t = sqrt(t) / eta it is matrix="identity": gamma = 1 / (2 eta).
    from sklearn_adaprox import RDAPlusClassifier

    X, y, _, _ = load_a9a()
    X, y = X[:2000], y[:2000]
    rda = RDAPlusClassifier(alpha=1e-3, gamma=2.5, local_phase=False, max_iter=1,
                            tol=None, shuffle=False, fit_intercept=False).fit(X, y)
    identity = AdaGradClassifier(loss="log_loss", penalty="l1", alpha=1e-3,
                                 eta=0.2, matrix="identity", max_iter=1, tol=None,
                                 shuffle=False, fit_intercept=False).fit(X, y)
    assert_allclose(identity.coef_, rda.coef_, rtol=1e-9, atol=1e-12)


def test_multiclass_is_one_vs_rest_of_the_binary_kernel(small_sparse_problem):
    X, _, sample_weight = small_sparse_problem
    y = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])  # three classes
    clf = AdaGradClassifier(max_iter=1, tol=None, shuffle=False, penalty="l1",
                            alpha=0.01, eta=0.5).fit(X, y, sample_weight=sample_weight)
    for k in range(3):
        w, b, *_ = adagrad_reference(
            X, np.where(y == k, 1, -1), sample_weight, loss="hinge",
            update="dual_averaging", eta=0.5, delta=0.0, l1=0.01, l2=0.0,
            fit_intercept=True,
        )
        assert_allclose(clf.coef_[k], w, rtol=0, atol=1e-10)
        assert_allclose(clf.intercept_[k], b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("penalised", [False, True])
def test_ftrl_proximal_is_mcmahan_algorithm_1(penalised):
    """update='ftrl_proximal' reproduces McMahan et al. (2013), Algorithm 1,
    under the documented mapping, including its exact zeros.  ``alpha`` is
    the average-loss strength of every update, so the penalty of each step
    counts once: the strengths before step t are ``lambda * t`` (McMahan
    2011's composite form), and without a penalty the two coincide."""
    X, y = make_sparse_zipf(400, 60, 8, random_state=1)
    X = X.toarray()
    alpha_m, beta_m = 0.3, 1.0
    lambda1, lambda2 = (0.5 / 400, 0.2 / 400) if penalised else (0.0, 0.0)
    w, z, n = ftrl_proximal_mcmahan(
        X, y, alpha=alpha_m, beta=beta_m, lambda1=lambda1, lambda2=lambda2,
        per_round=True,
    )
    penalty = dict(penalty="elasticnet", alpha=lambda1 + lambda2,
                   l1_ratio=lambda1 / (lambda1 + lambda2)) if penalised else dict(penalty=None)
    clf = AdaGradClassifier(
        loss="log_loss", update="ftrl_proximal", eta=alpha_m, delta=beta_m, **penalty,
        fit_intercept=False, max_iter=1, tol=None, shuffle=False,
    )
    for X_in in (X, sp.csr_matrix(X)):
        clf.fit(X_in, y)
        assert_allclose(clf.coef_[0], w, rtol=0, atol=1e-12)
        assert_allclose(clf.sum_gradient_[0], z, rtol=0, atol=1e-12)
        assert_allclose(clf.sum_sq_gradient_[0], n, rtol=0, atol=1e-12)
        # exact zeros exactly where |z_i| <= lambda1 t
        assert_array_equal(clf.coef_[0] == 0.0, np.abs(z) <= lambda1 * X.shape[0])
    if penalised:
        assert 0 < np.count_nonzero(w) < w.size
    else:  # without a penalty it is Algorithm 1 as published
        assert_array_equal(w, ftrl_proximal_mcmahan(X, y, alpha=alpha_m, beta=beta_m,
                                                    lambda1=0.0, lambda2=0.0)[0])


def test_dual_averaging_is_not_ftrl_proximal():
    """The documented difference: without a penalty FTRL-Proximal is mirror
    descent, not dual averaging."""
    X, y = make_sparse_zipf(300, 40, 6, random_state=2)
    params = dict(penalty=None, max_iter=1, tol=None, shuffle=False, eta=0.3,
                  delta=0.5)
    ftrl = AdaGradClassifier(update="ftrl_proximal", **params).fit(X, y)
    md = AdaGradClassifier(update="mirror_descent", **params).fit(X, y)
    da = AdaGradClassifier(update="dual_averaging", **params).fit(X, y)
    assert_allclose(ftrl.coef_, md.coef_, rtol=0, atol=1e-12)
    assert np.abs(ftrl.coef_ - da.coef_).max() > 1e-3


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("penalty", PENALTIES)
def test_scaling_all_sample_weights_equals_dividing_alpha_and_delta(update, penalty):
    X, y, _, _ = load_a9a()
    X, y = X[:500], y[:500]
    c = 3.5
    base = AdaGradClassifier(update=update, penalty=penalty, alpha=1e-3, delta=0.2,
                             l1_ratio=0.5, max_iter=2, tol=None, random_state=0)
    weighted = clone(base).fit(X, y, sample_weight=np.full(500, c))
    rescaled = clone(base).set_params(alpha=1e-3 / c, delta=0.2 / c).fit(X, y)
    assert_allclose(weighted.coef_, rescaled.coef_, rtol=1e-10, atol=1e-12)
    assert_allclose(weighted.intercept_, rescaled.intercept_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "update, alphas",
    [
        ("dual_averaging", (1e-6, 1e-4, 1e-3, 1e-2)),
        ("mirror_descent", (1e-6, 1e-3, 1e-2, 1e-1)),
        ("ftrl_proximal", (1e-6, 1e-4, 1e-3, 1e-2)),
    ],
)
def test_l1_gives_exact_zeros_that_grow_with_alpha(update, alphas):
    X, y, _, _ = load_a9a()
    nnz = [
        np.count_nonzero(
            AdaGradClassifier(update=update, penalty="l1", alpha=alpha, max_iter=1,
                              tol=None, random_state=0).fit(X, y).coef_
        )
        for alpha in alphas
    ]
    assert nnz == sorted(nnz, reverse=True)
    assert nnz[-1] < nnz[0] / 2


def test_defaults_beat_sgdclassifier_defaults_on_a9a_and_one_epoch_comes_close():
    """The default fit beats SGDClassifier's default fit; one epoch alone
    is within a point of it (eta=1, the default, takes long first steps:
    0.1 made one epoch better and the whole fit slower on text)."""
    X_train, y_train, X_test, y_test = load_a9a()
    sgd = SGDClassifier(random_state=0).fit(X_train, y_train).score(X_test, y_test)
    for seed in range(3):
        clf = AdaGradClassifier(random_state=seed).fit(X_train, y_train)
        assert clf.score(X_test, y_test) >= sgd
        clf = AdaGradClassifier(max_iter=1, random_state=seed).fit(X_train, y_train)
        assert clf.score(X_test, y_test) >= sgd - 0.01


@pytest.mark.parametrize("loss", ["hinge", "log_loss"])
@pytest.mark.parametrize("container", ["csr", "dense"])
@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("penalty, alpha", [("l2", 1e-4), ("l1", 1e-3), ("elasticnet", 3e-3),
                                            (None, 1e-4)])
def test_avx_and_sse2_loops_agree_bit_for_bit(loss, container, update, penalty, alpha):
    """The AVX loops of every update rule (float64 rows, int32 indices for
    the steps; CPUs that have AVX) keep the arithmetic and the order of the
    SSE2 and scalar ones; zeros of dense rows are left alone in both.  With
    an l1 part, some weights are past their threshold and some are not
    (both sides of the branch-free AVX select); without a penalty and with
    delta=0, untouched coordinates have a zero denominator."""
    X, y = make_sparse_zipf(600, 300, 25, random_state=5)
    X = X.toarray() if container == "dense" else X
    if update == "mirror_descent":
        alpha *= 3  # its steps shrink less than dual averaging's thresholds
    clf = AdaGradClassifier(loss=loss, update=update, penalty=penalty, alpha=alpha,
                            delta=0.0 if penalty is None else 0.1, max_iter=2, tol=None,
                            random_state=0)
    previous = _adagrad_fast.set_avx(False)
    try:
        sse2 = clone(clf).fit(X, y)
        _adagrad_fast.set_avx(True)
        if not _adagrad_fast.set_avx(True):  # still off after asking for it
            pytest.skip("this CPU has no AVX")
        avx = clone(clf).fit(X, y)
    finally:
        _adagrad_fast.set_avx(previous)
    assert_array_equal(avx.coef_, sse2.coef_)
    assert_array_equal(avx.sum_sq_gradient_, sse2.sum_sq_gradient_)
    assert avx.loss_curve_ == sse2.loss_curve_
    if update == "mirror_descent":
        assert_array_equal(avx.md_weights_, sse2.md_weights_)
    if penalty in ("l1", "elasticnet"):
        assert 0.1 < np.mean(avx.coef_ == 0) < 0.9


@pytest.mark.parametrize("first_penalty, first_alpha", [(None, 1e-4), ("l2", 1e-2),
                                                      ("l1", 1e-3)])
def test_mirror_descent_steps_before_a_change_of_options_keep_the_old_ones(
        first_penalty, first_alpha):
    """A weight of mirror descent idle across a change of the penalty is
    shrunk under the old options up to the change and under the new ones
    after it: after a call under the new options, a weight whose column the
    call's rows do not touch is the closed form of the new l2 shrinkage over
    that call's steps, from its value at the end of the previous call.
    Without a penalty the kernel keeps no steps at all, so the catch-up at
    the change is what makes the next penalised call exact."""
    X, y = make_sparse_zipf(400, 60, 8, random_state=2)
    first, second = X[:200], X[200:].tolil()
    second[:, :20] = 0  # columns 0-19 idle in the second call
    second = sp.csr_matrix(second)
    second.eliminate_zeros()
    clf = AdaGradClassifier(update="mirror_descent", penalty=first_penalty,
                            alpha=first_alpha, delta=0.1, shuffle=False)
    clf.partial_fit(first, y[:200], classes=[0, 1])
    weights, root = clf.coef_[0, :20].copy(), clf.accumulators_[0, :20, 1].copy()
    assert np.count_nonzero(weights) >= 10
    clf.set_params(penalty="l2", alpha=1e-3)
    clf.partial_fit(second, y[200:])
    decay = np.exp(-200 * np.log1p(clf.eta * 1e-3 / (clf.delta + root)))
    assert_allclose(clf.coef_[0, :20], weights * decay, rtol=1e-12, atol=0)


def _ulps(value, reference):
    """|value - reference| in units of the last place of the double nearest
    the reference (a long double where the platform has one)."""
    nearest = reference.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ulps = (np.abs(value.astype(np.longdouble) - reference)
                / np.spacing(np.abs(nearest)).astype(np.longdouble))
    return np.where(value == nearest, 0.0, ulps.astype(np.float64))


def test_mirror_descent_log1p_and_exp_are_within_a_few_ulp():
    """The catch-up's own log1p(x) and e^y, 1 - e^y (x >= 0, y <= 0; written
    so that the AVX loop can repeat them bit for bit) against NumPy's in
    long double (80-bit on x86; 2.8, 1.0 and 1.1 ulp at most when
    measured), over the whole range of doubles, subnormals, the underflow
    of e^y near -745 and the infinities included."""
    rng = np.random.default_rng(0)
    x = np.r_[10.0 ** rng.uniform(-323, 308, 100_000), rng.uniform(0, 3, 100_000),
              0.0, 5e-324, 1e-16, 2.0 ** -53, np.sqrt(2) - 1, 1.0, np.finfo(float).max,
              np.inf]
    y = -np.r_[10.0 ** rng.uniform(-323, 4, 100_000), rng.uniform(0, 800, 100_000),
               0.0, 5e-324, 1e-16, 0.5 * np.log(2), 708.4, 745.1, 1e300, np.inf]
    log1p, exp, one_minus = _adagrad_fast.log1p_exp(x, y)
    x, y = x.astype(np.longdouble), y.astype(np.longdouble)
    assert _ulps(log1p, np.log1p(x)).max() <= 4
    assert _ulps(exp, np.exp(y)).max() <= 2
    assert _ulps(one_minus, -np.expm1(y)).max() <= 2
    assert log1p[-1] == np.inf and exp[-1] == 0.0 and one_minus[-1] == 1.0


@pytest.mark.parametrize("l1, l2", [(0.0, 1e-3), (1e-3, 0.0), (1e-3, 1e-3)])
def test_mirror_descent_catch_up_four_lanes_and_scalar(l1, l2):
    """Mirror descent's idle-step closed form through the AVX loop gives the
    scalar form's bits on every kind of entry (zero weights, no idle steps,
    H = 0, roots so small that the penalty's rate overflows, weights driven
    to zero), and both are the closed form of the docstring computed with
    NumPy's log1p and expm1, where the inputs are moderate."""
    rng = np.random.default_rng(1)
    n = 4003
    w = rng.standard_normal(n) * 10.0 ** rng.uniform(-300, 2, n)
    w[::7] = 0.0
    root = 10.0 ** rng.uniform(-320, 3, n)
    root[::11] = 0.0
    idle = np.floor(10.0 ** rng.uniform(0, 7, n))
    idle[::13] = 0.0
    params = dict(eta=0.5, delta=0.0, l1=l1, l2=l2)
    scalar, avx = w.copy(), w.copy()
    _adagrad_fast.md_catch_up(scalar, root, idle, four_lanes=False, **params)
    previous = _adagrad_fast.set_avx(True)
    try:
        if not _adagrad_fast.set_avx(True):
            pytest.skip("this CPU has no AVX")
        _adagrad_fast.md_catch_up(avx, root, idle, four_lanes=True, **params)
    finally:
        _adagrad_fast.set_avx(previous)
    assert_array_equal(avx, scalar)
    assert np.all(np.isfinite(avx))
    assert 0.05 < np.mean((avx == 0) & (w != 0))

    moderate = (root > 1e-3) & (w != 0) & (np.abs(w) > 1e-100)
    H = root[moderate]
    a, r, k, w_m = 0.5 * l1 / H, 0.5 * l2 / H, idle[moderate], w[moderate]
    if l2 > 0:
        decay = np.exp(-k * np.log1p(r))
        shrink = a * (-np.expm1(-k * np.log1p(r)) / r)
    else:
        decay, shrink = 1.0, a * k
    expected = np.sign(w_m) * np.maximum(np.abs(w_m) * decay - shrink, 0.0)
    expected = np.where(k > 0, expected, w_m)
    assert_allclose(scalar[moderate], expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("update", UPDATES)
def test_asking_for_the_next_rows_state_changes_nothing(update):
    """On a wide state (2**17 columns: 2 MiB of sums, past the threshold of
    _dataset.state_is_wide) a pass asks for the next row's entries while it
    computes a row (and mirror descent's weights and steps): a hint, so the
    model is bit for bit that of a pass that does not."""
    X, y = make_sparse_zipf(400, 2**17, 30, random_state=2)
    clf = AdaGradClassifier(update=update, penalty="elasticnet", alpha=1e-3, max_iter=2,
                            tol=None, random_state=0)
    previous = _dataset.set_prefetch(False)
    try:
        plain = clone(clf).fit(X, y)
        _dataset.set_prefetch(True)
        hinted = clone(clf).fit(X, y)
    finally:
        _dataset.set_prefetch(previous)
    assert np.count_nonzero(plain.coef_) > 100
    for name in ("accumulators_", "md_weights_", "md_steps_", "intercept_"):
        if name in plain.__dict__:
            assert_array_equal(hinted.__dict__[name], plain.__dict__[name], err_msg=name)
    assert hinted.loss_curve_ == plain.loss_curve_


def test_simd_paths_of_the_build():
    """_adagrad_fast.SIMD_PATHS names the paths compiled in (setup.py,
    _simd.h): only the scalar fallbacks in a build made with
    SKLEARN_ADAPROX_NO_SIMD=1 (set in the environment of the tests too, as
    CI does), SSE2 on every other x86-64 build; without AVX compiled in,
    the AVX loops cannot be chosen."""
    paths = _adagrad_fast.SIMD_PATHS
    assert paths in ("sse2+avx", "sse2", "avx", "scalar")
    if os.environ.get("SKLEARN_ADAPROX_NO_SIMD", "0") not in ("", "0"):
        assert paths == "scalar"
    elif platform.machine().lower() in ("x86_64", "amd64"):
        assert "sse2" in paths
    previous = _adagrad_fast.set_avx(True)
    try:
        if "avx" not in paths:
            assert not _adagrad_fast.set_avx(True)
    finally:
        _adagrad_fast.set_avx(previous)


@pytest.mark.parametrize("update", UPDATES)
def test_csr_variants_give_the_same_model(update):
    """int32/int64 indices, csr_matrix/csr_array, unsorted indices, duplicated
    entries (summed) and read-only buffers all give the canonical model."""
    X, y = make_sparse_zipf(500, 200, 10, random_state=3)
    clf = AdaGradClassifier(update=update, penalty="l1", alpha=1e-3, max_iter=2,
                            tol=None, random_state=0)
    reference = clone(clf).fit(X, y)

    variants = {"csr_array": sp.csr_array(X)}
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    variants["int64 indices"] = X64

    # reverse the order of the entries inside every row
    rev = X.copy()
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        rev.indices[lo:hi] = X.indices[lo:hi][::-1]
        rev.data[lo:hi] = X.data[lo:hi][::-1]
    rev.has_sorted_indices = False
    variants["unsorted"] = rev

    # split every entry into two halves stored as duplicates
    coo = X.tocoo()
    dup = sp.csr_matrix(
        (np.r_[coo.data / 2, coo.data / 2], (np.r_[coo.row, coo.row], np.r_[coo.col, coo.col])),
        shape=X.shape,
    )
    dup = sp.csr_matrix((dup.data, dup.indices, dup.indptr), shape=X.shape)
    dup.has_canonical_format = False
    dup_data_before = dup.data.copy()
    variants["duplicates"] = dup

    readonly = X.copy()
    for arr in (readonly.data, readonly.indices, readonly.indptr):
        arr.flags.writeable = False
    variants["read-only"] = readonly

    for name, X_variant in variants.items():
        model = clone(clf).fit(X_variant, y)
        assert_allclose(model.coef_, reference.coef_, rtol=0, atol=1e-12, err_msg=name)
        assert_allclose(model.intercept_, reference.intercept_, rtol=0, atol=1e-12)
    assert_array_equal(dup.data, dup_data_before)  # the caller's data untouched

    dense_ro = X.toarray()
    dense_ro.flags.writeable = False
    model = clone(clf).fit(dense_ro, y)
    assert_allclose(model.coef_, reference.coef_, rtol=0, atol=1e-10)


def test_n_jobs_gives_the_same_model():
    X, y = make_sparse_zipf(2000, 300, 12, random_state=4)
    y = y + 2 * (X[:, 0].toarray().ravel() > 0)  # four classes
    one = AdaGradClassifier(random_state=0, max_iter=3, tol=None, n_jobs=1).fit(X, y)
    two = AdaGradClassifier(random_state=0, max_iter=3, tol=None, n_jobs=2).fit(X, y)
    assert_array_equal(one.coef_, two.coef_)
    assert_array_equal(one.intercept_, two.intercept_)


def test_verbose_prints_one_line_per_epoch_and_chunk(capsys):
    X, y, _, _ = load_a9a()
    clf = AdaGradClassifier(verbose=1, max_iter=3, tol=None, random_state=0)
    clf.fit(X[:1000], y[:1000])
    clf.partial_fit(X[1000:1500], y[1000:1500])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4
    pattern = (r"-- (epoch|chunk) \d+: samples seen (\d+), progressive loss \S+, "
               r"non-zero weights \d+/123, elapsed \S+ s")
    seen = [int(re.fullmatch(pattern, line).group(2)) for line in lines]
    assert seen == [1000, 2000, 3000, 3500]


def test_early_stopping_stops():
    X, y, _, _ = load_a9a()
    clf = AdaGradClassifier(max_iter=200, tol=1e-3, n_iter_no_change=3,
                            random_state=0).fit(X[:3000], y[:3000])
    assert clf.n_iter_ < 200
    assert len(clf.loss_curve_) == clf.n_iter_
    best = min(clf.loss_curve_[:-3])
    assert all(loss > best - 1e-3 for loss in clf.loss_curve_[-3:])


@pytest.mark.parametrize("loss", ["log_loss", "modified_huber"])
def test_predict_proba(loss):
    X_train, y_train, X_test, y_test = load_a9a()
    clf = AdaGradClassifier(loss=loss, max_iter=1, random_state=0).fit(X_train, y_train)
    proba = clf.predict_proba(X_test)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X_test))
    score = clf.decision_function(X_test)
    order = np.argsort(score)
    assert np.all(np.diff(proba[order, 1]) >= 0)
    assert not hasattr(AdaGradClassifier(loss="hinge"), "predict_proba")
    if loss == "log_loss":
        # calibrated well enough to beat the base rate
        from sklearn.metrics import log_loss
        base = np.mean(y_train == 1)
        assert log_loss(y_test, proba) < log_loss(y_test, np.full(len(y_test), base))


def test_learns_rare_informative_features_of_text_like_data():
    X, y = make_sparse_zipf(30_000, 5_000, 30, random_state=5)
    X_train, y_train, X_test, y_test = X[:25_000], y[:25_000], X[25_000:], y[25_000:]
    ada = AdaGradClassifier(max_iter=1, eta=0.5, random_state=0).fit(X_train, y_train)
    sgd = SGDClassifier(max_iter=1, tol=None, random_state=0).fit(X_train, y_train)
    # per-coordinate steps help exactly where features are rare
    assert accuracy_score(y_test, ada.predict(X_test)) > accuracy_score(
        y_test, sgd.predict(X_test)
    )


@pytest.mark.parametrize("update, poisoned", [("dual_averaging", "accumulators_"),
                                              ("ftrl_proximal", "accumulators_"),
                                              ("mirror_descent", "accumulators_"),
                                              ("mirror_descent", "md_weights_")])
@pytest.mark.parametrize("container", ["dense", "sparse", "float32"])
@pytest.mark.parametrize("avx", [True, False], ids=["avx", "sse2"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_each_pass_tests_the_values_it_writes(update, poisoned, container, avx, n_jobs,
                                              monkeypatch):
    """The element-wise kernel tests every value it writes (in its AVX
    lanes and in its scalar loops), so that no read of the state follows a
    pass: when problem 1's pass writes an infinite square-gradient root
    (its roots near the largest double squared; the logistic loss gives
    every step a gradient) or weight (an infinite weight caught up), the
    call fails naming the array, in the general
    path (one-vs-rest in threads, or in one compiled call in one thread)
    and in a short call's compiled one, and the model is as before."""
    import pickle

    from sklearn_adaprox import _short_calls

    rng = np.random.RandomState(0)
    X = sp.random(80, 300, density=0.02, format="csr", random_state=rng)
    X = {"dense": X.toarray(), "sparse": X, "float32": X.astype(np.float32)}[container]
    y = rng.randint(0, 3, 80)
    model = AdaGradClassifier(update=update, loss="log_loss", n_jobs=n_jobs,
                              random_state=0).fit(X, y)
    # mirror descent's weights are columns of accumulators_ (its entries)
    assert "accumulators_" in model._kernel_checked_arrays()
    if poisoned == "accumulators_":
        model.accumulators_[1, :, 1] = 1e200
    else:
        model.accumulators_[1, :, 2] = np.inf
    before = pickle.dumps(model)
    previous = _adagrad_fast.set_avx(avx)
    try:
        for short_chunk_rows in (0, 1024):
            monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", short_chunk_rows)
            with pytest.raises(ValueError, match=f"Floating-point overflow in .*{poisoned}"):
                model.partial_fit(X, y)
            assert pickle.dumps(model) == before
    finally:
        _adagrad_fast.set_avx(previous)
