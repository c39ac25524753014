# cython: boundscheck=True, wraparound=True, cdivision=False
"""The short path of calls on a few rows: ``AdaGradClassifier`` (element-wise
and multinomial), the implicit FTRL estimators and ``PairwiseAUCClassifier``.

A stream that learns or scores one row at a time pays, per call, for the
general validation and the transaction of ``BaseOnlineLinearModel``:
scikit-learn's input checks, a copy of the attribute dict, the saved columns,
the epoch loop.  On a row of 50 non-zeros that was some 100 to 230
microseconds to learn and 20 to 30 to score, against 1 to 2 for the kernel's
own work (``benchmarks/bench_partial_fit.py``).  This module takes the common
case -- a model continued with the options it was fitted with, a canonical
CSR matrix or C-ordered array of a few finite rows of the fitted width, labels
that are all classes (finite numbers for a regressor) -- through the same
kernel with the same arguments, so the model is bit for bit the one the
general path gives:

* the input is checked by a few comparisons and one compiled scan of its
  values (``_dataset.plain_rows_largest``), and anything they do not vouch
  for (unsorted or duplicated columns, NaN, unknown labels, sample weights,
  pandas frames, changed parameters, ...) goes to the general path, which
  names the fault;
* the passes of every problem are one compiled call (the kernel module's
  ``learn_rows``: the scan, then the passes), which stays all or nothing: it
  saves the entries of the rows' columns before the passes and checks them
  after, with every scalar the passes changed, and puts them back if one is
  not finite (the call then goes to the general path, which raises its
  error).  The estimator's own attributes change only after it, and an
  interruption then takes the passes back too;
* the kernel's Problems are kept between calls (``_SHORT_PATHS``, outside the
  estimator: pickles, ``get_params`` and ``clone`` do not see them) for as
  long as the estimator's state arrays and its parameters are those they
  were built for.

``_ShortPath`` checks the rows and the labels; a subclass per kernel
(``AdaGradPath``, ``MultinomialPath``, ``ImplicitFTRLPath``,
``PairwiseAUCPath``, named by the estimator's ``_short_path_type``) builds
the Problems and makes the passes.  ``stored_scores`` scores a few rows for
an estimator that stores ``coef_`` and has no short path to learn
(``RDAPlusClassifier``).
"""
import math
import operator
import weakref

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.base import is_classifier
from sklearn.utils.class_weight import compute_class_weight

from . import _adagrad_fast, _adagrad_multinomial_fast, _implicit_ftrl_fast, _pairwise_auc_fast
from ._base import (SCALE_LIMIT, all_finite, check_class_weight, new_state_version,
                    param_values, same_params)
from ._dataset import dense_row_indices, stored_coef_scores

# Chunks up to this many rows take the short path; a larger chunk's own work
# dwarfs the general path's fixed cost, and its problems may run in threads.
SHORT_CHUNK_ROWS = 1024

# id(estimator) -> (weak reference to it, its _ShortPath), dropped with the
# estimator (a plain dict: a WeakKeyDictionary's lookup costs a tenth of a
# short call)
_SHORT_PATHS = {}

_CSR_TYPES = (sp.csr_matrix, sp.csr_array)
_ROW_DTYPES = [((np.dtype(data), np.dtype(index)), (data_name, index_name))
               for data, data_name in ((np.float64, "double"), (np.float32, "float"))
               for index, index_name in ((np.int32, "int32_t"), (np.int64, "int64_t"))]


def _specialised(*functions):
    """{(data dtype, index dtype): the compiled versions of ``functions``
    for those types}, called without the dispatch on the types of their
    arguments (a tenth of a short call)."""
    return {key: tuple(function[names] for function in functions)
            for key, names in _ROW_DTYPES}


# the types of a label that a one-label list may hold to be read without
# numpy (_ShortPath._one_label): those whose value np.asarray([label])
# keeps.  A regressor's target must be a float (an int goes through numpy,
# which reads a very large one as an object), and a Python int too large
# for int64 is no class of a fitted classifier either way.
_LABEL_TYPES = frozenset((bool, int, float, str, np.bool_, np.int64, np.float64, np.str_))
_FLOAT_TYPES = frozenset((float, np.float64))
_ONE_WEIGHT = np.ones(1)
_ONE_WEIGHT.flags.writeable = False

# the row orders of the smallest chunks, read only (the kernels never write them)
_ORDERS = [np.arange(n, dtype=np.int64) for n in range(17)]
for _order in _ORDERS:
    _order.flags.writeable = False


class _ShortPath:
    """What the short calls of one estimator reuse: the label tables and
    what the path was built for.  A subclass adds the kernel's Problems on
    the estimator's state (``__init__``), says whether the state is still
    theirs (``owns``), makes a call's passes (``learn``) and scores plain
    CSR rows (``scores``)."""

    # (data dtype, index dtype) -> (learn_rows, scores of CSR rows)
    kernels = {}

    def __init__(self, est, params):
        self.params = params
        self.class_weight = (dict(est.class_weight)
                             if isinstance(getattr(est, "class_weight", None), dict)
                             else None)  # a dict may change in place
        self.n_features = est.n_features_in_
        self.dense_columns = None  # made at the first dense chunk
        self.classifier = is_classifier(est)
        if self.classifier:
            self._label_tables(est)
        else:
            # a one-row call's target, written in place (as a classifier's
            # targets are kept per class): a new array cost a fourteenth of it
            self.one_target = np.empty((1, 1))

    def _label_tables(self, est):
        classes = est.classes_
        self.class_index = {label: c for c, label in enumerate(classes.tolist())}
        self.class_set = set(self.class_index)
        n_classes = len(classes)
        self.targets = self._class_targets(n_classes)
        self.class_weights = (
            np.ones(n_classes) if est.class_weight is None
            else compute_class_weight(est.class_weight, classes=classes, y=classes))
        # the overflow check (check_values) with the largest weight of any
        # class: stricter than the chunk's own, so it never accepts more
        self.largest_weight = max(float(self.class_weights.max()), 1.0)
        # a row of class c: its targets and weight, ready for the kernel
        self.one_row = [(np.ascontiguousarray(self.targets[:, [c]]),
                         self.class_weights[[c]]) for c in range(n_classes)]

    @staticmethod
    def _class_targets(n_classes):
        """targets[k, c]: problem k's +-1 target for class c (one-vs-rest, or
        class 1 against class 0 for a single problem)."""
        positive = np.arange(n_classes) if n_classes > 2 else np.array([1])
        return np.where(positive[:, None] == np.arange(n_classes), 1.0, -1.0)

    def serves(self, est, params):
        return ((_same_objects(self.params, params) or same_params(self.params, params))
                and (self.class_weight is None or est.class_weight == self.class_weight)
                and self.owns(est.__dict__))

    def owns(self, state):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def rows(self, X, csr_only=False):
        """``(data, indices, indptr, is_dense, kernels)`` of X if it is a
        CSR matrix or a C-ordered array of 1 to ``SHORT_CHUNK_ROWS`` rows of
        the fitted width, of contiguous arrays of types the kernels are
        compiled for (``kernels``: their row of ``kernels``), else None.
        ``csr_only`` (scoring): dense X is None too.  Whether the values are
        plain (finite, canonical columns: see the module docstring) is
        checked by the kernel that reads them (``_dataset.plain_rows_largest``)."""
        if type(X) in _CSR_TYPES:
            data, indices, indptr, is_dense = X.data, X.indices, X.indptr, False
            # arrays the compiled calls cannot take (strided views, arrays of
            # more dimensions put in by hand) are the general path's, which
            # says what is wrong; the compiled learning calls must not fail
            # on them before they start (see learn_rows).  A scoring call
            # changes nothing: its kernel's typed arguments refuse them
            # (ValueError) and short_scores hands X to the general path.
            if not csr_only:
                for array in (data, indices, indptr):
                    if array.ndim != 1 or not array.flags.c_contiguous:
                        return None
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
        kernels = self.kernels.get((data.dtype, indices.dtype))
        if kernels is None or indptr.dtype != indices.dtype:
            return None
        return data, indices, indptr, is_dense, kernels

    def labelled(self, y, classes, n_rows):
        """``(targets, sample_weight, largest factor)`` of the chunk's labels
        -- each problem's targets (C-ordered rows), the rows' weights, and
        the largest product of a weight and a target the overflow check
        must allow for -- or None for labels the general path must read."""
        if self.classifier and classes is not None:
            try:
                if set(np.asarray(classes).tolist()) != self.class_set:
                    return None
            except TypeError:  # e.g. unhashable entries
                return None
        if n_rows == 1:  # a stream's call: its one label read without arrays
            if type(y) is list:
                if len(y) == 1 and type(y[0]) in (_LABEL_TYPES if self.classifier
                                                  else _FLOAT_TYPES):
                    return self._one_label(y[0])
            elif (type(y) is np.ndarray and y.shape == (1,)
                  and y.dtype.kind in ("biufU" if self.classifier else "biuf")):
                return self._one_label(y.item())
        # labels as scikit-learn's validation reads them (np.asarray)
        if type(y) is not np.ndarray:
            if type(y) not in (list, tuple):
                return None
            y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != n_rows:
            return None
        if not self.classifier:
            if y.dtype.kind not in "biuf":
                return None
            y = np.ascontiguousarray(y, dtype=np.float64)
            if not all_finite(y):
                return None
            return y[None, :], np.ones(n_rows), max(float(np.abs(y).max()), 1.0)
        if y.dtype.kind not in "biufU":
            return None
        try:
            index = [self.class_index[label] for label in y.tolist()]
        except (KeyError, TypeError):
            return None
        targets = self.targets.take(index, axis=1)  # C-ordered rows
        return targets, self.class_weights[index], self.largest_weight

    def _one_label(self, label):
        """``labelled`` of one row's label, a value that ``np.asarray`` reads
        as it is (a Python scalar of a numpy array, or of the types of
        ``_LABEL_TYPES``), with the same result and without its arrays."""
        if not self.classifier:
            if not math.isfinite(label):
                return None
            target = self.one_target
            target[0, 0] = label  # float(label), as np.array([[label]]) reads it
            return target, _ONE_WEIGHT, max(abs(float(label)), 1.0)
        c = self.class_index.get(label)
        if c is None:
            return None
        targets, sample_weight = self.one_row[c]
        return targets, sample_weight, self.largest_weight


def _same_objects(old, new):
    """Whether two tuples of parameter values hold the same objects: the
    common case of ``same_params``, in a compiled loop (a generator of
    Python costs a fifteenth of a short call)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if a is not b:
            return False
    return True


def _writable_arrays(state, names):
    """Whether the arrays ``names`` of the state that exist can be updated
    in place by a kernel (writable and C-contiguous)."""
    return all(state.get(name) is None
               or (state[name].flags.writeable and state[name].flags.c_contiguous)
               for name in names)


def _taken_back(state, names, old, curve, n_points, learnt, exc):
    """The rest of taking back a short call that raised ``exc`` (its arrays
    put back): the state's ``names`` set to ``old`` again and the loss
    curve cut to ``n_points``.  Then False, the call going to the general
    path, which reads any array, if the exception is the kernel refusing
    the estimator's arrays (``learnt`` None: say an ``intercept_`` that a
    user replaced by one of float32; the kernel changes nothing when it
    raises); else ``exc`` again."""
    del curve[n_points:]
    state.update(zip(names, old))
    if learnt is None and isinstance(exc, (ValueError, TypeError)):
        return False
    raise exc


class _AdaGradStatePath(_ShortPath):
    """What the two AdaGrad paths share: a state of arrays updated in place
    (the estimator's ``_in_place_arrays`` and ``in_place_extra``) under the
    frozen weight rule ``_rule``, in the layout of the kernel
    ``kernel_name`` (``layout_array``: its sums), and the scalars a call
    changes (``scalars``)."""

    kernel_name = layout_array = None  # set by each subclass
    in_place_extra = ()
    scalars = ()

    @classmethod
    def takes(cls, est):
        """Whether the estimator's state and options allow a short path
        (the checks a continuing call of the general path would pass)."""
        state = est.__dict__
        if (cls.layout_array not in state
                # a model pickled before update_ or alpha_ was kept
                or "update_" not in state or "alpha_" not in state
                or not all(name in state
                           for name in cls.scalars + cls.in_place_extra + ("loss_curve_",))
                or est._kernel().name != cls.kernel_name
                or state.get("_rule") != est._weight_rule()
                or est._has_md_state() != (est._update() == "mirror_descent")
                # realigned by a general call (an unpickled state)
                or est._md_entries_off_cache_lines()):
            return False
        if not _writable_arrays(state, est._in_place_arrays() + cls.in_place_extra):
            return False
        est._check_options(est.n_features_in_, len(est.classes_), False)
        return True

    def __init__(self, est, params):
        super().__init__(est, params)
        state = est.__dict__
        # the rule object itself: a general call replaces it, short calls
        # do not
        self.rule = state["_rule"]
        self.array_names = est._in_place_arrays() + self.in_place_extra
        self.arrays = tuple(map(state.get, self.array_names))

    def owns(self, state):
        return (state.get("_rule") is self.rule
                and all(map(operator.is_, map(state.get, self.array_names), self.arrays)))


class AdaGradPath(_AdaGradStatePath):
    """``AdaGradClassifier`` with an element-wise kernel: the state arrays
    are updated in place by ``_adagrad_fast.learn_rows``, which saves and
    checks the entries of the rows' columns itself."""

    kernels = _specialised(_adagrad_fast.learn_rows,
                           _adagrad_fast.csr_row_scores)
    kernel_name, layout_array = "elementwise", "accumulators_"
    # what a short call changes besides the in-place arrays and loss_curve_:
    # the intercept's sums (in place, as the accumulators) and these
    # (replaced, as a general call does: a user may keep the intercept_ of
    # each call)
    intercept_sums = in_place_extra = ("intercept_sum_gradient_",
                                       "intercept_sum_sq_gradient_")
    scalars = ("t_", "n_iter_", "_state_version", "intercept_")
    get_scalars = operator.itemgetter(*scalars)  # a tuple: quicker than a map

    def __init__(self, est, params):
        super().__init__(est, params)
        self.problems = [
            est._problem(k, self.rule, intercept=0.0, intercept_sum_grad=0.0,
                         intercept_sum_sq_grad=0.0)
            for k in range(est.__dict__["accumulators_"].shape[0])
        ]

    def learn(self, est, rows, targets, sample_weight, largest_factor, order):
        data, indices, indptr, is_dense, kernels = rows
        state = est.__dict__
        u, q = state["intercept_sum_gradient_"], state["intercept_sum_sq_gradient_"]
        old_u, old_q = u.tolist(), q.tolist()
        old = self.get_scalars(state)
        curve = state["loss_curve_"]
        n_points = len(curve)
        learnt = None
        try:
            # the passes of every problem, all or nothing, in one compiled
            # call, which writes the intercept sums in place
            learnt = kernels[0](self.problems, data, indices, indptr, is_dense,
                                self.n_features, targets, sample_weight, order,
                                largest_factor, SCALE_LIMIT, old[0], old[3], u, q)
            if learnt is None:  # rows not plain, or a non-finite pass taken back
                return False  # the general path names the fault
            total_loss, total_weight, t, intercept = learnt
            curve.append(total_loss / total_weight if total_weight > 0 else np.nan)
            state.update(zip(self.scalars, (t, 1, new_state_version(), intercept)))
        except BaseException as exc:  # e.g. KeyboardInterrupt: back to the state before
            for problem in self.problems:
                problem.restore_columns()
            u[:], q[:] = old_u, old_q
            return _taken_back(state, self.scalars, old, curve, n_points, learnt, exc)
        return True

    def scores(self, est, X, rows):
        data, indices, indptr, _, kernels = rows
        state = est.__dict__
        return kernels[1](self.problems, state["t_"], state["intercept_"], data, indices,
                          indptr, X.shape[0])


class MultinomialPath(_AdaGradStatePath):
    """``AdaGradClassifier(multi_class="multinomial")``: one problem over
    all classes, whose state arrays are updated in place by
    ``_adagrad_multinomial_fast.learn_rows``, which saves and checks the
    rows of the features of the call's rows itself."""

    kernels = _specialised(_adagrad_multinomial_fast.learn_rows,
                           _adagrad_multinomial_fast.csr_row_scores)
    kernel_name, layout_array = "multinomial", "class_accumulators_"
    # the per-class intercept arrays: new ones at every call (learn_rows
    # reads the state's and returns new ones), as a general call makes
    intercept_arrays = ("class_intercept_", "intercept_sum_gradient_",
                        "intercept_sum_sq_gradient_")
    scalars = ("t_", "n_iter_", "_state_version", "intercept_") + intercept_arrays
    get_scalars = operator.itemgetter(*scalars)

    @staticmethod
    def _class_targets(n_classes):
        # one problem, whose targets are the class indices
        return np.arange(n_classes, dtype=np.float64)[None, :]

    def __init__(self, est, params):
        super().__init__(est, params)
        state = est.__dict__
        # the problem's own intercept arrays, into which learn_rows copies
        # the state's at every call
        self.problem = est._class_problem(
            self.rule, **dict(zip(("intercept", "intercept_sum_grad", "intercept_sum_sq_grad"),
                                  (np.array(state[name]) for name in self.intercept_arrays))))
        self.problems = [self.problem]

    def learn(self, est, rows, targets, sample_weight, largest_factor, order):
        data, indices, indptr, is_dense, kernels = rows
        state = est.__dict__
        old = self.get_scalars(state)
        curve = state["loss_curve_"]
        n_points = len(curve)
        learnt = None
        try:
            # the pass, all or nothing, in one compiled call, from the
            # state's t_ and intercept arrays (the last three of old)
            learnt = kernels[0](self.problem, data, indices, indptr, is_dense, self.n_features,
                                targets, sample_weight, order, largest_factor, SCALE_LIMIT,
                                old[0], *old[4:])
            if learnt is None:  # rows not plain, or a non-finite pass taken back
                return False  # the general path names the fault
            total_loss, total_weight, t, after, published = learnt
            curve.append(total_loss / total_weight if total_weight > 0 else np.nan)
            # intercept_ as _publish_class_intercepts makes it: more than two
            # classes, the class intercepts themselves; two, the kernel's
            # b_1 - b_0
            intercept, sums, squares = after
            state.update(zip(self.scalars, (t, 1, new_state_version(),
                                            intercept if published is None else published,
                                            intercept, sums, squares)))
        except BaseException as exc:  # e.g. KeyboardInterrupt: back to the state before
            self.problem.restore_features()
            return _taken_back(state, self.scalars, old, curve, n_points, learnt, exc)
        return True

    def scores(self, est, X, rows):
        data, indices, indptr, _, kernels = rows
        state = est.__dict__
        return kernels[1](self.problem, state["t_"], state["intercept_"], data, indices,
                          indptr, X.shape[0])


class ImplicitFTRLPath(_ShortPath):
    """``ImplicitFTRLClassifier`` and ``ImplicitFTRLRegressor`` once the
    first call has fixed G (and with it lambda): ``scaled_coef_`` is updated
    in place by ``_implicit_ftrl_fast.learn_rows``, which saves its entries
    at the rows' columns before the passes and checks them after, with the
    scalars of every problem."""

    kernels = _specialised(_implicit_ftrl_fast.learn_rows,
                           _implicit_ftrl_fast.csr_row_scores)
    # the per-problem values a call changes (replaced by new arrays, as a
    # general call replaces them), and the call's own
    after_names = ("scaled_intercept_", "intercept_", "lambda_", "pending_gamma_",
                   "sq_norm_scaled_coef_", "cumulative_loss_", "cumulative_weight_")
    changed = after_names + ("t_", "n_iter_", "_state_version", "average_loss_")
    get_changed = operator.itemgetter(*changed)
    # the per-problem values the passes start from (read by learn_rows)
    get_before = operator.itemgetter("scaled_intercept_", "lambda_", "pending_gamma_",
                                     "sq_norm_scaled_coef_", "cumulative_loss_",
                                     "cumulative_weight_")
    state_names = ("scaled_coef_", "beta_", "loss_curve_") + changed

    @classmethod
    def takes(cls, est):
        state = est.__dict__
        if not all(name in state for name in cls.state_names):
            return False
        theta = state["scaled_coef_"]
        lam = state["lambda_"]
        # before G is fixed the first pass estimates it from the data
        return (theta.flags.writeable and theta.flags.c_contiguous
                and bool(np.all(lam > 0)) and all_finite(lam)
                and not (est.loss == "huber" and getattr(est, "epsilon", None) == 0))

    def __init__(self, est, params):
        super().__init__(est, params)
        state = est.__dict__
        self.theta = state["scaled_coef_"]
        self.problem_theta = self.theta.reshape(len(state["beta_"]), -1)  # a row per problem
        self.beta = state["beta_"].tolist()
        # the estimator's own Problems (one loss object shared); a call
        # sets their scalars from the state before its pass
        loss = est._make_loss()
        self.problems = [est._problem(k, loss) for k in range(len(self.beta))]

    def owns(self, state):
        return state.get("scaled_coef_") is self.theta and state["beta_"].tolist() == self.beta

    def learn(self, est, rows, targets, sample_weight, largest_factor, order):
        data, indices, indptr, is_dense, kernels = rows
        state = est.__dict__
        old = self.get_changed(state)
        curve = state["loss_curve_"]
        n_points = len(curve)
        learnt = None
        try:
            # the passes of every problem, all or nothing, in one compiled
            # call, which checks every value it changed
            learnt = kernels[0](self.problems, data, indices, indptr, is_dense,
                                self.n_features, targets, sample_weight, order,
                                largest_factor, SCALE_LIMIT, state["t_"],
                                *self.get_before(state))
            if learnt is None:  # rows not plain, or a non-finite pass taken back
                return False  # the general path names the fault
            after, t, total_loss, total_weight, average_loss = learnt
            curve.append(total_loss / total_weight if total_weight > 0 else np.nan)
            state.update(zip(self.after_names, after))
            state.update(t_=t, n_iter_=1, _state_version=new_state_version(),
                         average_loss_=average_loss)
        except BaseException as exc:  # e.g. KeyboardInterrupt: back to the state before
            for problem in self.problems:
                problem.restore_columns()
            return _taken_back(state, self.changed, old, curve, n_points, learnt, exc)
        return True

    def scores(self, est, X, rows):
        data, indices, indptr, _, kernels = rows
        # the weights of the rows' columns and their sums as the general
        # path computes them (_sparse_products): the same scores, bit for bit
        state = est.__dict__
        scores = kernels[1](self.problem_theta, state["lambda_"], state["intercept_"],
                            data, indices, indptr, X.shape[0])
        return scores if scores is None or self.theta.ndim == 2 else scores[:, 0]


class PairwiseAUCPath(_ShortPath):
    """``PairwiseAUCClassifier`` while its weights move by their momentum
    alone (``_moves_by_momentum_only``: no projection, no averaging) and
    ``eta_`` is resolved: the kernel's problem is kept, with a workspace of
    its own, and ``_pairwise_auc_fast.learn_rows`` resets it to the fitted
    values and makes the pass, updating the arrays in place in the columns
    the call can change (the rows', the partner's and those of non-zero
    momentum that the last call listed: ``_changeable_columns``) and
    putting their entries back if it leaves a value that is not finite.
    Rows are scored with the stored ``coef_`` (``_dataset.stored_coef_scores``)."""

    kernels = _specialised(_pairwise_auc_fast.learn_rows, stored_coef_scores)
    problems = ()  # one problem, never run in threads (short_partial_fit)
    # updated in place: the first three by the pass, coef_ in the columns
    # the pass can change
    array_names = ("iterate_", "momentum_", "sum_sq_gradient_", "coef_")
    # what a call replaces, and its own
    scalars = ("t_", "n_iter_", "_state_version", "score_stats_", "total_sq_gradient_",
               "pair_weight_", "ordered_pair_weight_", "progressive_auc_", "intercept_",
               "last_sample_indices_", "last_sample_values_", "last_sample_label_",
               "last_sample_weight_")
    get_scalars = operator.itemgetter(*scalars)
    # the fitted values the pass starts from, after t_ and total_sq_gradient_
    get_before = operator.itemgetter("pair_weight_", "ordered_pair_weight_",
                                     "last_sample_indices_", "last_sample_values_",
                                     "last_sample_label_", "last_sample_weight_",
                                     "score_stats_")

    @classmethod
    def takes(cls, est):
        state = est.__dict__
        if not all(name in state for name in cls.array_names + cls.scalars + ("eta_",)):
            return False
        eta = state["eta_"]
        if (not isinstance(eta, np.ndarray) or eta.shape != (1,)
                or not math.isfinite(eta[0])  # "auto" unresolved: the general path resolves it
                or (not isinstance(est.eta, str) and float(est.eta) != eta[0])
                or est.loss == "logistic" or est.n_jobs != "deprecated"):  # their warnings
            return False
        return est._moves_by_momentum_only() and _writable_arrays(state, cls.array_names)

    def __init__(self, est, params):
        super().__init__(est, params)
        state = est.__dict__
        self.arrays = tuple(state[name] for name in self.array_names) + (state["eta_"],)
        self.fit_intercept = bool(est.fit_intercept)
        self.problem = est._short_problem()

    def owns(self, state):
        return all(map(operator.is_, map(state.get, self.array_names + ("eta_",)), self.arrays))

    def learn(self, est, rows, targets, sample_weight, largest_factor, order):
        data, indices, indptr, is_dense, kernels = rows
        support = est._listed_momentum_support()
        if support is None:
            return False  # the general path reads momentum_ once, and lists it
        state = est.__dict__
        old = self.get_scalars(state)
        curve = state["loss_curve_"]
        n_points = len(curve)
        learnt = None
        try:
            learnt = kernels[0](self.problem, data, indices, indptr, is_dense,
                                self.n_features, targets[0], sample_weight, order,
                                largest_factor, SCALE_LIMIT, state["t_"],
                                state["total_sq_gradient_"][0], *self.get_before(state),
                                support, self.fit_intercept)
            if learnt is None:  # rows not plain, or a non-finite pass taken back
                return False  # the general path names the fault
            (sum_loss, sum_weight, t, pair_weight, ordered_weight, label, weight, last,
             score_stats, total_sq_gradient, intercept, support) = learnt
            curve.append(sum_loss / sum_weight if sum_weight > 0 else np.nan)
            state.update(
                t_=t, n_iter_=1, _state_version=new_state_version(), score_stats_=score_stats,
                total_sq_gradient_=total_sq_gradient, pair_weight_=pair_weight,
                ordered_pair_weight_=ordered_weight,
                progressive_auc_=ordered_weight / pair_weight if pair_weight > 0 else np.nan,
                intercept_=intercept)
            if last is not None:
                state.update(last_sample_indices_=last[0], last_sample_values_=last[1],
                             last_sample_label_=label, last_sample_weight_=weight)
            est._list_momentum_support(support)
            self.problem.commit()
        except BaseException as exc:  # e.g. KeyboardInterrupt: back to the state before
            # (the pass, if it was made: the kernel takes back one it fails itself)
            self.problem.restore_moving()
            return _taken_back(state, self.scalars, old, curve, n_points, learnt, exc)
        return True

    def scores(self, est, X, rows):
        data, indices, indptr, _, kernels = rows
        state = est.__dict__
        return kernels[1](state["coef_"], state["intercept_"], data, indices, indptr,
                          X.shape[0])


def _short_path(est, scoring=False):
    """The estimator's short path, made if its state and options allow one
    (the checks a continuing call of the general path would pass), or
    None.  ``scoring``: a path already made that still owns the state will
    do whatever the parameters are now: scores are a function of the fitted
    state (under the rule it was fitted with), not of parameters set since."""
    state = est.__dict__
    if "n_features_in_" not in state or "feature_names_in_" in state:
        return None
    if scoring:
        known = _SHORT_PATHS.get(id(est))
        if known is not None and known[0]() is est and known[1].owns(state):
            return known[1]
    try:
        params = param_values(est)
    except KeyError:  # a parameter deleted: the general path says what is wrong
        return None
    known = _SHORT_PATHS.get(id(est))
    if known is not None and known[0]() is est and known[1].serves(est, params):
        return known[1]
    if est.verbose or getattr(est, "class_weight", None) == "balanced":
        return None
    path_type = est._short_path_type
    try:
        if not path_type.takes(est):
            return None
        est._validate_continuing_params()  # parameters set since the last call
        if isinstance(getattr(est, "class_weight", None), dict):
            check_class_weight(est.class_weight, est.classes_)
        path = path_type(est, params)
    except (ValueError, KeyError, TypeError):  # the general path raises it
        return None
    key = id(est)  # free again only once est is gone, and its entry with it
    _SHORT_PATHS[key] = (weakref.ref(est, lambda _: _SHORT_PATHS.pop(key, None)), path)
    return path


def short_partial_fit(est, X, y, classes, sample_weight):
    """``est.partial_fit(X, y[, classes])`` through the short path when it
    takes the call (True), else nothing done (False)."""
    if sample_weight is not None:
        return False
    path = _short_path(est)
    if path is None:
        return False
    rows = path.rows(X)
    if rows is None:
        return False
    n_rows = X.shape[0]
    if (len(path.problems) > 1 and n_rows > 1
            and effective_n_jobs(getattr(est, "n_jobs", None)) > 1):
        return False  # the general path runs the problems in threads
    labelled = path.labelled(y, classes, n_rows)
    if labelled is None:
        return False
    order = _ORDERS[n_rows] if n_rows < len(_ORDERS) else np.arange(n_rows, dtype=np.int64)
    return path.learn(est, rows, *labelled, order)


def short_scores(est, X):
    """``decision_function(X)`` before its ravel, for a few plain CSR rows
    (computed from the state at the rows' columns), else None."""
    path = _short_path(est, scoring=True)
    if path is None:
        return None
    rows = path.rows(X, csr_only=True)
    if rows is None:
        return None
    try:
        return path.scores(est, X, rows)  # None for rows that are not plain
    except (ValueError, TypeError):  # arrays a user replaced: the general path's
        return None


# (data dtype, index dtype) -> stored_coef_scores for those types
_STORED_SCORES = {key: functions[0]
                  for key, functions in _specialised(stored_coef_scores).items()}


def stored_scores(est, X):
    """``X @ coef_.T + intercept_`` (n_samples, n_problems) of a few plain
    CSR rows for a fitted model whose ``coef_`` and ``intercept_`` are
    stored float64 arrays, in one compiled call (``_dataset.stored_coef_scores``,
    which checks the rows as the general validation would), else None: the
    general path then validates X and says what is wrong.  One row of
    hashed text: 12.4 us through the general path, of which its structure
    check 3.6 and scipy's product 5.1."""
    state = est.__dict__
    if (type(X) not in _CSR_TYPES or X.shape[0] > SHORT_CHUNK_ROWS
            or "feature_names_in_" in state or state.get("n_features_in_") != X.shape[1]):
        return None
    coef = state.get("coef_")
    kernel = _STORED_SCORES.get((X.data.dtype, X.indices.dtype))
    if (kernel is None or type(coef) is not np.ndarray or coef.dtype != np.float64
            or coef.ndim != 2 or not coef.flags.c_contiguous):
        return None
    try:
        return kernel(coef, state.get("intercept_"), X.data, X.indices, X.indptr, X.shape[0])
    except (ValueError, TypeError):  # arrays a user replaced: the general path's
        return None
