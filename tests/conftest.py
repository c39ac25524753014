"""Shared test set-up."""
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_the_global_random_state():
    """An estimator built with ``random_state=None`` shuffles with NumPy's
    global random state; seed it for every test, so that a test's outcome
    does not depend on which tests ran before it (the CI stages select
    different sets of tests)."""
    np.random.seed(0)  # noqa: NPY002 (the legacy state is what they use)
