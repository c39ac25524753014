"""PairwiseAUCClassifier: online AUC maximisation (AOGD / OGD for pairwise learning)."""
import contextlib
import warnings
import weakref
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from ._base import BaseOnlineLinearClassifier
from ._dataset import row_moments, sorted_distinct, sorted_union, touched_columns
from ._loss import make_pair_loss
from ._pairwise_auc_fast import PairwiseAUCProblem, PairwiseWorkspace, run_epoch, score_threshold
from ._short_calls import PairwiseAUCPath, short_partial_fit, short_scores

# eta="auto" is c / s**p, s the row scale and p the power that makes the
# model equivariant to the scale of X (see _auto_eta): the move of w is eta
# times AOGD's m / sqrt(v) (scale-free), OGD's g / sqrt(k) (scales as X) or
# the strongly convex m / v (as 1 / X), and the weights must scale as 1 / X.
AUTO_ETA_POWER = {"aogd": 1, "ogd": 2, "aogd_strongly_convex": 0}
# c, chosen on the binary sets of benchmarks/bench_defaults.py (3 seeds,
# doc/pairwise_auc.md has the table).  With the paper's scalar accumulator
# (and OGD) the test ROC AUC of the tables is flat up to c = 4 and falls at
# 8, while on unit-norm text the epochs halve with each doubling up to 4 at
# nearly the same AUC; c = 4 is the former default eta = 1 on standardised
# tables (row scales 3-6).  A per-coordinate step moves every coordinate of
# a row by about eta, not the row as a whole: c = 0.5 ranks best of 0.5, 1,
# 2, 4 on every set tried (ionosphere, heart, a9a, w8a, SMS tf-idf).
AUTO_ETA_SCALE = {"norm": 4.0, "coordinate": 0.5}

# The clean workspace of the last call of the general path, for the next
# such call of that width (of any estimator): a fresh one maps its pages
# again (on 2**24 columns, half of a one-row partial_fit when short calls
# took it too; they keep their own now).  One at a time, so the memory kept
# is at most that of one workspace (17 bytes per column).
_SPARE_WORKSPACE = {}


# The sorted columns of non-zero momentum of a fitted state, as the pass
# that made it found them: estimator -> (_state_version, columns).  Outside
# the estimator: not fitted state (a pickle or a copy starts without it,
# and reads momentum_ once instead), and keyed by the state's name, so
# that it is never taken for another state.
_MOMENTUM_SUPPORT = weakref.WeakKeyDictionary()


def _take_workspace(n_features):
    spare = _SPARE_WORKSPACE.pop(n_features, None)
    return spare if spare is not None else PairwiseWorkspace(n_features)


def _keep_spare(workspace):
    """Keep a call's workspace as the spare of its width, if it was handed
    back clean."""
    if workspace is not None and not workspace.in_use:
        _SPARE_WORKSPACE.clear()
        _SPARE_WORKSPACE[workspace.n_features] = workspace


class PairwiseAUCClassifier(BaseOnlineLinearClassifier):
    r"""Binary linear ranker trained online to maximise the ROC AUC.

    Minimises, one pair of consecutive samples at a time, the pairwise AUC
    risk of Sun et al. (2023) (after Yang et al. 2021):

    .. math::
        F(w; (a, y), (a', y')) = \ell(w^\top(a - a'))\,[y = 1, y' = -1]
        + \ell(w^\top(a' - a))\,[y = -1, y' = 1]

    over the ball :math:`\|w\|_2 \le R` (``radius``; no constraint when None).
    Step ``k`` pairs sample ``k`` with sample ``k - 1`` of the (per epoch
    shuffled) stream, so the loss is active only when the two labels differ;
    the last sample of one ``fit`` epoch or ``partial_fit`` call pairs with
    the first one of the next.  With ``g_k`` the gradient of the pair loss:

    * ``algorithm="aogd"`` (Sun et al. 2023, Algorithm 2):
      ``m_k = theta m_{k-1} + (1 - theta) g_k``, ``v_k = v_{k-1} + ||g_k||^2``,
      ``w_{k+1} = Proj(w_k - eta m_k / sqrt(v_k))`` (no move while v_k = 0).
    * ``algorithm="aogd_strongly_convex"``: the paper's step 4' for strongly
      convex losses, ``w_{k+1} = Proj(w_k - eta m_k / v_k)``.
    * ``algorithm="ogd"`` (Yang et al. 2021; Algorithm 1 of Sun et al.):
      ``w_{k+1} = Proj(w_k - eta g_k / sqrt(k))``; ``theta`` and
      ``adaptive`` are ignored.
    * ``adaptive="coordinate"`` replaces the scalar ``v_k`` by one
      accumulator per coordinate (AdaGrad-style): ``v_{k,i} = sum g_{k,i}^2``,
      step ``eta m_{k,i} / sqrt(v_{k,i})``.  The projection stays Euclidean.

    Every sample is a step, including pairs with equal labels (with
    ``theta > 0`` the momentum still moves ``w``).  A step costs O(nnz of
    the two rows) plus about ten scalar updates, and a step without a
    gradient (equal labels, or a flat loss) O(nnz of its row): the momentum
    of idle coordinates and the projection are applied lazily and exactly
    (see ``_pairwise_auc_fast``), never at O(n_features) per step.

    Parameters
    ----------
    loss : {"hinge", "square", "log_loss", "logit_square"}, default="hinge"
        Surrogate ``l(t)`` of the margin difference ``t``: ``(1 - t)_+``,
        ``(1 - t)^2``, ``log(1 + exp(-t))`` or the non-convex
        ``(1 - sigmoid(t))^2`` of the paper's Table 3.  ``"hinge"`` and
        ``"log_loss"`` are the losses of the same names in scikit-learn.
        ``"square"`` and ``"logit_square"`` keep the paper's names: neither
        has a scikit-learn counterpart (``"squared_error"`` is
        ``(y - p)^2 / 2``, half of ``"square"``, which changes the steps of
        ``"ogd"`` and ``"aogd_strongly_convex"``; ``"squared_hinge"`` is
        ``(1 - t)_+^2``).

        .. deprecated:: 0.1
           ``loss="logistic"`` was renamed ``"log_loss"`` in 0.1 and will be
           removed in 0.3; it still fits the same model, with a
           FutureWarning.
    algorithm : {"aogd", "aogd_strongly_convex", "ogd"}, default="aogd"
    adaptive : {"norm", "coordinate"}, default="norm"
        The paper's scalar accumulator of squared gradient norms, or one per
        coordinate.  Ignored by ``"ogd"``.
    eta : float or "auto", default="auto"
        Step size.  ``"auto"``: ``c / s`` for ``"aogd"``, ``c / s**2`` for
        ``"ogd"`` and ``c`` for ``"aogd_strongly_convex"``, with ``c = 4``
        (``0.5`` with ``adaptive="coordinate"``), where ``s`` is the root mean
        square of the row norms ``||x_i||`` of the rows of non-zero weight of
        the first call that has one; then fixed (see Notes).  The
        value in use is ``eta_``.

        .. versionchanged:: 0.1
           The default changed from 1.0 to ``"auto"`` (the same step on
           standardised tables, a larger one on unit-norm text rows).
    theta : float in [0, 0.999], default=0.0
        Momentum (the paper uses 0.9).  The lazy momentum keeps a window of
        about ``40 / (1 - theta)`` steps of scalars, hence the upper bound.
        Without it (``theta=0``, and no ``radius`` or ``average``) a step
        without a gradient moves nothing, and a pass reads and writes only
        the weights and accumulators of its rows.

        .. versionchanged:: 0.1
           The default changed from 0.9 to 0.0: the same test ROC AUC on
           the binary sets of ``benchmarks/bench_defaults.py`` (0.08 point
           lower at most, higher on six of eleven), in a half to a third of
           the time on text (see the user guide).
    radius : float or None, default=None
        Radius R of the l2 ball the weights are projected onto; None: no
        projection.
    average : bool, default=False
        Iterate averaging (as in the OGD reference code of Yang et al.):
        ``coef_`` is the mean of the iterates after every step since the
        start of the last fresh ``fit``, ``(1/T) sum_k w_{k+1}``, and the
        threshold is learnt from the prequential scores of that averaged
        model.  The iterates themselves are unchanged (``iterate_``).  Exact
        and O(nnz) per step like the rest (a segment tree over the steps of
        a call, see ``_pairwise_auc_fast``; 80 bytes per row of the call);
        switched on in the middle of a stream, the mean starts there.
    fit_intercept : bool, default=True
        Learn the decision threshold (see Notes).  The pairwise loss does not
        depend on the intercept; with False, ``intercept_`` stays 0.
    max_iter : int, default=1000
        Maximum number of passes over the data in ``fit``.
    tol : float or None, default=1e-3
        ``fit`` stops at the first epoch at which the mean progressive pair
        loss of the last ``n_iter_no_change`` epochs is not below the best
        such mean so far minus ``tol``.  (The loss of one epoch is a mean
        over its few pairs of different labels, too noisy to compare epoch
        by epoch: on w8a, 3% positive, it moves by 10-15% from one epoch to
        the next, and such a test stopped after 15 to 33 epochs, where the
        test AUC was flat from about 8.)  None: run ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        Number of epochs whose mean loss the stopping test compares (see
        ``tol``); ``fit`` runs at least one more.
    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit`` (the pairs are then
        consecutive samples of the shuffled stream).  ``partial_fit`` keeps
        the order given.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling; pass an int for reproducible fits.
    warm_start : bool, default=False
        If True, ``fit`` continues from the fitted state (weights, momentum,
        accumulators, the last sample of the stream) instead of starting
        afresh.
    class_weight : dict, "balanced" or None, default=None
        Multiplies the sample weight of each row by the weight of its class.
    n_jobs : "deprecated"
        Unused: the learner solves one binary problem, so there is nothing to
        run in parallel (the other classifiers' ``n_jobs`` runs their
        one-vs-rest problems; a single problem's rows are sharded by
        :class:`~sklearn_adaprox.distributed.ThreadShardedTrainer`).

        .. deprecated:: 0.1
           ``n_jobs`` has no effect and will be removed in 0.3; setting it
           gives a FutureWarning.
    verbose : int, default=0
        Print one line per epoch / ``partial_fit`` call.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
        The weights of ``decision_function``: ``iterate_``, or with
        ``average=True`` the mean iterate ``coef_sum_ / averaged_steps_``.
    intercept_ : ndarray of shape (1,)
        The learned threshold (see Notes).
    iterate_ : ndarray of shape (1, n_features)
        The current iterate ``w_{t+1}``, where the next step starts.
    coef_sum_ : ndarray of shape (1, n_features)
        Sum of the iterates after each step taken with ``average=True``.
    averaged_steps_ : int
        Number of those steps.
    classes_ : ndarray of shape (2,)
    momentum_ : ndarray of shape (1, n_features)
        ``m_k``.
    sum_sq_gradient_ : ndarray of shape (1, n_features)
        Per-coordinate sums of squared gradients.
    total_sq_gradient_ : ndarray of shape (1,)
        The paper's ``v_k``: sum of squared gradient norms.
    last_sample_indices_, last_sample_values_ : ndarray
        The last sample seen (sparse form), the partner of the next one.
    last_sample_label_ : float
        Its label (+1 for ``classes_[1]``, -1 for ``classes_[0]``).
    last_sample_weight_ : float
        Its weight; 0 when no sample has been seen.
    progressive_auc_ : float
        Prequential AUC estimate over the stream since the last fresh
        ``fit``: the weighted fraction of the opposite-label pairs that the
        model ranked correctly just before learning from them (ties count
        1/2).  NaN before the first such pair.
    pair_weight_, ordered_pair_weight_ : float
        Its denominator and numerator.
    score_stats_ : ndarray of shape (2, 3)
        Per class (row 0: negative, 1: positive): weighted sums of 1, score
        and score^2 of the prequential scores (weights: sample weight times
        step index); they give the threshold.
    t_ : int
        Steps taken (samples of non-zero weight), over epochs and calls.
    eta_ : ndarray of shape (1,)
        The step size in use: ``eta``, or the value ``eta="auto"`` resolved
        from the data of the first call with a non-zero weight (NaN before
        it).
    n_iter_ : int
    loss_curve_ : list of float
        Per epoch of the last ``fit`` (or per ``partial_fit`` call): the mean
        surrogate loss of the opposite-label pairs, each measured just
        before its step (NaN if the pass had none).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    AdaGradClassifier : Per-sample losses with AdaGrad steps; ranks well on
        balanced data.
    sklearn.linear_model.SGDClassifier : Plain SGD on per-sample losses.
    sklearn.metrics.roc_auc_score : The metric this model maximises.

    Notes
    -----
    **Scores, threshold and ``score``.** ``decision_function`` is the
    ranking score ``<w, x> + b``; use it (``scoring="roc_auc"``) to judge the
    model.  The pairwise loss leaves the threshold free, so ``predict``
    needs one: ``b = -tau`` where ``tau`` is the equal-covariance Gaussian
    (LDA) Bayes threshold of the prequential scores of the two classes,
    ``tau = (mu_+ + mu_-) / 2 + s^2 log(W_- / W_+) / (mu_+ - mu_-)`` (class
    means ``mu``, pooled variance ``s^2``, class weights ``W``; the midpoint
    if the classes are not ordered, moved three pooled standard deviations
    towards the minority class so that ``predict`` favours the weighted
    majority).  The statistics are accumulated online,
    each score weighted by its step index so that later iterates count more;
    they are chunk-invariant, so ``partial_fit`` over chunks learns the same
    threshold as one pass.  ``score`` is scikit-learn's accuracy of
    ``predict`` with this threshold, not the AUC.

    **The automatic step** ``eta="auto"`` makes the model equivariant to the
    scale of ``X``: with ``radius=None``, ``X`` times ``a`` gives ``coef_``
    divided by ``a`` and the same scores, the same ``predict``.  Each step
    moves ``w`` by ``eta`` times a vector that scales as ``X`` to the power
    ``p - 1`` (``p`` as in ``eta``: AOGD's ``m / sqrt(v)`` does not scale,
    OGD's ``g / sqrt(k)`` scales as ``X``, the strongly convex ``m / v`` as
    ``1 / X``), so for weights that scale as ``1 / X`` the step must scale
    as ``1 / s**p``.
    ``s`` is resolved by the first call with a non-zero weight (all of
    ``fit``'s data, or the first chunk of a stream) and then kept, so that
    ``partial_fit`` continues with the step it started with; a fresh ``fit``
    resolves it again.

    **Sample weights** weigh a pair by the product of its two sample weights
    (the pairwise analogue of the weighted risk; the weighted ROC AUC of
    scikit-learn counts pairs the same way).  Rows of weight 0 are skipped
    as if absent, also for the pairing.

    **Binary only.** More than two classes raise a ValueError.

    References
    ----------
    T. Sun, Q. Wang, Y. Lei, D. Li, B. Wang. Pairwise Learning with Adaptive
    Online Gradient Descent. TMLR, 2023.

    Z. Yang, Y. Lei, P. Wang, T. Yang, Y. Ying. Simple Stochastic and Online
    Gradient Descent Algorithms for Pairwise Learning. NeurIPS 2021.

    Examples
    --------
    >>> from sklearn.metrics import roc_auc_score
    >>> from sklearn_adaprox import PairwiseAUCClassifier
    >>> from sklearn_adaprox.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> clf = PairwiseAUCClassifier(max_iter=1, random_state=0)
    >>> clf = clf.fit(X_train, y_train)
    >>> roc_auc_score(y_test, clf.decision_function(X_test)) > 0.88
    True
    """

    _parameter_constraints: dict = {
        **BaseOnlineLinearClassifier._parameter_constraints,
        "loss": [
            StrOptions(
                {"hinge", "square", "log_loss", "logit_square", "logistic"},
                deprecated={"logistic"},
            )
        ],
        "algorithm": [StrOptions({"aogd", "aogd_strongly_convex", "ogd"})],
        "adaptive": [StrOptions({"norm", "coordinate"})],
        "eta": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "theta": [Interval(Real, 0, 0.999, closed="both")],
        "n_jobs": [Hidden(StrOptions({"deprecated"})), Integral, None],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
        "average": ["boolean"],
    }

    def __init__(
        self,
        loss="hinge",
        *,
        algorithm="aogd",
        adaptive="norm",
        eta="auto",
        theta=0.0,
        radius=None,
        average=False,
        fit_intercept=True,
        max_iter=1000,
        tol=1e-3,
        n_iter_no_change=5,
        shuffle=True,
        random_state=None,
        warm_start=False,
        class_weight=None,
        n_jobs="deprecated",
        verbose=0,
    ):
        self.loss = loss
        self.algorithm = algorithm
        self.adaptive = adaptive
        self.eta = eta
        self.theta = theta
        self.radius = radius
        self.average = average
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

    # ------------------------------------------------------------------
    def _validate_input(self, X, y, sample_weight, classes, partial):
        if self.loss == "logistic":
            warnings.warn(
                "The loss 'logistic' was deprecated in version 0.1 and will be "
                "removed in version 0.3. Use `loss='log_loss'`, which is "
                "equivalent.",
                FutureWarning,
            )
        if not (isinstance(self.n_jobs, str) and self.n_jobs == "deprecated"):
            warnings.warn(
                "n_jobs was deprecated in version 0.1 and will be removed in "
                "version 0.3: PairwiseAUCClassifier solves one binary problem, "
                "so it has no effect. Use ThreadShardedTrainer to train one "
                "problem on several threads.",
                FutureWarning,
            )
        out = super()._validate_input(X, y, sample_weight, classes, partial)
        all_classes = out[3]
        if all_classes.shape[0] > 2:
            raise ValueError(
                "Only binary classification is supported. The target has "
                f"{all_classes.shape[0]} classes; PairwiseAUCClassifier ranks "
                "one class against another (wrap it in OneVsRestClassifier "
                "for more classes)."
            )
        return out

    _stop_on_mean_loss = True  # see tol

    # A call on a few plain rows of a model whose weights move by their
    # momentum alone takes the short path of _short_calls (the same model,
    # bit for bit); any other goes through the general validation and
    # transaction.
    _short_path_type = PairwiseAUCPath

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if short_partial_fit(self, X, y, classes, sample_weight):
            return self
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    partial_fit.__doc__ = BaseOnlineLinearClassifier.partial_fit.__doc__

    def _scores(self, X):
        scores = short_scores(self, X)
        return super()._scores(X) if scores is None else scores

    # NaN until the first call with a non-zero weight resolves eta="auto"
    _nan_allowed_state = ("eta_",)
    # fitted values that the first call resolves from its data
    _resolved_params = ("eta_",)

    def _moves_by_momentum_only(self):
        """Without projection or averaging (and with ``coef_`` the iterate
        everywhere: averaging was never on since the last fresh ``fit``) a
        weight moves only while its momentum is non-zero, and momentum
        starts only in the coordinates of a step's two rows."""
        return (self.radius is None and not self.average
                and getattr(self, "averaged_steps_", 0) == 0)

    def _in_place_arrays(self):
        # in that case a call changes the per-feature arrays only in the
        # columns of _changeable_columns: their saved entries stand for the
        # copies of the arrays (on 2**20 columns the copies cost half of a
        # one-row partial_fit)
        if self._moves_by_momentum_only():
            return ("iterate_", "momentum_", "sum_sq_gradient_", "coef_sum_", "coef_")
        return ()

    def _changeable_columns(self, columns):
        """The rows' columns, those of the previous call's last row (the
        first step's partner) and those of non-zero momentum (which only
        the last J steps leave: ``finalize`` zeroes an older one).  The
        last are those the previous pass listed (``_MOMENTUM_SUPPORT``):
        O(nnz + J nnz), whatever the width.  A state without that list
        (loaded, copied, merged) is read once instead."""
        d = self.n_features_in_
        momentum, partner = self.momentum_, self.last_sample_indices_
        if not (self._in_place_arrays() and isinstance(momentum, np.ndarray)
                and momentum.shape == (1, d) and isinstance(partner, np.ndarray)
                and partner.dtype == np.int64 and partner.ndim == 1):
            return columns  # (a malformed state: the kernel refuses it unchanged)
        partner = partner[(partner >= 0) & (partner < d)]
        listed = self._listed_momentum_support()
        if listed is not None:
            return sorted_union(listed, sorted_distinct(np.concatenate([columns, partner])))
        # a mask, not a union of sorted lists: the momentum's columns are
        # most of a narrow model's, and flatnonzero of the floats themselves
        # is six times slower than of this comparison
        moving = momentum[0] != 0
        moving[columns] = True
        moving[partner] = True
        return np.flatnonzero(moving)

    def _lists_touched_columns(self):
        # the kernel checks its arrays itself, but its finalize reads only
        # the columns a call can move when it is given them (_moving_columns)
        return bool(self._in_place_arrays())

    def _moving_columns(self):
        """``moving`` for the kernel's finalize: the columns this call can
        change, when known (see ``_changeable_columns``), else None."""
        columns = self.__dict__.get("_touched_columns")
        if isinstance(columns, np.ndarray) and self._moves_by_momentum_only():
            return columns
        return None

    def _kernel_checked_arrays(self):
        # run_epoch reports a non-finite value in the first four by their
        # index here; coef_ is a copy of iterate_ or coef_sum_ divided by
        # a step count
        return ("iterate_", "momentum_", "sum_sq_gradient_", "coef_sum_", "coef_")

    def _init_state(self, n_problems, n_features):
        self.eta_ = np.full(1, np.nan)
        self.coef_ = np.zeros((1, n_features), dtype=np.float64)
        self.iterate_ = np.zeros((1, n_features), dtype=np.float64)
        self.coef_sum_ = np.zeros((1, n_features), dtype=np.float64)
        self.averaged_steps_ = 0
        self.intercept_ = np.zeros(1, dtype=np.float64)
        self.momentum_ = np.zeros((1, n_features), dtype=np.float64)
        self.sum_sq_gradient_ = np.zeros((1, n_features), dtype=np.float64)
        self.total_sq_gradient_ = np.zeros(1, dtype=np.float64)
        self.last_sample_indices_ = np.zeros(0, dtype=np.int64)
        self.last_sample_values_ = np.zeros(0, dtype=np.float64)
        self.last_sample_label_ = 0.0
        self.last_sample_weight_ = 0.0
        self.score_stats_ = np.zeros((2, 3), dtype=np.float64)
        self.pair_weight_ = 0.0
        self.ordered_pair_weight_ = 0.0
        self.progressive_auc_ = np.nan

    def _auto_eta(self, rows, y, sample_weight):
        """``eta="auto"``: ``c / s**p`` (see ``eta``), ``s`` the
        root mean square of the norms of the rows of non-zero weight (no
        intercept term: the pair loss reads differences of rows).  The
        weights only select the rows: a class weight multiplies every
        opposite-label pair by the same constant, which AOGD's scale-free
        step ignores, and must leave the step so.  O(nnz), no copy of X."""
        selected = (sample_weight != 0).astype(np.float64)
        sum_sq_norm, _, sum_weight, _ = row_moments(*rows, False, y, selected)
        row_scale = np.sqrt(sum_sq_norm / sum_weight)
        c = AUTO_ETA_SCALE["norm" if self.algorithm == "ogd" else self.adaptive]
        if not row_scale > 0:
            return c  # only zero rows: no step moves w
        return float(c / row_scale ** AUTO_ETA_POWER[self.algorithm])

    def _run_epoch(self, k, rows, y, sample_weight, order):
        if not isinstance(self.eta, str):
            self.eta_[0] = float(self.eta)
        elif np.isnan(self.eta_[0]) and np.any(sample_weight):
            self.eta_[0] = self._auto_eta(rows, y, sample_weight)
        X_data, X_indices, X_indptr, is_dense, n_features = rows
        if is_dense:
            max_row_nnz = n_features
        else:
            max_row_nnz = int(np.diff(X_indptr).max()) if X_indptr.shape[0] > 1 else 0
        problem = self._pass_problem(
            order.shape[0], max_row_nnz, self.score_stats_, self._moving_columns(),
            self._workspace(k, lambda: _take_workspace(n_features)))
        sum_loss, sum_weight, last, nonfinite, support = run_epoch(
            problem, *rows, y, sample_weight, order)
        if nonfinite >= 0:
            self._kernel_nonfinite = self._kernel_checked_arrays()[nonfinite]
        if support is not None:
            self._momentum_support = support  # for _MOMENTUM_SUPPORT
        self.__dict__.update(self._pass_results(problem, last, self.score_stats_))
        if self.verbose:  # the epoch's line counts coef_'s non-zeros
            self._update_coef()
        return sum_loss, sum_weight

    def _pass_problem(self, n_rows, max_row_nnz, score_stats, moving, workspace):
        """The kernel's problem for a pass over ``n_rows`` rows of at most
        ``max_row_nnz`` entries from the fitted state (its arrays updated in
        place, the score statistics in ``score_stats``), with ``eta_``
        resolved (or NaN: no step reads it while every weight is 0) and
        ``moving`` as ``_moving_columns``."""
        eta = self.eta_[0]
        return PairwiseAUCProblem(
            loss=make_pair_loss(self._loss_name()),
            algorithm=self.algorithm,
            adaptive=self.adaptive,
            eta=1.0 if np.isnan(eta) else float(eta),
            theta=float(self.theta),
            radius=self.radius,
            coef=self.iterate_[0],
            momentum=self.momentum_[0],
            sum_sq_gradient=self.sum_sq_gradient_[0],
            total_sq_gradient=float(self.total_sq_gradient_[0]),
            t=int(self.t_),
            score_stats=score_stats,
            pair_weight=float(self.pair_weight_),
            ordered_weight=float(self.ordered_pair_weight_),
            partner_indices=self.last_sample_indices_,
            partner_values=self.last_sample_values_,
            partner_label=float(self.last_sample_label_),
            partner_weight=float(self.last_sample_weight_),
            n_rows=n_rows,
            max_row_nnz=max_row_nnz,
            workspace=workspace,
            coef_sum=self.coef_sum_[0] if self.average else None,
            n_averaged=int(self.averaged_steps_),
            moving=moving,
        )

    def _short_problem(self):
        """The problem a short path keeps (``_short_calls.PairwiseAUCPath``),
        on a workspace of its own: built on the fitted values, which its
        ``learn_rows`` calls reset it to."""
        problem = self._pass_problem(0, 0, np.zeros((2, 3)), np.zeros(0, dtype=np.int64),
                                     _take_workspace(self.n_features_in_))
        problem.keep_coef_out(self.coef_[0])
        return problem

    def _pass_results(self, problem, last, score_stats):
        """The fitted values a pass of ``problem`` changed other than its
        arrays (``last``: the last row it used, or None; ``score_stats``:
        its score statistics), as ``{name: value}``, new arrays included."""
        pair_weight = float(problem.pair_weight)
        ordered_weight = float(problem.ordered_weight)
        results = {
            "total_sq_gradient_": np.array([problem.total_sq_gradient]),
            "averaged_steps_": int(problem.n_averaged),
            "pair_weight_": pair_weight,
            "ordered_pair_weight_": ordered_weight,
            "progressive_auc_": ordered_weight / pair_weight if pair_weight > 0 else np.nan,
            "intercept_": np.array([-self._threshold(score_stats)
                                    if self.fit_intercept else 0.0]),
        }
        if last is not None:
            results.update(last_sample_indices_=last[0], last_sample_values_=last[1],
                           last_sample_label_=float(problem.partner_label),
                           last_sample_weight_=float(problem.partner_weight))
        return results

    @contextlib.contextmanager
    def _call_workspaces(self):
        with super()._call_workspaces():
            try:
                yield
            finally:
                _keep_spare(self.__dict__.get("_workspaces", {}).get(0))

    # the state's arrays of one entry per feature
    _feature_arrays = ("coef_", "iterate_", "coef_sum_", "momentum_", "sum_sq_gradient_")

    def _train(self, X, targets, sample_weight, partial, first_call):
        columns = self._compact_columns(X, first_call)
        if columns is None:
            return super()._train(X, targets, sample_weight, partial, first_call)
        # A fresh state moves only in X's columns: the passes run on X with
        # those numbered 0 .. C-1 and on a state of C columns, whose entries
        # then go to the full arrays (zero elsewhere).  The numbering keeps
        # the columns' order, so the passes make the same operations in the
        # same order: the same bits.  Hashed text uses a small part of its
        # width, and the compact state stays in the caches: a default fit on
        # hashed SMS spam (40,071 of 2**20 columns) 41 -> 24 ms.
        full = {name: self.__dict__[name] for name in self._feature_arrays}
        for name in self._feature_arrays:
            self.__dict__[name] = np.zeros((1, columns.shape[0]))
        self.__dict__.pop("_touched_columns", None)  # the full width's
        position = np.empty(X.shape[1], dtype=X.indices.dtype)
        position[columns] = np.arange(columns.shape[0], dtype=X.indices.dtype)
        compact = sp.csr_matrix((X.data, position[X.indices], X.indptr),
                                shape=(X.shape[0], columns.shape[0]))
        super()._train(compact, targets, sample_weight, partial, first_call)
        for name, array in full.items():
            values = self.__dict__[name][0]
            # an array the passes left zero (coef_sum_ without averaging,
            # sum_sq_gradient_ with the scalar accumulator) stays as it was
            # made, its pages unmapped: writing zeros into them cost page
            # faults (a one-epoch fit on hashed SMS spam, medians of 15 fits
            # in four alternations, 16.2 -> 15.3 ms; a default fit 50.2 ->
            # 47.4 ms).  Bits, not values: -0.0 is written.
            if values.view(np.uint64).any():
                array[0, columns] = values
        self.__dict__.update(full)
        self.last_sample_indices_ = columns[self.last_sample_indices_]
        listed = _MOMENTUM_SUPPORT.get(self)
        if listed is not None:
            _MOMENTUM_SUPPORT[self] = (listed[0], columns[listed[1]])
        return self

    def _compact_columns(self, X, first_call):
        """X's columns (sorted) when the call's passes can run on them alone
        (``_train``): a fresh state, sparse X using at most half the width
        (and verbose off: its lines count coef_'s entries); else None."""
        if not first_call or not sp.issparse(X) or self.verbose:
            return None
        columns = self.__dict__.get("_touched_columns")
        if isinstance(columns, slice):  # _start_state found more than half
            return None
        if columns is None:
            columns = touched_columns(X.indices, X.shape[1])
        return columns if 0 < 2 * columns.shape[0] <= X.shape[1] else None

    def _after_call(self):
        # coef_ once per call, not per epoch: no pass reads it, and on
        # 2**20 columns the copy cost an eighth of an epoch
        self._update_coef()
        self._list_momentum_support(self.__dict__.pop("_momentum_support", None))

    def _list_momentum_support(self, support):
        """Keep the columns of non-zero momentum that a pass listed (None:
        it took no step), for the next call on this state."""
        if support is not None:
            _MOMENTUM_SUPPORT[self] = (self._state_version, support)

    def _update_coef(self):
        self._write_coef(self._moving_columns())

    def _write_coef(self, columns):
        """coef_ from the state: the averaged iterates, or the last one
        (in ``columns``, the columns the call could change, when they are
        known: else None)."""
        if columns is not None:  # rows of 1-D views: a third quicker than [0, columns]
            self.coef_[0][columns] = self.iterate_[0][columns]
        elif self.average and self.averaged_steps_ > 0:
            self.coef_[0] = self.coef_sum_[0] / self.averaged_steps_
        else:
            self.coef_[0] = self.iterate_[0]

    def _loss_name(self):
        """``loss`` under its current name (the deprecated "logistic" is
        "log_loss")."""
        return "log_loss" if self.loss == "logistic" else self.loss

    def _threshold(self, score_stats=None):
        """LDA threshold of the prequential score statistics (see Notes):
        ``score_stats``, or by default the fitted ``score_stats_``.  The
        kernel's, which a short call computes too: the same bits."""
        if score_stats is None:
            score_stats = self.score_stats_
        return score_threshold(np.ascontiguousarray(score_stats, dtype=np.float64))

    def _listed_momentum_support(self):
        """The columns of non-zero momentum the last pass on this state
        listed (``_MOMENTUM_SUPPORT``), or None."""
        listed = _MOMENTUM_SUPPORT.get(self)
        if listed is not None and listed[0] == self.__dict__.get("_state_version"):
            return listed[1]
        return None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
