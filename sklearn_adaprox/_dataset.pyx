"""Row-access layer: check X, then hand it to the Cython kernels without
copying it.

``check_sparse_structure`` refuses a sparse matrix whose arrays do not
describe a matrix of its shape (scipy trusts them, and its own C++ routines
read past the ends of arrays when they lie), before anything else touches
them.  ``as_row_arrays`` turns a validated CSR matrix/array or a
C-contiguous dense array (float32 or float64) into the
(data, indices, indptr, is_dense, n_features) arrays that the kernels read
through ``get_row`` in ``_dataset.pxd``.  X itself is never copied when it
is already in one of those forms; read-only input (for example a
memory-mapped array) is fine because the kernels take ``const``
memoryviews.
"""
import numpy as np
import scipy.sparse as sp

cimport numpy as cnp
from libc.math cimport fabs, fmax, sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

MALFORMED = "Malformed sparse matrix X: "
# Formats whose index arrays check_sparse_structure reads directly; any other
# sparse format is brought to COO first (by scipy code that only copies).
_COMPRESSED = ("csr", "csc", "bsr")
# The row order of a scan that reads rows by index, not in a pass.
NO_ROWS = np.zeros(0, dtype=np.int64)

cnp.import_array()


cdef inline uint64_t splitmix64(uint64_t* state) noexcept nogil:
    """Next output of Steele, Lea & Flood's SplitMix64 generator."""
    cdef uint64_t z
    state[0] += 0x9E3779B97F4A7C15ULL
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline uint32_t below(uint32_t bound, uint64_t* state) noexcept nogil:
    """Uniform integer in [0, bound), bound >= 1: Lemire's multiply-shift
    with rejection (unbiased; a division only on the rare rejection path)."""
    cdef uint64_t m = (splitmix64(state) >> 32) * <uint64_t> bound
    cdef uint32_t low = <uint32_t> m, threshold
    if low < bound:
        threshold = (-bound) % bound
        while low < threshold:
            m = (splitmix64(state) >> 32) * <uint64_t> bound
            low = <uint32_t> m
    return <uint32_t> (m >> 32)


def shuffled_order(Py_ssize_t n, uint64_t seed):
    """A uniformly random permutation of ``0 .. n-1`` (int64), the row order
    of one shuffled pass; the same seed gives the same order.

    Fisher-Yates on SplitMix64 draws, several times quicker than
    ``RandomState.permutation``, which every epoch of ``fit`` would pay for
    (``benchmarks/bench_design_choices.py``, table ``row_order``).
    """
    if n >= 2**32:  # beyond the 32-bit draws: NumPy's (slower) shuffle
        return np.random.RandomState(seed % 2**32).permutation(n).astype(np.int64)
    cdef int64_t[::1] order = np.arange(n, dtype=np.int64)
    cdef uint64_t state = seed
    cdef Py_ssize_t i, j
    cdef int64_t swap
    with nogil:
        for i in range(n - 1, 0, -1):
            j = below(<uint32_t> (i + 1), &state)
            swap = order[i]
            order[i] = order[j]
            order[j] = swap
    return np.asarray(order)


def csr_has_duplicates(const index_t[::1] indices, const index_t[::1] indptr,
                       Py_ssize_t n_features):
    """True if some row of the CSR structure names a column twice.

    Unsorted indices are fine for the kernels; duplicated ones are not (the
    AdaGrad accumulators would square two partial gradients instead of their
    sum).  A bitmap of the columns seen in the current row, cleared after
    it: O(nnz + n_features / 64) (its pages are zero until written).
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t i, k, j
    cdef uint64_t bit
    cdef bint found = False
    cdef uint64_t[::1] seen = np.zeros(n_features // 64 + 1, dtype=np.uint64)
    with nogil:
        for i in range(n_rows):
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                bit = (<uint64_t> 1) << (j & 63)
                if seen[j >> 6] & bit:
                    found = True
                    break
                seen[j >> 6] |= bit
            if found:
                break
            for k in range(indptr[i], indptr[i + 1]):
                seen[indices[k] >> 6] = 0
    return found


cdef bint finite_run(const floating* values, Py_ssize_t n) noexcept nogil:
    """True if none of ``values[:n]`` is NaN or infinite: ``x * 0`` is 0
    for a finite ``x`` and NaN otherwise, so the sums stay 0 exactly when
    every entry is finite.  Four sums break the dependency of one add on
    the last, so the pass runs at memory speed like NumPy's sum."""
    cdef Py_ssize_t i, n4 = n - n % 4
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    for i in range(0, n4, 4):
        s0 += values[i] * 0.0
        s1 += values[i + 1] * 0.0
        s2 += values[i + 2] * 0.0
        s3 += values[i + 3] * 0.0
    for i in range(n4, n):
        s0 += values[i] * 0.0
    return s0 + s1 + s2 + s3 == 0.0


def _numpy_all_finite(values):
    """All entries finite, for any array: a finite sum proves it (NaN and
    infinities propagate through a sum) in one pass without a temporary;
    only a sum that overflows or is not finite is followed by the exact
    test, in blocks so that no mask of the array's size is allocated."""
    if np.isfinite(values.sum()):
        return True
    flat = values.reshape(-1)
    return all(np.isfinite(flat[lo:lo + 65536]).all()
               for lo in range(0, flat.shape[0], 65536))


def first_nonfinite(list arrays):
    """Position in ``arrays`` (ndarrays) of the first one holding NaN or
    infinity, -1 if none.  Contiguous float64/float32 arrays in native byte
    order (every fitted state) are read in place, without NumPy's fixed
    cost per call (a few microseconds, paid for every fitted array after
    every epoch of a small fit); any other array is checked by NumPy."""
    cdef Py_ssize_t k, n
    cdef cnp.ndarray a
    cdef int type_num
    cdef bint plain, finite
    cdef const void* data
    for k in range(len(arrays)):
        a = arrays[k]
        type_num = cnp.PyArray_TYPE(a)
        n = cnp.PyArray_SIZE(a)
        data = cnp.PyArray_DATA(a)
        plain = cnp.PyArray_ISCARRAY_RO(a) and cnp.PyArray_ISNOTSWAPPED(a)
        if plain and type_num == cnp.NPY_DOUBLE:
            with nogil:  # a one-vs-rest problem checks its state in its own thread
                finite = finite_run(<const double*> data, n)
            if not finite:
                return k
        elif plain and type_num == cnp.NPY_FLOAT:
            with nogil:
                finite = finite_run(<const float*> data, n)
            if not finite:
                return k
        elif not _numpy_all_finite(a):
            return k
    return -1


cdef inline bint in_place_float64(cnp.ndarray a) noexcept:
    """Whether ``a`` holds float64 values that can be read in place: C
    order, aligned, in the machine's byte order."""
    return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISCARRAY_RO(a)
            and cnp.PyArray_ISNOTSWAPPED(a))


def columns_finite(cnp.ndarray array, const int64_t[::1] columns, Py_ssize_t axis):
    """Whether ``np.take(array, columns, axis)`` holds no NaN or infinity,
    read in place: the per-pass check of the feature columns of X in a wide
    model's state, which copying them out first (``np.take``) made as slow
    as a read of the whole state.  Arrays other than contiguous float64 are
    checked through NumPy."""
    cdef Py_ssize_t n_features, outer = 1, inner = 1, o, c, d
    cdef const double* data
    cdef bint finite = True
    if not 0 <= axis < array.ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {array.ndim} dimensions.")
    n_features = array.shape[axis]
    if columns.shape[0] and not (0 <= np.min(columns) and np.max(columns) < n_features):
        raise ValueError(f"columns must lie in [0, {n_features}).")
    if not in_place_float64(array):
        return bool(_numpy_all_finite(np.take(array, columns, axis=axis)))
    for d in range(axis):
        outer *= array.shape[d]
    for d in range(axis + 1, array.ndim):
        inner *= array.shape[d]
    data = <const double*> cnp.PyArray_DATA(array)
    with nogil:  # a one-vs-rest problem checks its state in its own thread
        for o in range(outer):
            for c in range(columns.shape[0]):
                if not finite_run(data + (o * n_features + columns[c]) * inner, inner):
                    finite = False
                    break
            if not finite:
                break
    return finite


def sorted_distinct(values):
    """The sorted distinct values of an integer array, as int64: one sort
    and one comparison with the neighbour.  (``np.unique`` hashes integers
    first, which made it ten times slower on a few thousand values.)"""
    out = np.sort(np.asarray(values, dtype=np.int64))
    if out.shape[0] > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


cdef Py_ssize_t merge_sorted(const int64_t* a, Py_ssize_t len_a, const int64_t* b,
                             Py_ssize_t len_b, int64_t* out) noexcept nogil:
    cdef Py_ssize_t i = 0, j = 0, n = 0
    while i < len_a and j < len_b:
        if a[i] < b[j]:
            out[n] = a[i]
            i += 1
        elif b[j] < a[i]:
            out[n] = b[j]
            j += 1
        else:
            out[n] = a[i]
            i += 1
            j += 1
        n += 1
    while i < len_a:
        out[n] = a[i]
        i += 1
        n += 1
    while j < len_b:
        out[n] = b[j]
        j += 1
        n += 1
    return n


def sorted_union(const int64_t[::1] a, const int64_t[::1] b):
    """The sorted union of two sorted arrays of distinct int64 values, by
    one merge: O(len(a) + len(b)).  For a one-row ``partial_fit`` of
    ``PairwiseAUCClassifier`` (a: the momentum's 4,000 columns, b: the
    row's) its ``_changeable_columns`` took 59-68 microseconds when b's new
    values were inserted into a with numpy, 22 with this merge."""
    cdef Py_ssize_t n, len_a = a.shape[0], len_b = b.shape[0]
    union = np.empty(len_a + len_b + 1, dtype=np.int64)
    cdef int64_t[::1] out = union
    with nogil:
        n = merge_sorted(&a[0] if len_a else NULL, len_a, &b[0] if len_b else NULL, len_b,
                         &out[0])
    return union[:n]


# Whether the passes over wide states ask for the next row's entries a row
# ahead (prefetch_entries), in every kernel.  A hint: the results are the
# same.
cdef bint PREFETCH_STATE = True


def set_prefetch(bint enabled):
    """Test hook: passes ask for the next row's state on wide states (the
    default) or never.  Returns whether they did before."""
    global PREFETCH_STATE
    previous = PREFETCH_STATE
    PREFETCH_STATE = enabled
    return previous


cdef bint asks_for_state_ahead(bint is_dense, Py_ssize_t n_features,
                               Py_ssize_t entry_bytes) noexcept nogil:
    return PREFETCH_STATE and state_is_wide(is_dense, n_features, entry_bytes)


cdef double* float64_values(object array, Py_ssize_t n, bint writable) except NULL:
    # A typed memoryview checks as much, through the buffer protocol and a
    # new memoryview object, in about 0.13 us: reading its seven small
    # arrays so took a one-row partial_fit of implicit FTRL from 8.0 to
    # 6.9 us (timeit, same machine).
    cdef cnp.ndarray a
    if not cnp.PyArray_Check(array):
        raise ValueError("expected a NumPy array of float64.")
    a = array
    if not (in_place_float64(a) and cnp.PyArray_NDIM(a) == 1 and cnp.PyArray_DIM(a, 0) == n
            and (cnp.PyArray_ISWRITEABLE(a) or not writable)):
        raise ValueError(f"expected a contiguous{' writeable' if writable else ''} "
                         f"float64 array of length {n}.")
    return <double*> cnp.PyArray_DATA(a)


cdef Py_ssize_t vector_length(object array, int typenum) except -1:
    cdef cnp.ndarray a
    if cnp.PyArray_Check(array):
        a = array
        if (cnp.PyArray_TYPE(a) == typenum and cnp.PyArray_ISCARRAY_RO(a)
                and cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_NDIM(a) == 1):
            return cnp.PyArray_DIM(a, 0)
    raise ValueError("expected a contiguous array of one dimension of "
                     f"{np.dtype(cnp.PyArray_TypeObjectFromType(typenum))}.")


def touched_columns(const index_t[::1] indices, Py_ssize_t n_features):
    """The distinct columns named by ``indices`` (all in [0, n_features)),
    sorted, as int64: what a pass over those entries can change.

    A map of the columns (zero pages until written) and one scan of it:
    O(nnz + n_features / 64) with one bit per column, where sorting would
    be O(nnz log nnz); fewer entries than one per 2048 columns (a few rows
    of a wide model) are sorted instead, which then costs less than
    clearing and scanning the map (5,000 entries: sorted in 112 us, a map
    of 2**24 bits in 201 us; of 2**20 bits in 18 us).  Many entries (a
    large chunk) mark a byte per column: setting a bit reads its word
    first, and on text the frequent columns share a few words, so every
    entry would wait for the one before; a byte is only written.
    """
    cdef Py_ssize_t nnz = indices.shape[0]
    if nnz < n_features // 2048:
        return sorted_distinct(np.asarray(indices))
    if nnz >= n_features // 16:
        return _touched_by_bytes(indices, n_features)
    return _touched_by_bits(indices, n_features)


# The position of a word's lowest set bit from a multiplication: the top six
# bits of (lowest bit) * DE_BRUIJN_64 differ for each of the 64 positions
# (a de Bruijn sequence), and LOWEST_BIT maps them back.  Portable, and one
# step per set bit where shifting the word along took one per bit position.
cdef uint64_t DE_BRUIJN_64 = 0x03F79D71B4CB0A89ULL
cdef uint8_t LOWEST_BIT[64]


cdef int fill_lowest_bit() except -1:
    cdef int position
    for position in range(64):  # in uint64_t arithmetic: the product wraps
        LOWEST_BIT[((<uint64_t> 1 << position) * DE_BRUIJN_64) >> 58] = position
    return 0


fill_lowest_bit()


cdef _touched_by_bits(const index_t[::1] indices, Py_ssize_t n_features):
    """touched_columns with a bit per column: the map, then one scan of its
    words that passes over a word of zeros with one test and writes out the
    set bits of the others lowest first.  The distinct columns are at most
    the entries: the output is made that long and cut, instead of a second
    scan to count them.  5,000 random entries took 186 us at 2**20 columns
    and 573 us at 2**24 with a count scan and then a scan that shifted each
    word along bit by bit; 18 and 201 us so (50,000: 1,068 -> 84 us and
    2,724 -> 584 us)."""
    cdef uint64_t[::1] bits = np.zeros(n_features // 64 + 1, dtype=np.uint64)
    cdef Py_ssize_t k, w, n = 0
    cdef uint64_t word, lowest
    columns = np.empty(indices.shape[0], dtype=np.int64)
    cdef int64_t[::1] out = columns
    with nogil:
        for k in range(indices.shape[0]):
            bits[indices[k] >> 6] |= (<uint64_t> 1) << (indices[k] & 63)
        for w in range(bits.shape[0]):
            word = bits[w]
            while word:
                lowest = word & (~word + 1)
                out[n] = 64 * w + LOWEST_BIT[(lowest * DE_BRUIJN_64) >> 58]
                n += 1
                word ^= lowest
    return columns[:n]


def csr_scores(const floating[::1] data, const int64_t[::1] positions,
               const index_t[::1] indptr, const double[:, ::1] weights):
    """``scores[i, k] = sum_q data[q] * weights[k, positions[q]]`` over the
    entries q of CSR row i, summed in the row's order from 0, as scipy's
    CSR product sums them (so the same numbers, bit for bit), without
    building a matrix around the arrays (which costs more than scoring a
    few rows).  ``positions[q]`` is the column of entry q in ``weights``;
    every one must be in range, and the row pointers valid (the caller
    derives them from a checked X)."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, n_out = weights.shape[0]
    cdef Py_ssize_t i, k, q
    cdef double total
    scores = np.zeros((n_rows, n_out), dtype=np.float64)
    cdef double[:, ::1] out = scores
    with nogil:
        for i in range(n_rows):
            for k in range(n_out):
                total = 0.0
                for q in range(indptr[i], indptr[i + 1]):
                    total = total + data[q] * weights[k, positions[q]]
                out[i, k] = total
    return scores


cdef _marked(const uint8_t[::1] seen):
    """The sorted int64 positions of the non-zero bytes of ``seen`` (each 0
    or 1).  Eight bytes at a time: on a wide model most words of the map
    are 0 and are passed over with one test, and the bytes of the others
    are written out without a branch (a position is stored at every byte
    and kept where the byte is 1).  The columns of hashed SMS spam
    (148,333 non-zeros, 49,287 of 2**20 columns) were listed in 1.35 ms
    when this went a byte at a time with a branch each, a fifth of a
    one-pass fit (SGDClassifier's whole fit: 3 to 5 ms); in 0.61 ms so."""
    cdef Py_ssize_t n_bytes = seen.shape[0], n_words = seen.shape[0] // 8
    cdef Py_ssize_t w, j, n = 0
    cdef uint64_t word
    cdef const uint8_t* byte = &seen[0] if n_bytes > 0 else NULL
    with nogil:
        for w in range(n_words):
            memcpy(&word, byte + 8 * w, 8)
            # bytes of 0 or 1: the top byte of the product is their sum
            n += <Py_ssize_t> ((word * 0x0101010101010101ULL) >> 56)
        for j in range(8 * n_words, n_bytes):
            n += byte[j]
    # one slot more than the count: the last position stored may be one
    # that is not kept
    columns = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] out = columns
    n = 0
    with nogil:
        for w in range(n_words):
            memcpy(&word, byte + 8 * w, 8)
            if word == 0:
                continue
            for j in range(8 * w, 8 * w + 8):
                out[n] = j
                n += byte[j]
        for j in range(8 * n_words, n_bytes):
            out[n] = j
            n += byte[j]
    return columns[:n]


cdef _touched_by_bytes(const index_t[::1] indices, Py_ssize_t n_features):
    """touched_columns with a byte per column."""
    cdef uint8_t[::1] seen = np.zeros(n_features, dtype=np.uint8)
    cdef Py_ssize_t k
    with nogil:
        for k in range(indices.shape[0]):
            seen[indices[k]] = 1
    return _marked(seen)


def _first_decrease(const index_t[::1] indptr):
    """Position of the first entry of ``indptr`` smaller than the one
    before it, or -1."""
    cdef Py_ssize_t i, found = -1
    with nogil:
        for i in range(1, indptr.shape[0]):
            if indptr[i] < indptr[i - 1]:
                found = i
                break
    return found


def _scan_indices(const index_t[::1] indices, const index_t[::1] indptr,
                  Py_ssize_t bound):
    """``(entries outside [0, bound), descents inside rows)`` of a compressed
    matrix whose indptr is already checked.  A descent is an index not
    greater than the one before it in the same row: none means every row is
    sorted without duplicates (scipy's canonical format).

    One branch-free pass over all of ``indices`` (it vectorises: a negative
    index wraps to a huge unsigned one, so one comparison tests both ends),
    then the descents counted across row boundaries are taken back, one
    comparison per row.  With ``indptr=None``: the entries outside only."""
    cdef Py_ssize_t k, i, r, start, stop, nnz = indices.shape[0]
    cdef Py_ssize_t outside = 0, descents = 0
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1 if indptr is not None else 0
    cdef uint64_t limit = <uint64_t> bound
    cdef uint32_t block_outside, block_descents
    if nnz == 0:
        return 0, 0
    with nogil:
        # Counted in 32-bit lanes, block by block: a 64-bit count widens
        # every comparison and halves the lanes of the vectorised loop.
        for start in range(1, nnz, 1 << 24):
            stop = min(start + (1 << 24), nnz)
            block_outside = 0
            block_descents = 0
            if index_t is int32_t:
                # int32: the unsigned comparison stays 32 bits wide (SSE2 has it)
                for k in range(start, stop):
                    block_outside += <uint32_t> indices[k] >= <uint32_t> limit
                    block_descents += indices[k] <= indices[k - 1]
            else:
                for k in range(start, stop):
                    block_outside += <uint64_t> indices[k] >= limit
                    block_descents += indices[k] <= indices[k - 1]
            outside += block_outside
            descents += block_descents
        outside += <uint64_t> <int64_t> indices[0] >= limit
        # a row boundary r (0 < r < nnz) after a non-empty row: not a descent
        for i in range(1, n_rows):
            r = indptr[i]
            if indptr[i - 1] < r < nnz:
                descents -= indices[r] <= indices[r - 1]
    return outside, descents


def _as_index_array(a, name, bound):
    """``a`` as a contiguous int32/int64 array with the same values, or
    ValueError: one dimension, an integer dtype, and (for unsigned 64-bit
    input, which int64 cannot hold) no value above ``bound``.  Never
    narrows: an out-of-range int64 index must not wrap into range."""
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{MALFORMED}{name} has {a.ndim} dimensions, not 1.")
    if a.dtype.kind not in "iu":
        raise ValueError(f"{MALFORMED}{name} has dtype {a.dtype}, not an integer dtype.")
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and a.max() > bound:
        raise ValueError(
            f"{MALFORMED}{name} holds {int(a.max())}, beyond the matrix's extent {bound}."
        )
    if a.dtype not in (np.int32, np.int64):
        # int8/16 and uint8/16 fit int32; uint32/64 (bounded above) fit int64
        a = a.astype(np.int32 if a.dtype.itemsize < 4 else np.int64)
    return np.ascontiguousarray(a)


def _check_bounds(indices, bound, what, shape, outside=None):
    """ValueError naming the first entry of ``indices`` outside [0, bound)
    (``outside``: their number, when already counted)."""
    if outside is None:
        outside = _scan_indices(indices, None, bound)[0]
    if outside:
        k = int(np.flatnonzero((indices < 0) | (indices >= bound))[0])
        raise ValueError(
            f"{MALFORMED}{what} index {int(indices[k])} (entry {k}) is outside "
            f"[0, {bound}) for shape {shape}. Were its arrays changed after it "
            "was built?"
        )


def check_sparse_structure(X):
    """Check that the arrays of the scipy sparse matrix ``X`` describe a
    matrix of its shape; return it, ready for scipy's conversions and for the
    kernels, or raise ``ValueError("Malformed sparse matrix X: ...")``.

    CSR/CSC/BSR: ``indptr`` of length n_rows + 1 (columns for CSC, block
    rows for BSR), starting at 0, non-decreasing, ending at the number of
    stored entries; ``indices`` and ``data`` of that length; every index in
    [0, n_columns).  COO: row and column of every entry within the shape.
    Any other format is converted to COO (by scipy code that only copies),
    checked, and returned as CSR.

    O(nnz) integer scans and no copy when X is valid with int32/int64
    contiguous arrays.  Strided or narrow-integer arrays are accepted and
    returned as a new matrix of the same class with contiguous
    int32/int64 arrays (the caller's object is not modified).
    """
    fmt = X.format
    if fmt == "coo":
        _check_coo(X)
        return X
    if fmt not in _COMPRESSED:
        try:
            X = X.tocoo()
        except (ValueError, IndexError, TypeError) as exc:  # scipy's own checks
            raise ValueError(f"{MALFORMED}{exc}") from exc
        _check_coo(X)
        return X.tocsr()
    n_rows, n_cols = X.shape
    if fmt == "csc":
        n_major, n_minor, what = n_cols, n_rows, "row"
    elif fmt == "bsr":
        R, C = X.blocksize
        n_major, n_minor, what = n_rows // R, n_cols // C, "block column"
    else:
        n_major, n_minor, what = n_rows, n_cols, "column"
    data = np.asarray(X.data)
    indices = _as_index_array(X.indices, "indices", n_minor)
    indptr = _as_index_array(X.indptr, "indptr", np.iinfo(np.int64).max)
    nnz = indices.shape[0]
    if indptr.shape[0] != n_major + 1:
        raise ValueError(
            f"{MALFORMED}indptr has length {indptr.shape[0]}; a {fmt.upper()} "
            f"matrix of shape {X.shape} needs {n_major + 1}."
        )
    if indptr[0] != 0:
        raise ValueError(f"{MALFORMED}indptr starts at {int(indptr[0])}, not 0.")
    bad = _first_decrease(indptr)
    if bad >= 0:
        raise ValueError(
            f"{MALFORMED}indptr decreases at entry {bad} ({int(indptr[bad - 1])} "
            f"then {int(indptr[bad])})."
        )
    if indptr[n_major] != nnz:
        raise ValueError(
            f"{MALFORMED}indptr ends at {int(indptr[n_major])} but there are "
            f"{nnz} indices."
        )
    data_shape = (nnz,) if fmt != "bsr" else (nnz, R, C)
    if data.shape != data_shape:
        raise ValueError(
            f"{MALFORMED}data has shape {data.shape}; {nnz} stored entries need "
            f"{data_shape}."
        )
    if indices.dtype != indptr.dtype:
        indices, indptr = indices.astype(np.int64), indptr.astype(np.int64)
    outside, descents = _scan_indices(indices, indptr, n_minor)
    _check_bounds(indices, n_minor, what, X.shape, outside)
    if not (indices is X.indices and indptr is X.indptr and data is X.data
            and data.flags.c_contiguous):
        data = np.ascontiguousarray(data)
        if fmt == "bsr":
            X = type(X)((data, indices, indptr), shape=X.shape, blocksize=X.blocksize)
        else:
            X = type(X)((data, indices, indptr), shape=X.shape)
    # What the scan found, in place of scipy's cached flag, which goes stale
    # when an index array is changed after it was computed (as_row_arrays
    # reads it to decide whether rows may hold duplicates).
    X.has_canonical_format = descents == 0
    return X


def _check_coo(X):
    """ValueError unless every stored entry of the COO matrix X lies in its
    shape and there are as many rows, columns and values."""
    data = np.asarray(X.data)
    coords = [_as_index_array(c, name, np.iinfo(np.int64).max)
              for c, name in ((X.row, "row"), (X.col, "col"))]
    if data.ndim != 1 or not (data.shape[0] == coords[0].shape[0] == coords[1].shape[0]):
        raise ValueError(
            f"{MALFORMED}{data.size} values, {coords[0].shape[0]} row and "
            f"{coords[1].shape[0]} column indices."
        )
    for c, what, bound in zip(coords, ("row", "column"), X.shape):
        _check_bounds(c, bound, what, X.shape)


def as_row_arrays(X):
    """Return ``(data, indices, indptr, is_dense, n_features)`` views of a
    validated X: the row description every kernel takes.

    ``X`` must already be CSR (matrix or array) with a checked structure
    (``check_sparse_structure``) or a 2-D C-contiguous ndarray of
    float32/float64, as the estimators' validation produces.  A CSR matrix
    with duplicated entries in a row is summed into a new matrix (the
    caller's object is left alone); unsorted indices are used as they are.
    """
    n_features = X.shape[1]
    if sp.issparse(X):
        indices, indptr = X.indices, X.indptr
        if indptr.dtype != indices.dtype:
            # scipy normally keeps both alike; make them alike without
            # touching X.data.
            dtype = np.result_type(indices.dtype, indptr.dtype)
            indices = indices.astype(dtype, copy=False)
            indptr = indptr.astype(dtype, copy=False)
        # has_canonical_format (sorted, no duplicates) was set by
        # check_sparse_structure's scan (or is scipy's own check of a matrix
        # it built); only when it fails do we look for duplicates ourselves.
        if not X.has_canonical_format and csr_has_duplicates(
            indices, indptr, n_features
        ):
            X = X.copy()
            X.sum_duplicates()
            return as_row_arrays(X)
        return X.data, indices, indptr, False, n_features
    # data is a view of X: ravel of a C-contiguous array does not copy.
    data = X.reshape(-1)
    indices = dense_row_indices(n_features)
    indptr = np.zeros(1, dtype=indices.dtype)  # unused for dense rows
    return data, indices, indptr, True, n_features


def dense_row_indices(Py_ssize_t n_features):
    """The ``indices`` every dense row is passed with: ``arange(n_features)``,
    int32 when it fits."""
    return np.arange(n_features,
                     dtype=np.int32 if n_features < np.iinfo(np.int32).max else np.int64)


cdef RowPass _scanned_rows(const floating[::1] X_data,
                           const index_t[::1] X_indices,
                           const index_t[::1] X_indptr,
                           bint is_dense,
                           Py_ssize_t n_features,
                           const double[::1] y,
                           const double[::1] sample_weight) except *:
    """The rows of X, checked against y and the weights, for a scan that
    reads them by index (``row_of``)."""
    cdef const int64_t[::1] no_order = NO_ROWS
    check_pass_input(X_data, X_indices, X_indptr, is_dense, n_features,
                     n_features, y.shape[0], sample_weight, no_order)
    return row_pass(X_data, X_indices, X_indptr, is_dense, n_features, no_order)


def row_moments(const floating[::1] X_data,
                const index_t[::1] X_indices,
                const index_t[::1] X_indptr,
                bint is_dense,
                Py_ssize_t n_features,
                bint fit_intercept,
                const double[::1] y,
                const double[::1] sample_weight):
    """``(sum h_i ||s_i||^2, sum h_i y_i^2, sum h_i, sum h_i n_i)`` over the
    rows, ``s_i`` the row plus the constant 1 of the intercept (with
    ``fit_intercept``), ``h_i`` its sample weight and ``n_i`` the number of
    its non-zero values (stored zeros not counted): the scales of the rows,
    of their values and of the target that the data-aware defaults
    (``"auto"`` parameters) are computed from.  Dense and sparse copies of
    the same values, float32 or float64, give the same sums
    (``row_sq_norm``).  No copy of X, O(nnz)."""
    cdef RowPass rows = _scanned_rows(X_data, X_indices, X_indptr, is_dense, n_features,
                                      y, sample_weight)
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef Py_ssize_t i, k, nnz, n_nonzero
    cdef double h, sum_sq_norm = 0.0, sum_sq_target = 0.0, sum_weight = 0.0
    cdef double sum_nonzero = 0.0
    with nogil:
        for i in range(y.shape[0]):
            h = sample_weight[i]
            if h == 0.0:
                continue
            nnz = row_of(&rows, i, &row_data, &row_indices)
            sum_sq_norm += h * row_sq_norm(row_data, nnz, fit_intercept)
            n_nonzero = 0
            for k in range(nnz):
                n_nonzero += row_data[k] != 0
            sum_nonzero += h * n_nonzero
            sum_sq_target += h * y[i] * y[i]
            sum_weight += h
    return sum_sq_norm, sum_sq_target, sum_weight, sum_nonzero


def gradient_bound(const floating[::1] X_data,
                   const index_t[::1] X_indices,
                   const index_t[::1] X_indptr,
                   bint is_dense,
                   Py_ssize_t n_features,
                   bint fit_intercept,
                   const double[::1] y,
                   const double[::1] sample_weight,
                   double lipschitz,
                   bint use_target,
                   double radius):
    """``max_i h_i * L_i * ||s_i||`` over the rows (implicit FTRL's default
    ``G``), ``s_i`` the row plus the intercept's 1 and ``h_i`` its weight.

    ``L_i = lipschitz`` for a Lipschitz loss.  With ``use_target`` (squared
    error, not Lipschitz: ``|l'(y, p)| = |p - y|`` has no bound) ``L_i`` bounds
    ``|l'|`` on the ball ``||w|| <= radius`` (``radius = beta``), where
    ``|<w, s_i> - y_i| <= |y_i| + radius ||s_i||``.  Then
    ``G / beta >= h_i ||s_i||^2``, the curvature of the row's loss, so no
    linear or look-ahead step overshoots its target.
    Accumulated in double whatever the dtype of X (``row_sq_norm``), so that
    float32 and float64 copies of the same values give the same G.  No copy
    of X, O(nnz).
    """
    cdef RowPass rows = _scanned_rows(X_data, X_indices, X_indptr, is_dense, n_features,
                                      y, sample_weight)
    cdef const floating* row_data
    cdef const index_t* row_indices
    cdef Py_ssize_t i, nnz
    cdef double norm, scale, best = 0.0
    with nogil:
        for i in range(y.shape[0]):
            if sample_weight[i] == 0.0:
                continue
            nnz = row_of(&rows, i, &row_data, &row_indices)
            norm = sqrt(row_sq_norm(row_data, nnz, fit_intercept))
            if use_target:
                scale = sample_weight[i] * (fabs(y[i]) + radius * norm)
            else:
                scale = sample_weight[i] * lipschitz
            best = fmax(best, scale * norm)
    return best


def stored_coef_scores(const double[:, ::1] coef, intercepts,
                       const floating[::1] X_data, const index_t[::1] X_indices,
                       const index_t[::1] X_indptr, Py_ssize_t n_rows):
    """``scores[i, k] = <coef[k], x_i> + intercepts[k]`` for ``n_rows`` plain
    CSR rows (``plain_rows_largest``; else None), for a model that stores
    ``coef_`` (the pairwise learner's short calls, RDA+).  Each sum starts
    at 0 and goes in the row's order, then the intercept is added, as the
    general path's product (scipy's) and its sum do: the same numbers, bit
    for bit.  On one row of hashed text it costs a fraction of scipy's
    product and of the general validation (which checks the same)."""
    cdef Py_ssize_t i, k, q, n_problems = coef.shape[0]
    cdef const double* b = float64_values(intercepts, n_problems, False)  # read in place
    cdef double total
    if plain_rows_largest(X_data, X_indices, X_indptr, False, coef.shape[1], n_rows) < 0.0:
        return None
    cdef cnp.ndarray scores = np.empty((n_rows, n_problems))
    cdef double* out = <double*> cnp.PyArray_DATA(scores)  # row after row
    with nogil:
        for i in range(n_rows):
            for k in range(n_problems):
                total = 0.0
                for q in range(X_indptr[i], X_indptr[i + 1]):
                    total = total + X_data[q] * coef[k, X_indices[q]]
                out[i * n_problems + k] = total + b[k]
    return scores
