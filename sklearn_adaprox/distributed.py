"""Data-parallel training on Dask, by merged learner states.

Every partition learns on the worker that holds it, and the learners'
states are merged (``sklearn_adaprox.merge``).

Dask is optional: ``pip install "sklearn_adaprox[dask]"``.  It is imported
when :class:`DaskShardedTrainer` is fitted, not when this module is.
"""
import copy
import operator
import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils import check_random_state
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import disposable, new_state_version
from ._dataset import touched_columns
from .rda_plus import RDAPlusClassifier
from .merge import (
    COMBINES,
    _SparseIncrement,
    _add,
    _apply,
    _assign,
    _increment,
    _merged_in_place,
    _rule_of,
    check_mergeable,
    resolved_attributes,
)

__all__ = ["DaskShardedTrainer", "ThreadShardedTrainer"]

# ThreadShardedTrainer merges and copies only the columns a pass touched
# when they are fewer than 1 / SPARSE_ROUND of all
SPARSE_ROUND = 4

DASK_EXTRA_MESSAGE = (
    "DaskShardedTrainer needs dask and distributed: install them (with dask-ml) "
    'by pip install "sklearn_adaprox[dask]".'
)


def _import_dask():
    """(dask, distributed), or ImportError naming the extra."""
    try:
        import dask
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError(DASK_EXTRA_MESSAGE) from exc
    return dask, distributed


# ----------------------------------------------------------------------
# tasks run on the workers (module-level functions: pickled by reference)
def _rows(X, index):
    """The rows ``index`` of X; a run of consecutive rows of a CSR matrix as
    a matrix over X's own arrays (a view: O(rows), where indexing copies
    every non-zero).  Its arrays are set directly: scipy's constructor
    copies a view of less than half of its array ("pruning")."""
    if hasattr(X, "iloc"):
        return X.iloc[index]
    if (sp.issparse(X) and X.format == "csr" and isinstance(index, np.ndarray)
            and index.size and index[-1] - index[0] + 1 == index.size
            and np.all(np.diff(index) == 1)):
        lo, hi = int(index[0]), int(index[-1]) + 1
        start, end = X.indptr[lo], X.indptr[hi]
        rows = sp.csr_matrix((hi - lo, X.shape[1]), dtype=X.dtype)
        rows.data, rows.indices = X.data[start:end], X.indices[start:end]
        rows.indptr = (X.indptr[lo:hi + 1] - start).astype(X.indices.dtype, copy=False)
        return rows
    return X[index]


def _n_rows(X):
    return X.shape[0]


def _split_partition(X, y, fraction, seed):
    """(X_train, y_train, X_held_out, y_held_out) of one partition, the held
    out rows drawn by a RandomState of ``seed`` (rows keep their order)."""
    n = _n_rows(X)
    held = np.zeros(n, dtype=bool)
    if fraction:
        held[check_random_state(seed).permutation(n)[:int(round(fraction * n))]] = True
    train, test = np.flatnonzero(~held), np.flatnonzero(held)
    return _rows(X, train), _rows(y, train), _rows(X, test), _rows(y, test)


def _split(part, fraction, seed):
    return _split_partition(part[0], part[1], fraction, seed)


def _partial_fit(est, X, y, classes, sample_weight=None):
    if is_classifier(est):
        return est.partial_fit(X, y, classes=classes, sample_weight=sample_weight)
    return est.partial_fit(X, y, sample_weight=sample_weight)


def _initial_state(est, part, classes, pin):
    """The state every partition starts round 1 from, built on the worker
    holding the first partition: the values resolved from its data (``pin``:
    the resolved attribute names) pinned as the parameters of the same name
    (``eta_`` -> ``eta``), then a first call on its first row with weight 0,
    which validates and creates the state without taking a step; a resolved
    attribute without a parameter of its name is set on that state."""
    X, y = part[0], part[1]
    if _n_rows(X) == 0:
        raise ValueError("The first partition has no training rows: it makes the "
                         "state of round 1. Repartition the data.")
    pinned, attributes = {}, {}
    if pin:
        probe = _partial_fit(clone(est), X, y, classes)
        params = est.get_params(deep=False)
        for attr in pin:
            value = np.asarray(getattr(probe, attr))
            name = attr.rstrip("_")
            if name not in params:
                attributes[attr] = value
                continue
            flat = value.ravel()
            if flat.size and not np.all(flat == flat[0]):
                raise ValueError(
                    f"{type(est).__name__} resolved {attr} = {value!r} from the first "
                    f"partition, different per problem: set {name!r} explicitly to "
                    "train it on Dask.")
            pinned[name] = flat[0].item() if flat.size else value.item()
        est = clone(est).set_params(**pinned)
    state = _partial_fit(clone(est), _rows(X, slice(0, 1)), _rows(y, slice(0, 1)), classes,
                         sample_weight=np.zeros(1))
    for attr, value in attributes.items():
        setattr(state, attr, value)
    return state, pinned


def _continued(shard, rows, state, X, y, classes, changed, touched, prepared):
    """``shard`` (None: a new model) made a copy of ``state`` (``changed``:
    the only columns in which they differ, None: any), then one
    ``partial_fit`` pass over the ``rows`` of (X, y).  ``touched``: sorted
    columns that hold all those rows' non-zeros, if known (None).
    ``prepared``: (X, y) as checked once by ``_prepare_rows``, read in
    place (None: the rows are copied out and checked by ``partial_fit``).
    The call saves nothing for a rollback: should it fail, the shard is
    discarded and the state was not touched."""
    if shard is None:
        shard = copy.deepcopy(state)
    else:
        _assign(shard, state, changed)
    with disposable():
        if prepared is not None:
            shard._pass_over_rows(prepared, rows, touched)
        else:
            shard = _partial_fit(shard, _rows(X, rows), y[rows], classes)
    return shard


# Dask hands a task the arrays it received from another process as views of
# the message's buffer, at whatever offset they fall: often not a multiple of
# 8 bytes, and NumPy's arithmetic on a misaligned float64 array is several
# times slower (a round's sum of two increments took 0.17-0.37 s instead of
# 0.05 s).  The tasks that read received arrays copy the misaligned ones.
def _aligned(value):
    """``value`` (an increment or a part of one) with its misaligned arrays
    copied."""
    if isinstance(value, np.ndarray):
        return value if value.flags.aligned else np.array(value)
    if isinstance(value, _SparseIncrement):
        return _SparseIncrement(value.shape, _aligned(value.index), _aligned(value.values))
    if isinstance(value, dict):
        return {k: _aligned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_aligned(v) for v in value)
    return value


def _realigned(model):
    """``model``, or a shallow copy of it with its misaligned arrays copied."""
    misaligned = {name: np.array(value) for name, value in model.__dict__.items()
                  if isinstance(value, np.ndarray) and not value.flags.aligned}
    if not misaligned:
        return model
    model = copy.copy(model)
    model.__dict__.update(misaligned)
    return model


def _prepared(state, part):
    """The training rows of a partition checked once against the state of
    round 1 (``_prepare_rows``), for the passes of every round; None for an
    empty partition, or where the learner's calls do more than pass over
    their rows (RDA+'s reservoir): those rounds call ``partial_fit``."""
    X, y = part[0], part[1]
    if _n_rows(X) == 0 or not state._passes_over_row_subsets:
        return None
    return state._prepare_rows(X, y, classes=getattr(state, "classes_", None))


def _shard_pass(base, part, prepared, classes, position, single, combine="sum"):
    """One ``partial_fit`` pass of a partition from the round's state
    (``prepared``: its rows as ``_prepared`` checked them, else None): the
    fitted model itself when it is the only partition (``single``), else
    its increment over the base, with its progressive loss."""
    X, y = part[0], part[1]
    n = _n_rows(X)
    base = _realigned(base)
    if n == 0:  # an empty partition adds nothing
        model = copy.deepcopy(base)
        model.loss_curve_ = list(model.loss_curve_) + [np.nan]
    else:  # a failed call raises on the client; the copy is dropped
        with disposable():
            model = copy.deepcopy(base)
            if prepared is not None:
                model._pass_over_rows(prepared, None)
            else:
                model = _partial_fit(model, X, y, classes)
    loss = model.loss_curve_[-1] if model.loss_curve_ else np.nan
    progress = np.array([loss * n if np.isfinite(loss) else 0.0, n if np.isfinite(loss) else 0])
    if single:
        return model, progress
    if n == 0:  # no increment at all: an average must not count it either
        return None, progress
    rule = _rule_of(base)
    return _increment(rule, model, rule.sums(base), position, combine), progress


def _add_pass(a, b):
    a, b = _aligned(a), _aligned(b)
    if a[0] is None or b[0] is None:
        return (b[0] if a[0] is None else a[0]), a[1] + b[1]
    return _add(a[0], b[0]), a[1] + b[1]


def _next_state(base, pair, single):
    """The state of the next round, made on the worker that finished the
    round's reduction (``pair``: the reduced increments and progress): it
    stays on the workers, where the next round reads it."""
    total = pair[0]
    if single:
        return total  # the only partition's model
    if total is None:  # every partition was empty
        return base
    base, total = _realigned(base), _aligned(total)
    rule = _rule_of(base)
    return _apply(rule, base, rule.sums(base), total)


def _checked_pins(init):
    """The pinned values of ``_initial_state``'s result, once its state is
    checked to be one the merge covers."""
    state, pinned = init
    _rule_of(state).check(state)
    return pinned


def _round_summary(pair, state):
    """What the client reads of a round: (progress, samples seen)."""
    return pair[1], state.t_


def _held_out_score(model, part):
    """(sum of the per-row score, rows): accuracy for a classifier, minus
    the squared error for a regressor, on the held-out rows."""
    X, y = part[2], part[3]
    n = _n_rows(X)
    if n == 0:
        return np.zeros(2)
    pred = model.predict(X)
    y = np.asarray(y)
    value = np.sum(pred == y) if is_classifier(model) else -np.sum((pred - y) ** 2)
    return np.array([float(value), float(n)])


class _Reduced:
    """The root future of a tree reduction, holding the futures of every
    level below it: if a worker dies with an inner result, the scheduler
    recomputes it from the level below, which must still be wanted by the
    client (a released inner future is forgotten, and the root then fails
    with "already forgotten")."""

    def __init__(self, root, levels):
        self.root, self.levels = root, levels

    def result(self):
        return self.root.result()


def _tree_reduce(client, futures, combine):
    """Pairwise reduction of futures on the workers (a binary tree of
    ``combine`` tasks); the root future (see ``_Reduced``)."""
    levels = [futures]
    while len(futures) > 1:
        pairs = [client.submit(combine, futures[i], futures[i + 1], pure=False)
                 for i in range(0, len(futures) - 1, 2)]
        if len(futures) % 2:
            pairs.append(futures[-1])
        futures = pairs
        levels.append(futures)
    return _Reduced(futures[0], levels)


# RDA+'s local phase, distributed: per partition the loss, the full gradient
# and the Hessian on a few columns at a point (w restricted to its non-zero
# columns); the sums are taken on the workers, the Newton step on the client.
def _binary_targets(y, classes):
    return np.where(np.asarray(y) == classes[1], 1.0, -1.0)


def _margins(X, columns, w_columns, b):
    if columns.shape[0] == 0:
        return np.full(_n_rows(X), float(b))
    return np.asarray(X[:, columns] @ w_columns).ravel() + b


def _newton_pieces(part, classes, columns, w_columns, b, hessian_columns):
    """(sum of the log losses, X^T dl, sum dl, the Hessian block of
    ``hessian_columns`` and the intercept (last), rows) of a partition's
    training rows at the point ``(w, b)``."""
    from scipy.special import expit

    X, y = part[0], part[1]
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    yp = _binary_targets(y, classes)
    z = yp * _margins(X, columns, w_columns, b)
    value = float(np.logaddexp(0.0, -z).sum())
    dl = -yp * expit(-z)
    dd = expit(z) * expit(-z)
    g = np.asarray(X.T @ dl).ravel()
    XF = X[:, hessian_columns]
    XF = XF.toarray() if sp.issparse(XF) else XF
    k = hessian_columns.shape[0]
    H = np.empty((k + 1, k + 1))
    H[:k, :k] = XF.T @ (XF * dd[:, None])
    H[:k, k] = H[k, :k] = XF.T @ dd
    H[k, k] = dd.sum()
    return np.array([value, float(dl.sum()), float(X.shape[0])]), g, H


def _loss_at(part, classes, columns, w_columns, b):
    yp = _binary_targets(part[1], classes)
    X = sp.csr_matrix(part[0]) if sp.issparse(part[0]) else np.asarray(part[0], float)
    return np.array([float(np.logaddexp(0.0, -yp * _margins(X, columns, w_columns, b)).sum())])


def _add_pieces(a, b):
    return tuple(x + y for x, y in zip(a, b))


def _dask_local_phase(client, parts, classes, w, b, M, *, alpha, tol, fit_intercept,
                      max_iter=100):
    """RDA+'s local phase (Lee & Wright 2012, Algorithm 2, step 4) over the
    partitions: Newton steps on the free coordinates of the support ``M``
    (the sign pattern fixed, a coordinate that would change sign set to
    zero by the line search), zero coordinates that violate their
    optimality condition joining ``M``, until ``delta <= tol``.  Returns
    ``(w, b, delta, violation, iterations)``."""
    w, M = w.copy(), M.copy()
    d = w.shape[0]

    def reduce(function, *args):
        tasks = [client.submit(function, p, classes, *args, pure=False) for p in parts]
        return _tree_reduce(client, tasks,
                            _add_pieces if function is _newton_pieces else np.add).result()

    def objective(w, b, N):
        columns = np.flatnonzero(w)
        return reduce(_loss_at, columns, w[columns], b)[0] / N + alpha * np.abs(w).sum()

    delta = violation = np.inf
    for iteration in range(1, max_iter + 1):
        columns, hess = np.flatnonzero(w), np.flatnonzero(M)
        (value, g_b, N), g, H = reduce(_newton_pieces, columns, w[columns], b, hess)
        g, g_b, H = g / N, g_b / N, H / N
        r = np.where(w != 0, g + alpha * np.sign(w),
                     np.sign(g) * np.maximum(np.abs(g) - alpha, 0.0))
        r_b = g_b if fit_intercept else 0.0
        delta = np.sqrt((r @ r + r_b**2) / (d + fit_intercept))
        violation = max(np.abs(r).max(initial=0.0), abs(r_b)) / alpha
        if delta <= tol:
            break
        grow = (w == 0) & (np.abs(g) > alpha) & ~M
        if grow.any():  # the support misses a coordinate: it joins
            M |= grow
            continue
        inner = np.flatnonzero((w[hess] != 0) | (np.abs(g[hess]) > alpha))
        F = hess[inner]
        signs = np.where(w[F] != 0, np.sign(w[F]), -np.sign(g[F]))
        rhs = g[F] + alpha * signs
        keep = np.r_[inner, hess.shape[0]] if fit_intercept else inner
        if fit_intercept:
            rhs = np.r_[rhs, g_b]
        system = H[np.ix_(keep, keep)]
        system[np.diag_indices_from(system)] += 1e-12 * max(np.trace(system) / len(keep), 1e-300)
        step = -np.linalg.lstsq(system, rhs, rcond=None)[0]
        current = value / N + alpha * np.abs(w).sum()
        slope = float(rhs @ step)
        a = 1.0
        while a > 1e-10:
            trial = w.copy()
            trial[F] = w[F] + a * step[:F.shape[0]]
            trial[F] = np.where(np.sign(trial[F]) == signs, trial[F], 0.0)
            b_trial = b + a * step[-1] if fit_intercept else b
            if objective(trial, b_trial, N) <= current + 1e-4 * a * slope:
                w, b = trial, b_trial
                break
            a /= 2
        else:
            break  # no descent left at round-off
    return w, b, delta, violation, iteration


def _labels(y):
    """The distinct labels of y (a dask collection is reduced on the
    workers; only the labels come to the client)."""
    import dask.array as da

    if isinstance(y, da.Array):
        return np.asarray(da.unique(y).compute())
    if hasattr(y, "compute") and hasattr(y, "unique"):  # dask Series
        return np.unique(np.asarray(y.unique().compute()))
    return np.unique(np.asarray(y))


# ----------------------------------------------------------------------
def _estimator_has(name):
    def check(self):
        return hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator,
                       name)
    return check


class _ShardedTrainer(MetaEstimatorMixin, BaseEstimator):
    """What both trainers share: the trained learner's predictions."""

    def _continued_state(self):
        """A copy of ``estimator_`` with the current parameters of
        ``estimator`` and the resolved values pinned (``warm_start``)."""
        state = copy.deepcopy(self.estimator_)
        state.set_params(**self.estimator.get_params(deep=False))
        return state.set_params(**self.resolved_params_)

    # ------------------------------------------------------------------
    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the trained learner (in memory).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions of ``estimator_``.
        """
        check_is_fitted(self)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Compute the scores of the trained learner.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        scores : ndarray
            ``estimator_.decision_function(X)``.
        """
        check_is_fitted(self)
        return self.estimator_.decision_function(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Compute the class probabilities of the trained learner.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            ``estimator_.predict_proba(X)``.
        """
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    def score(self, X, y, sample_weight=None):
        """Return the score of the trained learner (accuracy or R^2).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            ``estimator_.score(X, y, sample_weight)``.
        """
        check_is_fitted(self)
        return self.estimator_.score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.sparse = True
        return tags


class DaskShardedTrainer(_ShardedTrainer):
    """Train an estimator of the package data-parallel on a Dask cluster.

    In each round every partition of the data makes one ``partial_fit``
    pass from the round's state, on the worker that holds the partition;
    the increments of the partitions are added up on the workers (a tree
    reduction) and merged into the next state (``sklearn_adaprox.merge``):
    the exact sum for the parts of the state that are sums, a weighted
    average for the others.  The state stays on the workers from round to
    round; the client receives it after the last.  With one partition the
    result is the in-memory learner's, bit for bit.

    Parameters
    ----------
    estimator : estimator of sklearn_adaprox
        The learner (its parameters are used; it is cloned, never fitted).
        The merge covers element-wise ``AdaGradClassifier``,
        ``ImplicitFTRLClassifier``, ``ImplicitFTRLRegressor``,
        ``PairwiseAUCClassifier`` and ``RDAPlusClassifier``.  A binary
        ``RDAPlusClassifier`` with ``local_phase=True`` runs its rounds of
        dual averaging, then its local phase distributed (see Notes).
    max_iter : int, default=5
        Rounds (passes over the data).
    combine : {"sum", "average"}, default="average"
        How the partitions' increments merge (``sklearn_adaprox.merge``):
        averaged (parameter mixing, stable with many partitions) or added
        (the exact delayed learner, which overshoots from about four
        partitions on: on a9a, 0.85 accuracy after pass 1 and 0.23 after
        pass 2 with four; see ``doc/scaling.md``).
    shuffle : bool, default=True
        Draw a new order of the partitions every round (the order in which
        the increments are added, and the partition whose state is taken
        where a merge takes the last one).  Rows keep their order within a
        partition.
    validation_fraction : float in [0, 1), default=0.0
        Fraction of the rows of every partition held out to measure the
        score after each round (accuracy for a classifier, minus the mean
        squared error for a regressor).  0: no held-out rows and no early
        stopping.
    tol : float or None, default=1e-3
        With held-out rows, training stops when the held-out score has not
        risen above the best so far plus ``tol`` for ``n_iter_no_change``
        rounds.  None: ``max_iter`` rounds.
    n_iter_no_change : int, default=3
        See ``tol``.
    n_partitions : int or None, default=None
        For in-memory input (NumPy or SciPy), the number of row blocks it is
        cut into (None: one per worker).  Dask collections keep their own
        partitions.
    random_state : int, RandomState instance or None, default=None
        Seed of the partition orders and of the held-out rows.
    warm_start : bool, default=False
        Continue from ``estimator_`` (with the current parameters of
        ``estimator``) instead of starting afresh; ``loss_curve_`` and
        ``validation_scores_`` grow.
    verbose : int, default=0
        Print one line per round.

    Attributes
    ----------
    estimator_ : estimator
        The trained learner, a fitted instance of ``estimator``'s class
        whose ``loss_curve_`` holds the progressive loss of every round.
    n_iter_ : int
        Rounds run.
    loss_curve_ : list of float
        Progressive loss of each round (the partitions' ``loss_curve_``
        entries, weighted by their rows).
    validation_scores_ : list of float
        Held-out score after each round (empty without held-out rows).
    n_partitions_ : int
        Partitions of the data.
    resolved_params_ : dict
        Parameters resolved from the data of the first partition and
        pinned for every partition (e.g. implicit FTRL's ``G`` when it is
        None); empty when none are.
    local_phase_iter_ : int
        ``RDAPlusClassifier`` with ``local_phase=True`` only: iterations of
        the distributed local phase.
    classes_ : ndarray of shape (n_classes,)
        Classifiers only.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    sklearn_adaprox.merge : The merge of the partitions' states.

    Notes
    -----
    A meta-estimator rather than a function, so that it clones, pickles
    (without a client: the client is the default one of ``distributed``,
    found when ``fit`` is called) and sits in ``GridSearchCV`` or a
    ``Pipeline`` like any estimator.

    Round 1 starts from a state built on the worker of the first partition:
    values the learner resolves from the data of its first call (the
    class's ``_resolved_params``, implicit FTRL's ``G`` when None) are
    resolved from the first partition and pinned as parameters for every
    partition (then restored on ``estimator_``, whose fitted attributes keep
    the resolved values); then a call on its first row with weight 0
    creates the state without a step.

    **RDA+.**  With ``local_phase=True`` (binary problems), the rounds run
    dual averaging (``local_phase=False`` partitions, merged), then the
    local phase of Lee & Wright (2012) runs over the partitions from the
    merged iterate and its safeguarded support: each iteration every
    partition computes its loss, its gradient and its Hessian on the
    support (``|M| x |M|``, small); the sums come to the client, which
    takes the Newton step on the free coordinates (a coordinate that would
    change sign is set to zero by the line search, whose trial losses are
    summed over the partitions the same way) and adds to the support the
    zero coordinates that violate their optimality condition, until
    ``delta <= tol`` (``tol`` of the estimator).  ``estimator_`` is then the
    dual-averaging learner (``local_phase=False``) with the local phase's
    solution as ``coef_`` and ``intercept_`` and its ``optimality_`` and
    ``violation_``; a further ``partial_fit`` continues dual averaging.

    A worker lost in the middle of a round loses no increment and counts
    none twice: every task is a pure function of its inputs (the round's
    state, a partition), recomputed by Dask if its result is lost, and the
    state is published only when the last round is complete.  If a
    partition fails (invalid data), ``fit`` raises its error and the
    trainer is unchanged.

    Examples
    --------
    >>> import dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> from sklearn_adaprox import AdaGradClassifier
    >>> from sklearn_adaprox.distributed import DaskShardedTrainer
    >>> cluster = LocalCluster(n_workers=2, processes=False, dashboard_address=None)
    >>> client = Client(cluster)
    >>> X = da.random.RandomState(0).random_sample((4000, 10), chunks=(1000, 10))
    >>> y = (X[:, 0] > 0.5).astype(int)
    >>> trainer = DaskShardedTrainer(AdaGradClassifier(), max_iter=3, random_state=0)
    >>> trainer.fit(X, y).n_partitions_
    4
    >>> trainer.n_iter_, float(trainer.score(X.compute(), y.compute())) > 0.9
    (3, True)
    >>> client.close(); cluster.close()
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["partial_fit"])],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "combine": [StrOptions(set(COMBINES))],
        "shuffle": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "tol": [Interval(Real, None, None, closed="neither"), None],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "n_partitions": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, *, max_iter=5, combine="average", shuffle=True,
                 validation_fraction=0.0, tol=1e-3, n_iter_no_change=3, n_partitions=None,
                 random_state=None, warm_start=False, verbose=0):
        self.warm_start = warm_start
        self.estimator = estimator
        self.max_iter = max_iter
        self.combine = combine
        self.shuffle = shuffle
        self.validation_fraction = validation_fraction
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.n_partitions = n_partitions
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------
    def _partitions(self, client, dask, X, y):
        """Futures of the (X, y) partitions, on the workers."""
        import dask.array as da

        is_frame = hasattr(X, "to_delayed") and hasattr(X, "npartitions")
        if isinstance(X, da.Array):
            if X.ndim != 2:
                raise ValueError(f"X must be 2-dimensional; got {X.ndim} dimensions.")
            if X.numblocks[1] != 1:
                X = X.rechunk({1: -1})
            y = y if isinstance(y, da.Array) else da.from_array(np.asarray(y),
                                                                chunks=(X.chunks[0],))
            if y.chunks[0] != X.chunks[0]:
                y = y.rechunk({0: X.chunks[0]})
            xs, ys = list(X.to_delayed().ravel()), list(y.to_delayed().ravel())
        elif is_frame:
            if not (hasattr(y, "npartitions") and y.npartitions == X.npartitions):
                raise ValueError("y must be a dask Series (or DataFrame) with the "
                                 "partitions of X.")
            xs, ys = list(X.to_delayed()), list(y.to_delayed())
        else:  # in memory: row blocks, sent to the workers
            if not sp.issparse(X):
                X = np.asarray(X)
            y = np.asarray(y)
            if X.ndim != 2 or y.shape[0] != X.shape[0]:
                raise ValueError(f"X of shape {X.shape} and y of shape {y.shape} do not "
                                 "match.")
            k = self.n_partitions or max(1, len(client.scheduler_info()["workers"]))
            blocks = np.array_split(np.arange(X.shape[0]), min(k, X.shape[0]))
            return client.scatter([(X[b], y[b]) for b in blocks], hash=False)
        pairs = [dask.delayed(tuple)([xp, yp]) for xp, yp in zip(xs, ys)]
        return client.compute(pairs)

    def fit(self, X, y, classes=None):
        """Train on a Dask collection (or in-memory data), round by round.

        At most ``max_iter`` rounds, fewer with early stopping.

        Parameters
        ----------
        X : dask array (dense or CSR blocks), dask DataFrame, or array-like / sparse matrix
            Training data, partitioned by rows.
        y : dask array, dask Series, or array-like
            Targets, partitioned as X.
        classes : array-like or None, default=None
            Classifiers: all the labels; None computes them from y.  A
            label of a partition that is not among them is an error.

        Returns
        -------
        self : object
            The fitted trainer.
        """
        self._validate_params()
        dask, distributed = _import_dask()
        client = distributed.get_client()
        est = clone(self.estimator)
        local = isinstance(est, RDAPlusClassifier) and est.local_phase
        if local:  # rounds of dual averaging, then the distributed local phase
            est.set_params(local_phase=False)
        rule = _rule_of(est)
        classifier = is_classifier(est)
        warm = self.warm_start and hasattr(self, "estimator_")
        if classifier:
            if warm:
                classes = self.estimator_.classes_
            elif classes is None:
                classes = _labels(y)
            classes = np.unique(np.asarray(classes))
        else:
            classes = None
        if local and classes.shape[0] != 2:
            raise ValueError(
                "The distributed local phase of RDAPlusClassifier is for binary "
                f"problems; got {classes.shape[0]} classes. Set local_phase=False.")
        rng = check_random_state(self.random_state)
        start = time.perf_counter()

        futures = []  # what this fit holds on the cluster (released at the end)
        try:
            raw = self._partitions(client, dask, X, y)
            futures.extend(raw)
            seeds = rng.randint(np.iinfo(np.int32).max, size=len(raw))
            # each partition's tasks run on its home worker (the data stays
            # there), or on another if that one is lost
            homes = [dict(workers=[home], allow_other_workers=True)
                     for home in self._homes(client, raw)]
            parts = [client.submit(_split, p, float(self.validation_fraction), int(s),
                                   pure=False, **home)
                     for p, s, home in zip(raw, seeds, homes)]
            futures.extend(parts)
            n_parts = len(parts)
            if warm:
                state, pinned = self._continued_state(), dict(self.resolved_params_)
                if local:
                    state.set_params(local_phase=False)
                rule.check(state)
                [base] = client.scatter([state], broadcast=True, hash=False)
            else:
                pin = resolved_attributes(est)
                init = client.submit(_initial_state, est, parts[0], classes, pin, pure=False)
                futures.append(init)
                base = client.submit(operator.itemgetter(0), init, pure=False)
                pinned = self._gather(client, client.submit(_checked_pins, init, pure=False),
                                      "the first partition")
            futures.append(base)
            # every partition's rows are checked once, not every round
            prepared = [client.submit(_prepared, base, p, pure=False, **home)
                        for p, home in zip(parts, homes)]
            futures.extend(prepared)
            self._raise_first_failure(client, prepared)

            # The state stays on the workers from round to round: a round's
            # reduction ends on a worker, which makes the next state there,
            # and the next round's tasks read it from there.  The client
            # receives a few numbers per round and the state once, at the
            # end.  The futures of the last two rounds are held: if a worker
            # dies, Dask recomputes what it held from them (see Notes).
            curve = list(self.loss_curve_) if warm else []
            scores = list(self.validation_scores_) if warm else []
            best, no_improvement = -np.inf, 0
            rounds = 0
            held_rounds = []
            for _ in range(self.max_iter):
                order = rng.permutation(n_parts) if self.shuffle else np.arange(n_parts)
                tasks = [client.submit(_shard_pass, base, parts[j], prepared[j], classes,
                                       position, n_parts == 1, self.combine, pure=False,
                                       **homes[j])
                         for position, j in enumerate(order)]
                root = _tree_reduce(client, tasks, _add_pass)
                base = client.submit(_next_state, base, root.root, n_parts == 1, pure=False)
                summary = client.submit(_round_summary, root.root, base, pure=False)
                held_rounds.append([tasks, root.levels, base, summary])
                del held_rounds[:-2]
                progress, seen = self._gather(client, summary, None, tasks, order)
                rounds += 1
                loss = progress[0] / progress[1] if progress[1] > 0 else np.nan
                curve.append(float(loss))
                line = f"-- round {rounds}: samples seen {seen}, progressive loss {loss:.6g}"
                if self.validation_fraction > 0:
                    held = [client.submit(_held_out_score, base, p, pure=False, **home)
                            for p, home in zip(parts, homes)]
                    total = self._gather(client, _tree_reduce(client, held, np.add), None)
                    score = total[0] / total[1] if total[1] > 0 else np.nan
                    scores.append(float(score))
                    line += f", held-out score {score:.6g}"
                if self.verbose:
                    print(f"{line}, elapsed {time.perf_counter() - start:.4f} s")
                if self.tol is None or not scores:
                    continue
                if scores[-1] > best + self.tol:
                    no_improvement = 0
                else:
                    no_improvement += 1
                best = max(best, scores[-1])
                if no_improvement >= self.n_iter_no_change:
                    break
            state = self._gather(client, base, None)
            if local:
                state = self._local_phase(client, parts, classes, state)
                if self.verbose:
                    print(f"-- local phase: {self.local_phase_iter_} Newton iterations, "
                          f"delta {state.optimality_[0]:.3g}, elapsed "
                          f"{time.perf_counter() - start:.3f} s")
        finally:
            # released, not cancelled: the workers drop what no future holds
            # (cancelling futures that others depend on trips the scheduler)
            del futures[:]
            held_rounds = base = None

        if pinned:  # the user's parameters; the fitted attributes keep the values
            state.set_params(**{k: self.estimator.get_params()[k] for k in pinned})
        state.loss_curve_ = list(curve)
        state.n_iter_ = rounds
        self.estimator_ = state
        self.n_iter_ = rounds
        self.loss_curve_ = curve
        self.validation_scores_ = scores
        self.n_partitions_ = n_parts
        self.resolved_params_ = dict(pinned)
        if classifier:
            self.classes_ = state.classes_
        self.n_features_in_ = state.n_features_in_
        if hasattr(state, "feature_names_in_"):
            self.feature_names_in_ = state.feature_names_in_
        return self

    def _local_phase(self, client, parts, classes, state):
        """RDA+'s local phase over the partitions, from the merged
        dual-averaging iterate and its safeguarded support; a copy of
        ``state`` with its solution as ``coef_`` and ``intercept_``."""
        est = self.estimator
        state = copy.deepcopy(state)
        w = np.array(state.coef_[0], dtype=np.float64)
        t = max(int(state.rda_t_[0]), 1)
        alpha = float(state.alpha_[0])  # the alpha in use (resolved or given)
        M = (w != 0) | (np.abs(state.sum_gradient_[0] / t) > est.rho * alpha)
        tol = est.tol if est.tol is not None else 1e-12
        w, b, delta, violation, iterations = _dask_local_phase(
            client, parts, classes, w, float(state.intercept_[0]), M,
            alpha=alpha, tol=tol,
            fit_intercept=bool(est.fit_intercept))
        state.coef_ = np.array(state.coef_, dtype=np.float64)
        state.coef_[0] = w
        state.intercept_ = np.array([b if est.fit_intercept else 0.0])
        state.optimality_ = np.array([delta])
        state.violation_ = np.array([violation])
        state._state_version = new_state_version()
        self.local_phase_iter_ = iterations
        return state

    @staticmethod
    def _homes(client, futures):
        """A worker for each partition (``futures``, once computed): the
        one that holds it, unless that one already has its share of the
        partitions; then the worker with the fewest.  Dask places the
        chunks of a small collection on few workers, which would leave the
        others idle."""
        from distributed import wait

        wait(futures)
        workers = sorted(client.nthreads())
        share = -(-len(futures) // len(workers))
        holders = client.who_has(futures)
        load = dict.fromkeys(workers, 0)
        homes = []
        for future in futures:
            mine = [w for w in holders.get(future.key, ()) if load.get(w, share) < share]
            home = mine[0] if mine else min(workers, key=load.__getitem__)
            load[home] += 1
            homes.append(home)
        return homes

    @classmethod
    def _raise_first_failure(cls, client, futures):
        """Wait for ``futures``, one per partition; the error of the first
        that failed is raised with its partition named."""
        from distributed import wait

        wait(futures)
        for j, future in enumerate(futures):
            if future.status == "error":
                cls._gather(client, future, f"partition {j}")

    @staticmethod
    def _gather(client, future, where, tasks=(), order=None):
        """The result of ``future``; a failed partition's error re-raised on
        the client with the partition named."""
        try:
            return future.result()
        except Exception as error:
            failure = error
            for position, task in enumerate(tasks):
                if task.status == "error":
                    where = f"partition {int(order[position])}"
                    failure = task.exception()
                    break
            if where is None:
                raise
            try:
                named = type(failure)(f"{where}: {failure}")
            except Exception:  # an exception type with another signature
                raise failure from None
            raise named from failure


class ThreadShardedTrainer(_ShardedTrainer):
    """Train an estimator of the package on one machine's cores, by shards.

    The same scheme as :class:`DaskShardedTrainer`, in threads of this
    process and on in-memory data: every pass cuts the rows into
    ``n_shards`` blocks, each block makes one ``partial_fit`` pass from the
    current state in its own thread (the kernels release the GIL), and the
    shard models are merged (``sklearn_adaprox.merge``).  This is what
    parallelises a single binary problem, whose ``n_jobs`` parameter has
    nothing to run in parallel (the estimators' ``n_jobs`` runs the
    problems of one-vs-rest in parallel threads).  It needs no Dask.

    The state and the shard models live from pass to pass: each shard
    copies the state into its own arrays, and the merge is written into the
    state's arrays (no new state per pass, which on a wide model would cost
    more than the merge).  A shard's call saves nothing for a rollback: if
    one fails, ``fit`` raises its error, the shards are dropped and the
    state is the one before the pass.  With ``warm_start=True`` the shard
    models are also kept from one ``fit`` to the next (``n_shards`` copies
    of the state in memory; not pickled), for as long as ``estimator_`` is
    the state they were merged into.

    Parameters
    ----------
    estimator : estimator of sklearn_adaprox
        The learner (cloned, never fitted); the options ``merge`` covers.
    n_jobs : int or None, default=None
        Threads (joblib's convention: None is 1, -1 all cores).
    n_shards : int or None, default=None
        Row blocks per pass; None: as many as threads.  More shards than
        threads simulate a larger cluster (the merge is the same).
    max_iter : int, default=5
        Passes.
    combine : {"sum", "average"}, default="average"
        How the shards merge (see :class:`DaskShardedTrainer`).
    shuffle : bool, default=True
        Permute the rows before each pass (then cut them into blocks).
    random_state : int, RandomState instance or None, default=None
        Seed of the permutations.
    warm_start : bool, default=False
        Continue from ``estimator_`` (with the current parameters of
        ``estimator``) instead of starting afresh; ``loss_curve_`` grows.
    verbose : int, default=0
        Print one line per pass.

    Attributes
    ----------
    estimator_ : estimator
        The trained learner; its ``loss_curve_`` holds the progressive loss
        of every pass.
    n_iter_ : int
        Passes made.
    loss_curve_ : list of float
        Progressive loss of each pass (the shards', weighted by their rows).
    resolved_params_ : dict
        Parameters resolved from the training data (all of it, as the
        in-memory ``fit`` resolves them) and pinned for every shard (see
        :class:`DaskShardedTrainer`).
    classes_ : ndarray of shape (n_classes,)
        Classifiers only.
    n_features_in_ : int
        Number of features.

    See Also
    --------
    DaskShardedTrainer : The same on a Dask cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adaprox import AdaGradClassifier
    >>> from sklearn_adaprox.distributed import ThreadShardedTrainer
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(1000, 10)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> trainer = ThreadShardedTrainer(AdaGradClassifier(), n_jobs=2, max_iter=2,
    ...                                random_state=0).fit(X, y)
    >>> trainer.n_iter_
    2
    >>> float(trainer.score(X, y)) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["partial_fit"])],
        "n_jobs": [Integral, None],
        "n_shards": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "combine": [StrOptions(set(COMBINES))],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, *, n_jobs=None, n_shards=None, max_iter=5, combine="average",
                 shuffle=True, random_state=None, warm_start=False, verbose=0):
        self.warm_start = warm_start
        self.estimator = estimator
        self.combine = combine
        self.n_jobs = n_jobs
        self.n_shards = n_shards
        self.max_iter = max_iter
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose

    def __getstate__(self):
        # a copy: the base class may hand back the instance's own dict
        state = dict(super().__getstate__())
        state.pop("_kept_shards", None)  # copies of the model, only a cache
        return state

    def fit(self, X, y, classes=None):
        """Train for ``max_iter`` passes of sharded ``partial_fit`` calls.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; a sparse matrix is used in CSR format.
        y : array-like of shape (n_samples,)
            Targets.
        classes : array-like or None, default=None
            Classifiers: all the labels; None takes those of y.

        Returns
        -------
        self : object
            The fitted trainer.
        """
        from concurrent.futures import ThreadPoolExecutor

        from joblib import effective_n_jobs

        self._validate_params()
        est = clone(self.estimator)
        _rule_of(est)
        X = X.tocsr() if sp.issparse(X) else X
        y = np.asarray(y)
        if _n_rows(X) != y.shape[0]:
            raise ValueError(f"X has {_n_rows(X)} rows and y {y.shape[0]}.")
        warm = self.warm_start and hasattr(self, "estimator_")
        if not is_classifier(est):
            classes = None
        elif warm:
            classes = self.estimator_.classes_
        else:
            classes = np.unique(y if classes is None else np.asarray(classes))
        n_jobs = effective_n_jobs(self.n_jobs)
        n_shards = min(self.n_shards or n_jobs, _n_rows(X))
        rng = check_random_state(self.random_state)
        if warm:
            state, pinned = self._continued_state(), dict(self.resolved_params_)
        else:
            state, pinned = _initial_state(est, (X, y), classes, resolved_attributes(est))
        curve = list(self.loss_curve_) if warm else []
        # X and y checked once, then every shard's pass reads its rows in
        # place (see _continued)
        prepared = (state._prepare_rows(X, y, classes=classes)
                    if state._passes_over_row_subsets else None)
        shards = [None] * n_shards
        changed = None  # the columns in which the shards differ from the state
        # a pass of fewer non-zeros than columns costs less than a merge of
        # whole arrays: the columns of X's non-zeros, which hold those of
        # every shard's rows, whatever the order, are found once (and
        # merged alone if few)
        columns = None
        if sp.issparse(X) and X.nnz < X.shape[1]:
            columns = touched_columns(X.indices, X.shape[1])
            if SPARSE_ROUND * columns.shape[0] >= X.shape[1]:
                columns = None  # most columns: whole arrays are quicker
        kept = self.__dict__.get("_kept_shards")
        if warm and kept is not None and kept[0] == self.estimator_._state_version \
                and len(kept[1]) == n_shards:
            # the shards of the last pass, if estimator_ is still its result
            _, shards, changed = kept
        self.__dict__.pop("_kept_shards", None)
        rule = None
        start = time.perf_counter()
        # a plain thread pool: joblib's polls for its results, which costs
        # as much as a whole pass over a small data set
        # (benchmarks/bench_design_choices.py, table problem_call)
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            for epoch in range(self.max_iter):
                order = (rng.permutation(_n_rows(X)) if self.shuffle
                         else np.arange(_n_rows(X)))
                blocks = np.array_split(order, n_shards)
                # the shard models and the state are kept from pass to pass
                # and their arrays reused: on a wide model, allocating a new
                # state costs more than merging one; and where a pass touches
                # a few of the columns (wide sparse rows), only those are
                # merged, and copied back to the shards (AdaGrad's by the
                # merge itself: then `changed` is empty)
                shards = list(pool.map(
                    lambda task: _continued(*task, state, X, y, classes, changed, columns,
                                            prepared),
                    zip(shards, blocks)))
                # the shards are copies of the state: their parameters and
                # options are checked at the first pass (whose merge the
                # later ones repeat), not every pass (it reads the
                # parameters of every model, a good part of a short pass)
                if rule is None:
                    rule = check_mergeable(shards, state)
                changed = _merged_in_place(state, shards, self.combine, columns,
                                           (pool, n_jobs), rule)
                losses = np.array([m.loss_curve_[-1] for m in shards])
                sizes = np.array([len(b) for b in blocks], dtype=float)
                ok = np.isfinite(losses)
                loss = float(losses[ok] @ sizes[ok] / sizes[ok].sum()) if ok.any() else np.nan
                curve.append(loss)
                if self.verbose:
                    print(f"-- pass {epoch + 1}: samples seen {state.t_}, progressive loss "
                          f"{loss:.6g}, elapsed {time.perf_counter() - start:.4f} s")
        if pinned:
            state.set_params(**{k: self.estimator.get_params()[k] for k in pinned})
        state.loss_curve_ = list(curve)
        state.n_iter_ = self.max_iter
        self.estimator_ = state
        if self.warm_start:  # a next fit continues with them (not pickled)
            self._kept_shards = (state._state_version, shards, changed)
        self.n_iter_ = self.max_iter
        self.loss_curve_ = curve
        self.resolved_params_ = dict(pinned)
        if is_classifier(est):
            self.classes_ = state.classes_
        self.n_features_in_ = state.n_features_in_
        return self
