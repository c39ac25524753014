"""Write ``numpy-objects.inv``: a small intersphinx inventory of NumPy.

Debian ships no NumPy HTML documentation (so no ``objects.inv``) and the
documentation build runs offline, so this script writes an inventory of
the NumPy objects that the sklearn_adaprox docstrings name, each with its
address on https://numpy.org/doc/stable/.  Every name is checked to exist
in the installed NumPy.  Run it from this folder after adding a name:

    python make_numpy_inv.py
"""
import zlib
from pathlib import Path

import numpy as np

# (name, domain:role, address relative to https://numpy.org/doc/stable/)
OBJECTS = [
    ("numpy", "py:module", "reference/index.html#module-$"),
    ("numpy.ndarray", "py:class", "reference/generated/numpy.ndarray.html#$"),
    ("numpy.dtype", "py:class", "reference/generated/numpy.dtype.html#$"),
    ("numpy.float32", "py:attribute", "reference/arrays.scalars.html#$"),
    ("numpy.float64", "py:attribute", "reference/arrays.scalars.html#$"),
    ("numpy.int32", "py:attribute", "reference/arrays.scalars.html#$"),
    ("numpy.int64", "py:attribute", "reference/arrays.scalars.html#$"),
    ("numpy.int8", "py:attribute", "reference/arrays.scalars.html#$"),
    ("numpy.random.RandomState", "py:class", "reference/random/legacy.html#$"),
    ("numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
    ("numpy.random.default_rng", "py:function", "reference/random/generator.html#$"),
    # numpydoc links "array-like" and "scalar" in parameter types to these
    ("array_like", "std:term", "glossary.html#term-array_like"),
    ("arrays.scalars", "std:label", "reference/arrays.scalars.html#arrays-scalars"),
]


def _check(name):
    if not name.startswith("numpy"):
        return
    obj = np
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)


def main():
    lines = []
    for name, role, uri in OBJECTS:
        _check(name)
        lines.append(f"{name} {role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        "# Project: NumPy\n"
        f"# Version: {'.'.join(np.__version__.split('.')[:2])}\n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    body = zlib.compress(("\n".join(lines) + "\n").encode())
    out = Path(__file__).with_name("numpy-objects.inv")
    out.write_bytes(header + body)
    print(f"wrote {out} ({len(lines)} objects)")


if __name__ == "__main__":
    main()
