"""The short path of ``AdaGradClassifier``'s calls on a few rows.

A stream that learns or scores one row at a time pays, per call, for the
general validation and the transaction of ``BaseOnlineLinearModel``:
scikit-learn's input checks, a copy of the attribute dict, the saved columns,
the epoch loop.  On a row of 50 non-zeros that was some 150 microseconds to
learn and 30 to score, against 1.5 for the kernel's own work
(``benchmarks/bench_partial_fit.py``).  This module takes the common case --
an element-wise model continued with the options it was fitted with, a
canonical CSR matrix or C-ordered array of a few finite rows of the fitted
width, labels that are all classes -- through the same kernel with the same
arguments, so the model is bit for bit the one the general path gives:

* the input is checked by one compiled scan (``_dataset.plain_rows``) plus a
  few comparisons, and anything it does not vouch for (unsorted or
  duplicated columns, NaN, unknown labels, sample weights, pandas frames,
  changed parameters, ...) goes to the general path, which names the fault;
* the call stays all or nothing: each problem's pass saves the entries of
  the rows' columns first and checks them after (``run_epoch(...,
  all_or_nothing=True)``); they are put back if a pass fails or the call is
  interrupted, and the scalars of the estimator change only once every pass
  has succeeded.  A pass that makes the state non-finite is taken back and
  the call is handed to the general path, which raises its error;
* the kernel's Problems are kept between calls (``_SHORT_PATHS``, outside the
  estimator: pickles, ``get_params`` and ``clone`` do not see them) for as
  long as the estimator's state arrays, its weight rule and its parameters
  are those they were built for.
"""
import operator
import weakref

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.utils.class_weight import compute_class_weight

from . import _adagrad_fast
from ._base import SCALE_LIMIT, check_class_weight, new_state_version
from ._dataset import dense_row_indices, plain_rows

# Chunks up to this many rows take the short path; a larger chunk's own work
# dwarfs the general path's fixed cost, and its problems may run in threads.
SHORT_CHUNK_ROWS = 1024

# id(estimator) -> (weak reference to it, its _ShortPath), dropped with the
# estimator (a plain dict: a WeakKeyDictionary's lookup costs a tenth of a
# short call)
_SHORT_PATHS = {}

_CSR_TYPES = (sp.csr_matrix, sp.csr_array)
# (plain_rows, run_epoch, csr_row_scores) for the dtypes of (data, indices):
# their compiled versions for those types, called without the dispatch on
# the types of their arguments (a tenth of a short call)
_SPECIALISED = {
    (np.dtype(data), np.dtype(index)): (
        plain_rows[data_name, index_name],
        _adagrad_fast.run_epoch[data_name, index_name],
        _adagrad_fast.csr_row_scores[data_name, index_name])
    for data, data_name in ((np.float64, "double"), (np.float32, "float"))
    for index, index_name in ((np.int32, "int32_t"), (np.int64, "int64_t"))
}
# what a short call changes besides the in-place arrays and loss_curve_: the
# intercept's sums (in place, as the accumulators) and these (replaced, as a
# general call does: a user may keep the intercept_ of each call)
_INTERCEPT_SUMS = ("intercept_sum_gradient_", "intercept_sum_sq_gradient_")
_SCALARS = ("t_", "n_iter_", "_state_version", "intercept_")
# the row orders of the smallest chunks, read only (the kernels never write them)
_ORDERS = [np.arange(n, dtype=np.int64) for n in range(17)]
for _order in _ORDERS:
    _order.flags.writeable = False


class _ShortPath:
    """What the short calls of one estimator reuse: the kernel's Problems
    on its state arrays, the label tables, and what they were built for."""

    def __init__(self, est, params):
        state = est.__dict__
        self.params = params
        self.class_weight = (dict(est.class_weight) if isinstance(est.class_weight, dict)
                             else None)  # a dict may change in place
        # the rule object itself: a general call replaces it (and the
        # intercept arrays), short calls do not
        self.rule = state["_rule"]
        self.array_names = est._in_place_arrays() + _INTERCEPT_SUMS
        self.arrays = tuple(map(state.get, self.array_names))
        self.problems = [
            est._problem(k, self.rule, intercept=0.0, intercept_sum_grad=0.0,
                         intercept_sum_sq_grad=0.0)
            for k in range(state["accumulators_"].shape[0])
        ]
        classes = est.classes_
        self.n_features = est.n_features_in_
        self.class_index = {label: c for c, label in enumerate(classes.tolist())}
        self.class_set = set(self.class_index)
        # targets[k, c]: problem k's +-1 target for class c (one-vs-rest, or
        # class 1 against class 0 for a single problem)
        n_classes = len(classes)
        positive = np.arange(n_classes) if len(self.problems) > 1 else np.array([1])
        self.targets = np.where(positive[:, None] == np.arange(n_classes), 1.0, -1.0)
        self.class_weights = (
            np.ones(n_classes) if est.class_weight is None
            else compute_class_weight(est.class_weight, classes=classes, y=classes))
        # the overflow check (check_values) with the largest weight of any
        # class: stricter than the chunk's own, so it never accepts more
        self.largest_weight = max(float(self.class_weights.max()), 1.0)
        # a row of class c: its targets and weight, ready for the kernel
        self.one_row = [(np.ascontiguousarray(self.targets[:, [c]]),
                         self.class_weights[[c]]) for c in range(n_classes)]
        self.dense_columns = None  # made at the first dense chunk

    def serves(self, est, params):
        state = est.__dict__
        return (params == self.params and state.get("_rule") is self.rule
                and (self.class_weight is None or est.class_weight == self.class_weight)
                and all(map(operator.is_, map(state.get, self.array_names), self.arrays)))

    def rows(self, X, csr_only=False):
        """``(data, indices, indptr, is_dense, largest |x|, kernels)`` of a
        plain X (see the module docstring; ``kernels``: the row of
        ``_SPECIALISED`` for its dtypes), or None.  ``csr_only``: dense X
        is None too."""
        if type(X) in _CSR_TYPES:
            data, indices, indptr, is_dense = X.data, X.indices, X.indptr, False
        elif csr_only or type(X) is not np.ndarray or X.ndim != 2 or not X.flags.c_contiguous:
            return None
        else:
            if self.dense_columns is None:
                self.dense_columns = dense_row_indices(self.n_features)
            data, indices, is_dense = X.reshape(-1), self.dense_columns, True
            indptr = indices[:1]  # unused, of the indices' type
        n_rows, n_features = X.shape
        if n_features != self.n_features or not 1 <= n_rows <= SHORT_CHUNK_ROWS:
            return None
        kernels = _SPECIALISED.get((data.dtype, indices.dtype))
        if kernels is None or indptr.dtype != indices.dtype:
            return None
        try:
            largest = kernels[0](data, indices, indptr, is_dense, n_features, n_rows)
        except ValueError:  # strided arrays
            return None
        return None if largest < 0 else (data, indices, indptr, is_dense, largest, kernels)


_PARAM_GETTERS = {}


def _params(est):
    """The values of the estimator's parameters (compared by ``==``)."""
    cls = type(est)
    getter = _PARAM_GETTERS.get(cls)
    if getter is None:
        getter = _PARAM_GETTERS[cls] = operator.itemgetter(*cls._get_param_names())
    return getter(est.__dict__)


def _short_path(est):
    """The estimator's _ShortPath, made if its state and options allow one
    (the checks a continuing call of the general path would pass), or
    None."""
    state = est.__dict__
    if "accumulators_" not in state or "feature_names_in_" in state:
        return None
    try:
        params = _params(est)
    except KeyError:  # a parameter deleted: the general path says what is wrong
        return None
    known = _SHORT_PATHS.get(id(est))
    if known is not None and known[0]() is est and known[1].serves(est, params):
        return known[1]
    if (est.verbose
            or not all(name in state for name in _SCALARS + _INTERCEPT_SUMS + ("loss_curve_",))
            or est._kernel().name != "elementwise"
            or state.get("_rule") != est._weight_rule()
            or ("md_weights_" in state) != (est.update == "mirror_descent")
            or est.class_weight == "balanced"):
        return None
    for name in est._in_place_arrays() + _INTERCEPT_SUMS:
        array = state.get(name)
        if array is not None and not (array.flags.writeable and array.flags.c_contiguous):
            return None
    try:
        est._check_options(est.n_features_in_, len(est.classes_), False)
        if isinstance(est.class_weight, dict):
            check_class_weight(est.class_weight, est.classes_)
    except ValueError:  # the general path raises it
        return None
    path = _ShortPath(est, params)
    key = id(est)  # free again only once est is gone, and its entry with it
    _SHORT_PATHS[key] = (weakref.ref(est, lambda _: _SHORT_PATHS.pop(key, None)), path)
    return path


def short_partial_fit(est, X, y, classes, sample_weight):
    """``est.partial_fit(X, y, classes)`` through the short path when it
    takes the call (True), else nothing done (False)."""
    if sample_weight is not None:
        return False
    path = _short_path(est)
    if path is None:
        return False
    rows = path.rows(X)
    if rows is None:
        return False
    data, indices, indptr, is_dense, largest, kernels = rows
    n_rows = X.shape[0]
    problems = path.problems
    if len(problems) > 1 and n_rows > 1 and effective_n_jobs(est.n_jobs) > 1:
        return False  # the general path runs the problems in threads
    # labels as scikit-learn's validation reads them (np.asarray), then
    # looked up among the classes
    if type(y) is not np.ndarray:
        if type(y) not in (list, tuple):
            return False
        y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_rows or y.dtype.kind not in "biufU":
        return False
    try:
        if classes is not None and set(np.asarray(classes).tolist()) != path.class_set:
            return False
        index = [path.class_index[label] for label in y.tolist()]
    except (KeyError, TypeError):
        return False
    if max(largest, 1.0) * path.largest_weight >= SCALE_LIMIT:
        return False  # the general path checks the chunk's own weights
    if n_rows == 1:
        targets, sample_weight = path.one_row[index[0]]
    else:
        targets = path.targets.take(index, axis=1)  # C-ordered rows
        sample_weight = path.class_weights[index]
    order = _ORDERS[n_rows] if n_rows < len(_ORDERS) else np.arange(n_rows, dtype=np.int64)

    state = est.__dict__
    old = tuple(map(state.__getitem__, _SCALARS))
    t, _, _, intercept = old
    u, q = state["intercept_sum_gradient_"], state["intercept_sum_sq_gradient_"]
    before = [(intercept[k], u[k], q[k]) for k in range(len(problems))]
    curve = state["loss_curve_"]
    n_points = len(curve)
    results, started = [], 0
    try:
        for k, problem in enumerate(problems):
            problem.t = t
            problem.intercept, problem.intercept_sum_grad, problem.intercept_sum_sq_grad = (
                before[k])
            started += 1
            result = kernels[1](problem, data, indices, indptr, is_dense, path.n_features,
                                targets[k], sample_weight, order, True)
            if result is None:  # non-finite: taken back by the kernel
                for earlier in problems[:k]:
                    earlier.restore_columns()
                return False  # the general path raises its error
            results.append(result)
        total_loss, total_weight = results[0]
        for result in results[1:]:
            total_loss += result[0]
        curve.append(total_loss / total_weight if total_weight > 0 else np.nan)
        for k, problem in enumerate(problems):
            u[k] = problem.intercept_sum_grad
            q[k] = problem.intercept_sum_sq_grad
        state.update(zip(_SCALARS, (problems[0].t, 1, new_state_version(),
                                    np.array([p.intercept for p in problems]))))
    except BaseException:  # e.g. KeyboardInterrupt: back to the state before
        for problem in problems[:started]:
            problem.restore_columns()
        for k, (_, sum_grad, sum_sq_grad) in enumerate(before):
            u[k], q[k] = sum_grad, sum_sq_grad
        del curve[n_points:]
        state.update(zip(_SCALARS, old))
        raise
    return True


def short_scores(est, X):
    """``decision_function(X)`` before its ravel, for a few plain CSR rows
    (computed from the state at the rows' columns), else None."""
    path = _short_path(est)
    if path is None:
        return None
    rows = path.rows(X, csr_only=True)
    if rows is None:
        return None
    data, indices, indptr, _, _, kernels = rows
    scores = np.empty((X.shape[0], len(path.problems)))
    t, intercept = est.t_, est.intercept_
    for k, problem in enumerate(path.problems):
        problem.t = t
        kernels[2](problem, data, indices, indptr, intercept[k],
                                     scores, k)
    return scores
