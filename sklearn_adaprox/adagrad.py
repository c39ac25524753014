"""AdaGradClassifier: diagonal AdaGrad with composite (proximal) penalties."""
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils._available_if import available_if

from ._adagrad_fast import AdaGradProblem, run_epoch
from ._base import PROBABILISTIC_LOSSES, BaseOnlineLinearClassifier
from ._loss import make_loss


class AdaGradClassifier(BaseOnlineLinearClassifier):
    r"""Linear classifier trained online by diagonal AdaGrad.

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

    Parameters
    ----------
    loss : {"hinge", "log_loss", "squared_hinge", "modified_huber"}, default="hinge"
        Per-sample loss of the margin ``y (<w, x> + b)``, y in {-1, +1}.
    update : {"dual_averaging", "mirror_descent", "ftrl_proximal"}, \
            default="dual_averaging"
        The AdaGrad update rule.
    penalty : {"l2", "l1", "elasticnet"} or None, default="l2"
        Composite penalty, handled exactly by the proximal step (l1 gives
        exact zeros).
    alpha : float, default=1e-4
        Regularisation strength (scikit-learn's ``SGDClassifier`` convention).
        For ``"dual_averaging"`` and ``"mirror_descent"`` it weighs the
        penalty against the *average* loss, so the dual-averaging threshold
        grows as ``alpha * t``.  For ``"ftrl_proximal"`` it is McMahan's
        constant per-coordinate strength (not multiplied by ``t``).
    l1_ratio : float in [0, 1], default=0.15
        Elastic-net mixing; only used with ``penalty="elasticnet"``.
    eta : float, default=0.1
        Step size (AdaGrad's ``eta``, FTRL-Proximal's ``alpha``).
    delta : float, default=0.0
        Added to the root of the squared-gradient sums (``H = delta + sqrt``;
        FTRL-Proximal's ``beta``).  With ``delta=0`` the very first step on a
        coordinate has length ``eta``.
    fit_intercept : bool, default=True
        Learn an unpenalised intercept.
    max_iter : int, default=1000
        Maximum number of passes (epochs) over the data in ``fit``.
        ``partial_fit`` always makes one pass over its chunk.
    tol : float or None, default=1e-3
        ``fit`` stops when the progressive loss of an epoch has not dropped
        below the best so far minus ``tol`` for ``n_iter_no_change``
        consecutive epochs.  None: run ``max_iter`` epochs.
    n_iter_no_change : int, default=5
        See ``tol``.
    shuffle : bool, default=True
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
    classes_ : ndarray of shape (n_classes,)
    sum_gradient_ : ndarray of shape (n_problems, n_features)
        AdaGrad's ``u``: sum of the gradients.  For ``"ftrl_proximal"`` it is
        McMahan's ``z``.
    sum_sq_gradient_ : ndarray of shape (n_problems, n_features)
        Sum of the squared gradients (McMahan's ``n``).
    intercept_sum_gradient_, intercept_sum_sq_gradient_ : ndarray of shape (n_problems,)
        The same for the intercept.
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
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when X has string feature names.

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
    them is zero); ``w_i`` is exactly 0 while ``|z_i| <= lambda_1``.  It is
    *not* the dual-averaging update: dual averaging centres its quadratic at
    the origin, FTRL-Proximal at the past iterates (so without penalty it
    coincides with ``"mirror_descent"``, not with ``"dual_averaging"``), and
    dual averaging multiplies the penalty by ``t``.

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
        "update": [StrOptions({"dual_averaging", "mirror_descent", "ftrl_proximal"})],
        "penalty": [StrOptions({"l2", "l1", "elasticnet"}), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        loss="hinge",
        *,
        update="dual_averaging",
        penalty="l2",
        alpha=1e-4,
        l1_ratio=0.15,
        eta=0.1,
        delta=0.0,
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

    @available_if(lambda est: est.loss in PROBABILISTIC_LOSSES)
    def predict_proba(self, X):
        """Class probabilities (``log_loss``: logistic; ``modified_huber``:
        ``(clip(score, -1, 1) + 1) / 2``); one-vs-rest rows are normalised.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._predict_proba_from_loss(X, self.loss)

    @available_if(lambda est: est.loss in PROBABILISTIC_LOSSES)
    def predict_log_proba(self, X):
        """Logarithm of ``predict_proba``."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    # ------------------------------------------------------------------
    def _penalty_strengths(self):
        """(l1, l2) strengths of the composite penalty."""
        if self.penalty is None:
            return 0.0, 0.0
        if self.penalty == "l1":
            return float(self.alpha), 0.0
        if self.penalty == "l2":
            return 0.0, float(self.alpha)
        return self.alpha * self.l1_ratio, self.alpha * (1.0 - self.l1_ratio)

    def _init_state(self, n_problems, n_features):
        self.coef_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_ = np.zeros(n_problems, dtype=np.float64)
        self.sum_gradient_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.sum_sq_gradient_ = np.zeros((n_problems, n_features), dtype=np.float64)
        self.intercept_sum_gradient_ = np.zeros(n_problems, dtype=np.float64)
        self.intercept_sum_sq_gradient_ = np.zeros(n_problems, dtype=np.float64)

    def _run_epoch(self, k, rows, y, sample_weight, order):
        l1, l2 = self._penalty_strengths()
        problem = AdaGradProblem(
            make_loss(self.loss),
            self.update,
            self.eta,
            self.delta,
            l1,
            l2,
            self.fit_intercept,
            self.coef_[k],
            self.sum_gradient_[k],
            self.sum_sq_gradient_[k],
            self.intercept_[k],
            self.intercept_sum_gradient_[k],
            self.intercept_sum_sq_gradient_[k],
            self.t_,
        )
        X_data, X_indices, X_indptr, is_dense = rows
        result = run_epoch(
            problem, X_data, X_indices, X_indptr, is_dense, y, sample_weight, order
        )
        self.intercept_[k] = problem.intercept
        self.intercept_sum_gradient_[k] = problem.intercept_sum_grad
        self.intercept_sum_sq_gradient_[k] = problem.intercept_sum_sq_grad
        return result
