"""Data sets for testing and benchmarking ``sklearn_adaprox`` learners.

This subpackage is pure Python (NumPy, SciPy, scikit-learn): it does not
import anything compiled from :mod:`sklearn_adaprox`, so it can be used on its
own, e.g. to generate benchmark data before the extensions are built.

* :func:`load_a9a` -- the LIBSVM ``a9a`` train/test split of UCI Adult,
  shipped with the package (no download).
* :func:`load_sms_spam` -- the SMS Spam Collection (5574 messages, spam
  or ham), raw text, shipped with the package.
* :func:`make_sparse_zipf` -- synthetic text-like sparse data with Zipf
  feature frequencies and rare-but-informative features.
"""
from ._base import load_a9a, load_sms_spam
from ._zipf import make_sparse_zipf

__all__ = ["load_a9a", "load_sms_spam", "make_sparse_zipf"]
