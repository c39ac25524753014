"""Merging models trained on shards of the data into one model.

The adaptive learners of this package keep most of their state as *sums*
over the steps taken: AdaGrad's ``u = sum g`` and ``n = sum g**2`` (and
FTRL-Proximal's ``z``), implicit FTRL's ``theta`` and the ``gamma`` sums
behind ``lambda``, the AUC learner's squared-gradient sums and score
statistics, and the step counter ``t``.  Models that started from the same
state ``base`` and each learnt from their own shard of the data differ from
it by *increments*; the merged state is ``base + sum_k (m_k - base)``.  With
one shard this is the shard's model itself; with K shards it is the
sequential learner fed the same gradients, computed at points up to one
round stale: distributed (delayed) dual averaging, Duchi, Agarwal &
Wainwright (2012) and Agarwal & Duchi (2011).

The parts of a state that are not sums (mirror descent's weights, the AUC
learner's iterate and momentum) are averaged: per coordinate, weighted by
each shard's increment of the AdaGrad accumulator (the scheme of Agarwal,
Chapelle, Dudik & Langford, JMLR 2014, behind Vowpal Wabbit's AllReduce),
or weighted by the steps each shard took.  ``doc/scaling.md`` lists, per
estimator and option, which parts are exact sums and which are averages.

``combine="average"`` averages the increments of the sums as well (per
coordinate, weighted by the squared-gradient increments where the learner
keeps them): parameter mixing, which stays stable when many shards each
correct the same error of the state they started from.

Everything here reads the fitted attributes of the estimators and writes
those of a new one; no estimator is modified (but by ``_merged_in_place``,
the threads' merge into the state they own and into their shard models).
Models in memory merge by one compiled pass over each part of the state
(``_merge_into``, with ``_merge_fast``; AdaGrad's two sums of a feature in
one pass); models on Dask workers send increments (``_increment``),
added pairwise in any grouping (``_add``, associative and commutative up to
rounding) up the driver's reduction tree (:mod:`sklearn_adaprox.distributed`)
and finished where the total is (``_final_steps``).  Both routes make the
same floating-point operations in the same order for the same grouping.
"""
import copy

import numpy as np

from ._base import BaseOnlineLinearModel, feature_columns, new_state_version, take_columns
from .adagrad import (AdaGradClassifier, mirror_descent_entries, off_cache_lines,
                      owns_cache_line_buffer)
from ._merge_fast import copy_columns, merge_entries, merge_pairs
from .implicit_ftrl import ImplicitFTRLClassifier, ImplicitFTRLRegressor
from .pairwise_auc import PairwiseAUCClassifier
from .rda_plus import RDAPlusClassifier

# Parameters that govern the training loop of ``fit`` (or what is printed),
# not the update rule or the layout of the state: models that differ only
# in these merge.
LOOP_PARAMETERS = frozenset({
    "max_iter", "tol", "n_iter_no_change", "shuffle", "random_state",
    "warm_start", "verbose", "n_jobs", "early_stopping", "validation_fraction",
})


def resolved_attributes(estimator):
    """Fitted attributes holding values the estimator resolves from the data
    of its first call (e.g. implicit FTRL's ``beta="auto"`` and ``G=None``,
    stored as ``beta_`` and ``G_``): the class's ``_resolved_params``."""
    return tuple(getattr(type(estimator), "_resolved_params", ()) or ())


def _same(a, b):
    """Equality of parameter or attribute values, arrays and NaN included."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


# ----------------------------------------------------------------------
# Per estimator: which parts of the state are sums, which are averaged, and
# how the merged state is written back.
class _Rule:
    """How one kind of model merges.  ``sums(est)``: the additive state,
    name -> array or number (arrays may be views of the model's own: they
    are only read).  ``zero(est)``: the same for a model that has taken no
    step (the base of a merge without ``base``).  ``averaged(est)``: name
    -> (value, weight) of the averaged state, the weight named as in
    ``weight_of``.  ``latest(est)``: state taken from the last model that
    took a step.  ``write(target, sums, averages, latest)``: the merged
    state into a copy of a model.  ``storage(target)``: name -> the float64
    array of ``target`` that holds that part of its state, where a merge in
    memory writes the merged part directly (``write`` then finds it in
    place).  ``roots``: the parts that ``sums``, ``storage`` and ``write``
    hold as their square roots (as the model stores them).
    ``feature_parts``: the parts with one entry per feature (last axis),
    and ``column_local(est)``: whether a model's merge changes only the
    columns that some shard changed (every part of the state that depends
    on a column is a sum of that column's steps), so that a merge in
    memory can skip the others.  ``paired``: (value part, root part, the
    array that holds both side by side on its last axis), merged in memory
    by one pass (``merge_pairs``); the root part weighs both."""

    roots = ()
    feature_parts = ()
    paired = ()

    def storage(self, target):
        return {}

    def for_model(self, est):
        """The rule of ``est``'s layout (self, unless a kind of model keeps
        its state in more than one)."""
        return self

    def column_local(self, est):
        return False

    def check(self, est):
        """ValueError if the options of ``est`` have no merge."""

    def averaged(self, est):
        return {}

    def latest(self, est):
        return {}

    def weight_of(self, name):
        """What weighs a model's increment of the sum ``name`` when
        increments are averaged (``combine="average"``): the name of the sum
        whose increment is the weight, here the steps ``"t"``; None (weight
        1) for the step counters themselves, which are plain means."""
        return None if name in self.counters else "t"

    counters = ("t",)


class _AdaGradRule(_Rule):
    """Element-wise AdaGrad (binary or one-vs-rest, diagonal or identity
    matrix, element-wise penalty): the state is ``accumulators_`` (u, sqrt
    n), the intercept's (u_b, n_b) and t; the weights of dual averaging and
    FTRL-Proximal are closed forms of them, mirror descent's are averaged."""

    def check(self, est):
        if "accumulators_" not in est.__dict__:
            raise ValueError(
                "merge supports AdaGradClassifier with its element-wise options "
                "(multi_class='ovr', matrix='diagonal' or 'identity', an "
                "element-wise penalty, no l1_ball); got a model with "
                f"multi_class={est.multi_class!r}, matrix={est.matrix!r}, "
                f"penalty={est.penalty!r}, l1_ball={est.l1_ball!r}.")
        if (est._rule["update"] == "mirror_descent") != est._has_md_state():
            raise ValueError("The model's state does not match its update rule.")

    def for_model(self, est):
        return _MIRROR_DESCENT_RULE if est._has_md_state() else self

    def sums(self, est):
        acc = est.accumulators_
        return {"u": acc[..., 0], "n": acc[..., 1],
                "u_b": np.array(est.intercept_sum_gradient_, dtype=np.float64),
                "n_b": np.array(est.intercept_sum_sq_gradient_, dtype=np.float64),
                "t": int(est.t_)}

    def zero(self, est):
        acc = est.accumulators_
        p = acc.shape[0]
        return {"u": np.zeros(acc.shape[:2]), "n": np.zeros(acc.shape[:2]),
                "u_b": np.zeros(p), "n_b": np.zeros(p), "t": 0}

    roots = ("n",)  # accumulators_[..., 1] is sqrt(sum g**2)
    feature_parts = ("u", "n")
    paired = ("u", "n", "accumulators_")

    def column_local(self, est):
        # mirror descent's weights decay at every step, touched or not
        return est._rule["update"] != "mirror_descent"

    def storage(self, target):
        acc = target.accumulators_
        return {"u": acc[..., 0], "n": acc[..., 1]}

    def weight_of(self, name):
        # per coordinate, its increment of the sum of squared gradients
        # (Agarwal, Chapelle, Dudik & Langford 2014)
        if name in ("u", "n"):
            return "n"
        if name in ("u_b", "n_b"):
            return "n_b"
        return super().weight_of(name)

    def averaged(self, est):
        if est._rule["update"] != "mirror_descent":
            return {}
        return {"w": (np.array(est.coef_), "n"),
                "b": (np.array(est.intercept_, dtype=np.float64), "n_b")}

    def write(self, target, sums, averages, latest):
        target.t_ = int(sums["t"])
        rule = target._rule
        if rule["update"] == "mirror_descent":
            # four-column entries (adagrad.py): the sums, the averaged
            # weights, current at the merged step; into the target's own
            # when they start a cache line (a copy, or the state merged in
            # place: the merged parts are new arrays, read from them before)
            entries = target.accumulators_
            if not (_writable_pairs(entries) and entries.shape == np.shape(sums["u"]) + (4,)
                    and not off_cache_lines(entries)):
                entries = None
            target.accumulators_ = mirror_descent_entries(
                sums["u"], sums["n"], averages["w"], target.t_, out=entries)
        elif sums["u"].base is not target.accumulators_:  # not merged in place
            target.accumulators_ = np.stack([sums["u"], sums["n"]], axis=-1)
        target.intercept_sum_gradient_ = sums["u_b"]
        target.intercept_sum_sq_gradient_ = np.maximum(sums["n_b"], 0.0)
        if rule["update"] == "mirror_descent":
            target.intercept_ = averages["b"]
            return
        u_b, n_b = target.intercept_sum_gradient_, target.intercept_sum_sq_gradient_
        if rule["update"] == "dual_averaging" and not rule["adaptive"]:
            root = np.full(u_b.shape, np.sqrt(float(target.t_)))
        else:
            root = np.sqrt(n_b)
        with np.errstate(divide="ignore", invalid="ignore"):
            b = -rule["eta"] * u_b / (rule["delta"] + root)
        target.intercept_ = np.where(u_b == 0.0, 0.0, b)


class _AdaGradMirrorRule(_AdaGradRule):
    """Element-wise mirror descent: as ``_AdaGradRule``, its sums and
    weights in four-column entries, which ``write`` lays out once every
    part is merged (the pairs' merge in place, ``merge_pairs``, reads two
    columns)."""

    paired = ()

    def storage(self, target):
        return {}


_MIRROR_DESCENT_RULE = _AdaGradMirrorRule()


def _beta(est):
    """Implicit FTRL's beta per problem: the resolved ``beta_`` (NaN before
    the first step), else a numeric ``beta`` parameter."""
    beta = np.asarray(est.beta_, dtype=np.float64)
    if not isinstance(est.beta, str):
        beta = np.where(np.isnan(beta), float(est.beta), beta)
    return beta


class _ImplicitFTRLRule(_Rule):
    """Implicit FTRL: ``theta`` (with the intercept's) and the loss sums are
    sums; ``lambda`` is ``G / beta`` plus the sum of every ``gamma / beta**2``
    so far, so ``lambda + gamma / beta**2`` (the pending ``pending_gamma_`` folded
    in) is a sum too.  The merged model has no pending ``gamma``."""

    def sums(self, est):
        # before its first step a model's lambda is NaN; its value then is
        # lambda_1 = G / beta, of the resolved G_ or the G parameter
        G = np.where(np.isnan(est.G_), np.nan if est.G is None else float(est.G), est.G_)
        beta = _beta(est)
        with np.errstate(invalid="ignore"):
            lam_1 = np.where(np.isnan(G) | np.isnan(beta), 0.0, G / beta)
            pending = np.where(np.isnan(beta), 0.0, est.pending_gamma_ / beta**2)
        lam = np.where(np.isnan(est.lambda_), lam_1, est.lambda_)
        return {"theta": np.array(est.scaled_coef_), "theta_b": np.array(est.scaled_intercept_),
                "L": lam + pending,
                "loss": np.array(est.cumulative_loss_),
                "weight": np.array(est.cumulative_weight_), "t": int(est.t_)}

    def zero(self, est):
        beta = _beta(est)
        with np.errstate(invalid="ignore"):
            lam_1 = np.where(np.isnan(est.G_) | np.isnan(beta), 0.0, est.G_ / beta)
        return {"theta": np.zeros_like(est.scaled_coef_),
                "theta_b": np.zeros_like(est.scaled_intercept_),
                "L": lam_1, "loss": np.zeros_like(est.cumulative_loss_),
                "weight": np.zeros_like(est.cumulative_weight_), "t": 0}

    def latest(self, est):
        return {"G_": np.array(est.G_), "beta_": np.array(est.beta_)}

    def storage(self, target):
        return {"theta": target.scaled_coef_}

    def write(self, target, sums, averages, latest):
        if "G_" in latest:  # a base that took no step has not fixed G, beta yet
            target.G_ = np.where(np.isnan(target.G_), latest["G_"], target.G_)
            target.beta_ = np.where(np.isnan(target.beta_), latest["beta_"], target.beta_)
        target.scaled_coef_ = sums["theta"]
        target.scaled_intercept_ = sums["theta_b"]
        fixed = ~np.isnan(target.G_)
        target.lambda_ = np.where(fixed, sums["L"], np.nan)
        target.pending_gamma_ = np.zeros_like(target.pending_gamma_)
        target.cumulative_loss_ = sums["loss"]
        target.cumulative_weight_ = sums["weight"]
        target.t_ = int(sums["t"])
        theta = target.scaled_coef_.reshape(target.lambda_.shape[0], -1)
        sq = np.einsum("ij,ij->i", theta, theta)
        if target.fit_intercept:
            sq = sq + target.scaled_intercept_ ** 2
        target.sq_norm_scaled_coef_ = sq
        lam = np.where(fixed, target.lambda_, 1.0)
        target.intercept_ = target.scaled_intercept_ / lam
        target._update_average_loss()


class _PairwiseAUCRule(_Rule):
    """AOGD / OGD: squared-gradient sums, score statistics, pair counts and
    the sum of iterates (``average=True``) are sums; the iterate and the
    momentum are averaged, weighted by the steps each model took; the pair
    partner (the last sample) is the last stepping model's."""

    def sums(self, est):
        return {"ssq": np.array(est.sum_sq_gradient_), "v": np.array(est.total_sq_gradient_),
                "stats": np.array(est.score_stats_), "pairs": float(est.pair_weight_),
                "ordered": float(est.ordered_pair_weight_),
                "w_sum": np.array(est.coef_sum_), "n_avg": int(est.averaged_steps_),
                "t": int(est.t_)}

    def zero(self, est):
        return {"ssq": np.zeros_like(est.sum_sq_gradient_),
                "v": np.zeros_like(est.total_sq_gradient_),
                "stats": np.zeros_like(est.score_stats_), "pairs": 0.0, "ordered": 0.0,
                "w_sum": np.zeros_like(est.coef_sum_), "n_avg": 0, "t": 0}

    counters = ("t", "n_avg")

    def weight_of(self, name):
        return "ssq" if name == "ssq" else super().weight_of(name)

    def averaged(self, est):
        return {"w": (np.array(est.iterate_), "t"), "m": (np.array(est.momentum_), "t")}

    def storage(self, target):
        return {"ssq": target.sum_sq_gradient_, "w_sum": target.coef_sum_,
                "w": target.iterate_, "m": target.momentum_}

    def latest(self, est):
        return {"eta_": np.array(est.eta_),
                "last_sample_indices_": np.array(est.last_sample_indices_),
                "last_sample_values_": np.array(est.last_sample_values_),
                "last_sample_label_": float(est.last_sample_label_),
                "last_sample_weight_": float(est.last_sample_weight_)}

    def write(self, target, sums, averages, latest):
        target.sum_sq_gradient_ = sums["ssq"]
        target.total_sq_gradient_ = sums["v"]
        target.score_stats_ = sums["stats"]
        target.pair_weight_ = float(sums["pairs"])
        target.ordered_pair_weight_ = float(sums["ordered"])
        target.coef_sum_ = sums["w_sum"]
        target.averaged_steps_ = int(sums["n_avg"])
        target.t_ = int(sums["t"])
        target.iterate_ = averages["w"]
        target.momentum_ = averages["m"]
        for name, value in latest.items():
            setattr(target, name, value)
        if target.average and target.averaged_steps_ > 0:
            target.coef_ = target.coef_sum_ / target.averaged_steps_
        else:
            target.coef_ = np.array(target.iterate_)
        target.progressive_auc_ = (target.ordered_pair_weight_ / target.pair_weight_
                                   if target.pair_weight_ > 0 else np.nan)
        target.intercept_ = np.array(
            [-target._threshold() if target.fit_intercept else 0.0])


class _RDAPlusRule(_Rule):
    """RDA+ without its local phase (``local_phase=False``): the dual
    averaging sums ``u``, ``u_b`` and the step counts are sums; the iterate
    is their closed form."""

    def check(self, est):
        if est.local_phase:
            raise ValueError(
                "merge supports RDAPlusClassifier with local_phase=False (the "
                "dual-averaging state); a model with local_phase=True keeps a "
                "reservoir and the result of its Newton phase, which do not "
                "merge. Train the shards with local_phase=False.")

    def sums(self, est):
        return {"u": np.array(est.sum_gradient_),
                "u_b": np.array(est.intercept_sum_gradient_),
                "rda_t": np.array(est.rda_t_), "t": int(est.t_)}

    def zero(self, est):
        return {"u": np.zeros_like(est.sum_gradient_),
                "u_b": np.zeros_like(est.intercept_sum_gradient_),
                "rda_t": np.zeros_like(est.rda_t_), "t": 0}

    counters = ("t", "rda_t")

    def latest(self, est):
        return {"last_support_change_": np.array(est.last_support_change_)}

    def storage(self, target):
        return {"u": target.sum_gradient_}

    def write(self, target, sums, averages, latest):
        target.sum_gradient_ = sums["u"]
        target.intercept_sum_gradient_ = sums["u_b"]
        target.rda_t_ = np.asarray(sums["rda_t"], dtype=np.int64)
        target.t_ = int(sums["t"])
        target.last_support_change_ = np.maximum(
            latest.get("last_support_change_", target.last_support_change_), 0)
        target.coef_ = np.array(target.coef_, dtype=np.float64)
        target.intercept_ = np.array(target.intercept_, dtype=np.float64)
        for k in range(target.coef_.shape[0]):
            w, b = target._rda_iterate(k)
            target.coef_[k] = w
            target.intercept_[k] = b if target.fit_intercept else 0.0
        target.support_ = target.coef_ != 0


_RULES = (
    (AdaGradClassifier, _AdaGradRule()),
    (ImplicitFTRLClassifier, _ImplicitFTRLRule()),
    (ImplicitFTRLRegressor, _ImplicitFTRLRule()),
    (PairwiseAUCClassifier, _PairwiseAUCRule()),
    (RDAPlusClassifier, _RDAPlusRule()),
)


def _rule_of(estimator):
    for cls, rule in _RULES:
        if isinstance(estimator, cls):
            return rule.for_model(estimator)
    raise ValueError(
        f"merge does not know how to merge {type(estimator).__name__}; it merges "
        + ", ".join(cls.__name__ for cls, _ in _RULES) + ".")


# ----------------------------------------------------------------------
# validation (nothing is modified)
def _is_fitted(est):
    return isinstance(est, BaseOnlineLinearModel) and hasattr(est, "t_")


def check_mergeable(models, base=None):
    """ValueError naming the first difference that rules out merging
    ``models`` (and continuing ``base``); returns the merge rule.

    Compared: the type, that each model is fitted, the parameters (except
    those of the training loop, ``LOOP_PARAMETERS``), ``classes_``,
    ``n_features_in_``, ``feature_names_in_``, the values resolved from
    the data of the first call (``resolved_attributes``) and the options
    the merge covers.
    """
    if not models:
        raise ValueError("merge needs at least one model; got none.")
    first = models[0]
    if not isinstance(first, BaseOnlineLinearModel):
        raise ValueError(
            f"merge takes estimators of sklearn_adaprox; got {type(first).__name__}.")
    rule = _rule_of(first)
    others = [(f"models[{i}]", m) for i, m in enumerate(models)]
    if base is not None:
        others.append(("base", base))
    params = {k: v for k, v in first.get_params(deep=False).items()
              if k not in LOOP_PARAMETERS}
    for name, model in others:
        if type(model) is not type(first):
            raise ValueError(
                f"{name} is a {type(model).__name__}, models[0] a "
                f"{type(first).__name__}: only models of one type merge.")
        if not _is_fitted(model):
            raise ValueError(f"{name} is not fitted: every model must be fitted to merge.")
        for key, value in model.get_params(deep=False).items():
            if key in params and not _same(value, params[key]):
                raise ValueError(
                    f"{name} has {key}={value!r}, models[0] has {key}={params[key]!r}: "
                    "models with different parameters do not merge.")
        for attr in ("n_features_in_", "classes_", "feature_names_in_"):
            mine, theirs = getattr(model, attr, None), getattr(first, attr, None)
            if not _same(mine, theirs):
                raise ValueError(
                    f"{name} has {attr}={mine!r}, models[0] has {attr}={theirs!r}.")
        for attr in resolved_attributes(first):
            mine, theirs = getattr(model, attr, None), getattr(first, attr, None)
            if (name == "base" and mine is not None and theirs is not None
                    and np.asarray(mine).dtype.kind == "f"):
                # a base that took no step has not resolved them yet (NaN)
                mine = np.where(np.isnan(mine), theirs, mine)
            if not _same(mine, theirs):
                raise ValueError(
                    f"{name} resolved {attr}={mine!r} from its data, models[0] "
                    f"resolved {attr}={theirs!r}: models that resolved different "
                    "values do not merge (start every shard from the same state, "
                    "or set the parameter explicitly).")
        rule.check(model)
    if base is not None:
        for i, model in enumerate(models):
            if model.t_ < base.t_:
                raise ValueError(
                    f"models[{i}] has taken {model.t_} steps, fewer than base "
                    f"({base.t_}): it cannot have continued from base.")
    return rule


# ----------------------------------------------------------------------
# increments: what a model adds to its base, in a form whose sum over the
# models is the merge (associative, so it can be reduced as a tree)
COMBINES = ("sum", "average")

# Parts of a state of at least this many entries are merged by all the
# threads of a ThreadShardedTrainer, in ranges.
PARALLEL_MIN_SIZE = 1 << 16

# Arrays of at least this many entries, of which fewer than a third are
# non-zero, travel as their non-zero entries (an increment touches only the
# columns of its shard's rows: on hashed text a small part of them).
SPARSE_MIN_SIZE = 4096


class _SparseIncrement:
    """The non-zero entries of a float64 array: flat indices (sorted,
    unique) and values."""

    __slots__ = ("shape", "index", "values")

    def __init__(self, shape, index, values):
        self.shape, self.index, self.values = shape, index, values

    def __getstate__(self):
        return self.shape, self.index, self.values

    def __setstate__(self, state):
        self.shape, self.index, self.values = state

    def dense(self):
        out = np.zeros(int(np.prod(self.shape)))
        out[self.index] = self.values
        return out.reshape(self.shape)


def _compact(value):
    """``value``, or its non-zero entries when that is much smaller."""
    if (isinstance(value, np.ndarray) and value.dtype == np.float64
            and value.size >= SPARSE_MIN_SIZE
            and 3 * np.count_nonzero(value) < value.size):  # a count is cheap
        index = np.flatnonzero(value)
        return _SparseIncrement(value.shape, index, value.reshape(-1)[index])
    return value


def _dense(value):
    return value.dense() if isinstance(value, _SparseIncrement) else value


def _plus(a, b):
    """``a + b`` for arrays, numbers and sparse increments, entry by entry
    the same floating-point sums as the dense arrays' (an entry absent from
    one side adds exactly zero)."""
    if a is None:
        return None
    sparse_a, sparse_b = isinstance(a, _SparseIncrement), isinstance(b, _SparseIncrement)
    if not (sparse_a or sparse_b):
        return a + b
    if sparse_a and sparse_b and 3 * (a.index.size + b.index.size) >= int(np.prod(a.shape)):
        # a dense sum: scattered into zeros (0 + x is x), no sort
        out = np.zeros(int(np.prod(a.shape)))
        out[a.index] = a.values
        out[b.index] += b.values
        return out.reshape(a.shape)
    if sparse_a and sparse_b:
        index = np.concatenate([a.index, b.index])
        values = np.concatenate([a.values, b.values])
        order = np.argsort(index, kind="stable")
        index, values = index[order], values[order]
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        summed = np.add.reduceat(values, starts) if values.size else values
        out = _SparseIncrement(a.shape, index[starts], summed)
        return out.dense() if 3 * out.index.size >= int(np.prod(a.shape)) else out
    dense, sparse = (b, a) if sparse_a else (a, b)
    out = np.array(dense, dtype=np.float64)
    out.reshape(-1)[sparse.index] += sparse.values
    return out


def _squared(rule, sums):
    """``sums`` with the parts held as square roots squared."""
    return {k: v * v if k in rule.roots else v for k, v in sums.items()}


def _increment(rule, model, base_sums, position=0, combine="sum"):
    """The contribution of ``model`` to the merge over ``base_sums``:
    ``{"sums": m - base, "avg": name -> [sum w v, sum w, sum v, count],
    "latest": (position, state) or None, "count": 1, "combine": combine}``.
    With ``combine="average"`` the increments of the sums are averaged too
    (entries ``"sum:<name>"`` of ``avg``, weighted as ``rule.weight_of``
    says); those entries are formed from the sums when two increments are
    added (``_weighted``), so that a partition's increment travels as its
    differences alone."""
    own, base_sums = _squared(rule, rule.sums(model)), _squared(rule, base_sums)
    sums = {k: own[k] - base_sums[k] for k in own}
    avg = {}
    for name, (value, weight) in rule.averaged(model).items():
        weight = np.asarray(sums[weight], dtype=np.float64)
        avg[name] = [_compact(weight * value), _compact(weight * np.ones_like(value)),
                     np.array(value), 1]
    weights = {name: rule.weight_of(name) for name in sums} if combine == "average" else None
    latest = (position, rule.latest(model)) if sums["t"] > 0 else None
    sums = {k: _compact(v) for k, v in sums.items()}
    return {"sums": sums, "avg": avg, "weights": weights, "latest": latest, "count": 1,
            "combine": combine}


def _weighted(inc):
    """``inc`` with the weighted sums of ``combine="average"`` formed from
    its own sums (``avg["sum:<name>"]``), when it still has to."""
    if inc.get("weights") is None:
        return inc
    sums = {k: np.asarray(_dense(v), dtype=np.float64) for k, v in inc["sums"].items()}
    avg = dict(inc["avg"])
    weights = {}  # (weight name, shape) -> its weights, as parts share them
    for name, value in sums.items():
        key = inc["weights"][name], np.shape(value)
        if key not in weights:
            weight = 1.0 if key[0] is None else np.maximum(sums[key[0]], 0.0)
            weight = weight * np.ones_like(value)  # in the shape of the part
            weights[key] = weight, _compact(weight)
        weight, compact = weights[key]
        # the plain values (the fallback where no weight) are "sums"
        avg["sum:" + name] = [_compact(weight * value), compact, None, 1]
    return dict(inc, avg=avg, weights=None)


def _add(a, b):
    """The sum of two increments (a new one; neither is modified).  The
    ``latest`` state is the one of the larger position."""
    a, b = _weighted(a), _weighted(b)
    sums = {k: _plus(a["sums"][k], b["sums"][k]) for k in a["sums"]}
    avg = {k: [_plus(a["avg"][k][j], b["avg"][k][j]) for j in range(4)] for k in a["avg"]}
    latest = a["latest"]
    if b["latest"] is not None and (latest is None or b["latest"][0] > latest[0]):
        latest = b["latest"]
    return {"sums": sums, "avg": avg, "weights": None, "latest": latest,
            "count": a["count"] + b["count"], "combine": a["combine"]}


def _final_steps(total):
    """What a reduced increment ``total`` adds to the base, part by part
    (``"steps"``, an integer count rounded), the averaged parts
    (``"averages"``) and the ``"latest"`` state: the merge but for the base
    itself.  Formed where the increments were reduced, so that only this
    (one array per part) travels to the client."""
    total = _weighted(total)
    total = dict(total, sums={k: _dense(v) for k, v in total["sums"].items()},
                 avg={k: [_dense(v) for v in entry] for k, entry in total["avg"].items()})
    averages = {}
    for name, (weighted, weights, plain, count) in total["avg"].items():
        if plain is None:
            plain = np.asarray(total["sums"][name[len("sum:"):]], dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            averages[name] = np.where(weights > 0, weighted / np.where(weights > 0, weights, 1.0),
                                      plain / count)
    steps = {}
    for k, total_k in total["sums"].items():
        if total["combine"] == "average":
            step = averages.pop("sum:" + k)
            if np.asarray(total_k).dtype.kind in "iu":
                step = np.rint(step).astype(np.int64)
            steps[k] = step.item() if np.ndim(step) == 0 else _compact(step)
        else:
            steps[k] = _compact(total_k)
    latest = total["latest"][1] if total["latest"] is not None else {}
    return {"steps": steps, "averages": averages, "latest": latest}


def _apply(rule, template, base_sums, total):
    """A new estimator: ``template`` (deep-copied) with the merged state
    ``base_sums + total`` written into it; ``total`` is the sum of the
    increments, or its ``_final_steps``."""
    final = total if "steps" in total else _final_steps(total)
    sums = {}
    for k, base in _squared(rule, base_sums).items():
        sums[k] = base + _dense(final["steps"][k])
        if k in rule.roots:
            sums[k] = np.sqrt(np.maximum(sums[k], 0.0))
    return _written(rule, copy.deepcopy(template), sums, final["averages"], final["latest"])


def _written(rule, target, sums, averages, latest):
    """``target`` with the merged state written into it, as a new state."""
    rule.write(target, sums, averages, latest)
    target._state_version = new_state_version()
    target.n_iter_ = 1
    return target


def _merged_entry(base, values, weight_base, weight_values, average, roots=False,
                  weight_roots=False, out=None, entries=None, threads=None):
    """One part of the merged state of models in memory (``_merge_fast``):
    the same value as the increments' route (``_increment``, ``_add``,
    ``_apply``) gives.  ``base`` None: an averaged part of the state (no
    base); ``weight_base`` None: per-model weights ``weight_values`` (or 1
    when that is None too).  ``out``: the float64 array to write it into
    (it may be ``base`` itself); ``entries``: the flat entries to merge,
    ``out`` holding the base at the others.  ``threads``: (a
    ``concurrent.futures`` executor, its number of threads) sharing a large
    part out in ranges."""
    integer = base is not None and np.asarray(base).dtype.kind in "iu"
    shape = np.shape(values[0])
    flat = [np.asarray(v, dtype=np.float64).reshape(-1) for v in values]
    steps = per_entry = None
    if weight_values is not None and weight_base is None:
        steps = np.asarray(weight_values, dtype=np.float64)
    elif weight_values is not None:
        per_entry = [np.asarray(v, dtype=np.float64).reshape(-1) for v in weight_values]
        weight_base = np.asarray(weight_base, dtype=np.float64).reshape(-1)
    if out is None:
        out = np.empty(shape)
    flat_out = out.view()
    flat_out.shape = (-1,)  # a view of out, never a copy (raises instead)
    args = (flat_out, None if base is None else np.asarray(base, dtype=np.float64).reshape(-1),
            flat, weight_base, per_entry, steps, average, base is not None and not integer,
            roots, weight_roots, entries)
    _in_ranges(merge_entries, args, flat_out.shape[0] if entries is None else entries.shape[0],
               threads)
    if integer:  # a step count: the (rounded) increment, added as an integer
        out = base + (np.rint(out) if average else out).astype(np.int64)
    return out.item() if np.ndim(out) == 0 else out


def _in_ranges(function, args, size, threads):
    """``function(*args)`` over ``size`` entries; large parts by all the
    ``threads`` (see ``_merged_entry``), each calling ``function(*args, lo,
    hi)`` on its range."""
    if threads is not None and threads[1] > 1 and size >= PARALLEL_MIN_SIZE:
        bounds = np.linspace(0, size, threads[1] + 1).astype(np.int64)
        ranges = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
        list(threads[0].map(lambda bound: function(*args, *bound), ranges))
    else:
        function(*args)


def _writable_pairs(array):
    """Whether ``merge_pairs`` can write into ``array`` in place."""
    return (isinstance(array, np.ndarray) and array.dtype == np.float64
            and array.flags.c_contiguous and array.flags.writeable)


def _merged_pairs(rule, stored, base_sums, models, average, entries=None, threads=None,
                  copies=None):
    """The two ``rule.paired`` parts of the merge, by one ``merge_pairs``
    pass: name -> merged array, views of ``stored`` (the target's array
    that holds both, or None: a new one).  ``copies``: the models' own
    arrays, to receive the merged entries too."""
    first, second, _ = rule.paired
    shape = np.shape(base_sums[first])
    if stored is None:
        stored = np.empty(shape + (2,))
    values = [np.ascontiguousarray(getattr(m, rule.paired[2]), dtype=np.float64).reshape(-1, 2)
              for m in models]
    flat = [np.asarray(base_sums[k], dtype=np.float64).reshape(-1) for k in (first, second)]
    args = (stored.reshape(-1, 2), *flat, values, average, entries,
            None if copies is None else [c.reshape(-1, 2) for c in copies])
    _in_ranges(merge_pairs, args, flat[0].shape[0] if entries is None else entries.shape[0],
               threads)
    return {first: stored[..., 0], second: stored[..., 1]}


def _merge_into(rule, target, base_sums, models, combine, columns=None, threads=None,
                copies=None):
    """(sums, averages, latest) of the merge of ``models`` over
    ``base_sums``, part by part; the parts ``rule.storage(target)`` holds
    are written there.  ``target`` may be the base itself (merged in place):
    the averages come first, and the parts that weigh others last, so that
    no part is overwritten before everything that reads it is merged.
    ``columns``: of a column-local merge into a target that holds the base,
    the only columns any model changed (sorted int64).  ``threads``: see
    ``_merged_entry``.  ``copies``: the models' arrays of the paired parts
    (``rule.paired``), written with the merged entries too."""
    average = combine == "average"
    own = [rule.sums(m) for m in models]
    store = {name: a for name, a in rule.storage(target).items()
             if a.dtype == np.float64 and a.flags.writeable}
    entries = {}
    if columns is not None:
        for name in rule.feature_parts:
            rows, width = np.shape(base_sums[name])[:-1], np.shape(base_sums[name])[-1]
            starts = np.arange(int(np.prod(rows)), dtype=np.int64) * width
            entries[name] = (starts[:, None] + columns[None, :]).ravel()
            if name not in store:
                raise ValueError(f"A merge of some columns writes {name!r} in place.")

    def weights(name):
        if name is None:
            return None, None, False
        if np.ndim(base_sums[name]) == 0:  # the steps: one weight per model
            return None, [float(o[name] - base_sums[name]) for o in own], False
        return base_sums[name], [o[name] for o in own], name in rule.roots

    latest = {}
    for model, mine in zip(models, own):
        if mine["t"] > base_sums["t"]:
            latest = rule.latest(model)
    averages = {}
    parts = [rule.averaged(m) for m in models]
    for name, (_, weight) in parts[0].items():
        wb, wv, weight_roots = weights(weight)
        averages[name] = _merged_entry(None, [p[name][0] for p in parts], wb, wv, True,
                                       weight_roots=weight_roots, out=store.get(name),
                                       threads=threads)
    sums = {}
    if rule.paired:  # read once for both parts (before the parts they weigh change)
        stored = getattr(target, rule.paired[2])
        usable = (_writable_pairs(stored)
                  and stored.shape == np.shape(base_sums[rule.paired[0]]) + (2,))
        if columns is not None and not usable:
            raise ValueError(f"A merge of some columns writes {rule.paired[2]!r} in place.")
        sums.update(_merged_pairs(rule, stored if usable else None, base_sums, models,
                                  average, entries.get(rule.paired[0]), threads, copies))
    weighing = {rule.weight_of(name) for name in base_sums} if average else set()
    for name in sorted(set(base_sums) - set(sums), key=lambda name: name in weighing):
        wb, wv, weight_roots = weights(rule.weight_of(name) if average else None)
        sums[name] = _merged_entry(base_sums[name], [o[name] for o in own], wb, wv, average,
                                   name in rule.roots, weight_roots, out=store.get(name),
                                   entries=entries.get(name), threads=threads)
    return sums, averages, latest


def _merged_in_place(state, models, combine="sum", columns=None, threads=None, rule=None):
    """Merge ``models``, each continued from ``state``, into ``state``
    itself (its arrays reused: on a wide model a new state costs more than
    the merge).  ``state`` is left as ``merge(models, base=state)`` would
    return it.  ``columns``: the columns the models' calls can have changed
    (sorted int64; None: any), of which alone a column-local merge reads
    and writes the per-feature parts.  ``threads``: (executor, number of
    threads) sharing the large parts.  ``rule``: what ``check_mergeable``
    returned for these models and state (None: it is called), for a caller
    that merges the same models pass after pass.

    Returns the columns in which the models' arrays updated in place
    (``_in_place_arrays``) still differ from the merged state (None: any),
    for the caller that continues them from it (``_assign``).  Where those
    arrays are the paired parts alone (AdaGrad's accumulators), a
    column-local merge writes its entries into the models' arrays as it
    goes, and none differ."""
    if rule is None:
        rule = check_mergeable(models, state)
    if not rule.column_local(state):
        columns = None
    if len(models) == 1:
        _assign(state, models[0], columns)
        return columns
    copies = None
    if columns is not None and rule.paired:
        copies = [m.__dict__.get(rule.paired[2]) for m in models]
        if not all(_writable_pairs(c)
                   and {n for n in m._in_place_arrays() if n in m.__dict__} == {rule.paired[2]}
                   for m, c in zip(models, copies)):
            copies = None
    _written(rule, state, *_merge_into(rule, state, rule.sums(state), models, combine,
                                       columns, threads, copies))
    return columns if copies is None else columns[:0]


def _assign(target, source, columns=None):
    """Make ``target`` a copy of ``source`` (as ``copy.deepcopy`` would),
    copying the arrays into those of ``target`` of the same shape and type
    instead of allocating new ones.  ``columns``: the only columns in which
    the arrays updated in place (``_in_place_arrays``) of the two differ."""
    mine = target.__dict__
    partial = set(source._in_place_arrays()) if columns is not None else ()
    for name, value in source.__dict__.items():
        old = mine.get(name)
        if (isinstance(value, np.ndarray) and isinstance(old, np.ndarray)
                and old is not value and old.shape == value.shape
                and old.dtype == value.dtype and old.flags.writeable
                and (old.base is None or owns_cache_line_buffer(old))):
            if name in partial:
                _copy_columns(old, value, columns)
            else:
                np.copyto(old, value)
        else:
            mine[name] = copy.deepcopy(value)
    for name in set(mine) - set(source.__dict__):
        del mine[name]


def _copy_columns(target, source, columns):
    """``target[feature_columns(target, columns)] = take_columns(source,
    columns)`` (arrays of one shape and type), compiled for float64."""
    if (target.dtype == np.float64 and target.flags.c_contiguous
            and source.flags.c_contiguous):
        # (rows, features, entries per feature): the features on axis 1, or
        # axis 0 of a one-dimensional array
        rows = 1 if target.ndim == 1 else target.shape[0]
        shape = (rows, target.shape[target.ndim > 1], -1)
        copy_columns(target.reshape(shape), source.reshape(shape), columns)
    else:
        target[feature_columns(target, columns)] = take_columns(source, columns)


def merge(models, base=None, *, combine="sum"):
    """Merge models trained on shards of the data into one model.

    The models must be of one estimator class, with the same parameters
    (those of the training loop, such as ``max_iter`` or ``random_state``,
    may differ), the same ``classes_`` and ``n_features_in_``, and the same
    values resolved from the data of a first call.  Each model is either
    trained from scratch on its shard (``base=None``) or continued from the
    fitted model ``base`` (every shard from the same ``base``, as the Dask
    driver does each round).

    The merged state is ``base + sum_k (model_k - base)`` for the parts of
    the state that are sums over the steps (exact: the sequential learner
    fed the same gradients, computed at stale points), and a weighted
    average for the parts that are not (see ``doc/scaling.md``).  One model
    merges to a copy of itself.

    Parameters
    ----------
    models : sequence of fitted estimators
        The shard models, in shard order (where a state is taken from the
        last model, such as the AUC learner's pair partner, it is the last
        model of the list that took a step).
    base : fitted estimator or None, default=None
        The state every model continued from; None: every model started
        from scratch.
    combine : {"sum", "average"}, default="sum"
        ``"sum"``: the increments of the sums are added (the exact delayed
        learner: every gradient of every shard counts once).  ``"average"``:
        they are averaged, per coordinate weighted by each model's increment
        of the sum of squared gradients where the learner keeps one
        (AdaGrad; the AUC learner's), else by its steps, and the step
        counters by their plain mean: parameter mixing as in Agarwal et al.
        (2014), which stays stable when many shards each correct the same
        error of the state they started from (see ``doc/scaling.md``).  The
        merged ``t_`` then counts the steps of an average shard.

    Returns
    -------
    merged : estimator
        A new fitted estimator of the models' class: it predicts, continues
        with ``partial_fit`` and pickles like any fitted one.  Its
        ``loss_curve_`` is the one of ``base`` (empty without it), except
        for a single model, whose exact copy is returned.

    Raises
    ------
    ValueError
        If the models (or ``base``) are not compatible; the message names
        the first difference.  No model is modified.

    References
    ----------
    J. C. Duchi, A. Agarwal and M. J. Wainwright, "Dual averaging for
    distributed optimization: convergence analysis and network scaling",
    IEEE Trans. Automatic Control, 2012.

    A. Agarwal and J. C. Duchi, "Distributed delayed stochastic
    optimization", NeurIPS 2011.

    A. Agarwal, O. Chapelle, M. Dudik and J. Langford, "A reliable
    effective terascale linear learning system", JMLR 15, 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adaprox import AdaGradClassifier, merge
    >>> rng = np.random.RandomState(0)
    >>> X = rng.randn(200, 5)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> shards = [AdaGradClassifier().partial_fit(X[i::2], y[i::2], classes=[0, 1])
    ...           for i in range(2)]
    >>> model = merge(shards)
    >>> model.t_
    200
    >>> float(model.score(X, y)) > 0.9
    True
    """
    models = list(models)
    if combine not in COMBINES:
        raise ValueError(f"combine must be one of {COMBINES}; got {combine!r}.")
    rule = check_mergeable(models, base)
    if len(models) == 1:
        return copy.deepcopy(models[0])
    base_sums = rule.zero(models[0]) if base is None else rule.sums(base)
    template = models[0] if base is None else base
    merged = copy.deepcopy(template)
    _written(rule, merged, *_merge_into(rule, merged, base_sums, models, combine))
    merged.loss_curve_ = [] if base is None else list(base.loss_curve_)
    return merged
