"""AdaGradClassifier: AdaGrad (diagonal or full-matrix) with composite
(proximal) penalties and constraints, one-vs-rest or multinomial."""
from collections.abc import Callable
from numbers import Real
from typing import NamedTuple

import numpy as np
from scipy.special import softmax
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import (
    _adagrad_coupled_fast,
    _adagrad_fast,
    _adagrad_full_fast,
    _adagrad_multinomial_fast,
)
from ._adagrad_coupled_fast import CoupledProblem
from ._adagrad_fast import (MD_STEP_COLUMN, MD_WEIGHT_COLUMN, AdaGradProblem,
                            run_problem_epochs)
from ._adagrad_full_fast import FULL_MATRIX_MAX_FEATURES, FullMatrixProblem
from ._adagrad_multinomial_fast import MultinomialProblem
from ._base import (PROBABILISTIC_LOSSES, STOP_PER_PROBLEM_DOC, BaseOnlineLinearClassifier,
                    row_scales)
from ._dataset import as_row_arrays
from ._loss import MULTINOMIAL_LOSSES, make_loss, make_multinomial_loss
from ._short_calls import AdaGradPath, MultinomialPath, short_partial_fit, short_scores

# Penalties over the rows of the weight matrix (a feature for all classes).
MIXED_NORM_PENALTIES = ("l1_l2", "l1_linf")

# alpha="auto": SGDClassifier's default, except for the l1 penalty, where
# dual averaging's exact threshold alpha * t at SGD's alpha zeroes the
# features of rare classes (benchmarks/bench_defaults.py: on 20 newsgroups,
# one-vs-rest, 73.8% accuracy at 1e-4, 81.9% at 1e-5, SGD's default 82.2%).
AUTO_ALPHA = 1e-4
AUTO_ALPHA_L1 = 1e-5
# ... for rows whose mean squared norm is at most AUTO_ALPHA_SQ_NORM (text
# with unit rows, binary or count tables scaled to [0, 1]); above it, in
# proportion to it (_auto_alpha).  SGD at alpha = 1e-4 on wide
# standardised rows stops far from the optimum of its own objective, and that
# iterate is the better model: on mnist10k (784 standardised pixels, mean
# squared norm 659) SGD's 1000 epochs score 90.5%, the exact optimum of the
# same objective 88.2% (LinearSVC) and AdaGrad 87.7%; AdaGrad at the scaled
# alpha 6.6e-3 scores 90.3% in 18 epochs.  The threshold 10 keeps 1e-4 where
# it was best (w8a, squared norm 11.6: log loss 98.2% at 1e-4, 97.6% at
# 1.2e-3).  The l1 value grows in the same proportion: its square root, the
# growth that keeps an l1 penalty's strength when X is multiplied by a
# constant, measured worse on standardised tables, where q grows with the
# number of columns (3 seeds, against SGD(l1) at 77.4, 92.9 and 88.4%:
# vehicle 75.0 against 77.8%, usps 92.3 against 92.9%, mnist10k 88.5 against
# 89.6%).
AUTO_ALPHA_SQ_NORM = 10.0

# update="auto": mirror descent for an l1 or elastic-net penalty on rows of
# which at least AUTO_UPDATE_MIN_DENSITY of the entries are non-zero and
# whose mean squared norm is at most AUTO_UPDATE_MAX_SQ_NORM (standardised
# tables of up to about a hundred columns), dual averaging otherwise.  On
# such rows dual averaging's threshold alpha * t, which every coordinate
# meets at every step, keeps too few features: 3 seeds of
# benchmarks/bench_defaults.py's splits, l1, against
# SGDClassifier(penalty="l1"): letter 62.2% (dual averaging), 64.0% (mirror
# descent), 64.3% (SGD); page-blocks 95.3, 96.1, 96.2%; elastic net on
# letter 61.9, 63.6, 62.4%; level or ahead elsewhere (satimage, vehicle,
# spambase with 57 columns, heart).  On wider rows mirror descent's unscaled
# alpha (see _auto_alpha) overfits where dual averaging's scaled one does
# not: mnist10k (784 columns) 85.9% against 89.2% (SGD 88.4%), usps (256)
# 92.2 against 92.9% (SGD 92.9%).  On text (about 0.1% non-zero) dual
# averaging is the better rule: 20 newsgroups 82.7% against 81.3%, at a
# tenth of the non-zeros and a quarter of the time.
AUTO_UPDATE_MIN_DENSITY = 0.5
AUTO_UPDATE_MAX_SQ_NORM = 100.0


def _computed_or_stored(name, compute, doc, compute_classes=None):
    """A fitted attribute that the element-wise layout computes from
    ``accumulators_`` (``compute(estimator, accumulators_)``), the
    multinomial one from ``class_accumulators_``
    (``compute_classes(estimator, class_accumulators_[0])``, an array
    (n_features, n_classes, 2)), and the other layouts store under its own
    name.  ``None``: the layout has no such attribute."""

    def get(est):
        state = est.__dict__
        if "accumulators_" in state and compute is not None:
            return compute(est, state["accumulators_"])
        if "class_accumulators_" in state and compute_classes is not None:
            return compute_classes(est, state["class_accumulators_"][0])
        if name in state:
            return state[name]
        raise AttributeError(name)

    def set_(est, value):
        est.__dict__[name] = value

    return property(get, set_, doc=doc)


CACHE_LINE = 64  # bytes


def entries_on_cache_lines(shape):
    """Zeros of ``shape`` (float64) from the start of a cache line, so that
    mirror descent's entries of four doubles (``accumulators_``) each sit in
    one line.  NumPy aligns its arrays to 16 bytes only, where half of those
    entries straddle two lines: one pass of 20 newsgroups hashed to 2**20
    columns, l2, took 136 ms so and 87 ms aligned (three arrays: 142)."""
    size = int(np.prod(shape))
    buffer = np.zeros(size + CACHE_LINE // 8)
    start = (-buffer.ctypes.data % CACHE_LINE) // 8
    return buffer[start:start + size].reshape(shape)


def owns_cache_line_buffer(array):
    """Whether ``array`` is one that ``entries_on_cache_lines`` made: a view
    of a buffer of its own, which a copy may be written into as into an
    array that owns its data."""
    base = array.base
    return (isinstance(base, np.ndarray) and base.base is None and base.ndim == 1
            and base.size == array.size + CACHE_LINE // 8)


def off_cache_lines(entries):
    """Whether ``entries`` do not start on a cache line (or are not one
    C-ordered block): half of their entries of four doubles then straddle
    two lines."""
    return entries.ctypes.data % CACHE_LINE != 0 or not entries.flags.c_contiguous


def _on_cache_lines(entries):
    """``entries``, or a copy of them from the start of a cache line: an
    unpickled state, realigned once (O(state)) by the general path's call
    that continues it (a short call leaves it to that path)."""
    if not off_cache_lines(entries):
        return entries
    aligned = entries_on_cache_lines(entries.shape)
    aligned[...] = entries
    return aligned


def mirror_descent_entries(u, root, weights, steps, out=None):
    """Mirror descent's entries ``(u, root, w, s)`` of each coordinate side
    by side, in ``out`` or in a new array on cache lines."""
    if out is None:
        out = entries_on_cache_lines(np.shape(u) + (4,))
    out[..., 0], out[..., 1] = u, root
    out[..., MD_WEIGHT_COLUMN], out[..., MD_STEP_COLUMN] = weights, steps
    return out


def _read_only(view):
    view.flags.writeable = False  # the state is changed by fitting only
    return view


def _writable(array):
    """The kernels' views are writable: a state loaded read-only (e.g. by
    ``joblib.load(..., mmap_mode="r")``) is read from a copy."""
    return array if array.flags.writeable else array.copy()


# ----------------------------------------------------------------------
# The kernels of AdaGradClassifier, one row each.  The options select the
# first row whose ``selects`` holds; ``refusals`` are the combinations of
# options that kernel does not implement, checked in order before any change
# (``_check_options``: (refused(est, n_features), message(est, n_features)));
# ``run_epoch`` is its pass, ``problem(est, k)`` builds its Problem for
# problem k on views of the fitted arrays, and ``read_back(est, k, problem)``
# copies the Problem's scalars back into them.

class _Kernel(NamedTuple):
    name: str
    selects: Callable
    refusals: tuple
    run_epoch: Callable
    problem: Callable
    read_back: Callable


def _couples_coordinates(est):
    return est.penalty == "linf" or est.l1_ball is not None


_MULTINOMIAL_LOSS = (
    lambda est, n_features: est.loss not in MULTINOMIAL_LOSSES,
    lambda est, n_features: (
        f"multi_class='multinomial' supports loss in "
        f"{sorted(MULTINOMIAL_LOSSES)} (softmax cross-entropy and the "
        f"multi-class hinge); got loss={est.loss!r}."
    ),
)
_ONE_VECTOR_PER_PROBLEM = (
    lambda est, n_features: _couples_coordinates(est) or est.matrix == "full",
    lambda est, n_features: (
        "penalty='linf', l1_ball and matrix='full' act on one weight "
        "vector per problem; use them with multi_class='ovr'."
    ),
)
_MIXED_NORM_NEEDS_MULTINOMIAL = (
    lambda est, n_features: est.penalty in MIXED_NORM_PENALTIES,
    lambda est, n_features: (
        f"penalty={est.penalty!r} groups the weights of a feature across "
        "classes, so it needs multi_class='multinomial'."
    ),
)


def _ftrl_refused(structured):
    """update='ftrl_proximal' with a structured penalty or matrix
    (``structured(est)``)."""
    return (
        lambda est, n_features: est._update() == "ftrl_proximal" and structured(est),
        lambda est, n_features: (
            "update='ftrl_proximal' supports the penalties 'l1', 'l2', "
            "'elasticnet' and None with matrix='diagonal'; use "
            "'dual_averaging' or 'mirror_descent'."
        ),
    )


def _identity_refused(refused):
    """matrix='identity' where ``refused(est)``."""
    return (
        lambda est, n_features: est.matrix == "identity" and refused(est),
        lambda est, n_features: (
            "matrix='identity' (the non-adaptive baseline) is implemented for "
            "update='dual_averaging' with element-wise or mixed-norm penalties."
        ),
    )


_L1_BALL_REPLACES_PENALTY = (
    lambda est, n_features: est.l1_ball is not None and est.penalty is not None,
    lambda est, n_features: (
        "l1_ball is a constraint that replaces the penalty: set "
        f"penalty=None (got penalty={est.penalty!r})."
    ),
)


def _elementwise_problem(est, k):
    return est._problem(
        k, est._weight_rule(), intercept=est.intercept_[k],
        intercept_sum_grad=est.intercept_sum_gradient_[k],
        intercept_sum_sq_grad=est.intercept_sum_sq_gradient_[k])


def _read_intercept_sums(est, k, problem):
    est.intercept_[k] = problem.intercept
    est.intercept_sum_gradient_[k] = problem.intercept_sum_grad
    est.intercept_sum_sq_gradient_[k] = problem.intercept_sum_sq_grad


def _coupled_problem(est, k):
    if est.l1_ball is not None:
        constraint, strength = "l1_ball", float(est.l1_ball)
    else:
        constraint, strength = "linf", est._alpha()
    return CoupledProblem(
        loss=make_loss(est.loss), update=est._update(), penalty=constraint,
        eta=est.eta, delta=est.delta, strength=strength,
        fit_intercept=est.fit_intercept, coef=est.coef_[k],
        sum_grad=est.sum_gradient_[k], sum_sq_grad=est.sum_sq_gradient_[k],
        intercept=est.intercept_[k], intercept_sum_grad=est.intercept_sum_gradient_[k],
        intercept_sum_sq_grad=est.intercept_sum_sq_gradient_[k], t=est.t_)


def _multinomial_problem(est, k):
    return est._class_problem(
        est._weight_rule(), intercept=est.class_intercept_,
        intercept_sum_grad=est.intercept_sum_gradient_,
        intercept_sum_sq_grad=est.intercept_sum_sq_gradient_)


def _full_matrix_problem(est, k):
    return FullMatrixProblem(
        loss=make_loss(est.loss), update=est._update(), eta=est.eta,
        delta=est.delta, l2=est._alpha() if est.penalty == "l2" else 0.0,
        fit_intercept=est.fit_intercept, coef=est.coef_[k],
        sum_grad=est.sum_gradient_[k], sum_outer_grad=est.sum_outer_gradient_[k],
        intercept=est.intercept_[k], intercept_sum_grad=est.intercept_sum_gradient_[k],
        t=est.t_)


def _read_full_matrix_intercept(est, k, problem):
    if est.fit_intercept:
        est.intercept_[k] = problem.intercept
        est.intercept_sum_gradient_[k] = problem.intercept_sum_grad


_KERNELS = (
    _Kernel(
        name="multinomial",
        selects=lambda est: est.multi_class == "multinomial",
        refusals=(
            _MULTINOMIAL_LOSS,
            _ONE_VECTOR_PER_PROBLEM,
            _ftrl_refused(lambda est: est.penalty in MIXED_NORM_PENALTIES),
            _identity_refused(lambda est: est._update() != "dual_averaging"),
        ),
        run_epoch=_adagrad_multinomial_fast.run_epoch,
        problem=_multinomial_problem,
        # one problem over all classes: coef_ and intercept_ from the classes'
        read_back=lambda est, k, problem: est._publish_class_intercepts(),
    ),
    _Kernel(
        name="full_matrix",
        selects=lambda est: est.matrix == "full",
        refusals=(
            _MIXED_NORM_NEEDS_MULTINOMIAL,
            _ftrl_refused(lambda est: True),
            (lambda est, n_features: est.l1_ball is not None,
             lambda est, n_features: ("l1_ball is implemented for the diagonal "
                                      "metric; use matrix='diagonal' with it.")),
            (lambda est, n_features: est.penalty not in (None, "l2"),
             lambda est, n_features: ("matrix='full' supports penalty='l2' or None; got "
                                      f"penalty={est.penalty!r}.")),
            (lambda est, n_features: n_features > FULL_MATRIX_MAX_FEATURES,
             lambda est, n_features: (
                 f"matrix='full' costs O(n_features^3) per sample and is "
                 f"limited to n_features <= {FULL_MATRIX_MAX_FEATURES}; X has "
                 f"{n_features} features. Use matrix='diagonal'.")),
        ),
        run_epoch=_adagrad_full_fast.run_epoch,
        problem=_full_matrix_problem,
        read_back=_read_full_matrix_intercept,
    ),
    _Kernel(
        name="coupled",
        selects=_couples_coordinates,
        refusals=(
            _MIXED_NORM_NEEDS_MULTINOMIAL,
            _ftrl_refused(lambda est: True),
            _identity_refused(lambda est: True),
            _L1_BALL_REPLACES_PENALTY,
        ),
        run_epoch=_adagrad_coupled_fast.run_epoch,
        problem=_coupled_problem,
        read_back=_read_intercept_sums,
    ),
    _Kernel(
        name="elementwise",
        selects=lambda est: True,
        refusals=(
            _MIXED_NORM_NEEDS_MULTINOMIAL,
            _identity_refused(lambda est: est._update() != "dual_averaging"),
        ),
        run_epoch=_adagrad_fast.run_epoch,
        problem=_elementwise_problem,
        read_back=_read_intercept_sums,
    ),
)

# the row each combination of (multi_class, matrix, penalty, l1_ball is
# None) selects, filled as combinations are met (see _kernel)
_KERNEL_OF_OPTIONS = {}


class AdaGradClassifier(BaseOnlineLinearClassifier):
    __doc__ = r"""Linear classifier trained online by diagonal AdaGrad.

    Minimises, one sample at a time, the regularised empirical risk

    .. math::
        \frac{1}{n}\sum_{j} s_j\,\ell(y_j, \langle w, x_j\rangle + b)
        + \alpha\Big(\rho\|w\|_1 + \frac{1-\rho}{2}\|w\|_2^2\Big)

    (``rho = l1_ratio`` for ``penalty="elasticnet"``, 1 for ``"l1"``, 0 for
    ``"l2"``; no penalty for ``None``; ``s_j`` the sample weight) with the
    per-coordinate steps of AdaGrad (Duchi, Hazan & Singer, 2011).  With
    ``g_t`` the gradient of sample ``t``, every coordinate ``i`` keeps
    ``u_i = sum_t g_{t,i}`` and ``H_i = delta + sqrt(sum_t g_{t,i}^2)``; with
    ``l1 = alpha * rho``, ``l2 = alpha * (1 - rho)`` and ``t`` samples seen:

    * ``update="dual_averaging"`` (AdaGrad's primal-dual / RDA update):
      ``w_i = -sign(u_i) * eta * max(|u_i| - l1 t, 0) / (H_i + eta l2 t)``.
    * ``update="mirror_descent"`` (composite mirror descent, FOBOS-like):
      ``z = w_i - eta g_i / H_i`` then
      ``w_i = sign(z) max(|z| - eta l1 / H_i, 0) / (1 + eta l2 / H_i)``.
    * ``update="ftrl_proximal"``: FTRL-Proximal of McMahan et al. (2013,
      Algorithm 1), see below.

    Every update is lazy: a step costs O(nnz) of the row, and weights of
    features absent from it are brought up to date exactly, in closed form,
    when next read.  ``coef_`` is exact and current after every ``fit`` and
    ``partial_fit``.  The intercept is an unpenalised coordinate with its own
    accumulators.

    Beyond these, the rest of the paper's composite framework (section 5):
    ``multi_class="multinomial"`` (one weight matrix, softmax or multi-class
    hinge) with the mixed norms ``"l1_l2"`` / ``"l1_linf"`` that drop a
    feature for every class at once; the ``"linf"`` penalty; the
    ``l1_ball`` constraint; and full-matrix AdaGrad (``matrix="full"``).
    See the parameters and Notes for what each costs.

    Parameters
    ----------
    loss : {"hinge", "log_loss", "squared_hinge", "modified_huber"}, default="hinge"
        Per-sample loss of the margin ``y (<w, x> + b)``, y in {-1, +1}.
        With ``multi_class="multinomial"``: ``"log_loss"`` is the softmax
        cross-entropy and ``"hinge"`` the multi-class hinge
        ``max(0, 1 + max_{k != y} p_k - p_y)`` of the class scores ``p``.
    update : {"auto", "dual_averaging", "mirror_descent", "ftrl_proximal"}, default="auto"
        The AdaGrad update rule.  "auto": ``"mirror_descent"`` for the
        ``"l1"`` and ``"elasticnet"`` penalties of a one-vs-rest (or binary)
        model with the diagonal ``matrix`` when at least half of the entries
        of the rows are non-zero and their weighted mean squared norm is at
        most 100 (standardised tables of up to about a hundred columns), and
        ``"dual_averaging"`` otherwise (text, one-hot tables, wide tables,
        the other penalties and options).  On such rows dual averaging's l1
        threshold ``alpha * t`` meets every coordinate at every step and
        keeps too few features (letter: 62.2% against mirror descent's 64.0%
        and ``SGDClassifier(penalty="l1")``'s 64.3%); on sparse rows dual
        averaging is the more accurate, sparser and quicker of the two, and
        on wide rows its scaled ``alpha`` is the better regularised.  The
        non-zero values of the first call's rows (``fit``, or the first
        ``partial_fit``) are counted, so dense and sparse X give the same
        choice; it is fixed afterwards, and the rule in use is ``update_``.
    penalty : {"l2", "l1", "elasticnet", "l1_l2", "l1_linf", "linf"} or None, default="l2"
        Composite penalty, handled exactly by the proximal step (l1 gives
        exact zeros).  ``"l1_l2"`` and ``"l1_linf"`` (multinomial only) are
        ``alpha * sum_j ||W[j, :]||_p`` over the rows of the weight matrix
        (a row = the weights of feature ``j`` for all classes), p = 2 or
        infinity: a feature is kept or dropped for all classes at once.
        ``"linf"`` is ``alpha * ||w||_inf`` per one-vs-rest problem.  The
        mixed norms, ``"linf"`` and ``l1_ball`` take ``"dual_averaging"`` or
        ``"mirror_descent"``.
    alpha : float or "auto", default="auto"
        Regularisation strength (scikit-learn's ``SGDClassifier`` convention).
        "auto": 1e-4 (``SGDClassifier``'s default) for every penalty but
        ``"l1"``, for which it is 1e-5: with the same objective, dual
        averaging's exact threshold ``alpha * t`` keeps far fewer features
        than SGD's truncated steps, and at 1e-4 the features of rare classes
        vanish.  These hold for rows of mean squared norm ``q`` up to 10
        (text with unit rows, tables scaled to [0, 1]); for larger rows
        (standardised tables of many columns) they are multiplied by
        ``q / 10``.  SGD's alpha = 1e-4 is not scaled so, but SGD stops far
        from the optimum of its objective on such rows, and its early
        iterate is the better model (on 784 standardised pixels, 90.5%
        against 88.2% for the exact optimum of the same objective); the
        scaled value gives AdaGrad that accuracy in fewer epochs.  ``q`` is
        the weighted mean over the rows of the first call (``fit``, or the
        first ``partial_fit``), fixed afterwards: the value in use is
        ``alpha_``.  Under ``"mirror_descent"`` (given, or chosen by
        ``update="auto"``) "auto" is not scaled (its step would then follow
        the last gradient alone).
        It weighs the penalty against the *average* loss under every
        ``update``, so the dual-averaging and FTRL-Proximal thresholds grow
        as ``alpha * t``.

        .. versionchanged:: 0.1
           Under ``"ftrl_proximal"`` ``alpha`` was McMahan et al.'s constant
           per-coordinate strength (charged once, against the sum of the
           losses); it now has the meaning it has under the other updates.
           McMahan's constant ``lambda_1`` after ``N`` samples is
           ``alpha = lambda_1 / N``.
    l1_ratio : float in [0, 1], default=0.15
        Elastic-net mixing; only used with ``penalty="elasticnet"``.
    eta : float, default=1.0
        Step size (AdaGrad's ``eta``, FTRL-Proximal's ``alpha``).  AdaGrad's
        steps ``eta / H_i`` already adapt to the scale of each feature, so
        one value suits most data; 1.0 reaches SGD's accuracy in fewer
        epochs than 0.1 on text (benchmarks/bench_defaults.py).
    delta : float, default=0.0
        Added to the root of the squared-gradient sums (``H = delta + sqrt``;
        FTRL-Proximal's ``beta``).  With ``delta=0`` the very first step on a
        coordinate has length ``eta``.
    multi_class : {"ovr", "multinomial"}, default="ovr"
        ``"ovr"``: one binary problem per class (one for two classes), run in
        parallel threads.  ``"multinomial"``: one weight matrix for all
        classes with per-entry AdaGrad sums, trained on the multinomial
        ``loss``; a step costs O(n_classes * nnz).  Unlike scikit-learn's
        ``LogisticRegression``, where ``multi_class`` is deprecated, both
        are kept here as one estimator on purpose (the user guide says why).
    matrix : {"diagonal", "full", "identity"}, default="diagonal"
        AdaGrad's proximal matrix.  ``"identity"``: ``H = (delta + sqrt(t)) I``,
        the same for every coordinate and blind to the gradients -- not
        AdaGrad but the non-adaptive baseline of the paper's comparisons
        (Xiao's regularised dual averaging with ``beta_t = sqrt(t) / eta``),
        for ``update="dual_averaging"``; it isolates what the adaptive
        ``H`` buys at equal penalty.  ``"full"``: ``H = delta I + G^{1/2}`` with
        ``G`` the sum of the outer products of the gradients (the intercept
        is one more coordinate of ``G``, still unpenalised), with
        ``penalty="l2"`` or None, one-vs-rest.  Exact, through an
        eigendecomposition per step: O(n_features^3) per sample, so it is
        limited to dense problems of at most ``FULL_MATRIX_MAX_FEATURES``
        (see ``sklearn_adaprox._adagrad_full_fast``) features.
    l1_ball : float > 0 or None, default=None
        Constrain each weight vector to ``||w||_1 <= l1_ball`` (with
        ``penalty=None`` and the diagonal ``matrix``), by the sort-based
        weighted projection of the paper's Figure 3.  Like ``penalty="linf"`` this couples all
        coordinates: a step costs O(n_features log n_features), for dense
        moderate-dimensional data.
    fit_intercept : bool, default=True
        Learn an unpenalised intercept.
    max_iter : int, default=1000
        Maximum number of passes (epochs) over the data in ``fit``.
        ``partial_fit`` always makes one pass over its chunk.
""" + STOP_PER_PROBLEM_DOC + r"""    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit``.  ``partial_fit``
        always learns from its rows in the order given.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling.
    warm_start : bool, default=False
        If True, ``fit`` continues from the fitted state (weights, AdaGrad
        sums and step counter) instead of starting afresh.
    class_weight : dict, "balanced" or None, default=None
        Multiplies the sample weight of each row by the weight of its class.
        ``"balanced"`` is refused by ``partial_fit`` (the class frequencies
        of a stream are unknown): compute a dict once with
        ``sklearn.utils.compute_class_weight``.
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems (the kernel releases the GIL).
    verbose : int, default=0
        Print one line per epoch / ``partial_fit`` call: samples seen,
        progressive loss, non-zero weights and elapsed time.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights, float64 whatever the dtype of X (the AdaGrad sums would lose
        precision in float32; float32 X is read as it is, not copied).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    class_coef_, class_intercept_ : ndarray of shape (n_classes, n_features) and (n_classes,)
        Multinomial only: the weights of each class.  ``coef_`` is
        ``class_coef_`` for more than two classes and
        ``class_coef_[1] - class_coef_[0]`` for two (the losses only see
        differences of class scores).
    class_accumulators_ : ndarray of shape (1, n_features, n_classes, 2)
        Multinomial only: the pairs ``(u, sqrt(n))`` of each class, a
        feature's classes side by side: the state the kernel updates in
        place; ``coef_``, ``class_coef_``, ``sum_gradient_`` and
        ``sum_sq_gradient_`` are computed from it when read, so a
        ``partial_fit`` call costs O(n_classes * nnz) whatever
        ``n_features``.
    class_weights_, class_steps_ : ndarray of shape (1, n_features, n_classes) and (1, n_features)
        Multinomial mirror descent: the weights, each row current at its
        step (brought to step ``t_`` when read).
    classes_ : ndarray of shape (n_classes,)
    sum_gradient_ : ndarray of shape (n_problems, n_features)
        AdaGrad's ``u``: sum of the gradients (``n_problems = n_classes``
        when multinomial).  For ``"ftrl_proximal"`` it is McMahan's ``z``.
    sum_sq_gradient_ : ndarray of shape (n_problems, n_features)
        Sum of the squared gradients (McMahan's ``n``); diagonal matrix only.
    accumulators_ : ndarray of shape (n_problems, n_features, 2) or (n_problems, n_features, 4)
        Element-wise options (binary or one-vs-rest, diagonal matrix, an
        element-wise penalty): the state the kernel updates in place, the
        pairs ``(u_j, sqrt(n_j))``; for mirror descent the entries
        ``(u_j, sqrt(n_j), w_j, s_j)``, with its weight ``w_j`` current at
        step ``s_j`` (one entry per coordinate: one cache line).
        ``coef_``, ``sum_gradient_`` and ``sum_sq_gradient_`` are computed
        from it when read, so a ``partial_fit`` call costs O(nnz) whatever
        ``n_features``.
    md_weights_, md_steps_ : ndarray of shape (n_problems, n_features)
        Element-wise mirror descent: each weight and the step at which it
        is current (it is brought to step ``t_`` when read), read from
        ``accumulators_``.  Without a penalty an idle weight does not
        change, so the steps are not kept: ``md_steps_`` then holds the step
        at which the options last changed.
    sum_outer_gradient_ : ndarray of shape (n_problems, m, m)
        ``matrix="full"`` only: ``G``, the sum of the outer products of the
        gradients, ``m = n_features + fit_intercept`` (the intercept last).
    intercept_sum_gradient_, intercept_sum_sq_gradient_ : ndarray of shape (n_problems,)
        The same for the intercept (the second one: diagonal matrix only).
    update_ : str
        The update rule in use: ``update``, or its "auto" choice for the
        rows of the first call (see ``update``).
    alpha_ : float
        The alpha in use: ``alpha``, or its "auto" value for the rows of the
        first call (see ``alpha``).
    t_ : int
        Number of steps taken: every processed sample of non-zero weight,
        over all epochs and ``partial_fit`` calls.
    n_iter_ : int
        Passes made by the last ``fit`` (1 for ``partial_fit``).
    loss_curve_ : list of float
        Progressive (predict-then-learn) loss: for each epoch of the last
        ``fit``, or for each ``partial_fit`` call, the weighted mean of the
        loss of each sample just before the model learnt from it (summed
        over the one-vs-rest problems).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when X has string feature names.

    See Also
    --------
    sklearn.linear_model.SGDClassifier : Plain SGD with one global step size.
    RDAPlusClassifier : L1-regularised logistic regression that identifies the
        support, then refines it by Newton steps.
    ImplicitFTRLClassifier : Implicit FTRL, robust to a too large step size.
    PairwiseAUCClassifier : Online maximisation of the ROC AUC.

    Notes
    -----
    **Sample weights** multiply the gradient: a row of weight ``s`` is one
    step on the loss ``s * l``.  A weight of 2 is therefore *not* the same as
    the row twice (AdaGrad's accumulator grows by ``4 g^2`` instead of
    ``2 g^2``, and one step is taken instead of two).  What does hold:
    multiplying every weight by ``c > 0`` gives the same model as multiplying
    ``alpha`` and ``delta`` by ``1/c`` (AdaGrad is invariant to the scale of
    the gradients); and rows of weight 0 are not steps at all, so a chunk of
    zero weights changes nothing.

    **FTRL-Proximal.** McMahan et al.'s per-coordinate FTRL-Proximal with
    parameters ``(alpha_M, beta_M, lambda_1, lambda_2)`` is
    ``update="ftrl_proximal"`` with ``eta=alpha_M``, ``delta=beta_M`` and
    ``penalty="elasticnet", alpha=lambda_1 + lambda_2,
    l1_ratio=lambda_1 / (lambda_1 + lambda_2)`` (``"l1"``/``"l2"`` when one of
    them is zero), with the penalty of every step counted, as for the other
    updates: after ``t`` steps the strengths are ``lambda_1 t`` and
    ``lambda_2 t`` (McMahan's 2011 composite-objective form), and ``w_i`` is
    exactly 0 while ``|z_i| <= lambda_1 t``.  It is
    *not* the dual-averaging update: dual averaging centres its quadratic at
    the origin, FTRL-Proximal at the past iterates (so without penalty it
    coincides with ``"mirror_descent"``, not with ``"dual_averaging"``), and
    dual averaging multiplies the penalty by ``t``.

    **Cost of the structured options.**  Element-wise penalties cost
    O(nnz) per sample (O(n_classes * nnz) multinomial).  The mixed norms
    solve one small problem per touched row: l1/l2 by Newton's method on a
    scalar (closed form when a row's ``H`` entries are equal), l1/linf by a
    weighted l1 projection, O(n_classes log n_classes).  Under dual averaging
    an untouched row is a closed form of its sums and ``t``, read lazily.
    Under mirror descent an untouched row still shrinks every step: for
    l1/linf k idle steps are one step with k times the penalty (exact), but
    l1/l2 with unequal ``H`` has no closed form for repeated steps, so its
    idle steps are replayed when the row is next read, stopping once it
    reaches zero.  On sparse data that costs up to the number of idle steps
    per touched row, tens of times a dual-averaging pass on text: use dual
    averaging there.  ``"linf"`` and ``l1_ball``
    cost O(n_features log n_features) per sample, ``matrix="full"``
    O(n_features^3).

    **fit / partial_fit / warm_start.** ``fit`` starts from zero (unless
    ``warm_start``) and makes up to ``max_iter`` shuffled passes.
    ``partial_fit`` continues from the current state with one pass over the
    chunk in the given order; chunks fed with ``shuffle=False`` give the
    model of one ``fit`` epoch on their concatenation, and pickling between
    chunks does not change the result.

    References
    ----------
    J. Duchi, E. Hazan, Y. Singer. Adaptive Subgradient Methods for Online
    Learning and Stochastic Optimization. JMLR 12:2121-2159, 2011.

    H. B. McMahan et al. Ad Click Prediction: a View from the Trenches.
    KDD 2013.

    Examples
    --------
    >>> from sklearn_adaprox import AdaGradClassifier
    >>> from sklearn_adaprox.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> clf = AdaGradClassifier(penalty="l1", alpha=1e-5, random_state=0)
    >>> clf.fit(X_train, y_train).score(X_test, y_test) > 0.83
    True
    """

    _parameter_constraints: dict = {
        **BaseOnlineLinearClassifier._parameter_constraints,
        "loss": [StrOptions({"hinge", "log_loss", "squared_hinge", "modified_huber"})],
        "update": [StrOptions({"auto", "dual_averaging", "mirror_descent", "ftrl_proximal"})],
        "penalty": [
            StrOptions({"l2", "l1", "elasticnet", "l1_l2", "l1_linf", "linf"}),
            None,
        ],
        "multi_class": [StrOptions({"ovr", "multinomial"})],
        "matrix": [StrOptions({"diagonal", "full", "identity"})],
        "l1_ball": [Interval(Real, 0, None, closed="neither"), None],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        loss="hinge",
        *,
        update="auto",
        penalty="l2",
        alpha="auto",
        l1_ratio=0.15,
        eta=1.0,
        delta=0.0,
        multi_class="ovr",
        matrix="diagonal",
        l1_ball=None,
        fit_intercept=True,
        max_iter=1000,
        tol=1e-3,
        n_iter_no_change=5,
        shuffle=True,
        random_state=None,
        warm_start=False,
        class_weight=None,
        n_jobs=None,
        verbose=0,
    ):
        self.loss = loss
        self.update = update
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.eta = eta
        self.delta = delta
        self.multi_class = multi_class
        self.matrix = matrix
        self.l1_ball = l1_ball
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose

    @property
    def _short_path_type(self):
        """The short path of calls on a few rows (``_short_calls``) that the
        options select."""
        return MultinomialPath if self.multi_class == "multinomial" else AdaGradPath

    # update="auto" and alpha="auto" are resolved from the first call's rows
    # (merge and the distributed trainer pin them: see sklearn_adaprox.merge)
    _resolved_params = ("update_", "alpha_")

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        # A call on a few plain rows of a fitted element-wise or multinomial
        # model takes the short path of _short_calls (the same model, bit
        # for bit); any other goes through the general validation and
        # transaction.
        if short_partial_fit(self, X, y, classes, sample_weight):
            return self
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    partial_fit.__doc__ = BaseOnlineLinearClassifier.partial_fit.__doc__

    def _scores(self, X):
        scores = short_scores(self, X)
        return super()._scores(X) if scores is None else scores

    @available_if(lambda est: est.loss in PROBABILISTIC_LOSSES)
    def predict_proba(self, X):
        """Class probabilities, for the losses ``log_loss`` and ``modified_huber``.

        ``multi_class="multinomial"``: the softmax of the class scores.
        One-vs-rest: ``log_loss`` gives the logistic of each score,
        ``modified_huber`` ``(clip(score, -1, 1) + 1) / 2``, and the rows are
        normalised.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class (columns in the order of
            ``classes_``); every row sums to 1.
        """
        check_is_fitted(self)
        return self._proba_from_scores(self.decision_function(X))

    def _proba_from_scores(self, scores):
        if self.multi_class == "multinomial" and len(self.classes_) > 2:
            return softmax(scores, axis=1)
        # two classes: the sigmoid of p_1 - p_0 is the softmax as well
        return self._proba_from_loss(scores, self.loss)

    @available_if(lambda est: est.loss in PROBABILISTIC_LOSSES)
    def predict_log_proba(self, X):
        """Logarithm of the class probabilities of ``predict_proba``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Natural logarithm of each class probability (columns in the
            order of ``classes_``; -inf where a probability is 0).
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    # ------------------------------------------------------------------
    def _check_options(self, n_features, n_classes, first_call):
        if not first_call and self._state_layout() != (
            "class_accumulators_" in self.__dict__,
            getattr(self, "sum_outer_gradient_", np.empty((0, 0, 0))).shape[1:],
        ):
            raise ValueError(
                "multi_class, matrix and (with matrix='full') fit_intercept "
                "shape the fitted state; they cannot change while partial_fit or "
                "warm_start continues it. Call fit with warm_start=False."
            )
        for refused, message in self._kernel().refusals:
            if refused(self, n_features):
                raise ValueError(message(self, n_features))

    def _kernel(self):
        """The row of ``_KERNELS`` that the current options select."""
        # consulted several times per call: remembered per combination of
        # the options that the rows' ``selects`` read (a one-row partial_fit
        # would otherwise spend a tenth of its time here)
        options = (self.multi_class, self.matrix, self.penalty, self.l1_ball is None)
        row = _KERNEL_OF_OPTIONS.get(options)
        if row is None:
            row = next(row for row in _KERNELS if row.selects(self))
            _KERNEL_OF_OPTIONS[options] = row
        return row

    def _state_layout(self):
        """(per-class weight matrix?, shape of one full matrix G or (0, 0))
        that the parameters give the fitted state."""
        n_dims = self.n_features_in_ + self.fit_intercept
        return (
            self.multi_class == "multinomial",
            (n_dims, n_dims) if self.matrix == "full" else (0, 0),
        )

    def _problem_targets(self, y_index, n_classes):
        if self.multi_class == "multinomial":
            # one problem over all classes; the kernel takes class indices
            return [y_index.astype(np.float64)]
        return super()._problem_targets(y_index, n_classes)

    def _alpha(self):
        """``alpha``, or its "auto" value: ``alpha_``, fixed by the first
        call (a model pickled before ``alpha_`` existed was trained with
        the unscaled values)."""
        if not isinstance(self.alpha, str):
            return float(self.alpha)
        if "alpha_" in self.__dict__:
            return self.alpha_
        return AUTO_ALPHA_L1 if self.penalty == "l1" else AUTO_ALPHA

    def _update(self):
        """``update``, or its "auto" value: ``update_``, fixed by the first
        call (dual averaging before it, and whenever the options leave
        "auto" no choice)."""
        if self.update != "auto":
            return self.update
        if not self._update_follows_rows():
            return "dual_averaging"
        return self.__dict__.get("update_", "dual_averaging")

    def _update_follows_rows(self):
        """Whether ``update="auto"`` looks at the rows: an l1 or elastic-net
        penalty on one-vs-rest (or binary) problems of the diagonal matrix.
        (The multinomial l1 model gained a quarter of a point from mirror
        descent on letter, 77.3 against 77.1%, at five times the time.)"""
        return (self.penalty in ("l1", "elasticnet") and self.matrix == "diagonal"
                and self.multi_class == "ovr")

    def _resolve_parameters(self, X, sample_weight, first_call):
        """``update_`` and ``alpha_``: the explicit values, on every call;
        "auto" values are resolved from the rows of the first call, then
        fixed (see ``update`` and ``alpha``).  ``update_`` first: the "auto"
        ``alpha`` depends on the update."""
        if self.update != "auto":
            self.update_ = self.update
        elif first_call:
            self.update_ = self._auto_update(X, sample_weight)
        else:
            # the value in use (dual averaging if the options have changed
            # to ones that leave "auto" no choice)
            self.update_ = self._update()
        if not isinstance(self.alpha, str):
            self.alpha_ = float(self.alpha)
        elif first_call:
            self.alpha_ = self._auto_alpha(X, sample_weight)
        elif "alpha_" not in self.__dict__:
            self.alpha_ = self._alpha()

    def _auto_update(self, X, sample_weight):
        """``update="auto"`` for the rows of X: mirror descent if the options
        follow the rows (``_update_follows_rows``), at least
        ``AUTO_UPDATE_MIN_DENSITY`` of X's entries are non-zero and the
        rows' mean squared norm is at most ``AUTO_UPDATE_MAX_SQ_NORM``; dual
        averaging otherwise.  The non-zero values are counted, not the
        stored entries (duplicates summed), so a dense array and its CSR
        matrix agree; every row counts, whatever its weight.  O(nnz)."""
        if not self._update_follows_rows() or X.shape[0] * X.shape[1] == 0:
            return "dual_averaging"
        density = np.count_nonzero(as_row_arrays(X)[0]) / (X.shape[0] * X.shape[1])
        if (density >= AUTO_UPDATE_MIN_DENSITY
                and row_scales(X, sample_weight)[0] <= AUTO_UPDATE_MAX_SQ_NORM):
            return "mirror_descent"
        return "dual_averaging"

    def _auto_alpha(self, X, sample_weight):
        """``alpha="auto"`` for the rows of X: the base value (1e-4; 1e-5
        for l1) times ``max(1, q / AUTO_ALPHA_SQ_NORM)``, ``q`` the weighted
        mean squared norm of the rows (``row_scales``), for every penalty
        (see AUTO_ALPHA_SQ_NORM for l1).  Mirror descent keeps the base
        value: its step ``w <- (H w - eta g) / (H + eta alpha)`` follows the
        last gradient alone once ``eta alpha`` outgrows ``H``, which a scaled
        alpha does on rows of large norm (MNIST's raw pixels, 0..255: 73.0%
        against 88.2% at 1e-4), where dual averaging's and FTRL's closed
        forms average all the gradients (90.9% at the scaled alpha, as on
        the pixels in [0, 1])."""
        base = AUTO_ALPHA_L1 if self.penalty == "l1" else AUTO_ALPHA
        if self._update() == "mirror_descent":
            return base
        return float(base * max(1.0, row_scales(X, sample_weight)[0] / AUTO_ALPHA_SQ_NORM))

    def _penalty_strengths(self):
        """(l1, l2) strengths of an element-wise penalty."""
        if self.penalty in (None, "linf") or self.penalty in MIXED_NORM_PENALTIES:
            return 0.0, 0.0
        alpha = self._alpha()
        if self.penalty == "l1":
            return alpha, 0.0
        if self.penalty == "l2":
            return 0.0, alpha
        return alpha * self.l1_ratio, alpha * (1.0 - self.l1_ratio)

    # ------------------------------------------------------------------
    # The fitted state of the element-wise binary problems (the common case:
    # one-vs-rest or binary, a diagonal matrix, an element-wise penalty) is
    # updated in place by the kernel, so that a partial_fit call costs what
    # its rows cost (O(nnz)) whatever n_features:
    #
    # * accumulators_ (n_problems, n_features, 2): (u_j, sqrt(ssq_j)) side by
    #   side, the kernel's own layout (z_j for FTRL-Proximal);
    # * mirror descent's entries have two more columns, its weight w_j and
    #   the step at which it is current (md_weights_ and md_steps_ read
    #   them), the other rules' weights being closed forms of the
    #   accumulators and t_;
    # * coef_, sum_gradient_ and sum_sq_gradient_ are read from those
    #   (coef_ materialised exactly, once per state, when it is read; a
    #   sparse X is scored by the weights of its own columns only).
    #
    # The multinomial state is kept the same way, in its kernel's layout:
    # class_accumulators_ (1, n_features, n_classes, 2), the (u, root) pairs
    # of a feature's classes side by side, and for mirror descent
    # class_weights_ (1, n_features, n_classes) with class_steps_ (1,
    # n_features); coef_, class_coef_, sum_gradient_ and sum_sq_gradient_
    # are read from them.  Transposing the state into the kernel's layout
    # and back at every call cost more than the pass on 20 newsgroups.
    #
    # The other options (full matrix, l-infinity, l1 ball) keep coef_,
    # sum_gradient_ and sum_sq_gradient_ as arrays, their kernels costing
    # O(n_features) per step anyway.  A continuing call whose options move
    # the state from one layout to the other converts it (O(state), once).

    def _elementwise(self):
        """Whether the current options take the in-place element-wise kernel."""
        return self._kernel().name == "elementwise"

    def _weight_rule(self):
        """What the weights of an in-place layout are a function of, frozen
        with the state at the end of each call (``coef_`` keeps its meaning
        when the parameters are changed afterwards)."""
        l1, l2 = self._penalty_strengths()
        rule = {"update": self._update(), "eta": float(self.eta), "delta": float(self.delta),
                "l1": l1, "l2": l2, "adaptive": self.matrix != "identity"}
        if self.multi_class == "multinomial":
            mixed_norm = self.penalty in MIXED_NORM_PENALTIES
            rule["penalty"] = self.penalty if mixed_norm else "elementwise"
            rule["group_strength"] = self._alpha() if mixed_norm else 0.0
        return rule

    def _problem(self, k, rule, **scalars):
        """The kernel's view of problem k of the element-wise state."""
        return AdaGradProblem(
            loss=make_loss(self.loss), fit_intercept=self.fit_intercept,
            acc=_writable(self.accumulators_[k]), t=self.t_, **rule, **scalars)

    def _class_problem(self, rule, **intercepts):
        """The multinomial kernel's view of the state (``intercepts``: the
        per-class intercept arrays it updates)."""
        state = self.__dict__
        acc = state["class_accumulators_"][0]
        md = rule["update"] == "mirror_descent"
        return MultinomialProblem(
            loss=make_multinomial_loss(self.loss), fit_intercept=self.fit_intercept,
            acc=_writable(acc.reshape(acc.shape[0], -1)),
            weights=_writable(state["class_weights_"][0]) if md else None,
            last_step=_writable(state["class_steps_"][0]) if md else None,
            t=self.t_, **rule, **intercepts)

    def _class_weights(self, columns=None):
        """The weights of each class (n_classes, n_columns) as the state
        stood after the last call: every feature's, or those of the sorted
        int64 ``columns``."""
        n_classes = self.__dict__["class_accumulators_"].shape[2]
        zeros = np.zeros(n_classes)  # the intercepts are not read through it
        reader = self._class_problem(self._rule, intercept=zeros, intercept_sum_grad=zeros,
                                     intercept_sum_sq_grad=zeros)
        out = np.empty((n_classes, self.n_features_in_ if columns is None
                        else columns.shape[0]))
        reader.coef_into(out, columns)
        return out

    def _class_coef(self):
        n_classes = self.__dict__["class_accumulators_"].shape[2]
        return self._computed_coef() if n_classes > 2 else self._class_weights()

    def _coef_is_computed(self):
        return "accumulators_" in self.__dict__ or "class_accumulators_" in self.__dict__

    def _weight_reader(self, k):
        """Problem k as it stood after the last call, to read its weights
        (the intercept is not read through it)."""
        return self._problem(k, self._rule, intercept=0.0, intercept_sum_grad=0.0,
                             intercept_sum_sq_grad=0.0)

    def _compute_coef(self):
        if "class_accumulators_" in self.__dict__:
            return self._coef_of_classes(self._class_weights())
        coef = np.empty(self.accumulators_.shape[:2])
        for k in range(coef.shape[0]):
            self._weight_reader(k).coef_into(coef[k])
        return coef

    def _compute_coef_at(self, columns):
        if "class_accumulators_" in self.__dict__:
            return self._coef_of_classes(self._class_weights(columns))
        out = np.empty((self.accumulators_.shape[0], columns.shape[0]))
        for k in range(out.shape[0]):
            self._weight_reader(k).coef_at(columns, out[k])
        return out

    def _in_place_arrays(self):
        if "accumulators_" in self.__dict__:
            return ("accumulators_",)
        if "class_accumulators_" in self.__dict__:
            return ("class_accumulators_", "class_weights_", "class_steps_")
        return ()

    coef_ = _computed_or_stored(
        "coef_", lambda est, acc: est._computed_coef(),
        "Weights, of shape (n_problems, n_features) (see the class doc).",
        lambda est, acc: est._computed_coef())
    sum_gradient_ = _computed_or_stored(
        "sum_gradient_", lambda est, acc: _read_only(acc[..., 0]),
        "AdaGrad's u (FTRL-Proximal's z), of shape (n_problems, n_features).",
        lambda est, acc: _read_only(acc[..., 0].T))
    sum_sq_gradient_ = _computed_or_stored(
        # the square of the root is exactly the sum it was computed from
        "sum_sq_gradient_", lambda est, acc: acc[..., 1] * acc[..., 1],
        "Sums of the squared gradients, of shape (n_problems, n_features).",
        lambda est, acc: np.ascontiguousarray((acc[..., 1] * acc[..., 1]).T))
    class_coef_ = _computed_or_stored(
        "class_coef_", None, "Multinomial: the weights of each class.",
        lambda est, acc: est._class_coef())

    @property
    def md_weights_(self):
        """Element-wise mirror descent: the weights, each at its step.

        Each ``md_weights_[k, j]`` is current at step ``md_steps_[k, j]``
        (a read-only view of ``accumulators_``)."""
        return _read_only(self._md_entries_or_raise("md_weights_")[..., MD_WEIGHT_COLUMN])

    @property
    def md_steps_(self):
        """Element-wise mirror descent: the step at which each weight is current.

        An int64 copy of a column of ``accumulators_``."""
        return self._md_entries_or_raise("md_steps_")[..., MD_STEP_COLUMN].astype(np.int64)

    def __setstate__(self, state):
        # a model pickled when mirror descent kept its weights and steps in
        # arrays of their own loads with them in its entries
        if "md_weights_" in state:
            state = dict(state)
            pairs = state["accumulators_"]
            state["accumulators_"] = mirror_descent_entries(
                pairs[..., 0], pairs[..., 1], state.pop("md_weights_"), state.pop("md_steps_"))
        super().__setstate__(state)

    def _md_entries(self):
        """``accumulators_`` when it holds mirror descent's four-column
        entries, else None."""
        acc = self.__dict__.get("accumulators_")
        return acc if acc is not None and acc.shape[-1] == 4 else None

    def _md_entries_or_raise(self, name):
        entries = self._md_entries()
        if entries is None:
            raise AttributeError(name)
        return entries

    def _md_entries_off_cache_lines(self):
        """Whether mirror descent's entries are to be realigned (see
        ``_on_cache_lines``)."""
        entries = self._md_entries()
        return entries is not None and off_cache_lines(entries)

    def _has_md_state(self):
        """Whether the in-place state holds mirror descent's weights: the
        element-wise layout's four-column entries, or the multinomial
        layout's ``class_weights_``."""
        if "accumulators_" in self.__dict__:
            return self._md_entries() is not None
        return "class_weights_" in self.__dict__

    def _prepare_continuing_state(self):
        """Convert the fitted state to the layout of the current options
        (see above); new arrays, so a failed call leaves the old ones as
        they were."""
        state = self.__dict__
        if self._kernel().name == "full_matrix":
            return  # its layout is fixed (checked by _check_options)
        rule = self._weight_rule()
        if self._kernel().name == "multinomial":  # its layout is fixed too
            if rule != self._rule:
                # mirror descent continues from the old rule's weights of step t_
                if rule["update"] == "mirror_descent":
                    self.class_weights_ = self._class_weights().T[None].copy()
                    self.class_steps_ = np.full(self.class_weights_.shape[:2], self.t_,
                                                dtype=np.int64)
                else:
                    state.pop("class_weights_", None)
                    state.pop("class_steps_", None)
                self._rule = rule
            return
        if self._elementwise():
            if "accumulators_" not in state:
                coef = state.pop("coef_")
                self.accumulators_ = np.stack(
                    [state.pop("sum_gradient_"), np.sqrt(state.pop("sum_sq_gradient_"))],
                    axis=-1)
                if rule["update"] == "mirror_descent":
                    self._start_mirror_descent(coef)
            elif rule["update"] == "mirror_descent":
                # From another rule, or with other options: the weights of
                # step t_ under the old options (the idle steps so far were
                # taken under them; the multinomial state does the same
                # above).  Without a penalty the steps are not kept at all.
                if not self._has_md_state() or rule != self._rule:
                    self._start_mirror_descent(self._computed_coef())
                else:
                    self.accumulators_ = _on_cache_lines(self.accumulators_)
            elif self._has_md_state():
                self.accumulators_ = np.ascontiguousarray(self.accumulators_[..., :2])
            self._rule = rule  # this call's weights follow the current options
        elif "accumulators_" in state:
            coef = np.array(self._computed_coef())
            acc = state.pop("accumulators_")
            self.coef_ = coef
            self.sum_gradient_ = acc[..., 0].copy()
            self.sum_sq_gradient_ = acc[..., 1] * acc[..., 1]

    def _start_mirror_descent(self, coef):
        """Mirror descent's four-column entries from the sums of
        ``accumulators_`` and the weights of step t_ (a new array)."""
        acc = self.accumulators_
        self.accumulators_ = mirror_descent_entries(acc[..., 0], acc[..., 1], coef, self.t_)

    def _init_state(self, n_problems, n_features):
        for name in ("accumulators_", "class_accumulators_",
                     "class_weights_", "class_steps_", "class_coef_", "class_intercept_",
                     "coef_", "sum_gradient_", "sum_sq_gradient_", "sum_outer_gradient_"):
            self.__dict__.pop(name, None)  # a fresh fit may change the layout
        if self._elementwise():
            width = 4 if self._update() == "mirror_descent" else 2
            self.accumulators_ = (entries_on_cache_lines if width == 4 else np.zeros)(
                (n_problems, n_features, width))
            self._rule = self._weight_rule()
            self.intercept_sum_gradient_ = np.zeros(n_problems)
            self.intercept_sum_sq_gradient_ = np.zeros(n_problems)
            self.intercept_ = np.zeros(n_problems)
            return
        if self.multi_class == "multinomial":
            n_classes = len(self.classes_)  # one weight vector per class
            self.class_accumulators_ = np.zeros((1, n_features, n_classes, 2))
            if self._update() == "mirror_descent":
                self.class_weights_ = np.zeros((1, n_features, n_classes))
                self.class_steps_ = np.zeros((1, n_features), dtype=np.int64)
            self._rule = self._weight_rule()
            self.class_intercept_ = np.zeros(n_classes)
            self.intercept_sum_gradient_ = np.zeros(n_classes)
            self.intercept_sum_sq_gradient_ = np.zeros(n_classes)
            self._publish_class_intercepts()
            return
        self.sum_gradient_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_sum_gradient_ = np.zeros(n_problems, dtype=np.float64)
        if self.matrix == "full":
            n_dims = n_features + self.fit_intercept
            self.sum_outer_gradient_ = np.zeros(
                (n_problems, n_dims, n_dims), dtype=np.float64
            )
        else:
            self.sum_sq_gradient_ = np.zeros((n_problems, n_features), dtype=np.float64)
            self.intercept_sum_sq_gradient_ = np.zeros(n_problems, dtype=np.float64)
        self.coef_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_ = np.zeros(n_problems, dtype=np.float64)

    def _publish_class_intercepts(self):
        """``intercept_`` from the per-class intercepts: the same array for
        more than two classes; for two, the difference of class 1 and class
        0 (the softmax and the multi-class hinge only see differences of
        scores).  ``coef_`` is computed from ``class_coef_`` the same way
        (``_coef_of_classes``)."""
        if len(self.classes_) > 2:
            self.intercept_ = self.class_intercept_
        else:
            self.intercept_ = self.class_intercept_[1:] - self.class_intercept_[:1]

    def _coef_of_classes(self, class_coef):
        return class_coef if class_coef.shape[0] > 2 else class_coef[1:] - class_coef[:1]

    def _run_epoch(self, k, rows, y, sample_weight, order):
        kernel = self._kernel()
        if kernel.name in ("multinomial", "elementwise"):
            # made once per call, on views of the state that its passes
            # update in place: the multinomial Problem (with FTRL-Proximal or
            # a mixed norm) has a scratch array of weights as large as the
            # state, whose pages each pass would otherwise map again, and a
            # binary Problem cost as much to build as its pass over a small
            # table (glass: 3.7 against 9 us).  A pass advances its t, which
            # every problem's t_ then follows.
            problem = self._call_problem(kernel, k)
            problem.t = self.t_
        else:
            problem = kernel.problem(self, k)
        result = kernel.run_epoch(problem, *rows, y, sample_weight, order)
        self._read_pass(kernel, k, problem)
        return result

    def _run_problem_epochs(self, rows, targets, sample_weight, order, pool):
        kernel = self._kernel()
        if pool is not None or len(targets) == 1 or kernel.name != "elementwise":
            return super()._run_problem_epochs(rows, targets, sample_weight, order, pool)
        # the binary problems of a one-vs-rest fit in one thread: their
        # passes in one compiled call, on the call's Problems and the
        # targets stacked at its first pass
        problems = [self._call_problem(kernel, k) for k in range(len(targets))]
        stacked = self._workspace("stacked targets", lambda: np.stack(targets))
        results = run_problem_epochs(problems, *rows, stacked, sample_weight, order, self.t_)
        for k, problem in enumerate(problems):
            self._read_pass(kernel, k, problem)
        return results

    def _call_problem(self, kernel, k):
        """Problem k of the multinomial or element-wise kernel, made at the
        call's first pass and kept for the others (see _run_epoch)."""
        return self._workspace((kernel.name, k), lambda: kernel.problem(self, k))

    def _read_pass(self, kernel, k, problem):
        """After problem k's pass: its scalars into the fitted arrays, and
        the element-wise kernel's finding of a non-finite entry."""
        kernel.read_back(self, k, problem)
        if kernel.name == "elementwise":
            # the pass tested every entry it wrote (see _kernel_checked_arrays)
            if problem.wrote_nonfinite_sums:
                self._kernel_nonfinite = "accumulators_"
            elif problem.wrote_nonfinite_weights:
                self._kernel_nonfinite = "md_weights_"

    def _kernel_checked_arrays(self):
        # the element-wise kernel tests each value as it writes it: the
        # listing of X's columns and a read of them after each pass were a
        # quarter of a default fit on hashed SMS spam (12.0 -> 8.7 ms), and a
        # read of the whole state, by the main thread, a tenth of the pass
        # of 20 problems on 20 newsgroups
        return ("accumulators_",) if "accumulators_" in self.__dict__ else ()
