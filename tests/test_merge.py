"""sklearn_adaprox.merge: shard models merged into one.

The merge is checked against the NumPy transcription of "K shard passes from
the same state, then merge" (tests/reference/merge.py) over two rounds (from
scratch, then from the merged state), for every estimator and update option
it covers; plus its invariants (one model is itself; the inputs are never
modified; the merged model predicts, continues and pickles) and its errors.
"""
import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

from reference import merge as ref
from sklearn_adaprox import (
    AdaGradClassifier,
    ImplicitFTRLClassifier,
    ImplicitFTRLRegressor,
    PairwiseAUCClassifier,
    RDAPlusClassifier,
    merge,
)
from sklearn_adaprox._dataset import touched_columns

K = 3


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(150, 8) * (rng.rand(150, 8) < 0.6)
    coef = rng.randn(8)
    y = np.where(X @ coef + 0.3 * rng.randn(150) > 0, 1.0, -1.0)
    sw = rng.uniform(0.5, 1.5, 150)
    sw[::17] = 0.0
    return X, y, sw


def _blocks(n, k):
    return np.array_split(np.arange(n), k)


def _shard_round(est, base, X, y, sw, k, sparse=False):
    """Models continued from ``base`` (None: fresh) on k row blocks."""
    models = []
    for rows in _blocks(X.shape[0], k):
        m = clone(est) if base is None else copy.deepcopy(base)
        Xk = sp.csr_matrix(X[rows]) if sparse else X[rows]
        if isinstance(est, ImplicitFTRLRegressor):
            m.partial_fit(Xk, y[rows], sample_weight=sw[rows])
        else:
            m.partial_fit(Xk, y[rows], classes=[-1.0, 1.0], sample_weight=sw[rows])
        models.append(m)
    return models


# ----------------------------------------------------------------------
# AdaGrad
ADAGRAD_CASES = [
    dict(update="dual_averaging", penalty="l2", alpha=1e-2),
    dict(update="dual_averaging", penalty="elasticnet", alpha=2e-2, l1_ratio=0.5),
    dict(update="dual_averaging", penalty="l1", alpha=1e-2, matrix="identity"),
    dict(update="mirror_descent", penalty="l2", alpha=1e-2),
    dict(update="mirror_descent", penalty="l1", alpha=1e-2, delta=0.1),
    dict(update="ftrl_proximal", penalty="elasticnet", alpha=1e-2, l1_ratio=0.5, delta=1.0),
    dict(update="ftrl_proximal", penalty=None),
]


@pytest.mark.parametrize("params", ADAGRAD_CASES)
@pytest.mark.parametrize("sparse, combine", [(False, "sum"), (True, "sum"),
                                             (True, "average")])
def test_adagrad_merge_matches_transcription(data, params, sparse, combine):
    X, y, sw = data
    est = AdaGradClassifier(loss="log_loss", eta=0.5, shuffle=False, tol=None, **params)
    l1, l2 = est._penalty_strengths()
    hyper = dict(update=est.update, eta=est.eta, delta=est.delta, l1=l1, l2=l2,
                 adaptive=est.matrix != "identity")
    base, state = None, ref.adagrad_state(X.shape[1])
    for _ in range(2):
        models = _shard_round(est, base, X, y, sw, K, sparse)
        shards = [ref.adagrad_pass(X[r], y[r], sw[r], state, loss="log_loss",
                                   fit_intercept=True, **hyper)
                  for r in _blocks(X.shape[0], K)]
        state = ref.adagrad_merge(state, shards, combine=combine, **hyper)
        base = merge(models, base=base, combine=combine)
        w, b = ref.adagrad_weights(state, **hyper)
        assert base.t_ == state["t"]
        assert_allclose(base.sum_gradient_[0], state["u"], rtol=0, atol=1e-10)
        assert_allclose(base.sum_sq_gradient_[0], state["ssq"], rtol=1e-12, atol=1e-10)
        assert_allclose(base.coef_[0], w, rtol=0, atol=1e-10)
        assert_allclose(base.intercept_[0], b, rtol=0, atol=1e-10)
        assert_allclose(base.intercept_sum_gradient_[0], state["b_u"], rtol=0, atol=1e-10)
    assert np.any(base.coef_ != 0)


# ----------------------------------------------------------------------
# implicit FTRL
@pytest.mark.parametrize("update", ["linear", "truncated", "twostep", "proximal"])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_implicit_ftrl_merge_matches_transcription(data, update, kind):
    X, y, sw = data
    if kind == "classifier":
        est = ImplicitFTRLClassifier(loss="log_loss", update=update, beta=2.0, G=3.0,
                                     shuffle=False, tol=None)
        target, loss = y, "log_loss"
    else:
        est = ImplicitFTRLRegressor(loss="squared_error", update=update, beta=2.0, G=3.0,
                                    shuffle=False, tol=None)
        target, loss = X @ np.linspace(-1, 1, X.shape[1]) + 0.1, "squared_error"
    state = ref.implicit_ftrl_state(X.shape[1], G=3.0, beta=2.0, fit_intercept=True)
    base = None
    for _ in range(2):
        models = _shard_round(est, base, X, target, sw, K)
        shards = [ref.implicit_ftrl_pass(X[r], target[r], sw[r], state, loss=loss,
                                         update=update, beta=2.0, fit_intercept=True)
                  for r in _blocks(X.shape[0], K)]
        state = ref.implicit_ftrl_merge(state, shards, beta=2.0)
        base = merge(models, base=base)
        coef = np.ravel(base.coef_)
        assert base.t_ == state["t"]
        assert_allclose(np.ravel(base.scaled_coef_), state["theta"][:-1], rtol=1e-10, atol=1e-10)
        assert_allclose(base.lambda_[0], state["lam"], rtol=1e-12)
        assert_allclose(coef, state["theta"][:-1] / state["lam"], rtol=1e-10, atol=1e-10)
        assert_allclose(base.intercept_[0], state["theta"][-1] / state["lam"],
                        rtol=1e-10, atol=1e-10)
        assert_allclose(base.sq_norm_scaled_coef_[0], state["theta"] @ state["theta"],
                        rtol=1e-12)


# ----------------------------------------------------------------------
# pairwise AUC
@pytest.mark.parametrize("algorithm, adaptive", [("aogd", "coordinate"), ("aogd", "norm"),
                                                 ("ogd", "norm")])
@pytest.mark.parametrize("average", [False, True])
def test_pairwise_auc_merge_matches_transcription(data, algorithm, adaptive, average):
    X, y, sw = data
    params = dict(loss="log_loss", algorithm=algorithm, adaptive=adaptive, eta=0.3,
                  theta=0.5, radius=2.0)
    est = PairwiseAUCClassifier(shuffle=False, tol=None, average=average, **params)
    state = ref.pairwise_auc_zero(X.shape[1])
    base = None
    for _ in range(2):
        models = _shard_round(est, base, X, y, sw, K)
        shards = [ref.pairwise_auc_pass(X[r], y[r], sw[r],
                                        None if base is None else state,
                                        average=average, **params)
                  for r in _blocks(X.shape[0], K)]
        state = ref.pairwise_auc_merge(state, shards)
        base = merge(models, base=base)
        assert base.t_ == state["t"]
        assert_allclose(base.iterate_[0], state["w"], rtol=0, atol=1e-10)
        assert_allclose(base.momentum_[0], state["m"], rtol=0, atol=1e-10)
        assert_allclose(base.sum_sq_gradient_[0], state["ssq"], rtol=1e-12, atol=1e-12)
        assert_allclose(base.total_sq_gradient_[0], state["v"], rtol=1e-12)
        assert_allclose(base.score_stats_, state["score_stats"], rtol=1e-10, atol=1e-10)
        expected = state["w_sum"] / state["n_averaged"] if average else state["w"]
        assert_allclose(base.coef_[0], expected, rtol=0, atol=1e-10)
        partner = np.zeros(X.shape[1])
        partner[base.last_sample_indices_] = base.last_sample_values_
        assert_array_equal(partner, state["prev"][0])
        assert base.last_sample_label_ == state["prev"][1]


# ----------------------------------------------------------------------
# RDA+ (dual-averaging phase)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_rda_merge_matches_transcription(data, fit_intercept):
    X, y, sw = data
    est = RDAPlusClassifier(local_phase=False, tol=None, shuffle=False, alpha=0.02,
                            gamma=0.7, fit_intercept=fit_intercept)
    state = dict(u=np.zeros(X.shape[1]), u_b=0.0, t=0)
    base = None
    for _ in range(2):
        models = _shard_round(est, base, X, y, sw, K)
        shards = [ref.rda_pass(X[r], y[r], sw[r], state, gamma=0.7, lam=0.02,
                               fit_intercept=fit_intercept)
                  for r in _blocks(X.shape[0], K)]
        state = ref.rda_merge(state, shards, gamma=0.7, lam=0.02,
                              fit_intercept=fit_intercept)
        base = merge(models, base=base)
        assert base.rda_t_[0] == state["t"]
        assert_allclose(base.sum_gradient_[0], state["u"], rtol=0, atol=1e-10)
        assert_allclose(base.coef_[0], state["w"], rtol=0, atol=1e-10)
        assert_allclose(base.intercept_[0], state["b"], rtol=0, atol=1e-10)
        assert_array_equal(base.support_, base.coef_ != 0)


# ----------------------------------------------------------------------
# invariants
ESTIMATORS = [
    AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-3),
    AdaGradClassifier(penalty="elasticnet", alpha=1e-3),
    AdaGradClassifier(update="ftrl_proximal", penalty="l1", alpha=1e-2),
    ImplicitFTRLClassifier(),
    ImplicitFTRLRegressor(G=2.0),
    PairwiseAUCClassifier(),
    RDAPlusClassifier(local_phase=False),
]


def _fit_shards(est, X, y, k):
    base = clone(est)
    rows = _blocks(X.shape[0], k)[0]
    # a common base (it fixes values resolved from the data, e.g. G_)
    if isinstance(est, ImplicitFTRLRegressor):
        base.partial_fit(X[rows[:10]], y[rows[:10]])
    else:
        base.partial_fit(X[rows[:10]], y[rows[:10]], classes=[-1.0, 1.0])
    return base, _shard_round(est, base, X, y, np.ones(X.shape[0]), k)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_one_model_merges_to_itself(data, est):
    X, y, _ = data
    base, (model,) = _fit_shards(est, X, y, 1)
    merged = merge([model], base=base)
    assert merged is not model
    assert pickle.dumps(merged) == pickle.dumps(model)
    assert_array_equal(merged.coef_, model.coef_)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("combine", ["sum", "average"])
def test_merged_model_is_a_working_estimator(data, est, combine):
    X, y, _ = data
    base, models = _fit_shards(est, X, y, K)
    saved = [pickle.dumps(m) for m in [base, *models]]
    merged = merge(models, base=base, combine=combine)
    assert [pickle.dumps(m) for m in [base, *models]] == saved  # inputs unchanged
    steps = [m.t_ - base.t_ for m in models]
    assert merged.t_ == base.t_ + (sum(steps) if combine == "sum" else round(np.mean(steps)))
    assert merged.predict(X).shape == (X.shape[0],)
    assert np.all(np.isfinite(np.ravel(merged.coef_)))
    again = pickle.loads(pickle.dumps(merged))
    assert_array_equal(again.predict(X), merged.predict(X))
    if isinstance(est, ImplicitFTRLRegressor):
        again.partial_fit(X, y)
    else:
        again.partial_fit(X, y)
    assert again.t_ > merged.t_


def test_merge_from_scratch_counts_every_step(data):
    X, y, _ = data
    models = _shard_round(AdaGradClassifier(), None, X, y, np.ones(len(y)), K)
    merged = merge(models)
    assert merged.t_ == X.shape[0]
    assert_allclose(merged.sum_gradient_, sum(m.sum_gradient_ for m in models))
    assert merged.score(X, y) > 0.7


# ----------------------------------------------------------------------
# errors: a clear ValueError, nothing modified
def _check_refused(models, match, base=None, **kwargs):
    saved = [pickle.dumps(m) for m in models]
    with pytest.raises(ValueError, match=match):
        merge(models, base=base, **kwargs)
    assert [pickle.dumps(m) for m in models] == saved


def test_incompatible_models_are_refused(data):
    X, y, _ = data
    a = AdaGradClassifier(alpha=1e-3).partial_fit(X, y, classes=[-1.0, 1.0])
    _check_refused([], "at least one")
    _check_refused([a, a], "combine must be", combine="mean")
    _check_refused([a, AdaGradClassifier(alpha=1e-2).partial_fit(X, y, classes=[-1.0, 1.0])],
                   "alpha=0.01")
    _check_refused([a, ImplicitFTRLClassifier().partial_fit(X, y, classes=[-1.0, 1.0])],
                   "ImplicitFTRLClassifier")
    _check_refused([a, AdaGradClassifier(alpha=1e-3)], "not fitted")
    _check_refused([a, AdaGradClassifier(alpha=1e-3).partial_fit(X[:, :5], y,
                                                                 classes=[-1.0, 1.0])],
                   "n_features_in_")
    _check_refused([a, AdaGradClassifier(alpha=1e-3).partial_fit(X, y,
                                                                 classes=[-1.0, 1.0, 2.0])],
                   "classes_")
    multi = AdaGradClassifier(multi_class="multinomial", loss="log_loss")
    m1 = clone(multi).partial_fit(X, y, classes=[-1.0, 1.0])
    _check_refused([m1, copy.deepcopy(m1)], "element-wise")
    rda = RDAPlusClassifier(max_iter=2).fit(X, y)
    _check_refused([rda, copy.deepcopy(rda)], "local_phase=False")
    _check_refused([a, a], "fewer than base", base=AdaGradClassifier(alpha=1e-3).partial_fit(
        np.vstack([X, X]), np.r_[y, y], classes=[-1.0, 1.0]))
    # values resolved from different data (implicit FTRL's G with G=None)
    f1 = ImplicitFTRLClassifier().partial_fit(X[:50], y[:50], classes=[-1.0, 1.0])
    f2 = ImplicitFTRLClassifier().partial_fit(3 * X[50:], y[50:], classes=[-1.0, 1.0])
    _check_refused([f1, f2], "resolved (beta_|G_)")
    # the pairwise AUC step eta="auto", from rows of different scales
    p1 = PairwiseAUCClassifier().partial_fit(X[:50], y[:50], classes=[-1.0, 1.0])
    p2 = PairwiseAUCClassifier().partial_fit(3 * X[50:], y[50:], classes=[-1.0, 1.0])
    _check_refused([p1, p2], "resolved eta_")
    # AdaGrad's alpha="auto", from rows of different norms (above the
    # squared norm of 10 where it starts to grow)
    g1 = AdaGradClassifier().partial_fit(10 * X[:50], y[:50], classes=[-1.0, 1.0])
    g2 = AdaGradClassifier().partial_fit(30 * X[50:], y[50:], classes=[-1.0, 1.0])
    _check_refused([g1, g2], "resolved alpha_")


def test_resolved_params_of_the_class_are_compared(data, monkeypatch):
    """The convention of data-resolved parameters: a class attribute
    ``_resolved_params`` names the fitted attributes to compare."""
    X, y, _ = data
    a = AdaGradClassifier().partial_fit(X, y, classes=[-1.0, 1.0])
    b = AdaGradClassifier().partial_fit(X, y, classes=[-1.0, 1.0])
    a.eta_, b.eta_ = 0.1, 0.2
    monkeypatch.setattr(AdaGradClassifier, "_resolved_params", ("eta_",), raising=False)
    _check_refused([a, b], "eta_")
    b.eta_ = 0.1
    assert merge([a, b]).t_ == 2 * X.shape[0]


# ----------------------------------------------------------------------
# ThreadShardedTrainer: the merge on one machine's cores (no Dask needed)
def test_threads_one_shard_is_the_in_memory_fit(data):
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    est = ImplicitFTRLClassifier()  # G resolved from the data, pinned, restored
    trainer = ThreadShardedTrainer(est, n_shards=1, max_iter=3, shuffle=False).fit(X, y)
    memory = clone(est).set_params(shuffle=False, tol=None, max_iter=3).fit(X, y)
    assert_array_equal(trainer.estimator_.scaled_coef_, memory.scaled_coef_)
    assert_array_equal(trainer.estimator_.lambda_, memory.lambda_)
    assert_array_equal(trainer.estimator_.G_, memory.G_)
    assert trainer.estimator_.G is None
    assert trainer.resolved_params_ == {"beta": memory.beta_[0], "G": memory.G_[0]}


def test_threads_pin_the_pairwise_step_resolved_from_the_first_shard(data):
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    est = PairwiseAUCClassifier()  # eta="auto": resolved, pinned, restored
    trainer = ThreadShardedTrainer(est, n_shards=1, max_iter=3, shuffle=False).fit(X, y)
    memory = clone(est).set_params(shuffle=False, tol=None, max_iter=3).fit(X, y)
    assert_array_equal(trainer.estimator_.iterate_, memory.iterate_)
    assert_array_equal(trainer.estimator_.eta_, memory.eta_)
    assert trainer.estimator_.eta == "auto"
    assert trainer.resolved_params_ == {"eta": memory.eta_[0]}
    # two shards step with the value resolved from all the rows, as fit's
    two = ThreadShardedTrainer(est, n_shards=2, max_iter=2, shuffle=False).fit(X, y)
    assert_array_equal(two.estimator_.eta_, memory.eta_)


@pytest.mark.parametrize("update", ["dual_averaging", "mirror_descent"])
@pytest.mark.parametrize("combine", ["sum", "average"])
def test_threads_match_the_transcription_and_do_not_change_the_result(data, update, combine):
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    est = AdaGradClassifier(loss="log_loss", update=update, penalty="l1", alpha=1e-2,
                            eta=0.5, delta=0.1)
    kwargs = dict(n_shards=K, max_iter=2, shuffle=False, combine=combine)
    two = ThreadShardedTrainer(est, n_jobs=2, **kwargs).fit(X, y)
    one = ThreadShardedTrainer(est, n_jobs=1, **kwargs).fit(X, y)
    assert_array_equal(two.estimator_.coef_, one.estimator_.coef_)
    hyper = dict(update=update, eta=0.5, delta=0.1, l1=1e-2, l2=0.0)
    state = ref.adagrad_state(X.shape[1])
    for _ in range(2):
        shards = [ref.adagrad_pass(X[r], y[r], np.ones(len(r)), state, loss="log_loss",
                                   fit_intercept=True, **hyper)
                  for r in _blocks(X.shape[0], K)]
        state = ref.adagrad_merge(state, shards, combine=combine, **hyper)
    w, b = ref.adagrad_weights(state, **hyper)
    assert_allclose(two.estimator_.coef_[0], w, rtol=0, atol=1e-10)
    assert_allclose(two.estimator_.intercept_[0], b, rtol=0, atol=1e-10)
    assert len(two.loss_curve_) == 2


def test_threads_shuffled_passes_are_reproducible(data):
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    make = lambda: ThreadShardedTrainer(PairwiseAUCClassifier(), n_jobs=2, n_shards=4,
                                        max_iter=2, random_state=0)
    a, b = make().fit(sp.csr_matrix(X), y), make().fit(sp.csr_matrix(X), y)
    assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    assert pickle.loads(pickle.dumps(a)).score(X, y) == a.score(X, y)


def test_threads_warm_start_continues(data):
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    est = ImplicitFTRLClassifier()
    whole = ThreadShardedTrainer(est, n_shards=3, max_iter=3, shuffle=False).fit(X, y)
    part = ThreadShardedTrainer(est, n_shards=3, max_iter=2, shuffle=False).fit(X, y)
    part.set_params(warm_start=True, max_iter=1).fit(X, y)
    assert_array_equal(part.estimator_.scaled_coef_, whole.estimator_.scaled_coef_)
    assert part.loss_curve_ == whole.loss_curve_
    assert part.estimator_.G is None


@pytest.mark.parametrize("bad", ["nan", "label"])
def test_threads_bad_rows_in_one_shard_raise_and_change_nothing(data, bad):
    """The shards' calls save nothing for a rollback (``disposable``): the
    trainer's state must still be untouched when one shard fails."""
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    X, y, _ = data
    trainer = ThreadShardedTrainer(AdaGradClassifier(update="mirror_descent"), n_jobs=2,
                                   n_shards=3, max_iter=2, shuffle=False, warm_start=True)
    trainer.fit(X, y).fit(X, y)
    before = pickle.dumps(trainer)
    X_bad, y_bad = X.copy(), y.copy()
    if bad == "nan":
        X_bad[-3, 2] = np.nan
    else:
        y_bad[-3] = 7.0  # a label the model does not know
    with pytest.raises(ValueError):
        trainer.fit(X_bad, y_bad)
    assert pickle.dumps(trainer) == before
    # and it goes on as if the failed call had never been made (the shards
    # it left part-way are not used again)
    trainer.fit(X, y)
    undisturbed = clone(trainer).fit(X, y).fit(X, y).fit(X, y)
    assert_array_equal(trainer.estimator_.coef_, undisturbed.estimator_.coef_)
    assert trainer.loss_curve_ == undisturbed.loss_curve_


def test_disposable_calls_skip_the_rollback_in_their_thread_only(data):
    """Outside ``disposable()`` a failed call still restores the model; inside,
    the flag is per thread and reset on leaving (nested blocks too)."""
    import threading

    from sklearn_adaprox._base import _DISPOSABLE, disposable

    X, y, _ = data
    model = AdaGradClassifier().partial_fit(X, y, classes=[-1.0, 1.0])
    seen = []
    with disposable():
        with disposable():
            pass
        assert _DISPOSABLE.on
        worker = threading.Thread(target=lambda: seen.append(getattr(_DISPOSABLE, "on", False)))
        worker.start()
        worker.join()
    assert seen == [False] and not _DISPOSABLE.on
    before = pickle.dumps(model)
    X_bad = X.copy()
    X_bad[-1, 0] = np.inf
    with pytest.raises(ValueError):
        model.partial_fit(X_bad, y)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("combine", ["sum", "average"])
@pytest.mark.parametrize("update", ["dual_averaging", "ftrl_proximal", "mirror_descent"])
def test_threads_merge_only_the_touched_columns_bit_for_bit(update, combine, monkeypatch):
    """Wide sparse rows touch a few columns per pass: the threads then
    merge and copy back only those (a column-local state), and the model is
    bit for bit the one of whole-array merges."""
    import sklearn_adaprox.distributed as distributed
    from sklearn_adaprox.distributed import ThreadShardedTrainer

    rng = np.random.RandomState(4)
    X = sp.random(300, 5000, density=5e-4, format="csr", random_state=rng)
    y = np.where(X @ rng.randn(5000) + 0.1 * rng.randn(300) > 0, 1.0, -1.0)
    est = AdaGradClassifier(update=update, penalty="elasticnet", alpha=1e-3, l1_ratio=0.5)
    trainer = ThreadShardedTrainer(est, n_jobs=2, n_shards=3, max_iter=3, combine=combine,
                                   shuffle=True, random_state=0)
    merged_columns = []
    merge_in_place = distributed._merged_in_place

    def spy(state, models, combine, columns=None, threads=None, rule=None):
        merged_columns.append(columns)
        return merge_in_place(state, models, combine, columns, threads, rule)

    monkeypatch.setattr(distributed, "_merged_in_place", spy)
    sparse = clone(trainer).fit(X, y)
    assert all(c is not None and 0 < c.size < X.shape[1] / 4 for c in merged_columns)
    monkeypatch.setattr(distributed, "SPARSE_ROUND", 0)  # whole arrays always
    whole = clone(trainer).fit(X, y)
    for name in ("accumulators_", "intercept_", "intercept_sum_gradient_", "coef_"):
        assert_array_equal(getattr(sparse.estimator_, name), getattr(whole.estimator_, name))
    assert sparse.loss_curve_ == whole.loss_curve_
    assert np.any(sparse.estimator_.coef_ != 0)
    # warm-started fits keep their shards from one fit to the next (not in
    # the pickle), unless estimator_ changed in between
    monkeypatch.setattr(distributed, "SPARSE_ROUND", 4)
    trainer.set_params(shuffle=False)
    one = clone(trainer).fit(X, y)
    stepwise = clone(trainer).set_params(max_iter=1, warm_start=True)
    for _ in range(3):
        stepwise.fit(X, y)
    assert "_kept_shards" in stepwise.__dict__
    assert "_kept_shards" not in pickle.loads(pickle.dumps(stepwise)).__dict__
    assert "_kept_shards" in stepwise.__dict__  # pickling dropped them from the copy only
    assert_array_equal(stepwise.estimator_.accumulators_, one.estimator_.accumulators_)
    # a step on columns no row of X has: the kept shards are stale there,
    # which matters once rows with those columns come
    unused = np.flatnonzero(np.diff(X.tocsc().indptr) == 0)[:3]
    extra = sp.csr_matrix((np.ones(3), unused, [0, 3]), shape=(1, X.shape[1]))
    stepwise.estimator_.partial_fit(extra, y[:1])
    expected = copy.deepcopy(stepwise.estimator_)
    X2, y2 = sp.vstack([X, extra, extra]).tocsr(), np.r_[y, y[:2]]
    stepwise.fit(X2, y2)
    again = clone(trainer).set_params(max_iter=1, warm_start=True)
    again.estimator_, again.resolved_params_ = expected, {}
    again.loss_curve_, again.classes_ = [], expected.classes_
    again.fit(X2, y2)
    assert_array_equal(stepwise.estimator_.accumulators_, again.estimator_.accumulators_)


@pytest.mark.parametrize("combine", ["sum", "average"])
def test_a_wide_merge_shared_by_threads_is_the_serial_merge(combine):
    """Parts of at least PARALLEL_MIN_SIZE entries are merged by the
    trainer's threads in ranges: the same entries, the same operations."""
    import sys

    from concurrent.futures import ThreadPoolExecutor

    module = sys.modules["sklearn_adaprox.merge"]
    rng = np.random.RandomState(5)
    width = module.PARALLEL_MIN_SIZE + 123
    X = sp.random(600, width, density=4e-4, format="csr", random_state=rng)
    y = np.where(rng.rand(600) > 0.5, 1.0, -1.0)
    est = AdaGradClassifier(update="mirror_descent", alpha=1e-4)
    base = clone(est).partial_fit(X[:50], y[:50], classes=[-1.0, 1.0])
    models = [copy.deepcopy(base).partial_fit(X[i::3], y[i::3]) for i in range(3)]
    serial, shared = copy.deepcopy(base), copy.deepcopy(base)
    module._merged_in_place(serial, models, combine)
    with ThreadPoolExecutor(max_workers=2) as pool:
        module._merged_in_place(shared, models, combine, threads=(pool, 2))
    for name in ("accumulators_", "md_weights_", "intercept_"):
        assert_array_equal(getattr(shared, name), getattr(serial, name))
    assert np.any(serial.accumulators_ != base.accumulators_)


@pytest.mark.parametrize("combine", ["sum", "average"])
def test_a_column_merge_in_place_leaves_the_models_at_the_merged_state(combine):
    """The threads' merge of some columns writes AdaGrad's merged sums into
    the models' own arrays as well (they go on from the merged state), and
    says that no column of theirs differs from it; elsewhere the models
    keep their own values, which are the state's."""
    import sys

    module = sys.modules["sklearn_adaprox.merge"]
    rng = np.random.RandomState(6)
    X = sp.random(400, 3000, density=1e-3, format="csr", random_state=rng)
    y = np.where(rng.rand(400) > 0.5, 1.0, -1.0)
    base = AdaGradClassifier(alpha=1e-4).partial_fit(X[:40], y[:40], classes=[-1.0, 1.0])
    models = [copy.deepcopy(base).partial_fit(X[40 + i::2], y[40 + i::2]) for i in range(2)]
    columns = np.unique(X[40:].indices).astype(np.int64)
    expected = merge(models, base=base, combine=combine)
    state = copy.deepcopy(base)
    left = module._merged_in_place(state, models, combine, columns)
    assert left is not None and left.size == 0
    assert_array_equal(state.accumulators_, expected.accumulators_)
    for m in models:
        assert_array_equal(m.accumulators_, state.accumulators_)
    assert np.any(state.accumulators_ != base.accumulators_)


def test_merge_pairs_refuses_inconsistent_arrays():
    """The compiled merge of AdaGrad's pairs checks its arrays before it
    writes anything."""
    from sklearn_adaprox._merge_fast import merge_pairs

    out = np.ones((4, 2))
    base = np.zeros(4)
    models = [np.full((4, 2), 2.0)]
    bad_calls = [
        ("at least one model", lambda: merge_pairs(out, base, base, [], False)),
        ("differ in length", lambda: merge_pairs(out, base[:3], base, models, False)),
        ("shape of out", lambda: merge_pairs(out, base, base, [np.ones((3, 2))], False)),
        ("out of range", lambda: merge_pairs(out, base, base, models, False,
                                             np.array([1, 4], dtype=np.int64))),
        ("shape of out", lambda: merge_pairs(out, base, base, models, False, None,
                                             [np.ones((4, 3))])),
        ("outside", lambda: merge_pairs(out, base, base, models, False, None, None, 3, 2)),
    ]
    for message, call in bad_calls:
        with pytest.raises(ValueError, match=message):
            call()
        assert_array_equal(out, 1.0)
    merge_pairs(out, base, base, models, False)  # u: 0 + 2; sqrt n: sqrt(0 + 2**2)
    assert_array_equal(out, 2.0)


@pytest.mark.parametrize("combine", ["sum", "average"])
def test_sparse_increments_give_the_dense_merge_bit_for_bit(combine):
    """Increments of wide sparse data travel as their non-zero entries;
    the merge is the same floating-point sums as with dense arrays."""
    import sys

    module = sys.modules["sklearn_adaprox.merge"]  # the module (the package's
    # attribute of that name is the function)
    rng = np.random.RandomState(1)
    X = sp.random(400, 20000, density=2e-4, format="csr", random_state=rng)
    y = np.where(rng.rand(400) > 0.5, 1.0, -1.0)
    est = AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-4)
    base = clone(est).partial_fit(X[:5], y[:5], classes=[-1.0, 1.0])
    models = _shard_round(est, base, X.toarray(), y, np.ones(400), 4, sparse=True)
    rule = module._rule_of(base)
    incs = [module._increment(rule, m, rule.sums(base), i, combine)
            for i, m in enumerate(models)]
    assert isinstance(incs[0]["sums"]["u"], module._SparseIncrement)
    sparse_total = module._add(module._add(incs[0], incs[1]), module._add(incs[2], incs[3]))
    merged = module._apply(rule, base, rule.sums(base), sparse_total)
    saved = module.SPARSE_MIN_SIZE
    try:
        module.SPARSE_MIN_SIZE = 10**12  # every array dense
        dense = [module._increment(rule, m, rule.sums(base), i, combine)
                 for i, m in enumerate(models)]
        dense_total = module._add(module._add(dense[0], dense[1]),
                                  module._add(dense[2], dense[3]))
    finally:
        module.SPARSE_MIN_SIZE = saved
    assert not isinstance(dense[0]["sums"]["u"], module._SparseIncrement)
    expected = module._apply(rule, base, rule.sums(base), dense_total)
    for name in ("accumulators_", "md_weights_", "intercept_", "intercept_sum_gradient_"):
        assert_array_equal(getattr(merged, name), getattr(expected, name), err_msg=name)
    assert len(pickle.dumps(incs[0])) < len(pickle.dumps(dense[0])) / 3


@pytest.mark.parametrize("est", [AdaGradClassifier(update="ftrl_proximal", penalty="l1",
                                                   alpha=1e-3),
                                 ImplicitFTRLClassifier(G=2.0)],
                         ids=lambda e: type(e).__name__)
def test_one_vs_rest_models_merge_problem_by_problem(est):
    rng = np.random.RandomState(3)
    X = rng.randn(300, 6)
    y = np.argmax(X[:, :3], axis=1)
    base = clone(est).partial_fit(X[:30], y[:30], classes=[0, 1, 2])
    models = [copy.deepcopy(base).partial_fit(X[i::3], y[i::3]) for i in range(3)]
    merged = merge(models, base=base)
    name = "sum_gradient_" if isinstance(est, AdaGradClassifier) else "scaled_coef_"
    expected = getattr(base, name) + sum(getattr(m, name) - getattr(base, name)
                                         for m in models)
    assert_allclose(getattr(merged, name), expected, rtol=1e-12, atol=1e-12)
    assert merged.coef_.shape == (3, 6)
    assert merged.score(X, y) > 0.6


@pytest.mark.parametrize("combine", ["sum", "average"])
@pytest.mark.parametrize("est", [
    AdaGradClassifier(penalty="l2", alpha=1e-2),
    AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-2),
    ImplicitFTRLClassifier(G=2.0, beta=2.0),
    ImplicitFTRLRegressor(update="truncated", beta=1.0),
    PairwiseAUCClassifier(average=True),
    RDAPlusClassifier(local_phase=False, alpha=1e-2),
], ids=lambda e: type(e).__name__ + "-" + str(e.get_params().get("update", "")))
def test_in_memory_merge_is_the_increments_route_bit_for_bit(data, est, combine):
    """``merge`` (the compiled pass over the models in memory), the same
    merge written into the base itself (the threads' rounds) and the
    increments the Dask driver adds up give the same state, bit for bit,
    counters and averaged parts included."""
    import sys

    module = sys.modules["sklearn_adaprox.merge"]
    X, y, sw = data
    base = _shard_round(est, None, X, y, sw, 1)[0]
    models = _shard_round(est, base, X, y, sw, K)
    merged = merge(models, base=base, combine=combine)
    rule = module._rule_of(base)
    total = None
    for i, m in enumerate(models):
        inc = module._increment(rule, m, rule.sums(base), i, combine)
        total = inc if total is None else module._add(total, inc)
    expected = module._apply(rule, base, rule.sums(base), total)
    # and merged into a copy of the base in place, as the threads do
    in_place = copy.deepcopy(base)
    module._merged_in_place(in_place, models, combine)
    names = [k for k, v in expected.__dict__.items()
             if k.endswith("_") and not k.startswith("_") and k != "loss_curve_"
             and isinstance(v, (np.ndarray, float, int, np.number))]
    assert "t_" in names
    for name in names:
        for model in (merged, in_place):
            assert_array_equal(getattr(model, name), getattr(expected, name), err_msg=name)
            assert np.asarray(getattr(model, name)).dtype == np.asarray(
                getattr(expected, name)).dtype, name


@pytest.mark.parametrize("make", [
    lambda: AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-3),
    lambda: AdaGradClassifier(update="ftrl_proximal", loss="log_loss", penalty="l1",
                              alpha=1e-3),
    lambda: ImplicitFTRLClassifier(loss="log_loss"),
    lambda: ImplicitFTRLRegressor(),
    lambda: PairwiseAUCClassifier(average=True),
], ids=["adagrad_md", "adagrad_ftrl", "iftrl_clf", "iftrl_reg", "auc"])
@pytest.mark.parametrize("sparse", [False, True])
def test_pass_over_rows_is_partial_fit_of_the_rows(data, make, sparse):
    """The thread trainer's shard pass (rows read in place from X checked
    once) is partial_fit on a copy of those rows, in their order, bit for
    bit, also when it is told the columns of X's non-zeros (for its
    checks)."""
    X, y, sw = data
    first = make().set_params(random_state=0)
    classes = {}
    if not isinstance(first, ImplicitFTRLRegressor):
        y = np.where(y > 0, "yes", "no")  # labels that are not +-1 go through classes
        classes = {"classes": np.unique(y)}
    X_in = sp.csr_matrix(X) if sparse else X
    rows = np.random.RandomState(1).permutation(X.shape[0])[:60]
    first.partial_fit(X_in[:20], y[:20], sample_weight=sw[:20], **classes)
    copied, in_place = copy.deepcopy(first), copy.deepcopy(first)
    copied.partial_fit(X_in[rows], y[rows], sample_weight=sw[rows])
    prepared = in_place._prepare_rows(X_in, y, sample_weight=sw)
    in_place._pass_over_rows(prepared, rows)
    passes = [in_place]
    if sparse:  # the columns of all of X's non-zeros, as the thread trainer's shards get them
        passes.append(copy.deepcopy(first))
        passes[-1]._pass_over_rows(prepared, rows, touched_columns(X_in.indices, 8))
    for model in passes:
        for name, value in vars(copied).items():
            if name.endswith("_") and isinstance(value, np.ndarray):
                assert_array_equal(getattr(model, name), value, err_msg=name)
        assert model.t_ == copied.t_
        assert_array_equal(model.loss_curve_, copied.loss_curve_)


def test_pass_over_rows_needs_a_fitted_model_and_rda_plus_copies_its_rows(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="continue a fitted model"):
        AdaGradClassifier()._prepare_rows(X, y, classes=np.unique(y))
    with pytest.raises(ValueError, match="continue a fitted model"):
        ImplicitFTRLRegressor()._prepare_rows(X, y)
    assert not RDAPlusClassifier._passes_over_row_subsets


@pytest.mark.parametrize("shape", [(50,), (3, 50), (2, 50, 2)], ids=["1d", "2d", "3d"])
def test_copy_columns_is_the_numpy_assignment(shape):
    from sklearn_adaprox.merge import _copy_columns

    rng = np.random.RandomState(0)
    source, target = rng.randn(*shape), rng.randn(*shape)
    columns = np.array([0, 7, 8, 31, 49], dtype=np.int64)
    expected = target.copy()
    if len(shape) == 1:
        expected[columns] = source[columns]
    else:
        expected[:, columns] = source[:, columns]
    _copy_columns(target, source, columns)
    assert_array_equal(target, expected)
    with pytest.raises(ValueError, match="column 50 of 50"):
        _copy_columns(target, source, np.array([3, 50], dtype=np.int64))


def _misaligned(values):
    """A read-only copy of ``values`` one byte off an aligned address, as
    Dask hands arrays received from another process."""
    buffer = bytes(1) + np.ascontiguousarray(values, dtype=np.float64).tobytes()
    out = np.frombuffer(buffer, dtype=np.float64, offset=1).reshape(np.shape(values))
    assert not out.flags.aligned
    return out


def test_received_arrays_are_realigned_with_their_values():
    from sklearn_adaprox.distributed import _aligned, _realigned

    rng = np.random.RandomState(0)
    u, n = rng.randn(3, 40), rng.rand(3, 40)
    increment = {"sums": {"u": _misaligned(u), "t": 5},
                 "avg": {"w": [_misaligned(n), None, 1]},
                 "latest": (0, {"x": _misaligned(u[0])})}
    out = _aligned(increment)
    assert out["sums"]["u"].flags.aligned and out["avg"]["w"][0].flags.aligned
    assert out["latest"][1]["x"].flags.aligned and out["sums"]["t"] == 5
    assert_array_equal(out["sums"]["u"], u)
    assert_array_equal(out["avg"]["w"][0], n)
    model = AdaGradClassifier().fit(rng.randn(30, 4), np.arange(30) % 2)
    coef = model.accumulators_.copy()
    model.accumulators_ = _misaligned(coef)
    copy_of = _realigned(model)
    assert copy_of is not model and copy_of.accumulators_.flags.aligned
    assert_array_equal(copy_of.accumulators_, coef)
    assert not model.accumulators_.flags.aligned  # the original is not changed
    assert _realigned(copy_of) is copy_of  # nothing to copy
