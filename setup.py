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

A third one changes the code paths, not the checks:

* ``SKLEARN_ADAPROX_NO_SIMD=1``: the plain C fallbacks of ``_simd.h``
  only, as on targets other than x86 (``_adagrad_fast.SIMD_PATHS`` is then
  ``"scalar"``).  The results are the same bit for bit; CI runs the tests
  on such a build.

The compiler flags depend on the compiler (``compile_flags``): the kernels'
results must not depend on it, so no compiler may contract a multiply and
an add into one fused multiply-add (FMA), which rounds once instead of
twice: GCC does so by default wherever the target has FMA (arm64, ppc64le,
x86 with ``-march=native`` or ``-mfma`` in CFLAGS) and Clang within an
expression, and ``sqrt(r*r + g*g)`` of an AdaGrad update then differs in
the last bit in about 13% of the updates.

Cython and setuptools compare time stamps, not flags: left to themselves
they would give a checked build the optimised build's C and modules (or the
other way round).  So a checked (or scalar) build writes its generated C and
objects under ``build/<flavour>/`` (``asan``, ``debug``, ``nosimd``,
``asan-nosimd``...) and always recompiles everything, and it leaves a stamp
that makes the next default build recompile the in-place modules it replaced
(in an editable install).
"""
import hashlib
import os
import pathlib

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("SKLEARN_ADAPROX_DEBUG", "0") not in ("", "0")
SANITIZE = os.environ.get("SKLEARN_ADAPROX_SANITIZE", "")
if SANITIZE not in ("", "address"):
    raise SystemExit(f"SKLEARN_ADAPROX_SANITIZE={SANITIZE!r}: only 'address' is supported")
NO_SIMD = os.environ.get("SKLEARN_ADAPROX_NO_SIMD", "0") not in ("", "0")

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

# The flavour of a build other than the default one names its folder under
# build/ (None: the default build).
FLAVOUR = "-".join(
    (["asan"] if SANITIZE else ["debug"] if DEBUG else []) + (["nosimd"] if NO_SIMD else [])
) or None


def compile_flags(compiler_type):
    """(compile, link) flags of the build flavour for a compiler type of
    setuptools: "msvc", or "unix" / "mingw32" / "cygwin" (GCC, Clang and
    the compilers that take their options, such as Intel's icx).

    No fast-math anywhere: the kernels must match their NumPy transcriptions
    to round-off, and give the same bits on every machine.
    """
    if compiler_type == "msvc":
        if SANITIZE:
            raise SystemExit("SKLEARN_ADAPROX_SANITIZE: GCC or Clang only")
        # /fp:precise (the default, made explicit) does not contract
        # multiplies and adds into FMAs from Visual Studio 2022 (17.0) on;
        # earlier versions could, only when given /arch:AVX2 or above.
        if DEBUG:
            return ["/Od", "/Zi", "/fp:precise"], ["/DEBUG"]
        return ["/O2", "/fp:precise"], []
    # -ffp-contract=off: no FMA contraction (GCC's default is "fast", Clang's
    # "on"; both contract sqrt(r*r + g*g) on a target that has FMA).  It comes
    # after CFLAGS on the command line, so it holds with -march=native there.
    # -fno-math-errno lets sqrt be a single instruction.
    common = ["-ffp-contract=off", "-fno-math-errno"]
    if SANITIZE:
        # -O1: tolerable speed with exact stack traces (higher levels inline
        # and merge frames); frame pointers for ASan's fast unwinder.  -g1:
        # the line tables a report names .pyx lines with, without the
        # variables' debug information, which doubled the compile time
        # (_adagrad_fast: 28 s with -g, 15 s with -g1).
        # _FORTIFY_SOURCE is off: its checked memcpy and friends are
        # not seen by ASan.  (_GLIBCXX_ASSERTIONS would be meaningless: the
        # modules are C.)
        return (["-O1", "-g1", "-fno-omit-frame-pointer", "-fsanitize=address",
                 "-U_FORTIFY_SOURCE", *common], ["-fsanitize=address"])
    if DEBUG:
        return ["-O0", "-g", *common], []
    return ["-O3", *common], []


def sha256_of(*parts):
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


def module_key(ext):
    """What an optimised module is compiled from: its C source, the package's
    C headers, the flags (with those of ``compile_flags``, which
    ``build_extensions`` has added), the environment's compiler settings and
    the numpy and Cython of the build (the Python version is in the
    module's name)."""
    import Cython

    def code(path):
        # less Cython's metadata comment at the top, which names the build
        # environment's folders (random in an isolated one)
        text = pathlib.Path(path).read_bytes()
        _, end, rest = text.partition(b"END: Cython Metadata */")
        return rest if end else text

    settings = (ext.extra_compile_args, ext.define_macros, np.__version__, Cython.__version__,
                [os.environ.get(name) for name in ("CC", "CFLAGS", "CPPFLAGS")])
    return sha256_of(*map(code, ext.sources),
                     *(path.read_bytes()
                       for path in sorted(pathlib.Path("sklearn_adaprox").glob("*.h"))),
                     repr(settings).encode())


class BuildExt(build_ext):
    """build_ext that adds the flags of ``compile_flags`` for the compiler
    actually in use (known only once setuptools has chosen it), compiles
    one module per core unless told otherwise (``-j N``), and lets an
    editable install reuse a module already in place.

    The modules are independent: the optimised build took 287 s one after
    the other and 142 s two at a time on two cores.  (Set here rather than
    in ``setup(options=...)``, which an editable install does not read.)

    An editable install compiles in a fresh temporary folder and copies the
    modules into the source tree, and its isolated build environment makes
    Cython write every C file anew: so the second ``pip install -e`` of
    README.md (the test extras) compiled everything again, 5 minutes of one
    core.  For each module it compiles it keeps, in build/editable/, the
    key of what it compiled and the hash of the module made: a module in
    place with that hash (no other build replaced it) whose key is the one
    it would compile now is copied instead.
    """

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            try:
                cores = len(os.sched_getaffinity(0))
            except AttributeError:  # not on Linux
                cores = os.cpu_count() or 1
            self.parallel = min(cores, len(self.extensions or ())) or None

    def build_extension(self, ext):
        if FLAVOUR is not None or not getattr(self, "editable_mode", False):
            super().build_extension(ext)
            return
        target = self.get_ext_fullpath(ext.name)
        in_place = pathlib.Path(*ext.name.split(".")[:-1], os.path.basename(target))
        record = pathlib.Path("build", "editable", in_place.name + ".sha256")
        key = module_key(ext)
        if (in_place.exists() and record.exists()
                and record.read_text() == f"{key} {sha256_of(in_place.read_bytes())}"):
            self.mkpath(os.path.dirname(target))
            self.copy_file(str(in_place), target)
            return
        super().build_extension(ext)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(f"{key} {sha256_of(pathlib.Path(target).read_bytes())}")

    def build_extensions(self):
        compile_args, link_args = compile_flags(self.compiler.compiler_type)
        for ext in self.extensions:
            ext.extra_compile_args = compile_args + ext.extra_compile_args
            ext.extra_link_args = link_args + ext.extra_link_args
        super().build_extensions()


# One module per algorithm over the shared layers: data access, losses, and
# the exact proximal solvers of the structured penalties.  AdaGrad has one
# module per shape of its step (element-wise, coupled, multinomial, full
# matrix: dense linear algebra, LAPACK through scipy), all on the closed forms
# of _adagrad_rules.pxd.
MODULES = [
    "sklearn_adaprox._dataset",
    "sklearn_adaprox._loss",
    "sklearn_adaprox._prox",
    "sklearn_adaprox._adagrad_fast",
    "sklearn_adaprox._adagrad_coupled_fast",
    "sklearn_adaprox._adagrad_multinomial_fast",
    "sklearn_adaprox._adagrad_full_fast",
    "sklearn_adaprox._pairwise_auc_fast",
    "sklearn_adaprox._implicit_ftrl_fast",
    "sklearn_adaprox._rda_fast",
    "sklearn_adaprox._stream_fast",
    "sklearn_adaprox._merge_fast",
]

# Python modules that Cython compiles from their .py source: the glue of a
# stream's one-row calls (_short_calls), a few microseconds of dictionary
# and attribute work per call, of which compiled code saves 0.2 to 0.6
# (one-row partial_fit, timeit, interleaved: AdaGrad 7.3 -> 6.9 us,
# multinomial 9.6 -> 9.0, implicit FTRL 8.2 -> 7.7).  Its first line keeps
# Python's semantics for indexing and division.
COMPILED_PYTHON = ["sklearn_adaprox._short_calls"]

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + (".py" if name in COMPILED_PYTHON else ".pyx")],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")]
        + ([("SKLEARN_ADAPROX_NO_SIMD", "1")] if NO_SIMD else []),
        depends=[str(CHECKED_STAMP)] if CHECKED_STAMP.exists() else [],
    )
    for name in MODULES + COMPILED_PYTHON
]

if FLAVOUR is None:
    setup(ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES),
          cmdclass={"build_ext": BuildExt})
else:
    setup(
        # emit_linenums: reports and debuggers name .pyx lines, not C lines
        ext_modules=cythonize(extensions, compiler_directives=COMPILER_DIRECTIVES,
                              build_dir=f"build/{FLAVOUR}", force=True,
                              emit_linenums=True),
        options={"build": {"build_base": f"build/{FLAVOUR}"}, "build_ext": {"force": True}},
        cmdclass={"build_ext": BuildExt},
    )
    CHECKED_STAMP.parent.mkdir(exist_ok=True)
    CHECKED_STAMP.touch()
