"""What every online linear model of sklearn_adaprox shares.

``BaseOnlineLinearModel`` (and its two faces ``BaseOnlineLinearClassifier``
and ``BaseOnlineLinearRegressor``) owns the scikit-learn contract: input
validation (all of it before any fitted state changes), label encoding
(+-1 inside the kernels, ``classes_`` outside), class and sample weights,
one-vs-rest over threads, the epoch loop with shuffling, progressive loss,
early stopping and verbose output, and ``fit`` / ``partial_fit`` /
``warm_start`` semantics.  An algorithm plugs in by defining

* ``_init_state(n_problems, n_features)``: create its fitted ``*_`` arrays;
* ``_run_epoch(k, rows, y, sample_weight, order)``: one pass of binary
  problem ``k`` (y in {-1, +1}) over ``rows[order]``, updating its own row of
  the fitted arrays in place and releasing the GIL; returns
  ``(sum of weight * loss, sum of weights)`` measured before each step.

A classifier may also override ``_problem_targets`` (to learn all classes as
one problem instead of one-vs-rest), ``_check_options`` (to refuse
parameter combinations that depend on the data, before any state changes)
and ``_run_problem_epochs`` (the passes of all its problems in one epoch,
e.g. in one compiled call).

An algorithm whose call is not a sequence of passes (RDA+: dual averaging,
then a batch local phase on the identified support) overrides ``_train``
instead of ``_run_epoch``: the work of a call once its input is validated
and its state ready; validation, labels, weights and the transaction stay
the base class's.

Every ``fit`` / ``partial_fit`` is a transaction (``_transaction``): it
validates the input (sparse structure first, then values and scales), works
on its own copy of the fitted state, checks that the state is finite after
every pass, and publishes the new state only when it returns.  After any
exception the estimator is exactly what it was before the call.
"""
import contextlib
import copy
import functools
import math
import operator
import os
import random
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from scipy.special import expit
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils import check_random_state, compute_class_weight
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ._dataset import (
    as_row_arrays,
    check_sparse_structure,
    columns_finite,
    csr_scores,
    first_nonfinite,
    row_moments,
    shuffled_order,
    touched_columns,
)

# coef_ of the models that compute it from their state when it is read:
# estimator -> (_state_version, coef).  Outside the estimator, so that reading
# coef_ changes nothing of it (its pickle, its attribute dict), and gone with
# it.
_COEF_CACHE = weakref.WeakKeyDictionary()

# estimator -> the values of its parameters when they last passed their
# constraints (_validate_continuing_params), outside it for the same reasons
_VALIDATED_PARAMS = weakref.WeakKeyDictionary()

# class -> the getter of its parameters' values from an attribute dict
_PARAM_GETTERS = {}

# Parameter values compared by ``==`` (with their types) to tell an unchanged
# parameter; any other value (a dict of class weights, a RandomState) counts
# as unchanged only if it is the same object, whose constraint (its type)
# holds whatever is done to it in place.
_PLAIN_PARAM_TYPES = (str, int, float, bool, type(None))


def param_values(est):
    """The values of the estimator's parameters, in the order of
    ``_get_param_names`` (KeyError if one was deleted).  An item getter on
    the attribute dict, made once per class: ``get_params`` inspects the
    signature of ``__init__`` at every call (some 50 microseconds)."""
    cls = type(est)
    getter = _PARAM_GETTERS.get(cls)
    if getter is None:
        names = cls._get_param_names()
        getter = _PARAM_GETTERS[cls] = (
            operator.itemgetter(*names) if len(names) > 1
            else lambda state: tuple(state[name] for name in names))
    return getter(est.__dict__)


def same_params(old, new):
    """Whether two ``param_values`` tuples hold the same parameters: equal
    plain values of one type, the same object otherwise."""
    return len(old) == len(new) and all(
        a is b or (type(a) is type(b) and type(a) in _PLAIN_PARAM_TYPES and a == b)
        for a, b in zip(old, new))


# A random 64-bit name per state, not a count: a count restarts with every
# new fit (and in every process a model is loaded into), so a new state
# could take the name of an older one that is still cached.
_STATE_NAMES = random.Random()


def new_state_version():
    """A fresh name for a fitted state (see _COEF_CACHE)."""
    return _STATE_NAMES.getrandbits(64)


def row_scales(X, sample_weight):
    """``(q, v)`` of the rows of a validated X: ``q`` the mean squared norm of
    the rows (no intercept term), ``v`` the mean square of their non-zero
    values (``q`` divided by the mean number of non-zero values), both
    weighted by the sample weights (all rows alike if every weight is 0;
    ``v`` is 0 for rows of zeros): the scales that data-aware ("auto")
    parameters are computed from.  O(nnz), no copy of X."""
    if not np.any(sample_weight):
        sample_weight = np.ones(X.shape[0])
    # row_moments also sums a target's squares: the weights stand in for y,
    # whose moment is not needed here
    sum_sq_norm, _, sum_weight, sum_nonzero = row_moments(
        *as_row_arrays(X), False, sample_weight, sample_weight)
    return sum_sq_norm / sum_weight, (sum_sq_norm / sum_nonzero if sum_nonzero > 0 else 0.0)


def physical_memory():
    """The machine's physical memory in bytes, or None where the system
    does not say (not POSIX)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


# A model that its caller throws away if a call fails (a shard of
# ThreadShardedTrainer, whose own state changes only once every shard has
# succeeded) needs no rollback: in this thread, inside ``disposable()``, a
# call saves nothing first, which on a wide model is a good part of a
# call's cost.
_DISPOSABLE = threading.local()


@contextlib.contextmanager
def disposable():
    """Calls in this block (in this thread) do not save the state they
    change: a failed call leaves the model part-way, to be discarded."""
    before = getattr(_DISPOSABLE, "on", False)
    _DISPOSABLE.on = True
    try:
        yield
    finally:
        _DISPOSABLE.on = before


def feature_columns(array, columns):
    """Index of ``columns`` in a per-feature state array: its axis 1, or
    axis 0 when it is one-dimensional (a regressor's single problem)."""
    return (columns,) if array.ndim == 1 else (slice(None), columns)


def feature_axis(array):
    """The axis of a fitted array's features: 0 if it is 1-D, else 1."""
    return 0 if array.ndim == 1 else 1


def columns_are_worth_reading(array, columns, axis=None):
    """Whether reading the feature ``columns`` (an index array, or None for
    all) of ``array`` where they are is quicker than a streaming read of
    all of it.  A column read where it is costs a cache miss for each cache
    line its entries span (at least one): about 12 ns on a 2**20-column
    model, where a streaming read takes 0.8 ns for 16 bytes (20 newsgroups,
    one-vs-rest AdaGrad's (u, root) pairs).  So the columns are read in
    place when their cache lines are at most a quarter of the array's: a
    multinomial model's 320-byte columns of 20 classes, yes, at 122,555 of
    2**20 columns (the whole state took 20 ms, those rows 7.5 ms); 16-byte
    pairs, from a sixteenth of the width down."""
    if columns is None:
        return False
    axis = feature_axis(array) if axis is None else axis
    block = array.itemsize * int(np.prod(array.shape[axis + 1:]))
    lines = columns.shape[0] * max(1, -(-block // 64)) * int(np.prod(array.shape[:axis]))
    return 4 * lines * 64 <= array.nbytes


def first_nonfinite_in_columns(arrays, columns, axes):
    """Position in ``arrays`` of the first one holding NaN or infinity in
    its feature columns ``columns[i]`` (an index array, or None for all of
    it; the features on axis ``axes[i]``), -1 if none.  The columns are
    read where they are when ``columns_are_worth_reading``; the other
    arrays are read whole, in one ``first_nonfinite`` call."""
    in_place = [i for i, array in enumerate(arrays)
                if columns_are_worth_reading(array, columns[i], axes[i])]
    whole = [i for i in range(len(arrays)) if i not in in_place]
    bad = first_nonfinite([arrays[i] for i in whole])
    bad_positions = [whole[bad]] if bad >= 0 else []
    bad_positions += [i for i in in_place if not columns_finite(arrays[i], columns[i], axes[i])]
    return min(bad_positions, default=-1)


def column_positions(X):
    """The distinct columns of a validated CSR X (sorted, int64) and the
    position among them of each stored entry's column (int64): what scoring
    X with the weights of its own columns reads.  The positions come by
    binary search where the entries are few against the width; else from a
    map of the width, written at X's columns only, and one read per entry:
    471,000 entries on 2**20 columns (20 newsgroups' held-out rows) took
    35 ms by binary search, 1.5 ms so; 11,000 on 40,891 columns (SMS
    spam's) 0.74 and 0.03 ms."""
    indices, n_features = X.indices, X.shape[1]
    columns = touched_columns(indices, n_features)
    if 64 * indices.shape[0] < n_features:
        return columns, np.searchsorted(columns, indices)
    position = np.empty(n_features, dtype=np.int64)
    position[columns] = np.arange(columns.shape[0], dtype=np.int64)
    return columns, position[indices]


def take_columns(array, columns):
    """``array[feature_columns(array, columns)]`` (a copy), for an index
    array of columns: ``np.take`` copies a column's entries as one block,
    faster than fancy indexing on a wide state
    (``benchmarks/bench_design_choices.py``, table ``take_columns``)."""
    if isinstance(columns, slice):
        return array[feature_columns(array, columns)]
    return np.take(array, columns, axis=0 if array.ndim == 1 else 1)


# Losses whose decision function maps to a probability (see predict_proba).
PROBABILISTIC_LOSSES = ("log_loss", "modified_huber")

# The tol and n_iter_no_change of the classifiers whose fit tests each
# epoch's loss (_run_epochs), for their docstrings.
STOP_PER_PROBLEM_DOC = """    tol : float or None, default=1e-3
        ``fit`` stops when the progressive loss of each binary problem has
        not dropped below its best so far minus ``tol`` for
        ``n_iter_no_change`` consecutive epochs.  Under one-vs-rest every
        problem runs until the last one has stopped, and ``n_iter_`` counts
        those epochs: the most that any problem alone needs, as in
        scikit-learn's one-vs-rest SGD.  None: run ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        See ``tol``.
"""


# Largest accepted magnitude of a gradient factor: |x| times the sample (and
# class) weight, times |y| for a regression target.  The kernels square
# gradients and sum the squares over every step: below 1e140 a square is at
# most 1e280, and 1e28 of them still fit in a float64.  Data this large are
# refused with a message instead of becoming an infinite (then NaN) state.
SCALE_LIMIT = 1e140


def all_finite(values):
    """True if no entry of the array is NaN or infinite (one pass, no
    temporary; see ``first_nonfinite``)."""
    return first_nonfinite([values]) < 0


def check_structure(X):
    """X with its sparse structure checked (see ``check_sparse_structure``):
    before scikit-learn's validation or any scipy routine reads the index
    arrays, since those trust them and read out of bounds when they lie.
    Dense and array-like input is returned as it is."""
    return check_sparse_structure(X) if sp.issparse(X) else X


def check_values(estimator, X, sample_weight, y=None):
    """scikit-learn's finiteness check of X (``validate_data`` is called
    with ``ensure_all_finite=False``) and the overflow check, in one pass.

    The product of the largest |x|, sample weight and (regression) |y| must
    stay below ``SCALE_LIMIT``.  Weights and targets are one per row; for X,
    its sum of squares (one pass, no temporary) bounds every |x|: when
    it is finite and below the square of the limit the weights leave, every
    value is finite and small enough.  Only otherwise are the values looked
    at one by one, to name what is wrong.
    """
    values = X.data if sp.issparse(X) else X.reshape(-1)
    factors = {"sample_weight": float(sample_weight.max(initial=0.0))}
    if y is not None:
        factors["y"] = float(np.abs(y).max(initial=0.0))
    others = math.prod(max(v, 1.0) for v in factors.values())
    # einsum, not a BLAS dot: one thread, no thread pool to wake (a dot of a
    # small chunk took milliseconds instead of microseconds on a busy
    # machine)
    if (others < SCALE_LIMIT
            and float(np.einsum("i,i->", values, values)) < (SCALE_LIMIT / others) ** 2):
        return
    check_array(values, ensure_2d=False, dtype=None, input_name="X",
                estimator=estimator)  # NaN or infinity: scikit-learn's message
    scales = {"X": float(np.abs(values).max(initial=0.0)), **factors}
    for name, value in scales.items():
        if value >= SCALE_LIMIT:
            raise ValueError(
                f"{name} holds values of magnitude {value:.3g}: the squared "
                f"gradients would overflow (limit {SCALE_LIMIT:.0e}). Scale "
                f"{name} (e.g. StandardScaler or MaxAbsScaler for X)."
            )
    product = math.prod(max(v, 1.0) for v in scales.values())
    if product >= SCALE_LIMIT:
        names = " times ".join(f"{n} ({v:.3g})" for n, v in scales.items())
        raise ValueError(
            f"The largest magnitudes of {names} multiply to {product:.3g}: the "
            f"squared gradients would overflow (limit {SCALE_LIMIT:.0e}). "
            "Scale the data."
        )


def check_sample_weight(sample_weight, n_samples):
    """Validated float64 weights: finite, non-negative, one per row.

    All-zero weights are allowed: such a chunk is simply not learnt from.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, Real):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    # a finite C-ordered float64 vector is what check_array returns as it
    # is; its checks (a dataframe library's among them) cost a third of a
    # one-row call of the general path
    if not (type(sample_weight) is np.ndarray and sample_weight.dtype == np.float64
            and sample_weight.ndim == 1 and sample_weight.flags.c_contiguous
            and sample_weight.shape[0] > 0 and all_finite(sample_weight)):
        sample_weight = check_array(
            sample_weight,
            ensure_2d=False,
            dtype=np.float64,
            order="C",
            input_name="sample_weight",
        )
    if sample_weight.ndim != 1 or sample_weight.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight.shape == {sample_weight.shape}, expected ({n_samples},)!"
        )
    if np.any(sample_weight < 0):
        raise ValueError("Negative values in data passed to sample_weight.")
    return sample_weight


_INT64_MAX = int(np.iinfo(np.int64).max)


def held_out_split(labels, fraction, rng):
    """The rows (sorted int64) that ``fit`` holds out: of the rows of each
    label, ``round(fraction * count)`` drawn at random from ``rng``, but
    never all of them (a label of one row stays in training)."""
    order = rng.permutation(labels.shape[0])
    grouped = order[np.argsort(labels[order], kind="stable")]  # each label's rows, shuffled
    _, starts, counts = np.unique(labels[grouped], return_index=True, return_counts=True)
    taken = np.minimum(np.floor(fraction * counts + 0.5).astype(np.int64), counts - 1)
    held = np.concatenate([grouped[start:start + n] for start, n in zip(starts, taken)])
    return np.sort(held).astype(np.int64)


_IDLE_RANDOM_STATES = []  # see lent_random_state
_IDLE_RANDOM_STATES_LOCK = threading.Lock()


@contextlib.contextmanager
def lent_random_state(seed):
    """``check_random_state(seed)`` for the length of a ``with`` block.

    For an integer seed, a RandomState of the same stream as
    ``np.random.RandomState(seed)``, without its cost: a new RandomState
    first seeds its generator from the operating system's entropy, which
    the legacy seeding then overwrites (about 90 us, as much as a default
    ``SGDClassifier`` fit of a small table), where reseeding an instance
    costs about 1.5 us.  So instances are lent, one borrower at a time,
    and reseeded for the next.  None and RandomState instances are
    scikit-learn's: the global generator, or the instance itself."""
    if not isinstance(seed, Integral):
        yield check_random_state(seed)
        return
    with _IDLE_RANDOM_STATES_LOCK:
        rng = _IDLE_RANDOM_STATES.pop() if _IDLE_RANDOM_STATES else None
    if rng is None:
        rng = np.random.RandomState(seed)
    else:
        rng.seed(seed)  # a seed out of range raises as RandomState(seed) does
    try:
        yield rng
    finally:
        with _IDLE_RANDOM_STATES_LOCK:
            _IDLE_RANDOM_STATES.append(rng)


def pass_order(n_samples, rng, shuffle):
    """Row order (int64) of one pass: a permutation drawn from the
    RandomState ``rng`` if ``shuffle``, else the rows as given."""
    if shuffle:
        return shuffled_order(n_samples, int(rng.randint(_INT64_MAX)))
    return np.arange(n_samples, dtype=np.int64)


@functools.lru_cache(maxsize=256)
def _fitted_names(cls, names):
    """Of an estimator's attribute ``names`` (a tuple), the fitted ones
    (ending in "_") that must stay finite (not in ``_nan_allowed_state``).
    Cached by the set of names: the finiteness check runs after every epoch,
    and on a small fit scanning every attribute cost more than the pass."""
    return tuple(name for name in names
                 if name.endswith("_") and name not in cls._nan_allowed_state)


def problem_threads(n_problems, n_jobs):
    """The threads that run the ``n_problems`` binary problems of one call
    (the kernels release the GIL), as a context manager: a thread pool of
    ``n_jobs`` threads (joblib's meaning, ``parallel_config`` included) for
    several problems, None when they run one after another in this thread.

    A plain pool, kept for the whole call: joblib's ``Parallel`` collects
    its results at fixed polling intervals, which on a small pass or a
    ``partial_fit`` chunk cost more than the work itself
    (``benchmarks/bench_design_choices.py``, table ``problem_call``).
    """
    n_threads = min(effective_n_jobs(n_jobs), n_problems) if n_problems > 1 else 1
    if n_threads <= 1:
        return contextlib.nullcontext()
    return ThreadPoolExecutor(max_workers=n_threads)


def map_problems(solve, n_problems, threads):
    """``[solve(k) for k in range(n_problems)]``, on the pool ``threads`` of
    ``problem_threads`` (None: in this thread)."""
    if threads is None:
        return [solve(k) for k in range(n_problems)]
    return list(threads.map(solve, range(n_problems)))


class BaseOnlineLinearModel(BaseEstimator):
    """What classifiers and regressors share: failure-atomic validation, the
    fitted-state start and the epoch loop.  Not for direct use."""

    _parameter_constraints: dict = {
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, None, None, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    def _validate_continuing_params(self):
        """The parameters' constraints, checked for a call that continues a
        fitted state (InvalidParameterError, a ValueError).  scikit-learn's
        ``_fit_context`` checks them for ``fit`` and a first ``partial_fit``
        only, and ``set_params`` not at all, so a value set between two
        calls reached the kernels unchecked: a negative ``eta`` trained on
        in silence, an unknown ``algorithm`` failed with a KeyError midway.
        (Also under ``skip_parameter_validation``, which ``_fit_context``
        sets for the call itself: the check costs about 0.1 ms, and the
        short path of ``_short_calls`` makes it only when a parameter has
        changed; so does this one, which remembers the values that last
        passed: sklearn's check and ``get_params`` took a quarter of a
        one-row call of the general path.)"""
        try:
            values = param_values(self)
        except KeyError:  # a parameter deleted: the check says which
            values = None
        validated = _VALIDATED_PARAMS.get(self)
        if values is not None and validated is not None and same_params(validated, values):
            return
        self._validate_params()
        if values is not None:
            _VALIDATED_PARAMS[self] = values

    # ------------------------------------------------------------------
    # hooks for the algorithms
    def _init_state(self, n_problems, n_features):  # pragma: no cover
        raise NotImplementedError

    def _run_epoch(self, k, rows, y, sample_weight, order):  # pragma: no cover
        raise NotImplementedError

    # Fitted float arrays that may legitimately hold NaN (e.g. a constant
    # that is not known before the first step); every other one must stay
    # finite.
    _nan_allowed_state = ()

    def _in_place_arrays(self):
        """Names of the fitted arrays, of shape (n_problems, n_features,
        ...), that the kernels update in place and only in the columns of
        X's non-zeros; a continuing call then saves (and checks) just those
        columns (O(nnz)).  The other fitted arrays are copied whole per
        call.  Default: none."""
        return ()

    def _changeable_columns(self, columns):
        """The sorted columns in which a call on rows whose non-zeros are
        in ``columns`` (sorted int64) can change the arrays of
        ``_in_place_arrays``: those columns, unless a step also moves
        weights outside its rows."""
        return columns

    def _kernel_checked_arrays(self):
        """Names of the fitted arrays whose finiteness the kernel checks
        itself, on the entries its pass changed (every other entry is as
        finite as it was); ``_run_epoch`` then stores the name of one that
        holds NaN or infinity in ``_kernel_nonfinite``, and
        ``_check_finite_state`` does not read them.  For state that every
        step may move, on a wide model, and for the arrays updated in place
        by a kernel that tests each value as it writes it: a read per pass
        costs more than the pass.  Default: none."""
        return ()

    def _prepare_continuing_state(self):
        """Hook: adapt the fitted state to the current options at the start
        of a continuing call (new arrays only: the call may still fail)."""

    # For the models whose coef_ is a function of their state (computed when
    # read, so that a call need not write every weight):
    def _compute_coef(self):  # pragma: no cover
        """Every weight of the current state."""
        raise NotImplementedError

    def _compute_coef_at(self, columns):  # pragma: no cover
        """The weights of ``columns`` (sorted int64) of the current state."""
        raise NotImplementedError

    def _computed_coef(self):
        """``coef_`` from ``_compute_coef``, once per state."""
        cached = _COEF_CACHE.get(self)
        if cached is None or cached[0] != self._state_version:
            cached = (self._state_version, self._compute_coef())
            _COEF_CACHE[self] = cached
        return cached[1]

    def _coef_at(self, columns):
        """``coef_[..., columns]`` of a model that computes its weights,
        without materialising the rest (unless they already are)."""
        cached = _COEF_CACHE.get(self)
        if cached is not None and cached[0] == self._state_version:
            return take_columns(cached[1], columns)
        return self._compute_coef_at(columns)

    def _coef_is_computed(self):
        return False

    def _checked_scoring_input(self, X):
        """X as ``validate_data(self, X, accept_sparse="csr", reset=False)``
        returns it, for the common call on a fitted model -- a CSR matrix
        or a 2-D ndarray of float64/float32 of the fitted width, without
        feature names, of finite values -- in a few cheap checks instead of
        scikit-learn's general validation, which costs several times the
        product when one row is scored at a time.  None for anything else
        (an unfitted model too): the general path then validates it, with
        its messages.  X's sparse structure must have been checked."""
        if not self._is_plain_input(X, c_ordered=False):
            return None
        return X if all_finite(X.data if sp.issparse(X) else X) else None

    def _is_plain_input(self, X, c_ordered):
        """True for the input the short paths check themselves: a CSR
        matrix/array, or a 2-D ndarray (C-ordered if ``c_ordered``), of
        float64/float32, with rows, of the fitted width, given to a model
        fitted without feature names."""
        if "n_features_in_" not in self.__dict__ or "feature_names_in_" in self.__dict__:
            return False
        if type(X) not in (sp.csr_matrix, sp.csr_array) and (
                type(X) is not np.ndarray or X.ndim != 2
                or (c_ordered and not X.flags.c_contiguous)):
            return False
        return (X.dtype in (np.float64, np.float32) and X.shape[0] >= 1
                and X.shape[1] == self.n_features_in_)

    def _scores(self, X):
        """``X @ coef_.T + intercept_`` for any input the model
        accepts: validated as scikit-learn's ``decision_function`` does (or
        by ``_checked_scoring_input``), with only the weights of X's columns
        computed where the model computes them (``_sparse_products``)."""
        X = check_structure(X)
        checked = self._checked_scoring_input(X)
        if checked is None:
            check_is_fitted(self)
            checked = validate_data(self, X, accept_sparse="csr", reset=False)
        return self._products(checked) + self.intercept_

    def _products(self, X):
        """``X @ coef_.T`` for validated rows X, with only the weights of
        X's columns computed where the model computes them
        (``_sparse_products``)."""
        if sp.issparse(X) and self._coef_is_computed():
            return self._sparse_products(X)
        return safe_sparse_dot(X, self.coef_.T, dense_output=True)

    def _sparse_products(self, X):
        """``X @ coef_.T`` for a validated CSR X, where coef_ is computed
        from the state.  With fewer non-zeros than weights, only the weights
        of X's own columns are computed: the same products in the same order
        as with the whole coef_, so the same scores, bit for bit."""
        if 2 * X.nnz < X.shape[1]:
            columns, positions = column_positions(X)
            weights = self._coef_at(columns)
            scores = csr_scores(X.data, positions, X.indptr,
                                np.ascontiguousarray(np.atleast_2d(weights)))
            return scores if weights.ndim == 2 else scores[:, 0]
        return safe_sparse_dot(X, self.coef_.T, dense_output=True)

    def _held_out_score(self, held):
        """The score (``score``) of the rows ``_held_out_rows`` held out,
        computed here without the validation of ``score``, which on SMS
        spam cost more than an epoch."""
        design, y, sample_weight = held
        return self._score_of_scores(self._held_out_products(design) + self.intercept_,
                                     y, sample_weight)

    def _held_out_design(self, X):
        """What ``_held_out_products`` reads of the held-out rows X
        (validated: rows of the training X), made once per ``fit``: here X
        itself; an estimator may prepare the rows for the products it takes
        after every epoch."""
        return X

    def _held_out_products(self, design):
        """``X @ coef_.T`` of the held-out rows, from their
        ``_held_out_design``; an estimator may compute them in a way that
        suits its state."""
        return self._products(design)

    # ------------------------------------------------------------------
    def _transaction(self, call, *args):
        """``call(*args)``, all or nothing.

        The call runs on a shallow copy of the attribute dict (so that what
        validation sets, such as ``n_features_in_`` on a first call, stays
        private to it) and, once it continues a fitted state, on copies of
        the fitted arrays, except those updated in place, of which the
        columns the call can change are saved first (``_start_state``).  On
        any exception (invalid input, MemoryError, a non-finite state,
        KeyboardInterrupt) the saved columns are written back, the old dict
        is put back whole, and a ``RandomState`` passed as ``random_state``
        is rewound, so the estimator is bit-identical to what it was.  (A
        thread reading the estimator during a call may see the in-place
        arrays part-way; concurrent fits of one estimator are not supported:
        the later to finish wins, or one raises.)
        """
        saved = self.__dict__
        rng = getattr(self, "random_state", None)
        rng_state = rng.get_state() if isinstance(rng, np.random.RandomState) else None
        curve = saved.get("loss_curve_")
        curve_length = len(curve) if isinstance(curve, list) else 0
        self.__dict__ = dict(saved)
        try:
            result = call(*args)
        except BaseException:
            for array, where, values in self.__dict__.get("_undo", ()):
                array[where] = values
            self.__dict__ = saved
            if rng_state is not None:
                rng.set_state(rng_state)
            if isinstance(curve, list):  # see _copy_fitted_state
                del curve[curve_length:]
            raise
        self.__dict__.pop("_undo", None)
        self.__dict__.pop("_touched_columns", None)
        return result

    def _resolve_parameters(self, X, sample_weight, first_call):
        """Fix the parameters a model takes from the data of its first call
        (``"auto"`` values), before its state is made: a hook, for the
        estimators whose ``_init_state`` needs them.  Here nothing."""

    def _start_state(self, first_call, partial, n_problems, n_features, X=None):
        """Fresh fitted state on a first call; otherwise this call's own
        copy of the fitted state, or the saved columns of the arrays updated
        in place (see ``_transaction``; X names the columns).  A fresh loss
        curve per fit.  ``_state_version`` names the state (what a cache of
        a function of it compares) and is renewed at every change."""
        if first_call:
            self.t_ = 0
            self.loss_curve_ = []
            self._state_version = new_state_version()
            self._init_state(n_problems, n_features)
        else:
            self._prepare_continuing_state()
        self._check_state_fits_in_memory()
        if not first_call:
            self._copy_fitted_state(X)
        elif (X is not None and sp.issparse(X) and self._lists_touched_columns()
              and X.nnz < self._in_place_size()):
            # A fresh state changes only in the columns of X's non-zeros
            # (see _in_place_arrays): with fewer non-zeros than values in
            # the arrays updated in place (hashed text; a model of many
            # classes), the per-pass checks of those arrays may read the
            # columns of X rather than the whole width (see
            # columns_are_worth_reading; never when they are more than half
            # of it).  With more non-zeros, listing them costs more than a
            # one-pass fit's checks.
            columns = touched_columns(X.indices, X.shape[1])
            # more than half: all of them, as for dense X (the listing is
            # not made twice: pairwise_auc's _compact_columns reads this)
            self._touched_columns = (columns if 2 * columns.shape[0] <= X.shape[1]
                                     else slice(None))
        if not partial:
            self.loss_curve_ = []

    def _lists_touched_columns(self):
        """Whether a fresh call on sparse X lists the columns of its
        non-zeros (``_touched_columns``): for the finite checks of the
        float arrays updated in place that the kernel does not check
        itself; when it checks them all, there is nothing to list them for.
        A hook, for an estimator that has another use for them."""
        checked = self._kernel_checked_arrays()
        return any(name not in checked and self.__dict__[name].dtype.kind == "f"
                   for name in self._in_place_arrays() if name in self.__dict__)

    def _held_out_rows(self, X, targets, sample_weight, rng):
        """The rows ``fit`` holds out to decide when to stop (see the
        ``early_stopping`` parameter of the estimators that have one):
        ``(training rows, held)``, ``held`` what ``_held_out_score`` reads,
        or None to stop on the progressive loss alone.  A fraction
        ``validation_fraction`` of the rows, drawn from ``rng`` (stratified
        by class for a classifier: ``held_out_split``), is held out when
        ``early_stopping`` is True, or "auto" and X has more columns than
        rows: on such data a linear model separates the training rows, and
        its unpenalised progressive loss keeps falling long after its
        predictions have stopped improving.  Raises ValueError when True and
        the rows cannot be split (no row held out, or no weight on a side);
        "auto" then falls back to the loss alone."""
        setting = getattr(self, "early_stopping", False)
        if setting is False or (setting == "auto" and not X.shape[1] > X.shape[0]):
            return None
        labels = self._class_indices(targets)
        n_samples = X.shape[0]
        held = held_out_split(labels if labels is not None else np.zeros(n_samples, np.intp),
                              self.validation_fraction, rng)
        kept = np.ones(n_samples, dtype=bool)
        kept[held] = False
        train = np.flatnonzero(kept)  # never empty: see held_out_split
        problem = ("no row is held out" if held.shape[0] == 0 else
                   "the held-out rows have no non-zero sample weight"
                   if not np.any(sample_weight[held]) else
                   "the rows to train on have no non-zero sample weight"
                   if not np.any(sample_weight[train]) else None)
        if problem is not None:
            if setting == "auto":
                return None
            raise ValueError(
                f"early_stopping=True cannot hold out validation_fraction="
                f"{self.validation_fraction} of these {n_samples} rows: {problem}.")
        y_held = targets[0][held] if labels is None else self.classes_[labels[held]]
        return (train.astype(np.int64),
                (self._held_out_design(X[held]), y_held, sample_weight[held]))

    def _class_indices(self, targets):
        """Each row's class index, from the targets of the problems; None
        for a regressor (its held-out split is not stratified)."""
        return None

    def _in_place_size(self):
        """The number of values in the arrays updated in place."""
        return sum(self.__dict__[name].size for name in self._in_place_arrays()
                   if name in self.__dict__)

    def _check_state_fits_in_memory(self):
        """MemoryError if the fitted arrays, twice over (this call's copy or
        the kernels' workspaces), exceed the machine's physical memory.
        NumPy maps zeros lazily, so an X of billions of columns gets its
        state "allocated" and the process is then killed by the operating
        system when the first pass writes it; this refuses it instead."""
        physical = physical_memory()
        if physical is None:
            return
        state = sum(value.nbytes for name, value in self.__dict__.items()
                    if name.endswith("_") and isinstance(value, np.ndarray))
        if 2 * state > physical:
            raise MemoryError(
                f"The fitted state of {self.n_features_in_} features needs "
                f"{2 * state / 2**30:.1f} GiB with its working copy; this "
                f"machine has {physical / 2**30:.1f} GiB. Reduce n_features "
                "(e.g. HashingVectorizer(n_features=2**20))."
            )

    def _copy_fitted_state(self, X=None):
        """Replace every fitted array and container by a private, writable
        copy: the kernels' in-place updates then reach the estimator only
        if the call succeeds, and a state loaded read-only (e.g.
        ``joblib.load(..., mmap_mode="r")``) can be continued.  The arrays
        of ``_in_place_arrays`` are not copied when writable: the columns of
        sparse X's non-zeros (all columns for dense X) are saved in
        ``_undo`` instead, so the cost is O(nnz) rather than O(size of the
        state).  ``loss_curve_`` grows by one entry per call and is never
        changed otherwise: copying it would make a long stream of calls
        quadratic, so a failed call's entries are removed from it instead
        (``_transaction``).  Inside ``disposable()`` only read-only arrays
        are copied (to be written)."""
        if getattr(_DISPOSABLE, "on", False):
            for name, value in list(self.__dict__.items()):
                if (name.endswith("_") and isinstance(value, np.ndarray)
                        and not value.flags.writeable):
                    setattr(self, name, np.array(value))
            self._undo = []
            return
        in_place = set(self._in_place_arrays())
        columns = slice(None)
        if in_place and X is not None and sp.issparse(X):
            columns = self._changeable_columns(touched_columns(X.indices, X.shape[1]))
            self._touched_columns = columns
        undo = []
        for name, value in list(self.__dict__.items()):
            if not name.endswith("_") or name == "loss_curve_":
                continue
            if isinstance(value, np.ndarray):
                if name in in_place and value.flags.writeable:
                    where = feature_columns(value, columns)
                    saved = take_columns(value, columns)  # a copy, or a view of all
                    undo.append((value, where, saved.copy() if isinstance(columns, slice)
                                 else saved))
                else:
                    setattr(self, name, np.array(value))  # a plain ndarray copy
            elif isinstance(value, (list, dict)):
                setattr(self, name, copy.deepcopy(value))
        self._undo = undo

    def _check_finite_state(self, when):
        """ValueError if a fitted float array holds NaN or infinity after
        ``when`` (e.g. "epoch 3"); the transaction then restores the state.
        Of the arrays updated in place, only the columns this call could
        change are looked at, where they are, when that is quicker than a
        read of the whole array (``columns_are_worth_reading``); those the
        kernel checks itself
        (``_kernel_checked_arrays``) are not read, and its finding is in
        ``_kernel_nonfinite``."""
        columns = self.__dict__.get("_touched_columns")
        if isinstance(columns, slice):
            columns = None
        checked = self._kernel_checked_arrays()
        state = self.__dict__
        name = state.pop("_kernel_nonfinite", None)
        if name is None:
            names = [name for name in _fitted_names(type(self), tuple(state))
                     if isinstance(state[name], np.ndarray)
                     and state[name].dtype == np.float64 and name not in checked]
            if columns is None:  # every array read whole: one call
                bad = first_nonfinite([state[name] for name in names])
            else:
                in_place = self._in_place_arrays()
                bad = first_nonfinite_in_columns(
                    [state[name] for name in names],
                    [columns if name in in_place else None for name in names],
                    [feature_axis(state[name]) for name in names])
            name = names[bad] if bad >= 0 else None
        if name is not None:
            raise ValueError(
                f"Floating-point overflow in {when}: {name} holds non-finite "
                "values. The estimator was left as it was before this call. "
                "Scaling the input (e.g. StandardScaler or MaxAbsScaler) or "
                "a smaller step size might help."
            )

    @contextlib.contextmanager
    def _call_workspaces(self):
        """Scratch that the passes of one call share (see ``_workspace``),
        dropped when the call ends: never fitted state."""
        self._workspaces = {}
        try:
            yield
        finally:
            # pop: a thread racing this call on one estimator (unsupported)
            # may have replaced the attribute dict
            self.__dict__.pop("_workspaces", None)

    def _workspace(self, k, make):
        """Problem k's scratch for this call: made by ``make()`` at the
        first pass, the same object at the next ones (a kernel hands it back
        clean; AdaGrad's multinomial Problem works on views of the state and
        keeps a scratch array of weights computed from it), so that its
        memory is mapped once per call, not per pass."""
        workspaces = self.__dict__.get("_workspaces")
        if workspaces is None:  # dropped by a racing call: a private one
            return make()
        workspace = workspaces.get(k)
        if workspace is None:
            workspace = workspaces[k] = make()
        return workspace

    # fit's stopping test compares the mean loss of the last n_iter_no_change
    # epochs (stopping at the first mean that is not better by tol) instead
    # of each epoch's, for a progressive loss too noisy to compare epoch by
    # epoch (the pairwise AUC loss, a mean over the few pairs of an epoch)
    _stop_on_mean_loss = False

    def _run_problem_epochs(self, rows, targets, sample_weight, order, pool):
        """One pass of every problem over the rows ``order``: the list of
        ``_run_epoch``'s ``(loss, weight)`` sums, run on the threads of
        ``pool`` (None: one after another in this thread)."""
        return map_problems(
            lambda k: self._run_epoch(k, rows, targets[k], sample_weight, order),
            len(targets), pool)

    def _run_epochs(self, X, targets, sample_weight, partial, n_jobs=None, order=None):
        """Up to ``max_iter`` passes (one for ``partial_fit``) over X for the
        problems whose targets are listed, with shuffling, progressive loss,
        early stopping and verbose output.  ``order`` (``partial_fit``
        only): the rows of the pass, in order, instead of all of them (see
        ``_pass_over_rows``)."""
        if partial:  # one pass in the given order: nothing is drawn
            return self._passes(X, targets, sample_weight, partial, n_jobs, order, None)
        with lent_random_state(self.random_state) as rng:
            return self._passes(X, targets, sample_weight, partial, n_jobs, order, rng)

    def _passes(self, X, targets, sample_weight, partial, n_jobs, order, rng):
        """``_run_epochs`` with the RandomState of the shuffles (and of the
        held-out rows)."""
        n_samples = X.shape[0]
        n_problems = len(targets)
        rows = as_row_arrays(X)
        max_iter = 1 if partial else self.max_iter
        held_out = None  # what _held_out_score reads, when fit holds rows out
        if not partial:
            self.__dict__.pop("validation_scores_", None)
            split = (self._held_out_rows(X, targets, sample_weight, rng)
                     if self.tol is not None and max_iter > 1 else None)
            if split is not None:
                # the passes go over the other rows only (in shuffled order)
                order, held_out = split
                self.validation_scores_ = []
        n_steps = int(np.count_nonzero(
            sample_weight if order is None else sample_weight[order]))
        best_loss, n_no_improvement = [np.inf] * n_problems, [0] * n_problems
        settled, problem_losses = [False] * n_problems, []
        best_score, n_no_score_improvement = -np.inf, 0
        self.n_iter_ = 0
        start = time.perf_counter()
        with problem_threads(n_problems, n_jobs) as pool, self._call_workspaces():
            for epoch in range(max_iter):
                if order is None:
                    epoch_order = pass_order(n_samples, rng, self.shuffle and not partial)
                elif held_out is not None:
                    epoch_order = order[pass_order(order.shape[0], rng, self.shuffle)]
                else:
                    epoch_order = order
                results = self._run_problem_epochs(rows, targets, sample_weight,
                                                   epoch_order, pool)
                self.t_ += n_steps
                self.n_iter_ += 1
                self._state_version = new_state_version()
                self._check_finite_state(
                    "this partial_fit call" if partial else f"epoch {self.n_iter_}")
                total_weight = results[0][1]
                epoch_loss = (
                    sum(r[0] for r in results) / total_weight if total_weight > 0 else np.nan
                )
                self.loss_curve_.append(epoch_loss)
                if held_out is not None:
                    score = self._held_out_score(held_out)
                    self.validation_scores_.append(score)
                    if not score > best_score + self.tol:
                        n_no_score_improvement += 1
                    else:
                        n_no_score_improvement = 0
                    best_score = max(best_score, score)
                if self.verbose:
                    print(
                        f"-- {'chunk' if partial else 'epoch'} {len(self.loss_curve_)}: "
                        f"samples seen {self.t_}, progressive loss {epoch_loss:.6g}, "
                        + (f"held-out score {score:.6g}, " if held_out is not None else "")
                        + f"non-zero weights {np.count_nonzero(self.coef_)}/"
                        f"{self.coef_.size}, elapsed {time.perf_counter() - start:.3f} s"
                    )
                # with held-out rows, fit stops at the first of two tests:
                # their score has stopped rising, or the progressive loss
                # has stopped falling (the test below)
                if held_out is not None and n_no_score_improvement >= self.n_iter_no_change:
                    break
                if partial or self.tol is None or total_weight == 0:
                    continue
                # tol applies to the loss of each binary problem, and fit
                # stops when every problem has stopped improving, as each of
                # scikit-learn's one-vs-rest SGD problems stops on its own
                # loss.  A test on the mean over K problems stopped the hard
                # ones early, when the easy ones had settled.  Every problem
                # trains until then: AdaGrad's problems share the step count
                # t_, so one cannot stop while the others step.  A NaN loss
                # (nothing to measure, e.g. no pair of opposite labels)
                # counts as no improvement.
                problem_losses.append([r[0] / total_weight for r in results])
                losses = problem_losses[-1]
                patience = self.n_iter_no_change
                if self._stop_on_mean_loss:
                    recent = problem_losses[-self.n_iter_no_change:]
                    if len(recent) < self.n_iter_no_change:
                        continue
                    losses = np.mean(recent, axis=0)
                    patience = 1
                for k in range(n_problems):
                    if not losses[k] <= best_loss[k] - self.tol:
                        n_no_improvement[k] += 1
                    else:
                        n_no_improvement[k] = 0
                    best_loss[k] = min(best_loss[k], losses[k])
                    settled[k] |= n_no_improvement[k] >= patience
                if all(settled):
                    break
            else:
                if not partial and self.tol is not None and max_iter > 1:
                    warnings.warn(
                        f"Maximum number of iterations {max_iter} reached before "
                        "the progressive loss stopped improving; consider increasing "
                        "max_iter.",
                        ConvergenceWarning,
                    )
        return self

    # ------------------------------------------------------------------
    # Passes over subsets of rows validated once: the shards of
    # ``distributed.ThreadShardedTrainer``, which would otherwise copy their
    # rows out of X and check them again at every pass (a third of a shard's
    # time on wide text).  False where a call does more than passes over its
    # rows (RDA+ keeps a reservoir of the chunk's rows for its local phase).
    _passes_over_row_subsets = True

    def _pass_over_rows(self, prepared, rows, columns=None):
        """``partial_fit(X[rows], y[rows])`` on ``prepared =
        _prepare_rows(X, y, ...)``: the same steps in the same order, with
        the same result, without copying the rows or checking X again.
        ``columns``: the sorted columns of those rows' non-zeros, if known;
        the finite checks then read only those of the arrays updated in
        place (on a wide model, the rest of a shard's pass costs less than
        reading all of them)."""
        X, targets, sample_weight = prepared
        self._start_state(False, True, len(targets), X.shape[1], X)
        if columns is not None:
            self._touched_columns = self._changeable_columns(columns)
        try:
            self._run_epochs(X, targets, sample_weight, True,
                             n_jobs=getattr(self, "n_jobs", None), order=rows)
            self._after_call()
        finally:
            self.__dict__.pop("_touched_columns", None)
        return self

    def _after_call(self):
        """Hook: what an algorithm updates once a call's passes are done
        (implicit FTRL's averaged loss).  Nothing by default."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _locate_labels(y, classes):
    """``(index, known)``: where every label of y would be in the sorted
    ``classes`` and whether it is there.  One binary search per label: a
    set difference sorts the whole label vector, which costs as much
    again.  Labels of a type that does not order with the classes' (mixed
    objects) are compared by equality only (index None)."""
    try:
        index = np.searchsorted(classes, y)
        return index, classes[np.minimum(index, classes.shape[0] - 1)] == y
    except TypeError:
        return None, np.isin(y, classes)


def _class_index(y, classes):
    """Index of every label of y in the sorted ``classes``; ValueError naming
    the labels that are not there."""
    y_index, known = _locate_labels(y, classes)
    if not np.all(known):
        unknown = np.unique(y[~known])
        raise ValueError(
            f"y contains labels {unknown.tolist()!r} that are not in "
            f"classes {classes.tolist()!r}."
        )
    return y_index


def check_class_weight(class_weight, classes):
    """ValueError unless the dict ``class_weight`` names only labels of
    ``classes`` and every weight is a finite number >= 0."""
    unknown = set(class_weight) - set(classes.tolist())
    if unknown:
        raise ValueError(
            f"class_weight names labels {sorted(unknown, key=str)!r} "
            f"that are not in classes {classes.tolist()!r}."
        )
    try:
        values = np.asarray(list(class_weight.values()), dtype=np.float64)
    except (TypeError, ValueError):
        values = np.array([np.nan])
    if not (np.all(np.isfinite(values)) and np.all(values >= 0)):
        raise ValueError(
            "class_weight values must be finite non-negative numbers; got "
            f"{class_weight!r}."
        )


def binary_problem_targets(y_index, n_problems):
    """The +-1 labels of each binary problem: class 1 vs 0 when
    ``n_problems == 1``, else class k vs the rest."""
    if n_problems == 1:
        return [np.where(y_index == 1, 1.0, -1.0)]
    return [np.where(y_index == k, 1.0, -1.0) for k in range(n_problems)]


class BaseOnlineLinearClassifier(LinearClassifierMixin, BaseOnlineLinearModel):
    """Base class; see the module docstring.  Not for direct use."""

    _parameter_constraints: dict = {
        **BaseOnlineLinearModel._parameter_constraints,
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "n_jobs": [Integral, None],
    }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by up to ``max_iter`` passes over the training data.

        The fit starts from scratch unless ``warm_start=True``, in which case
        it continues from the current coefficients and adaptive state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; a sparse matrix is used in CSR format.
        y : array-like of shape (n_samples,)
            Class labels (any type scikit-learn accepts).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of every sample (0: the sample makes no
            step); None gives every sample the weight 1.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._transaction(
            self._fit_or_partial_fit, X, y, sample_weight, None, False
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn from one chunk of a stream: one pass, rows in order.

        Successive calls on the chunks of a data set give the same model as
        one epoch of ``fit`` over the whole of it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            One chunk of training data; a sparse matrix is used in CSR
            format.
        y : array-like of shape (n_samples,)
            Class labels of the chunk.
        classes : array-like of shape (n_classes,), default=None
            All the labels of the stream; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of every sample (0: the sample makes no
            step); None gives every sample the weight 1.

        Returns
        -------
        self : object
            The updated estimator.
        """
        return self._transaction(
            self._fit_or_partial_fit, X, y, sample_weight, classes, True
        )

    # ------------------------------------------------------------------
    # validation: nothing here changes fitted state (except the feature
    # count and names on a first call, private to the transaction until the
    # call succeeds)
    def _validate_input(self, X, y, sample_weight, classes, partial):
        first_call = not hasattr(self, "t_") or not (partial or self.warm_start)
        if partial and not first_call:
            self._validate_continuing_params()
        X = check_structure(X)
        checked = None if first_call else self._checked_continuing_input(X, y)
        if checked is None:
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse="csr",
                dtype=[np.float64, np.float32],
                order="C",
                reset=first_call,
                ensure_all_finite=False,  # check_values below
            )
            check_classification_targets(y)
        else:
            X, y = checked
        sample_weight = check_sample_weight(sample_weight, X.shape[0])

        if first_call:
            if partial and classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit."
                )
            all_classes = np.unique(y) if classes is None else np.unique(classes)
            if all_classes.shape[0] < 2:
                raise ValueError(
                    "The number of classes has to be greater than one; got "
                    f"{all_classes.shape[0]} class"
                )
        else:
            all_classes = self.classes_
            if classes is not None and not np.array_equal(
                np.unique(classes), self.classes_
            ):
                raise ValueError(
                    f"`classes={classes!r}` is not the same as on the first call "
                    f"to partial_fit; expected {self.classes_!r}."
                )
        y_index = _class_index(y, all_classes)

        if self.class_weight == "balanced" and partial:
            raise ValueError(
                "class_weight='balanced' is not supported for partial_fit, where "
                "the class frequencies of the whole stream are unknown. Compute "
                "the weights once with sklearn.utils.compute_class_weight("
                "'balanced', classes=classes, y=y_sample) on a representative "
                "sample of labels and pass them as a dict: class_weight={...}."
            )
        if isinstance(self.class_weight, dict):
            check_class_weight(self.class_weight, all_classes)
        if self.class_weight is not None:
            weight_per_class = compute_class_weight(
                self.class_weight, classes=all_classes, y=y
            )
            sample_weight = sample_weight * weight_per_class[y_index]
        if not partial and not np.any(sample_weight):
            # A chunk of zero weights is a valid no-op for partial_fit, but
            # fit would return an untrained model.  Class weights count.
            raise ValueError(
                "The sample weights (times the class weights) must contain at "
                "least one non-zero number."
            )
        check_values(self, X, sample_weight)
        self._check_options(X.shape[1], all_classes.shape[0], first_call)
        return X, y_index, sample_weight, all_classes, first_call

    def _checked_continuing_input(self, X, y):
        """``(X, y)`` as ``validate_data`` and the target checks return them,
        for the common continuing call -- a CSR matrix or C-ordered array of
        float64/float32 of the fitted width, a 1-D array of labels that are
        all classes -- in a few cheap checks instead of milliseconds of
        general validation (what a stream of small chunks pays per call).
        None for anything else: the general path then validates it, with its
        messages."""
        if not isinstance(y, np.ndarray) or not self._is_plain_input(X, c_ordered=True):
            return None
        if y.ndim != 1 or y.shape[0] != X.shape[0] or y.dtype.kind not in "biufU":
            return None
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            return None
        _, known = _locate_labels(y, self.classes_)
        if not np.all(known):
            return None  # not all classes: the general path says what is wrong
        return X, y

    def _check_options(self, n_features, n_classes, first_call):
        """Raise ValueError for parameter combinations the data (or, when
        the call continues a fitted state, that state) rules out; called
        during validation, before any state changes."""

    def _score_of_scores(self, scores, y, sample_weight):
        # accuracy_score(y, predictions, sample_weight), predictions as
        # LinearClassifierMixin.predict makes them from the scores
        return float(np.average(self._labels_from_scores(scores) == y, weights=sample_weight))

    def _class_indices(self, targets):
        # from the +-1 targets of binary_problem_targets: the +1 of each
        # row's problem, or for a single problem its sign
        if len(targets) == 1:
            return (targets[0] > 0).astype(np.intp)
        return np.argmax(np.stack(targets), axis=0)

    def _problem_targets(self, y_index, n_classes):
        """Targets of the independent problems the model is made of:
        +-1 labels, one-vs-rest (a single problem for two classes)."""
        return binary_problem_targets(y_index, 1 if n_classes == 2 else n_classes)

    # ------------------------------------------------------------------
    def _fit_or_partial_fit(self, X, y, sample_weight, classes, partial):
        X, y_index, sample_weight, all_classes, first_call = self._validate_input(
            X, y, sample_weight, classes, partial
        )
        targets = self._problem_targets(y_index, all_classes.shape[0])
        if first_call:
            self.classes_ = all_classes
        self._resolve_parameters(X, sample_weight, first_call)
        self._start_state(first_call, partial, len(targets), X.shape[1], X)
        return self._train(X, targets, sample_weight, partial, first_call)

    def _train(self, X, targets, sample_weight, partial, first_call):
        """The work of a call once its input is validated and its state is
        ready (see the module docstring): here the passes of ``_run_epoch``
        over the binary problems of ``targets`` (+-1 labels), in threads."""
        self._run_epochs(X, targets, sample_weight, partial, n_jobs=self.n_jobs)
        self._after_call()
        return self

    def _prepare_rows(self, X, y, sample_weight=None, classes=None):
        """(X, y) checked as ``partial_fit`` checks them, for passes over
        subsets of their rows (``_pass_over_rows``); the model must be
        fitted.  Changes nothing."""
        X, y_index, sample_weight, all_classes, first_call = self._validate_input(
            X, y, sample_weight, classes, True)
        if first_call:
            raise ValueError("Passes over row subsets continue a fitted model.")
        return X, self._problem_targets(y_index, all_classes.shape[0]), sample_weight

    def decision_function(self, X):
        """Confidence scores ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Signed distance to the decision boundary: one column for a
            binary model (positive: ``classes_[1]``), one per class
            otherwise.
        """
        scores = self._scores(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels for samples in X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The class of the largest score (for two classes: ``classes_[1]``
            where ``decision_function`` is positive).
        """
        # LinearClassifierMixin.predict's labels, without its array-namespace
        # dispatch (the kernels read NumPy arrays): on one row of hashed
        # text 19 us, where the scores take 2.6
        return self._labels_from_scores(self._scores(X))

    # ------------------------------------------------------------------
    def _outputs_from_scores(self, scores):
        """``(predict_proba(X), predict(X))`` from ``scores =
        decision_function(X)`` without another pass over X (the streaming
        scorer's one product per chunk); the probabilities are None where
        the estimator has no ``predict_proba``."""
        proba = self._proba_from_scores(scores) if hasattr(self, "predict_proba") else None
        return proba, self._labels_from_scores(scores)

    def _labels_from_scores(self, scores):
        """``predict``'s labels from the scores of one binary problem (1-D,
        or one column) or of one problem per class."""
        scores = scores.reshape(scores.shape[0], -1)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(np.intp)]
        return self.classes_[scores.argmax(axis=1)]

    @staticmethod
    def _proba_from_loss(scores, loss):
        """Class probabilities implied by ``log_loss`` or ``modified_huber``
        for the scores of ``decision_function``."""
        if loss == "log_loss":
            prob = expit(scores)
        else:  # modified_huber: (clip(score, -1, 1) + 1) / 2
            prob = (np.clip(scores, -1.0, 1.0) + 1.0) / 2.0
        if prob.ndim == 1:
            return np.column_stack([1.0 - prob, prob])
        # one-vs-rest: normalise; rows where every score says "rest" share
        # the mass equally.
        norm = prob.sum(axis=1, keepdims=True)
        empty = norm[:, 0] == 0
        prob[empty] = 1.0
        norm[empty] = prob.shape[1]
        return prob / norm


class BaseOnlineLinearRegressor(RegressorMixin, BaseOnlineLinearModel):
    """Regression twin of ``BaseOnlineLinearClassifier``.  Not for direct use.

    Same contract and the same hooks, for one problem with a real target:
    validation before any state change (a failed call leaves the estimator
    as it was), sample weights (0 = not a step), the epoch loop with
    shuffling, progressive loss, early stopping and verbose output, and
    ``fit`` / ``partial_fit`` / ``warm_start`` semantics.  An algorithm
    defines ``_init_state(1, n_features)`` and
    ``_run_epoch(0, rows, y, sample_weight, order)`` exactly as for the
    classifiers (y is the float64 target).  There are no labels, classes or
    class weights.
    """

    def _score_of_scores(self, scores, y, sample_weight):
        # r2_score(y, scores, sample_weight): 1 - weighted residual sum of
        # squares / weighted total, and for a constant y 1 if every
        # prediction is exact, else 0 (as scikit-learn's force_finite)
        residual = float(sample_weight @ (y - scores.ravel()) ** 2)
        total = float(sample_weight @ (y - np.average(y, weights=sample_weight)) ** 2)
        if total == 0.0:
            return 1.0 if residual == 0.0 else 0.0
        return 1.0 - residual / total

    _parameter_constraints: dict = {**BaseOnlineLinearModel._parameter_constraints}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by up to ``max_iter`` passes over the training data.

        The fit starts from scratch unless ``warm_start=True``, in which case
        it continues from the current coefficients and adaptive state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; a sparse matrix is used in CSR format.
        y : array-like of shape (n_samples,)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of every sample (0: the sample makes no
            step); None gives every sample the weight 1.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._transaction(self._fit_or_partial_fit, X, y, sample_weight, False)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Learn from one chunk of a stream: one pass, rows in order.

        Successive calls on the chunks of a data set give the same model as
        one epoch of ``fit`` over the whole of it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            One chunk of training data; a sparse matrix is used in CSR
            format.
        y : array-like of shape (n_samples,)
            Real-valued targets of the chunk.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of every sample (0: the sample makes no
            step); None gives every sample the weight 1.

        Returns
        -------
        self : object
            The updated estimator.
        """
        return self._transaction(self._fit_or_partial_fit, X, y, sample_weight, True)

    def _validate_input(self, X, y, sample_weight, partial):
        first_call = not hasattr(self, "t_") or not (partial or self.warm_start)
        if partial and not first_call:
            self._validate_continuing_params()
        X, y = validate_data(
            self,
            check_structure(X),
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            order="C",
            reset=first_call,
            y_numeric=True,
            ensure_all_finite=False,  # check_values below
        )
        y = np.ascontiguousarray(y, dtype=np.float64)
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        if not partial and not np.any(sample_weight):
            raise ValueError("Sample weights must contain at least one non-zero number.")
        check_values(self, X, sample_weight, y)
        return X, y, sample_weight, first_call

    def _fit_or_partial_fit(self, X, y, sample_weight, partial):
        X, y, sample_weight, first_call = self._validate_input(
            X, y, sample_weight, partial
        )
        self._resolve_parameters(X, sample_weight, first_call)
        self._start_state(first_call, partial, 1, X.shape[1], X)
        self._run_epochs(X, [y], sample_weight, partial)
        self._after_call()
        return self

    def _prepare_rows(self, X, y, sample_weight=None, classes=None):
        """(X, y) checked as ``partial_fit`` checks them, for passes over
        subsets of their rows (``_pass_over_rows``); the model must be
        fitted.  Changes nothing."""
        X, y, sample_weight, first_call = self._validate_input(X, y, sample_weight, True)
        if first_call:
            raise ValueError("Passes over row subsets continue a fitted model.")
        return X, [y], sample_weight

    def predict(self, X):
        """Linear prediction ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predicted targets.
        """
        return self._scores(X)
