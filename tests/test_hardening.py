"""The engine's defences: sparse structure checked before anything reads it,
every call all or nothing, values whose squares overflow refused, a
non-finite state never published.  (Hostile inputs run in subprocesses, in
test_hostile_inputs.py; these are the in-process unit tests.)"""
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from sklearn_adaprox import (
    AdaGradClassifier,
    ImplicitFTRLClassifier,
    ImplicitFTRLRegressor,
    PairwiseAUCClassifier,
    RDAPlusClassifier,
    _short_calls,
)
from sklearn_adaprox._adagrad_fast import AdaGradProblem, run_epoch
from sklearn_adaprox._base import all_finite
from sklearn_adaprox._dataset import (
    _scan_indices,
    as_row_arrays,
    check_sparse_structure,
    first_nonfinite,
)
from sklearn_adaprox._loss import make_loss

ESTIMATORS = [
    AdaGradClassifier(random_state=0),
    AdaGradClassifier(update="mirror_descent", random_state=0),
    AdaGradClassifier(multi_class="multinomial", random_state=0),
    RDAPlusClassifier(random_state=0),
    PairwiseAUCClassifier(random_state=0),
    PairwiseAUCClassifier(theta=0.9, random_state=0),
    ImplicitFTRLClassifier(random_state=0),
    ImplicitFTRLRegressor(random_state=0),
]
IDS = [repr(e) for e in ESTIMATORS]


def _data(n=60, d=8, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n, d, density=0.4, random_state=rng, format="csr")
    y = np.where(X @ rng.randn(d) > 0.05, 1, -1)
    y[:2] = [1, -1]
    return X, y


def _copy(X):
    return sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()),
                         shape=X.shape)


def _fitted(est, X, y):
    from sklearn.base import clone
    est = clone(est)
    return est.fit(X, y.astype(float) if isinstance(est, ImplicitFTRLRegressor) else y)


# -- the structure check -------------------------------------------------------
def _malformed():
    X, _ = _data()
    cases = {}
    A = _copy(X)
    A.indices[5] = X.shape[1]
    cases["index equal to n_features"] = A
    A = _copy(X)
    A.indices[0] = -1
    cases["negative index"] = A
    A = _copy(X)
    A.indptr = A.indptr[:-3]
    cases["truncated indptr"] = A
    A = _copy(X)
    A.indptr[3], A.indptr[4] = A.indptr[4] + 1, A.indptr[3]
    cases["non-monotone indptr"] = A
    A = _copy(X)
    A.indptr = A.indptr + 1
    cases["indptr not starting at 0"] = A
    A = _copy(X)
    A.data = A.data[:-1]
    cases["data shorter than indices"] = A
    A = _copy(X)
    A.indices = A.indices[:-2]
    cases["indices shorter than indptr says"] = A
    A = _copy(X)
    A.indices = A.indices.astype(np.float64)
    cases["float indices"] = A
    A = _copy(X)
    A.indices = A.indices.astype(np.uint64)
    A.indices[1] = np.uint64(2**63 + 3)
    cases["uint64 index beyond int64"] = A
    A = _copy(X)
    A.indices = A.indices.astype(np.int64)
    A.indptr = A.indptr.astype(np.int64)
    A.indices[2] = 2**32 + 1  # would wrap to 1 if narrowed to int32
    cases["int64 index wrapping into range"] = A
    C = X.tocsc()
    C.indices[0] = X.shape[0]
    cases["csc row index out of range"] = C
    O = X.tocoo()
    O.col[0] = X.shape[1] + 7
    cases["coo column out of range"] = O
    return cases


@pytest.mark.parametrize("case", list(_malformed()))
def test_malformed_structure_is_refused(case):
    with pytest.raises(ValueError, match="Malformed sparse matrix X: "):
        check_sparse_structure(_malformed()[case])


def test_valid_structure_is_not_copied():
    X, _ = _data()
    assert check_sparse_structure(X) is X


@pytest.mark.parametrize("which", ["data", "indices", "indptr"])
def test_strided_arrays_are_made_contiguous(which):
    X, _ = _data()
    A = _copy(X)
    setattr(A, which, np.repeat(getattr(A, which), 2)[::2])  # same values, strided
    assert not getattr(A, which).flags.c_contiguous
    B = check_sparse_structure(A)
    assert getattr(B, which).flags.c_contiguous
    np.testing.assert_array_equal(B.toarray(), X.toarray())
    assert not getattr(A, which).flags.c_contiguous  # the caller's is untouched


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.uint32, np.uint64])
def test_narrow_and_unsigned_indices_are_widened(dtype):
    X, _ = _data(d=8)
    A = _copy(X)
    A.indices = A.indices.astype(dtype)
    A.indptr = A.indptr.astype(np.int64)
    B = check_sparse_structure(A)
    assert B.indices.dtype == B.indptr.dtype and B.indices.dtype in (np.int32, np.int64)
    np.testing.assert_array_equal(B.toarray(), X.toarray())


def test_other_formats_are_checked_through_coo():
    X, _ = _data()
    L = X.tolil()
    L.rows[0] = [X.shape[1] + 2]
    L.data[0] = [1.0]
    with pytest.raises(ValueError, match="Malformed sparse matrix X: "):
        check_sparse_structure(L)
    np.testing.assert_array_equal(check_sparse_structure(X.todok()).toarray(),
                                  X.toarray())


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("method", ["fit", "partial_fit", "decision_function"])
def test_malformed_input_leaves_the_estimator_as_it_was(est, method):
    X, y = _data()
    model = _fitted(est, X, y)
    before = pickle.dumps(model)
    for name, A in _malformed().items():
        if method == "decision_function" and isinstance(model, ImplicitFTRLRegressor):
            call = lambda: model.predict(A)  # noqa: E731
        elif method == "decision_function":
            call = lambda: model.decision_function(A)  # noqa: E731
        else:
            target = y.astype(float) if isinstance(model, ImplicitFTRLRegressor) else y
            call = lambda: getattr(model, method)(A, target)  # noqa: E731
        with pytest.raises(ValueError, match="Malformed sparse matrix X: "):
            call()
        assert pickle.dumps(model) == before, name


# -- the kernels defend themselves ----------------------------------------------
def test_kernel_refuses_state_narrower_than_X():
    X, y = _data()
    rows = as_row_arrays(X)
    d = X.shape[1] - 1  # a state one feature short
    problem = AdaGradProblem(
        loss=make_loss("hinge"), update="dual_averaging", eta=1.0, delta=1e-6, l1=0.0,
        l2=0.0, fit_intercept=True, acc=np.zeros((d, 2)), intercept=0.0,
        intercept_sum_grad=0.0, intercept_sum_sq_grad=0.0, t=0)
    order = np.arange(X.shape[0], dtype=np.int64)
    with pytest.raises(ValueError, match="fitted state has 7 features but X has 8"):
        run_epoch(problem, *rows, y.astype(float), np.ones(X.shape[0]), order)


def test_kernel_refuses_rows_outside_X():
    X, y = _data()
    d = X.shape[1]
    problem = AdaGradProblem(
        loss=make_loss("hinge"), update="dual_averaging", eta=1.0, delta=1e-6, l1=0.0,
        l2=0.0, fit_intercept=True, acc=np.zeros((d, 2)), intercept=0.0,
        intercept_sum_grad=0.0, intercept_sum_sq_grad=0.0, t=0)
    order = np.array([0, X.shape[0]], dtype=np.int64)
    with pytest.raises(ValueError, match="Row order names row 60 of 60"):
        run_epoch(problem, *as_row_arrays(X), y.astype(float), np.ones(X.shape[0]),
                  order)
    with pytest.raises(ValueError, match="sample weights for"):
        run_epoch(problem, *as_row_arrays(X), y.astype(float), np.ones(3),
                  order[:1])


# -- every call is all or nothing ------------------------------------------------
@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_a_failing_pass_restores_the_state(est, monkeypatch):
    """A non-finite value appearing in the state during a pass: the call
    raises (naming the epoch and the attribute) and the model is as before."""
    X, y = _data()
    model = _fitted(est, X, y)
    before = pickle.dumps(model)
    target = y.astype(float) if isinstance(model, ImplicitFTRLRegressor) else y
    # RDA+ runs its own loop of passes and local phases per problem
    step = "_solve_problem" if isinstance(model, RDAPlusClassifier) else "_run_epoch"
    original = getattr(type(model), step)

    # the weights, or the arrays they are computed from where the kernel
    # updates those in place (coef_ is then a function of them); where the
    # kernel checks the weights itself (test_pairwise_auc.py,
    # test_adagrad.py), the intercept
    poisoned_name = [name for name in (*model._in_place_arrays(), "coef_", "intercept_")
                     if name in model.__dict__ and name not in model._kernel_checked_arrays()
                     and model.__dict__[name].dtype.kind == "f"][0]

    def poisoned(self, k, *args):
        result = original(self, k, *args)
        getattr(self, poisoned_name).flat[0] = np.inf
        return result

    monkeypatch.setattr(type(model), step, poisoned)
    # the general path's transaction (the short path's: test_short_calls.py)
    monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    for call in (lambda: model.partial_fit(X, target),
                 lambda: model.set_params(warm_start=True).fit(X, target),
                 lambda: model.set_params(warm_start=False).fit(X, target)):
        with pytest.raises(ValueError, match=f"Floating-point overflow in .*{poisoned_name}"):
            call()
        model.set_params(warm_start=False)
        assert pickle.dumps(model) == before


def test_a_wide_fresh_fit_checks_the_columns_of_X(monkeypatch):
    """A fresh fit on sparse X with fewer non-zeros than state values, in
    at most half of the columns, may check after each pass only the columns
    of X of the arrays it updates in place (nothing else can change), read
    where they are (the multinomial state's 48-byte columns here): a
    non-finite entry in one of them fails the fit, naming the array, and
    leaves the model unfitted."""
    rng = np.random.RandomState(0)
    X = sp.random(40, 4096, density=0.002, random_state=rng, format="csr")
    y = rng.randint(0, 3, 40)
    columns = np.unique(X.indices)
    assert 2 * columns.shape[0] <= X.shape[1]
    est = AdaGradClassifier(multi_class="multinomial", random_state=0)
    original = type(est)._run_epoch

    def poisoned(self, k, *args):
        result = original(self, k, *args)
        self.class_accumulators_[0, columns[-1], ...] = np.nan
        return result

    monkeypatch.setattr(type(est), "_run_epoch", poisoned)
    model = clone(est)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="Floating-point overflow in epoch 1: "
                       "class_accumulators_ holds"):
        model.fit(X, y)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("container", ["dense", "sparse", "float32"])
def test_implicit_ftrl_passes_test_the_weights_they_write(container, monkeypatch):
    """Implicit FTRL's kernel tests each entry of theta as it writes it
    (no read of the state follows a pass, nor a listing of X's columns for
    one): when problem 1's pass writes a NaN (an infinite entry of theta
    that its rows read), the call fails naming ``scaled_coef_``, in the
    general path and in a short call's compiled one, and the model is as
    before."""
    rng = np.random.RandomState(0)
    X = sp.random(60, 200, density=0.03, format="csr", random_state=rng)
    X = {"dense": X.toarray(), "sparse": X, "float32": X.astype(np.float32)}[container]
    y = rng.randint(0, 3, 60)
    model = ImplicitFTRLClassifier(random_state=0).fit(X, y)
    assert "scaled_coef_" in model._kernel_checked_arrays()
    model.scaled_coef_[1] = np.inf
    before = pickle.dumps(model)
    for short_chunk_rows in (0, 1024):
        monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", short_chunk_rows)
        with pytest.raises(ValueError, match="Floating-point overflow in .*scaled_coef_"):
            model.partial_fit(X, y)
        assert pickle.dumps(model) == before


def test_a_memory_error_after_validation_leaves_the_model(monkeypatch):
    X, y = _data()
    model = AdaGradClassifier(random_state=0).fit(X, y)
    before = pickle.dumps(model)

    def out_of_memory(self, n_problems, n_features):
        self.coef_ = np.zeros((n_problems, n_features))
        raise MemoryError

    monkeypatch.setattr(AdaGradClassifier, "_init_state", out_of_memory)
    wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], 3 * 10**9))
    with pytest.raises(MemoryError):
        model.fit(wide, y)
    assert pickle.dumps(model) == before
    assert model.n_features_in_ == X.shape[1]


def test_a_rejected_refit_keeps_the_fitted_model():
    X, y = _data()
    model = AdaGradClassifier(random_state=0).fit(X, y)
    before = pickle.dumps(model)
    with pytest.raises(ValueError):
        model.fit(X, np.zeros(X.shape[0]))  # one class
    with pytest.raises(ValueError):
        model.fit(X, y, sample_weight=np.zeros(X.shape[0]))
    assert pickle.dumps(model) == before


# a value each estimator's constraints refuse, besides the shared ones below:
# before the check, partial_fit after fit let these through (set_params does
# not check, and scikit-learn's _fit_context checks fit and a first
# partial_fit only): a negative step trained on in silence, an unknown name
# failed midway with a KeyError
_REFUSED_VALUES = {
    AdaGradClassifier: {"eta": -1.0, "alpha": -1.0},
    PairwiseAUCClassifier: {"algorithm": "nope", "theta": 5.0},
    ImplicitFTRLClassifier: {"update": "nope"},
    ImplicitFTRLRegressor: {"update": "nope"},
    RDAPlusClassifier: {"alpha": -1.0, "gamma": -1.0},
}


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("path", ["short", "general"])
def test_a_parameter_set_between_calls_is_checked(est, path, monkeypatch):
    """A parameter set to a value its constraints refuse after the model
    was fitted: the next partial_fit raises scikit-learn's
    InvalidParameterError, naming it, on the short path of a row as on the
    general one, and the model is as it was; with a valid value the call
    learns."""
    X, y = _data()
    target = y.astype(float) if isinstance(est, ImplicitFTRLRegressor) else y
    model = _fitted(est, X, y)
    if path == "general":
        monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    # shuffle=1 equals the valid True: a check that compared values by ==
    # alone would let it through
    refused = {"fit_intercept": "yes", "max_iter": 0, "shuffle": 1,
               **_REFUSED_VALUES[type(model)]}
    before = pickle.dumps(model)
    for name, value in refused.items():
        valid = model.get_params()[name]
        model.set_params(**{name: value})
        with pytest.raises(ValueError, match=f"The '{name}' parameter of {type(model).__name__}"):
            model.partial_fit(X[:1], target[:1])
        model.set_params(**{name: valid})
        assert pickle.dumps(model) == before
    model.set_params(max_iter=7)  # valid: the call learns
    model.partial_fit(X[:1], target[:1])
    assert model.n_features_in_ == X.shape[1] and pickle.dumps(model) != before


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("path", ["short", "general"])
def test_unchanged_parameters_are_checked_once(est, path, monkeypatch):
    """A continuing call checks the parameters only when one has changed
    since they last passed (on the general path the check and get_params
    cost a quarter of a one-row call): a changed value, or an equal one of
    another type, is checked again, on either path."""
    X, y = _data()
    target = y.astype(float) if isinstance(est, ImplicitFTRLRegressor) else y
    model = _fitted(est, X, y)
    if path == "general":
        monkeypatch.setattr(_short_calls, "SHORT_CHUNK_ROWS", 0)
    checks = []
    check = type(model)._validate_params
    monkeypatch.setattr(type(model), "_validate_params",
                        lambda self: checks.append(self) or check(self))
    for _ in range(3):
        model.partial_fit(X[:1], target[:1])
    assert len(checks) == 1
    model.set_params(max_iter=model.max_iter + 1)
    model.partial_fit(X[:1], target[:1])
    model.set_params(tol=None if model.tol is not None else 1e-3)
    model.partial_fit(X[:1], target[:1])
    assert len(checks) == 3
    before = pickle.dumps(model)
    model.set_params(max_iter=float(model.max_iter))  # equal, another type: refused
    with pytest.raises(ValueError, match="The 'max_iter' parameter"):
        model.partial_fit(X[:1], target[:1])
    model.set_params(max_iter=int(model.max_iter))
    assert pickle.dumps(model) == before


def test_a_random_state_instance_is_rewound_on_failure():
    X, y = _data()
    rng = np.random.RandomState(7)
    model = AdaGradClassifier(random_state=rng, max_iter=3, tol=None)
    with pytest.raises(ValueError):
        model.fit(X, y, sample_weight=-np.ones(X.shape[0]))
    assert rng.randint(10**9) == np.random.RandomState(7).randint(10**9)


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_partial_fit_continues_a_model_loaded_read_only(est, tmp_path):
    X, y = _data()
    target = y.astype(float) if isinstance(est, ImplicitFTRLRegressor) else y
    model = _fitted(est, X, y)
    path = tmp_path / "model.joblib"
    joblib.dump(model, path)
    loaded = joblib.load(path, mmap_mode="r")
    expected = pickle.loads(pickle.dumps(model)).partial_fit(X, target)
    loaded.partial_fit(X, target)
    np.testing.assert_array_equal(loaded.coef_, expected.coef_)
    assert loaded.t_ == expected.t_ and loaded.n_iter_ == expected.n_iter_


# -- values ----------------------------------------------------------------------
@pytest.mark.parametrize("class_weight", [{-1: -1.0, 1: 1.0}, {-1: np.nan, 1: 1.0},
                                          {-1: np.inf, 1: 1.0}, {-1: "a", 1: 1.0}])
def test_invalid_class_weights_are_refused(class_weight):
    X, y = _data()
    with pytest.raises(ValueError, match="class_weight values must be finite"):
        AdaGradClassifier(class_weight=class_weight).fit(X, y)


def test_all_zero_combined_weights_are_an_error_in_fit():
    X, y = _data()
    with pytest.raises(ValueError, match="at least one non-zero"):
        AdaGradClassifier(class_weight={-1: 0.0, 1: 0.0}).fit(X, y)
    sample_weight = (y == 1).astype(float)  # only positives weigh ...
    with pytest.raises(ValueError, match="at least one non-zero"):
        AdaGradClassifier(class_weight={-1: 1.0, 1: 0.0}).fit(  # ... and count 0
            X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("where", ["X", "sample_weight", "y"])
def test_values_whose_squares_overflow_are_refused(where):
    X, y = _data()
    X, target, sample_weight = X.toarray(), y.astype(float), np.ones(X.shape[0])
    {"X": X, "sample_weight": sample_weight, "y": target}[where][3] = 1e150
    est = ImplicitFTRLRegressor() if where == "y" else AdaGradClassifier()
    with pytest.raises(ValueError, match=f"{where} holds values of magnitude 1e\\+150"):
        est.fit(X, target if where == "y" else y, sample_weight=sample_weight)
    if where == "X":  # and the NaN of a row is scikit-learn's error, as before
        X[3] = np.nan
        with pytest.raises(ValueError, match="Input X contains NaN"):
            est.fit(X, y)


def test_products_of_large_inputs_are_refused():
    X, y = _data()
    X = X.toarray() * 1e80
    with pytest.raises(ValueError, match="multiply to"):
        AdaGradClassifier().fit(X, y, sample_weight=np.full(X.shape[0], 1e80))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_large_but_safe_values_are_learnt(est):
    """The same problem with X scaled by 1e100: a finite model that fits the
    training rows about as well as at scale 1."""
    X, y = _data()
    small, large = _fitted(est, X, y), _fitted(est, X * 1e100, y)
    assert np.all(np.isfinite(large.coef_)) and np.any(large.coef_)
    if isinstance(est, ImplicitFTRLRegressor):
        assert np.all(np.isfinite(large.predict(X * 1e100)))
    else:
        assert large.score(X * 1e100, y) >= small.score(X, y) - 0.1


def test_data_layer_reductions():
    values = np.array([0.5, -3.0, 2.0])
    indptr = np.array([0, 3, 3, 5])  # an empty row in the middle
    assert _scan_indices(np.array([0, 2, 5, 1, 4]), indptr, 6) == (0, 0)
    assert _scan_indices(np.array([0, 2, 2, 1, 4]), indptr, 6) == (0, 1)  # duplicate
    assert _scan_indices(np.array([0, 2, 5, 4, 1]), indptr, 6) == (0, 1)  # unsorted
    assert _scan_indices(np.array([-1, 2, 6, 1, 4]), indptr, 6) == (2, 0)
    for dtype in (np.int32, np.int64):
        indices = np.array([3, 1, -2, 7], dtype=dtype)
        assert _scan_indices(indices, np.array([0, 4], dtype=dtype), 7) == (2, 2)
    assert all_finite(values) and all_finite(np.zeros(0))
    assert all_finite(np.full((3, 4), 1e308))  # the sum overflows, the values are fine
    for bad in (np.nan, np.inf, -np.inf):
        assert not all_finite(np.r_[values, bad])
        assert not all_finite(np.r_[np.full(70000, 1e308), bad])
        # every layout the compiled pass reads in place, or hands to NumPy:
        # float32, non-contiguous, swapped bytes, in the tail of a block of 4
        for position in (0, 1, 2, 3, 4, 9):
            base = np.arange(10, dtype=np.float64)
            base[position] = bad
            for layout in (base, base.astype(np.float32), base.astype(">f8"),
                           np.repeat(base, 2)[::2], base.reshape(2, 5).T):
                assert not all_finite(layout), (position, layout.dtype, layout.strides)
                assert all_finite(np.where(np.isfinite(layout), layout, 0.0).astype(
                    layout.dtype))
    # the check of the fitted state names the first array that is not finite
    assert first_nonfinite([values, np.zeros((2, 2)), np.array([np.nan]), values[::2]]) == 2
    assert first_nonfinite([values, np.array([1.0, np.inf], dtype=np.float32)]) == 1
    assert first_nonfinite([]) == -1


RACE = """
import sys, threading
import numpy as np, scipy.sparse as sp
from sklearn_adaprox import {name}
est = {name}()
rng = np.random.RandomState(0)
wide = sp.random(200, 40, density=0.3, random_state=rng, format="csr")
narrow = sp.random(200, 5, density=0.5, random_state=rng, format="csr")
y = np.arange(200) % 2
errors = []
def run(X):
    for _ in range(30):
        try:
            est.partial_fit(X, y, classes=[0, 1])
            est.decision_function(X)
        except ValueError as exc:  # a race must end in an exception
            errors.append(str(exc))
threads = [threading.Thread(target=run, args=(X,)) for X in (wide, narrow, wide)]
for t in threads: t.start()
for t in threads: t.join()
print(len(errors))
"""


@pytest.mark.parametrize("name", ["AdaGradClassifier", "PairwiseAUCClassifier",
                                  "ImplicitFTRLClassifier", "RDAPlusClassifier"])
def test_one_estimator_raced_by_threads_raises_instead_of_crashing(name, tmp_path):
    """Two widths streamed into one estimator from three threads: calls may
    fail with a Python exception (a ValueError for the width mismatch, or an
    error of a call that meets another thread's half-replaced state), never
    with a crash of the process (a failure about 1 run in 40 until RDA+
    checked its reservoir, see test_rda_plus.py)."""
    import subprocess
    import sys
    # run outside the checkout, so that the child imports the installed
    # package (a regular install leaves no compiled modules in the checkout)
    result = subprocess.run([sys.executable, "-c", RACE.format(name=name)],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    # the head of a sanitizer report holds the trace; its tail only a legend
    assert result.returncode == 0, result.stderr[:3000]
    assert "Exception ignored" not in result.stderr, result.stderr[:3000]


# -- precision -------------------------------------------------------------------
FLOAT32_ESTIMATORS = [
    AdaGradClassifier(random_state=0),
    AdaGradClassifier(update="mirror_descent", penalty="l1", alpha=1e-3,
                      random_state=0),
    AdaGradClassifier(update="ftrl_proximal", random_state=0),
    AdaGradClassifier(multi_class="multinomial", random_state=0),
    AdaGradClassifier(penalty="linf", alpha=1e-3, random_state=0),
    AdaGradClassifier(matrix="full", max_iter=3, tol=None, random_state=0),
    PairwiseAUCClassifier(random_state=0),
    PairwiseAUCClassifier(average=True, random_state=0),
    ImplicitFTRLClassifier(random_state=0),
    ImplicitFTRLClassifier(loss="log_loss", update="twostep", random_state=0),
    ImplicitFTRLRegressor(random_state=0),
    ImplicitFTRLRegressor(update="linear", random_state=0),
    RDAPlusClassifier(random_state=0),
]


@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("est", FLOAT32_ESTIMATORS, ids=repr)
def test_float32_and_float64_with_the_same_values_give_the_same_model(est, layout):
    """Everything computed from the data (sums, products, the constants
    estimated from it) is float64 whatever the dtype of X.  RDA+'s local
    phase takes BLAS products of float32 input in float64 blocks, which
    round differently from one product of the whole float64 matrix: equal to
    round-off there (doc/contract.md)."""
    from sklearn.base import clone
    rng = np.random.RandomState(0)
    X = rng.rand(300, 12).astype(np.float32)
    X[X < 0.4] = 0
    y = (X[:, 0] + X[:, 1] > 0.8).astype(int)
    if isinstance(est, ImplicitFTRLRegressor):
        y = X @ rng.randn(12) + 0.1 * rng.randn(300)
    X32 = X if layout == "dense" else sp.csr_matrix(X)
    X64 = X32.astype(np.float64)
    m32, m64 = clone(est).fit(X32, y), clone(est).fit(X64, y)
    atol = 1e-10 if isinstance(est, RDAPlusClassifier) else 0
    np.testing.assert_allclose(m32.coef_, m64.coef_, rtol=0, atol=atol)
    np.testing.assert_allclose(m32.intercept_, m64.intercept_, rtol=0, atol=atol)


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_scoring_shortcut_gives_the_general_paths_scores_and_errors(est):
    """decision_function / predict take a shortcut for CSR and ndarray input
    of float64/float32 of the fitted width: the same numbers as the general
    validation path (COO and list input go through it), bit for bit, and
    input that the shortcut cannot vouch for still gets scikit-learn's
    error.  A wide model computes only the weights of a row's columns."""
    X, y = _data(n=80, d=3000)
    model = _fitted(est, X, y)
    score = model.predict if isinstance(model, ImplicitFTRLRegressor) else model.decision_function
    for rows in (X[:1], X[5:9], X[:0]):
        if rows.shape[0] == 0:
            with pytest.raises(ValueError, match="0 sample"):
                score(rows)
            continue
        general = score(rows.tocoo())
        for fast in (rows, sp.csr_array(rows), rows.astype(np.float32)):
            np.testing.assert_array_equal(score(fast), score(fast.tocoo()))
        np.testing.assert_array_equal(score(rows), general)
        dense = rows.toarray()
        np.testing.assert_array_equal(score(dense), score(dense.tolist()))
    bad = _copy(X[:2])
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        score(bad)
    with pytest.raises(ValueError, match="infinity"):
        score(np.full((1, 3000), np.inf))
    with pytest.raises(ValueError, match="features"):
        score(X[:1, :2999])
