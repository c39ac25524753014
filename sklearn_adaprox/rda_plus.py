"""RDAPlusClassifier: l1-logistic regression by RDA+ (Lee & Wright 2012).

Dual averaging (the Cython kernel ``_rda_fast``) identifies the sparse
support; a local phase of reduced Newton / reduced gradient steps on that
support (vectorised NumPy/SciPy batch work, no per-sample loop; compiled in
``_rda_fast`` for a narrow dense X) then solves the batch l1-logistic
problem (``_l1_logistic``) to a tight optimality.
"""
import contextlib
import time
import warnings
import weakref
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import (BaseOnlineLinearClassifier, lent_random_state, map_problems,
                    new_state_version, pass_order, physical_memory, problem_threads,
                    row_scales)
from ._dataset import as_row_arrays, check_sparse_structure, sorted_union, touched_columns
from ._l1_logistic import (DesignCache, Surrogate, local_phase, narrowed,
                           single_threaded_blas, violation_scale)
from ._loss import Log
from ._rda_fast import NEVER, RDAProblem, iterate, run_epoch, safeguarded_support
from ._short_calls import stored_scores

# alpha="auto" is AUTO_ALPHA_RATIO * alpha_max (glmnet's default end of the
# regularisation path for wide data), AUTO_ALPHA_FALLBACK when alpha_max is 0
# (no feature correlates with the labels).
AUTO_ALPHA_RATIO = 0.01
AUTO_ALPHA_FALLBACK = 1e-3

# gamma="auto" is the mean square v of the non-zero values of the rows.  The
# iterate (sqrt(t) / (2 gamma)) soft(-u / t, alpha) scales as X / gamma (u
# and alpha_max scale as X) where the model must scale as 1 / X: gamma
# proportional to v keeps the dual-averaging path the same when X is
# rescaled.  The local phase then solves the same problem whatever gamma,
# so gamma decides only how soon the support is identified.  v is 1 on
# standardised and on binary features, where the former default gamma = 1
# was chosen (it stays 1 there), and about 1 / (non-zeros per row) on
# unit-norm text rows, where gamma = v switched after 2 epochs, not 6 (SMS
# spam, hashed and tf-idf; see doc/rda_plus.md).  The mean squared norm of
# the rows would not do: on standardised tables it grows with the number of
# columns, and at 13 (0.05 times arrhythmia's 262) fit took 34 epochs
# against 4.

# The kernel problems a partial_fit call leaves, for the next call on the
# same state: estimator -> (_state_version, problems, the sorted columns of
# coef_'s non-zeros when coef_ is their iterate, else None).  A problem's
# sign pattern and heap are exactly a rebuild's from the sums (a pass keeps
# them so), and a rebuild scans every column: on 2**20 columns it was most
# of a one-row call.  Kept outside the estimator (not fitted state: a
# pickle or a copy rebuilds them once), and taken off at the start of a
# call, so that a call that fails leaves none behind.  A problem holds 25
# bytes a column (its signs, and the heap's entries, positions and keys);
# they are kept while they take at most a sixteenth of the machine's memory
# (1 GiB where it is not known): a binary model of 2**24 columns keeps
# 420 MB, where a one-vs-rest model of 20 classes on 2**24 columns would
# keep 8.4 GB, and rebuilds them per call instead.
_STREAM_PROBLEMS = weakref.WeakKeyDictionary()
PROBLEM_BYTES_PER_FEATURE = 25


class _Records:
    """The per-problem records of a call (``optimality_history_``,
    ``violation_history_``, ``support_size_history_``), continued from the
    fitted ones and stored back at the end, if the call added any: a call
    that adds none (``partial_fit`` without the local phase) does not copy
    the histories, so that a stream of calls does not grow quadratic."""

    def __init__(self, est, k):
        self.est, self.k = est, k
        self.new = ([], [], [])

    def _histories(self):
        est = self.est
        return (est.optimality_history_, est.violation_history_, est.support_size_history_)

    def add(self, t, elapsed, delta, violation, nnz):
        for rows, value in zip(self.new, (delta, violation, nnz)):
            rows.append((t, elapsed, value))

    def close(self, t, elapsed, delta, violation, nnz):
        """Record the returned model unless it is the last record."""
        if self.new[0]:
            last_delta, last_nnz = self.new[0][-1][2], self.new[2][-1][2]
        else:
            optimality, _, sizes = (h[self.k] for h in self._histories())
            if optimality.shape[0] == 0:
                self.add(t, elapsed, delta, violation, nnz)
                return
            last_delta, last_nnz = optimality[-1, 2], sizes[-1, 2]
        if last_delta != delta or last_nnz != nnz:
            self.add(t, elapsed, delta, violation, nnz)

    def store(self):
        if not self.new[0]:
            return
        for h, rows in zip(self._histories(), self.new):
            h[self.k] = np.concatenate(
                [np.asarray(h[self.k], dtype=np.float64).reshape(-1, 3),
                 np.asarray(rows, dtype=np.float64).reshape(-1, 3)])


class RDAPlusClassifier(BaseOnlineLinearClassifier):
    r"""L1-regularised logistic regression by RDA+ (Lee & Wright, 2012).

    Minimises the l1-regularised logistic loss (intercept not penalised)

    .. math::
        \frac{1}{N}\sum_{j} s_j \log\big(1 + e^{-y_j(\langle w, x_j\rangle + b)}\big)
        + \alpha \|w\|_1

    (``s_j`` the sample weights, ``N`` the number of rows of non-zero weight)
    by the two phases of RDA+ (Algorithm 2 of the paper):

    1. **Dual averaging.**  Xiao's regularised dual averaging with
       ``h(w) = ||w||^2`` and ``beta_t = gamma sqrt(t)``: with ``u`` the sum of
       the ``t`` gradients seen so far, the iterate is
       ``w_i = (sqrt(t) / (2 gamma)) soft(-u_i / t, alpha)``.  One step costs
       O(nnz of the row) (a Cython kernel); the sign pattern of the iterate
       is tracked exactly, also for coordinates that leave the support
       untouched as ``alpha t`` overtakes ``|u_i|`` (a heap of their exit
       steps: O(nnz log d) per step, never O(d)).
    2. **Switch.**  When ``tau`` consecutive iterates share one sign pattern
       (and, in ``fit``, every sample was seen at least once), that support
       ``M`` is taken as near-optimal and safeguarded: every ``i`` with
       ``w_i = 0`` and ``|u_i / t| > rho * alpha`` joins ``M``.
    3. **Local phase.**  The batch problem is solved from the support ``M``
       by reduced Newton steps (conjugate gradients beyond
       ``max_newton_support`` free coordinates) with a line search that sets
       to zero any coordinate whose sign would flip.  It stops when the
       stopping measure ``violation <= tol``.  Safeguards of this
       implementation (documented in doc/rda_plus.md): when the problem
       restricted to ``M`` is nearly solved but coordinates outside ``M``
       violate optimality, they join ``M`` (largest violations first) and
       the phase goes on; when dual averaging stalls (an epoch ends without
       a switch and without a better violation), the local phase starts
       anyway.  If it still stalls, dual averaging resumes.

    Optimality measures, from the minimum-norm subgradient residual
    ``r_i = g_i + alpha sign(w_i)`` if ``w_i != 0``,
    ``r_i = sign(g_i) max(|g_i| - alpha, 0)`` if ``w_i = 0``, ``r_b = g_b``
    (``g`` the gradient of the average loss):

    * ``violation = max(|r_i|, |r_b|) / alpha`` (the stopping measure): the
      largest violation of an optimality condition relative to the penalty;
      empty columns leave it unchanged;
    * ``delta = ||r|| / sqrt(n)`` (the paper's eq. 52, ``n = n_features + 1``),
      reported only: it shrinks with the number of columns (on 2**20 hashed
      columns any model looks optimal).  ``violation <= tol`` implies
      ``delta <= tol * alpha``.

    **scikit-learn equivalent.**  The objective is that of
    ``LogisticRegression(penalty="l1", C=1 / (N * alpha))`` (scikit-learn >=
    1.8 also: ``l1_ratio=1``) up to the factor ``N alpha``, except that
    scikit-learn's ``liblinear`` solver penalises the intercept (as a
    feature of value ``intercept_scaling``); with a large
    ``intercept_scaling`` that penalty vanishes.  ``alpha_max`` (above which
    ``w = 0``) is ``max_i |g_i(0, b*)|`` at the best intercept-only model.

    Parameters
    ----------
    alpha : float or "auto", default="auto"
        Strength of the l1 penalty (``lambda`` of the paper).  "auto" (the
        default): 1% of ``alpha_max``, the smallest penalty whose solution
        is ``w = 0``, computed per binary problem from the first call with a
        non-zero weight (``fit``'s data, or the first chunk of
        ``partial_fit``) and then fixed.  ``alpha_max`` has the units of the
        data (about 0.1 on standardised tables, 0.003 to 0.01 on hashed or
        tf-idf text), so a fixed number that suits one is far too strong
        (a model of the majority class) or too weak on the other.  The value
        in use is ``alpha_``.
    gamma : float or "auto", default="auto"
        Dual-averaging step parameter: ``beta_t = gamma sqrt(t)``.  Larger is
        more conservative.  "auto" (the default): the mean square of the
        non-zero values of the rows (weighted by the sample weights) of the
        first call with a non-zero weight, then fixed.  The iterate scales
        as ``X / gamma``, so this ``gamma`` makes the dual averaging follow
        the same path when X is multiplied by a constant (without an
        intercept, whose constant feature is not rescaled): it is 1 on
        standardised or binary features (the former default) and about
        ``1 / nnz`` on unit-norm text rows of ``nnz`` non-zeros (the paper's
        5000 was for raw MNIST pixels).  The local phase solves the same
        problem whatever ``gamma``: it decides how soon the support is
        identified, not the model ``fit`` returns.  The value in use is
        ``gamma_``.

        .. versionchanged:: 0.1
           The default changed from 1.0 to ``"auto"``.
    tau : int, default=100
        Number of consecutive iterates with an unchanged sign pattern that
        triggers the switch to the local phase.
    rho : float in [0, 1], default=0.85
        Safeguard: zero coordinates with ``|g_bar_i| > rho * alpha`` join the
        support of the local phase.
    tol : float or None, default=1e-4
        Target of the stopping measure ``violation`` (the largest violation
        of an optimality condition divided by ``alpha``; with ``alpha=0``,
        by the largest gradient entry at ``w = 0``), not the
        progressive-loss tolerance of the other estimators of the package:
        ``fit`` stops when the local phase (or, with ``local_phase=False``,
        the iterate at the end of an epoch) reaches ``violation <= tol``.
        None: no stopping test; every local phase is run to round-off and
        dual averaging runs all ``max_iter`` epochs.
    max_iter : int, default=100
        Maximum number of epochs of dual averaging in ``fit``.
    n_iter_no_change : int, default=5
        ``fit`` also gives up when the best ``violation`` seen (at the end
        of the epochs and in the local phases) has not decreased for this
        many consecutive epochs.  Unused when ``tol=None``.
    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit`` (``partial_fit`` keeps
        the given order).
    local_phase : bool, default=True
        False gives plain RDA (Xiao 2010), the non-adaptive baseline.
    max_newton_support : int, default=200
        Newton systems with at most this many free coordinates are solved by
        Cholesky; beyond, by damped conjugate gradients on Hessian-vector
        products (see ``_l1_logistic._newton_direction``).
    max_reservoir : int, default=10000
        ``partial_fit``: size of the uniform reservoir sample (Vitter's
        Algorithm R over the rows of non-zero weight) of the stream seen so
        far, the surrogate data of its local phase.  It is stored in the
        fitted state (``reservoir_*_``), so memory grows with it.
    fit_intercept : bool, default=True
        Learn an unpenalised intercept.
    class_weight : dict, "balanced" or None, default=None
        Multiplies each row's weight by its class weight (``"balanced"`` is
        refused by ``partial_fit``).
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling and of the reservoir sampling.
    warm_start : bool, default=False
        ``fit`` continues the dual averaging from the fitted state.
    verbose : int, default=0
        Print one line per epoch / chunk and one per local phase.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
    support_ : ndarray of bool, shape like ``coef_``
        ``coef_ != 0``.
    alpha_ : ndarray of shape (n_problems,)
        The penalty in use per binary problem (``alpha``, or its "auto"
        value; NaN until a call with a non-zero weight).
    gamma_ : ndarray of shape (n_problems,)
        The ``gamma`` in use per binary problem (``gamma``, or its "auto"
        value, the same for every problem; NaN until a call with a non-zero
        weight).
    violation_ : ndarray of shape (n_problems,)
        Final stopping measure ``violation`` of each binary problem, on the
        training set (``fit``) or on the reservoir (``partial_fit``; on the
        chunk when ``local_phase=False``).
    optimality_ : ndarray of shape (n_problems,)
        Final ``delta`` (the paper's measure, reported only), on the same
        data.
    n_switches_ : ndarray of int, shape (n_problems,)
        Local phases entered (by the last ``fit``, or since the first
        ``partial_fit``).
    switch_iter_ : list of lists of int
        Dual-averaging step ``t`` of each switch, per problem.
    support_size_history_, optimality_history_, violation_history_ : list of ndarray of shape (n_records, 3)
        Per problem, rows ``(t, elapsed seconds, support size)``,
        ``(t, elapsed seconds, delta)`` and ``(t, elapsed seconds,
        violation)``: at the end of each epoch (``tol``
        not None), at every iterate of the local phases (the first one is
        the switch) and, in ``fit``, for the returned model (last row).
        Wall-clock times: not reproducible.
    sum_gradient_ : ndarray of shape (n_problems, n_features)
        ``u``, the sum of the dual-averaging gradients.
    intercept_sum_gradient_ : ndarray of shape (n_problems,)
    rda_t_ : ndarray of int, shape (n_problems,)
        Dual-averaging steps taken by each problem.
    last_support_change_ : ndarray of int, shape (n_problems,)
        Step after which the sign pattern of the iterate last changed.
    next_switch_ : ndarray of int, shape (n_problems,)
        ``fit``: first step at which a switch is allowed (every sample seen
        once; one more pass after a stalled local phase); -1 before ``fit``.
    safeguard_support_ : ndarray of bool, shape (n_problems, n_features)
        ``fit``: coordinates added to the safeguarded support of later
        switches by stalled local phases (their support and the
        coordinates violating optimality at their solution).
    t_ : int
        ``max(rda_t_)``.
    n_iter_ : int
        Epochs (the last possibly partial) of the last ``fit``; 1 for
        ``partial_fit``.
    loss_curve_ : list of float
        Progressive loss per epoch / chunk (summed over the problems).
    reservoir_data_, reservoir_indices_, reservoir_indptr_, reservoir_y_, reservoir_weight_ : ndarray
        ``partial_fit`` with ``local_phase=True``: the reservoir (CSR arrays,
        class indices, weights).  ``n_seen_``: rows offered to it;
        ``reservoir_seed_``: its seed.

    See Also
    --------
    AdaGradClassifier : Online learner with l1, l2, elastic-net and group
        penalties (no local phase).
    sklearn.linear_model.LogisticRegression : Batch solvers of the same
        objective (``penalty="l1"``, ``solver="liblinear"`` or ``"saga"``).
    sklearn.linear_model.SGDClassifier : Plain SGD with a truncated l1 step.

    Notes
    -----
    **fit vs partial_fit.**  ``fit`` uses the whole training set as the
    surrogate of the local phase and can switch in the middle of an epoch
    (from the end of the first one on).  ``partial_fit`` runs dual averaging
    on each chunk; after a chunk, if ``tau`` iterates were stable, it runs
    the local phase on the reservoir, from the dual-averaging iterate.  The
    local phase never changes the dual-averaging state, so chunks fed to
    ``partial_fit`` leave exactly the dual-averaging state (``sum_gradient_``,
    ``rda_t_``, ...) of one ``fit`` epoch without shuffling; the models are
    the same when the reservoir holds every row (``max_reservoir`` at least
    the stream length), and with ``local_phase=False`` always.

    **Sample weights** scale a row's gradient (one step per row); a weight
    of 2 is not the row twice for the dual averaging, and ``N`` counts rows.

    References
    ----------
    S. Lee, S. J. Wright. Manifold Identification in Dual Averaging for
    Regularized Stochastic Online Learning. JMLR 13:1705-1744, 2012.

    L. Xiao. Dual Averaging Methods for Regularized Stochastic Learning and
    Online Optimization. JMLR 11:2543-2596, 2010.

    Examples
    --------
    >>> from sklearn_adaprox import RDAPlusClassifier
    >>> from sklearn_adaprox.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> clf = RDAPlusClassifier(alpha=1e-3, random_state=0).fit(X_train, y_train)
    >>> bool(clf.violation_[0] <= 1e-4), clf.score(X_test, y_test) > 0.83
    (True, True)
    """

    # NaN for a problem no call has measured yet
    _nan_allowed_state = ("optimality_", "violation_", "alpha_", "gamma_")
    # fitted values that the first call resolves from its data
    _resolved_params = ("alpha_", "gamma_")

    _parameter_constraints: dict = {
        **BaseOnlineLinearClassifier._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "tau": [Interval(Integral, 1, None, closed="left")],
        "rho": [Interval(Real, 0, 1, closed="both")],
        "tol": [Interval(Real, 0, None, closed="left"), None],
        "local_phase": ["boolean"],
        "max_newton_support": [Interval(Integral, 0, None, closed="left")],
        "max_reservoir": [Interval(Integral, 1, None, closed="left")],
    }

    # wall-clock records: excluded from exact state comparisons in the tests
    _timing_attributes = ("optimality_history_", "violation_history_",
                          "support_size_history_")

    def __init__(
        self,
        alpha="auto",
        *,
        gamma="auto",
        tau=100,
        rho=0.85,
        tol=1e-4,
        max_iter=100,
        n_iter_no_change=5,
        shuffle=True,
        local_phase=True,
        max_newton_support=200,
        max_reservoir=10000,
        fit_intercept=True,
        class_weight=None,
        n_jobs=None,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.alpha = alpha
        self.gamma = gamma
        self.tau = tau
        self.rho = rho
        self.tol = tol
        self.max_iter = max_iter
        self.n_iter_no_change = n_iter_no_change
        self.shuffle = shuffle
        self.local_phase = local_phase
        self.max_newton_support = max_newton_support
        self.max_reservoir = max_reservoir
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    # ------------------------------------------------------------------
    def _scores(self, X):
        # a few plain CSR rows in one compiled call (the same scores, bit
        # for bit); anything else through the general validation
        scores = stored_scores(self, X)
        return super()._scores(X) if scores is None else scores

    def predict_proba(self, X):
        """Logistic class probabilities (one-vs-rest rows normalised).

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
        return self._proba_from_loss(scores, "log_loss")

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
    def _init_state(self, n_problems, n_features):
        self.coef_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_ = np.zeros(n_problems, dtype=np.float64)
        self.sum_gradient_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_sum_gradient_ = np.zeros(n_problems, dtype=np.float64)
        self.rda_t_ = np.zeros(n_problems, dtype=np.int64)
        self.last_support_change_ = np.zeros(n_problems, dtype=np.int64)
        self.optimality_ = np.full(n_problems, np.nan)
        self.violation_ = np.full(n_problems, np.nan)
        self.safeguard_support_ = np.zeros((n_problems, n_features), dtype=bool)
        self.next_switch_ = np.full(n_problems, -1, dtype=np.int64)
        self.alpha_ = np.full(n_problems, np.nan)
        self.gamma_ = np.full(n_problems, np.nan)
        self._reset_records(n_problems)

    def _resolve_alpha(self, X, y_pm, sample_weight):
        """``alpha_``: ``alpha`` on every call, or with ``alpha="auto"``,
        ``AUTO_ALPHA_RATIO * alpha_max`` of each problem, resolved by the
        first call with a non-zero weight and then fixed.  ``alpha_max`` is
        the smallest penalty whose solution is ``w = 0``: the largest
        gradient entry ``|X^T (h * (sigma(b*) - y))| / N`` (N rows of
        non-zero weight ``h``, as in the objective) at the best
        intercept-only model ``b*`` (``sigma(b*)`` the weighted share of
        positives; ``b* = 0`` without an intercept).  It has the units of
        the data, so the ratio means the same on text as on tables.  O(nnz)."""
        n_problems = len(y_pm)
        if not isinstance(self.alpha, str):
            self.alpha_ = np.full(n_problems, float(self.alpha))
            return
        total = float(np.sum(sample_weight))
        if total == 0 or not np.any(np.isnan(self.alpha_)):
            return
        n_rows = np.count_nonzero(sample_weight)  # the N of the objective
        alpha = np.empty(n_problems)
        for k, y in enumerate(y_pm):
            positive = (y > 0).astype(np.float64)
            share = float(np.dot(sample_weight, positive)) / total if self.fit_intercept else 0.5
            gradient = X.T @ (sample_weight * (share - positive)) / n_rows
            alpha_max = float(np.max(np.abs(gradient))) if gradient.size else 0.0
            alpha[k] = AUTO_ALPHA_RATIO * alpha_max if alpha_max > 0 else AUTO_ALPHA_FALLBACK
        self.alpha_ = alpha

    def _resolve_gamma(self, X, sample_weight, n_problems):
        """``gamma_``: ``gamma`` on every call, or with ``gamma="auto"``, the
        weighted mean square of the non-zero values of the rows of the first
        call with a non-zero weight, then fixed (resolved afresh if the state
        has none: a model from before ``gamma_``).  Rows of zeros (or of
        values whose squares underflow to 0) give 1, a mean below the
        smallest normal number that number (its step ``1 / gamma`` is
        finite).  O(nnz)."""
        if not isinstance(self.gamma, str):
            self.gamma_ = np.full(n_problems, float(self.gamma))
            return
        resolved = self.__dict__.get("gamma_")
        if not np.any(sample_weight) or (resolved is not None
                                         and not np.any(np.isnan(resolved))):
            return
        _, value_scale = row_scales(X, sample_weight)
        gamma = max(value_scale, np.finfo(np.float64).tiny) if value_scale > 0 else 1.0
        self.gamma_ = np.full(n_problems, gamma)

    def _gamma_of_call(self):
        """The gamma of each problem under the current parameters:
        ``gamma``, or the resolved "auto" value (NaN before it is)."""
        n_problems = self.rda_t_.shape[0]
        if not isinstance(self.gamma, str):
            return np.full(n_problems, float(self.gamma))
        return self.__dict__.get("gamma_", np.full(n_problems, np.nan))

    def _reset_records(self, n_problems):
        self.n_switches_ = np.zeros(n_problems, dtype=np.int64)
        self.switch_iter_ = [[] for _ in range(n_problems)]
        self.optimality_history_ = [np.zeros((0, 3)) for _ in range(n_problems)]
        self.violation_history_ = [np.zeros((0, 3)) for _ in range(n_problems)]
        self.support_size_history_ = [np.zeros((0, 3)) for _ in range(n_problems)]

    def _problem(self, k, switch_from=NEVER):
        return RDAProblem(
            loss=Log(), gamma=float(self.gamma_[k]), l1=float(self.alpha_[k]),
            fit_intercept=bool(self.fit_intercept), sum_grad=self.sum_gradient_[k],
            intercept_sum_grad=float(self.intercept_sum_gradient_[k]),
            t=int(self.rda_t_[k]), last_change=int(self.last_support_change_[k]),
            switch_from=switch_from, tau=int(self.tau),
        )

    # A call changes sum_gradient_ only in the columns of its rows, and
    # coef_ and support_ only there, where coef_ or the last iterate was
    # non-zero (the dual-averaging iterate of every other column stays 0 as
    # alpha t grows) and, with the local phase, where the reservoir has
    # entries (outside them the surrogate has no data, and the phase leaves
    # a weight that starts at 0 there at 0, see _local_phase_columns):
    # those arrays are updated in place, their saved and checked columns
    # those (``_changeable_columns``), and a partial_fit call costs
    # O(nnz of the rows and the reservoir + support) whatever n_features.
    def _in_place_arrays(self):
        return ("sum_gradient_", "coef_", "support_", "safeguard_support_")

    def _changeable_columns(self, columns):
        columns = sorted_union(self._weight_columns(), columns)
        if self.local_phase and "reservoir_indices_" in self.__dict__:
            # the reservoir after this call holds rows of these columns only
            reservoir, _, _ = self._reservoir(self.n_features_in_)
            columns = sorted_union(columns, touched_columns(reservoir.indices,
                                                            reservoir.shape[1]))
        return columns

    def _weight_columns(self):
        """The sorted columns in which coef_ or the iterate of this call's
        alpha can be non-zero: those the last call listed, when its kept
        problems hold for this alpha; else a read of the state
        (O(n_features): after a pickle, a copy, fit or another alpha)."""
        alpha = (self.alpha_ if isinstance(self.alpha, str)
                 else np.full(self.coef_.shape[0], float(self.alpha)))
        entry = _STREAM_PROBLEMS.get(self)
        if (entry is not None and entry[2] is not None
                and all(p is not None
                        for p in self._kept_problems(alpha, self._gamma_of_call(), keep=True))):
            return entry[2]
        return self._read_weight_columns(alpha)

    def _read_weight_columns(self, alpha):
        """The sorted columns where coef_ or the iterate under the
        penalties ``alpha`` is non-zero, read from the state: O(n_features)."""
        steps = self.rda_t_.astype(np.float64)[:, None]
        # the kernel's predicate of a non-zero weight: t > 0 and |u| > alpha t
        iterate = (steps > 0) & (np.abs(self.sum_gradient_) > alpha[:, None] * steps)
        return np.flatnonzero(np.any(self.coef_ != 0, axis=0) | np.any(iterate, axis=0))

    def _kept_problems(self, alpha, gamma, keep):
        """Per problem, the kernel problem the last partial_fit call left
        (``_STREAM_PROBLEMS``) if it still describes the state under the
        penalties ``alpha`` and the steps of ``gamma``, else None;
        ``keep=False`` takes them off."""
        entry = _STREAM_PROBLEMS.get(self) if keep else _STREAM_PROBLEMS.pop(self, None)
        n_problems = self.rda_t_.shape[0]
        kept = [None] * n_problems
        if (entry is None or entry[0] != self.__dict__.get("_state_version")
                or len(entry[1]) != n_problems):
            return kept
        for k, problem in enumerate(entry[1]):
            try:
                if problem is not None and problem.describes(
                        self.sum_gradient_[k], float(self.intercept_sum_gradient_[k]),
                        int(self.rda_t_[k]), int(self.last_support_change_[k]),
                        float(alpha[k]), float(gamma[k]), bool(self.fit_intercept)):
                    kept[k] = problem
            except (ValueError, TypeError, IndexError):  # a state replaced by hand
                pass
        return kept

    def _save_problem(self, k, problem):
        self.intercept_sum_gradient_[k] = problem.intercept_sum_grad
        self.rda_t_[k] = problem.t
        self.last_support_change_[k] = problem.last_change

    def _rda_iterate(self, k):
        w = np.empty(self.n_features_in_)
        b = iterate(self.sum_gradient_[k], float(self.intercept_sum_gradient_[k]),
                    int(self.rda_t_[k]), float(self.alpha_[k]), float(self.gamma_[k]),
                    bool(self.fit_intercept), w)
        return w, b

    def _local_phase_columns(self, k, S, w, columns=None, extra=None):
        """The local phase's support M, as positions among the columns of
        the surrogate ``S`` (the model's, or the sorted ``columns`` of a
        narrowed reservoir, where ``w`` gives the iterate): the safeguard
        (``w != 0`` or ``|g_bar| > rho alpha``, ``g_bar = u / t``; paper,
        eq. 53) and ``extra`` (fit's, a bool array of the width), where
        ``w`` is non-zero or ``S`` has data.  A column without data and
        with ``w_i = 0`` has gradient 0 and stays 0 in the phase: leaving
        it out changes no weight, and a partial_fit call reads the sums of
        its columns only."""
        u = self.sum_gradient_[k] if columns is None else self.sum_gradient_[k][columns]
        w = np.ascontiguousarray(w)
        M = safeguarded_support(np.ascontiguousarray(u), max(int(self.rda_t_[k]), 1),
                                float(self.rho * self.alpha_[k]), w)
        if extra is not None:
            M |= extra
        has_data = np.zeros(w.shape[0], dtype=bool)
        has_data[S.live_columns()] = True
        return np.flatnonzero(M & (has_data | (w != 0)))

    # ------------------------------------------------------------------
    def _run_local_phase(self, k, S, clock, offset, rec, scale, extra=None, start=None):
        """The local phase from the dual-averaging iterate, computed here;
        or, given ``start = (columns, b)``, from the iterate in ``coef_[k]``,
        0 off the sorted ``columns`` of the narrowed surrogate ``S``: the
        phase then writes its weights there (partial_fit: no read of the
        width).  Returns (objective, w, b, delta, violation, status), ``w``
        a vector of the width."""
        if start is None:
            (w0, b0), columns = self._rda_iterate(k), None
        else:
            columns, b0 = start
            w0 = self.coef_[k][columns]
        A = self._local_phase_columns(k, S, w0, columns, extra)
        t = int(self.rda_t_[k])
        self.n_switches_[k] += 1
        self.switch_iter_[k].append(t)

        def record(delta, violation, nnz):
            rec.add(t, offset + time.perf_counter() - clock, delta, violation, nnz)

        (at, values), b, delta, violation, obj, status, n_it = local_phase(
            S, float(self.alpha_[k]), w0, b0, A, tol=self.tol, scale=scale,
            max_newton_support=self.max_newton_support,
            fit_intercept=self.fit_intercept, record=record,
        )
        if start is None:
            w = np.zeros(self.n_features_in_)
            w[at] = values
        else:
            w = self.coef_[k]
            w[columns] = 0.0
            w[columns[at]] = values
        if status != "converged" and extra is not None:
            # what a stalled phase learnt: its support and the coordinates
            # that violate optimality at its solution (|g_i| > alpha)
            g, _ = S.gradient(w, b)
            extra |= (w != 0) | (np.abs(g) > self.alpha_[k])
        if self.verbose:
            print(
                f"   local phase (problem {k}) at t={t}: |M|={A.shape[0]}, "
                f"{n_it} iterations, {status}, violation {violation:.3g}, "
                f"delta {delta:.3g}, non-zeros {np.count_nonzero(values)}"
            )
        return obj, w, b, delta, violation, status

    def _solve_problem(self, k, rows, y, sw, n_steps, seed, partial, clock, offset,
                       surrogate_data, problems):
        """All the work of binary problem k in this call: its epochs'
        (loss, weight), and why fit stopped short of tol (None: it did
        not, or a partial_fit call).  ``surrogate_data``: ``(X, class
        indices or None, weights, DesignCache, columns)`` of the local
        phase's rows, shared by the problems (see ``_surrogate``).
        ``problems[k]``: the kernel problem a partial_fit call continues
        (None: a new one), and then the one it leaves."""
        if partial:
            return self._solve_chunk(k, rows, y, sw, clock, offset, surrogate_data, problems)
        # every problem shuffles with the same stream: its order of the rows
        # does not depend on the threads
        with lent_random_state(seed) as rng:
            return self._solve_fit(k, rows, y, sw, n_steps, rng, clock, offset,
                                   surrogate_data)

    def _publish(self, k, rec, w, b, delta, violation):
        """Problem k's model and measures into the fitted state (``w``:
        None when the weights are written already)."""
        if w is not None:
            self.coef_[k] = w
        self.intercept_[k] = b
        self.optimality_[k], self.violation_[k] = delta, violation
        rec.store()

    def _solve_chunk(self, k, rows, y, sw, clock, offset, surrogate_data, problems):
        """partial_fit: one pass of dual averaging over the chunk in order,
        then the local phase on the reservoir once the sign pattern has
        held for tau steps (without the local phase: the measures of the
        iterate on the chunk)."""
        rec = _Records(self, k)
        lam = float(self.alpha_[k])
        order = np.arange(y.shape[0], dtype=np.int64)
        problem = problems[k]
        if problem is None:
            problem = problems[k] = self._problem(k)
        else:
            problem.switch_from, problem.tau = NEVER, int(self.tau)
        loss, weight, _, _ = run_epoch(problem, *rows, y, sw, order, 0)
        self._save_problem(k, problem)
        columns = self.__dict__.get("_touched_columns")
        if isinstance(columns, np.ndarray):
            # the iterate moved only in these columns (_changeable_columns):
            # its weights are written there alone, O(nnz + support), and
            # coef_[k] is then the whole iterate
            values = np.empty(columns.shape[0])
            b = problem.weights_at(columns, values)
            self.coef_[k][columns] = values
            w, written = self.coef_[k], True
        else:
            (w, b), written = self._rda_iterate(k), False
        stable = (int(self.rda_t_[k]) - int(self.last_support_change_[k]) + 1
                  >= self.tau)
        S = self._surrogate(k, y, surrogate_data)
        delta = violation = np.nan
        if S is not None:
            scale = violation_scale(S, lam, self.fit_intercept)
            if self.local_phase and stable:
                _, w, b, delta, violation, _ = self._run_local_phase(
                    k, S, clock, offset, rec, scale, start=(columns, b) if written else None)
            else:  # a narrowed reservoir takes the weights of its columns
                delta, violation = S.measures(
                    w if surrogate_data[-1] is None else values, b, lam,
                    self.fit_intercept, scale)
        self._publish(k, rec, None if written else w, b, delta, violation)
        return [(loss, weight)], None

    def _solve_fit(self, k, rows, y, sw, n_steps, rng, clock, offset, surrogate_data):
        """fit: epochs of dual averaging (shuffled by the RandomState
        ``rng``), switching to the local phase once the sign pattern has
        held for tau steps, until the optimality measure reaches tol (or
        stalls, or max_iter)."""
        rec = _Records(self, k)
        lam = float(self.alpha_[k])
        n = y.shape[0]
        epochs = []
        S = self._surrogate(k, y, surrogate_data)
        scale = violation_scale(S, lam, self.fit_intercept)
        tol = self.tol
        # switching needs every sample seen once (and, after a stalled local
        # phase, one more pass); the schedule survives warm starts
        if self.next_switch_[k] < 0:
            self.next_switch_[k] = int(self.rda_t_[k]) + n_steps
        switch_from = int(self.next_switch_[k]) if self.local_phase else NEVER

        def run_local_phase():
            """The local phase from the current iterate; unless it converged,
            the next switch waits for one more full pass."""
            nonlocal switch_from
            result = self._run_local_phase(k, S, clock, offset, rec, scale, extra)
            if result[-1] != "converged":
                switch_from = int(self.rda_t_[k]) + n_steps
                self.next_switch_[k] = switch_from
            return result

        # (objective, w, b, delta, violation, status) of the latest local phase
        best_local = self._continued_local_solution(k, S, lam, scale)
        extra = self.safeguard_support_[k]  # updated in place, see _run_local_phase
        best, no_improvement = np.inf, 0  # best violation seen
        converged = False
        stop = "max_iter"
        # One kernel problem for every pass of this fit: only its passes
        # write the sums, so its sign pattern and heap stay valid, and a
        # rebuild (a scan and four arrays of n_features: 6-7 ms at 2**20
        # columns) is paid once instead of per epoch and per switch.
        problem = self._problem(k, switch_from)
        for _ in range(self.max_iter):
            best_before = best
            switched_in_epoch = False
            order = pass_order(n, rng, self.shuffle)
            pos, loss, weight = 0, 0.0, 0.0
            while pos < n:
                problem.switch_from = switch_from
                l_, w_, pos, switched = run_epoch(problem, *rows, y, sw, order, pos)
                self._save_problem(k, problem)
                loss += l_
                weight += w_
                if not switched:
                    continue
                switched_in_epoch = True
                best_local = run_local_phase()
                best = min(best, best_local[4])
                if best_local[-1] == "converged":
                    converged = True
                    break
            epochs.append((loss, weight))
            if converged:
                break
            if tol is None:
                continue
            # end of an epoch: optimality of the dual-averaging iterate
            w, b = self._rda_iterate(k)
            delta, violation = S.measures(w, b, lam, self.fit_intercept, scale)
            rec.add(int(self.rda_t_[k]), offset + time.perf_counter() - clock,
                    delta, violation, int(np.count_nonzero(w)))
            if violation <= tol:
                converged = True
                best_local = None
                break
            if (self.local_phase and not switched_in_epoch and len(epochs) > 1
                    and violation >= best_before):
                # Safeguard: dual averaging has stalled without ever holding
                # one sign pattern for tau steps (small, ill-conditioned
                # problems).  Start the local phase from its iterate rather
                # than wait for a switch that may not come.
                best_local = run_local_phase()
                violation = min(violation, best_local[4])
                if best_local[-1] == "converged":
                    converged = True
                    break
            if min(violation, best) < best_before:
                no_improvement = 0
            else:
                no_improvement += 1
                if no_improvement >= self.n_iter_no_change:
                    stop = "no_change"
                    break
            best = min(violation, best)
        w, b, delta, violation = self._final_model(k, S, lam, scale, converged, best_local)
        # the returned model closes the record
        rec.close(int(self.rda_t_[k]), offset + time.perf_counter() - clock,
                  delta, violation, int(np.count_nonzero(w)))
        self._publish(k, rec, w, b, delta, violation)
        return epochs, None if converged else stop

    def _continued_local_solution(self, k, S, lam, scale):
        """What a warm-started fit takes as its latest local solution: the
        model the call it continues returned, if that was a local solution
        (not the dual-averaging iterate, which the sums hold), so that two
        fits of one epoch return what one fit of two does (``_final_model``):
        a local phase of the first epoch can be the better model at the end
        of the second.  Measured on this fit's data (a partial_fit measured
        it on its reservoir).  None for a fresh fit."""
        if int(self.rda_t_[k]) == 0:
            return None
        w, b = self._rda_iterate(k)
        coef, intercept = self.coef_[k], float(self.intercept_[k])
        if b == intercept and np.array_equal(w, coef):
            return None
        delta, violation = S.measures(coef, intercept, lam, self.fit_intercept, scale)
        return (S.objective(coef, intercept, lam), coef.copy(), intercept, delta, violation,
                "stalled")

    def _final_model(self, k, S, lam, scale, converged, best_local):
        """(w, b, delta, violation) of fit's model: the local solution if
        it converged, else the better of the last dual-averaging iterate and
        the latest local solution (``best_local``: (objective, w, b, delta,
        violation, status) or None)."""
        w, b = self._rda_iterate(k)
        if best_local is not None and (converged or best_local[0] <= S.objective(w, b, lam)):
            return tuple(best_local[1:5])
        delta, violation = S.measures(w, b, lam, self.fit_intercept, scale)
        return w, b, delta, violation

    def _convergence_message(self, stops):
        """Why fit stopped short of ``violation <= tol``, and what helps."""
        worst = float(np.nanmax(self.violation_))
        head = (f"RDA+ did not reach violation <= tol={self.tol} (largest "
                f"optimality violation / alpha: {worst:.3g}; delta = "
                f"{np.nanmax(self.optimality_):.3g})")
        if "max_iter" in stops:
            return (f"{head}: it ran out of max_iter={self.max_iter} epochs.  "
                    "Increase max_iter, or lower gamma or tau: the local phase "
                    "then starts sooner.")
        return (f"{head}: the violation had not decreased for "
                f"n_iter_no_change={self.n_iter_no_change} consecutive epochs.  "
                "Increase n_iter_no_change, or lower gamma or tau; if tol is "
                "near the rounding of the data (about 1e-12), loosen it.")

    # ------------------------------------------------------------------
    # reservoir of the stream (partial_fit)
    def _update_reservoir(self, X, y_index, sw):
        """Algorithm R over the rows of non-zero weight.  Returns the new
        reservoir as ``_reservoir`` does (made here from checked parts: not
        checked again), or None when it did not change."""
        keep = np.flatnonzero(sw)
        if keep.size == 0:
            return None
        rows = X if keep.size == X.shape[0] else X[keep]  # (a copy of X's rows)
        Xc = sp.csr_matrix(rows, dtype=np.float64, copy=rows is X)
        Xc.sum_duplicates()
        yc, wc = y_index[keep].astype(np.int64), sw[keep]
        R = int(self.max_reservoir)
        n_before = int(self.n_seen_)
        counts = n_before + 1 + np.arange(keep.size)  # 1-based stream positions
        rng = np.random.default_rng([int(self.reservoir_seed_), n_before])
        slots = np.where(counts <= R, counts - 1, rng.integers(0, counts))
        slots[slots >= R] = -1
        valid = slots >= 0
        self.n_seen_ = n_before + keep.size
        if not valid.any():
            # no row enters (a long stream: each does with probability R / n):
            # the reservoir's arrays stay, never written in place
            return None
        old, old_y, old_weight = self._reservoir(X.shape[1])
        n_res = old_y.shape[0]
        new_size = min(R, n_before + keep.size)
        source = np.arange(new_size)  # row of vstack([old, chunk]) per slot
        # later rows of the chunk overwrite earlier ones in the same slot
        source[slots[valid]] = n_res + np.flatnonzero(valid)
        stacked = sp.vstack([old, Xc], format="csr")
        if not np.array_equal(source, np.arange(new_size)):  # a row replaced
            stacked = stacked[source]
        stacked.sort_indices()
        # new arrays (the stacked matrix's own): no copies of them
        self.reservoir_data_ = stacked.data.astype(np.float64, copy=False)
        self.reservoir_indices_ = stacked.indices.astype(np.int64, copy=False)
        self.reservoir_indptr_ = stacked.indptr.astype(np.int64, copy=False)
        self.reservoir_y_ = np.r_[old_y, yc][source]
        self.reservoir_weight_ = np.r_[old_weight, wc][source]
        return (sp.csr_matrix((self.reservoir_data_, self.reservoir_indices_,
                               self.reservoir_indptr_), shape=(new_size, X.shape[1])),
                self.reservoir_y_, self.reservoir_weight_)

    def _reservoir(self, n_features):
        """The reservoir as (CSR matrix of width n_features, labels, weights),
        its structure checked before scipy reads it: its five arrays are
        separate attributes, and an estimator raced by threads (or a state
        edited by hand) could hold arrays of different calls, whose indices
        must not reach scipy's compiled loops unchecked."""
        data, indices, indptr = (self.reservoir_data_, self.reservoir_indices_,
                                 self.reservoir_indptr_)
        y, weight = self.reservoir_y_, self.reservoir_weight_
        if not (indptr.shape[0] == y.shape[0] + 1 == weight.shape[0] + 1):
            raise ValueError("The reservoir's arrays do not describe the same rows.")
        X = sp.csr_matrix((data, indices, indptr), shape=(y.shape[0], n_features))
        return check_sparse_structure(X), y, weight

    def _surrogate(self, k, y, surrogate_data):
        """Problem k's surrogate over ``surrogate_data = (X, labels,
        weights, design, columns)``: the call's rows (labels None: ``y``,
        the problem's +-1 targets), or the reservoir (labels: its class
        indices), narrowed to its sorted ``columns`` unless None (its
        measures still count the model's width); None for an empty
        reservoir."""
        X, labels, weight, design, columns = surrogate_data
        if labels is not None:
            if labels.shape[0] == 0:
                return None
            positive = 1 if self.classes_.shape[0] == 2 else k
            y = np.where(labels == positive, 1.0, -1.0)
        return Surrogate(X, y, weight, design,
                         None if columns is None else self.n_features_in_)

    # ------------------------------------------------------------------
    # a call keeps a reservoir of its rows for the local phase: no passes
    # over row subsets of one validated X (see the base class)
    _passes_over_row_subsets = False

    def _train(self, X, y_pm, sample_weight, partial, first_call):
        """Per binary problem: dual averaging, then the local phase (the
        base class's hook for an algorithm that is not a sequence of
        passes)."""
        clock = time.perf_counter()
        n_problems = len(y_pm)
        self._resolve_alpha(X, y_pm, sample_weight)
        self._resolve_gamma(X, sample_weight, n_problems)
        if not partial:
            self._reset_records(n_problems)
        elif first_call or not hasattr(self, "reservoir_seed_"):
            # the first partial_fit, or partial_fit after fit: start the reservoir
            with lent_random_state(self.random_state) as rng:
                self.reservoir_seed_ = int(rng.randint(np.iinfo(np.int32).max))
            self.n_seen_ = 0
            self.reservoir_data_ = np.zeros(0)
            self.reservoir_indices_ = np.zeros(0, dtype=np.int64)
            self.reservoir_indptr_ = np.zeros(1, dtype=np.int64)
            self.reservoir_y_ = np.zeros(0, dtype=np.int64)
            self.reservoir_weight_ = np.zeros(0)

        n_steps = int(np.count_nonzero(sample_weight))
        self.n_iter_ = 1
        if partial and n_steps == 0:
            self.loss_curve_.append(np.nan)
            return self
        updated = None
        if partial and self.local_phase:
            # the reservoir keeps class indices: the +1 of each row's problem
            updated = self._update_reservoir(X, self._class_indices(y_pm), sample_weight)

        rows = as_row_arrays(X)
        # the local phases' rows, and what they derive from X once for all
        # the problems: the call's rows, or partial_fit's reservoir
        if partial and self.local_phase:
            reservoir, labels, weights = updated or self._reservoir(X.shape[1])
            columns = self.__dict__.get("_touched_columns")
            if isinstance(columns, np.ndarray):
                # its rows hold entries of these columns only
                # (_changeable_columns): its arithmetic over them is that
                # over all of them, O(entries + columns) whatever the width
                reservoir = narrowed(reservoir, columns)
            else:
                columns = None
            surrogate_data = (reservoir, labels, weights, DesignCache(), columns)
        else:
            surrogate_data = (X, None, sample_weight, DesignCache(), None)
        with lent_random_state(self.random_state) as rng:
            seed = int(rng.randint(np.iinfo(np.int32).max))
        # (fit takes them off too: it makes its own, and renames the state)
        problems = self._kept_problems(self.alpha_, self.gamma_, keep=False)
        if not partial:
            problems = [None] * n_problems
        offset = 0.0
        if partial:
            last = [h[-1, 1] for h in self.optimality_history_ if h.shape[0]]
            offset = max(last) if last else 0.0
        # The dense products of the local phase are small: BLAS threads only
        # add synchronisation and oversubscribe the one-vs-rest threads.  The
        # limit is process-wide, so it is set once around all the threads (set
        # inside each, one thread's exit would lift it under the others and
        # make their results depend on timing).  Without the local phase
        # nothing calls BLAS, and setting the limit costs a stream of small
        # calls some 40 microseconds each.
        blas = single_threaded_blas() if self.local_phase else contextlib.nullcontext()
        with blas, problem_threads(n_problems, self.n_jobs) as threads:
            solved = map_problems(
                lambda k: self._solve_problem(
                    k, rows, y_pm[k], sample_weight, n_steps, seed, partial, clock,
                    offset, surrogate_data, problems,
                ),
                n_problems, threads,
            )
        results = [epochs for epochs, _ in solved]
        stops = [stop for _, stop in solved]
        converged = np.array([stop is None for stop in stops])
        self._check_finite_state("this call" if partial else "fit")
        n_epochs = max(len(r) for r in results)
        for e in range(n_epochs):
            parts = [r[e] for r in results if len(r) > e]
            self.loss_curve_.append(
                float(sum(l / w for l, w in parts if w > 0)) if any(w > 0 for _, w in parts)
                else np.nan
            )
        self.n_iter_ = n_epochs
        self.t_ = int(self.rda_t_.max())
        columns = self.__dict__.get("_touched_columns")
        support = self.__dict__.get("support_")
        weight_columns = None  # where coef_ or the iterate is non-zero
        if (partial and isinstance(columns, np.ndarray)
                and isinstance(support, np.ndarray) and support.shape == self.coef_.shape):
            moved = self.coef_[:, columns] != 0  # coef_ moved in these columns only
            support[:, columns] = moved
            nonzero = np.any(moved, axis=0)
            if self.local_phase:  # coef_ may be a local phase's, not the iterate
                iterate_at = np.empty(columns.shape[0])
                for problem in problems:
                    problem.weights_at(columns, iterate_at)
                    nonzero |= iterate_at != 0
            weight_columns = columns[nonzero]
        else:
            self.support_ = self.coef_ != 0
            if partial:  # a read of the width, as this branch's
                weight_columns = self._read_weight_columns(self.alpha_)
        self._state_version = new_state_version()
        memory = physical_memory()
        if partial and (PROBLEM_BYTES_PER_FEATURE * self.coef_.size
                        <= (2**30 if memory is None else memory // 16)):
            _STREAM_PROBLEMS[self] = (self._state_version, problems, weight_columns)
        if self.verbose:
            print(
                f"-- {'chunk' if partial else 'fit'}: samples seen {self.t_}, "
                f"epochs {n_epochs}, delta {np.max(self.optimality_):.3g}, "
                f"non-zero weights {np.count_nonzero(self.coef_)}/{self.coef_.size}, "
                f"local phases {int(self.n_switches_.sum())}, "
                f"elapsed {time.perf_counter() - clock:.3f} s"
            )
        if (not partial and self.tol is not None and self.max_iter > 1
                and not np.all(converged)):
            warnings.warn(self._convergence_message(stops), ConvergenceWarning)
        return self
