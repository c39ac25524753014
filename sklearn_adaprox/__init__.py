"""sklearn_adaprox: adaptive proximal online learners with the scikit-learn API.

Linear models trained one sample at a time by the update rules of

* AdaGrad (Duchi, Hazan & Singer, 2011): :class:`AdaGradClassifier`.

Every estimator takes dense or CSR input, learns in O(nnz) per sample from
compiled kernels, and supports ``fit``, ``partial_fit`` and pickling
mid-stream.
"""
from .adagrad import AdaGradClassifier

__all__ = ["AdaGradClassifier"]
__version__ = "0.1.0.dev0"
