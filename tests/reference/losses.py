"""The losses of ``sklearn_adaprox._loss`` in NumPy: one transcription,
used by every reference and by ``test_loss``.

``loss`` is a name of the estimators' ``loss`` parameter (the keys of
``sklearn_adaprox._loss.LOSSES``); ``threshold`` is that of ``hinge`` and
``squared_hinge`` (1 in the estimators), ``epsilon`` that of
``epsilon_insensitive`` and ``huber``.  Functions of the margin (score) ``p``
and the target ``y`` (+-1 for the classification losses), written with NumPy
ufuncs: elementwise over arrays of any float dtype (long double included),
a NumPy scalar for scalar arguments.  The derivatives in ``p`` are the
subgradients the kernels take at a kink.
"""
import numpy as np
from scipy.special import expit

CLASSIFICATION = ("hinge", "squared_hinge", "log_loss", "modified_huber")
REGRESSION = ("squared_error", "absolute_error", "epsilon_insensitive", "huber")
# no second derivative (piecewise linear): ``second_derivative`` refuses them
NONSMOOTH = ("hinge", "absolute_error", "epsilon_insensitive")


def _scalar(a):
    return a[()] if isinstance(a, np.ndarray) else a


def value(loss, y, p, *, threshold=1.0, epsilon=None):
    """l(y, p)."""
    if loss == "hinge":
        v = np.maximum(0, threshold - y * p)
    elif loss == "squared_hinge":
        v = np.maximum(0, threshold - y * p) ** 2
    elif loss == "log_loss":
        v = np.logaddexp(0, -y * p)
    elif loss == "modified_huber":
        z = y * p
        v = np.where(z >= -1, np.maximum(0, 1 - z) ** 2, -4 * z)
    elif loss == "squared_error":
        v = 0.5 * (p - y) ** 2
    elif loss == "absolute_error":
        v = np.abs(p - y)
    elif loss == "epsilon_insensitive":
        v = np.maximum(0, np.abs(p - y) - epsilon)
    elif loss == "huber":
        r = np.abs(p - y)
        v = np.where(r <= epsilon, 0.5 * r ** 2, epsilon * r - 0.5 * epsilon ** 2)
    else:
        raise ValueError(loss)
    return _scalar(v)


def derivative(loss, y, p, *, threshold=1.0, epsilon=None):
    """d l(y, p) / d p."""
    if loss == "hinge":
        d = np.where(y * p < threshold, -y, 0 * y)
    elif loss == "squared_hinge":
        d = -2 * y * np.maximum(0, threshold - y * p)
    elif loss == "log_loss":
        d = -y * expit(-y * p)
    elif loss == "modified_huber":
        z = y * p
        d = np.where(z >= 1, 0 * y, np.where(z >= -1, -2 * y * (1 - z), -4 * y))
    elif loss == "squared_error":
        d = p - y
    elif loss == "absolute_error":
        d = np.sign(p - y)
    elif loss == "epsilon_insensitive":
        d = np.where(np.abs(p - y) > epsilon, np.sign(p - y), 0 * y)
    elif loss == "huber":
        d = np.clip(p - y, -epsilon, epsilon)
    else:
        raise ValueError(loss)
    return _scalar(d)


def second_derivative(loss, y, p, *, threshold=1.0, epsilon=None):
    """d^2 l(y, p) / d p^2, for the losses not in ``NONSMOOTH`` (0 at the
    kinks of l' but the ends of modified_huber's quadratic piece)."""
    if loss == "squared_hinge":
        s = np.where(y * p < threshold, 2 + 0 * y, 0 * y)
    elif loss == "log_loss":
        s = np.exp(-np.logaddexp(0, y * p) - np.logaddexp(0, -y * p))
    elif loss == "modified_huber":
        z = y * p
        s = np.where((z >= -1) & (z < 1), 2 + 0 * y, 0 * y)
    elif loss == "squared_error":
        s = 1 + 0 * (p - y)
    elif loss == "huber":
        s = np.where(np.abs(p - y) <= epsilon, 1 + 0 * y, 0 * y)
    else:
        raise ValueError(f"{loss}: no second derivative")
    return _scalar(s)


def kinks(loss, y, *, threshold=1.0, epsilon=None):
    """The margins p where l(y, .) is not differentiable."""
    if loss == "hinge":
        return [threshold * y]
    if loss == "absolute_error":
        return [y]
    if loss == "epsilon_insensitive":
        return [y - epsilon, y + epsilon]
    if loss in CLASSIFICATION or loss in REGRESSION:
        return []
    raise ValueError(loss)


def derivative_kinks(loss, y, *, threshold=1.0, epsilon=None):
    """The margins p where the derivative of a loss not in ``NONSMOOTH`` is
    not differentiable."""
    if loss == "squared_hinge":
        return [threshold * y]
    if loss == "modified_huber":
        return [y, -y]
    if loss == "huber":
        return [y - epsilon, y + epsilon]
    if loss in ("log_loss", "squared_error"):
        return []
    raise ValueError(f"{loss}: no second derivative")
