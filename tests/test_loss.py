"""Behaviour of the shared loss layer (sklearn_adaprox._loss).

Every expectation comes from the analytic formulas written in NumPy
(tests/reference/losses.py) or from the definition of the implicit (proximal)
step, never from numbers computed with the module itself.
"""
import functools
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from reference import losses
from sklearn_adaprox._loss import (
    LOSSES,
    AbsoluteLoss,
    EpsilonInsensitive,
    Hinge,
    Huber,
    Log,
    Loss,
    ModifiedHuber,
    SquaredHinge,
    SquaredLoss,
    make_loss,
)


# --- analytic reference: value, derivative in p, second derivative ----------
# The NumPy transcription of the losses that the references of the other
# tests use too (tests/reference/losses.py).

_NAMES = {cls: name for name, cls in LOSSES.items()}


def _ref(loss):
    """(value, derivative, second derivative, kinks of l, kinks of l')."""
    name = _NAMES[type(loss)]
    params = {key: getattr(loss, key) for key in ("threshold", "epsilon")
              if hasattr(loss, key)}
    smooth = name not in losses.NONSMOOTH
    return (functools.partial(losses.value, name, **params),
            functools.partial(losses.derivative, name, **params),
            functools.partial(losses.second_derivative, name, **params) if smooth else None,
            functools.partial(losses.kinks, name, **params),
            functools.partial(losses.derivative_kinks, name, **params) if smooth else None)


CLASSIFICATION = (Hinge, SquaredHinge, Log, ModifiedHuber)

ALL_LOSSES = [
    Hinge(), Hinge(threshold=0.0), SquaredHinge(), SquaredHinge(threshold=0.5),
    Log(), ModifiedHuber(), SquaredLoss(), AbsoluteLoss(),
    EpsilonInsensitive(), EpsilonInsensitive(epsilon=0.0), Huber(),
    Huber(epsilon=0.25),
]
SMOOTH = [loss for loss in ALL_LOSSES if _ref(loss)[2] is not None]
NONSMOOTH = [loss for loss in ALL_LOSSES if _ref(loss)[2] is None]


def _vec(method):
    return np.vectorize(method, otypes=[np.float64])


def _grid(loss):
    """(y, p) pairs covering every piece, with |p| up to 1e3."""
    if isinstance(loss, CLASSIFICATION):
        ys = np.array([-1.0, 1.0])
    else:
        ys = np.array([-3.7, -1.0, 0.0, 0.4, 2.5])
    ps = np.concatenate([np.linspace(-4.0, 4.0, 321), [-1e3, -50.0, 50.0, 1e3]])
    y, p = np.meshgrid(ys, ps)
    return y.ravel(), p.ravel()


def _away_from(kinks, y, p, dist):
    keep = np.ones(p.shape, dtype=bool)
    for i in range(p.size):
        for k in kinks(y[i]):
            keep[i] &= abs(p[i] - k) > dist[i]
    return keep


# --- value and derivatives ---------------------------------------------------

@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_loss_value_matches_formula(loss):
    y, p = _grid(loss)
    value = _vec(loss.py_loss)(y, p)
    np.testing.assert_allclose(value, _ref(loss)[0](y, p), rtol=1e-12,
                               atol=1e-300)
    assert np.all(value >= 0)


@pytest.mark.parametrize("p", [1e3, 1e30, 1e300])
def test_log_loss_extreme_margins(p):
    loss = Log()
    value, deriv, second = _ref(loss)[:3]
    for y in (-1.0, 1.0):
        for q in (-p, p):
            got = (loss.py_loss(y, q), loss.py_dloss(y, q), loss.py_ddloss(y, q))
            assert np.all(np.isfinite(got))
            # the wrong side costs |p|, the right side ~exp(-|p|)
            np.testing.assert_allclose(got[0], value(y, q), rtol=1e-12,
                                       atol=1e-300)
            np.testing.assert_allclose(got[1], deriv(y, q), rtol=1e-12,
                                       atol=1e-300)
            np.testing.assert_allclose(got[2], second(y, q), rtol=1e-12,
                                       atol=1e-300)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_dloss_matches_formula_and_finite_differences(loss):
    y, p = _grid(loss)
    deriv = _vec(loss.py_dloss)(y, p)
    np.testing.assert_allclose(deriv, _ref(loss)[1](y, p), rtol=1e-12,
                               atol=1e-300)
    h = 1e-6 * np.maximum(1.0, np.abs(p))
    keep = _away_from(_ref(loss)[3], y, p, 10 * h)
    value = _vec(loss.py_loss)
    fd = (value(y, p + h) - value(y, p - h)) / (2 * h)
    np.testing.assert_allclose(deriv[keep], fd[keep], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("loss", SMOOTH, ids=repr)
def test_ddloss_matches_formula_and_finite_differences(loss):
    y, p = _grid(loss)
    second = _vec(loss.py_ddloss)(y, p)
    np.testing.assert_allclose(second, _ref(loss)[2](y, p), rtol=1e-12,
                               atol=1e-300)
    h = 1e-6 * np.maximum(1.0, np.abs(p))
    keep = _away_from(_ref(loss)[4], y, p, 10 * h)
    deriv = _vec(loss.py_dloss)
    fd = (deriv(y, p + h) - deriv(y, p - h)) / (2 * h)
    np.testing.assert_allclose(second[keep], fd[keep], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("loss", NONSMOOTH, ids=repr)
def test_nonsmooth_ddloss_is_zero(loss):
    y, p = _grid(loss)
    assert np.all(_vec(loss.py_ddloss)(y, p) == 0.0)


# --- implicit (proximal) step -------------------------------------------------

N_DRAWS = 2000


def _draws(loss, seed):
    rng = np.random.default_rng(seed)
    if isinstance(loss, CLASSIFICATION):
        y = rng.choice([-1.0, 1.0], N_DRAWS)
    else:
        y = rng.normal(0.0, 3.0, N_DRAWS)
    # margins from ~0.01 to a few hundred, so every piece is reached
    p = rng.normal(0.0, 2.0, N_DRAWS) * 10.0 ** rng.uniform(-2, 2, N_DRAWS)
    sq_norm = 10.0 ** rng.uniform(-3, 3, N_DRAWS)
    step = 10.0 ** rng.uniform(-4, 4, N_DRAWS)
    return y, p, sq_norm, step


def _prox_all(loss, seed):
    y, p, sq_norm, step = _draws(loss, seed)
    c = _vec(loss.py_prox_step)(y, p, sq_norm, step)
    assert np.all(np.isfinite(c))
    return y, p, sq_norm, step, c


@pytest.mark.parametrize("loss", SMOOTH, ids=repr)
def test_prox_step_fixed_point_smooth(loss):
    y, p, sq_norm, step, c = _prox_all(loss, seed=0)
    _, deriv, second = _ref(loss)[:3]
    m = p + c * sq_norm
    residual = np.abs(c + step * deriv(y, m))
    # The margin p + c * sq_norm is only known to ~eps (|p| + |c| sq_norm + |y|)
    # in floating point, and step * l' moves by step * l'' times that: the
    # optimality residual of even the correctly rounded c carries that term.
    rounding = step * second(y, m) * (np.abs(p) + np.abs(c) * sq_norm
                                      + np.abs(y))
    bound = 1e-12 * (np.maximum(1.0, np.abs(c)) + rounding)
    assert np.all(residual <= bound), np.max(residual / bound)


@pytest.mark.parametrize("loss", NONSMOOTH, ids=repr)
def test_prox_step_subgradient_inclusion_nonsmooth(loss):
    y, p, sq_norm, step, c = _prox_all(loss, seed=1)
    deriv = _ref(loss)[1]
    m = p + c * sq_norm
    # -c/step must be a subgradient at m.  Up to a 1e-12 slack on the margin
    # at a kink: l' is non-decreasing, so the subgradients of the points of
    # [m - delta, m + delta] fill [l'(m - delta), l'(m + delta)].
    delta = 1e-12 * (1.0 + np.abs(p) + np.abs(c) * sq_norm + np.abs(y))
    g = -c / step
    assert np.all(g >= deriv(y, m - delta) - 1e-12)
    assert np.all(g <= deriv(y, m + delta) + 1e-12)


def _regimes(loss, y, p, sq_norm, step, c):
    """Which piece of the closed form each solution is in (coverage check)."""
    m = p + c * sq_norm
    if isinstance(loss, (Hinge, AbsoluteLoss, EpsilonInsensitive)):
        return np.where(c == 0, "zero",
                        np.where(np.abs(c) == step, "full", "kink"))
    if isinstance(loss, SquaredHinge):
        return np.where(c == 0, "zero", "active")
    if isinstance(loss, ModifiedHuber):
        return np.where(c == 0, "zero",
                        np.where(y * m < -1, "linear", "quadratic"))
    if isinstance(loss, Huber):
        return np.where(np.abs(m - y) > loss.epsilon, "linear", "quadratic")
    return np.full(c.shape, "smooth")


EXPECTED_REGIMES = {
    Hinge: {"zero", "full", "kink"},
    AbsoluteLoss: {"full", "kink"},
    EpsilonInsensitive: {"zero", "full", "kink"},
    SquaredHinge: {"zero", "active"},
    ModifiedHuber: {"zero", "linear", "quadratic"},
    Huber: {"linear", "quadratic"},
    Log: {"smooth"},
    SquaredLoss: {"smooth"},
}


def _value_mp(loss, y, m):
    """The loss in mpmath arithmetic (same formulas as ``_ref``)."""
    mp = pytest.importorskip("mpmath").mp
    zero = mp.mpf(0)
    if isinstance(loss, Hinge):
        return max(zero, loss.threshold - y * m)
    if isinstance(loss, SquaredHinge):
        return max(zero, loss.threshold - y * m) ** 2
    if isinstance(loss, Log):
        z = y * m
        return mp.log1p(mp.exp(-z)) if z > 0 else -z + mp.log1p(mp.exp(z))
    if isinstance(loss, ModifiedHuber):
        z = y * m
        return max(zero, 1 - z) ** 2 if z >= -1 else -4 * z
    if isinstance(loss, SquaredLoss):
        return (m - y) ** 2 / 2
    if isinstance(loss, AbsoluteLoss):
        return abs(m - y)
    if isinstance(loss, EpsilonInsensitive):
        return max(zero, abs(m - y) - loss.epsilon)
    if isinstance(loss, Huber):
        r, e = abs(m - y), mp.mpf(loss.epsilon)
        return r ** 2 / 2 if r <= e else e * r - e ** 2 / 2
    raise AssertionError(loss)


N_BRUTE_FORCE = N_DRAWS


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_prox_step_matches_brute_force_minimisation(loss):
    y, p, sq_norm, step, c = _prox_all(loss, seed=2)
    # the draws reach every piece of the closed form
    regimes = _regimes(loss, y, p, sq_norm, step, c)
    expected = EXPECTED_REGIMES[type(loss)]
    if isinstance(loss, EpsilonInsensitive) and loss.epsilon == 0:
        expected = EXPECTED_REGIMES[AbsoluteLoss]
    assert set(regimes) == expected
    for regime in expected:
        assert np.count_nonzero(regimes == regime) >= 20, regime

    mpmath = pytest.importorskip("mpmath")

    c0 = -step * _ref(loss)[1](y, p)
    for i in range(N_BRUTE_FORCE):
        if c0[i] == 0:
            # already optimal: l'(p) = 0
            assert c[i] == 0
            continue
        # The shift c * sq_norm can be many orders below |p|: work with
        # enough digits that p + c * sq_norm keeps 30 of them.
        scale = min(abs(c[i]), abs(c0[i])) * sq_norm[i]
        digits = 30 + max(0, int(np.log10((1 + abs(p[i]) + abs(y[i])) / scale)))
        with mpmath.workdps(digits):
            mpf = mpmath.mpf
            yi, pi, qi, si = mpf(y[i]), mpf(p[i]), mpf(sq_norm[i]), mpf(step[i])

            def h(ci):
                # prox objective step * l(y, p + c sq_norm) + 0.5 c^2 sq_norm
                return si * _value_mp(loss, yi, pi + ci * qi) + ci * ci * qi / 2

            h_c = h(mpf(c[i]))

            # Minimise over c = t * c0: the minimiser lies in [0, c0], the
            # search interval is wider so as not to assume it.  The bounded
            # method's tolerance is relative to t, so a tiny t is resolved.
            # Brent sees doubles: subtracting the constant h_c keeps all
            # their digits for the variation of h near the minimum, and
            # dividing by c0^2 sq_norm (h'' >= sq_norm) keeps them in range.
            unit = mpf(c0[i]) ** 2 * qi
            res = minimize_scalar(
                lambda t: float((h(mpf(t) * mpf(c0[i])) - h_c) / unit),
                bounds=(-0.25, 1.25), method="bounded",
                options={"xatol": 1e-300, "maxiter": 2000})
            c_bf = res.x * c0[i]
            assert abs(c[i] - c_bf) <= 1e-7 * abs(c[i]), (i, c[i], c_bf)

            # No nearby point does better, up to what h changes over the
            # rounding of c to a double.
            h_tol = max(abs(h(mpf(c[i]) * (1 + mpf(d))) - h_c)
                        for d in (1e-13, -1e-13))
            for factor in (1 - 1e-4, 1 + 1e-4, 1 - 1e-7, 1 + 1e-7):
                assert h_c <= h(mpf(c[i]) * mpf(factor)) + h_tol, i
            assert res.fun * unit >= -h_tol, i


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_newton_solver_matches_closed_forms(loss):
    # The generic safeguarded Newton solve of the base class (used by Log)
    # must find the same root as every closed form, kinks included.
    y, p, sq_norm, step, c = _prox_all(loss, seed=3)
    newton = _vec(loss.py_newton_prox_step)(y, p, sq_norm, step)
    assert np.all(np.abs(newton - c) <= 1e-12 * np.abs(c))


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_prox_step_zero_step_and_zero_norm(loss):
    y, p = _grid(loss)
    for i in range(p.size):
        assert loss.py_prox_step(y[i], p[i], 2.0, 0.0) == 0.0
        assert loss.py_prox_step(y[i], p[i], 0.0, 0.0) == 0.0
        for step in (1e-3, 0.7, 1e3):
            # sq_norm = 0: the margin cannot move, c = -step * l'(p)
            assert (loss.py_prox_step(y[i], p[i], 0.0, step)
                    == -step * loss.py_dloss(y[i], p[i]))


@pytest.mark.parametrize("p", [-1e300, -1e3, 1e3, 1e300])
def test_log_prox_step_extreme_margins(p):
    loss = Log()
    _, deriv, second = _ref(loss)[:3]
    for y in (-1.0, 1.0):
        for sq_norm in (1e-3, 1.0, 1e3):
            for step in (1e-4, 1.0, 1e4):
                c = loss.py_prox_step(y, p, sq_norm, step)
                assert np.isfinite(c)
                assert 0.0 <= y * c <= step      # between 0 and c0
                m = p + c * sq_norm
                rounding = step * second(y, m) * (abs(p) + abs(c) * sq_norm)
                assert abs(c + step * deriv(y, m)) <= 1e-12 * (
                    max(1.0, abs(c)) + rounding)


# --- pickling, repr, factory ----------------------------------------------------

@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip(loss, protocol):
    clone = pickle.loads(pickle.dumps(loss, protocol=protocol))
    assert type(clone) is type(loss)
    assert repr(clone) == repr(loss)
    for param in ("threshold", "epsilon"):
        assert getattr(clone, param, None) == getattr(loss, param, None)
    y, p = _grid(loss)
    for i in range(0, p.size, 7):
        for method in ("py_loss", "py_dloss", "py_ddloss"):
            assert (getattr(clone, method)(y[i], p[i])
                    == getattr(loss, method)(y[i], p[i]))
        assert (clone.py_prox_step(y[i], p[i], 0.3, 2.0)
                == loss.py_prox_step(y[i], p[i], 0.3, 2.0))


def test_pickle_keeps_parameters():
    for loss in (Hinge(threshold=0.25), SquaredHinge(threshold=2.0),
                 EpsilonInsensitive(epsilon=0.7), Huber(epsilon=3.5)):
        clone = pickle.loads(pickle.dumps(loss))
        assert repr(clone) == repr(loss)
        assert clone.py_loss(1.0, 0.1) == loss.py_loss(1.0, 0.1)


def test_repr_is_readable():
    assert repr(Hinge(threshold=0.5)) == "Hinge(threshold=0.5)"
    assert repr(Huber()) == "Huber(epsilon=1.0)"
    assert repr(EpsilonInsensitive()) == "EpsilonInsensitive(epsilon=0.1)"
    assert repr(Log()) == "Log()"


def test_make_loss_builds_every_registered_loss():
    expected = {
        "hinge": Hinge, "squared_hinge": SquaredHinge, "log_loss": Log,
        "modified_huber": ModifiedHuber, "squared_error": SquaredLoss,
        "absolute_error": AbsoluteLoss,
        "epsilon_insensitive": EpsilonInsensitive, "huber": Huber,
    }
    assert LOSSES == expected
    for name, cls in expected.items():
        assert type(make_loss(name)) is cls
    assert make_loss("epsilon_insensitive").epsilon == 0.1
    assert make_loss("huber").epsilon == 1.0
    assert make_loss("epsilon_insensitive", epsilon=0.3).epsilon == 0.3
    assert make_loss("huber", epsilon=2.0).epsilon == 2.0
    assert make_loss("hinge").threshold == 1.0
    # epsilon is ignored by the losses that have none
    assert type(make_loss("squared_error", epsilon=0.5)) is SquaredLoss


@pytest.mark.parametrize("name", ["hinge_loss", "log", "", None, 3])
def test_make_loss_unknown_name(name):
    with pytest.raises(ValueError) as excinfo:
        make_loss(name)
    for valid in LOSSES:
        assert repr(valid) in str(excinfo.value)


def test_invalid_parameters():
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonInsensitive(epsilon=-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        Huber(epsilon=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        make_loss("huber", epsilon=float("nan"))
    with pytest.raises(ValueError, match="threshold"):
        Hinge(threshold=-1.0)


def test_base_class_is_abstract():
    with pytest.raises(TypeError):
        Loss()
