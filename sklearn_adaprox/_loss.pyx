"""Loss layer shared by every kernel of sklearn_adaprox.

A loss is a function ``l(y, p)`` of a label or target ``y`` and a margin
``p = <w, x> + b``.  Classification losses (``Hinge``, ``SquaredHinge``,
``Log``, ``ModifiedHuber``) take ``y`` in {-1, +1}; regression losses
(``SquaredLoss``, ``AbsoluteLoss``, ``EpsilonInsensitive``, ``Huber``) take a
real ``y``.  ``Square`` and ``LogitSquare`` (with ``Hinge`` and ``Log``) are
the surrogates of the pairwise AUC loss, applied to a score difference.  Each
loss gives its value, its derivative in ``p`` (a subgradient at kinks), its
second derivative, and an implicit step.

The implicit step is the proximal operator of the loss along the feature
direction ``s``::

    x* = argmin_x  step * l(y, <x, s>) + 0.5 * ||x - w||^2  =  w + c * s,

so it reduces to the scalar ``c`` solving ``c = -step * l'(y, p + c ||s||^2)``
with ``p = <w, s>``.  It is the update of implicit online learning (Kulis &
Bartlett, "Implicit Online Learning", ICML 2010) and of the proximal /
implicit online updates of Chen & Orabona, "Generalized Implicit
Follow-The-Regularized-Leader", ICML 2023.  Losses with a closed form use it;
``Log`` uses the safeguarded Newton solver of the base class.  Conventions:
``step <= 0`` gives ``c = 0``; ``sq_norm == 0`` gives the limit
``c = -step * l'(y, p)`` (the margin cannot move, so the fixed point is
explicit; this is also the explicit gradient step).

The kernels use the ``cdef`` methods (declared in ``_loss.pxd``, all
``noexcept nogil``); the ``py_*`` methods are thin hooks for tests.  Build a
loss by name with :func:`make_loss` (a pairwise surrogate with
:func:`make_pair_loss`).
"""
from libc.float cimport DBL_EPSILON
from libc.math cimport (INFINITY, copysign, exp, fabs, fmax, fmin, isfinite,
                        log, log1p, sqrt)

# Cap on the base-class Newton/bisection solve.  Splitting alone takes a
# double bracket to round-off in about 60 steps, so the cap is a guard.
cdef enum:
    PROX_MAX_ITER = 100


cdef inline double _split(double lo, double hi, double* shrink) noexcept nogil:
    """Bisection point of a bracket [lo, hi] of the prox root.

    The root can be many orders of magnitude below |c0| (a large
    step * sq_norm with a flat dloss at p), where halving the bracket would
    take ~log2(step * sq_norm) steps.  So while one end is still 0 we probe
    the other end times 1/2, 1/4, 1/16, 1/256, ... (the factor is squared
    each time), and once both ends are non-zero but more than a factor 4
    apart we split at their geometric mean.
    """
    cdef double mid
    if lo == 0.0 or hi == 0.0:
        mid = (lo + hi) * shrink[0]
        shrink[0] *= shrink[0]
        if mid != 0.0:
            return mid
    elif hi > 4.0 * lo > 0.0 or lo < 4.0 * hi < 0.0:
        return copysign(sqrt(fabs(lo)) * sqrt(fabs(hi)), hi)
    return lo + 0.5 * (hi - lo)


cdef class Loss:
    """Base class of the losses (abstract: use a subclass).

    ``prox_step`` settles the degenerate steps the same way for every loss
    and passes the others to ``solve_prox``: in the base class a generic
    safeguarded 1-D Newton solve that only needs ``dloss`` and ``ddloss``,
    which subclasses with a closed form override.
    """

    def __cinit__(self, *args, **kwargs):
        if type(self) is Loss:
            raise TypeError("Loss is abstract; instantiate one of its "
                            "subclasses or use make_loss(name).")

    cdef double loss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef double dloss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef void derivatives(self, double y, double p, double* d,
                          double* dd) noexcept nogil:
        d[0] = self.dloss(y, p)
        dd[0] = self.ddloss(y, p)

    cdef double prox_step(self, double y, double p, double sq_norm,
                          double step) noexcept nogil:
        """The degenerate cases of every loss, then ``solve_prox``."""
        if not step > 0.0:
            return 0.0
        if not sq_norm > 0.0:
            # The margin does not move with c, so the fixed point is explicit.
            return -step * self.dloss(y, p)
        return self.solve_prox(y, p, sq_norm, step)

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        """Root of phi(c) = c + step * dloss(y, p + c * sq_norm), for
        step > 0 and sq_norm > 0.

        phi is increasing (dloss is non-decreasing in p for a convex loss and
        sq_norm >= 0) with phi' = 1 + step * sq_norm * ddloss >= 1, so the
        root is unique.  Let c0 = -step * dloss(y, p), so phi(0) = -c0.
        The root lies between 0 and c0: if c0 > 0 then p + c0 * sq_norm >= p,
        hence dloss(y, p + c0 * sq_norm) >= dloss(y, p) and
        phi(c0) >= c0 - c0 = 0 >= -c0 = phi(0) (symmetrically if c0 < 0).
        Newton steps are kept only while they land inside the bracket and
        at least halve the step before last; otherwise the bracket is split
        (see _split), so it shrinks geometrically and the loop ends at
        round-off.
        """
        cdef double c0, lo, hi, c, c_new, f, df, move, prev_move, d, dd
        cdef double shrink = 0.5
        cdef int it
        self.derivatives(y, p, &d, &dd)
        c0 = -step * d
        if c0 == 0.0:
            return 0.0
        lo = fmin(0.0, c0)
        hi = fmax(0.0, c0)
        c = 0.0
        f = -c0                      # phi(0)
        move = INFINITY              # no step-size limit on the first steps
        prev_move = INFINITY
        for it in range(PROX_MAX_ITER):
            df = 1.0 + step * sq_norm * dd  # dd: ddloss at p + c sq_norm
            c_new = c - f / df
            # One ulp of c moves phi by df ulps: a Newton step of a couple of
            # ulps means phi is at its round-off level.
            if fabs(c_new - c) <= 2.0 * DBL_EPSILON * fabs(c):
                if lo <= c_new <= hi:
                    c = c_new
                break
            # phi is known at the bracket ends except at c0 before the first
            # step; landing there is the answer when dloss is flat at p.
            if not ((lo < c_new < hi or (it == 0 and c_new == c0))
                    and fabs(c_new - c) <= 0.5 * prev_move):
                c_new = _split(lo, hi, &shrink)
                if c_new == lo or c_new == hi:
                    break            # the bracket is one ulp wide
            prev_move = move
            move = fabs(c_new - c)
            c = c_new
            self.derivatives(y, p + c * sq_norm, &d, &dd)
            f = c + step * d
            if f == 0.0:
                break
            if f < 0.0:
                lo = c
            else:
                hi = c
            # phi(c) is c plus a term of size |c| near the root, so
            # |phi| ~ eps |c| is as small as its evaluation can resolve.
            if (hi - lo <= 2.0 * DBL_EPSILON * fmax(fabs(lo), fabs(hi))
                    or fabs(f) <= DBL_EPSILON * fabs(c)):
                break
        return c

    # -- Python hooks (tests) -------------------------------------------------

    def py_loss(self, double y, double p):
        """Loss value l(y, p)."""
        return self.loss(y, p)

    def py_dloss(self, double y, double p):
        """Derivative dl/dp (a subgradient at kinks)."""
        return self.dloss(y, p)

    def py_ddloss(self, double y, double p):
        """Second derivative d2l/dp2 (0 on flat and linear pieces)."""
        return self.ddloss(y, p)

    def py_prox_step(self, double y, double p, double sq_norm, double step):
        """Scalar c of the implicit step x* = w + c * s (see module doc)."""
        return self.prox_step(y, p, sq_norm, step)

    def py_newton_prox_step(self, double y, double p, double sq_norm,
                            double step):
        """The base-class Newton solve, even where a closed form overrides it
        (to test the solver against the closed forms)."""
        if not step > 0.0:
            return 0.0
        if not sq_norm > 0.0:
            return -step * self.dloss(y, p)
        return Loss.solve_prox(self, y, p, sq_norm, step)

    # -- pickling and repr ----------------------------------------------------
    # A loss is rebuilt from its constructor's arguments; a subclass with
    # parameters lists them, in the constructor's order, in _init_kwargs.

    def _init_kwargs(self):
        return {}

    def __reduce__(self):
        return (type(self), tuple(self._init_kwargs().values()))

    def __repr__(self):
        args = ", ".join(f"{name}={value!r}" for name, value in self._init_kwargs().items())
        return f"{type(self).__name__}({args})"


cdef inline double _check_param(name, double value, bint allow_zero) except? -1.0:
    if not isfinite(value) or value < 0.0 or (value == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}.")
    return value


# --- classification: y in {-1, +1}, z = y * p -------------------------------

cdef class Hinge(Loss):
    """Hinge loss max(0, threshold - y p); threshold=0 gives the perceptron."""
    cdef readonly double threshold

    def __init__(self, double threshold=1.0):
        self.threshold = _check_param("threshold", threshold, True)

    def _init_kwargs(self):
        return {"threshold": self.threshold}

    cdef double loss(self, double y, double p) noexcept nogil:
        return positive_part(self.threshold - y * p)

    cdef double dloss(self, double y, double p) noexcept nogil:
        return -y if y * p < self.threshold else 0.0

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double z = y * p
        if z >= self.threshold:
            return 0.0
        # Either the full step (still below the hinge) or land on the kink.
        return y * fmin(step, (self.threshold - z) / sq_norm)


cdef class SquaredHinge(Loss):
    """Squared hinge max(0, threshold - y p)^2 (no 1/2, as in scikit-learn)."""
    cdef readonly double threshold

    def __init__(self, double threshold=1.0):
        self.threshold = _check_param("threshold", threshold, True)

    def _init_kwargs(self):
        return {"threshold": self.threshold}

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double r = positive_part(self.threshold - y * p)
        return r * r

    cdef double dloss(self, double y, double p) noexcept nogil:
        return -2.0 * y * positive_part(self.threshold - y * p)

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 2.0 if y * p < self.threshold else 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double z = y * p
        if z >= self.threshold:
            return 0.0
        # u = y c solves u = 2 step (threshold - z - u sq_norm); the new
        # margin stays below the threshold, so this piece is the right one.
        return y * (2.0 * step * (self.threshold - z)
                    / (1.0 + 2.0 * step * sq_norm))


cdef class Log(Loss):
    """Logistic loss log(1 + exp(-y p)), stable for any finite margin."""

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double z = y * p
        # Only ever exponentiate a non-positive number.
        if z > 0.0:
            return log1p(exp(-z))
        return -z + log1p(exp(z))

    cdef double dloss(self, double y, double p) noexcept nogil:
        # -y * sigmoid(-z), written so that exp never overflows.
        cdef double z = y * p
        cdef double e
        if z > 0.0:
            e = exp(-z)
            return -y * e / (1.0 + e)
        return -y / (1.0 + exp(z))

    cdef double ddloss(self, double y, double p) noexcept nogil:
        # sigmoid(z) sigmoid(-z) = e / (1 + e)^2 with e = exp(-|z|).
        cdef double e = exp(-fabs(y * p))
        return e / ((1.0 + e) * (1.0 + e))

    cdef void derivatives(self, double y, double p, double* d,
                          double* dd) noexcept nogil:
        # dloss and ddloss from their one exponential, exp(-|z|): the same
        # numbers as the two methods, half the work of the Newton solve
        cdef double z = y * p
        cdef double e = exp(-fabs(z))
        d[0] = -y * e / (1.0 + e) if z > 0.0 else -y / (1.0 + e)
        dd[0] = e / ((1.0 + e) * (1.0 + e))

    # solve_prox: no closed form, the base-class Newton solve is used.


cdef class ModifiedHuber(Loss):
    """Modified Huber: max(0, 1 - z)^2 for z >= -1, -4 z below (z = y p)."""

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double z = y * p
        if z >= 1.0:
            return 0.0
        if z >= -1.0:
            return (1.0 - z) * (1.0 - z)
        return -4.0 * z

    cdef double dloss(self, double y, double p) noexcept nogil:
        cdef double z = y * p
        if z >= 1.0:
            return 0.0
        if z >= -1.0:
            return -2.0 * y * (1.0 - z)
        return -4.0 * y

    cdef double ddloss(self, double y, double p) noexcept nogil:
        cdef double z = y * p
        return 2.0 if -1.0 <= z < 1.0 else 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double z = y * p
        cdef double u
        if z >= 1.0:
            return 0.0
        # l' is monotone so the fixed point is unique: the first piece whose
        # solution lies in that piece is it.  Linear piece: u = y c = 4 step.
        u = 4.0 * step
        if z + u * sq_norm <= -1.0:
            return y * u
        # Quadratic piece: u = 2 step (1 - z - u sq_norm).
        return y * (2.0 * step * (1.0 - z) / (1.0 + 2.0 * step * sq_norm))


# --- surrogates of the pairwise AUC loss: y in {-1, +1}, z = y * p ------------
# PairwiseAUCClassifier applies them to a score difference (y = +1, p = t);
# its "hinge" and "log_loss" surrogates are Hinge and Log above.

cdef inline void _sigmoid_pair(double z, double* sig, double* one_minus) noexcept nogil:
    """sigma(z) and 1 - sigma(z) without overflow or cancellation."""
    cdef double e
    if z >= 0.0:
        e = exp(-z)
        sig[0] = 1.0 / (1.0 + e)
        one_minus[0] = e / (1.0 + e)
    else:
        e = exp(z)
        sig[0] = e / (1.0 + e)
        one_minus[0] = 1.0 / (1.0 + e)


cdef class Square(Loss):
    """Square surrogate (1 - y p)^2 of the AUC pair loss (no factor 1/2)."""

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double r = 1.0 - y * p
        return r * r

    cdef double dloss(self, double y, double p) noexcept nogil:
        return -2.0 * y * (1.0 - y * p)

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 2.0

    # solve_prox: the base-class Newton solve (the pairwise kernel takes
    # explicit steps only).


cdef class LogitSquare(Loss):
    """Non-convex surrogate (1 - sigma(y p))^2 (Sun et al. 2023, Table 3).

    Not convex: the base-class implicit step is not meaningful for it and is
    never used by the pairwise kernel.
    """

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double s, r
        _sigmoid_pair(y * p, &s, &r)
        return r * r

    cdef double dloss(self, double y, double p) noexcept nogil:
        # d/dp (1 - sigma(z))^2 = -2 y sigma(z) (1 - sigma(z))^2, z = y p
        cdef double s, r
        _sigmoid_pair(y * p, &s, &r)
        return -2.0 * y * s * r * r

    cdef double ddloss(self, double y, double p) noexcept nogil:
        cdef double s, r
        _sigmoid_pair(y * p, &s, &r)
        return -2.0 * s * r * r * (r - 2.0 * s)


# --- regression: real y, r = p - y -------------------------------------------

cdef class SquaredLoss(Loss):
    """Squared error 0.5 (p - y)^2."""

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double r = p - y
        return 0.5 * r * r

    cdef double dloss(self, double y, double p) noexcept nogil:
        return p - y

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 1.0

    cdef double prox_step(self, double y, double p, double sq_norm,
                          double step) noexcept nogil:
        # Overrides prox_step itself: the formula also covers sq_norm <= 0
        # (giving -step (p - y)), so only the step needs a guard.
        if not step > 0.0:
            return 0.0
        return -(p - y) * step / (1.0 + step * positive_part(sq_norm))


cdef class AbsoluteLoss(Loss):
    """Absolute error |p - y| (subgradient 0 at p == y)."""

    def __init__(self):
        pass

    cdef double loss(self, double y, double p) noexcept nogil:
        return fabs(p - y)

    cdef double dloss(self, double y, double p) noexcept nogil:
        cdef double r = p - y
        if r > 0.0:
            return 1.0
        if r < 0.0:
            return -1.0
        return 0.0

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double r = p - y
        if r == 0.0:
            return 0.0
        # Soft-thresholding of the residual: full step or land on y.
        return -copysign(fmin(step, fabs(r) / sq_norm), r)


cdef class EpsilonInsensitive(Loss):
    """Epsilon-insensitive loss max(0, |p - y| - epsilon)."""
    cdef readonly double epsilon

    def __init__(self, double epsilon=0.1):
        self.epsilon = _check_param("epsilon", epsilon, True)

    def _init_kwargs(self):
        return {"epsilon": self.epsilon}

    cdef double loss(self, double y, double p) noexcept nogil:
        return positive_part(fabs(p - y) - self.epsilon)

    cdef double dloss(self, double y, double p) noexcept nogil:
        cdef double r = p - y
        if r > self.epsilon:
            return 1.0
        if r < -self.epsilon:
            return -1.0
        return 0.0

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double r = p - y
        cdef double excess = fabs(r) - self.epsilon
        if excess <= 0.0:
            return 0.0
        # Full step, or land on the edge of the insensitive tube.
        return -copysign(fmin(step, excess / sq_norm), r)


cdef class Huber(Loss):
    """Huber loss: 0.5 r^2 for |r| <= epsilon, epsilon |r| - 0.5 epsilon^2
    beyond (r = p - y)."""
    cdef readonly double epsilon

    def __init__(self, double epsilon=1.0):
        self.epsilon = _check_param("epsilon", epsilon, False)

    def _init_kwargs(self):
        return {"epsilon": self.epsilon}

    cdef double loss(self, double y, double p) noexcept nogil:
        cdef double r = fabs(p - y)
        if r <= self.epsilon:
            return 0.5 * r * r
        return self.epsilon * r - 0.5 * self.epsilon * self.epsilon

    cdef double dloss(self, double y, double p) noexcept nogil:
        cdef double r = p - y
        if r > self.epsilon:
            return self.epsilon
        if r < -self.epsilon:
            return -self.epsilon
        return r

    cdef double ddloss(self, double y, double p) noexcept nogil:
        return 1.0 if fabs(p - y) <= self.epsilon else 0.0

    cdef double solve_prox(self, double y, double p, double sq_norm,
                           double step) noexcept nogil:
        cdef double r = p - y
        cdef double denom
        # Quadratic piece first (new residual r / (1 + step sq_norm)); if it
        # leaves the piece, the unique fixed point is on the clipped piece.
        denom = 1.0 + step * sq_norm
        if fabs(r) <= self.epsilon * denom:
            return -r * step / denom
        return -copysign(step * self.epsilon, r)


# --- multinomial: class scores p_0..p_{K-1}, y a class index ----------------

cdef class MultinomialLoss:
    """Base class of the losses of one weight vector per class (abstract).

    ``loss_gradient`` returns the loss of the score vector ``p`` for class
    ``y`` and writes its (sub)gradient in ``p`` into ``grad``; the gradient in
    the weights of class ``k`` is then ``grad[k] * x``.
    """

    def __cinit__(self, *args, **kwargs):
        if type(self) is MultinomialLoss:
            raise TypeError("MultinomialLoss is abstract; use make_multinomial_loss.")

    cdef double loss_gradient(self, const double* p, Py_ssize_t n_classes,
                              Py_ssize_t y, double* grad) noexcept nogil:
        return 0.0

    def py_loss_gradient(self, const double[::1] p, Py_ssize_t y):
        """(loss, gradient) of the scores p for class index y."""
        import numpy as np
        grad = np.zeros(p.shape[0])
        cdef double[::1] g = grad
        value = self.loss_gradient(&p[0], p.shape[0], y, &g[0])
        return value, grad

    def __reduce__(self):
        return (type(self), ())

    def __repr__(self):
        return f"{type(self).__name__}()"


cdef class SoftmaxCrossEntropy(MultinomialLoss):
    """-log softmax(p)_y; gradient softmax(p) - e_y (stable: shifted by max p)."""

    cdef double loss_gradient(self, const double* p, Py_ssize_t n_classes,
                              Py_ssize_t y, double* grad) noexcept nogil:
        cdef Py_ssize_t k
        cdef double top = p[0], total = 0.0
        for k in range(1, n_classes):
            top = fmax(top, p[k])
        for k in range(n_classes):
            grad[k] = exp(p[k] - top)
            total += grad[k]
        for k in range(n_classes):
            grad[k] /= total
        grad[y] -= 1.0
        return top + log(total) - p[y]


cdef class MulticlassHinge(MultinomialLoss):
    """max(0, 1 + max_{k != y} p_k - p_y), the multi-class hinge of Crammer &
    Singer used in AdaGrad's MNIST experiment.  Subgradient: +1 on the best
    wrong class (the first one on ties), -1 on y, while the loss is positive.
    """

    cdef double loss_gradient(self, const double* p, Py_ssize_t n_classes,
                              Py_ssize_t y, double* grad) noexcept nogil:
        cdef Py_ssize_t k, rival = -1
        cdef double value
        for k in range(n_classes):
            grad[k] = 0.0
            if k != y and (rival < 0 or p[k] > p[rival]):
                rival = k
        value = 1.0 + p[rival] - p[y]
        if value <= 0.0:
            return 0.0
        grad[rival] = 1.0
        grad[y] = -1.0
        return value


MULTINOMIAL_LOSSES = {"log_loss": SoftmaxCrossEntropy, "hinge": MulticlassHinge}


def make_multinomial_loss(name):
    """Build the multinomial loss registered in ``MULTINOMIAL_LOSSES``."""
    if not isinstance(name, str) or name not in MULTINOMIAL_LOSSES:
        raise ValueError(f"Unknown multinomial loss {name!r}; valid names are "
                         f"{', '.join(repr(k) for k in MULTINOMIAL_LOSSES)}.")
    return MULTINOMIAL_LOSSES[name]()


LOSSES = {
    "hinge": Hinge,
    "squared_hinge": SquaredHinge,
    "log_loss": Log,
    "modified_huber": ModifiedHuber,
    "squared_error": SquaredLoss,
    "absolute_error": AbsoluteLoss,
    "epsilon_insensitive": EpsilonInsensitive,
    "huber": Huber,
}

_EPSILON_DEFAULTS = {"epsilon_insensitive": 0.1, "huber": 1.0}


def make_loss(name, *, epsilon=None):
    """Build the loss registered in ``LOSSES`` under ``name``.

    ``epsilon`` parametrises "epsilon_insensitive" (default 0.1) and "huber"
    (default 1.0); it is ignored by the other losses, so an estimator can
    always pass its ``epsilon`` parameter.
    """
    if not isinstance(name, str) or name not in LOSSES:
        raise ValueError(f"Unknown loss {name!r}; valid names are "
                         f"{', '.join(repr(k) for k in LOSSES)}.")
    if name in _EPSILON_DEFAULTS:
        if epsilon is None:
            epsilon = _EPSILON_DEFAULTS[name]
        return LOSSES[name](epsilon)
    return LOSSES[name]()


# Surrogates l(t) = loss(y=1, p=t) of the score difference t of a pair.
PAIR_LOSSES = {
    "hinge": Hinge,                # (1 - t)_+
    "log_loss": Log,               # log(1 + exp(-t))
    "square": Square,              # (1 - t)^2
    "logit_square": LogitSquare,   # (1 - sigma(t))^2
}


def make_pair_loss(name):
    """Build the pairwise surrogate registered in ``PAIR_LOSSES``."""
    if not isinstance(name, str) or name not in PAIR_LOSSES:
        raise ValueError(f"Unknown pairwise loss {name!r}; valid names are "
                         f"{', '.join(repr(k) for k in PAIR_LOSSES)}.")
    return PAIR_LOSSES[name]()
