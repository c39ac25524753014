"""The batch l1-regularised logistic problem of RDA+'s local phase (Lee &
Wright 2012): the surrogate ``f(w, b)`` over the stored rows, its
restriction to a support, and the local phase itself (reduced Newton and
reduced-gradient steps on that support, with a line search), in vectorised
NumPy/SciPy batch work (compiled, ``_rda_fast.dense_local_phase``, for a
narrow dense float64 X).  ``RDAPlusClassifier`` runs it after dual averaging
has identified the support; ``DaskShardedTrainer`` runs the same steps over
partitions.
"""
import contextlib
import inspect
import threading

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve, lstsq
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit
from threadpoolctl import ThreadpoolController

from ._dataset import touched_columns
from ._rda_fast import csr_gram, csr_normal_product, dense_local_phase, dense_measures

# Cap on the iterations of one local phase (each is one Newton or one
# reduced-gradient step with its line search).
MAX_LOCAL_ITER = 200
# With tol=None a local phase runs until its violation is at round-off.
ROUNDOFF = 1e-12
# Line search: Armijo constant and maximum number of halvings.
ARMIJO = 1e-4
MAX_HALVINGS = 50
# Direct (Cholesky) Newton steps are damped the Levenberg-Marquardt way,
# (H + mu diag(H)) p = -r: a step that its line search would halve more
# than MAX_NEWTON_HALVINGS times is solved again with mu ten times larger
# (from 1e-3), up to NEWTON_ATTEMPTS solves, and mu shrinks tenfold after a
# full step.  Undamped steps on a nearly singular Hessian (a9a's one-hot
# groups sum to the intercept's column) were accepted only at 2**-36, each
# halving a pass over the rows: a third of the local phase.
MAX_NEWTON_HALVINGS = 4
NEWTON_ATTEMPTS = 3
# A float64 CSR X of at least this many entries gets a column-major copy
# for the local phase (Surrogate.column_major): below, making it and the
# column bounds (a few passes over X) cost more than they save (a9a's
# 450,000 entries: 20% more time).
COLUMN_MAJOR_ENTRIES = 1 << 20
# The local phase computes the gradient on the columns that may violate
# optimality, outside the support, from that copy while they hold at most
# this share of X's entries, else the full product (_ScreenedGradient).
SCREEN_ENTRIES = 0.125
# Cap on the conjugate-gradient iterations of one (damped) Newton direction.
MAX_CG_ITER = 100
# Row blocks of the batch computations hold about this many float64 values,
# so that float32 input is never converted as a whole.
BLOCK_VALUES = 1 << 15


_THREADPOOL_CONTROLLER = None
_BLAS_LOCK = threading.Lock()
_BLAS_LIMITER = None  # the limit in force while _BLAS_USERS > 0
_BLAS_USERS = 0

# the name of cg's relative tolerance: rtol from scipy 1.12 on, tol before.
# atol=0 is passed explicitly: before 1.12 its default ("legacy") returned a
# zero solution whenever |b| <= tol, i.e. every Newton direction once the
# residual was small.
CG_RTOL = "rtol" if "rtol" in inspect.signature(cg).parameters else "tol"


@contextlib.contextmanager
def single_threaded_blas():
    """Context limiting BLAS to one thread while any thread is inside it.

    The limit is process-wide, so it is counted: the first thread in sets
    it, the last one out restores it.  (Each thread setting and restoring
    its own limit would change the thread count of OpenBLAS while another
    thread is inside a BLAS call, which corrupts OpenBLAS's buffers: two
    threads fitting at once crashed the process.)  The controller is built
    once: finding the BLAS libraries costs milliseconds."""
    global _THREADPOOL_CONTROLLER, _BLAS_LIMITER, _BLAS_USERS
    with _BLAS_LOCK:
        if _BLAS_USERS == 0:
            if _THREADPOOL_CONTROLLER is None:
                _THREADPOOL_CONTROLLER = ThreadpoolController()
            _BLAS_LIMITER = _THREADPOOL_CONTROLLER.limit(limits=1, user_api="blas")
        _BLAS_USERS += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if _BLAS_USERS == 0:
                _BLAS_LIMITER.restore_original_limits()
                _BLAS_LIMITER = None


def _soft(x, a):
    return np.sign(x) * np.maximum(np.abs(x) - a, 0.0)


class DesignCache:
    """What the local phase derives from a design X alone (its live
    columns, their entries per column, a renumbered and a column-major
    copy), made once and shared by the surrogates of every binary problem
    of one call: one-vs-rest on 20 newsgroups (20 problems, 2**20 hashed
    columns) rebuilt them for each problem, about a sixth of RDA+'s fit.
    A re-entrant lock makes the problems' threads build each piece once."""

    def __init__(self):
        self._lock = threading.RLock()
        self._values = {}

    def get(self, name, make):
        """The piece ``name``, made by ``make()`` the first time."""
        with self._lock:
            if name not in self._values:
                self._values[name] = make()
            return self._values[name]


def columns_below(indices, columns, n_features):
    """For each of ``indices`` (columns of a matrix of width
    ``n_features``), the number of the sorted ``columns`` below it: its
    position among them, if it is one.  A binary search per entry where
    the entries are few for the width; else one per distinct column, read
    per entry from a map of the width written at those columns only (its
    other pages are never touched).  A running count over all of the width
    took 126 ms on a partial_fit reservoir of 275,000 entries over 2**24
    columns, this 17; 8.8 and 2.0 ms over 2**20 (busy machine)."""
    if 64 * indices.shape[0] < n_features:
        return np.searchsorted(columns, indices)
    stored = touched_columns(indices, n_features)
    position = np.empty(n_features, dtype=np.int64)
    position[stored] = np.searchsorted(columns, stored)
    return position[indices]


def narrowed(X, columns):
    """The CSR matrix X over its sorted ``columns`` only (a superset of
    those holding its entries): the same rows, entries and order, each
    column renumbered by its position among them.  A surrogate of it does
    the arithmetic of one of X, bit for bit, in O(entries + len(columns))
    whatever X's width (the measures count X's width: ``n_counted``)."""
    start, end = X.indptr[0], X.indptr[-1]
    indices = X.indices[start:end]
    at = columns_below(indices, columns, X.shape[1])
    if at.shape[0] and (at.max() >= columns.shape[0]
                        or not np.array_equal(columns[at], indices)):
        raise RuntimeError("The matrix has entries outside the columns given.")
    return sp.csr_matrix((X.data[start:end], at.astype(X.indices.dtype), X.indptr - start),
                         shape=(X.shape[0], columns.shape[0]), copy=False)


class Surrogate:
    """The batch surrogate ``f(w, b) = (1/N) sum_j s_j log(1 + exp(-y_j m_j))``.

    ``N`` is the number of rows of non-zero weight (so that rows of weight 0
    are the same as absent rows, as in the dual-averaging phase, whose
    ``g_bar = u / t`` averages over the steps taken).  X is read in row
    blocks: float32 input is converted one block at a time, never whole.
    ``design``: the ``DesignCache`` of X shared with other surrogates of the
    same X (None: a cache of its own).
    """

    def __init__(self, X, y, sample_weight, design=None, n_counted=None):
        self.X = X
        # the columns the measures count: the model's, when X holds some of
        # them only (see narrowed)
        self.n_counted = X.shape[1] if n_counted is None else n_counted
        # contiguous: the compiled measures and local phase read them
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.sw = np.ascontiguousarray(sample_weight, dtype=np.float64)
        self.n_samples, self.n_features = X.shape
        self.N = max(int(np.count_nonzero(self.sw)), 1)
        self.sparse = sp.issparse(X)
        if self.sparse:
            per_row = max(X.nnz / max(self.n_samples, 1), 1.0)
        else:
            per_row = max(self.n_features, 1)
        self.block = max(int(BLOCK_VALUES // per_row), 1)
        # full float64 operands need no blocks
        self.whole = X.dtype == np.float64
        # a large CSR X also gets a column-major copy (restrict,
        # column_product), paid for by cheaper copies and gradients
        self.column_major = (self.sparse and self.whole
                             and X.nnz >= COLUMN_MAJOR_ENTRIES)
        self.design = DesignCache() if design is None else design

    def _blocks(self):
        for lo in range(0, self.n_samples, self.block):
            hi = min(lo + self.block, self.n_samples)
            Xb = self.X[lo:hi]
            yield lo, hi, (Xb if Xb.dtype == np.float64 else Xb.astype(np.float64))

    def matvec(self, w):
        if self.whole:
            return np.asarray(self.X @ w).ravel()
        out = np.empty(self.n_samples)
        for lo, hi, Xb in self._blocks():
            out[lo:hi] = Xb @ w
        return out

    def rmatvec(self, v):
        if self.whole:
            return np.asarray(self.X.T @ v).ravel()
        out = np.zeros(self.n_features)
        for lo, hi, Xb in self._blocks():
            out += Xb.T @ v[lo:hi]
        return out

    def value(self, m):
        return float(self.sw @ np.logaddexp(0.0, -self.y * m)) / self.N

    def derivatives(self, m):
        """(value, first and second derivatives of each row's term / N)."""
        z = self.y * m
        value = float(self.sw @ np.logaddexp(0.0, -z)) / self.N
        weight = self.sw / self.N
        wrong = expit(-z)  # the probability of the other label
        dl = -self.y * wrong * weight
        dd = expit(z) * wrong * weight
        return value, dl, dd

    def _column_counts(self):
        """Stored entries per column of a sparse X."""
        def make():
            # in pieces: bincount widens the indices to intp
            counts = np.zeros(self.n_features, dtype=np.int64)
            idx = self.X.indices
            for lo in range(0, idx.shape[0], BLOCK_VALUES):
                counts += np.bincount(idx[lo:lo + BLOCK_VALUES], minlength=self.n_features)
            return counts
        return self.design.get("column_counts", make)

    def live_columns(self):
        """Sorted indices of the columns with a non-zero value.  Elsewhere
        the gradient of ``f`` is exactly 0, and so is every weight the
        phases produce: the optimality measures and the local phase work on
        these columns only, O(live columns) instead of O(n_features) per
        iteration (hashed text has 2**20 columns, a few per cent of them
        used).  Dense and CSR copies of X give the same columns, hence the
        same arithmetic."""
        def make():
            if self.sparse and self.whole:  # nothing to convert: no blocks
                # the columns of the non-zero entries, by the dataset
                # layer's choice of a sort or a map of the width (a
                # partial_fit chunk on 2**20 columns is sorted)
                start, end = self.X.indptr[0], self.X.indptr[-1]
                nonzero = self.X.indices[start:end][self.X.data[start:end] != 0]
                return touched_columns(nonzero, self.n_features)
            nonzero = np.zeros(self.n_features, dtype=bool)
            for lo, hi, Xb in self._blocks():
                if self.sparse:
                    nonzero[Xb.indices[Xb.data != 0]] = True
                else:
                    nonzero |= np.any(Xb != 0, axis=0)
            return np.flatnonzero(nonzero)
        return self.design.get("live", make)

    def restrict(self, columns):
        """The design restricted to ``columns`` as a float64 matrix (CSR for
        CSR input), or None when that copy would be big: float32 input is
        never copied beyond a quarter of its own size (products are then
        taken block by block)."""
        k = columns.shape[0]
        if self.sparse:
            nbytes = 12 * int(self._column_counts()[columns].sum())
            x_bytes = self.X.data.nbytes
        else:
            nbytes = 8 * self.n_samples * k
            x_bytes = self.X.nbytes
        if not (self.whole or nbytes <= x_bytes // 4):
            return None
        if self.column_major:
            # from the column-major copy: O(entries of the columns) a call,
            # where slicing the rows reads all of X at every growth round of
            # every problem.  Rows come out in column order (X's own order
            # when its indices are sorted).
            XA = self.column_major_copy()[:, columns]
        else:
            XA = self.X[:, columns]
        if XA.dtype != np.float64:
            XA = XA.astype(np.float64)
        if self.sparse:
            return sp.csr_matrix(XA)
        return np.ascontiguousarray(XA)

    def objective(self, w, b, lam):
        return self.value(self.matvec(w) + b) + lam * np.abs(w).sum()

    def gradient(self, w, b):
        """Gradient of f at (w, b): (g, g_b)."""
        _, dl, _ = self.derivatives(self.matvec(w) + b)
        return self.rmatvec(dl), float(dl.sum())

    def rmatvec_at(self, v, columns):
        """``(X.T @ v)[columns]``.  For the live columns of a float64 CSR X
        where they are fewer than half the columns (hashed text: a few per
        cent), from a copy of X's column indices renumbered over them (X's
        values are shared, not copied): the same sums in the same order,
        without the product's array of n_features (8 MB on 2**20 columns)
        at every iteration of the local phase."""
        live = self.live_columns()
        if not (self.sparse and self.whole and columns.shape[0] == live.shape[0]
                and 0 < 2 * live.shape[0] < self.n_features):
            return self.rmatvec(v)[columns]
        return np.asarray(self.live_design().T @ v).ravel()

    def column_major_copy(self):
        """X in CSC format, made once for the design (``column_major``)."""
        return self.design.get("csc", self.X.tocsc)

    def column_product(self, v, columns):
        """``(X.T @ v)[columns]`` of a float64 CSR X from its column-major
        copy, O(entries of those columns): each sum over its column's
        entries in row order, as the full product adds them, so the same
        bits."""
        return np.asarray(self.column_major_copy()[:, columns].T @ v).ravel()

    def column_bounds(self, columns):
        """``||a_j||``, ``a_j`` the column j of ``|X|`` with duplicate
        entries summed, for ``columns`` of a float64 CSR X (computed once):
        ``|x_j . v| <= ||a_j|| ||v||``, also for the sum of the stored
        entries as computed (``_ScreenedGradient``)."""
        def make():
            A = abs(self.column_major_copy())
            A.sum_duplicates()
            return np.sqrt(np.asarray(A.multiply(A).sum(axis=0)).ravel())
        return self.design.get("column_bounds", make)[columns]

    def live_design(self):
        """X with its column indices renumbered over the live columns
        (``rmatvec_at``)."""
        def make():
            X, live = self.X, self.live_columns()
            start, end = X.indptr[0], X.indptr[-1]
            # a column's new index is the number of live columns before it;
            # an explicit zero of a column that is not live lands in a live
            # one (clipped into range): it adds 0 to that column's sum
            indices = np.minimum(columns_below(X.indices[start:end], live, self.n_features),
                                 live.shape[0] - 1).astype(X.indices.dtype)
            return sp.csr_matrix((X.data[start:end], indices, X.indptr - start),
                                 shape=(self.n_samples, live.shape[0]), copy=False)
        return self.design.get("live_X", make)

    def compiled(self):
        """Whether X is the dense float64 C-ordered array that the compiled
        measures and local phase of ``_rda_fast`` read."""
        return (not self.sparse and self.whole and self.X.flags.c_contiguous
                and self.X.size < 2**31)

    def measures(self, w, b, lam, fit_intercept, scale):
        """(delta, violation) of the model (w, b): see ``_measures``; w is 0
        off the live columns."""
        if self.compiled():
            return dense_measures(self.X, self.y, self.sw, float(self.N), float(lam),
                                  np.ascontiguousarray(w, dtype=np.float64), float(b),
                                  fit_intercept, scale)
        _, dl, _ = self.derivatives(self.matvec(w) + b)
        live = self.live_columns()
        return _measures(self.rmatvec_at(dl, live), float(dl.sum()), w[live], lam,
                         fit_intercept, scale, self.n_counted)


class _ScreenedGradient:
    """The local phase's gradient ``g = X^T dl`` on the live columns, where
    it matters: only the columns whose ``|g_j|`` may exceed ``lam``.

    Elsewhere the residual is exactly 0 (``|g_j| <= lam`` at a zero
    weight), so neither the optimality measures nor the growth of ``M``
    need ``g_j``.  After a full product at ``dl_ref``, Cauchy-Schwarz
    bounds every later ``|g_j(dl)| <= |g_j(dl_ref)| + ||a_j|| ||dl -
    dl_ref||`` (``a_j`` the column of ``|X|``, ``column_bounds``), plus
    the rounding of both sums; a column whose bound stays below ``lam`` is
    skipped, the others with the full product's bits: the support's from
    its restricted copy, the rest from the column-major copy of X
    (``column_product``).  The next full product (and reference) comes when
    the columns left outside the support would hold more than
    ``SCREEN_ENTRIES`` of X's values.  On 20 newsgroups hashed (2**20
    columns) the full product was a third of the local phase.  For a surrogate with a column-major copy
    (``Surrogate.column_major``) and ``lam > 0``; else every gradient is
    the full product."""

    def __init__(self, S, live, lam):
        self.S, self.live, self.lam = S, live, lam
        self.every = np.arange(live.shape[0])
        self.bounds = None
        if S.column_major and lam > 0:
            self.bounds = S.column_bounds(live)
            self.entries = S._column_counts()[live]
        self.reference = None  # (dl_ref, slack of each column, ||dl_ref||)

    def __call__(self, dl, at, R):
        """``(C, g[C], atC)``: the sorted positions ``C`` (among the live
        columns) where the gradient may exceed ``lam``, the gradient there,
        and the positions of ``at`` in ``C``.  ``R``: the ``_Restricted``
        of the columns ``at``, whose copy gives their part."""
        if self.reference is not None and R.csr:
            dl_ref, slack, ref_norm = self.reference
            # the sums' rounding: at most n u (sum of |x_ij dl_i|) each
            rounding = 2.3e-16 * self.S.n_samples * (np.linalg.norm(dl) + ref_norm)
            radius = (1.0 + 1e-6) * (np.linalg.norm(dl - dl_ref) + rounding)
            # near lam (NaN included), and the support (its slack is -inf)
            C = np.flatnonzero(~(slack > radius))
            atC = np.searchsorted(C, at)
            others = np.ones(C.shape[0], dtype=bool)
            others[atC] = False
            others = np.flatnonzero(others)
            if self.entries[C[others]].sum() <= SCREEN_ENTRIES * self.S.X.nnz:
                g = np.empty(C.shape[0])
                g[atC] = np.asarray(R.XA.T @ dl).ravel()
                g[others] = self.S.column_product(dl, self.live[C[others]])
                return C, g, atC
        g = self.S.rmatvec_at(dl, self.live)
        if self.bounds is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                slack = (self.lam * (1.0 - 1e-15) - np.abs(g)) / self.bounds
            slack[~(self.bounds > 0)] = -np.inf  # a norm that underflowed
            slack[at] = -np.inf
            self.reference = (dl.copy(), slack, np.linalg.norm(dl))
        return self.every, g, at

    def keep(self, at):
        """Columns ``at`` (the support M) are always computed."""
        if self.reference is not None:
            self.reference[1][at] = -np.inf


def _residual(g, w, lam):
    """Minimum-norm subgradient of ``f + lam ||w||_1`` in the features:
    ``g_i + lam sign(w_i)`` off zero, ``soft(g_i, lam)`` at zero."""
    return np.where(w != 0, g + lam * np.sign(w), _soft(g, lam))


def _measures(g, g_b, w, lam, fit_intercept, scale, n_features):
    """The two optimality measures of a model, from its gradient (``g`` and
    ``w`` may be restricted to columns outside which both are 0: the
    residual is 0 there; ``n_features`` counts every column).

    * ``delta = ||r|| / sqrt(n)``, the paper's eq. (52), ``n`` counting the
      intercept: reported (``optimality_``), not the stopping test, because
      dividing by ``sqrt(n_features + 1)`` makes any model look optimal when
      most columns are empty (hashed text, 2**20 columns);
    * ``violation = max(|r_i|, |r_b|) / scale``: the largest violation of an
      optimality condition, relative to ``scale`` (``alpha``, see
      ``violation_scale``).  Empty columns leave it unchanged.
    """
    r = _residual(g, w, lam)
    r_b = float(g_b) if fit_intercept else 0.0
    n = n_features + (1 if fit_intercept else 0)
    delta = np.sqrt(float(r @ r) + r_b**2) / np.sqrt(max(n, 1))
    worst = max(float(np.abs(r).max(initial=0.0)), abs(r_b))
    return delta, worst / scale


def violation_scale(S, lam, fit_intercept):
    """Unit of the violation: ``alpha`` (the optimality condition of a zero
    weight is ``|g_i| <= alpha``, so ``violation <= tol`` says every
    condition holds to a fraction ``tol`` of the penalty).  With ``alpha = 0``
    there is no penalty to compare with: the largest gradient entry at
    ``w = 0, b = 0`` (relative to the start, as LIBLINEAR's tolerance)."""
    if lam > 0:
        return lam
    g, g_b = S.gradient(np.zeros(S.n_features), 0.0)
    start = max(float(np.abs(g).max(initial=0.0)), abs(g_b) if fit_intercept else 0.0)
    return start if start > 0 else 1.0


class _Restricted:
    """Products with the columns ``A`` of X (materialised or blockwise).

    A materialised CSR copy ``XA`` serves every subset ``F`` of ``A`` of
    the Newton systems without further copies: the Hessian reads the
    entries of ``F`` through a position map (``csr_gram``), and the
    diagonal and the intercept's column come from products with all of
    ``XA`` (its squares are made once).  Copying the
    columns ``F`` out of ``XA`` at every Newton step cost as much as the
    Hessian itself (w8a)."""

    def __init__(self, S, A):
        self.S, self.A = S, A
        self.XA = S.restrict(A) if A.shape[0] else None
        self.empty = A.shape[0] == 0
        self.csr = self.XA is not None and sp.issparse(self.XA)
        self._squares_T = None  # of XA's entries, transposed: made when first needed
        self._columns = None  # (F, CSR copy of XA's columns F): see columns

    def columns(self, F):
        """CSR copy of the columns ``A[F]`` of a CSR ``XA``, kept for the
        products of one Newton step (its conjugate gradients, then its line
        search).  From X's column-major copy where there is one (the same
        rows, in column order as ``XA``'s): O(entries of F) instead of a
        pass over all of ``XA``."""
        if self._columns is None or self._columns[0] is not F:
            if self.S.column_major:
                XF = self.S.column_major_copy()[:, self.A[F]]
            else:
                XF = self.XA[:, F]
            self._columns = (F, XF.tocsr())
        return self._columns[1]

    def matvec(self, wA, support=None):
        """``X[:, A] @ wA``; ``support``: the positions ``F`` off which
        ``wA`` is 0, whose columns ``columns(F)`` may already hold: then
        the product reads those only.  The same bits: the entries it skips
        add zeros to sums that are never -0.0."""
        if self.empty:
            return np.zeros(self.S.n_samples)
        if (support is not None and self._columns is not None
                and self._columns[0] is support):
            return np.asarray(self._columns[1] @ wA[support]).ravel()
        if self.XA is not None:
            return np.asarray(self.XA @ wA).ravel()
        out = np.empty(self.S.n_samples)
        for lo, hi, Xb in self.S._blocks():
            out[lo:hi] = Xb[:, self.A] @ wA
        return out

    def _gram(self, XF, dd):
        """XF^T diag(dd) XF: BLAS for dense columns, the pairs of each
        row's entries for CSR (``csr_gram``)."""
        if not sp.issparse(XF):
            return XF.T @ (XF * dd[:, None])
        XF = XF.tocsr()
        dd = np.ascontiguousarray(dd, dtype=np.float64)
        return csr_gram(XF.data, XF.indices, XF.indptr, dd, XF.shape[1])

    def hessian(self, dd, F, fit_intercept):
        """Hessian of f in the coordinates A[F] (and the intercept, last)."""
        k = F.shape[0] + (1 if fit_intercept else 0)
        H = np.zeros((k, k))
        if self.csr:
            position = np.full(self.A.shape[0], -1, dtype=np.int64)
            position[F] = np.arange(F.shape[0])
            XA = self.XA
            H[: F.shape[0], : F.shape[0]] = csr_gram(
                XA.data, XA.indices, XA.indptr, np.ascontiguousarray(dd, dtype=np.float64),
                XA.shape[1], position)
            if fit_intercept:
                col = np.asarray(XA.T @ dd).ravel()[F]
        elif self.XA is not None:
            XF = self.XA[:, F]
            H[: F.shape[0], : F.shape[0]] = self._gram(XF, dd)
            if fit_intercept:
                col = np.asarray(XF.T @ dd).ravel()
        else:
            cols = self.A[F]
            col = np.zeros(F.shape[0])
            for lo, hi, Xb in self.S._blocks():
                XF = Xb[:, cols]
                H[: F.shape[0], : F.shape[0]] += self._gram(XF, dd[lo:hi])
                col += np.asarray(XF.T @ dd[lo:hi]).ravel()
        if fit_intercept:
            H[: F.shape[0], -1] = col
            H[-1, : F.shape[0]] = col
            H[-1, -1] = dd.sum()
        return H

    def hessian_operator(self, dd, F, fit_intercept):
        """``v -> H v`` for the Hessian of ``hessian`` without forming it:
        two products with the columns A[F] per call (one pass over a CSR
        copy of them, made here: conjugate gradients take many products)."""
        k = F.shape[0]
        if self.csr:
            XF = self.columns(F)
            dd = np.ascontiguousarray(dd, dtype=np.float64)
            z = np.empty(self.S.n_samples)

            def apply(v):
                hv = np.empty(k)
                csr_normal_product(XF.data, XF.indices, XF.indptr, v[:k],
                                   v[k] if fit_intercept else 0.0, dd, z, hv)
                return np.append(hv, z.sum()) if fit_intercept else hv
            return apply
        if self.XA is not None:
            XF = self.XA[:, F]
            fwd = lambda v: np.asarray(XF @ v).ravel()
            back = lambda z: np.asarray(XF.T @ z).ravel()
        else:
            cols = self.A[F]
            S = self.S

            def fwd(v):
                out = np.empty(S.n_samples)
                for lo, hi, Xb in S._blocks():
                    out[lo:hi] = Xb[:, cols] @ v
                return out

            def back(z):
                out = np.zeros(k)
                for lo, hi, Xb in S._blocks():
                    out += np.asarray(Xb[:, cols].T @ z[lo:hi]).ravel()
                return out

        def apply(v):
            z = fwd(v[:k]) + (v[k] if fit_intercept else 0.0)
            z *= dd
            hv = back(z)
            return np.append(hv, z.sum()) if fit_intercept else hv
        return apply

    def hessian_diagonal(self, dd, F, fit_intercept):
        if self.csr:
            if self._squares_T is None:
                self._squares_T = self.XA.multiply(self.XA).tocsr().T
            h = np.asarray(self._squares_T @ dd).ravel()[F]
        elif self.XA is not None:
            XF = self.XA[:, F]
            h = np.asarray((XF * XF).T @ dd).ravel()
        else:
            cols = self.A[F]
            h = np.zeros(F.shape[0])
            for lo, hi, Xb in self.S._blocks():
                XF = Xb[:, cols]
                sq = XF.multiply(XF) if sp.issparse(XF) else XF * XF
                h += np.asarray(sq.T @ dd[lo:hi]).ravel()
        if fit_intercept:
            h = np.append(h, dd.sum())
        return h


def _newton_direction(R, dd, F, r, fit_intercept, max_direct, damping=0.0):
    """Solve ``H p = -r`` on the free coordinates: Cholesky up to
    ``max_direct`` of them, beyond that conjugate gradients on Hessian-vector
    products (an inexact Newton step: forming and factoring a large dense
    Hessian would cost more than the rest of the fit), preconditioned by the
    Hessian diagonal ``h``.

    The iterative solve is damped, ``(H + mu diag(h)) p = -r`` with ``mu =
    min(1, sqrt(|r|))`` (a regularised Newton step, after Li, Fukushima, Qi
    & Yamashita 2004).  On text the free set is often wider than the rows
    are many; ``H`` is then singular and undamped CG ran to its iteration
    cap without converging (500 products with X, five times the local
    phase's time on SMS tf-idf).  The damping vanishes with the residual, so
    the fast local convergence stays.

    ``damping``: the direct solve's ``mu`` in ``(H + mu diag(H)) p = -r``
    (see ``MAX_NEWTON_HALVINGS``)."""
    if F.shape[0] <= max_direct:
        H = R.hessian(dd, F, fit_intercept)
        scale = max(np.trace(H) / H.shape[0], 1e-300)
        diag = np.diag_indices_from(H)
        H[diag] += damping * H[diag] + 1e-12 * scale
        try:
            return -cho_solve(cho_factor(H, lower=True, check_finite=False), r,
                              check_finite=False)
        except (LinAlgError, ValueError):
            return -lstsq(H, r)[0]
    apply = R.hessian_operator(dd, F, fit_intercept)
    h = R.hessian_diagonal(dd, F, fit_intercept)
    h = np.maximum(h, 1e-12 * max(h.max(initial=0.0), 1e-300))
    k = r.shape[0]
    # the damping, and the forcing term min(0.5, sqrt(|r|)): superlinear
    # near the solution (Eisenstat & Walker), loose far from it
    mu = min(1.0, np.sqrt(np.linalg.norm(r)))
    rtol = min(0.5, mu)
    damped = (1.0 + mu) * h
    step, _ = cg(LinearOperator((k, k), matvec=lambda v: apply(v) + mu * h * v,
                                dtype=np.float64), -r,
                 **{CG_RTOL: rtol}, atol=0.0, maxiter=min(k, MAX_CG_ITER),
                 M=LinearOperator((k, k), matvec=lambda v: v / damped, dtype=np.float64))
    return step


def local_phase(S, lam, w_start, b_start, A, *, tol, scale, max_newton_support,
                fit_intercept, record=None):
    """Minimise ``f + lam ||w||_1`` starting on the support ``M`` (its
    sorted columns ``A``): the iterations of ``vectorised_local_phase``
    (see there for the arguments and the result), compiled
    (``_rda_fast.dense_local_phase``) for a dense float64 X of at most
    ``max_newton_support`` columns, where every Newton system is a direct
    solve; vectorised otherwise."""
    if not (type(S) is Surrogate and S.compiled() and S.n_features <= max_newton_support):
        return vectorised_local_phase(
            S, lam, w_start, b_start, A, tol=tol, scale=scale,
            max_newton_support=max_newton_support, fit_intercept=fit_intercept,
            record=record)
    A = np.asarray(A, dtype=np.intp)
    w = np.zeros(S.n_features)
    w[A] = np.asarray(w_start, dtype=np.float64)[A]
    target = ROUNDOFF * scale if tol is None else float(tol) * scale
    b, delta, violation, objective, reached, n_iter = dense_local_phase(
        S.X, S.y, S.sw, float(S.N), float(lam), w, float(b_start) if fit_intercept else 0.0,
        A, target, scale, fit_intercept, record, MAX_LOCAL_ITER, ARMIJO, MAX_HALVINGS,
        MAX_NEWTON_HALVINGS, NEWTON_ATTEMPTS)
    status = "converged" if reached and tol is not None else "stalled"
    return (np.arange(S.n_features), w), b, delta, violation, objective, status, n_iter


def vectorised_local_phase(S, lam, w_start, b_start, A, *, tol, scale, max_newton_support,
                           fit_intercept, record=None):
    """Minimise ``f + lam ||w||_1`` starting on the support ``M``, given by
    its sorted columns ``A`` (``w_start`` is read there only).  The phase
    works on the columns of A and those with data, and returns its model
    on them, not as a vector of the width (see ``narrowed`` for a
    surrogate that is not as wide as the model either).

    An iteration takes one of two steps (the scheme of LPS, Wright 2010):

    * **reduced Newton step** on the current sign pattern: the non-zero
      coordinates (and the intercept) move along ``-H^{-1} r``, ``H`` the
      Hessian of ``f`` on those coordinates only, ``r = g + lam sign(w)``
      the reduced gradient; the zero coordinates stay at zero (beyond
      ``max_newton_support`` non-zeros the system is solved by conjugate
      gradients; a direct solve is damped when its steps are too long, see
      ``MAX_NEWTON_HALVINGS``).  The line search (backtracking, Armijo) projects each
      trial point on the orthant of the pattern: a coordinate whose sign
      would flip is set to zero, i.e. dropped to a smaller sub-manifold;
    * **reduced gradient (proximal) step** on all of ``M``, scaled by the
      diagonal of the Hessian, ``w_i <- soft(w_i - a g_i / h_i, a lam / h_i)``,
      when the zero coordinates of ``M`` that violate optimality
      (``|g_i| > lam``) carry the larger part of the residual.  This is the
      only way a coordinate becomes non-zero.

    **Growing M** (the safeguard of this implementation; the paper leaves
    "adding dimensionality as appropriate" open): when the problem
    restricted to ``M`` is nearly solved (its largest violation below a
    tenth of the largest one outside ``M``, or below half the target) but a
    coordinate outside ``M`` violates optimality (``|g_i| > lam`` with
    ``|r_i|`` above the target), the violating coordinates join ``M``,
    the largest violations first and at most ``max(nnz, 16)`` at a time, as
    active-set Newton methods do, and the phase continues from the current
    point.  Each growth round lowers the objective, so the phase ends.

    Stops with ``"converged"`` when ``violation <= tol`` (over all
    coordinates, see ``_measures``); ``"stalled"`` when a line search fails
    (round-off) or after ``MAX_LOCAL_ITER`` iterations.  With ``tol=None``
    it runs to round-off (violation ``<= 1e-12``) and reports "stalled".
    ``record(delta, violation, nnz)`` is called at every iterate.

    Returns ``((columns, weights), b, delta, violation, objective, status,
    n_iter)``: the model's weights of the sorted ``columns`` (M at the end),
    0 elsewhere.
    """
    A = np.asarray(A, dtype=np.intp)
    # Vectors over the columns that hold data (and M, in case it reaches
    # past them); the gradient and the weights are 0 elsewhere.  ``at``
    # holds the positions of A among them.
    live = S.live_columns()
    at = np.searchsorted(live, A)
    if A.shape[0] and (at[-1] == live.shape[0] or not np.array_equal(live[at], A)):
        live = np.union1d(live, A)  # M has columns without data
        at = np.searchsorted(live, A)
    R = _Restricted(S, A)
    wA = np.asarray(w_start, dtype=np.float64)[A].copy()
    b = float(b_start) if fit_intercept else 0.0
    target = ROUNDOFF * scale if tol is None else float(tol) * scale
    status = "stalled"
    m = R.matvec(wA) + b
    f, dl, dd = S.derivatives(m)
    it = 0
    damping = 0.0
    gradient = _ScreenedGradient(S, live, lam)
    while True:
        # the gradient on C (positions among the live columns, at's among
        # them: atC); the residual is 0 on the other columns
        C, g, atC = gradient(dl, at, R)
        w_C = np.zeros(C.shape[0])
        w_C[atC] = wA
        g_b = float(dl.sum())
        delta, violation = _measures(g, g_b, w_C, lam, fit_intercept, scale, S.n_counted)
        if record is not None:
            record(delta, violation, int(np.count_nonzero(wA)))
        if violation * scale <= target:
            status = "converged" if tol is not None else status
            break
        if it >= MAX_LOCAL_ITER:
            break
        gA = g[atC]
        nz = wA != 0
        r_nz = gA[nz] + lam * np.sign(wA[nz])
        r_zero = _soft(gA[~nz], lam)
        inside = max(np.abs(r_nz).max(initial=0.0), np.abs(r_zero).max(initial=0.0),
                     abs(g_b) if fit_intercept else 0.0)
        r_out = _soft(g, lam)
        r_out[atC] = 0.0
        outside = np.abs(r_out).max(initial=0.0)
        if outside > target and inside <= max(0.5 * target, 0.1 * outside):
            cand = np.flatnonzero(np.abs(r_out) > target)
            k = max(int(np.count_nonzero(nz)), 16)
            if cand.shape[0] > k:
                cand = cand[np.argpartition(-np.abs(r_out[cand]), k - 1)[:k]]
            at = np.union1d(at, C[cand])
            gradient.keep(at)
            A = live[at]
            R = _Restricted(S, A)
            atC = np.searchsorted(C, at) if C is not gradient.every else at
            wA = w_C[atC]
            gA = g[atC]
            nz = wA != 0
            r_nz = gA[nz] + lam * np.sign(wA[nz])
            r_zero = _soft(gA[~nz], lam)
        it += 1
        phi = f + lam * np.abs(wA).sum()
        F = np.flatnonzero(nz)
        sq_nz = float(r_nz @ r_nz) + (g_b**2 if fit_intercept else 0.0)
        sq_zero = float(r_zero @ r_zero)
        newton = sq_zero <= sq_nz and 0 < F.shape[0] + fit_intercept
        accepted = False
        if newton:
            r = np.append(r_nz, g_b) if fit_intercept else r_nz
            sigma = np.sign(wA[F])
            direct = F.shape[0] <= max_newton_support
            for _ in range(NEWTON_ATTEMPTS if direct else 1):
                step = _newton_direction(R, dd, F, r, fit_intercept, max_newton_support,
                                         damping)
                step_w = step[: F.shape[0]]
                step_b = step[-1] if fit_intercept else 0.0
                slope0 = float(r @ step)
                a = 1.0
                halvings = MAX_NEWTON_HALVINGS if direct else MAX_HALVINGS
                for _ in range(halvings if slope0 < 0 else 0):
                    trial = wA[F] + a * step_w
                    trial[sigma * trial <= 0] = 0.0  # sign flip: set to zero, drop
                    wA_new = wA.copy()
                    wA_new[F] = trial
                    b_new = b + a * step_b
                    m_new = R.matvec(wA_new, F) + b_new
                    phi_new = S.value(m_new) + lam * np.abs(wA_new).sum()
                    if phi_new <= phi + ARMIJO * a * slope0:
                        accepted = True
                        break
                    a *= 0.5
                if accepted:
                    if a == 1.0:
                        damping = damping / 10 if damping > 1e-6 else 0.0
                    break
                if direct:
                    damping = max(10 * damping, 1e-3)
        if not accepted:
            # proximal reduced-gradient step on all of M (and the intercept)
            h = R.hessian_diagonal(dd, np.arange(A.shape[0]), fit_intercept)
            h = np.maximum(h, 1e-12 * max(h.max(initial=0.0), 1e-300))
            hA = h[: A.shape[0]]
            a = 1.0
            for _ in range(MAX_HALVINGS):
                with np.errstate(over="ignore", invalid="ignore"):
                    # a column without curvature gives inf: rejected below
                    wA_new = _soft(wA - a * gA / hA, a * lam / hA)
                b_new = b - a * g_b / h[-1] if fit_intercept else 0.0
                m_new = R.matvec(wA_new) + b_new
                phi_new = S.value(m_new) + lam * np.abs(wA_new).sum()
                move = float(hA @ (wA_new - wA) ** 2) + (
                    h[-1] * (b_new - b) ** 2 if fit_intercept else 0.0)
                if move > 0 and phi_new <= phi - ARMIJO * move / a:
                    accepted = True
                    break
                a *= 0.5
        if not accepted:
            break
        wA, b, m = wA_new, b_new, m_new
        f, dl, dd = S.derivatives(m)
    return (A, wA), b, delta, violation, f + lam * np.abs(wA).sum(), status, it
