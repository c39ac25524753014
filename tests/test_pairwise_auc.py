"""PairwiseAUCClassifier against its NumPy transcription, and its own promises."""
import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import MinMaxScaler

from bundled_text import sms_tfidf
from reference.pairwise_auc import pairwise_auc_reference
from sklearn_adaprox import PairwiseAUCClassifier
from sklearn_adaprox._pairwise_auc_fast import PairwiseAUCProblem, momentum_window
from sklearn_adaprox.datasets import load_a9a, make_sparse_zipf

LOSSES = ["hinge", "square", "log_loss", "logit_square"]
ALGORITHMS = ["aogd", "aogd_strongly_convex", "ogd"]


@pytest.fixture(scope="module")
def stream():
    """Sparse rows plus a few rare columns that stay idle for hundreds of
    steps, so the lazy momentum (live and archived stamps) and the lazy
    projection scale are all exercised."""
    rng = np.random.RandomState(0)
    n, d = 900, 24
    X = rng.randn(n, d) * (rng.rand(n, d) < 0.15)
    for j in range(16, d):
        X[:, j] = 0.0
        rows = rng.choice(n, 3, replace=False)
        X[rows, j] = 3.0 * rng.randn(3)
    y = np.where(X @ rng.randn(d) + 0.5 * rng.randn(n) > 0.3, 1, -1)
    sample_weight = rng.uniform(0.3, 2.0, n)
    sample_weight[::13] = 0.0
    return X, y, sample_weight


def _assert_matches(clf, ref, one_pass=True):
    scale = max(1.0, np.abs(ref["w"]).max())
    assert_allclose(clf.iterate_[0], ref["w"], rtol=0, atol=1e-10 * scale)
    if clf.average:
        assert clf.averaged_steps_ == ref["n_averaged"]
        assert_allclose(clf.coef_sum_[0], ref["w_sum"], rtol=0,
                        atol=1e-10 * max(1.0, np.abs(ref["w_sum"]).max()))
        mean = ref["w_sum"] / ref["n_averaged"]
        assert_allclose(clf.coef_[0], mean, rtol=0,
                        atol=1e-10 * max(1.0, np.abs(mean).max()))
    else:
        assert_array_equal(clf.coef_, clf.iterate_)
    assert_allclose(clf.score_stats_, ref["score_stats"], rtol=1e-9,
                    atol=1e-9 * np.abs(ref["score_stats"]).max())
    assert_allclose(clf.momentum_[0], ref["m"], rtol=0, atol=1e-10 * scale)
    assert_allclose(clf.total_sq_gradient_[0], ref["v"], rtol=1e-10)
    assert_allclose(clf.sum_sq_gradient_[0], ref["ssq"], rtol=1e-10, atol=1e-300)
    assert clf.t_ == ref["t"]
    assert_allclose(clf.progressive_auc_, ref["ordered_weight"] / ref["pair_weight"],
                    rtol=1e-12)
    if one_pass:
        assert_allclose(clf.loss_curve_[-1], ref["sum_loss"] / ref["sum_weight"],
                        rtol=1e-9)


@pytest.mark.parametrize(
    "loss, algorithm, adaptive",
    [
        (loss, alg, ad)
        for loss, alg, ad in itertools.product(LOSSES, ALGORITHMS, ["norm", "coordinate"])
        # ogd has no adaptive variant; the strongly convex step eta / v_j with
        # the vanishing gradients of the non-convex loss has no bounded
        # trajectory to compare (v_j -> tiny, steps -> 1e100)
        if not (alg == "ogd" and ad == "coordinate")
        and not (alg == "aogd_strongly_convex" and ad == "coordinate"
                 and loss == "logit_square")
    ],
)
@pytest.mark.parametrize("project", [False, True])
@pytest.mark.parametrize("theta", [0.0, 0.5, 0.9])
def test_kernel_matches_numpy_transcription(stream, loss, algorithm, adaptive, project,
                                            theta):
    X, y, sample_weight = stream
    params = dict(loss=loss, algorithm=algorithm, adaptive=adaptive, eta=0.3,
                  theta=theta, radius=None)
    ref = pairwise_auc_reference(X, y, sample_weight, **params)
    radius = None
    if project:
        # a ball that the unconstrained iterates leave
        radius = params["radius"] = 0.5 * np.linalg.norm(ref["w"])
        ref = pairwise_auc_reference(X, y, sample_weight, **params)
    for X_in in (X, sp.csr_matrix(X)):
        clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, **params)
        clf.fit(X_in, y, sample_weight=sample_weight)
        _assert_matches(clf, ref)
    if radius is not None:
        # the projection was active, and it holds
        assert ref["n_projections"] > 0
        assert np.linalg.norm(clf.coef_) <= radius * (1 + 1e-12)


@pytest.mark.parametrize("theta", [0.0, 0.1, 0.99, 0.999])
@pytest.mark.parametrize("adaptive", ["norm", "coordinate"])
def test_kernel_matches_numpy_transcription_over_theta(stream, theta, adaptive):
    """Momentum windows and block lengths of very different sizes."""
    X, y, sample_weight = stream
    params = dict(loss="hinge", algorithm="aogd", adaptive=adaptive, eta=0.3,
                  theta=theta, radius=0.4)
    ref = pairwise_auc_reference(X, y, sample_weight, **params)
    assert ref["n_projections"] > 0
    for X_in in (X, sp.csr_matrix(X)):
        clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, **params)
        _assert_matches(clf.fit(X_in, y, sample_weight=sample_weight), ref)


@pytest.mark.parametrize(
    "loss, algorithm, adaptive",
    [("hinge", "aogd", "norm"), ("log_loss", "aogd", "coordinate"),
     ("square", "aogd_strongly_convex", "norm"), ("hinge", "ogd", "norm")],
)
@pytest.mark.parametrize("theta", [0.0, 0.5, 0.99])
@pytest.mark.parametrize("project", [False, True])
def test_averaged_iterates_match_numpy_transcription(stream, loss, algorithm, adaptive,
                                                     theta, project):
    """average=True: the mean iterate (idle coordinates summed through the
    momentum tail and the projection scale) and the averaged model's
    prequential scores, dense and CSR."""
    X, y, sample_weight = stream
    params = dict(loss=loss, algorithm=algorithm, adaptive=adaptive, eta=0.3,
                  theta=theta, radius=None)
    ref = pairwise_auc_reference(X, y, sample_weight, average=True, **params)
    if project:
        # a ball that the unconstrained iterates leave
        params["radius"] = 0.5 * np.linalg.norm(ref["w"])
        ref = pairwise_auc_reference(X, y, sample_weight, average=True, **params)
        assert ref["n_projections"] > 0
    for X_in in (X, sp.csr_matrix(X)):
        clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, average=True,
                                    **params)
        _assert_matches(clf.fit(X_in, y, sample_weight=sample_weight), ref)
    # the mean differs from the last iterate, and is what predicts
    assert not np.allclose(clf.coef_, clf.iterate_)
    assert_allclose(clf.decision_function(X), X @ clf.coef_[0] + clf.intercept_[0])


def test_averaging_survives_a_long_shrinking_stream():
    """Thousands of projections shrink the scale P by hundreds of orders of
    magnitude while rare coordinates stay idle: the range sums of the
    segment tree must not cancel (differences of running sums would)."""
    rng = np.random.RandomState(1)
    n, d = 6000, 12
    X = rng.randn(n, d) * 3.0
    X[:, 8:] = 0.0
    for j in range(8, d):
        X[rng.choice(n, 4, replace=False), j] = 5.0
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    params = dict(loss="square", algorithm="aogd", adaptive="norm", eta=2.0,
                  theta=0.9, radius=0.05)
    ref = pairwise_auc_reference(X, y, np.ones(n), average=True, **params)
    assert ref["n_projections"] > n // 2
    clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, average=True,
                                **params).fit(sp.csr_matrix(X), y)
    _assert_matches(clf, ref)


def test_momentum_window_really_reaches_archived_stamps(stream):
    """Some rare coordinate must stay idle for more than J steps between two
    touches, or the archived-stamp branch of the kernel is never compared."""
    X, y, _ = stream
    J = momentum_window(0.5)
    gaps = [np.diff(np.flatnonzero(X[:, j])).max() for j in range(16, X.shape[1])]
    assert max(gaps) > J + 1
    assert momentum_window(0.9) > 300  # the documented order of magnitude
    assert momentum_window(0.0) == 0


@pytest.mark.parametrize("average, radius", [(False, 0.5), (True, 0.5), (False, None)])
@pytest.mark.parametrize("theta", [0.0, 0.9])
def test_chunks_continue_the_pair_and_match_the_reference(stream, average, radius, theta):
    """The last row of a call pairs with the first row of the next one.
    (Without projection or averaging a call saves and finalises only the
    columns it can change, see the next test.)"""
    X, y, sample_weight = stream
    params = dict(loss="hinge", algorithm="aogd", adaptive="norm", eta=0.3, theta=theta,
                  radius=radius)
    ref = pairwise_auc_reference(X, y, sample_weight, average=average, **params)
    clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, average=average,
                                **params)
    bounds = [0, 1, 2, 57, 300, 301, 900]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        clf.partial_fit(sp.csr_matrix(X[lo:hi]), y[lo:hi], classes=[-1, 1],
                        sample_weight=sample_weight[lo:hi])
        clf = pickle.loads(pickle.dumps(clf))
    _assert_matches(clf, ref, one_pass=False)
    # two one-row calls with different labels form one active pair
    two = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False)
    i, j = np.flatnonzero(y == 1)[0], np.flatnonzero(y == -1)[0]
    two.partial_fit(X[[i]], y[[i]], classes=[-1, 1])
    assert not np.any(two.coef_)
    two.partial_fit(X[[j]], y[[j]])
    assert two.pair_weight_ == 1.0 and np.any(two.coef_)



def test_a_long_partner_from_the_last_call_pairs_with_short_rows():
    """A step finds the partner's values in a table sized for the longest
    of the call's rows and the partner kept from the last call: a row of
    every column, then one-entry rows, one call each (the partner far
    longer than the call's rows), give the reference model."""
    rng = np.random.RandomState(3)
    n, d = 40, 64
    X = np.zeros((n, d))
    X[0] = rng.randn(d)
    X[20] = rng.randn(d)
    for i in set(range(1, n)) - {20}:
        X[i, rng.randint(d)] = rng.randn()
    y = np.where(np.arange(n) % 2 == 0, 1, -1)  # every step has a pair
    params = dict(loss="hinge", algorithm="aogd", adaptive="norm", eta=0.3, theta=0.9,
                  radius=None)
    ref = pairwise_auc_reference(X, y, np.ones(n), average=False, **params)
    clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, **params)
    for i in range(n):
        clf.partial_fit(sp.csr_matrix(X[i:i + 1]), y[i:i + 1], classes=[-1, 1])
    _assert_matches(clf, ref, one_pass=False)


@pytest.mark.parametrize("theta", [0.0, 0.9])
def test_a_narrow_call_moves_momentum_outside_its_row_and_takes_it_back(stream, theta):
    """Without projection or averaging a call on sparse rows saves and
    finalises only the columns it can change: its rows', the previous
    row's and those of non-zero momentum (whose weights keep moving), not
    every column.  One-row calls give the reference model, and a call that
    fails puts back the momentum it decayed outside its row (without
    momentum, theta = 0, the previous step's momentum ends with the call's
    first step, and no weight outside its rows moves)."""
    X, y, sample_weight = stream
    params = dict(loss="hinge", algorithm="aogd", adaptive="norm", eta=0.3, theta=theta,
                  radius=None)
    clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False, **params)
    rows = sp.csr_matrix(X)
    n, outside = 0, np.empty(0)
    # one-row calls until the momentum reaches outside the next row and the
    # last one (without momentum it is the last step's, when it moved)
    while n < 60 or not (outside.size and sample_weight[n] > 0):
        clf.partial_fit(rows[n:n + 1], y[n:n + 1], classes=[-1, 1],
                        sample_weight=sample_weight[n:n + 1])
        n += 1
        outside = np.setdiff1d(np.flatnonzero(clf.momentum_[0]),
                               np.union1d(rows[n].indices, clf.last_sample_indices_))
    ref = pairwise_auc_reference(X[:n], y[:n], sample_weight[:n], average=False, **params)
    _assert_matches(clf, ref, one_pass=False)

    row = rows[n:n + 1]  # its call takes a step (weight > 0), so finalize runs
    if theta == 0.0:
        # the previous step's momentum ends with the call's first step, and
        # moves no weight outside the step's rows
        weights = clf.iterate_[0, outside].copy()
        clf.partial_fit(row, y[n:n + 1])
        assert not np.any(clf.momentum_[0, outside])
        assert_array_equal(clf.iterate_[0, outside], weights)
        return
    clf.iterate_[0, outside[0]] = np.inf
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="overflow in this partial_fit call: iterate_"):
        clf.partial_fit(row, y[n:n + 1])
    assert pickle.dumps(clf) == before


@pytest.mark.parametrize("params", [{}, {"radius": 1.0}, {"average": True}])
def test_a_wide_fresh_fit_works_on_the_columns_of_X_alone(params, monkeypatch):
    """A fresh fit on sparse X that uses a small part of the width makes
    every pass on a state of X's columns alone, so that its finalize and
    the checks read those instead of the whole width, at every epoch (with
    a projection or averaging too); coef_ has the whole width."""
    rng = np.random.RandomState(0)
    X = sp.random(60, 5000, density=0.002, format="csr", random_state=rng)
    y = rng.randint(0, 2, 60)
    widths = []
    original = PairwiseAUCClassifier._run_epoch

    def spy(self, k, rows, *args, **kwargs):
        widths.append((rows[4], self.iterate_.shape[1]))
        return original(self, k, rows, *args, **kwargs)

    monkeypatch.setattr(PairwiseAUCClassifier, "_run_epoch", spy)
    model = PairwiseAUCClassifier(max_iter=3, tol=None, random_state=0, **params).fit(X, y)
    n_columns = np.unique(X.indices).shape[0]
    assert widths == [(n_columns, n_columns)] * 3
    assert model.coef_.shape == model.iterate_.shape == (1, 5000)
    assert set(np.flatnonzero(model.coef_[0])) <= set(X.indices)


@pytest.mark.parametrize("params", [{}, {"adaptive": "coordinate", "theta": 0.9},
                                    {"algorithm": "aogd_strongly_convex"}, {"theta": 0.9}])
def test_flat_hinge_pairs_read_without_their_union_give_the_same_bits(stream, params,
                                                                      monkeypatch):
    """A hinge pair whose margin, from the row's score and the partner's
    carried over from its step, is certainly at least 1 does not gather its
    union (the kernel's certainly_flat).  On real text (bundled SMS spam,
    tf-idf) and on the stream, dense and CSR, with sample weights, the
    models, their statistics and loss curves are those of gathering every
    union, to the bit; and many pairs were read so."""
    from sklearn_adaprox import pairwise_auc
    X_text, y_text = sms_tfidf()[:2]
    X, y, sample_weight = stream
    fits, flat_reads = {}, {}
    for read_flat_pairs in (True, False):
        problems = []

        def build(**kwargs):
            problems.append(PairwiseAUCProblem(read_flat_pairs=read_flat_pairs, **kwargs))
            return problems[-1]

        monkeypatch.setattr(pairwise_auc, "PairwiseAUCProblem", build)
        fits[read_flat_pairs] = [
            PairwiseAUCClassifier(max_iter=6, tol=None, random_state=0, **params).fit(
                data, labels, sample_weight=weights)
            for data, labels, weights in ((X_text, y_text, None), (X, y, sample_weight),
                                          (sp.csr_matrix(X), y, sample_weight))]
        flat_reads[read_flat_pairs] = sum(problem.n_flat_reads for problem in problems)
    assert flat_reads[False] == 0
    assert flat_reads[True] > 1000
    for read, gathered in zip(fits[True], fits[False]):
        for name in ("coef_", "intercept_", "momentum_", "sum_sq_gradient_",
                     "total_sq_gradient_", "score_stats_"):
            assert_array_equal(getattr(read, name), getattr(gathered, name))
        assert read.loss_curve_ == gathered.loss_curve_
        assert read.progressive_auc_ == gathered.progressive_auc_


@pytest.mark.parametrize("density, over_half", [(0.002, False), (0.2, True)])
def test_a_fresh_fit_lists_the_columns_of_X_once(density, over_half, monkeypatch):
    """The state's start lists X's columns (for the finite checks and
    finalize) and the fit on X's columns alone reads that list: one listing
    a fit, whether the columns are few (a compact state) or more than half
    of the width (none: listing them again found as many)."""
    from sklearn_adaprox import _base, pairwise_auc
    rng = np.random.RandomState(0)
    X = sp.random(80, 400, density=density, format="csr", random_state=rng)
    y = rng.randint(0, 2, 80)
    assert (2 * np.unique(X.indices).shape[0] > 400) == over_half
    original, calls = _base.touched_columns, []

    def counted(indices, n_features):
        calls.append(n_features)
        return original(indices, n_features)

    monkeypatch.setattr(_base, "touched_columns", counted)
    monkeypatch.setattr(pairwise_auc, "touched_columns", counted)
    PairwiseAUCClassifier(max_iter=2, tol=None, random_state=0).fit(X, y)
    assert calls == [400]


def test_listed_and_read_momentum_columns_give_the_same_model(stream):
    """A pass lists the columns of non-zero momentum for the next call on
    its state (kept outside the estimator); a state without that list (a
    pickle) reads momentum_ instead.  The list is exactly that support, and
    both ways continue to the same model, to the bit."""
    from sklearn_adaprox import pairwise_auc
    X, y, _ = stream
    rows = sp.csr_matrix(X)
    listed = PairwiseAUCClassifier(eta=0.3, shuffle=False, tol=None, max_iter=3)
    for i in range(50):
        listed.partial_fit(rows[i:i + 1], y[i:i + 1], classes=[-1, 1])
        version, support = pairwise_auc._MOMENTUM_SUPPORT[listed]
        assert version == listed._state_version
        assert_array_equal(support, np.flatnonzero(listed.momentum_[0]))
    read = pickle.loads(pickle.dumps(listed))
    assert read not in pairwise_auc._MOMENTUM_SUPPORT
    for model in (listed, read):
        model.set_params(warm_start=True).fit(rows[50:60], y[50:60])
        model.partial_fit(rows[60:61], y[60:61])
    for name in ("iterate_", "momentum_", "sum_sq_gradient_", "coef_", "intercept_"):
        assert_array_equal(getattr(listed, name), getattr(read, name))
    assert listed.t_ == read.t_ == 50 + 3 * 10 + 1


def test_sorted_union_is_the_sorted_distinct_union():
    """The columns a call can move are the listed momentum columns and the
    call's rows' columns, merged without a sort: the same array as sorting
    their concatenation, whatever their sizes and overlap."""
    from sklearn_adaprox._dataset import sorted_distinct, sorted_union
    rng = np.random.RandomState(0)
    for n_a, n_b, high in [(0, 0, 5), (0, 4, 10), (4, 0, 10), (50, 7, 60), (7, 50, 60),
                           (30, 30, 1000), (200, 3, 100_000)]:
        a = sorted_distinct(rng.randint(0, high, n_a))
        b = sorted_distinct(rng.randint(0, high, n_b))
        merged = sorted_union(a, b)
        assert merged.dtype == np.int64
        assert_array_equal(merged, sorted_distinct(np.concatenate([a, b])))


def test_the_kernel_refuses_moving_columns_out_of_order(stream, monkeypatch):
    """The kernel lists the columns of non-zero momentum in the order of the
    columns it is told can move (no sort), so it refuses that list unless
    strictly increasing; the call then changes nothing.  (The general path's
    list: a call with sample weights.  A short call merges its own.)"""
    X, y, _ = stream
    rows = sp.csr_matrix(X)
    clf = PairwiseAUCClassifier(eta=0.3, shuffle=False, tol=None)
    for i in range(10):
        clf.partial_fit(rows[i:i + 1], y[i:i + 1], classes=[-1, 1])
    original = PairwiseAUCClassifier._changeable_columns
    monkeypatch.setattr(PairwiseAUCClassifier, "_changeable_columns",
                        lambda self, columns: original(self, columns)[::-1].copy())
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="do not fit one another"):
        clf.partial_fit(rows[10:11], y[10:11], sample_weight=np.ones(1))
    assert pickle.dumps(clf) == before


@pytest.mark.parametrize("average, radius", [(False, None), (True, 0.5), (False, 0.5)])
@pytest.mark.parametrize("theta", [0.0, 0.9])
def test_epochs_sharing_one_workspace_equal_separate_calls(stream, average, radius, theta):
    """The passes of one fit reuse one per-feature workspace, which each
    pass must hand back clean: three epochs of fit take the steps of three
    partial_fit calls over the same rows (each with a fresh workspace), to
    the bit."""
    X, y, sample_weight = stream
    params = dict(loss="hinge", eta=0.3, theta=theta, radius=radius, average=average,
                  shuffle=False)
    for X_in in (X, sp.csr_matrix(X)):
        fitted = PairwiseAUCClassifier(max_iter=3, tol=None, **params)
        fitted.fit(X_in, y, sample_weight=sample_weight)
        streamed = PairwiseAUCClassifier(**params)
        for _ in range(3):
            streamed.partial_fit(X_in, y, classes=[-1, 1], sample_weight=sample_weight)
        for name in ("iterate_", "momentum_", "coef_sum_", "sum_sq_gradient_",
                     "total_sq_gradient_", "score_stats_", "last_sample_values_"):
            assert_array_equal(getattr(fitted, name), getattr(streamed, name))
        assert fitted.t_ == streamed.t_ == 3 * np.count_nonzero(sample_weight)

def test_multiclass_is_a_clear_error_and_changes_nothing():
    X, y = load_digits(n_class=3, return_X_y=True)
    clf = PairwiseAUCClassifier()
    with pytest.raises(ValueError, match="Only binary classification"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")
    with pytest.raises(ValueError, match="Only binary classification"):
        clf.partial_fit(X, y, classes=[0, 1, 2])
    assert not hasattr(clf, "coef_")
    clf.partial_fit(X[y < 2], y[y < 2], classes=[0, 1])
    coef = clf.coef_.copy()
    with pytest.raises(ValueError, match="not in classes"):
        clf.partial_fit(X, y)
    assert_array_equal(clf.coef_, coef)
    assert not PairwiseAUCClassifier().__sklearn_tags__().classifier_tags.multi_class


@pytest.mark.parametrize("name, average, theta",
                         [("iterate_", False, 0.9), ("iterate_", False, 0.0),
                          ("coef_sum_", True, 0.9)])
def test_the_pass_finds_a_non_finite_state_it_changed(stream, name, average, theta):
    """The pass checks the coordinates it changed (the per-epoch check
    does not read these arrays): a non-finite weight that a pass carries
    along raises, naming the array, and the call changes nothing."""
    X, y, _ = stream
    model = PairwiseAUCClassifier(eta=0.5, average=average, theta=theta, max_iter=2,
                                  tol=None, random_state=0).fit(X, y)
    getattr(model, name)[0, np.flatnonzero(X[5])[0]] = np.inf
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=f"overflow in this partial_fit call: {name}"):
        model.partial_fit(X, y)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("theta, name", [(0.9, "iterate_"), (0.0, "score_stats_")])
def test_a_step_that_overflows_is_refused(theta, name):
    """A step size near the largest double overflows the weights (with
    momentum) or the scores they give (without) in the first epoch:
    refused, and the model stays unfitted."""
    X, y = make_classification(n_samples=60, n_features=5, random_state=0)
    model = PairwiseAUCClassifier(eta=1e308, theta=theta, fit_intercept=False,
                                  random_state=0)
    with pytest.raises(ValueError, match=f"overflow in epoch 1: {name}"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")


def test_threshold_makes_predict_sensible_on_a9a():
    X_train, y_train, X_test, y_test = load_a9a()
    clf = PairwiseAUCClassifier(max_iter=1, random_state=0).fit(X_train, y_train)
    scores = clf.decision_function(X_test)
    assert_array_equal(clf.predict(X_test), clf.classes_[(scores > 0).astype(int)])
    majority = max(np.mean(y_test == 1), np.mean(y_test == -1))
    logreg = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    # a sensible threshold: better than the majority vote, near logistic
    # regression's accuracy
    assert clf.score(X_test, y_test) > majority + 0.05
    assert clf.score(X_test, y_test) > logreg.score(X_test, y_test) - 0.03
    # the ranking itself is as good as logistic regression's
    assert roc_auc_score(y_test, scores) > roc_auc_score(
        y_test, logreg.decision_function(X_test)) - 0.01
    # and the prequential AUC estimate is close to the test AUC
    assert abs(clf.progressive_auc_ - roc_auc_score(y_test, scores)) < 0.03
    no_threshold = clone(clf).set_params(fit_intercept=False).fit(X_train, y_train)
    assert no_threshold.intercept_[0] == 0.0
    assert_array_equal(no_threshold.coef_, clf.coef_)


def _lda_threshold(score_stats):
    """The equal-variance Gaussian threshold of the Notes, from the score
    statistics [[weight, sum s, sum s^2] of the negatives, of the positives]."""
    (w_neg, s_neg, q_neg), (w_pos, s_pos, q_pos) = score_stats
    if w_neg <= 0 or w_pos <= 0:
        return 0.0
    mu_neg, mu_pos = s_neg / w_neg, s_pos / w_pos
    var = ((q_neg - w_neg * mu_neg**2) + (q_pos - w_pos * mu_pos**2)) / (w_neg + w_pos)
    var = max(var, 0.0)
    if mu_pos > mu_neg:
        return 0.5 * (mu_neg + mu_pos) + var * np.log(w_neg / w_pos) / (mu_pos - mu_neg)
    # no order of the classes: lean to the heavier one by three deviations
    return 0.5 * (mu_neg + mu_pos) + np.sign(w_neg - w_pos) * 3.0 * np.sqrt(var)


@pytest.mark.parametrize("short", [False, True])
def test_the_intercept_is_minus_the_lda_threshold_of_the_score_statistics(stream, short):
    """After fit and after every partial_fit call (short or general path),
    intercept_ is minus the threshold of the Notes at score_stats_; and
    the formula's cases: a class without weight (0), scores that do not
    order the classes (the heavier class's side)."""
    from sklearn_adaprox._pairwise_auc_fast import score_threshold
    X, y, _ = stream
    clf = PairwiseAUCClassifier(max_iter=3, tol=None, random_state=0).fit(X, y)
    assert clf.intercept_[0] != 0.0
    assert_allclose(clf.intercept_[0], -_lda_threshold(clf.score_stats_), rtol=1e-12)
    for i in range(20):
        clf.partial_fit(X[i:i + 1], y[i:i + 1],
                        sample_weight=None if short else np.ones(1))
        assert_allclose(clf.intercept_[0], -_lda_threshold(clf.score_stats_), rtol=1e-12)
    for stats in ([[0.0, 0.0, 0.0], [2.0, 1.0, 3.0]],   # no negative weight
                  [[3.0, 6.0, 14.0], [1.0, 1.0, 2.0]],  # mean 2 > mean 1
                  [[1.0, 2.0, 5.0], [3.0, 3.0, 4.0]],
                  [[2.0, 1.0, 1.0], [2.0, 3.0, 5.0]]):  # equal weights: the midpoint
        stats = np.array(stats)
        assert_allclose(score_threshold(stats), _lda_threshold(stats), rtol=1e-14)
    assert score_threshold(np.array([[2.0, 1.0, 1.0], [2.0, 3.0, 5.0]])) == 1.0


def test_class_weight_moves_the_threshold_not_the_ranking():
    X_train, y_train, X_test, _ = load_a9a()
    base = PairwiseAUCClassifier(max_iter=1, random_state=0)
    plain = clone(base).fit(X_train[:5000], y_train[:5000])
    balanced = clone(base).set_params(class_weight="balanced").fit(
        X_train[:5000], y_train[:5000])
    # every pair is weighted by w_+ w_-: the same constant, so with the
    # scale-free AOGD step the ranking direction is the same
    assert_allclose(balanced.coef_, plain.coef_, rtol=1e-9, atol=1e-12)
    # while equal priors predict the minority class (+1) more often
    assert np.mean(balanced.predict(X_test) == 1) > np.mean(plain.predict(X_test) == 1)


def test_beats_sgd_log_loss_on_an_imbalanced_sparse_stream():
    """1:100 Zipf stream, one pass each on the same stream."""
    X, y = make_sparse_zipf(30_000, 3_000, 30, positive_fraction=0.01, random_state=0)
    X_train, y_train, X_test, y_test = X[:20_000], y[:20_000], X[20_000:], y[20_000:]
    sgd = SGDClassifier(loss="log_loss", max_iter=1, tol=None, random_state=0)
    sgd_auc = roc_auc_score(y_test, sgd.fit(X_train, y_train).decision_function(X_test))
    aogd = PairwiseAUCClassifier(adaptive="coordinate", max_iter=1, random_state=0)
    aogd_auc = roc_auc_score(y_test, aogd.fit(X_train, y_train).decision_function(X_test))
    assert aogd_auc >= sgd_auc - 0.01, (aogd_auc, sgd_auc)


def _binary_digits():
    X, y = load_digits(return_X_y=True)
    return MinMaxScaler().fit_transform(X), (y < 5).astype(int)  # first half positive


def test_small_paper_protocol_on_bundled_data():
    """The paper's protocol in miniature: 80/20 splits, a small 5-fold CV
    grid, theta = 0.9; test AUC close to logistic regression's."""
    X, y = _binary_digits()
    aucs, lr_aucs = [], []
    for seed in range(2):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=seed)
        search = GridSearchCV(
            PairwiseAUCClassifier(theta=0.9, max_iter=1, random_state=seed),
            {"eta": [0.1, 1.0, 10.0], "radius": [1.0, 10.0, 100.0]},
            scoring="roc_auc", cv=5,
        ).fit(X_tr, y_tr)
        aucs.append(roc_auc_score(y_te, search.decision_function(X_te)))
        lr = LogisticRegression(max_iter=2000).fit(X_tr, y_tr)
        lr_aucs.append(roc_auc_score(y_te, lr.decision_function(X_te)))
    assert np.mean(aucs) > 0.93
    assert np.mean(aucs) > np.mean(lr_aucs) - 0.04


def test_adaptive_steps_are_scale_free():
    """AOGD's step eta m / sqrt(v) does not change when every pair weight is
    multiplied by a constant (sample weights scaled by c give pair weights
    scaled by c^2)."""
    X, y, _, _ = load_a9a()
    base = PairwiseAUCClassifier(max_iter=2, tol=None, random_state=0, radius=3.0)
    one = clone(base).fit(X[:3000], y[:3000])
    scaled = clone(base).fit(X[:3000], y[:3000], sample_weight=np.full(3000, 7.0))
    assert_allclose(scaled.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    assert_allclose(scaled.total_sq_gradient_, 49.0**2 * one.total_sq_gradient_, rtol=1e-9)


def test_ogd_and_aogd_differ_and_both_rank_well():
    X_train, y_train, X_test, y_test = load_a9a()
    aucs = {}
    for algorithm in ALGORITHMS:
        clf = PairwiseAUCClassifier(algorithm=algorithm, radius=10.0, max_iter=1,
                                    random_state=0).fit(X_train, y_train)
        aucs[algorithm] = roc_auc_score(y_test, clf.decision_function(X_test))
    assert min(aucs.values()) > 0.85, aucs
    assert len(set(aucs.values())) == 3


@pytest.mark.parametrize("average", [False, True])
def test_deprecated_logistic_spelling_fits_the_log_loss_model(stream, average):
    """loss="logistic" (deprecated in 0.1) still fits, with a FutureWarning
    on fit and on partial_fit, exactly the model of loss="log_loss"."""
    X, y, sample_weight = stream
    params = dict(algorithm="aogd", adaptive="coordinate", eta=0.3, theta=0.9,
                  radius=0.5, average=average, max_iter=2, tol=None, random_state=0)
    new = PairwiseAUCClassifier(loss="log_loss", **params)
    old = PairwiseAUCClassifier(loss="logistic", **params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new.fit(X, y, sample_weight=sample_weight)
        new.partial_fit(X[:50], y[:50])
    with pytest.warns(FutureWarning, match="'logistic' was deprecated in version 0.1"):
        old.fit(X, y, sample_weight=sample_weight)
    with pytest.warns(FutureWarning, match="removed in version 0.3. Use `loss='log_loss'`"):
        old.partial_fit(X[:50], y[:50])
    for name in ("coef_", "iterate_", "coef_sum_", "momentum_", "sum_sq_gradient_",
                 "total_sq_gradient_", "score_stats_", "intercept_"):
        assert_array_equal(getattr(old, name), getattr(new, name))
    assert old.loss_curve_ == new.loss_curve_
    assert old.t_ == new.t_


def test_n_jobs_is_deprecated():
    """n_jobs has nothing to parallelise on one binary problem: setting it
    warns (deprecated in 0.1, removed in 0.3) and changes nothing."""
    X, y = make_classification(n_samples=80, n_features=5, random_state=0)
    default = PairwiseAUCClassifier(random_state=0, max_iter=2, tol=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        default.fit(X, y)
    with pytest.warns(FutureWarning, match="n_jobs was deprecated"):
        given = PairwiseAUCClassifier(random_state=0, max_iter=2, tol=None, n_jobs=2).fit(X, y)
    assert_array_equal(given.coef_, default.coef_)


def test_a_workspace_in_use_is_refused_and_nothing_changes(stream, monkeypatch):
    """Two passes must never share the per-feature scratch (two threads
    fitting one estimator at once): a workspace marked in use is refused
    before any state is written, and a pass hands its own back free."""
    from sklearn_adaprox import pairwise_auc
    X, y, sample_weight = stream
    clf = PairwiseAUCClassifier(max_iter=1, tol=None, shuffle=False).fit(X, y)
    busy = pairwise_auc.PairwiseWorkspace(X.shape[1])
    monkeypatch.setattr(pairwise_auc, "_take_workspace", lambda n_features: busy)
    busy.in_use = True
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="in use by another pass"):
        clf.partial_fit(X, y)
    assert pickle.dumps(clf) == before
    busy.in_use = False
    clf.partial_fit(X, y)
    assert not busy.in_use and clf.t_ == 2 * X.shape[0]


@pytest.mark.parametrize("short", [True, False])
def test_calls_hand_the_workspace_on_clean(stream, short):
    """The workspace a call leaves for the next call is clean: two
    estimators whose one-row calls alternate learn the models they learn
    alone, to the bit.  On the general path (sample weights) each call
    takes the workspace the other just used (the spare of their width); a
    short call's kept problem reuses its own."""
    from sklearn_adaprox import pairwise_auc
    X, y, _ = stream
    rows = sp.csr_matrix(X)
    weight = None if short else np.ones(1)
    params = dict(theta=0.9, eta=0.3, max_iter=1, tol=None, shuffle=False)
    first, second = PairwiseAUCClassifier(**params), PairwiseAUCClassifier(**params)
    for i in range(40):
        first.partial_fit(rows[i:i + 1], y[i:i + 1], classes=[-1, 1], sample_weight=weight)
        second.partial_fit(rows[i + 100:i + 101], y[i + 100:i + 101], classes=[-1, 1],
                           sample_weight=weight)
    if not short:
        assert list(pairwise_auc._SPARE_WORKSPACE) == [X.shape[1]]
    alone = PairwiseAUCClassifier(**params)
    for i in range(40):
        pairwise_auc._SPARE_WORKSPACE.clear()
        alone.partial_fit(rows[i + 100:i + 101], y[i + 100:i + 101], classes=[-1, 1],
                          sample_weight=weight)
    for name in ("iterate_", "momentum_", "sum_sq_gradient_", "coef_"):
        assert_array_equal(getattr(alone, name), getattr(second, name))
    assert first.t_ == second.t_ == 40


def test_fit_stops_when_the_mean_loss_of_a_window_stops_improving():
    """The pair loss of one epoch is a mean over its few opposite-label
    pairs, too noisy to compare epoch by epoch: fit compares the mean over
    the last n_iter_no_change epochs, and stops at the first window whose
    mean is not below the best so far minus tol."""
    X_train, y_train, _, _ = load_a9a()
    n, tol = 3, 1e-4
    clf = PairwiseAUCClassifier(n_iter_no_change=n, tol=tol, random_state=0)
    clf.fit(X_train[:8000], y_train[:8000])
    curve = clf.loss_curve_
    assert n < clf.n_iter_ == len(curve) < clf.max_iter
    # the windows ending at epochs n, n + 1, ... (summed as fit sums them)
    means = np.array([sum(curve[i - n:i]) / n for i in range(n, len(curve) + 1)])
    best = np.minimum.accumulate(means)
    assert np.all(means[1:-1] <= best[:-2] - tol)  # every window before the last improved
    assert not means[-1] <= best[-2] - tol


@pytest.mark.parametrize("params", [
    {}, {"loss": "log_loss"}, {"radius": 0.5}, {"average": True, "theta": 0.9},
    {"adaptive": "coordinate", "theta": 0.9}, {"algorithm": "ogd"}, {"theta": 0.5},
    {"theta": 0.9}])
def test_a_fresh_state_on_a_few_columns_learns_them_alone_with_the_same_bits(params,
                                                                             monkeypatch):
    """fit and a first partial_fit on sparse rows that use a small part of
    the width run their passes on those columns alone (a compact state):
    the model of the passes on the whole width, bit for bit, and the calls
    that continue it (through either path) stay equal."""
    X, y = make_sparse_zipf(n_samples=600, n_features=2**14, nnz_per_row=12, random_state=0)
    assert 0 < 2 * np.unique(X.indices).shape[0] <= X.shape[1]
    names = ["coef_", "iterate_", "coef_sum_", "momentum_", "sum_sq_gradient_", "intercept_",
             "score_stats_", "last_sample_indices_", "last_sample_values_", "loss_curve_"]
    models = {}
    for compact in (True, False):
        if not compact:
            monkeypatch.setattr(PairwiseAUCClassifier, "_compact_columns",
                                lambda self, X, first_call: None)
        fitted = PairwiseAUCClassifier(random_state=0, max_iter=6, tol=None, **params).fit(X, y)
        streamed = PairwiseAUCClassifier(**params).partial_fit(X[:400], y[:400],
                                                               classes=np.unique(y))
        for i in range(400, 420):
            streamed.partial_fit(X[i:i + 1], y[i:i + 1])
        streamed.partial_fit(X[420:], y[420:])
        models[compact] = (fitted, streamed)
    for compact_model, whole_model in zip(models[True], models[False]):
        for name in names:
            assert_array_equal(getattr(compact_model, name), getattr(whole_model, name),
                               err_msg=name)
        assert compact_model.coef_.shape == (1, X.shape[1])
    assert np.count_nonzero(models[True][0].coef_) > 0
    if params.get("algorithm") != "ogd" and params.get("theta", 0.0) > 0:  # momentum
        assert np.count_nonzero(models[True][0].momentum_) > 0


@pytest.mark.parametrize("params", [{}, {"theta": 0.9}, {"average": True},
                                    {"adaptive": "coordinate"}],
                         ids=["defaults", "momentum", "average", "coordinate"])
def test_asking_for_the_next_rows_entries_changes_nothing(params):
    """On a wide state (2**17 columns: 1 MiB a per-feature array, the
    threshold of _dataset.state_is_wide) a pass asks for the next row's
    entries while it computes a row: a hint, so the model is bit for bit
    that of a pass that does not."""
    from sklearn_adaprox._dataset import set_prefetch

    X, y = make_sparse_zipf(400, 2**17, 30, random_state=2)
    clf = PairwiseAUCClassifier(max_iter=2, tol=None, random_state=0, **params)
    previous = set_prefetch(False)
    try:
        plain = clone(clf).fit(X, y)
        set_prefetch(True)
        hinted = clone(clf).fit(X, y)
    finally:
        set_prefetch(previous)
    assert np.count_nonzero(plain.coef_) > 100
    for name in ("coef_", "iterate_", "momentum_", "sum_sq_gradient_", "intercept_"):
        assert_array_equal(getattr(hinted, name), getattr(plain, name), err_msg=name)
    assert hinted.loss_curve_ == plain.loss_curve_
