"""The short path of calls on a few rows (_short_calls: AdaGradClassifier,
the implicit FTRL estimators and PairwiseAUCClassifier):
the model of the general path, bit for bit, the same refusals with the same
messages, and all or nothing."""
import functools
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

from sklearn_adaprox import (AdaGradClassifier, ImplicitFTRLClassifier, ImplicitFTRLRegressor,
                              PairwiseAUCClassifier, _short_calls)
from sklearn_adaprox._base import BaseOnlineLinearClassifier, BaseOnlineLinearModel


def _stream(n_rows=120, n_features=40, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n_rows, n_features, density=0.15, format="csr", random_state=rng)
    scores = X @ rng.standard_normal((n_features, n_classes))
    y = scores.argmax(axis=1) if n_classes > 2 else (scores[:, 0] > 0).astype(int)
    return X, y


def _chunks(n_rows, start):
    """Chunks of 1, 2 and 3 rows from ``start``."""
    size = 1
    while start < n_rows:
        yield slice(start, min(start + size, n_rows))
        start += size
        size = size % 3 + 1


@pytest.fixture
def general_calls(monkeypatch):
    """A list that grows by one at every call through the general path."""
    calls = []
    transaction = BaseOnlineLinearModel._transaction

    def counted(self, *args):
        calls.append(self)
        return transaction(self, *args)

    monkeypatch.setattr(BaseOnlineLinearModel, "_transaction", counted)
    return calls


def _assert_same_model(a, b):
    assert sorted(a.__dict__) == sorted(b.__dict__)
    for name, value in a.__dict__.items():
        if isinstance(value, np.ndarray):
            assert_array_equal(value, b.__dict__[name], err_msg=name)
            assert value.dtype == b.__dict__[name].dtype
        elif isinstance(value, list):  # NaN for a call of no opposite pair: equal
            assert_array_equal(value, b.__dict__[name], err_msg=name)
        elif name != "_state_version":
            assert value == b.__dict__[name], name
    assert_array_equal(a.coef_, b.coef_)


# the multinomial AdaGrad model, beside the others in the tests that take a model type
Multinomial = functools.partial(AdaGradClassifier, multi_class="multinomial")


def _twins(X, y, classes, **params):
    """Two models fitted on the first rows: one to stream through the short
    path, one through the general path (which sample weights take)."""
    first = slice(0, 10)
    return [AdaGradClassifier(random_state=0, **params).partial_fit(
        X[first], y[first], classes=classes) for _ in range(2)]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet", None])
@pytest.mark.parametrize("update", ["dual_averaging", "mirror_descent", "ftrl_proximal"])
def test_short_calls_give_the_general_path_model(update, penalty, n_classes, general_calls):
    X, y = _stream(n_classes=n_classes)
    classes = np.arange(n_classes)
    params = dict(update=update, penalty=penalty, alpha=1e-2, l1_ratio=0.3)
    quick, general = _twins(X, y, classes, **params)
    del general_calls[:]
    for rows in _chunks(X.shape[0], 10):
        quick.partial_fit(X[rows], y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    # every call of `quick` took the short path, every one of `general` not
    assert quick not in general_calls and general in general_calls
    _assert_same_model(quick, general)
    # scores of a few rows: the short path against the general one
    for rows in _chunks(20, 0):
        assert_array_equal(quick._scores(X[rows]),
                           BaseOnlineLinearClassifier._scores(general, X[rows]))
        # and the product with coef_ (dense: BLAS sums in its own order)
        np.testing.assert_allclose(
            quick.decision_function(X[rows]),
            (X[rows].toarray() @ general.coef_.T + general.intercept_).squeeze(axis=1)
            if n_classes == 2 else X[rows].toarray() @ general.coef_.T + general.intercept_,
            rtol=1e-12, atol=1e-14)
    # intercept_ is a new array at every call, as the general path's: the
    # one a user kept stays what it was
    kept, value = quick.intercept_, quick.intercept_.copy()
    quick.partial_fit(X[:1], y[:1])
    assert quick.intercept_ is not kept
    assert_array_equal(kept, value)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet", None, "l1_l2", "l1_linf"])
@pytest.mark.parametrize("update", ["dual_averaging", "mirror_descent", "ftrl_proximal"])
def test_multinomial_short_calls_give_the_general_path_model(update, penalty, n_classes,
                                                            general_calls):
    if update == "ftrl_proximal" and penalty in ("l1_l2", "l1_linf"):
        pytest.skip("FTRL-Proximal takes element-wise penalties only")
    X, y = _stream(n_classes=n_classes)
    quick, general = _twins(X, y, np.arange(n_classes), multi_class="multinomial",
                            update=update, penalty=penalty, alpha=1e-2, l1_ratio=0.3)
    del general_calls[:]
    for rows in _chunks(X.shape[0], 10):
        quick.partial_fit(X[rows], y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    assert quick not in general_calls and general in general_calls
    _assert_same_model(quick, general)
    # scores of a few rows: the short path (it takes them) against the general one
    for rows in _chunks(20, 0):
        assert _short_calls.short_scores(quick, X[rows]) is not None
        assert_array_equal(quick._scores(X[rows]),
                           BaseOnlineLinearClassifier._scores(general, X[rows]))
    # and with coef_ materialised (the general path then reads its columns)
    general.coef_
    assert_array_equal(quick._scores(X[:5]), BaseOnlineLinearClassifier._scores(general, X[:5]))
    # the per-class intercept arrays are new at every call, as the general
    # path's: those a user kept stay what they were
    kept = [(quick.__dict__[name], quick.__dict__[name].copy())
            for name in ("intercept_", "class_intercept_", "intercept_sum_gradient_")]
    quick.partial_fit(X[:1], y[:1])
    for array, value in kept:
        assert all(array is not quick.__dict__[name] for name in quick.__dict__)
        assert_array_equal(array, value)


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
@pytest.mark.parametrize("form", ["csr float32", "csr int64 indices", "csr_array",
                                  "dense float64", "dense float32"])
def test_every_plain_input_form_takes_the_short_path(form, multi_class, general_calls):
    X, y = _stream(n_classes=3)
    if form == "csr float32":
        X = X.astype(np.float32)
    elif form == "csr int64 indices":
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    elif form == "csr_array":
        X = sp.csr_array(X)
    elif form.startswith("dense"):
        X = X.toarray().astype(np.float32 if "32" in form else np.float64)
    labels = np.array(["a", "b", "c"])[y]
    quick, general = _twins(X, labels, ["a", "b", "c"], class_weight={"b": 2.5},
                            loss="log_loss", fit_intercept=False, multi_class=multi_class)
    del general_calls[:]
    for rows in _chunks(X.shape[0], 10):
        # labels as an array, a list, with classes repeated
        quick.partial_fit(X[rows], labels[rows].tolist(), classes=["c", "b", "a"])
        general.partial_fit(X[rows], labels[rows],
                            sample_weight=np.ones(rows.stop - rows.start))
    assert quick not in general_calls
    _assert_same_model(quick, general)


def test_changed_parameters_and_a_pickle_are_followed(general_calls):
    """A parameter set between calls (the short path's Problems are then
    rebuilt for it) and a model pickled mid-stream and resumed."""
    X, y = _stream()
    quick, general = _twins(X, y, [0, 1])
    for rows in _chunks(X.shape[0], 10):
        if rows.start == 40:
            quick.set_params(eta=0.3, update="mirror_descent")
            general.set_params(eta=0.3, update="mirror_descent")
        if rows.start == 70:
            quick = pickle.loads(pickle.dumps(quick))
        if rows.start == 100:
            quick.eta = general.eta = 0.05  # set directly, not by set_params
        quick.partial_fit(X[rows], y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    _assert_same_model(quick, general)


@pytest.mark.parametrize("model_type", [AdaGradClassifier, Multinomial, ImplicitFTRLClassifier])
def test_scores_of_the_short_path_follow_the_fitted_state(model_type):
    """decision_function on a few CSR rows: a parameter set after the
    fit does not change the scores (they are a function of the fitted
    state, as the general path's), and CSR arrays the scoring kernel cannot
    read go to the general path: strided ones get the scores of their
    canonical copy, two-dimensional ones its error."""
    X, y = _stream()
    model = model_type(random_state=0).partial_fit(X[:30], y[:30], classes=[0, 1])
    model.partial_fit(X[30:31], y[30:31])  # the short path is set up
    rows = X[40:43]
    assert _short_calls.short_scores(model, rows) is not None
    expected = BaseOnlineLinearModel._scores(model, rows)
    assert_array_equal(model._scores(rows), expected)
    model.set_params(**({"beta": 123.0} if model_type is ImplicitFTRLClassifier
                        else {"eta": 123.0, "alpha": 0.5}))
    assert_array_equal(model._scores(rows), expected)
    strided = rows.copy()
    strided.data = np.repeat(rows.data, 2)[::2]
    assert not strided.data.flags.c_contiguous
    two_d = rows.copy()
    two_d.indices = rows.indices[None, :]
    assert _short_calls.short_scores(model, strided) is None
    assert_array_equal(model._scores(strided), expected)
    assert _short_calls.short_scores(model, two_d) is None
    with pytest.raises(ValueError, match="indices has 2 dimensions"):
        model.decision_function(two_d)


def _bad_calls(X, y):
    row = X[3:4]
    nan, huge = row.copy(), row.copy()
    nan.data[0] = np.nan
    huge.data[0] = 1e150
    outside = sp.csr_matrix((row.data.copy(), row.indices.copy(), row.indptr.copy()),
                            shape=row.shape)
    outside.indices[0] = X.shape[1]
    return {
        "NaN": (nan, y[3:4], {}, "NaN"),
        "overflowing value": (huge, y[3:4], {}, "would overflow"),
        "index outside": (outside, y[3:4], {}, "Malformed sparse matrix"),
        "width": (sp.csr_matrix((1, X.shape[1] + 1)), y[3:4], {}, "features"),
        "unknown label": (row, np.array([7]), {}, "not in classes"),
        "labels of another length": (row, y[3:5], {}, "inconsistent numbers"),
        "2-d labels": (X[3:5], np.ones((2, 2), dtype=int), {}, "1d array"),
        "other classes": (row, y[3:4], {"classes": [0, 1, 2]}, "is not the same"),
        "negative weight": (row, y[3:4], {"sample_weight": [-1.0]}, "Negative"),
    }


@pytest.mark.parametrize("model_type", [AdaGradClassifier, Multinomial, PairwiseAUCClassifier])
@pytest.mark.parametrize("case", list(_bad_calls(*_stream())))
def test_what_the_short_path_declines_gets_the_general_message(case, model_type):
    X, y = _stream()
    model = model_type(random_state=0).partial_fit(X[:10], y[:10], classes=[0, 1])
    model.partial_fit(X[10:11], y[10:11])  # the short path is set up
    before = pickle.dumps(model)
    rows, labels, kwargs, message = _bad_calls(X, y)[case]
    with pytest.raises(ValueError, match=message):
        model.partial_fit(rows, labels, **kwargs)
    assert pickle.dumps(model) == before


def test_rows_the_short_path_does_not_take_as_they_are_are_learnt_by_the_general_one(
        general_calls):
    """Unsorted and repeated columns are valid input (repeats are summed):
    the general path takes them, with the sorted row's result."""
    X, y = _stream()
    quick, general = _twins(X, y, [0, 1])
    row = X[12:13]
    order = np.argsort(-row.indices)
    unsorted = sp.csr_matrix((row.data[order], row.indices[order], row.indptr),
                             shape=row.shape)
    halves = sp.csr_matrix((np.repeat(row.data / 2, 2), np.repeat(row.indices, 2),
                            2 * row.indptr), shape=row.shape)
    del general_calls[:]
    quick.partial_fit(unsorted, y[12:13])
    quick.partial_fit(halves, y[12:13])
    assert general_calls == [quick, quick]
    general.partial_fit(row, y[12:13])
    general.partial_fit(row, y[12:13])
    np.testing.assert_allclose(quick.coef_, general.coef_, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_a_short_call_that_overflows_the_state_raises_and_changes_nothing(multi_class,
                                                                          general_calls):
    """A step size so large that a pass makes mirror descent's weights
    infinite: the short path takes its pass back and hands the call to the
    general path, which raises.  (Multinomial: three classes, as two
    classes' intercept_, a difference of class intercepts of about 1e308,
    would overflow at the first call.)"""
    n_classes = 2 if multi_class == "ovr" else 3
    X, y = _stream(n_classes=n_classes)
    model = AdaGradClassifier(eta=1e308, update="mirror_descent",
                              multi_class=multi_class).partial_fit(
        X[:1], y[:1], classes=np.arange(n_classes))
    _assert_overflow_raises_and_changes_nothing(
        model, ((X[i:i + 1] * 1e100, y[i:i + 1]) for i in range(1, 30)), general_calls)


def _assert_overflow_raises_and_changes_nothing(model, chunks, general_calls):
    """Learn the chunks until one makes the state non-finite: that call
    raises (through the general path, the only call that reaches it) and
    leaves the model as it was."""
    del general_calls[:]
    for X, y in chunks:
        before = pickle.dumps(model)
        try:
            model.partial_fit(X, y)
        except ValueError as exc:
            assert "Floating-point overflow" in str(exc)
            assert pickle.dumps(model) == before
            assert general_calls == [model]  # only the failing call
            return
    pytest.fail("no pass overflowed")


def _near_overflow_in_problem_1(model, columns, label):
    """Make problem 1's pass over a row of ``columns`` and class ``label``
    overflow, and no other problem's: AdaGrad's root of a squared-gradient
    sum that squares to infinity; implicit FTRL's cumulative loss at the
    largest double, to which the row adds a loss of about 1e300."""
    if isinstance(model, AdaGradClassifier):
        model.accumulators_[1, columns, 1] = 1e200
    else:
        model.scaled_coef_[1, columns] = 1e300 if label != 1 else -1e300
        model.cumulative_loss_[1] = np.finfo(np.float64).max


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("model_type", [AdaGradClassifier, ImplicitFTRLClassifier])
def test_a_later_problem_failing_takes_back_the_earlier_ones(model_type, general_calls):
    """One-vs-rest: when the pass of problem 1 overflows, problem 0's is
    taken back (in the compiled call) before the call goes to the general
    path, which raises and leaves the model as it was: had problem 0 kept
    its step, the general path would have started, and ended, from it."""
    X, y = _stream(n_classes=3)
    model = model_type().partial_fit(X[:10], y[:10], classes=[0, 1, 2])
    model.partial_fit(X[10:11], y[10:11])
    _near_overflow_in_problem_1(model, X[11].indices, y[11])
    before = pickle.dumps(model)
    del general_calls[:]
    with pytest.raises(ValueError, match="Floating-point overflow"):
        model.partial_fit(X[11:12], y[11:12])
    assert general_calls == [model]
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("model_type", [AdaGradClassifier, Multinomial, ImplicitFTRLClassifier,
                                        PairwiseAUCClassifier])
def test_an_interrupted_short_call_changes_nothing(model_type, monkeypatch):
    """An interruption once the compiled passes are made (they cannot be
    interrupted themselves) takes them back."""
    n_classes = 2 if model_type is PairwiseAUCClassifier else 3  # (a binary ranker)
    X, y = _stream(n_classes=n_classes)
    model = model_type().partial_fit(X[:10], y[:10], classes=np.arange(n_classes))
    model.partial_fit(X[10:11], y[10:11])
    before = pickle.dumps(model)
    table = model._short_path_type.kernels
    key = (np.dtype(np.float64), np.dtype(np.int32))
    kernels = table[key]
    calls = []

    def interrupted_after_the_passes(*args):
        calls.append(kernels[0](*args))  # the passes' kernel
        raise KeyboardInterrupt

    monkeypatch.setitem(table, key, (interrupted_after_the_passes,) + kernels[1:])
    with pytest.raises(KeyboardInterrupt):
        model.partial_fit(X[11:13], y[11:13])
    assert len(calls) == 1 and calls[0] is not None  # the passes were made
    assert pickle.dumps(model) == before
    # and the next call is the one the interrupted call would have been
    monkeypatch.setitem(table, key, kernels)
    twin = pickle.loads(before)
    model.partial_fit(X[11:13], y[11:13])
    twin.partial_fit(X[11:13], y[11:13], sample_weight=np.ones(2))
    _assert_same_model(model, twin)


# ----------------------------------------------------------------------
# implicit FTRL (classifier and regressor): the same promises

def _ftrl_twins(kind, X, y, **params):
    """Two implicit FTRL models fitted on the first rows (which fix G):
    one to stream through the short path, one through the general path."""
    first = slice(0, 10)
    if kind == "regressor":
        return [ImplicitFTRLRegressor(**params).partial_fit(X[first], y[first])
                for _ in range(2)]
    classes = np.unique(y)
    return [ImplicitFTRLClassifier(**params).partial_fit(X[first], y[first], classes=classes)
            for _ in range(2)]


def _ftrl_stream(kind, seed=0):
    if kind == "regressor":
        rng = np.random.RandomState(seed)
        X = sp.random(120, 40, density=0.15, format="csr", random_state=rng)
        return X, X @ rng.standard_normal(40) + 0.1 * rng.standard_normal(120)
    return _stream(n_classes=3 if kind == "3 classes" else 2, seed=seed)


FTRL_KINDS = ["2 classes", "3 classes", "regressor"]
FTRL_LOSSES = {"2 classes": ["hinge", "log_loss"], "3 classes": ["log_loss"],
               "regressor": ["squared_error", "absolute_error", "epsilon_insensitive",
                             "huber"]}


@pytest.mark.parametrize("update", ["linear", "truncated", "twostep", "proximal"])
@pytest.mark.parametrize("kind, loss", [(kind, loss) for kind in FTRL_KINDS
                                        for loss in FTRL_LOSSES[kind]])
@pytest.mark.parametrize("dense", [False, True])
def test_implicit_ftrl_short_calls_give_the_general_path_model(kind, loss, update, dense,
                                                               general_calls):
    X, y = _ftrl_stream(kind)
    if dense:
        X = X.toarray()
    quick, general = _ftrl_twins(kind, X, y, loss=loss, update=update)
    del general_calls[:]
    for rows in _chunks(X.shape[0], 10):
        # labels as a list too
        quick.partial_fit(X[rows], y[rows].tolist() if rows.start % 2 else y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    assert quick not in general_calls and general in general_calls
    _assert_same_model(quick, general)
    if not dense:  # scores of a few CSR rows: the short path against the general one
        # (the last chunk covers more columns than it leaves out, where the
        # general path multiplies by the whole coef_)
        for rows in [*_chunks(20, 0), slice(0, 40)]:
            short = _short_calls.short_scores(quick, X[rows])
            assert short is not None
            assert_array_equal(short, BaseOnlineLinearModel._scores(general, X[rows]))
            assert_array_equal(quick.predict(X[rows]), general.predict(X[rows]))
    # scaled_intercept_ and intercept_ are new arrays at every call, as the
    # general path's: the ones a user kept stay what they were
    kept, value = quick.intercept_, quick.intercept_.copy()
    quick.partial_fit(X[:1], y[:1])
    assert quick.intercept_ is not kept
    assert_array_equal(kept, value)


@pytest.mark.parametrize("kind", FTRL_KINDS)
def test_implicit_ftrl_changed_parameters_and_a_pickle_are_followed(kind, general_calls):
    X, y = _ftrl_stream(kind)
    quick, general = _ftrl_twins(kind, X, y, update="linear")
    weights = {} if kind == "regressor" else {"class_weight": {y[0]: 2.0}}
    for rows in _chunks(X.shape[0], 10):
        if rows.start == 40:
            quick.set_params(update="proximal", **weights)
            general.set_params(update="proximal", **weights)
        if rows.start == 70:
            quick = pickle.loads(pickle.dumps(quick))
        if rows.start == 100:
            quick.update = general.update = "twostep"  # set directly
        quick.partial_fit(X[rows], y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    _assert_same_model(quick, general)


def test_implicit_ftrl_calls_before_g_is_fixed_take_the_general_path(general_calls):
    """G (and lambda) are fixed by the first call with a non-zero weight,
    from its data: until then every call is the general path's."""
    X, y = _ftrl_stream("regressor")
    quick = ImplicitFTRLRegressor().partial_fit(X[:3], y[:3], sample_weight=np.zeros(3))
    general = ImplicitFTRLRegressor().partial_fit(X[:3], y[:3], sample_weight=np.zeros(3))
    del general_calls[:]
    quick.partial_fit(X[3:4], y[3:4])
    assert general_calls == [quick]
    quick.partial_fit(X[4:6], y[4:6])
    assert general_calls == [quick]
    general.partial_fit(X[3:4], y[3:4], sample_weight=[1.0])
    general.partial_fit(X[4:6], y[4:6], sample_weight=[1.0, 1.0])
    _assert_same_model(quick, general)


@pytest.mark.parametrize("case", ["NaN target", "string target", "2-d target",
                                  "huber without epsilon", "NaN", "width"])
def test_implicit_ftrl_what_the_short_path_declines_gets_the_general_message(case):
    X, y = _ftrl_stream("regressor")
    model = ImplicitFTRLRegressor(loss="huber", epsilon=1.0).partial_fit(X[:10], y[:10])
    model.partial_fit(X[10:11], y[10:11])  # the short path is set up
    before = pickle.dumps(model)
    row, target = X[3:4], y[3:4]
    message = {"NaN target": "NaN", "string target": "convert",
               "2-d target": "1d array", "huber without epsilon": "epsilon must be",
               "NaN": "NaN", "width": "features"}[case]
    if case == "NaN target":
        target = np.array([np.nan])
    elif case == "string target":
        target = np.array(["a"])
    elif case == "2-d target":
        row, target = X[3:5], np.ones((2, 2))
    elif case == "huber without epsilon":
        model.epsilon = 0.0
    elif case == "NaN":
        row = row.copy()
        row.data[0] = np.nan
    else:
        row = sp.csr_matrix((1, X.shape[1] + 1))
    with pytest.raises(ValueError, match=message):
        model.partial_fit(row, target)
    if case == "huber without epsilon":
        model.epsilon = 1.0
    assert pickle.dumps(model) == before


def test_implicit_ftrl_a_short_call_that_overflows_raises_and_changes_nothing(
        general_calls):
    """Targets and rows so large that a pass makes the state non-finite:
    the short path puts the state back and hands the call to the general
    path, which raises."""
    X, y = _ftrl_stream("regressor")
    model = ImplicitFTRLRegressor(update="linear", beta=1e-30).partial_fit(X[:10], y[:10])
    _assert_overflow_raises_and_changes_nothing(
        model, ((X[i:i + 1] * 1e60, y[i:i + 1] * 1e70) for i in range(10, 60)),
        general_calls)


_DAMAGES = {
    "float32": lambda a: a.astype(np.float32),
    "byte-swapped": lambda a: a.astype(a.dtype.newbyteorder()),
    "strided": lambda a: np.repeat(a, 2)[::2],
}


def _damaged_calls(model, name, damage, X, y):
    """``(twin, errors)``: the state array ``name`` of the model and of its
    pickled twin replaced by ``damage`` of it, then row 11 learnt by each,
    the model's call as a stream makes it (the short path's to try), the
    twin's with a sample weight (the general path's); ``errors`` their
    ValueError messages (None: the call was made)."""
    twin = pickle.loads(pickle.dumps(model))
    for est in (model, twin):  # (unpickling may repair an array)
        setattr(est, name, damage(getattr(est, name)))
    errors = []
    for est, weights in ((model, None), (twin, [1.0])):
        try:
            est.partial_fit(X[11:12], y[11:12], sample_weight=weights)
            errors.append(None)
        except ValueError as exc:
            errors.append(str(exc))
    return twin, errors


@pytest.mark.parametrize("model_type, name", [
    (AdaGradClassifier, "intercept_"), (AdaGradClassifier, "intercept_sum_gradient_"),
    (Multinomial, "class_intercept_"), (Multinomial, "intercept_sum_sq_gradient_"),
    (ImplicitFTRLClassifier, "lambda_"), (ImplicitFTRLClassifier, "cumulative_weight_")])
@pytest.mark.parametrize("damage", list(_DAMAGES))
def test_a_state_array_the_kernel_cannot_read_goes_to_the_general_path(model_type, name,
                                                                       damage, general_calls):
    """A per-problem array a user replaced by one of another type, byte
    order or layout: the compiled calls refuse it (the kernels read these
    arrays in place: _dataset.float64_values), having changed nothing, and
    the general path makes the call (and does not take back the call
    before it) or raises the error it raises for it, and scores the rows."""
    X, y = _stream(n_classes=3)
    model = model_type().partial_fit(X[:10], y[:10], classes=[0, 1, 2])
    model.partial_fit(X[10:11], y[10:11])
    del general_calls[:]
    twin, errors = _damaged_calls(model, name, _DAMAGES[damage], X, y)
    assert general_calls == [model, twin]
    assert errors[0] == errors[1]
    _assert_same_model(model, twin)
    if errors[0] is None:
        for est in (model, twin):
            setattr(est, name, _DAMAGES[damage](getattr(est, name)))
        # CSR rows, tried by the short path, and dense ones: the general
        # path's, the same scores for the two models; CSR against dense to
        # rounding only (a dense product is BLAS's, in its own order of sums,
        # which depends on the CPU)
        sparse_rows, dense_rows = X[12:14], X[12:14].toarray()
        for rows in (sparse_rows, dense_rows):
            assert_array_equal(model.decision_function(rows), twin.decision_function(rows))
        np.testing.assert_allclose(model.decision_function(sparse_rows),
                                   twin.decision_function(dense_rows), rtol=1e-12)


# ----------------------------------------------------------------------
# one row and its label in a list: the stream's call, read without numpy

def _as(kind, label):
    """``label`` as a value of the Python or numpy type ``kind``."""
    return {"int": int, "float": float, "bool": bool, "numpy int": np.int64,
            "numpy float": np.float64, "numpy bool": np.bool_, "str": str,
            "numpy str": np.str_}[kind](label)


@pytest.mark.parametrize("model_type", [AdaGradClassifier, Multinomial, ImplicitFTRLClassifier])
@pytest.mark.parametrize("label_type", ["int", "float", "bool", "numpy int", "numpy float",
                                        "numpy bool", "str", "numpy str"])
@pytest.mark.parametrize("container", [list, np.array])
def test_one_label_gives_the_general_path_model(model_type, label_type, container,
                                                general_calls):
    X, y = _stream()
    if "str" in label_type:
        y = np.array(["no", "yes"])[y]
    elif "bool" in label_type:
        y = y.astype(bool)
    quick, general = (model_type().partial_fit(X[:10], y[:10], classes=np.unique(y))
                      for _ in range(2))
    del general_calls[:]
    for i in range(10, 60):
        quick.partial_fit(X[i:i + 1], container([_as(label_type, y[i])]))
        general.partial_fit(X[i:i + 1], y[i:i + 1], sample_weight=[1.0])
    assert quick not in general_calls
    _assert_same_model(quick, general)


@pytest.mark.parametrize("container", [list, np.array])
def test_one_target_gives_the_general_path_model(container, general_calls):
    """A regressor's one target, a float, a numpy float or an int (which a
    list hands to numpy first), in a list or an array."""
    X, y = _ftrl_stream("regressor")
    quick, general = _ftrl_twins("regressor", X, y)
    del general_calls[:]
    for i in range(10, 60):
        target = round(y[i]) if i % 3 == 0 else (float(y[i]) if i % 3 == 1 else y[i])
        quick.partial_fit(X[i:i + 1], container([target]))
        general.partial_fit(X[i:i + 1], np.array([target], dtype=float), sample_weight=[1.0])
    assert quick not in general_calls
    _assert_same_model(quick, general)


def test_the_average_loss_of_many_problems_is_the_general_path_s():
    """Sixteen one-vs-rest problems: the short path's kernel sums their
    cumulative losses in order, as the general path does."""
    X, y = _stream(n_rows=200, n_classes=16, seed=1)
    quick, general = (ImplicitFTRLClassifier().partial_fit(X[:20], y[:20], classes=np.arange(16))
                      for _ in range(2))
    for i in range(20, 80):
        quick.partial_fit(X[i:i + 1], [int(y[i])])
        general.partial_fit(X[i:i + 1], y[i:i + 1], sample_weight=[1.0])
    losses = quick.cumulative_loss_
    # numpy pairs eight or more values: here that sum differs in its last bits
    assert float(losses.sum()) != sum(losses.tolist())
    assert quick.average_loss_ == general.average_loss_
    assert quick.average_loss_ == sum(losses.tolist()) / quick.cumulative_weight_[0]


@pytest.mark.parametrize("model_type, label, message", [
    (AdaGradClassifier, 7, "not in classes"),
    (AdaGradClassifier, 1.5, "Unknown label type"),
    (ImplicitFTRLClassifier, "1", "not in classes"),
    (ImplicitFTRLRegressor, np.nan, "NaN"),
    (ImplicitFTRLRegressor, np.inf, "infinity"),
    (ImplicitFTRLRegressor, "a", "convert"),
])
@pytest.mark.parametrize("container", [list, np.array])
def test_one_label_the_short_path_declines_gets_the_general_message(
        model_type, label, message, container):
    X, y = _ftrl_stream("regressor") if model_type is ImplicitFTRLRegressor else _stream()
    model = (model_type().partial_fit(X[:10], y[:10]) if model_type is ImplicitFTRLRegressor
             else model_type().partial_fit(X[:10], y[:10], classes=[0, 1]))
    model.partial_fit(X[10:11], y[10:11])  # the short path is set up
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=message):
        model.partial_fit(X[11:12], container([label]))
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("container", [list, np.array])
def test_classes_the_short_path_cannot_read_go_to_the_general_path(container):
    """classes with unhashable entries, beside one label: the general path
    decides (before, the one-label read raised the TypeError of a set)."""
    X, y = _stream()
    quick, general = _twins(X, y, [0, 1])
    quick.partial_fit(X[10:11], y[10:11])  # the short path is set up
    general.partial_fit(X[10:11], y[10:11], sample_weight=[1.0])
    outcomes = []
    for model, kwargs in ((quick, {}), (general, {"sample_weight": [1.0]})):
        try:
            model.partial_fit(X[11:12], container([int(y[11])]), classes=[[0, 1]], **kwargs)
            outcomes.append("learnt")
        except (ValueError, TypeError) as exc:
            outcomes.append((type(exc), str(exc)))
    assert outcomes[0] == outcomes[1]
    _assert_same_model(quick, general)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_a_two_class_multinomial_intercept_that_overflows_goes_to_the_general_path(
        general_calls):
    """Two classes: intercept_ is the difference of the class intercepts,
    which may overflow while both are finite.  Here sums set by hand make
    the next step's class intercepts -eta u / (delta + |d|) about -+0.95e308
    (d the step's gradient, +-(1 - p_y)).  The short path must not publish
    the infinite difference: the general path raises, and the model is as
    it was."""
    X, y = _stream()
    model = Multinomial(loss="log_loss").partial_fit(X[:10], y[:10], classes=[0, 1])
    model.partial_fit(X[10:11], y[10:11])  # the short path is set up
    gradient = 1.0 - model.predict_proba(X[11:12])[0, y[11]]
    model.intercept_sum_gradient_[:] = [0.95e308 * gradient, -0.95e308 * gradient]
    model.intercept_sum_sq_gradient_[:] = 0.0
    before = pickle.dumps(model)
    del general_calls[:]
    with pytest.raises(ValueError, match="overflow in this partial_fit call: intercept_"):
        model.partial_fit(X[11:12], y[11:12])
    assert general_calls == [model]
    assert pickle.dumps(model) == before


# ----------------------------------------------------------------------
# PairwiseAUCClassifier: the same promises, while its weights move by their
# momentum alone (no projection, no averaging)

def _pairwise_twins(X, y, **params):
    """Two pairwise AUC models fitted on the first rows (which resolve
    eta="auto"): one to stream through the short path, one through the
    general path."""
    return [PairwiseAUCClassifier(**params).partial_fit(X[:10], y[:10], classes=[0, 1])
            for _ in range(2)]


@pytest.mark.parametrize("params", [
    {}, {"loss": "log_loss"}, {"loss": "square"}, {"adaptive": "coordinate"},
    {"algorithm": "ogd"}, {"algorithm": "aogd_strongly_convex"}, {"theta": 0.5},
    {"theta": 0.9}, {"eta": 0.3, "fit_intercept": False}, {"class_weight": {0: 3.0}}])
@pytest.mark.parametrize("dense", [False, True])
def test_pairwise_auc_short_calls_give_the_general_path_model(params, dense, general_calls):
    """Row by row (the partner of each step is the previous call's last
    row) and in chunks: the same state, the intercept_ and score
    statistics new arrays at every call, as the general path's."""
    X, y = _stream()
    if dense:
        X = X.toarray()
    quick, general = _pairwise_twins(X, y, **params)
    del general_calls[:]
    for rows in _chunks(X.shape[0], 10):
        kept, value = quick.intercept_, quick.intercept_.copy()
        quick.partial_fit(X[rows], y[rows].tolist() if rows.start % 2 else y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
        assert quick.intercept_ is not kept
        assert_array_equal(kept, value)
    assert quick not in general_calls and general in general_calls
    _assert_same_model(quick, general)
    assert np.count_nonzero(quick.momentum_) > 0  # the momentum moved idle weights


@pytest.mark.parametrize("dense", [False, True])
def test_pairwise_auc_a_partner_in_another_order_gives_the_general_path_model(dense,
                                                                             general_calls):
    """The short call merges the sorted lists of the columns it can change;
    a partner row stored with its entries in another order (a state edited
    by hand: a pass stores its rows' order) is sorted for the merge and
    read as it is, as the general path reads it: the same model."""
    X, y = _stream()
    quick, general = _pairwise_twins(X, y)
    for model in (quick, general):
        model.partial_fit(X[10:12], y[10:12], sample_weight=np.ones(2))
        reverse = slice(None, None, -1)
        model.last_sample_indices_ = model.last_sample_indices_[reverse].copy()
        model.last_sample_values_ = model.last_sample_values_[reverse].copy()
    assert quick.last_sample_indices_.shape[0] > 1
    del general_calls[:]
    rows = X[12:14].toarray() if dense else X[12:14]
    quick.partial_fit(rows, y[12:14])
    general.partial_fit(rows, y[12:14], sample_weight=np.ones(2))
    assert general_calls == [general]
    _assert_same_model(quick, general)


def test_pairwise_auc_short_scores_are_the_general_path_s(general_calls):
    """decision_function on a few CSR rows: the stored coef_'s products
    summed as scipy sums them, the intercept added, whatever the parameters
    set since; rows the kernel cannot read are the general path's."""
    X, y = _stream()
    model = PairwiseAUCClassifier().partial_fit(X[:30], y[:30], classes=[0, 1])
    model.partial_fit(X[30:31], y[30:31])  # the short path is set up
    for rows in [*_chunks(20, 0), slice(0, 60)]:
        short = _short_calls.short_scores(model, X[rows])
        assert short is not None
        assert_array_equal(short, BaseOnlineLinearModel._scores(model, X[rows]))
    expected = model.decision_function(X[40:43])
    model.set_params(eta=123.0, average=True)
    assert_array_equal(model.decision_function(X[40:43]), expected)
    nan = X[40:43].copy()
    nan.data[0] = np.nan
    assert _short_calls.short_scores(model, nan) is None
    with pytest.raises(ValueError, match="NaN"):
        model.decision_function(nan)


@pytest.mark.parametrize("params", [{"radius": 1.0}, {"average": True}, {"verbose": 1},
                                    {"loss": "logistic"}, {"n_jobs": 1}])
def test_pairwise_auc_options_the_short_path_does_not_take(params, general_calls, capsys):
    """A projection or averaging moves every weight at every step, verbose
    output and the deprecation warnings are the general path's: those
    calls are its own, with its model."""
    X, y = _stream()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        model = PairwiseAUCClassifier(**params).partial_fit(X[:10], y[:10], classes=[0, 1])
        del general_calls[:]
        model.partial_fit(X[10:11], y[10:11])
    assert general_calls == [model]


def test_pairwise_auc_changed_parameters_and_a_pickle_are_followed(general_calls):
    """Parameters set between calls (by set_params or directly), averaging
    switched on and off (the general path's while it is on, and its sum
    kept after), and a model pickled mid-stream and resumed."""
    X, y = _stream()
    quick, general = _pairwise_twins(X, y)
    for rows in _chunks(X.shape[0], 10):
        if rows.start == 30:
            quick.set_params(loss="log_loss", theta=0.5)
            general.set_params(loss="log_loss", theta=0.5)
        if rows.start == 50:
            quick.average = general.average = True
        if rows.start == 70:
            quick.average = general.average = False
            quick = pickle.loads(pickle.dumps(quick))
        if rows.start == 100:
            quick.eta = general.eta = 0.05
        quick.partial_fit(X[rows], y[rows])
        general.partial_fit(X[rows], y[rows], sample_weight=np.ones(rows.stop - rows.start))
    _assert_same_model(quick, general)


def test_pairwise_auc_calls_before_eta_is_resolved_take_the_general_path(general_calls):
    """eta="auto" is resolved by the first call with a non-zero weight,
    from its rows: until then every call is the general path's."""
    X, y = _stream()
    model = PairwiseAUCClassifier().partial_fit(X[:3], y[:3], classes=[0, 1],
                                                sample_weight=np.zeros(3))
    del general_calls[:]
    model.partial_fit(X[3:4], y[3:4])
    assert general_calls == [model] and np.isfinite(model.eta_[0])
    model.partial_fit(X[4:5], y[4:5])
    assert general_calls == [model]


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
def test_pairwise_auc_a_short_call_that_overflows_raises_and_changes_nothing(general_calls):
    """A step size so large that a pass makes the weights infinite: the
    short path puts back the entries it kept and hands the call to the
    general path, which raises."""
    X, y = _stream()
    model = PairwiseAUCClassifier(eta=1e100).partial_fit(X[:10], y[:10], classes=[0, 1])
    _assert_overflow_raises_and_changes_nothing(
        model, ((X[i:i + 1] * 1e100, y[i:i + 1]) for i in range(10, 60)), general_calls)


_ROW_DAMAGES = {**_DAMAGES,  # of the rows of a 2-D array
                "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2]}


@pytest.mark.parametrize("name", ["iterate_", "momentum_", "score_stats_",
                                  "last_sample_values_"])
@pytest.mark.parametrize("damage", list(_ROW_DAMAGES))
def test_pairwise_auc_a_damaged_state_array_gets_the_general_path_outcome(name, damage,
                                                                          general_calls):
    """A state array a user replaced by one of another type, byte order or
    layout: the short path leaves what its kernel cannot read to the
    general path (having changed nothing), which makes the call or raises
    its error."""
    X, y = _stream()
    model = PairwiseAUCClassifier().partial_fit(X[:10], y[:10], classes=[0, 1])
    model.partial_fit(X[10:11], y[10:11])
    del general_calls[:]
    twin, errors = _damaged_calls(model, name, _ROW_DAMAGES[damage], X, y)
    assert general_calls == [model, twin]
    assert errors[0] == errors[1]
    _assert_same_model(model, twin)
