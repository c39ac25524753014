"""Build the Cython extensions of sklearn_adaprox.

All compiler directives live in ``COMPILER_DIRECTIVES`` below.  Two
environment variables, read at build time, make checked builds for chasing
memory errors in the kernels:

* ``SKLEARN_ADAPROX_DEBUG=1``: bounds checking, wraparound and
  initialisation checks back on, no optimisation (a debug build).
* ``SKLEARN_ADAPROX_SANITIZE=address``: AddressSanitizer.  Every read or
  write of the compiled code is checked against the allocations (numpy
  buffers included), and Cython's bounds checks are on as well, so an
  out-of-bounds access stops the process with a report.  The modules then
  load only with the ASan runtime preloaded: ``bash .ci/run asan`` builds
  this flavour in a venv of its own and runs the tests under it.

Cython and setuptools compare time stamps, not flags: left to themselves
they would give a checked build the optimised build's C and modules (or the
other way round).  So a checked build writes its generated C and objects
under ``build/<flavour>/`` and always recompiles everything, and it leaves
a stamp that makes the next optimised build recompile the in-place modules
it replaced (in an editable install).
"""
import os
import pathlib

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SKLEARN_ADAPROX_DEBUG", "0") not in ("", "0")
SANITIZE = os.environ.get("SKLEARN_ADAPROX_SANITIZE", "")
if SANITIZE not in ("", "address"):
    raise SystemExit(f"SKLEARN_ADAPROX_SANITIZE={SANITIZE!r}: only 'address' is supported")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG or bool(SANITIZE),
    # Without wraparound a negative index fails the bounds check instead of
    # silently reading from the end; the debug build keeps Python semantics.
    "wraparound": DEBUG,
    "initializedcheck": DEBUG or bool(SANITIZE),
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
}

CHECKED_STAMP = pathlib.Path("build/checked-build.stamp")

# -fno-math-errno lets sqrt be a single instruction; no fast-math: the
# kernels must match their NumPy transcriptions to round-off.
if SANITIZE:
    # -O1: tolerable speed with exact stack traces (higher levels inline
    # and merge frames); frame pointers for ASan's fast unwinder.
    # _FORTIFY_SOURCE is off: its checked memcpy and friends are
    # not seen by ASan.  (_GLIBCXX_ASSERTIONS would be meaningless: the
    # modules are C.)
    FLAVOUR = "asan"
    COMPILE_ARGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address",
                    "-U_FORTIFY_SOURCE", "-fno-math-errno"]
    LINK_ARGS = ["-fsanitize=address"]
elif DEBUG:
    FLAVOUR = "debug"
    COMPILE_ARGS = ["-O0", "-g"]
    LINK_ARGS = []
else:
    FLAVOUR = None
    COMPILE_ARGS = ["-O3", "-fno-math-errno"]
    LINK_ARGS = []

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
    "sklearn_adaprox._stream_fast",
]

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
        depends=[str(CHECKED_STAMP)] if CHECKED_STAMP.exists() else [],
    )
    for name in MODULES
]

if FLAVOUR is None:
    setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES))
else:
    setup(
        # emit_linenums: reports and debuggers name .pyx lines, not C lines
        ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                              build_dir=f"build/{FLAVOUR}", force=True,
                              emit_linenums=True),
        options={"build": {"build_base": f"build/{FLAVOUR}"}, "build_ext": {"force": True}},
    )
    CHECKED_STAMP.parent.mkdir(exist_ok=True)
    CHECKED_STAMP.touch()
