"""Hostile (or merely careless) inputs, and a runner that feeds them to every
estimator configuration without risking the calling process.

Shared by ``tests/test_hostile_inputs.py``, ``tests/test_fuzz.py`` and
``benchmarks/hostile_census.py``.  A *job* is ``(config, case, method)``:

* ``CONFIGS`` name an estimator configuration and its task;
* ``CASES`` build the inputs of one hostile situation from small base data
  and say what the documented behaviour is (reject, accept as the canonical
  twin, learn, ...);
* ``METHODS`` say which call is made and on which state (unfitted, fitted).

``run_jobs`` runs jobs in worker subprocesses (``python hostile_cases.py
--worker``), so a segfault, an abort or a hang costs a worker, never the
caller.  In ``"batch"`` mode a worker runs the jobs in-process (fast); if it dies,
the configuration it was running is run again in ``"fork"`` mode, where
every job runs in its own forked child, so the job that crashed is named
exactly and cannot poison the others.  Each job reports one
outcome:

``ok``
    the call succeeded and the result is what the case requires (the same
    model as the canonical twin, or a finite model that learnt something);
``clean_error``
    an allowed exception, and the estimator's pickled bytes are unchanged;
``crash``
    the process died (signal, abort, no result) or hung;
``corruption``
    an exception left the estimator changed, a prediction method changed
    it, or the dying process reported heap corruption;
``silent_wrong``
    no error, but the input should have been refused, or the model is
    NaN/inf/all-zero, differs from the canonical twin's or has the wrong
    shape;
``wrong_error``
    an exception that the case does not allow (a valid input refused, or an
    unexpected exception type), with the estimator unchanged.
"""
import json
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

MALFORMED = "Malformed sparse matrix X: "

OUTCOMES = ("ok", "clean_error", "crash", "corruption", "silent_wrong", "wrong_error")

# ---------------------------------------------------------------------------
# estimator configurations: (class name, parameters, task)
# Small max_iter keeps every fit to a few milliseconds; n_jobs=1 keeps the
# workers single-threaded, so forking them is safe.
_COMMON = {"random_state": 0}
CONFIGS = {
    "adagrad": ("AdaGradClassifier", {"max_iter": 3, "tol": None, "n_jobs": 1}, "multiclass"),
    "adagrad_l1": ("AdaGradClassifier", {"penalty": "l1", "alpha": 1e-3, "max_iter": 3,
                                         "tol": None, "n_jobs": 1}, "multiclass"),
    "adagrad_mirror": ("AdaGradClassifier", {"update": "mirror_descent", "max_iter": 3,
                                             "tol": None, "n_jobs": 1}, "multiclass"),
    "adagrad_ftrl": ("AdaGradClassifier", {"update": "ftrl_proximal", "loss": "log_loss",
                                           "max_iter": 3, "tol": None, "n_jobs": 1},
                     "multiclass"),
    "adagrad_multinomial": ("AdaGradClassifier", {"multi_class": "multinomial",
                                                  "loss": "log_loss", "max_iter": 3,
                                                  "tol": None, "n_jobs": 1}, "multiclass"),
    "adagrad_linf": ("AdaGradClassifier", {"penalty": "linf", "alpha": 1e-3, "max_iter": 3,
                                           "tol": None, "n_jobs": 1}, "multiclass"),
    # O(n_features^2) state per problem: the base X is narrow (6 columns)
    "adagrad_full": ("AdaGradClassifier", {"matrix": "full", "loss": "log_loss",
                                           "delta": 0.1, "max_iter": 3, "tol": None,
                                           "n_jobs": 1}, "multiclass"),
    "rdaplus": ("RDAPlusClassifier", {"alpha": 1e-3, "max_iter": 5, "n_jobs": 1},
                "multiclass"),
    "auc": ("PairwiseAUCClassifier", {"max_iter": 3, "tol": None}, "binary"),
    "auc_average": ("PairwiseAUCClassifier", {"average": True, "max_iter": 3, "tol": None},
                    "binary"),
    "iftrl_clf": ("ImplicitFTRLClassifier", {"max_iter": 3, "tol": None, "n_jobs": 1},
                  "multiclass"),
    "iftrl_reg_linear": ("ImplicitFTRLRegressor", {"update": "linear", "max_iter": 3,
                                                   "tol": None}, "regression"),
    "iftrl_reg_truncated": ("ImplicitFTRLRegressor", {"update": "truncated", "max_iter": 3,
                                                      "tol": None}, "regression"),
    "iftrl_reg_twostep": ("ImplicitFTRLRegressor", {"update": "twostep", "max_iter": 3,
                                                    "tol": None}, "regression"),
    "iftrl_reg_proximal": ("ImplicitFTRLRegressor", {"update": "proximal", "max_iter": 3,
                                                     "tol": None}, "regression"),
}

# fit-type methods change the state; prediction methods must never change it
FIT_METHODS = ("fit", "refit", "partial_fit", "partial_fit_fitted")
PREDICT_METHODS = ("predict", "decision_function", "predict_proba")
METHODS = FIT_METHODS + PREDICT_METHODS


def make_estimator(config, **params):
    import sklearn_adaprox

    cls_name, base_params, _ = CONFIGS[config]
    return getattr(sklearn_adaprox, cls_name)(**{**_COMMON, **base_params, **params})


def config_task(config):
    return CONFIGS[config][2]


def config_methods(config):
    """The methods an estimator of this configuration has."""
    cls_name, params, task = CONFIGS[config]
    if task == "regression":
        return ("fit", "refit", "partial_fit", "partial_fit_fitted", "predict")
    methods = FIT_METHODS + ("predict", "decision_function")
    probabilistic = cls_name == "RDAPlusClassifier" or (
        cls_name == "AdaGradClassifier" and params.get("loss") in ("log_loss", "modified_huber")
    )
    return methods + ("predict_proba",) if probabilistic else methods


# ---------------------------------------------------------------------------
# base data: small, sparse-ish, every class present, every config learns
N_ROWS, N_FEATURES = 40, 6


@dataclass
class Base:
    task: str
    X_dense: np.ndarray
    y: np.ndarray
    classes: object  # None for regression

    @property
    def X(self):
        """A fresh canonical CSR matrix (int32 indices) of the base data."""
        return sp.csr_matrix(self.X_dense)

    @property
    def is_classifier(self):
        return self.task != "regression"


def base_data(task, n_features=N_FEATURES):
    rng = np.random.RandomState(0)
    X = rng.randn(N_ROWS, n_features) * (rng.rand(N_ROWS, n_features) < 0.6)
    X[np.arange(N_ROWS), rng.randint(n_features, size=N_ROWS)] += 1.0  # no empty row
    if task == "regression":
        y = X @ rng.randn(n_features) + 0.1 * rng.randn(N_ROWS)
        return Base(task, X, y, None)
    n_classes = 3 if task == "multiclass" else 2
    y = np.argmax(X @ rng.randn(n_features, n_classes), axis=1)
    y[:n_classes] = np.arange(n_classes)  # every class present
    return Base(task, X, y.astype(np.int64), np.arange(n_classes))


# ---------------------------------------------------------------------------
# cases
@dataclass
class Inputs:
    """What one call receives.  ``source`` says which estimator it is made
    on: "config" (the method's usual state) or "mmap" (the fitted model
    dumped and loaded back with joblib mmap_mode='r')."""

    X: object
    y: object = None
    sample_weight: object = None
    classes: object = "default"  # "default": the task's classes on a first partial_fit
    params: dict = field(default_factory=dict)
    source: str = "config"


@dataclass
class Case:
    name: str
    family: str
    build: object  # build(base) -> (inputs, twin inputs or None)
    accept: str  # what a success must be: "never", "twin", "learn", "finite"
    reject: bool  # whether a clean error is allowed
    methods: tuple = METHODS
    errors: tuple = ("ValueError",)
    message: object = None  # None, or check(message) -> bool for a clean error
    tasks: tuple = ("multiclass", "binary", "regression")
    rtol: float = 1e-9
    # "state": every fitted attribute must match the twin's; "model": only
    # coef_ and intercept_ (when the stored form of X legitimately shows in
    # the state, e.g. the last sample kept by PairwiseAUC)
    compare: str = "state"
    # False: counted by the census, not asserted by the tests (behaviour the
    # documentation does not settle)
    in_tests: bool = True

    @property
    def expected(self):
        return {
            (True, True): ("ok", "clean_error"),
            (True, False): ("ok",),
            (False, True): ("clean_error",),
        }[(self.accept != "never", self.reject)]

    def applies(self, config, method):
        return config_task(config) in self.tasks and method in self.methods and (
            method in config_methods(config)
        )


CASES = {}


def _case(family, accept, reject, **kwargs):
    def register(build):
        CASES[build.__name__] = Case(build.__name__, family, build, accept, reject, **kwargs)
        return build

    return register


def malformed_message(message):
    return message.startswith(MALFORMED)


def _names_input(name):
    """Check of a refusal of huge values: it names the input and suggests
    scaling it."""
    def check(message):
        return re.search(rf"\b{name}\b", message) is not None and (
            re.search("scal", message, re.IGNORECASE) is not None
        )

    return check


def _sklearn_non_finite(name):
    return lambda message: f"Input {name} contains" in message


def _with(X, **arrays):
    """X (a copy) with some of its arrays replaced after construction, as a
    careless user would: scipy does not check assignments."""
    X = X.copy()
    for attr, value in arrays.items():
        setattr(X, attr, value)
    return X


def _constructed(base, indices=None, indptr=None, data=None, shape=None, fmt=sp.csr_matrix):
    """A matrix built with scipy's ordinary constructor, which checks the
    structure only superficially (it accepts, e.g., an index == n_features)."""
    X = base.X
    return fmt(
        (X.data if data is None else data,
         X.indices if indices is None else indices,
         X.indptr if indptr is None else indptr),
        shape=X.shape if shape is None else shape,
    )


def _strided(a):
    """A non-contiguous view with the values of ``a`` (every other element
    of an array twice as long)."""
    out = np.empty(2 * a.shape[0], dtype=a.dtype)
    out[::2] = a
    out[1::2] = a[::-1] if a.shape[0] else a
    view = out[::2]
    assert not view.flags.c_contiguous or a.shape[0] <= 1
    return view


def _error(family, message=malformed_message, **kwargs):
    return _case(family, "never", True, message=message, **kwargs)


# ---- malformed CSR structure (the root of the crashes) --------------------
@_error("sparse_structure")
def index_equal_n_features(b):
    indices = b.X.indices.copy()
    indices[5] = N_FEATURES
    return Inputs(_constructed(b, indices=indices), b.y), None


@_error("sparse_structure")
def index_far_out(b):
    indices = b.X.indices.copy()
    indices[-1] = 100_000
    return Inputs(_constructed(b, indices=indices), b.y), None


@_error("sparse_structure")
def index_negative(b):
    indices = b.X.indices.copy()
    indices[3] = -1
    return Inputs(_constructed(b, indices=indices), b.y), None


@_error("sparse_structure")
def index_very_negative(b):
    indices = b.X.indices.copy()
    indices[7] = np.iinfo(np.int32).min
    return Inputs(_constructed(b, indices=indices), b.y), None


@_error("sparse_structure")
def index_huge_int64(b):
    X = b.X
    indices = X.indices.astype(np.int64)
    indices[2] = 2**31 + 5
    return Inputs(_with(X, indices=indices, indptr=X.indptr.astype(np.int64)), b.y), None


@_error("sparse_structure")
def indptr_truncated(b):
    return Inputs(_with(b.X, indptr=b.X.indptr[:-1].copy()), b.y), None


@_error("sparse_structure")
def indptr_half(b):
    return Inputs(_with(b.X, indptr=b.X.indptr[: N_ROWS // 2].copy()), b.y), None


@_error("sparse_structure")
def indptr_too_long(b):
    indptr = np.append(b.X.indptr, b.X.indptr[-1]).astype(b.X.indptr.dtype)
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_non_monotone(b):
    indptr = b.X.indptr.copy()
    indptr[10], indptr[11] = indptr[11], indptr[10]
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_non_monotone_constructor(b):
    indptr = b.X.indptr.copy()
    indptr[20] = indptr[-1]  # row 19 runs to the end, row 20 runs backwards
    return Inputs(_constructed(b, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_not_starting_at_zero(b):
    indptr = b.X.indptr.copy()
    indptr[0] = 2
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_shifted(b):
    return Inputs(_with(b.X, indptr=b.X.indptr + 3), b.y), None


@_error("sparse_structure")
def indptr_negative(b):
    indptr = b.X.indptr.copy()
    indptr[5] = -7
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_last_short(b):
    indptr = b.X.indptr.copy()
    indptr[-1] -= 2  # the last stored entries belong to no row
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_last_long(b):
    indptr = b.X.indptr.copy()
    indptr[-1] += 4
    return Inputs(_with(b.X, indptr=indptr), b.y), None


@_error("sparse_structure")
def indptr_huge(b):
    indptr = b.X.indptr.astype(np.int64)
    indptr[-1] = 10**12
    return Inputs(_with(b.X, indptr=indptr, indices=b.X.indices.astype(np.int64)), b.y), None


@_error("sparse_structure")
def data_shorter_than_indices(b):
    return Inputs(_with(b.X, data=b.X.data[:-3].copy()), b.y), None


@_error("sparse_structure")
def data_empty(b):
    return Inputs(_with(b.X, data=np.zeros(0)), b.y), None


@_error("sparse_structure")
def indices_shorter_than_data(b):
    return Inputs(_with(b.X, indices=b.X.indices[:-3].copy()), b.y), None


@_error("sparse_structure")
def replaced_indices_out_of_range(b):
    return Inputs(_with(b.X, indices=(b.X.indices + 3).astype(b.X.indices.dtype)), b.y), None


@_error("sparse_structure")
def replaced_indices_2d(b):
    return Inputs(_with(b.X, indices=b.X.indices.reshape(1, -1).copy()), b.y), None


@_error("sparse_structure")
def replaced_data_2d(b):
    return Inputs(_with(b.X, data=b.X.data.reshape(1, -1).copy()), b.y), None


@_error("sparse_structure")
def csr_array_index_out_of_range(b):
    X = b.X
    indices = X.indices.copy()
    indices[0] = N_FEATURES + 1
    return Inputs(sp.csr_array((X.data, indices, X.indptr), shape=X.shape), b.y), None


# ---- index dtypes ----------------------------------------------------------
def _index_dtype_case(name, dtype, value=None, valid=True):
    """indices (and indptr) replaced by ``dtype`` arrays.  With valid
    values the matrix may be accepted (as the same model) or refused as
    malformed; an out-of-range value must be refused."""
    def build(b):
        X = b.X
        indices = X.indices.astype(dtype)
        if value is not None:
            indices[4] = value
        indptr = X.indptr.astype(dtype) if np.iinfo(dtype).max >= X.nnz else X.indptr
        return Inputs(_with(X, indices=indices, indptr=indptr), b.y), Inputs(b.X, b.y)

    build.__name__ = name
    if valid:
        _case("sparse_index_dtype", "twin", True, message=malformed_message)(build)
    else:
        _error("sparse_index_dtype")(build)


for _dtype in (np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.int64):
    _index_dtype_case(f"indices_{np.dtype(_dtype).name}", _dtype)
_index_dtype_case("indices_uint32_out_of_range", np.uint32, value=2**32 - 1, valid=False)
_index_dtype_case("indices_uint64_wraps_negative", np.uint64, value=2**64 - 1, valid=False)
_index_dtype_case("indices_int16_out_of_range", np.int16, value=2**15 - 1, valid=False)


@_case("sparse_index_dtype", "twin", True, message=malformed_message)
def indices_float_integral(b):
    return Inputs(_with(b.X, indices=b.X.indices.astype(np.float64)), b.y), Inputs(b.X, b.y)


@_error("sparse_index_dtype")
def indices_float_fractional(b):
    return Inputs(_with(b.X, indices=b.X.indices + 0.5), b.y), None


@_case("sparse_index_dtype", "twin", True, message=malformed_message)
def indptr_float_integral(b):
    return Inputs(_with(b.X, indptr=b.X.indptr.astype(np.float64)), b.y), Inputs(b.X, b.y)


@_case("sparse_index_dtype", "twin", False)
def indices_int64_indptr_int32(b):
    """Mixed index dtypes: valid, scipy itself can produce it."""
    return Inputs(_with(b.X, indices=b.X.indices.astype(np.int64)), b.y), Inputs(b.X, b.y)


# ---- other sparse formats ----------------------------------------------------
@_error("sparse_other_format")
def csc_row_out_of_range(b):
    X = b.X.tocsc()
    indices = X.indices.copy()
    indices[1] = N_ROWS
    return Inputs(sp.csc_matrix((X.data, indices, X.indptr), shape=X.shape), b.y), None


@_error("sparse_other_format")
def csc_row_negative(b):
    X = b.X.tocsc()
    indices = X.indices.copy()
    indices[1] = -3
    return Inputs(sp.csc_matrix((X.data, indices, X.indptr), shape=X.shape), b.y), None


@_error("sparse_other_format")
def csc_indptr_truncated(b):
    X = b.X.tocsc()
    return Inputs(_with(X, indptr=X.indptr[:-1].copy()), b.y), None


@_error("sparse_other_format")
def csc_indptr_last_long(b):
    X = b.X.tocsc()
    indptr = X.indptr.copy()
    indptr[-1] += 5
    return Inputs(_with(X, indptr=indptr), b.y), None


@_error("sparse_other_format")
def csc_data_shorter(b):
    X = b.X.tocsc()
    return Inputs(_with(X, data=X.data[:-2].copy()), b.y), None


def _coo(b, **coords):
    X = b.X.tocoo()
    row = coords.get("row", X.row)
    col = coords.get("col", X.col)
    data = coords.get("data", X.data)
    X = X.copy()
    if hasattr(X, "coords"):  # scipy >= 1.13 keeps row and col as coords
        X.coords = (row, col)
    else:
        X.row, X.col = row, col
    X.data = data
    return X


@_error("sparse_other_format")
def coo_row_out_of_range(b):
    row = b.X.tocoo().row.copy()
    row[0] = N_ROWS + 2
    return Inputs(_coo(b, row=row), b.y), None


@_error("sparse_other_format")
def coo_col_out_of_range(b):
    col = b.X.tocoo().col.copy()
    col[0] = N_FEATURES
    return Inputs(_coo(b, col=col), b.y), None


@_error("sparse_other_format")
def coo_col_negative(b):
    col = b.X.tocoo().col.copy()
    col[3] = -2
    return Inputs(_coo(b, col=col), b.y), None


@_error("sparse_other_format")
def coo_row_shorter_than_data(b):
    return Inputs(_coo(b, row=b.X.tocoo().row[:-4].copy()), b.y), None


@_error("sparse_other_format")
def coo_data_shorter_than_coords(b):
    return Inputs(_coo(b, data=b.X.tocoo().data[:-4].copy()), b.y), None


# ---- valid variants: accepted, the same model as the canonical matrix ------
def _twin(family="sparse_valid_variant", **kwargs):
    return _case(family, "twin", False, **kwargs)


@_twin()
def strided_data(b):
    return Inputs(_with(b.X, data=_strided(b.X.data)), b.y), Inputs(b.X, b.y)


@_twin()
def strided_indices(b):
    return Inputs(_with(b.X, indices=_strided(b.X.indices)), b.y), Inputs(b.X, b.y)


@_twin()
def strided_indptr(b):
    return Inputs(_with(b.X, indptr=_strided(b.X.indptr)), b.y), Inputs(b.X, b.y)


@_twin()
def strided_all(b):
    X = b.X
    X = _with(X, data=_strided(X.data), indices=_strided(X.indices),
              indptr=_strided(X.indptr))
    return Inputs(X, b.y), Inputs(b.X, b.y)


@_twin()
def strided_float32_data(b):
    X32 = b.X.astype(np.float32)
    return Inputs(_with(X32, data=_strided(X32.data)), b.y), Inputs(X32, b.y)


@_twin()
def read_only_arrays(b):
    X = b.X
    for a in (X.data, X.indices, X.indptr):
        a.flags.writeable = False
    return Inputs(X, b.y), Inputs(b.X, b.y)


@_twin(rtol=1e-7, compare="model")
def unsorted_indices(b):
    X = b.X
    # reverse the entries of every row: same matrix, unsorted indices
    order = np.concatenate([np.arange(X.indptr[i + 1] - 1, X.indptr[i] - 1, -1)
                            for i in range(N_ROWS)]).astype(np.int64)
    Xu = sp.csr_matrix((X.data[order], X.indices[order], X.indptr.copy()), shape=X.shape)
    Xu.has_sorted_indices = False
    return Inputs(Xu, b.y), Inputs(b.X, b.y)


@_twin(rtol=1e-7, compare="model")
def duplicate_entries(b):
    X = b.X
    # split every stored value in two entries of the same column: summed,
    # it is the same matrix
    n = X.nnz
    counts = np.diff(X.indptr) * 2
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(X.indptr.dtype)
    indices = np.repeat(X.indices, 2)
    data = np.repeat(X.data, 2) * np.tile([0.25, 0.75], n)
    return Inputs(sp.csr_matrix((data, indices, indptr), shape=X.shape), b.y), Inputs(b.X, b.y)


@_twin(rtol=1e-7, compare="model")
def explicit_zeros(b):
    X = b.X
    dense_pattern = sp.csr_matrix(np.ones_like(b.X_dense))
    dense_pattern.data = b.X_dense.ravel().copy()  # stored zeros included
    return Inputs(dense_pattern, b.y), Inputs(X, b.y)


@_case("sparse_valid_variant", "finite", True)
def duplicate_entries_flagged_canonical(b):
    """Duplicates behind a has_canonical_format flag set by the caller (the
    flag is a plain attribute).  The documentation does not say whether the
    flag is trusted (then the model differs from the summed matrix's) or the
    duplicates are summed anyway; either way, no crash, no damaged memory
    (a row then has more entries than X has columns) and a finite model."""
    X, twin = duplicate_entries(b)
    X.X.has_canonical_format = True
    return X, twin


@_twin()
def csr_array_valid(b):
    return Inputs(sp.csr_array(b.X), b.y), Inputs(b.X, b.y)


@_twin()
def int64_indices_and_indptr(b):
    X = b.X
    return Inputs(_with(X, indices=X.indices.astype(np.int64), indptr=X.indptr.astype(np.int64)),
                  b.y), Inputs(b.X, b.y)


@_twin()
def csc_valid(b):
    return Inputs(b.X.tocsc(), b.y), Inputs(b.X, b.y)


@_twin()
def coo_valid(b):
    return Inputs(b.X.tocoo(), b.y), Inputs(b.X, b.y)


@_twin(family="dense_valid_variant")
def dense_fortran_order(b):
    return Inputs(np.asfortranarray(b.X_dense), b.y), Inputs(b.X_dense.copy(), b.y)


@_twin(family="dense_valid_variant")
def dense_strided(b):
    wide = np.repeat(b.X_dense, 2, axis=1)
    return Inputs(wide[:, ::2], b.y), Inputs(b.X_dense.copy(), b.y)


@_twin(family="dense_valid_variant")
def dense_read_only(b):
    X = b.X_dense.copy()
    X.flags.writeable = False
    return Inputs(X, b.y), Inputs(b.X_dense.copy(), b.y)


@_twin(family="dense_valid_variant")
def dense_float32(b):
    X32 = b.X_dense.astype(np.float32)
    # float32 and float64 holding the same values give the same model
    return Inputs(X32, b.y), Inputs(X32.astype(np.float64), b.y)


@_twin(family="dense_valid_variant")
def dense_int(b):
    Xi = np.round(3 * b.X_dense).astype(np.int64)
    return Inputs(Xi, b.y), Inputs(Xi.astype(np.float64), b.y)


@_twin(family="dense_valid_variant")
def dense_list_of_lists(b):
    return Inputs(b.X_dense.tolist(), b.y), Inputs(b.X_dense.copy(), b.y)


@_case("dense_valid_variant", "twin", True)
def dense_object_numeric(b):
    return Inputs(b.X_dense.astype(object), b.y), Inputs(b.X_dense.copy(), b.y)


@_case("dense_valid_variant", "twin", True)
def dense_float16(b):
    X16 = b.X_dense.astype(np.float16)
    return Inputs(X16, b.y), Inputs(X16.astype(np.float64), b.y)


# ---- non-finite values -------------------------------------------------------
def _dense_with(b, value, at=(3, 2)):
    X = b.X_dense.copy()
    X[at] = value
    return X


def _sparse_with(b, value, k=4):
    X = b.X
    X.data[k] = value
    return X


@_error("non_finite", message=_sklearn_non_finite("X"))
def nan_in_dense_X(b):
    return Inputs(_dense_with(b, np.nan), b.y), None


@_error("non_finite", message=_sklearn_non_finite("X"))
def inf_in_dense_X(b):
    return Inputs(_dense_with(b, np.inf), b.y), None


@_error("non_finite", message=_sklearn_non_finite("X"))
def neg_inf_in_dense_X(b):
    return Inputs(_dense_with(b, -np.inf), b.y), None


@_error("non_finite", message=_sklearn_non_finite("X"))
def nan_in_sparse_X(b):
    return Inputs(_sparse_with(b, np.nan), b.y), None


@_error("non_finite", message=_sklearn_non_finite("X"))
def inf_in_sparse_X(b):
    return Inputs(_sparse_with(b, np.inf), b.y), None


@_error("non_finite", message=_sklearn_non_finite("X"))
def nan_in_float32_X(b):
    return Inputs(_dense_with(b, np.nan).astype(np.float32), b.y), None


def _y_with(b, value):
    y = b.y.astype(np.float64)
    y[5] = value
    return y


@_error("non_finite", message=_sklearn_non_finite("y"), methods=FIT_METHODS)
def nan_in_y(b):
    return Inputs(b.X, _y_with(b, np.nan)), None


@_error("non_finite", message=_sklearn_non_finite("y"), methods=FIT_METHODS)
def inf_in_y(b):
    return Inputs(b.X, _y_with(b, np.inf)), None


def _sw_with(value, at=6):
    sw = np.ones(N_ROWS)
    sw[at] = value
    return sw


@_error("non_finite", message=_sklearn_non_finite("sample_weight"), methods=FIT_METHODS)
def nan_in_sample_weight(b):
    return Inputs(b.X, b.y, _sw_with(np.nan)), None


@_error("non_finite", message=_sklearn_non_finite("sample_weight"), methods=FIT_METHODS)
def inf_in_sample_weight(b):
    return Inputs(b.X, b.y, _sw_with(np.inf)), None


# ---- huge values: refused naming the input, or learnt (never NaN/zero) ------
for _scale in (1e150, 1e200, 1e300):
    def _build_dense(b, scale=_scale):
        return Inputs(b.X_dense * scale, b.y), None

    def _build_sparse(b, scale=_scale):
        X = b.X
        X.data[7] = scale  # one huge entry among ordinary ones
        return Inputs(X, b.y), None

    def _build_sw(b, scale=_scale):
        return Inputs(b.X, b.y, np.full(N_ROWS, scale)), None

    def _build_y(b, scale=_scale):
        return Inputs(b.X, b.y * scale), None

    _exp = int(np.log10(_scale))
    # One huge entry among ordinary ones may legitimately dominate what is
    # learnt: it must only not give a NaN or infinite model.
    for _name, _build, _input, _accept in (
        (f"X_times_1e{_exp}", _build_dense, "X", "learn"),
        (f"one_entry_1e{_exp}_in_sparse_X", _build_sparse, "X", "finite"),
        (f"sample_weight_1e{_exp}", _build_sw, "sample_weight", "learn"),
        (f"y_times_1e{_exp}", _build_y, "y", "learn"),
    ):
        _build.__name__ = _name
        kw = {"tasks": ("regression",)} if _input == "y" else {}
        _case("magnitude", _accept, True, message=_names_input(_input), methods=FIT_METHODS,
              **kw)(_build)


@_case("magnitude", "finite", True, methods=FIT_METHODS)
def X_times_1e_minus_300(b):
    """Tiny values: nothing may turn into NaN or inf."""
    return Inputs(b.X_dense * 1e-300, b.y), None


@_case("magnitude", "finite", True, methods=FIT_METHODS)
def sample_weight_1e_minus_300(b):
    return Inputs(b.X, b.y, np.full(N_ROWS, 1e-300)), None


# ---- class_weight and combined weights --------------------------------------
_CLASSIFIERS = ("multiclass", "binary")


def _class_weight_case(name, value, fit_only=False):
    def build(b):
        return Inputs(b.X, b.y, params={"class_weight": {int(b.classes[0]): value}}), None

    build.__name__ = name
    _error("class_weight", message=None, tasks=_CLASSIFIERS,
           methods=("fit", "refit") if fit_only else FIT_METHODS)(build)


_class_weight_case("class_weight_negative", -1.0)
_class_weight_case("class_weight_nan", np.nan)
_class_weight_case("class_weight_inf", np.inf)


@_error("class_weight", message=None, tasks=_CLASSIFIERS, methods=("fit", "refit"))
def class_weight_all_zero(b):
    return Inputs(b.X, b.y, params={"class_weight": {int(c): 0.0 for c in b.classes}}), None


@_case("class_weight", "finite", True, tasks=_CLASSIFIERS,
       methods=("partial_fit", "partial_fit_fitted"))
def class_weight_all_zero_chunk(b):
    """A chunk with no weight is a no-op for partial_fit, or refused."""
    return Inputs(b.X, b.y, params={"class_weight": {int(c): 0.0 for c in b.classes}}), None


@_error("class_weight", message=None, tasks=_CLASSIFIERS, methods=("fit", "refit"))
def combined_weights_all_zero(b):
    """Sample weights only on class 0, class 0 weighted 0: nothing to learn."""
    sw = (b.y == b.classes[0]).astype(np.float64)
    return Inputs(b.X, b.y, sw, params={"class_weight": {int(b.classes[0]): 0.0}}), None


@_error("class_weight", message=None, methods=("fit", "refit"))
def sample_weight_all_zero(b):
    return Inputs(b.X, b.y, np.zeros(N_ROWS)), None


@_error("class_weight", message=None, methods=FIT_METHODS)
def sample_weight_negative(b):
    return Inputs(b.X, b.y, _sw_with(-1.0)), None


@_error("class_weight", message=None, methods=FIT_METHODS)
def sample_weight_wrong_length(b):
    return Inputs(b.X, b.y, np.ones(N_ROWS + 1)), None


@_error("class_weight", message=None, methods=FIT_METHODS)
def sample_weight_2d(b):
    return Inputs(b.X, b.y, np.ones((N_ROWS, 1))), None


@_error("class_weight", message=None, tasks=_CLASSIFIERS, methods=FIT_METHODS)
def class_weight_unknown_label(b):
    return Inputs(b.X, b.y, params={"class_weight": {99: 2.0}}), None


# ---- labels --------------------------------------------------------------------
@_error("labels", message=None, tasks=_CLASSIFIERS, methods=("partial_fit", "partial_fit_fitted"))
def label_not_in_classes(b):
    y = b.y.copy()
    y[4] = 7
    return Inputs(b.X, y), None


@_error("labels", message=None, tasks=_CLASSIFIERS, methods=("partial_fit_fitted",))
def classes_argument_differs(b):
    return Inputs(b.X, b.y, classes=np.append(b.classes, 9)), None


@_error("labels", message=None, tasks=_CLASSIFIERS, methods=("fit", "refit", "partial_fit"))
def single_class(b):
    return Inputs(b.X, np.zeros(N_ROWS, dtype=np.int64), classes=np.array([0])), None


@_error("labels", message=None, tasks=_CLASSIFIERS, methods=FIT_METHODS)
def continuous_labels(b):
    return Inputs(b.X, b.y + 0.5, classes=b.classes + 0.5), None


@_error("labels", message=None, methods=FIT_METHODS)
def y_wrong_length(b):
    return Inputs(b.X, b.y[:-1]), None


@_error("labels", message=None, methods=FIT_METHODS)
def y_2d(b):
    return Inputs(b.X, np.column_stack([b.y, b.y])), None


# ---- shapes ----------------------------------------------------------------------
_WIDTH_METHODS = ("partial_fit_fitted",) + PREDICT_METHODS


@_error("shape", message=None, methods=_WIDTH_METHODS)
def wider_dense_X(b):
    return Inputs(np.hstack([b.X_dense, b.X_dense[:, :1]]), b.y), None


@_error("shape", message=None, methods=_WIDTH_METHODS)
def narrower_dense_X(b):
    return Inputs(b.X_dense[:, :-1].copy(), b.y), None


@_error("shape", message=None, methods=_WIDTH_METHODS)
def wider_sparse_X(b):
    return Inputs(sp.csr_matrix(np.hstack([b.X_dense, b.X_dense[:, :1]])), b.y), None


@_error("shape", message=None, methods=_WIDTH_METHODS)
def narrower_sparse_X(b):
    return Inputs(sp.csr_matrix(b.X_dense[:, :-1]), b.y), None


@_error("shape", message=None, methods=("refit",))
def warm_start_refit_other_width(b):
    return Inputs(b.X_dense[:, :-1].copy(), b.y, params={"warm_start": True}), None


@_error("shape", message=None)
def empty_dense_X(b):
    return Inputs(np.zeros((0, N_FEATURES)), b.y[:0], np.zeros(0)), None


@_error("shape", message=None)
def empty_sparse_X(b):
    return Inputs(sp.csr_matrix((0, N_FEATURES)), b.y[:0], np.zeros(0)), None


@_error("shape", message=None)
def zero_features_dense(b):
    return Inputs(np.zeros((N_ROWS, 0)), b.y), None


@_error("shape", message=None)
def zero_features_sparse(b):
    return Inputs(sp.csr_matrix((N_ROWS, 0)), b.y), None


@_error("shape", message=None)
def one_dimensional_X(b):
    return Inputs(b.X_dense[:, 0].copy(), b.y), None


@_error("shape", message=None)
def three_dimensional_X(b):
    return Inputs(b.X_dense[:, :, None].copy(), b.y), None


def _over_wide(b, width):
    X = b.X
    return sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                         shape=(N_ROWS, width))


# Valid, but its state (several float64 arrays per column) cannot be
# allocated: the workers run under an address-space limit, so it is a
# MemoryError (or a ValueError refusing the width) rather than the OOM killer.
@_error("shape", message=None, errors=("ValueError", "MemoryError"))
def over_wide_2pow31_columns(b):
    return Inputs(_over_wide(b, 2**31), b.y), None


@_error("shape", message=None, errors=("ValueError", "MemoryError"))
def over_wide_3e9_columns(b):
    return Inputs(_over_wide(b, 3_000_000_000), b.y), None


# ---- dtypes ------------------------------------------------------------------------
@_error("dtype", message=None)
def complex_dense_X(b):
    return Inputs(b.X_dense.astype(np.complex128), b.y), None


@_error("dtype", message=None)
def complex_sparse_X(b):
    return Inputs(b.X.astype(np.complex128), b.y), None


@_error("dtype", message=None)
def object_X_with_string(b):
    X = b.X_dense.astype(object)
    X[2, 3] = "a"
    return Inputs(X, b.y), None


@_error("dtype", message=None, methods=FIT_METHODS)
def complex_sample_weight(b):
    return Inputs(b.X, b.y, np.ones(N_ROWS, dtype=np.complex128)), None


@_error("dtype", message=None, methods=FIT_METHODS, tasks=("regression",))
def complex_y(b):
    return Inputs(b.X, b.y.astype(np.complex128)), None


# ---- state the call starts from ------------------------------------------------
_STATE_METHODS = ("refit", "partial_fit_fitted") + PREDICT_METHODS


@_case("state", "twin", True, methods=_STATE_METHODS)
def mmap_loaded_model(b):
    """The fitted model dumped with joblib and loaded with mmap_mode='r'
    (read-only fitted arrays): the call works as on the in-memory model, or
    is refused with the model unchanged."""
    return Inputs(b.X, b.y, source="mmap"), Inputs(b.X, b.y)


@_case("state", "twin", True, methods=("refit",))
def mmap_loaded_model_warm_start(b):
    return (Inputs(b.X, b.y, params={"warm_start": True}, source="mmap"),
            Inputs(b.X, b.y, params={"warm_start": True}))


# ---- ordinary data on which a model must be learnt ----------------------------
def _standardised(n, d, seed):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.5, 3, d) + rng.randn(d)
    return (X - X.mean(0)) / X.std(0), rng


@_case("divergence", "learn", True, methods=FIT_METHODS, tasks=("regression",))
def regression_target_1e_minus_3(b):
    """Standardised features, target of order 1e-3: every update rule learns
    this (today "linear" and "twostep" return an all-NaN model)."""
    X, rng = _standardised(200, N_FEATURES, 1)
    y = 1e-3 * (X @ rng.randn(N_FEATURES)) + 1e-4 * rng.randn(200)
    return Inputs(X, y), None


@_case("divergence", "learn", True, methods=FIT_METHODS, tasks=("regression",))
def regression_target_1e_minus_3_sparse(b):
    X, rng = _standardised(200, N_FEATURES, 2)
    y = 1e-3 * (X @ rng.randn(N_FEATURES))
    return Inputs(sp.csr_matrix(X), y), None


@_case("divergence", "learn", False, methods=FIT_METHODS)
def standardised_dense(b):
    """Sane data: must be learnt, never refused."""
    X, rng = _standardised(N_ROWS, N_FEATURES, 3)
    if b.is_classifier:
        y = np.argmax(X @ rng.randn(N_FEATURES, len(b.classes)), axis=1)
        y[: len(b.classes)] = b.classes  # every class present
    else:
        y = X @ rng.randn(N_FEATURES) + 0.1 * rng.randn(N_ROWS)
    return Inputs(X, y), None


@_case("divergence", "learn", False)
def base_data_sparse(b):
    """The base data itself: the harness' sanity check."""
    return Inputs(b.X, b.y), None


@_case("divergence", "learn", False)
def base_data_dense(b):
    return Inputs(b.X_dense.copy(), b.y), None


# ---- self-checks of the harness (not hostile inputs; run only by name) ----
@_case("selfcheck", "learn", False)
def selfcheck_segfault(b):
    import ctypes

    ctypes.string_at(0)  # reads address 0: SIGSEGV


@_case("selfcheck", "learn", False)
def selfcheck_heap_report(b):
    sys.stderr.write("free(): invalid pointer\n")  # what glibc prints on heap damage
    sys.stderr.flush()
    os.abort()


@_error("selfcheck")
def selfcheck_valid_input_must_be_refused(b):
    return Inputs(b.X, b.y), None


# ---------------------------------------------------------------------------
# running one job
def _jsonable_error(exc):
    return {"type": type(exc).__name__, "message": str(exc)[:500]}


def model_arrays(est, compare="state"):
    """The fitted state as comparable float arrays (or reprs), without the
    wall-clock records; only coef_ and intercept_ if compare == "model"."""
    skip = set(getattr(est, "_timing_attributes", ()))
    out = {}
    # coef_ may be computed from the state when read rather than stored
    items = {**vars(est), **({"coef_": est.coef_} if hasattr(est, "coef_") else {})}
    for key, value in items.items():
        if not key.endswith("_") or key.startswith("_") or key in skip:
            continue
        if compare == "model" and key not in ("coef_", "intercept_"):
            continue
        try:
            arr = np.asarray(value, dtype=np.float64)
            out[key] = arr
        except (TypeError, ValueError):
            out[key] = repr(value)
    return out


def _same(a, b, rtol):
    """Same model / same output: arrays close (NaN equal to NaN), other
    values equal.  Returns (bool, what differs)."""
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return False, f"attributes differ: {sorted(set(a) ^ set(b))}"
        for key in a:
            ok, why = _same(a[key], b[key], rtol)
            if not ok:
                return False, f"{key}: {why}"
        return True, ""
    if isinstance(a, str) or isinstance(b, str):
        return (a == b), "values differ"
    if a.shape != b.shape:
        return False, f"shape {a.shape} != {b.shape}"
    if not np.allclose(a, b, rtol=rtol, atol=1e-12, equal_nan=True):
        with np.errstate(invalid="ignore"):
            diff = np.nanmax(np.abs(a - b)) if a.size else 0.0
        return False, f"max difference {diff:.3g}"
    return True, ""


def _fitted_model_problem(est, require_learning):
    """None if coef_/intercept_ are finite (and coef_ not all zero when
    learning is required), else what is wrong."""
    coef = np.asarray(est.coef_, dtype=np.float64)
    intercept = np.asarray(est.intercept_, dtype=np.float64)
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))):
        return "non-finite model"
    if require_learning and not np.any(coef):
        return "all-zero model"
    return None


class Context:
    """Per-configuration state of a worker: base data and the fitted model."""

    def __init__(self, config, n_features=N_FEATURES, tmpdir=None):
        self.config = config
        self.base = base_data(config_task(config), n_features)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make_estimator(config).fit(self.base.X, self.base.y)
        self.fitted_bytes = pickle.dumps(est)
        # dumped once here, in the worker, so forked children only load it
        import joblib

        # in the caller's directory, which outlives a worker that crashes
        self._mmap_dir = tempfile.mkdtemp(prefix="hostile_mmap_", dir=tmpdir)
        self._mmap_path = os.path.join(self._mmap_dir, "model.joblib")
        joblib.dump(est, self._mmap_path)

    def estimator(self, method, inputs):
        if inputs.source == "mmap":
            import joblib

            est = joblib.load(self._mmap_path, mmap_mode="r")
        elif method in ("fit", "partial_fit"):
            est = make_estimator(self.config)
        else:
            est = pickle.loads(self.fitted_bytes)
        if inputs.params:
            est.set_params(**inputs.params)
        return est

    def close(self):
        import shutil

        shutil.rmtree(self._mmap_dir, ignore_errors=True)


def call(est, method, inputs, base):
    """Make the call; returns the output of a prediction method, else None."""
    if method in PREDICT_METHODS:
        return getattr(est, method)(inputs.X)
    kwargs = {}
    if inputs.sample_weight is not None:
        kwargs["sample_weight"] = inputs.sample_weight
    if method in ("fit", "refit"):
        est.fit(inputs.X, inputs.y, **kwargs)
    elif base.is_classifier and (method == "partial_fit" or not isinstance(inputs.classes, str)):
        classes = base.classes if isinstance(inputs.classes, str) else inputs.classes
        est.partial_fit(inputs.X, inputs.y, classes=classes, **kwargs)
    else:
        est.partial_fit(inputs.X, inputs.y, **kwargs)
    return None


def run_job(ctx, case, method):
    """Run one job (``case`` a Case or the name of one) in this process and
    classify its outcome (a dict)."""
    case = CASES[case] if isinstance(case, str) else case
    inputs, twin = case.build(ctx.base)
    est = ctx.estimator(method, inputs)
    before = pickle.dumps(est)
    result = {"outcome": None, "detail": "", "error": None, "message_ok": None}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            output = call(est, method, inputs, ctx.base)
        except Exception as exc:  # MemoryError included
            result["error"] = _jsonable_error(exc)
            try:
                changed = pickle.dumps(est) != before
            except Exception as pickling_error:  # the state cannot even be pickled
                changed, result["detail"] = True, f"unpicklable: {pickling_error!r}"
            if changed:
                result["outcome"] = "corruption"
                result["detail"] = result["detail"] or "exception left the estimator changed"
            elif case.reject and type(exc).__name__ in case.errors:
                result["outcome"] = "clean_error"
                result["message_ok"] = case.message is None or bool(case.message(str(exc)))
            else:
                result["outcome"] = "wrong_error"
                result["detail"] = "valid input refused" if not case.reject else (
                    "unexpected exception type")
            return result

        if method in PREDICT_METHODS and pickle.dumps(est) != before:
            result["outcome"], result["detail"] = "corruption", f"{method} changed the estimator"
            return result
        result["outcome"], result["detail"] = _judge_success(
            case, ctx, method, est, output, inputs, twin)
    return result


def _expected_output_shape(method, n_rows, base):
    if method == "predict" or (method == "decision_function" and len(base.classes) == 2):
        return (n_rows,)
    return (n_rows, len(base.classes))


def _judge_success(case, ctx, method, est, output, inputs, twin):
    if case.accept == "never":
        return "silent_wrong", "accepted an input that must be refused"
    if case.accept == "twin":
        twin_est = ctx.estimator(method, twin)
        try:
            twin_output = call(twin_est, method, twin, ctx.base)
        except Exception as exc:  # the canonical call must work: a harness defect
            return "harness_error", f"canonical twin failed: {exc!r}"
        if method in PREDICT_METHODS:
            ok, why = _same(np.asarray(output, dtype=np.float64),
                            np.asarray(twin_output, dtype=np.float64), case.rtol)
        else:
            ok, why = _same(model_arrays(est, case.compare),
                            model_arrays(twin_est, case.compare), case.rtol)
            problem = _fitted_model_problem(est, False)
            if ok and problem:
                ok, why = False, problem
        return ("ok", "") if ok else ("silent_wrong", f"differs from the canonical twin: {why}")
    # "learn" / "finite"
    if method in PREDICT_METHODS:
        output = np.asarray(output)
        n_rows = inputs.X.shape[0] if hasattr(inputs.X, "shape") else len(inputs.X)
        expected = _expected_output_shape(method, n_rows, ctx.base)
        if output.shape != expected:
            return "silent_wrong", f"output shape {output.shape}, expected {expected}"
        if output.dtype.kind == "f" and not np.all(np.isfinite(output)):
            return "silent_wrong", "non-finite output"
        return "ok", ""
    problem = _fitted_model_problem(est, case.accept == "learn")
    # continuing the base model, one pass over other data need not fit them
    if problem is None and case.accept == "learn" and method != "partial_fit_fitted":
        problem = _learning_problem(est, inputs, ctx.base)
    return ("silent_wrong", problem) if problem else ("ok", "")


def _learning_problem(est, inputs, base):
    """None if the model fits its training data clearly better than a
    constant does, else what is wrong.  A finite, non-zero model can still
    be wrong: fitted to targets of order 1e150 it may predict values of
    order 1."""
    y = np.asarray(inputs.y)
    pred = np.asarray(est.predict(inputs.X))
    if base.is_classifier:
        accuracy = float(np.mean(pred == y))
        majority = np.unique(y, return_counts=True)[1].max() / y.shape[0]
        if not accuracy >= majority + 0.1:  # every configuration reaches +0.2 on sane data
            return f"training accuracy {accuracy:.2f}, majority rate {majority:.2f}"
        return None
    scale = np.max(np.abs(y))  # scaled first: squares of 1e300 overflow
    residual = np.sum(((y - pred) / scale) ** 2)
    spread = np.sum(((y - y.mean()) / scale) ** 2)
    r2 = 1.0 - residual / spread
    if not r2 >= 0.5:  # every update rule reaches 0.98 on sane data
        return f"training R^2 {r2:.3g}"
    return None


# ---------------------------------------------------------------------------
# worker process
_HEAP_REPORT = re.compile(
    r"malloc\(\)|free\(\)|double free|corrupted|munmap_chunk|malloc_consolidate|"
    r"realloc\(\)|AddressSanitizer|heap-buffer-overflow|stack smashing"
)
# Enough for the estimators on small data, far too little for the state of
# an over-wide X, so that case is a MemoryError instead of the OOM killer.
MEMORY_LIMIT = 3 * 2**30


def _under_asan(environ):
    """Whether the AddressSanitizer runtime is preloaded (CI's ASan stage)."""
    return "libasan" in environ.get("LD_PRELOAD", "")


def _limit_memory():
    import faulthandler

    faulthandler.enable()  # a crash prints the Python stack into the report
    try:
        import resource

        # not under AddressSanitizer, which reserves terabytes of address
        # space for its shadow memory: there worker_env caps each allocation
        # at the same size instead (the estimators refuse a state larger
        # than the machine's memory with a MemoryError of their own anyway)
        if not _under_asan(os.environ):
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # crashes are expected here
    except (ImportError, ValueError, OSError):
        pass


def _summarise_stderr(text):
    """The telling lines of a dying process' stderr: an allocator report
    and the innermost Python frame of faulthandler's dump, on one line."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    keep = [line for line in lines if _HEAP_REPORT.search(line)][:1]
    keep += [line for line in lines if line.startswith("File ")][:1]
    return " | ".join(keep) or " | ".join(lines[:2])[:300]


def _classify_death(status_text, stderr_text):
    if _HEAP_REPORT.search(stderr_text or ""):
        return "corruption"
    return "crash"


def _malloc_trim():
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class _ChildTeardown(BaseException):
    """Unwinds a forked child to a normal interpreter exit (see _run_forked)."""


def _run_forked(ctx, case, method, timeout, teardown=False):
    """run_job in a forked child: a crash or a hang costs only the child.

    With ``teardown``, a child that accepted an input it should have refused
    exits through the interpreter's normal finalisation (~0.1 s) instead of
    ``os._exit``: freeing every object is when an out-of-bounds write into a
    long-lived neighbour shows, and that is then reported as corruption.
    """
    read_fd, write_fd = os.pipe()
    err = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # child
        finalise = False
        try:
            os.close(read_fd)
            os.dup2(err.fileno(), 2)
            try:
                payload = run_job(ctx, case, method)
            except BaseException as exc:
                payload = {"outcome": "harness_error", "detail": repr(exc)}
            # run_job's objects are freed on return; malloc_trim then walks
            # the allocator's free lists, so heap damage that the frees did not
            # trip over aborts here, charged to this job, instead of passing
            _malloc_trim()
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(write_fd, data):]
            os.close(write_fd)
            finalise = teardown and payload.get("outcome") == "silent_wrong"
        except BaseException:
            os._exit(1)
        if not finalise:
            os._exit(0)
        sys.stdout = open(os.devnull, "w")  # nothing of the worker's protocol
        raise _ChildTeardown
    os.close(write_fd)
    chunks, deadline, timed_out = [], time.monotonic() + timeout, False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([read_fd], [], [], remaining)
        if ready:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    err.seek(0)
    stderr_text = err.read().decode(errors="replace")[:4000]
    err.close()
    if timed_out:
        return {"outcome": "crash", "detail": f"hung for more than {timeout} s"}
    if os.WIFSIGNALED(status) or not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        how = f"killed by {signal.Signals(sig).name}" if sig else (
            f"exited with status {os.WEXITSTATUS(status)} without a result")
        if chunks:  # it reported, then died while freeing its objects
            how += f" at exit after {json.loads(b''.join(chunks))['outcome']}"
        return {"outcome": _classify_death(how, stderr_text),
                "detail": f"{how}: {_summarise_stderr(stderr_text)}"}
    payload = json.loads(b"".join(chunks))
    if _HEAP_REPORT.search(stderr_text):
        payload["outcome"] = "corruption"
        payload["detail"] = f"heap report: {_summarise_stderr(stderr_text)}"
    return payload


def worker_main():
    """Read {"jobs": [[config, case, method], ...], "isolate": ..., "timeout": ...}
    from stdin; print one JSON line per job start and per result."""
    request = json.loads(sys.stdin.read())
    worker_pid = os.getpid()
    _limit_memory()
    contexts = {}
    out = sys.stdout
    try:
        for i, (config, case_name, method) in enumerate(request["jobs"]):
            if os.getpid() != worker_pid:  # a forked child finishing its teardown
                break
            print(json.dumps({"i": i, "start": True}), file=out, flush=True)
            if config not in contexts:
                contexts[config] = Context(config, tmpdir=request.get("tmpdir"))
            ctx = contexts[config]
            start = time.perf_counter()
            if request["isolate"] == "fork":
                result = _run_forked(ctx, case_name, method, request["timeout"],
                                     request.get("teardown", False))
            else:
                result = run_job(ctx, case_name, method)
            result["seconds"] = round(time.perf_counter() - start, 4)
            print(json.dumps({"i": i, "result": result}), file=out, flush=True)
    except _ChildTeardown:
        return  # a forked child: on to the interpreter's exit
    finally:
        if os.getpid() == worker_pid:  # the contexts belong to the worker
            for ctx in contexts.values():
                ctx.close()


def fuzz_case(request):
    """The Case of one fuzz request: a CSR matrix assembled from raw
    (possibly malformed, possibly strided) arrays; if the arrays form a
    valid matrix the call must give the model of ``request["canonical"]``,
    else it must be refused as malformed."""
    def restride(a, strided):
        return _strided(a) if strided else a

    def build(base):
        shape = tuple(request["shape"])
        X = sp.csr_matrix(shape, dtype=np.float64)
        for name in ("data", "indices", "indptr"):
            setattr(X, name, restride(request[name], request["strided"][name]))
        inputs = Inputs(X, request["y"])
        if request["canonical"] is None:
            return inputs, None
        return inputs, Inputs(request["canonical"], request["y"])

    valid = request["canonical"] is not None
    return Case("fuzz", "fuzz", build, "twin" if valid else "never", not valid,
                message=malformed_message, rtol=1e-6, compare="model")


def serve_main():
    """Fuzz server: read length-prefixed pickled requests from stdin, run
    each in a forked child, print one JSON result per line."""
    _limit_memory()
    contexts = {}
    stdin = sys.stdin.buffer
    while True:
        header = stdin.read(8)
        if len(header) < 8:
            break
        request = pickle.loads(stdin.read(int.from_bytes(header, "little")))
        key = (request["config"], request["n_features"])
        if key not in contexts:
            contexts[key] = Context(*key, tmpdir=request.get("tmpdir"))
        result = _run_forked(contexts[key], fuzz_case(request), request["method"],
                             request.get("timeout", 30.0))
        print(json.dumps(result), flush=True)
    for ctx in contexts.values():
        ctx.close()


class FuzzServer:
    """A long-lived fuzz server subprocess (imports once, forks per call)."""

    def __init__(self, python=None):
        self._args = [python or sys.executable, os.path.abspath(__file__), "--serve"]
        self._proc = None
        self._tmp = tempfile.TemporaryDirectory(prefix="hostile_fuzz_")

    def run(self, request):
        """The outcome dict of one request (see ``fuzz_case``): keys config,
        method, n_features, shape, data, indices, indptr, strided, canonical, y."""
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(self._args, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, env=worker_env())
        frame = pickle.dumps({**request, "tmpdir": self._tmp.name})
        try:
            self._proc.stdin.write(len(frame).to_bytes(8, "little") + frame)
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:  # the server itself died: start a new one next time
            self._proc.kill()
            self._proc.wait()
            self._proc = None
            return {"outcome": "crash", "detail": "fuzz server died"}
        return json.loads(line)

    def close(self):
        if self._proc is not None:
            self._proc.stdin.close()
            self._proc.wait(timeout=60)
            self._proc = None
        self._tmp.cleanup()


# ---------------------------------------------------------------------------
# the caller's side
def worker_env(malloc_check=False):
    env = dict(os.environ)
    # the workers import the package the caller would import
    import importlib.util

    spec = importlib.util.find_spec("sklearn_adaprox")
    if spec is not None and spec.origin:
        root = os.path.dirname(os.path.dirname(spec.origin))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    # one thread per worker: fork-safe, and the machine is shared
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    # glibc writes its fatal heap reports to the terminal unless told otherwise
    env["LIBC_FATAL_STDERR_"] = "1"
    if _under_asan(env):
        # the address space cannot be limited under AddressSanitizer
        # (_limit_memory): its allocator refuses any one allocation above
        # the same limit instead, a MemoryError as under the limit, where the
        # state of 3e9 or 2**31 columns of some estimators was otherwise
        # mapped and its shadow written: 11 s a call alone, 558 s for the 180
        # over-wide jobs of test_hostile_inputs beside a CI run (0.3 s capped)
        env["ASAN_OPTIONS"] = ":".join(filter(None, (
            env.get("ASAN_OPTIONS"), f"max_allocation_size_mb={MEMORY_LIMIT >> 20}")))
    if malloc_check:
        # glibc's checking allocator: heap damage aborts with a report at the
        # next malloc/free, close to the job that caused it
        for path in ("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
                     "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"):
            if os.path.exists(path):
                env["LD_PRELOAD"] = path
                env["GLIBC_TUNABLES"] = "glibc.malloc.check=3"
                break
    return env


def _run_worker(jobs, isolate, timeout, env, python, teardown=False):
    """Results of ``jobs`` from one worker: a list with None for the jobs
    that never finished, and the index of the job running when the worker
    died (None if it did not)."""
    proc = subprocess.Popen(
        [python, os.path.abspath(__file__), "--worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    with tempfile.TemporaryDirectory(prefix="hostile_worker_") as tmpdir:
        return _talk_to_worker(proc, jobs, {"jobs": jobs, "isolate": isolate,
                                            "timeout": timeout, "teardown": teardown,
                                            "tmpdir": tmpdir})


def _talk_to_worker(proc, jobs, request):
    timeout, isolate = request["timeout"], request["isolate"]
    proc.stdin.write(json.dumps(request).encode())
    proc.stdin.close()
    results, running, buffer = [None] * len(jobs), None, b""
    # a worker that stops reporting for this long is hung: the fork mode has
    # its own per-job timeout, so the worker's is longer
    silence = timeout + (60 if isolate == "fork" else 0) + 120  # + the first imports
    stderr_chunks = []
    streams = [proc.stdout, proc.stderr]
    last = time.monotonic()
    while streams:
        ready, _, _ = select.select(streams, [], [], 1.0)
        for stream in ready:
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                streams.remove(stream)
                continue
            if stream is proc.stderr:
                stderr_chunks.append(chunk)
                continue
            last = time.monotonic()
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                message = json.loads(line)
                if "start" in message:
                    running = message["i"]
                else:
                    results[message["i"]] = message["result"]
                    running = None
        if time.monotonic() - last > silence:
            proc.kill()
            break
    proc.wait()
    stderr_text = b"".join(stderr_chunks).decode(errors="replace")
    died = proc.returncode != 0
    if died and running is not None:
        how = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        results[running] = {"outcome": _classify_death(how, stderr_text),
                            "detail": f"worker {how}: {_summarise_stderr(stderr_text)}"}
    elif died and all(r is None for r in results):
        raise RuntimeError(f"hostile-input worker failed to start:\n{stderr_text[-3000:]}")
    return results, running if died else None


def run_jobs(jobs, isolate="batch", timeout=30.0, malloc_check=False, python=None,
             progress=None, teardown=False, one_worker=False):
    """Run jobs ``(config, case, method)``; returns their outcome dicts in
    order (each with "job" and the "isolate" mode that produced it added).

    ``isolate="batch"``: a worker runs the jobs in process, one worker per
    configuration (or one for all of them with ``one_worker``, which saves
    the start-up of the others); when a worker dies, every job of the
    configuration it was running is run again with ``isolate="fork"`` (a
    batch crash may come from an earlier job of that configuration), and the
    other configurations go on in a new batch worker.  ``isolate="fork"``:
    every job runs in its own forked child of the worker, so a crash is
    named at its job.  ``teardown`` (fork mode): see ``_run_forked``.
    """
    python = python or sys.executable
    env = worker_env(malloc_check)
    results = [None] * len(jobs)
    modes = {}

    def run(indices, mode):
        """Fill results[i] for the indices (all of one mode)."""
        todo = list(indices)
        while todo:
            out, crashed_at = _run_worker([list(jobs[i]) for i in todo], mode, timeout,
                                          env, python, teardown)
            if crashed_at is not None and mode == "batch":
                culprit = jobs[todo[crashed_at]][0]
                run([i for i in indices if jobs[i][0] == culprit], "fork")
                for i, r in zip(todo, out):
                    if r is not None and jobs[i][0] != culprit:
                        results[i], modes[i] = r, mode
                todo = [i for i in todo if jobs[i][0] != culprit and results[i] is None]
                continue
            for i, r in zip(todo, out):
                if r is not None:
                    results[i], modes[i] = r, mode
            # in fork mode the worker itself should not die; if it does, go on
            # after the job it was running (that job has its crash result)
            todo = [i for i in todo if results[i] is None]
            if crashed_at is None:
                for i in todo:  # the worker hung or vanished between jobs
                    results[i], modes[i] = {"outcome": "crash", "detail": "worker stopped"}, mode
                todo = []

    by_config = {}
    for index, job in enumerate(jobs):
        by_config.setdefault(job[0], []).append(index)
    groups = [list(range(len(jobs)))] if one_worker else list(by_config.values())
    for group in groups:
        run(group, isolate)
        if progress:
            for config in dict.fromkeys(jobs[i][0] for i in group):
                progress(config, [results[i] for i in by_config[config]])
    for i, r in enumerate(results):
        r["job"], r["isolate"] = list(jobs[i]), modes[i]
    return results


def all_jobs(configs=None, cases=None, methods=None):
    """Every applicable (config, case, method)."""
    jobs = []
    cases = cases or [name for name, case in CASES.items() if case.family != "selfcheck"]
    for config in configs or CONFIGS:
        for name in cases:
            for method in methods or METHODS:
                if CASES[name].applies(config, method):
                    jobs.append((config, name, method))
    return jobs


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker_main()
    elif sys.argv[1:] == ["--serve"]:
        serve_main()
    else:
        sys.exit("usage: hostile_cases.py --worker | --serve (started by run_jobs "
                 "and FuzzServer)")
