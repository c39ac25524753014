"""sklearn_adaprox: adaptive proximal online learners with the scikit-learn API.

Linear models trained one sample at a time by the update rules of

* AdaGrad (Duchi, Hazan & Singer, 2011): :class:`AdaGradClassifier`.
* AOGD / OGD for pairwise AUC maximisation (Sun et al., 2023):
  :class:`PairwiseAUCClassifier`.
* generalized implicit FTRL (Chen & Orabona, 2023): :class:`ImplicitFTRLRegressor`, :class:`ImplicitFTRLClassifier`.
* RDA+ (Lee & Wright, 2012), l1-logistic regression by dual averaging then a
  Newton local phase on the identified support: :class:`RDAPlusClassifier`.

Every estimator takes dense or CSR input, learns in O(nnz) per sample from
compiled kernels, and supports ``fit``, ``partial_fit`` and pickling
mid-stream.
"""
from .adagrad import AdaGradClassifier
from .pairwise_auc import PairwiseAUCClassifier
from .implicit_ftrl import ImplicitFTRLClassifier, ImplicitFTRLRegressor
from .rda_plus import RDAPlusClassifier
from .merge import merge

__all__ = ["AdaGradClassifier", "PairwiseAUCClassifier", "ImplicitFTRLClassifier", "ImplicitFTRLRegressor", "RDAPlusClassifier", "merge"]
__version__ = "0.1.0.dev0"
