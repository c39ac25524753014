"""The exact diagonal-metric solvers of ``sklearn_adaprox._prox``.

Each solver is checked against its optimality (KKT) conditions, against the
independent NumPy solvers of ``reference.prox`` (other algorithms: bisection
on the threshold, brentq for the root, the dual route for l-infinity) and
against random feasible perturbations of its answer.
"""
import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from reference import prox as ref
from sklearn_adaprox._prox import (
    py_group_l2_prox,
    py_l1_ball_solve,
    py_linf_prox,
    py_weighted_l1_projection,
)

SIZES = [1, 2, 10, 200]
TOL = 1e-9


def _problems(n, seed):
    """(v, D) pairs of size n: log-normal D with some absent coordinates
    (D_i = 0, v_i = 0), zero entries of v, all-equal D, tied ratios."""
    rng = np.random.RandomState(seed)
    out = []
    v = rng.randn(n) * rng.choice([0.1, 1.0, 10.0])
    D = np.exp(rng.randn(n))
    out.append((v.copy(), D.copy()))
    absent = rng.rand(n) < 0.3
    v2, D2 = v.copy(), D.copy()
    D2[absent] = 0.0
    v2[absent] = 0.0
    v2[rng.rand(n) < 0.2] = 0.0  # present coordinates with v_i = 0
    out.append((v2, D2))
    out.append((v.copy(), np.full(n, np.exp(rng.randn()))))  # all-equal D
    # tied ratios |v_i| / D_i and tied |v_i|
    v4 = np.repeat(rng.choice([-1.0, 1.0], n) * 2.0, 1)
    D4 = rng.choice([0.5, 2.0], n)
    out.append((v4 * D4, D4))
    out.append((v4, D4))
    return out


def _scale(v, D):
    present = D > 0
    if not present.any():
        return 1.0
    return max(1.0, np.abs(v[present]).max(), np.abs(v[present] / D[present]).max())


def _at_boundary(value, threshold):
    return abs(value - threshold) <= 1e-12 * max(abs(value), abs(threshold))


def _cases():
    for n, seed in itertools.product(SIZES, range(4)):
        for k, (v, D) in enumerate(_problems(n, 100 * n + seed)):
            yield pytest.param(v, D, id=f"n{n}-s{seed}-{k}")


CASES = list(_cases())
FRACTIONS = [0.0, 0.05, 0.3, 0.7, 0.999, 1.0, 1.5]


def _random_perturbations(x, rng, count=30):
    for _ in range(count):
        scale = 10.0 ** rng.uniform(-6, 0) * max(1.0, np.abs(x).max())
        yield x + scale * rng.randn(x.size) * (rng.rand(x.size) < 0.7)


# ----------------------------------------------------------------------
# group l2
@pytest.mark.parametrize("v, D", CASES)
@pytest.mark.parametrize("fraction", FRACTIONS)
def test_group_l2_prox_kkt(v, D, fraction):
    present = D > 0
    norm = np.linalg.norm(v[present])
    lam = fraction * norm
    x = py_group_l2_prox(v, D, lam)
    scale = _scale(v, D)
    assert np.all(x[~present] == 0.0)
    # x = 0 iff ||v|| <= lam (either side within round-off of the boundary,
    # where the exact minimiser is 0 or tiny)
    if _at_boundary(norm, lam):
        assert np.abs(x).max() <= TOL * scale
        return
    if norm < lam:
        assert_array_equal(x, 0.0)
        return
    assert np.linalg.norm(x) > 0
    if lam == 0:
        assert_allclose(x[present], -v[present] / D[present], rtol=1e-14, atol=0)
        return
    residual = v + D * x + lam * x / np.linalg.norm(x)
    assert np.abs(residual[present]).max() <= TOL * scale
    assert_allclose(x, ref.group_l2_prox(v, D, lam), rtol=0, atol=TOL * scale)


@pytest.mark.parametrize("n", SIZES)
def test_group_l2_prox_equal_metric_is_the_closed_form(n):
    rng = np.random.RandomState(n)
    v = rng.randn(n) * 3
    d = 0.7
    lam = 0.4 * np.linalg.norm(v)
    expected = -(1.0 - lam / np.linalg.norm(v)) * v / d
    assert_allclose(py_group_l2_prox(v, np.full(n, d), lam), expected, rtol=1e-13)


@pytest.mark.parametrize("v, D", CASES[::3])
@pytest.mark.parametrize("fraction", [0.3, 0.9, 1.2])
def test_group_l2_prox_beats_random_points(v, D, fraction):
    lam = fraction * np.linalg.norm(v[D > 0])
    x = py_group_l2_prox(v, D, lam)

    def f(z):
        return v @ z + 0.5 * z @ (D * z) + lam * np.linalg.norm(z)

    rng = np.random.RandomState(0)
    best = f(x)
    for z in _random_perturbations(x, rng):
        assert best <= f(z) + 1e-12 * max(1.0, abs(best))


# ----------------------------------------------------------------------
# l-infinity
def _check_linf_kkt(v, D, lam, x, tol):
    present = D > 0
    assert np.all(x[~present] == 0.0)
    r = -(v + D * x)  # must lie in lam * subdifferential of ||.||_inf at x
    r[~present] = 0.0
    M = np.abs(x).max()
    if M == 0:
        assert np.abs(r).sum() <= lam + tol
        return
    assert abs(np.abs(r).sum() - lam) <= tol
    at_max = np.abs(x) >= M - tol
    assert np.all(np.abs(r[~at_max]) <= tol)
    # on the coordinates where |x_i| = ||x||_inf, -(v + Dx) has the sign of x
    assert np.all(r[at_max] * np.sign(x[at_max]) >= -tol)


@pytest.mark.parametrize("v, D", CASES)
@pytest.mark.parametrize("fraction", FRACTIONS)
def test_linf_prox_kkt(v, D, fraction):
    present = D > 0
    l1 = np.abs(v[present]).sum()
    lam = fraction * l1
    x = py_linf_prox(v, D, lam)
    scale = _scale(v, D)
    # x = 0 iff ||v||_1 <= lam (away from round-off at the boundary)
    if not _at_boundary(l1, lam):
        assert np.all(x == 0.0) == (l1 <= lam)
    _check_linf_kkt(v, D, lam, x, TOL * scale)
    assert_allclose(x, ref.linf_prox(v, D, lam), rtol=0, atol=TOL * scale)


@pytest.mark.parametrize("n", SIZES)
def test_linf_prox_without_penalty_is_the_unpenalised_minimiser(n):
    rng = np.random.RandomState(n)
    v, D = rng.randn(n), np.exp(rng.randn(n))
    assert_allclose(py_linf_prox(v, D, 0.0), -v / D, rtol=1e-15)


@pytest.mark.parametrize("n", SIZES)
def test_linf_prox_and_l1_ball_are_moreau_complements(n):
    """With D = 1: prox of lam ||.||_inf plus projection onto the l1 ball of
    radius lam gives back the point -v (Moreau decomposition)."""
    rng = np.random.RandomState(n)
    v = rng.randn(n) * 2
    ones = np.ones(n)
    for lam in [0.1, 1.0, 0.5 * np.abs(v).sum()]:
        total = py_linf_prox(v, ones, lam) + py_l1_ball_solve(v, ones, lam)
        assert_allclose(total, -v, rtol=0, atol=1e-13)


@pytest.mark.parametrize("v, D", CASES[::3])
@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.9])
def test_linf_prox_beats_random_points(v, D, fraction):
    lam = fraction * np.abs(v[D > 0]).sum()
    x = py_linf_prox(v, D, lam)

    def f(z):
        return v @ z + 0.5 * z @ (D * z) + lam * np.abs(z).max()

    rng = np.random.RandomState(1)
    best = f(x)
    for z in _random_perturbations(x, rng):
        assert best <= f(z) + 1e-12 * max(1.0, abs(best))


# ----------------------------------------------------------------------
# weighted l1 projection
def _check_projection_kkt(q, a, c, z, tol):
    value = np.sum(a * np.abs(z))
    assert value <= c * (1 + 1e-12) + tol  # feasible
    if np.sum(a * np.abs(q)) <= c and not _at_boundary(np.sum(a * np.abs(q)), c):
        assert_array_equal(z, q)
        return
    # q - z = theta * a * s with s in the subdifferential of |.| at z, theta >= 0
    nz = z != 0
    assert np.all(np.sign(z[nz]) == np.sign(q[nz]))
    if nz.any():
        thetas = (np.abs(q[nz]) - np.abs(z[nz])) / a[nz]
        theta = np.median(thetas)
        assert np.all(np.abs(thetas - theta) <= tol)
    else:
        theta = np.max(np.abs(q) / a)
    assert theta >= -tol
    assert np.all(np.abs(q[~nz]) <= theta * a[~nz] + tol)
    # complementary slackness: the constraint is active as theta > 0
    assert abs(value - c) <= tol


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("fraction", FRACTIONS)
def test_weighted_l1_projection_kkt(n, seed, fraction):
    rng = np.random.RandomState(seed + 10 * n)
    q = rng.randn(n) * 3
    q[rng.rand(n) < 0.2] = 0.0
    a = np.exp(rng.randn(n)) if seed % 2 else np.full(n, 0.8)
    if seed == 4:
        a = rng.choice([0.5, 2.0], n)
        q = np.sign(rng.randn(n)) * 1.5 * a  # tied ratios
    c = fraction * np.sum(a * np.abs(q))
    z = py_weighted_l1_projection(q, a, c)
    scale = max(1.0, np.abs(q).max())
    _check_projection_kkt(q, a, c, z, TOL * scale)
    assert_allclose(z, ref.weighted_l1_projection(q, a, c), rtol=0, atol=TOL * scale)
    # no feasible point is closer to q
    rng = np.random.RandomState(2)
    best = np.sum((z - q) ** 2)
    for p in _random_perturbations(z, rng):
        value = np.sum(a * np.abs(p))
        if value > c:
            p = p * (c / value)
        assert best <= np.sum((p - q) ** 2) + 1e-12 * max(1.0, best)


def test_weighted_l1_projection_unit_weights_is_the_l1_ball_projection():
    """a = 1 reduces to the Euclidean projection onto the l1 ball; on a
    nonnegative point with c = 1 it is the simplex projection, checked on
    a hand-solved point."""
    q = np.array([0.9, 0.6, -0.2, 0.05])
    # theta = (0.9 + 0.6 - 1) / 2 = 0.25 leaves the first two coordinates
    assert_allclose(py_weighted_l1_projection(q, np.ones(4), 1.0),
                    [0.65, 0.35, 0.0, 0.0], rtol=0, atol=1e-15)


# ----------------------------------------------------------------------
# l1 ball
def _check_l1_ball_kkt(v, D, radius, x, tol):
    present = D > 0
    assert np.all(x[~present] == 0.0)
    l1 = np.abs(x).sum()
    assert l1 <= radius * (1 + 1e-12)  # feasible
    free = np.zeros_like(v)
    free[present] = -v[present] / D[present]
    if np.abs(free).sum() <= radius and not _at_boundary(np.abs(free).sum(), radius):
        assert_allclose(x, free, rtol=1e-14, atol=0)
        return
    # v + D x + theta s = 0, s in the subdifferential of ||.||_1, theta >= 0
    r = -(v + D * x)
    r[~present] = 0.0
    theta = np.abs(r).max()
    nz = x != 0
    assert np.all(np.abs(r[nz] - theta * np.sign(x[nz])) <= tol)
    assert np.all(np.abs(r[~nz]) <= theta + tol)
    # complementary slackness: theta > 0, so the constraint is active
    assert abs(l1 - radius) <= tol


@pytest.mark.parametrize("v, D", CASES)
@pytest.mark.parametrize("fraction", FRACTIONS)
def test_l1_ball_solve_kkt(v, D, fraction):
    present = D > 0
    radius = fraction * np.abs(v[present] / D[present]).sum()
    x = py_l1_ball_solve(v, D, radius)
    scale = _scale(v, D)
    _check_l1_ball_kkt(v, D, radius, x, TOL * scale)
    assert_allclose(x, ref.l1_ball_solve(v, D, radius), rtol=0, atol=TOL * scale)


@pytest.mark.parametrize("v, D", CASES[::3])
@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.9])
def test_l1_ball_solve_beats_random_feasible_points(v, D, fraction):
    radius = fraction * np.abs(v[D > 0] / D[D > 0]).sum()
    x = py_l1_ball_solve(v, D, radius)

    def f(z):
        return v @ z + 0.5 * z @ (D * z)

    rng = np.random.RandomState(3)
    best = f(x)
    for z in _random_perturbations(x, rng):
        l1 = np.abs(z).sum()
        if l1 > radius:
            z = z * (radius / l1)
        assert best <= f(z) + 1e-12 * max(1.0, abs(best))


def test_l1_ball_solve_extreme_radii():
    rng = np.random.RandomState(0)
    v, D = rng.randn(10), np.exp(rng.randn(10))
    assert_array_equal(py_l1_ball_solve(v, D, 0.0), 0.0)
    assert_allclose(py_l1_ball_solve(v, D, 1e6), -v / D, rtol=1e-15)


# ----------------------------------------------------------------------
def test_all_coordinates_absent_and_empty_input():
    zeros = np.zeros(5)
    for solve in (py_group_l2_prox, py_linf_prox, py_l1_ball_solve):
        assert_array_equal(solve(zeros, zeros, 1.0), 0.0)
        assert solve(np.zeros(0), np.zeros(0), 1.0).shape == (0,)
    assert py_weighted_l1_projection(np.zeros(0), np.zeros(0), 1.0).shape == (0,)


@pytest.mark.parametrize("solve", [py_group_l2_prox, py_linf_prox, py_l1_ball_solve])
def test_invalid_arguments(solve):
    with pytest.raises(ValueError):
        solve(np.ones(3), np.ones(3), -1.0)
    with pytest.raises(ValueError):
        solve(np.ones(3), -np.ones(3), 1.0)
    with pytest.raises(ValueError):
        solve(np.ones(3), np.ones(2), 1.0)


@pytest.mark.parametrize("seed", range(20))
def test_wide_dynamic_range_kkt(seed):
    """Metrics and points spread over many orders of magnitude: the roots and
    thresholds are still exact to round-off (relative to the data's scale)."""
    rng = np.random.RandomState(1000 + seed)
    n = rng.choice([2, 10, 200])
    v = rng.randn(n) * np.exp(2 * rng.randn(n))
    D = np.exp(3 * rng.randn(n))
    scale = _scale(v, D)
    for fraction in [0.01, 0.5, 0.99]:
        lam = fraction * np.linalg.norm(v)
        x = py_group_l2_prox(v, D, lam)
        residual = v + D * x + lam * x / np.linalg.norm(x)
        assert np.abs(residual).max() <= TOL * scale
        lam = fraction * np.abs(v).sum()
        _check_linf_kkt(v, D, lam, py_linf_prox(v, D, lam), TOL * scale)
        radius = fraction * np.abs(v / D).sum()
        _check_l1_ball_kkt(v, D, radius, py_l1_ball_solve(v, D, radius), TOL * scale)
