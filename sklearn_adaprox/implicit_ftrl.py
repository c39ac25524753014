"""Generalized implicit FTRL (Chen & Orabona, ICML 2023): regressor and classifier."""
import math
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import (STOP_PER_PROBLEM_DOC, BaseOnlineLinearClassifier, BaseOnlineLinearRegressor,
                    column_positions)
from ._dataset import gradient_bound, row_moments
from ._implicit_ftrl_fast import ImplicitFTRLProblem, run_epoch
from ._loss import make_loss
from ._short_calls import ImplicitFTRLPath, short_partial_fit, short_scores

UPDATES = ("linear", "truncated", "twostep", "proximal")

# beta="auto" is AUTO_BETA_SCALE * (target scale) / (row scale); see
# _auto_beta.  Chosen on the data sets of benchmarks/bench_defaults.py: for
# classifiers the best beta times the row scale lies between about 3 and 30
# on text and tables alike; for regressors (target scale: the root mean
# square of y) between about 0.3 and 3.  Within those ranges the larger
# value fits in fewer epochs at the same accuracy (3 seeds; c = 10 -> 20 on
# SMS tf-idf: 27 -> 20 epochs, 98.59 % both; 20 newsgroups hashed: 24 -> 21
# epochs, 82.1 -> 83.0 %; regressor c = 1 -> 2 on housing: R^2 71.1 -> 71.6).
AUTO_BETA_SCALE = {"classifier": 20.0, "regressor": 2.0}


def _lipschitz(loss, epsilon):
    """sup_p |l'(y, p)|, or None for the squared error (not Lipschitz)."""
    if loss == "squared_error":
        return None
    if loss == "huber":
        return make_loss("huber", epsilon=epsilon).epsilon
    return 1.0  # hinge, log_loss, absolute_error, epsilon_insensitive


class _ImplicitFTRLMixin:
    """State, kernel call and the shared part of the documentation."""

    _ftrl_constraints = {
        "update": [StrOptions(set(UPDATES))],
        "beta": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "G": [Interval(Real, 0, None, closed="neither"), None],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    }

    # NaN until the first call with a non-zero weight fixes G (see Notes)
    _nan_allowed_state = ("G_", "lambda_", "beta_")
    # fitted values that the first call resolves from its data
    _resolved_params = ("beta_", "G_")

    # Fitted state renamed in 0.1 so that no attribute reads as the fitted
    # value of another estimator's parameter (``theta`` is the pairwise AUC
    # learner's momentum, ``gamma`` RDA+'s step scale); the old names stay
    # readable, with a FutureWarning, until 0.3.
    _renamed_state = {
        "theta_": "scaled_coef_",
        "intercept_theta_": "scaled_intercept_",
        "gamma_": "pending_gamma_",
        "sq_norm_theta_": "sq_norm_scaled_coef_",
    }

    def __getattr__(self, name):
        # called only when the normal lookup fails: the old names
        new = type(self)._renamed_state.get(name)
        if new is None or new not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(
            f"The attribute {name} was renamed {new} in version 0.1; the old "
            "name will be removed in version 0.3.",
            FutureWarning,
            stacklevel=2,
        )
        return self.__dict__[new]

    def __setstate__(self, state):
        # a model pickled under the old names loads under the new ones
        state = {self._renamed_state.get(key, key): value for key, value in state.items()}
        super().__setstate__(state)

    # A call on a few plain rows, once G is fixed, takes the short path of
    # _short_calls (the same model, bit for bit); any other goes through the
    # general validation and transaction.
    _short_path_type = ImplicitFTRLPath

    def _scores(self, X):
        scores = short_scores(self, X)
        return super()._scores(X) if scores is None else scores

    def _make_loss(self):
        # vars(): the classifier has no epsilon, and a failed attribute
        # lookup goes through __getattr__ above, an exception per epoch
        return make_loss(self.loss, epsilon=vars(self).get("epsilon"))

    # scaled_coef_ is updated in place by the kernel; coef_ = scaled_coef_ /
    # lambda_ is computed when it is read (see the base class), so a call costs O(nnz).
    def _in_place_arrays(self):
        return ("scaled_coef_",)

    def _kernel_checked_arrays(self):
        # the kernel tests each entry of theta as it writes it: on hashed
        # SMS spam the listing of X's columns and a read of them after each
        # of its 20 epochs were a third of a default fit (17.0 -> 11.6 ms)
        return ("scaled_coef_",)

    def _coef_is_computed(self):
        return True

    def _inverse_lambda(self):
        """1 / lambda per problem, the factor from theta to the weights (the
        kernel reads a weight as theta times it); 1 while lambda is not
        fixed (theta is then zeros)."""
        return 1.0 / np.where(np.isnan(self.lambda_), 1.0, self.lambda_)

    def _weights(self, theta):
        """theta / lambda per problem, as the kernel reads a weight."""
        inverse = self._inverse_lambda()
        return theta * (inverse[0] if theta.ndim == 1 else inverse[:, None])

    def _compute_coef(self):
        return self._weights(self.scaled_coef_)

    def _held_out_design(self, X):
        # sparse held-out rows: their distinct columns, and the rows with
        # their column indices renumbered over those (X's values shared), so
        # that each epoch's product reads a compact copy of theta's entries
        # in those columns instead of theta's whole width (below)
        if not sp.issparse(X):
            return X
        columns, positions = column_positions(X)
        renumbered = sp.csr_matrix((X.data, positions.astype(X.indices.dtype), X.indptr),
                                   shape=(X.shape[0], columns.shape[0]), copy=False)
        return columns, renumbered

    def _held_out_products(self, design):
        # one product of the held-out rows with each problem's theta, then
        # one scaling per problem (theta / lambda is coef_): on 20 newsgroups
        # hashed (20 problems, 470,000 held-out non-zeros) 45 ms an epoch,
        # where the weights of their columns, gathered for every problem,
        # took 115 ms.  The product takes theta's entries in the rows'
        # columns first (a sorted gather of 194,000 of 2**20 there), then
        # the renumbered rows: the same sums in the same order, so the same
        # bits, in 1.0 ms a problem where the product with theta's whole
        # width took 2.2 (its reads of an 8 MB row wait on the caches).
        if not isinstance(design, tuple):
            return super()._held_out_products(design)
        columns, renumbered = design
        theta = np.atleast_2d(self.scaled_coef_)
        inverse = self._inverse_lambda()
        return np.column_stack([(renumbered @ theta[k, columns]) * inverse[k]
                                for k in range(theta.shape[0])])

    def _compute_coef_at(self, columns):
        return self._weights(self.scaled_coef_[..., columns])

    @property
    def coef_(self):
        """Weights ``scaled_coef_ / lambda_`` (see the class doc)."""
        if "scaled_coef_" not in self.__dict__:
            raise AttributeError("coef_")
        return self._computed_coef()

    def _init_state(self, n_problems, n_features):
        is_regressor = isinstance(self, BaseOnlineLinearRegressor)
        shape = (n_features,) if is_regressor else (n_problems, n_features)
        self.scaled_coef_ = np.zeros(shape, dtype=np.float64)
        self.intercept_ = np.zeros(n_problems, dtype=np.float64)
        self.scaled_intercept_ = np.zeros(n_problems, dtype=np.float64)
        # lambda_ and G_ stay NaN until the first call with a non-zero weight
        # fixes G (see Notes), before the first step uses it.
        self.G_ = np.full(n_problems, np.nan)
        self.beta_ = np.full(n_problems, np.nan)
        self.lambda_ = np.full(n_problems, np.nan)
        self.pending_gamma_ = np.zeros(n_problems, dtype=np.float64)
        self.sq_norm_scaled_coef_ = np.zeros(n_problems, dtype=np.float64)
        self.cumulative_loss_ = np.zeros(n_problems, dtype=np.float64)
        self.cumulative_weight_ = np.zeros(n_problems, dtype=np.float64)
        self.average_loss_ = np.nan

    def _auto_beta(self, rows, y, sample_weight):
        """``beta="auto"``: ``c * target scale / row scale`` (c = 20 for a
        classifier, 2 for a regressor), the scales the weighted root mean
        squares of the target (1 for a classifier: its margins are +-1) and
        of the row norms ``||s_i||`` (the intercept's
        constant 1 included).  Multiplying X by ``a`` (and a regression
        target by ``b``) then multiplies the weights by ``b / a``: lambda
        scales as the curvature of the loss in w, as a ridge penalty must
        for the same model."""
        sum_sq_norm, sum_sq_target, sum_weight, _ = row_moments(
            *rows, self.fit_intercept, y, sample_weight)
        row_scale = np.sqrt(sum_sq_norm / sum_weight)
        target_scale = 1.0
        factor = AUTO_BETA_SCALE["classifier"]
        if isinstance(self, BaseOnlineLinearRegressor):
            target_scale = np.sqrt(sum_sq_target / sum_weight)
            factor = AUTO_BETA_SCALE["regressor"]
        if not (row_scale > 0 and target_scale > 0):
            return factor  # only zero rows or zero targets
        return float(factor * target_scale / row_scale)

    def _estimate_G(self, rows, y, sample_weight, beta):
        X_data, X_indices, X_indptr, is_dense, n_features = rows
        lipschitz = _lipschitz(self.loss, getattr(self, "epsilon", None))
        G = gradient_bound(
            X_data, X_indices, X_indptr, is_dense, n_features, self.fit_intercept,
            y, sample_weight, 1.0 if lipschitz is None else lipschitz,
            lipschitz is None, beta,
        )
        return G if G > 0 else 1.0

    def _problem(self, k, loss):
        """The kernel's view of problem k of the fitted state (lambda fixed),
        its theta updated in place."""
        theta = self.scaled_coef_ if self.scaled_coef_.ndim == 1 else self.scaled_coef_[k]
        return ImplicitFTRLProblem(
            loss=loss, update=self.update, beta=self.beta_[k],
            fit_intercept=bool(self.fit_intercept), theta=theta,
            theta_intercept=self.scaled_intercept_[k], lam=self.lambda_[k],
            gamma=self.pending_gamma_[k], sq_norm_theta=self.sq_norm_scaled_coef_[k], t=self.t_)

    def _first_scales(self, rows, y, sample_weight):
        """``(beta, G)`` of a problem's first call with a non-zero weight.
        A classifier's do not depend on the problem: its targets are +-1
        (``|y| = 1`` where ``G`` reads them) and the problems share the rows
        and their weights, so one-vs-rest computes them once a call, not
        once a problem (two scans of X each: on 20 newsgroups hashed, 20
        problems, a one-epoch fit 421-443 -> 286-300 ms).  Kept for the
        call only (``_after_call`` drops it; a failed call's dict is
        dropped whole), and only for the same rows and weights."""
        shared = self.__dict__.get("_shared_first_scales")
        if shared is not None and shared[0] is rows and shared[1] is sample_weight:
            return shared[2]
        beta = (self._auto_beta(rows, y, sample_weight) if isinstance(self.beta, str)
                else float(self.beta))
        G = self._estimate_G(rows, y, sample_weight, beta) if self.G is None else self.G
        if not isinstance(self, BaseOnlineLinearRegressor):
            self._shared_first_scales = (rows, sample_weight, (beta, G))
        return beta, G

    def _run_epoch(self, k, rows, y, sample_weight, order):
        if np.isnan(self.lambda_[k]):
            if not np.any(sample_weight):
                return 0.0, 0.0  # nothing to learn from, G not fixed yet
            beta, G = self._first_scales(rows, y, sample_weight)
            lambda_1 = G / beta
            if not 0.0 < lambda_1 < np.inf:
                raise ValueError(
                    f"lambda_1 = G / beta = {G!r} / {beta!r} is not a positive "
                    "finite number; choose G and beta of reasonable sizes."
                )
            self.beta_[k] = beta
            self.G_[k] = G
            self.lambda_[k] = lambda_1
        problem = self._problem(k, self._make_loss())
        sum_loss, sum_weight = run_epoch(problem, *rows, y, sample_weight, order)
        if problem.wrote_nonfinite:  # see _kernel_checked_arrays
            self._kernel_nonfinite = "scaled_coef_"
        self.scaled_intercept_[k] = problem.theta_intercept
        self.intercept_[k] = problem.intercept
        self.lambda_[k] = problem.lam
        self.pending_gamma_[k] = problem.gamma
        self.sq_norm_scaled_coef_[k] = problem.sq_norm_theta
        self.cumulative_loss_[k] += sum_loss
        self.cumulative_weight_[k] += sum_weight
        return sum_loss, sum_weight

    def _check_finite_state(self, when):
        """The shared check exempts G_ and lambda_ (NaN until G is fixed);
        once G is fixed, lambda_ must be finite too (an infinite lambda
        would publish an all-zero coef_ that the shared check lets pass)."""
        super()._check_finite_state(when)
        # on Python floats: this runs after every epoch, and NumPy's fixed
        # cost (3 us) was a tenth of an epoch's on a small table
        if not all(math.isfinite(lam) for lam, G in zip(self.lambda_.tolist(), self.G_.tolist())
                   if not math.isnan(G)):
            raise ValueError(
                f"Floating-point overflow in {when}: lambda_ holds non-finite "
                "values. The estimator was left as it was before this call. "
                "Scaling the input or a larger beta might help."
            )

    def _after_call(self):
        self.__dict__.pop("_shared_first_scales", None)
        self._update_average_loss()

    def _update_average_loss(self):
        # the problems' losses summed one after the other, as the short
        # path's kernel sums them (numpy's sum pairs them differently)
        weight = float(self.cumulative_weight_[0])
        self.average_loss_ = (sum(self.cumulative_loss_.tolist()) / weight
                              if weight > 0 else np.nan)


_DOC_UPDATE = r"""
    Generalized implicit FTRL (Chen & Orabona, 2023, Algorithm 1) with the
    regulariser :math:`\psi_t(w) = \frac{\lambda_t}{2}\|w\|^2`: with
    :math:`\theta_1 = 0`, round :math:`t` predicts with
    :math:`w_t = \theta_t / \lambda_t`, pays :math:`\ell_t(w_t)`, takes
    :math:`g_t \in \partial\ell_t(w_t)`, picks :math:`z_t` and sets
    :math:`\theta_{t+1} = \theta_t - z_t`.  Here
    :math:`\ell_t(w) = h_t\,\ell(y_t, \langle w, s_t\rangle)` with
    :math:`s_t` the row (plus a constant-1 coordinate for the intercept) and
    :math:`h_t` its sample weight.  ``update`` picks :math:`z_t`:

    * ``"linear"``: :math:`z_t = g_t` (FTRL on linearised losses);
    * ``"truncated"``: :math:`z_t = \min(1, \lambda_t\ell_t(w_t)/\|g_t\|^2)\,g_t`
      (aProx on the truncated linear model, Corollary 6.2);
    * ``"twostep"``: :math:`z_t = \nabla\ell_t(w_t - g_t/\lambda_t)`, a second
      gradient at a look-ahead point (Mirror-Prox-like, section 5);
    * ``"proximal"``: :math:`\theta_{t+1} = \lambda_t\,
      \mathrm{Prox}_{\ell_t/\lambda_t}(w_t)`, i.e. the implicit update (eq. 7).

    The proximal step uses the loss layer's closed forms (hinge, absolute,
    squared, epsilon-insensitive, Huber) or, for the logistic loss, its
    safeguarded one-dimensional Newton solve, exact to round-off.

    :math:`\lambda_t` follows Corollary 4.3, two steps behind:
    :math:`\lambda_1 = \lambda_2 = G/\beta`,
    :math:`\lambda_{t+1} = \lambda_t + \gamma_{t-1}/\beta^2` with
    :math:`\gamma_t = \max\big(0,\ \ell_t(w_t) - \ell_t(w_{t+1}) -
    \frac{\lambda_t}{2}\|w_{t+1} - w_t\|^2\big)` (clipped at 0 so that
    :math:`\lambda` never decreases).  A step costs O(nnz of the row):
    :math:`\theta` changes only on the row's support, a weight is read as
    :math:`\theta_j/\lambda` when its feature is touched, and
    :math:`\|w_{t+1} - w_t\|^2` comes from a running :math:`\|\theta\|^2`.
"""

_DOC_PARAMS = """
    update : {"proximal", "truncated", "twostep", "linear"}, default="proximal"
        The choice of z_t (see above).
    beta : float or "auto", default="auto"
        The one hyper-parameter: lambda_1 = G / beta and lambda grows by
        gamma / beta^2.  Large beta means long steps; the implicit updates
        ("proximal", "truncated") tolerate a beta that is far too large,
        "linear" does not.  "auto" (the default) resolves it from the first
        call with a non-zero weight, like ``G``, as
        ``c * target scale / row scale``: the weighted root mean square of
        the row norms ``||s_i||`` (intercept included) and, for a regressor,
        of the target (1 for a classifier); c = 20 for a classifier (text
        with rows of norm 1: beta = 14) and 2 for a regressor.  The model is
        then the same up to scale when X or y are rescaled (the SGD
        estimators' defaults are not), and one value serves text and
        standardised tables.  The value in use is ``beta_``, fixed for the
        life of the model.
    G : float or None, default=None
        Bound on the gradient norms ||g_t||.  None: estimated once, from the
        first call to ``fit`` / ``partial_fit`` that has a row of non-zero
        weight, before its first step, as ``max_i h_i L ||s_i||`` over that
        call's rows (``s_i`` the row plus the constant 1 of the intercept,
        ``h_i`` the sample weight, ``L = sup_p |l'(y_i, p)|``: 1 for hinge,
        log, absolute and epsilon-insensitive losses, ``epsilon`` for Huber;
        for the squared error, whose derivative ``p - y`` has no bound,
        ``L = |y_i| + beta ||s_i||``, its bound on the ball ``||w|| <= beta``).
        For the squared error this makes ``lambda >= h_i ||s_i||^2``, the
        curvature of every row's loss, so no step overshoots its target.
        The estimate is accumulated in float64 whatever the dtype of X.  It
        is then fixed (``G_``) for the life of the model: later chunks,
        epochs and warm starts do not change it.  If the estimate is 0 (only
        zero rows), 1 is used.
"""

_DOC_PARAMS_TAIL = """    fit_intercept : bool, default=True
        Learn an intercept, as the weight of a constant-1 feature.  Like every
        other coordinate it is governed by the regulariser (which is the step
        size here, not a penalty): ``intercept_ = scaled_intercept_ / lambda_``.
    max_iter : int, default=1000
        Maximum number of passes over the data in ``fit``; ``partial_fit``
        makes one pass over its chunk.
{stopping}    shuffle : bool, default=True
        Shuffle the rows before each epoch of ``fit``.
    random_state : int, RandomState instance or None, default=None
        Seed of the shuffling.
    warm_start : bool, default=False
        If True, ``fit`` continues from the fitted state (theta, lambda, the
        pending gamma, the step counter) instead of starting afresh.
"""

_DOC_EARLY_STOPPING = """    early_stopping : bool or "auto", default="auto"
        Whether ``fit`` holds out ``validation_fraction`` of the rows
        (stratified by class for a classifier), trains on the others, and
        also stops when their score (``score``: accuracy, or R^2) has not
        risen above the best so far plus ``tol`` for ``n_iter_no_change``
        consecutive epochs; ``fit`` then stops at the first of that test and
        the loss test above.  "auto": when X has more columns than rows
        (text): there a linear model separates the training rows, and the
        progressive loss, with no penalty to hold it, keeps falling long
        after the predictions have stopped improving (SMS spam through
        TfidfVectorizer: 20 epochs on the loss alone, 7 to 9 with held-out
        rows, the same test accuracy).  With ``tol=None``, ``max_iter=1``
        or in ``partial_fit`` nothing is held out.  The scores are
        ``validation_scores_``.
    validation_fraction : float, default=0.1
        The fraction of the rows held out (see ``early_stopping``).
"""

_DOC_STOP_ON_MEAN = """    tol : float or None, default=1e-3
        ``fit`` stops at the first epoch at which the mean progressive loss
        of the last ``n_iter_no_change`` epochs is not below the best such
        mean so far minus ``tol``.  (Once a regression's progressive loss
        nears the noise of its targets, it moves up and down by about
        ``tol`` from one epoch to the next, and a test of each epoch's loss
        waits for chance: on the cadata and cpusmall tables, standardised,
        it stopped after 18 and 12 epochs on average, this test after 15
        and 9, with R^2 0.2 points lower and 0.6 higher.)  None: run
        ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        Number of epochs whose mean loss the stopping test compares (see
        ``tol``); ``fit`` runs at least one more.
"""

_DOC_ATTRS = """
    scaled_coef_ : ndarray, same shape as ``coef_``
        FTRL's theta (minus the sum of the z_t), the weights times lambda:
        ``coef_ = scaled_coef_ / lambda_``.  Named ``theta_`` before 0.1.
    scaled_intercept_ : ndarray of shape (n_problems,)
        theta of the intercept coordinate (``intercept_theta_`` before 0.1).
    lambda_ : ndarray of shape (n_problems,)
        The current lambda_{t+1}, the one the next sample is predicted with.
    pending_gamma_ : ndarray of shape (n_problems,)
        The last gamma_t, which enters lambda at the next step (two steps
        behind); ``gamma_`` before 0.1.
    G_ : ndarray of shape (n_problems,)
        The gradient bound in use (``G``, or its estimate; NaN until fixed).
    beta_ : ndarray of shape (n_problems,)
        The beta in use (``beta``, or its "auto" value; NaN until fixed).
    sq_norm_scaled_coef_ : ndarray of shape (n_problems,)
        Running ||theta||^2 (intercept included); ``sq_norm_theta_`` before
        0.1.
    cumulative_loss_, cumulative_weight_ : ndarray of shape (n_problems,)
        Sum of ``h_t l_t(w_t)`` and of ``h_t`` over every step so far.
    average_loss_ : float
        The paper's metric, the averaged online loss
        ``(1/t) sum_i l_i(w_i)`` over all steps taken so far (every epoch
        and ``partial_fit`` call; weighted by the sample weights, and summed
        over the one-vs-rest problems for a multi-class classifier).
    loss_curve_ : list of float
        The same average per epoch of the last ``fit`` (or per
        ``partial_fit`` call).
    validation_scores_ : list of float
        The score of the held-out rows after each epoch of the last ``fit``,
        when it held rows out (see ``early_stopping``); absent otherwise.
    t_ : int
        Steps taken: processed samples of non-zero weight.
    n_iter_ : int
        Passes made by the last ``fit`` (1 for ``partial_fit``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Only when X has string feature names.
"""

_DOC_NOTES = """
    **Sample weights** are importance weights inside the implicit update: a
    row of weight ``h`` is the round with loss ``h * l(y, <w, s>)``, in every
    formula (``g_t``, ``z_t``, ``gamma_t``, the averaged loss and the
    estimate of ``G``).  For ``"proximal"`` that is one proximal step with
    step size ``h / lambda_t``; for the squared error its new margin
    ``p + (y - p) * k / (1 + k)``, ``k = h ||s||^2 / lambda_t``, lies between
    the old margin and the target for every ``h`` — a heavy row moves the
    prediction towards its label, never past it.  "truncated" moves the
    margin at most half-way to the target (``min(k, 1/2) (y - p)``);
    "twostep" moves it by ``k (1 - k) (y - p)``, which never crosses the
    target but goes *away* from it once ``k > 1``; "linear" moves it by
    ``k (y - p)`` and overshoots once ``k > 1``.  A
    weight of 2 is therefore *not* the same as the row twice.  Multiplying
    every weight by ``c > 0`` with ``G=None`` gives the same model
    (``G``, ``lambda`` and ``gamma`` all scale by ``c``); rows of weight 0
    are not steps.

    With the hinge loss, and the absolute and epsilon-insensitive losses,
    "truncated" and "proximal" are the same update (the truncated linear
    model is the loss itself).

    **Divergence.** The Lipschitz losses move theta by at most
    ``h L ||s||`` per step, and "proximal" and "truncated" never overshoot a
    target, so these stay finite.  The squared error with "linear" or
    "twostep" can diverge on rows whose ``h ||s||^2`` exceeds ``lambda``;
    with ``G=None`` that cannot happen on the rows of the call that fixed
    ``G`` (so never in a ``fit`` without ``warm_start``), only when ``G`` is
    given below ``beta * max h ||s||^2`` or when a later ``partial_fit``
    chunk or warm-started ``fit`` holds heavier rows.  A pass that produces a
    non-finite state raises a ``ValueError`` and leaves the model as it was.

    **fit / partial_fit.** Chunks fed to ``partial_fit`` in order give, bit
    for bit, the model of one ``fit`` epoch with ``shuffle=False`` on their
    concatenation when ``G`` is given; with ``G=None``, exactly when the
    first chunk with a non-zero weight gives the same estimate as all the
    rows (it holds a row attaining ``max_i h_i L_i ||s_i||``).  Pickling
    between chunks changes nothing.

    References
    ----------
    K. Chen, F. Orabona. Generalized Implicit Follow-The-Regularized-Leader.
    ICML 2023, PMLR 202.

    H. Asi, J. C. Duchi. Stochastic (approximate) proximal point methods:
    convergence, optimality, and adaptivity. SIAM J. Optim. 29(3), 2019.
"""


class ImplicitFTRLRegressor(_ImplicitFTRLMixin, BaseOnlineLinearRegressor):
    __doc__ = (
        """Linear regression learnt online by generalized implicit FTRL.
"""
        + _DOC_UPDATE
        + """
    Parameters
    ----------
    loss : {"squared_error", "absolute_error", "epsilon_insensitive", \
"huber"}, default="squared_error"
        ``0.5 (p - y)^2``, ``|p - y|``, ``max(0, |p - y| - epsilon)``, or
        Huber (quadratic up to ``|p - y| = epsilon``, linear beyond).
"""
        + _DOC_PARAMS
        + """    epsilon : float or None, default=None
        Of "epsilon_insensitive" (default 0.1) and "huber" (default 1.0).
"""
        + _DOC_PARAMS_TAIL.replace("{stopping}", _DOC_STOP_ON_MEAN + _DOC_EARLY_STOPPING)
        + """    verbose : int, default=0
        Print one line per epoch / ``partial_fit`` call.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : ndarray of shape (1,)
"""
        + _DOC_ATTRS
        + """
    See Also
    --------
    ImplicitFTRLClassifier : The same updates for classification.
    sklearn.linear_model.SGDRegressor : Plain SGD, sensitive to its step size.
    sklearn.linear_model.PassiveAggressiveRegressor : A special case of the
        implicit update with a constant regulariser.

    Notes
    -----"""
        + _DOC_NOTES
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn_adaprox import ImplicitFTRLRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = ImplicitFTRLRegressor(beta=100.0, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.4
    True
"""
    )

    _stop_on_mean_loss = True  # see tol

    _parameter_constraints: dict = {
        **BaseOnlineLinearRegressor._parameter_constraints,
        **_ImplicitFTRLMixin._ftrl_constraints,
        "loss": [StrOptions({"squared_error", "absolute_error",
                             "epsilon_insensitive", "huber"})],
        "epsilon": [Interval(Real, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        loss="squared_error",
        *,
        update="proximal",
        beta="auto",
        G=None,
        epsilon=None,
        fit_intercept=True,
        max_iter=1000,
        tol=1e-3,
        n_iter_no_change=5,
        early_stopping="auto",
        validation_fraction=0.1,
        shuffle=True,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.loss = loss
        self.update = update
        self.beta = beta
        self.G = G
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def partial_fit(self, X, y, sample_weight=None):
        if short_partial_fit(self, X, y, None, sample_weight):
            return self
        return super().partial_fit(X, y, sample_weight=sample_weight)

    partial_fit.__doc__ = BaseOnlineLinearRegressor.partial_fit.__doc__

    def _fit_or_partial_fit(self, X, y, sample_weight, partial):
        if self.loss == "huber" and self.epsilon == 0:
            raise ValueError("epsilon must be > 0 for the huber loss.")
        return super()._fit_or_partial_fit(X, y, sample_weight, partial)


class ImplicitFTRLClassifier(_ImplicitFTRLMixin, BaseOnlineLinearClassifier):
    __doc__ = (
        """Linear classifier learnt online by generalized implicit FTRL.
"""
        + _DOC_UPDATE
        + """
    Labels are mapped to y in {-1, +1}; more than two classes are learnt
    one-vs-rest, each problem with its own theta, lambda and gamma.

    Parameters
    ----------
    loss : {"hinge", "log_loss"}, default="hinge"
        ``max(0, 1 - y p)`` or ``log(1 + exp(-y p))``.
"""
        + _DOC_PARAMS
        + _DOC_PARAMS_TAIL.replace("{stopping}", STOP_PER_PROBLEM_DOC + _DOC_EARLY_STOPPING)
        + """    class_weight : dict, "balanced" or None, default=None
        Multiplies the sample weight of each row by the weight of its class
        (refused as "balanced" by ``partial_fit``).
    n_jobs : int or None, default=None
        Threads for the one-vs-rest problems (the kernel releases the GIL).
    verbose : int, default=0
        Print one line per epoch / ``partial_fit`` call.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    classes_ : ndarray of shape (n_classes,)
"""
        + _DOC_ATTRS
        + """
    See Also
    --------
    ImplicitFTRLRegressor : The same updates for regression.
    AdaGradClassifier : Adaptive linearised steps, l1 and group penalties.
    sklearn.linear_model.SGDClassifier : Plain SGD, sensitive to its step size.
    sklearn.linear_model.PassiveAggressiveClassifier : A special case of the
        implicit update with a constant regulariser.

    Notes
    -----"""
        + _DOC_NOTES
        + """
    Examples
    --------
    >>> from sklearn_adaprox import ImplicitFTRLClassifier
    >>> from sklearn_adaprox.datasets import load_a9a
    >>> X_train, y_train, X_test, y_test = load_a9a()
    >>> clf = ImplicitFTRLClassifier(beta=10.0, max_iter=1, random_state=0)
    >>> clf.fit(X_train, y_train).score(X_test, y_test) > 0.8
    True
"""
    )

    _parameter_constraints: dict = {
        **BaseOnlineLinearClassifier._parameter_constraints,
        **_ImplicitFTRLMixin._ftrl_constraints,
        "loss": [StrOptions({"hinge", "log_loss"})],
    }

    def __init__(
        self,
        loss="hinge",
        *,
        update="proximal",
        beta="auto",
        G=None,
        fit_intercept=True,
        max_iter=1000,
        tol=1e-3,
        n_iter_no_change=5,
        early_stopping="auto",
        validation_fraction=0.1,
        shuffle=True,
        random_state=None,
        warm_start=False,
        class_weight=None,
        n_jobs=None,
        verbose=0,
    ):
        self.loss = loss
        self.update = update
        self.beta = beta
        self.G = G
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if short_partial_fit(self, X, y, classes, sample_weight):
            return self
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    partial_fit.__doc__ = BaseOnlineLinearClassifier.partial_fit.__doc__

    @available_if(lambda est: est.loss == "log_loss")
    def predict_proba(self, X):
        """Logistic probabilities; one-vs-rest rows are normalised.

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
        return self._proba_from_loss(scores, self.loss)

    @available_if(lambda est: est.loss == "log_loss")
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
