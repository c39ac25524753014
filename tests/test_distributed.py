"""DaskShardedTrainer on a real distributed cluster (one LocalCluster for the
module: two worker processes of one thread each).

Under the AddressSanitizer stage of CI (the ASan runtime in LD_PRELOAD) the
workers are threads of the test process instead of processes: spawned
worker processes would each load the preloaded runtime and the instrumented
kernels, several times slower, and the kernels are what that stage checks;
the test that kills a worker process needs processes and is skipped there.
"""
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from reference import merge as ref  # noqa: E402
from sklearn_adaprox import (  # noqa: E402
    AdaGradClassifier,
    ImplicitFTRLClassifier,
    ImplicitFTRLRegressor,
    PairwiseAUCClassifier,
    RDAPlusClassifier,
)
from sklearn_adaprox.distributed import DaskShardedTrainer  # noqa: E402

UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       processes=not UNDER_ASAN, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(240, 8) * (rng.rand(240, 8) < 0.6)
    y = np.where(X @ rng.randn(8) + 0.3 * rng.randn(240) > 0, 1.0, -1.0)
    return X, y


def _dask(X, y, k, sparse=False):
    chunks = -(-X.shape[0] // k)
    Xd = da.from_array(sp.csr_matrix(X) if sparse else X, chunks=(chunks, X.shape[1]),
                       asarray=False)
    return Xd, da.from_array(y, chunks=chunks)


def _state(est):
    """The fitted arrays that define the model (bitwise comparisons)."""
    names = ("accumulators_", "md_weights_", "intercept_", "intercept_sum_gradient_",
             "scaled_coef_", "scaled_intercept_", "lambda_", "G_", "iterate_", "momentum_",
             "sum_sq_gradient_", "score_stats_")
    return {n: np.asarray(est.__dict__[n]) for n in names if n in est.__dict__}


# ----------------------------------------------------------------------
@pytest.mark.parametrize("est", [
    # update="auto" chooses mirror descent on these rows (60% non-zero):
    # pinned from partition 0
    AdaGradClassifier(penalty="l1", alpha=1e-3),
    AdaGradClassifier(update="mirror_descent"),
    ImplicitFTRLClassifier(),  # G resolved from the data: pinned from partition 0
    PairwiseAUCClassifier(),
], ids=lambda e: f"{type(e).__name__}")
def test_one_partition_is_the_in_memory_fit(client, data, est):
    X, y = data
    Xd, yd = _dask(X, y, 1)
    trainer = DaskShardedTrainer(est, max_iter=3, random_state=0).fit(Xd, yd)
    memory = clone(est).set_params(shuffle=False, tol=None, max_iter=3).fit(X, y)
    got, expected = _state(trainer.estimator_), _state(memory)
    assert got.keys() == expected.keys()
    for name in expected:
        assert_array_equal(got[name], expected[name], err_msg=name)
    assert trainer.estimator_.t_ == memory.t_
    assert_array_equal(trainer.predict(X), memory.predict(X))
    assert trainer.estimator_.get_params() == est.get_params()


ADAGRAD = [dict(update="dual_averaging", penalty="elasticnet", alpha=2e-2, l1_ratio=0.5),
           dict(update="mirror_descent", penalty="l1", alpha=1e-2, delta=0.1),
           dict(update="ftrl_proximal", penalty="l1", alpha=1e-2, delta=1.0)]


@pytest.mark.parametrize("params", ADAGRAD, ids=lambda p: p["update"])
@pytest.mark.parametrize("sparse, combine", [(False, "sum"), (True, "sum"), (True, "average")],
                         ids=["dense", "csr", "csr-average"])
def test_partitions_match_the_transcription(client, data, params, sparse, combine):
    X, y = data
    K = 3
    est = AdaGradClassifier(loss="log_loss", eta=0.5, **params)
    trainer = DaskShardedTrainer(est, max_iter=2, shuffle=False, combine=combine)
    trainer.fit(*_dask(X, y, K, sparse))
    l1, l2 = est._penalty_strengths()
    hyper = dict(update=est.update, eta=est.eta, delta=est.delta, l1=l1, l2=l2)
    state = ref.adagrad_state(X.shape[1])
    blocks = np.array_split(np.arange(X.shape[0]), K)
    for _ in range(2):
        shards = [ref.adagrad_pass(X[b], y[b], np.ones(len(b)), state, loss="log_loss",
                                   fit_intercept=True, **hyper) for b in blocks]
        state = ref.adagrad_merge(state, shards, combine=combine, **hyper)
    w, b = ref.adagrad_weights(state, **hyper)
    model = trainer.estimator_
    assert model.t_ == state["t"] == (2 * X.shape[0] if combine == "sum" else 2 * 80)
    assert_allclose(model.coef_[0], w, rtol=0, atol=1e-10)
    assert_allclose(model.intercept_[0], b, rtol=0, atol=1e-10)
    assert_allclose(model.sum_gradient_[0], state["u"], rtol=0, atol=1e-10)
    assert len(trainer.loss_curve_) == trainer.n_iter_ == 2


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_implicit_ftrl_partitions_match_the_transcription(client, data, kind):
    X, y = data
    K = 4
    if kind == "classifier":
        est, target, loss = ImplicitFTRLClassifier(beta=2.0, G=3.0, loss="log_loss"), y, "log_loss"
    else:
        target = X @ np.linspace(-1, 1, X.shape[1])
        est, loss = ImplicitFTRLRegressor(beta=2.0, G=3.0, loss="squared_error"), "squared_error"
    trainer = DaskShardedTrainer(est, max_iter=2, shuffle=False, combine="sum").fit(*_dask(X, target, K))
    state = ref.implicit_ftrl_state(X.shape[1], G=3.0, beta=2.0, fit_intercept=True)
    blocks = np.array_split(np.arange(X.shape[0]), K)
    for _ in range(2):
        shards = [ref.implicit_ftrl_pass(X[b], target[b], np.ones(len(b)), state, loss=loss,
                                         update=est.update, beta=2.0, fit_intercept=True)
                  for b in blocks]
        state = ref.implicit_ftrl_merge(state, shards, beta=2.0)
    model = trainer.estimator_
    assert_allclose(np.ravel(model.coef_), state["theta"][:-1] / state["lam"],
                    rtol=1e-10, atol=1e-10)
    assert_allclose(model.intercept_[0], state["theta"][-1] / state["lam"], rtol=1e-10,
                    atol=1e-10)


def test_dask_dataframe_and_shuffled_rounds_are_reproducible(client, data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    Xd = dd.from_pandas(frame, npartitions=3)
    yd = dd.from_pandas(pd.Series(y), npartitions=3)
    make = lambda: DaskShardedTrainer(PairwiseAUCClassifier(), max_iter=4, random_state=3,
                                      validation_fraction=0.2, tol=None)
    a, b = make().fit(Xd, yd), make().fit(Xd, yd)
    assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    assert len(a.validation_scores_) == 4
    assert list(a.feature_names_in_) == list(frame.columns)
    assert a.n_partitions_ == 3
    assert a.estimator_.t_ == 4 * a.estimator_.t_ // 4 < 4 * X.shape[0]  # rows held out


def test_early_stopping_and_verbose(client, data, capsys):
    X, y = data
    trainer = DaskShardedTrainer(AdaGradClassifier(), max_iter=30, validation_fraction=0.25,
                                 tol=0.5, n_iter_no_change=2, verbose=1, random_state=0)
    trainer.fit(*_dask(X, y, 2))
    assert trainer.n_iter_ == 3  # the score can never rise by 0.5 after round 1
    out = capsys.readouterr().out
    assert out.count("-- round") == 3 and "held-out score" in out


# ----------------------------------------------------------------------
DIE_ONCE = "SKLEARN_ADAPROX_TEST_DIE_ONCE"


class _DieOnce(AdaGradClassifier):
    """A pass of round 2 (the state has taken steps) kills its worker
    process the first time the marker file its environment names is absent
    (then creates it): a worker lost in the middle of a round, with the
    state of round 1 on the workers.  The environment variable is set in the
    running workers only: a worker that replaces a dead one never dies."""

    def _pass_over_rows(self, prepared, rows):
        marker = os.environ.get(DIE_ONCE)
        if marker and self.t_ > 0:
            try:
                # atomic: of two workers that get here at once, one dies (if
                # both did, no worker would be left to finish the round)
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        return super()._pass_over_rows(prepared, rows)


def _set_environment(name, value):
    """Run in the workers (``os.environ``'s own methods would be pickled
    with a copy of the client's environment)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@pytest.mark.skipif(UNDER_ASAN, reason="needs worker processes (see the module doc)")
def test_a_killed_worker_loses_and_doubles_nothing(client, data, tmp_path):
    import importlib.util

    # The workers import the class from its module: under
    # --import-mode=importlib from an unpacked sdist it is
    # "tests.test_distributed", which they cannot (the round then never
    # ends: the workers fail to read their tasks).
    try:  # asked of the workers themselves
        found = client.run(importlib.util.find_spec, _DieOnce.__module__)
        importable = all(spec is not None for spec in found.values())
    except Exception:
        importable = False
    if not importable:
        pytest.skip(f"worker processes cannot import {_DieOnce.__module__!r} in this "
                    "import mode")
    X, y = data
    Xd, yd = _dask(X, y, 4)
    marker = str(tmp_path / "died")
    client.run(_set_environment, DIE_ONCE, marker)
    try:
        disturbed = DaskShardedTrainer(_DieOnce(), max_iter=3, shuffle=False,
                                       combine="sum").fit(Xd, yd)
        assert os.path.exists(marker)  # a worker did die
        undisturbed = DaskShardedTrainer(_DieOnce(), max_iter=3, shuffle=False,
                                         combine="sum").fit(Xd, yd)
    finally:
        client.run(_set_environment, DIE_ONCE, None)
    client.wait_for_workers(2, timeout=30)
    assert disturbed.estimator_.t_ == 3 * X.shape[0]
    for name, value in _state(undisturbed.estimator_).items():
        assert_array_equal(_state(disturbed.estimator_)[name], value, err_msg=name)


# ----------------------------------------------------------------------
def _with_bad_partition(X, y, bad_X=None, bad_y=None, width=None):
    import dask

    blocks = np.array_split(np.arange(X.shape[0]), 3)
    xs, ys = [], []
    for i, rows in enumerate(blocks):
        Xi, yi = X[rows].copy(), y[rows].copy()
        if i == 2:
            Xi = Xi if bad_X is None else bad_X(Xi)
            yi = yi if bad_y is None else bad_y(yi)
        xs.append(da.from_delayed(dask.delayed(Xi), shape=(len(rows), width or X.shape[1]),
                                  dtype=float))
        ys.append(da.from_array(yi, chunks=len(rows)))
    return da.concatenate(xs), da.concatenate(ys)


def _nan(Xi):
    Xi[3, 2] = np.nan
    return Xi


@pytest.mark.parametrize("bad, match", [
    (dict(bad_X=_nan), "partition 2: .*NaN"),
    (dict(bad_X=lambda Xi: Xi[:, :5], width=8), "partition 2: .*features"),
    (dict(bad_y=lambda yi: np.where(yi > 0, 2.0, yi)), r"partition 2: .*labels \[2.0\]"),
], ids=["nan", "width", "label"])
def test_bad_partition_is_an_error_and_changes_nothing(client, data, bad, match):
    X, y = data
    trainer = DaskShardedTrainer(AdaGradClassifier(), max_iter=2, shuffle=False)
    trainer.fit(*_dask(X, y, 3))
    saved = pickle.dumps(trainer)
    Xd, yd = _with_bad_partition(X, y, **bad)
    with pytest.raises(ValueError, match=match):
        trainer.fit(Xd, yd, classes=[-1.0, 1.0])
    assert pickle.dumps(trainer) == saved


# ----------------------------------------------------------------------
def test_meta_estimator_clones_pickles_and_searches(client, data):
    X, y = data
    trainer = DaskShardedTrainer(AdaGradClassifier(), max_iter=2, n_partitions=2)
    assert clone(trainer).get_params()["estimator__alpha"] == "auto"
    search = GridSearchCV(trainer, {"estimator__alpha": [1e-4, 1e-1]}, cv=2).fit(X, y)
    assert search.best_params_["estimator__alpha"] in (1e-4, 1e-1)
    fitted = search.best_estimator_
    assert fitted.n_partitions_ == 2
    again = pickle.loads(pickle.dumps(fitted))
    assert_array_equal(again.predict(X), fitted.predict(X))
    assert again.score(X, y) > 0.7


def test_missing_dask_names_the_extra(data, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"sklearn_adaprox\[dask\]"):
        DaskShardedTrainer(AdaGradClassifier()).fit(*data)



# ----------------------------------------------------------------------
# dask-ml around the estimators, on the same cluster
ALL_ESTIMATORS = [
    AdaGradClassifier(),
    ImplicitFTRLClassifier(),
    ImplicitFTRLRegressor(),
    PairwiseAUCClassifier(),
    RDAPlusClassifier(),
]


@pytest.mark.parametrize("est", ALL_ESTIMATORS, ids=lambda e: type(e).__name__)
def test_dask_ml_incremental_is_partial_fit_block_by_block(client, data, est):
    """dask-ml's Incremental feeds the blocks to partial_fit one after the
    other (out-of-core, not parallel): the model of partial_fit over the
    same blocks in memory, exactly."""
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, y = data
    regressor = isinstance(est, ImplicitFTRLRegressor)
    target = X @ np.linspace(-1, 1, X.shape[1]) if regressor else y
    Xd, yd = _dask(X, target, 3)
    fit_kwargs = {} if regressor else {"classes": [-1.0, 1.0]}
    inc = wrappers.Incremental(clone(est), shuffle_blocks=False).fit(Xd, yd, **fit_kwargs)
    memory = clone(est)
    for rows in np.array_split(np.arange(X.shape[0]), 3):
        memory.partial_fit(X[rows], target[rows], **fit_kwargs)
    if isinstance(est, RDAPlusClassifier):
        # Not to the bit: with the oldest pinned versions (numpy 1.25, scipy
        # 1.11) the RDA+ stream's dual-averaging sums came out 4.4e-16 (coef_
        # 1.4e-17) away from the in-memory stream's in 4 of 6 Incremental
        # fits, when dask moved it between its worker processes; the same
        # stream pickled between calls, between processes, in a thread, on
        # misaligned arrays or under the workers' environment gave the
        # in-memory bits.  The cause is not found; the newest versions and
        # the other estimators are exact here.
        assert_allclose(inc.estimator_.coef_, memory.coef_, rtol=1e-12, atol=1e-15)
        assert_allclose(inc.estimator_.intercept_, memory.intercept_, rtol=1e-12, atol=1e-15)
    else:
        assert_array_equal(inc.estimator_.coef_, memory.coef_)
        assert_array_equal(inc.estimator_.intercept_, memory.intercept_)
    assert_array_equal(np.asarray(inc.predict(Xd)), memory.predict(X))


def test_dask_ml_incremental_search(client, data):
    """IncrementalSearchCV and HyperbandSearchCV over the parameters.

    dask-ml 2025.1 (its latest release) calls ``dask.persist`` inside the
    asynchronous loop of its searches, which dask 2025 and later refuse
    ("Attempting to use an asynchronous Client in a synchronous context");
    dask's fallback setting does not rescue it (the persisted data then have
    no futures and the search fails further on).  With those versions the
    test is an expected failure of dask-ml's, named (doc/scaling.md); with a
    dask-ml that works, it checks the searches."""
    model_selection = pytest.importorskip("dask_ml.model_selection")
    X, y = data
    Xd, yd = _dask(X, y, 4)
    try:
        search = model_selection.IncrementalSearchCV(
            AdaGradClassifier(), {"alpha": [1e-4, 1e-2, 1.0], "eta": [0.1, 1.0]},
            n_initial_parameters=4, max_iter=3, random_state=0)
        search.fit(Xd, yd, classes=[-1.0, 1.0])
    except RuntimeError as exc:
        if "asynchronous Client in a synchronous context" not in str(exc):
            raise
        pytest.xfail("dask-ml's searches do not run on this dask (dask.persist "
                     "inside their asynchronous loop)")
    assert search.best_params_["alpha"] in (1e-4, 1e-2, 1.0)
    assert search.best_estimator_.t_ > 0
    hyper = model_selection.HyperbandSearchCV(
        ImplicitFTRLClassifier(), {"beta": [0.1, 1.0, 10.0]}, max_iter=3, random_state=0)
    hyper.fit(Xd, yd, classes=[-1.0, 1.0])
    assert hyper.best_params_["beta"] in (0.1, 1.0, 10.0)


def test_grid_search_on_the_joblib_dask_backend(client, data):
    import joblib

    X, y = data
    with joblib.parallel_config(backend="dask"):
        search = GridSearchCV(AdaGradClassifier(max_iter=5, tol=None, random_state=0),
                              {"alpha": [1e-4, 1e-1]}, cv=2, n_jobs=2).fit(X, y)
    local = GridSearchCV(AdaGradClassifier(max_iter=5, tol=None, random_state=0),
                         {"alpha": [1e-4, 1e-1]}, cv=2).fit(X, y)
    assert_allclose(search.cv_results_["mean_test_score"],
                    local.cv_results_["mean_test_score"], rtol=0, atol=0)


def test_warm_start_continues(client, data):
    X, y = data
    Xd, yd = _dask(X, y, 3)
    est = ImplicitFTRLClassifier()
    whole = DaskShardedTrainer(est, max_iter=3, shuffle=False).fit(Xd, yd)
    part = DaskShardedTrainer(est, max_iter=2, shuffle=False).fit(Xd, yd)
    part.set_params(warm_start=True, max_iter=1).fit(Xd, yd)
    assert_array_equal(part.estimator_.scaled_coef_, whole.estimator_.scaled_coef_)
    assert part.loss_curve_ == whole.loss_curve_ and len(part.loss_curve_) == 3


# ----------------------------------------------------------------------
# RDA+: rounds of dual averaging, then the distributed local phase
def _standardised(name, n_features):
    from pathlib import Path

    from sklearn.datasets import load_svmlight_file
    from sklearn.preprocessing import StandardScaler

    X, y = load_svmlight_file(str(Path(__file__).parent / "data" / name),
                              n_features=n_features, zero_based=False)
    return StandardScaler().fit_transform(X.toarray()), np.where(y == 1, 1.0, -1.0)


def _alpha_max(X, yp):
    """Above it the l1 solution is w = 0: the largest gradient entry at the
    best intercept-only model."""
    from scipy.special import expit

    p = np.mean(yp > 0)
    b = np.log(p / (1 - p))
    return np.abs(X.T @ (-yp * expit(-yp * b))).max() / X.shape[0]


@pytest.mark.parametrize("name, width, frac", [("ionosphere.svm.gz", 34, 0.1),
                                               ("ionosphere.svm.gz", 34, 0.3),
                                               ("spambase.svm.gz", 57, 0.1)])
def test_rdaplus_distributed_local_phase(client, name, width, frac):
    from reference.rda import optimality

    X, yp = _standardised(name, width)
    alpha = frac * _alpha_max(X, yp)
    # tol is the target of delta here (the paper's 1e-4, tightened so that
    # the weights can be compared with LIBLINEAR's)
    est = RDAPlusClassifier(alpha=alpha, tol=1e-9)
    trainer = DaskShardedTrainer(est, max_iter=3, combine="average", random_state=0)
    trainer.fit(*_dask(X, yp, 4))
    model = trainer.estimator_
    ones = np.ones(X.shape[0])
    delta = optimality(X, yp, ones, model.coef_[0], model.intercept_[0], alpha)
    assert delta <= 1e-9
    assert_allclose(model.optimality_[0], delta, rtol=1e-6, atol=1e-12)
    # the support and weights of the in-memory RDA+ at a tight tol, which
    # are LIBLINEAR's (tests/test_rda_plus.py)
    tight = clone(est).set_params(random_state=0).fit(X, yp)
    assert_array_equal(np.sign(model.coef_[0]), np.sign(tight.coef_[0]))
    assert_allclose(model.coef_[0], tight.coef_[0], rtol=0, atol=1e-6)
    assert_allclose(model.intercept_[0], tight.intercept_[0], rtol=0, atol=1e-6)
    assert trainer.local_phase_iter_ >= 1


def test_an_empty_partition_adds_nothing(client, data):
    X, y = data
    chunks = ((80, 0, 80, 80), (X.shape[1],))
    Xd = da.from_array(X, chunks=chunks)
    yd = da.from_array(y, chunks=(chunks[0],))
    with_empty = DaskShardedTrainer(AdaGradClassifier(), max_iter=2, shuffle=False).fit(Xd, yd)
    without = DaskShardedTrainer(AdaGradClassifier(), max_iter=2, shuffle=False).fit(
        *_dask(X, y, 3))
    # the same increments (an empty partition has none), added in another
    # order by the tree reduction
    assert_allclose(with_empty.estimator_.coef_, without.estimator_.coef_, rtol=1e-13)
    assert with_empty.estimator_.t_ == without.estimator_.t_
    assert with_empty.n_partitions_ == 4
