"""Build the Cython extensions of sklearn_adaprox.

All compiler directives live in ``COMPILER_DIRECTIVES`` below.  Setting the
environment variable ``SKLEARN_ADAPROX_DEBUG=1`` at build time turns bounds
checking, wraparound and initialisation checks back on (a debug build for
chasing memory errors in the kernels).
"""
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SKLEARN_ADAPROX_DEBUG", "0") not in ("", "0")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
}

# One module per algorithm over the shared layers: data access, losses, and
# the exact proximal solvers of the structured penalties.  Full-matrix
# AdaGrad is dense linear algebra (LAPACK through scipy) and has its own.
MODULES = [
    "sklearn_adaprox._dataset",
    "sklearn_adaprox._loss",
    "sklearn_adaprox._prox",
    "sklearn_adaprox._adagrad_fast",
    "sklearn_adaprox._adagrad_full_fast",
    "sklearn_adaprox._pairwise_auc_fast",
    "sklearn_adaprox._implicit_ftrl_fast",
    "sklearn_adaprox._rda_fast",
]

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        # -fno-math-errno lets sqrt be a single instruction; no fast-math:
        # the kernels must match their NumPy transcriptions to round-off.
        extra_compile_args=["-O3", "-fno-math-errno"] if not DEBUG else ["-O0", "-g"],
    )
    for name in MODULES
]

setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES))
