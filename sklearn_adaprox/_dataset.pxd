# Row access shared by every kernel: one accessor for CSR and dense rows.
#
# Both layouts are passed to a kernel as the three arrays of CSR
# (data, indices, indptr) plus ``is_dense``.  A dense C-contiguous matrix is
# passed as ``data = X.ravel()`` (a view, never a copy), ``indices`` =
# arange(n_features) and an unused ``indptr``: row i then starts at
# ``i * n_features`` in data and at 0 in indices.  The kernels only ever see a
# row as (pointer to values, pointer to feature indices, number of entries).
#
# The structure of X (indptr monotone from 0 to nnz, every column index in
# [0, n_features)) is checked once, in Python, by ``check_sparse_structure``
# before any fitted state changes.  Each kernel also calls
# ``check_pass_input`` at its entry: O(1) checks that the arrays it is about
# to index agree with one another, plus one scan of ``order``, so that no
# caller (a future one, or two threads racing on one estimator) can make a
# kernel read or write past the end of an array.
from cython cimport floating
from libc.float cimport DBL_MAX
from libc.math cimport fabs, fmax
from libc.stddef cimport size_t
from libc.stdint cimport int32_t, int64_t

cdef extern from "_simd.h" nogil:
    void prefetch_stream(const void* p, size_t nbytes)
    void prefetch_line(const void* p)

ctypedef fused index_t:
    int32_t
    int64_t


cdef inline Py_ssize_t get_row(
    const floating* data,
    const index_t* indices,
    const index_t* indptr,
    bint is_dense,
    Py_ssize_t n_features,
    Py_ssize_t row,
    const floating** row_data,
    const index_t** row_indices,
) noexcept nogil:
    """Point ``row_data``/``row_indices`` at row ``row``; return its length."""
    cdef Py_ssize_t start
    if is_dense:
        row_data[0] = data + row * n_features
        row_indices[0] = indices
        return n_features
    start = <Py_ssize_t> indptr[row]
    row_data[0] = data + start
    row_indices[0] = indices + start
    return <Py_ssize_t> indptr[row + 1] - start


cdef inline void data_pointers(
    const floating[::1] X_data,
    const index_t[::1] X_indices,
    const floating** data,
    const index_t** indices,
) noexcept nogil:
    """Point ``data``/``indices`` at the first stored value and index of X,
    or at NULL when X stores none (``&X_data[0]`` is out of bounds then)."""
    data[0] = NULL
    indices[0] = NULL
    if X_data.shape[0] > 0:
        data[0] = &X_data[0]
        indices[0] = &X_indices[0]


cdef inline void prefetch_row(
    const floating* data,
    const index_t* indices,
    const index_t* indptr,
    bint is_dense,
    Py_ssize_t n_features,
    Py_ssize_t row,
) noexcept nogil:
    """Start loading row ``row`` into the cache; call it one row ahead.  A
    pass visits rows in shuffled order, so without it every row begins with
    a wait on main memory."""
    cdef const floating* values
    cdef const index_t* columns
    cdef Py_ssize_t length = get_row(data, indices, indptr, is_dense, n_features, row,
                                     &values, &columns)
    prefetch_stream(values, length * sizeof(floating))
    if not is_dense:  # a dense row's indices are shared by all rows
        prefetch_stream(columns, length * sizeof(index_t))


# One pass over the rows: every kernel walks X in the order of a pass the
# same way, through a RowPass and step_row:
#
#     cdef RowPass rows = row_pass(X_data, X_indices, X_indptr, is_dense,
#                                  n_features, order)
#     with nogil:
#         for s in range(rows.n_steps):
#             nnz = step_row(&rows, s, &i, &x, &idx)
#             if sample_weight[i] == 0.0:
#                 continue  # a row of zero weight is not a step
#             ...
#
# A struct cannot be fused, so RowPass holds the arrays untyped; step_row and
# row_of give them back the types of the kernel's own row pointers.
cdef struct RowPass:
    const void* data          # floating: the stored values (NULL if none)
    const void* indices       # index_t: their columns (arange for dense rows)
    const void* indptr        # index_t: row starts (unused for dense rows)
    bint is_dense
    Py_ssize_t n_features
    const int64_t* order      # the rows of the pass, in order (NULL: none)
    Py_ssize_t n_steps        # len(order)


cdef inline RowPass row_pass(
    const floating[::1] X_data,
    const index_t[::1] X_indices,
    const index_t[::1] X_indptr,
    bint is_dense,
    Py_ssize_t n_features,
    const int64_t[::1] order,
):
    """The rows of X (as passed to a kernel) visited in ``order``; an empty
    ``order`` for a RowPass read through ``row_of`` only."""
    cdef RowPass rows
    cdef const floating* data
    cdef const index_t* indices
    data_pointers(X_data, X_indices, &data, &indices)
    rows.data = data
    rows.indices = indices
    rows.indptr = &X_indptr[0]
    rows.is_dense = is_dense
    rows.n_features = n_features
    rows.order = NULL
    rows.n_steps = 0
    if order.shape[0] > 0:
        rows.order = &order[0]
        rows.n_steps = order.shape[0]
    return rows


cdef inline Py_ssize_t row_of(
    const RowPass* rows,
    Py_ssize_t row,
    const floating** row_data,
    const index_t** row_indices,
) noexcept nogil:
    """Point ``row_data``/``row_indices`` at row ``row``; return its length."""
    return get_row(<const floating*> rows.data, <const index_t*> rows.indices,
                   <const index_t*> rows.indptr, rows.is_dense, rows.n_features,
                   row, row_data, row_indices)


# A per-feature state array of at least this many bytes is read at random
# places by a pass over text-like rows, with most reads missing the caches
# (hashed text: 2**20 columns), so its entries are asked for a row ahead
# (prefetch_entries).  A narrower one stays in the caches, where the requests
# only cost their instructions (a9a, w8a: 5 to 15% of a pass).
cdef enum:
    PREFETCH_STATE_BYTES = 1 << 20


cdef inline bint state_is_wide(bint is_dense, Py_ssize_t n_features,
                               Py_ssize_t entry_bytes) noexcept nogil:
    """Whether a pass over sparse rows should ask for the state of the next
    row's columns (``prefetch_entries``): a state array of ``entry_bytes``
    per feature of at least ``PREFETCH_STATE_BYTES``.  Dense rows read every
    column in order, which the hardware prefetcher follows."""
    return not is_dense and n_features * entry_bytes >= PREFETCH_STATE_BYTES


# state_is_wide, unless the test hook _dataset.set_prefetch has turned the
# requests off: what a pass tests once to decide whether it asks ahead.
cdef bint asks_for_state_ahead(bint is_dense, Py_ssize_t n_features,
                               Py_ssize_t entry_bytes) noexcept nogil


# The n values of a float64 ndarray of one dimension and length n, in place
# (C-contiguous, aligned, in the machine's byte order, and writeable if
# ``writable``: the caller writes them only then), else ValueError: a
# one-row call's small per-problem arrays, read without a typed memoryview.
cdef double* float64_values(object array, Py_ssize_t n, bint writable) except NULL

# The length of an ndarray of one dimension of type ``typenum`` (a NumPy
# type number) whose values can be read in place (C-contiguous, aligned, in
# the machine's byte order), else ValueError: as float64_values, for a
# one-row call's arrays of any length.
cdef Py_ssize_t vector_length(object array, int typenum) except -1

# The sorted union of two strictly increasing lists of len_a and len_b
# values into ``out`` (room for len_a + len_b); returns its length.
cdef Py_ssize_t merge_sorted(const int64_t* a, Py_ssize_t len_a, const int64_t* b,
                             Py_ssize_t len_b, int64_t* out) noexcept nogil


cdef inline Py_ssize_t sparse_row_columns(const RowPass* rows, Py_ssize_t s,
                                          const index_t** columns) noexcept nogil:
    """Point ``columns`` at the columns of the sparse row of step ``s`` and
    return their number (0 past the last step)."""
    cdef const index_t* indptr = <const index_t*> rows.indptr
    cdef Py_ssize_t row, length
    if s >= rows.n_steps:
        return 0
    row = <Py_ssize_t> rows.order[s]
    length = indptr[row + 1] - indptr[row]
    if length > 0:
        columns[0] = (<const index_t*> rows.indices) + indptr[row]
    return length


cdef inline Py_ssize_t columns_ahead(const RowPass* rows, Py_ssize_t s,
                                     const index_t** columns) noexcept nogil:
    """At step ``s`` of a pass over sparse rows that asks for the state of
    the next row's columns (``prefetch_entries``): start loading the columns
    of the row of step ``s + 2``, and point ``columns`` at those of step
    ``s + 1`` (asked for at the step before: reading them as they arrive
    from memory would stall every row), returning their number."""
    cdef const index_t* later = NULL
    cdef Py_ssize_t n_later = sparse_row_columns(rows, s + 2, &later)
    if n_later > 0:
        prefetch_stream(later, n_later * sizeof(index_t))
    return sparse_row_columns(rows, s + 1, columns)


cdef inline void prefetch_entries(const void* state, Py_ssize_t entry_bytes,
                                  const index_t* columns, Py_ssize_t n) noexcept nogil:
    """Start loading the entries ``columns`` of a per-feature state array of
    ``entry_bytes`` per feature (one cache line each): called with the next
    row's columns (``columns_ahead``) while this row is computed, so that
    the next row finds its state in the cache.  Rows come in shuffled order
    and their columns at random, which no hardware prefetcher guesses.  One
    pass of dual averaging, hinge, l2, medians of 7 interleaved rounds on
    2 cores: 20 newsgroups hashed (2**20 columns, 415 non-zeros a row) 62
    ms without, 32 ms with (SGDClassifier 47 ms); text-like Zipf rows (2**20
    columns, 50 non-zeros, mostly of frequent, cached columns) 117 and 118
    ms.  Asking for a row's state before its columns have arrived cost
    the Zipf pass 20 ms (a wait on memory per row): hence ``columns_ahead``.
    A hint: it changes no result."""
    cdef Py_ssize_t q
    cdef const char* base = <const char*> state
    for q in range(n):
        prefetch_line(base + entry_bytes * columns[q])


cdef inline Py_ssize_t step_row(
    const RowPass* rows,
    Py_ssize_t s,
    Py_ssize_t* row,
    const floating** row_data,
    const index_t** row_indices,
) noexcept nogil:
    """Step ``s`` of the pass: store its row's index in ``row``, point
    ``row_data``/``row_indices`` at the row and return its length, and start
    loading the row of step ``s + 1`` into the cache (see ``prefetch_row``)."""
    row[0] = <Py_ssize_t> rows.order[s]
    if s + 1 < rows.n_steps:
        prefetch_row(<const floating*> rows.data, <const index_t*> rows.indices,
                     <const index_t*> rows.indptr, rows.is_dense, rows.n_features,
                     <Py_ssize_t> rows.order[s + 1])
    return row_of(rows, row[0], row_data, row_indices)


cdef inline double row_sq_norm(const floating* row_data, Py_ssize_t nnz,
                               bint fit_intercept) noexcept nogil:
    """``||s||^2`` of the row ``s`` plus the constant 1 of the intercept (with
    ``fit_intercept``), summed in double in the order of the row's entries,
    so that dense and sparse, float32 and float64 copies of the same values
    give the same sum."""
    cdef Py_ssize_t k
    cdef double v, sq = 1.0 if fit_intercept else 0.0
    for k in range(nnz):
        v = row_data[k]
        sq += v * v
    return sq


cdef inline Py_ssize_t longest_row(const index_t[::1] indptr, bint is_dense,
                                   Py_ssize_t n_features, Py_ssize_t n_rows) noexcept nogil:
    """Largest number of stored entries of one row (workspaces per row)."""
    cdef Py_ssize_t i, longest = 0
    if is_dense:
        return n_features if n_rows > 0 else 0
    for i in range(n_rows):
        if indptr[i + 1] - indptr[i] > longest:
            longest = indptr[i + 1] - indptr[i]
    return longest


cdef inline int check_pass_input(
    const floating[::1] X_data,
    const index_t[::1] X_indices,
    const index_t[::1] X_indptr,
    bint is_dense,
    Py_ssize_t n_features,
    Py_ssize_t state_features,
    Py_ssize_t n_rows,
    const double[::1] sample_weight,
    const int64_t[::1] order,
) except -1:
    """Raise ValueError unless the rows of X, the state and the pass agree.

    ``state_features`` is the width of the state arrays the kernel will index
    by column; ``n_rows`` the length of its targets.  Called once per kernel
    call: O(1) plus one scan of ``order``.
    """
    cdef Py_ssize_t s
    cdef int64_t row, bad = 0
    cdef bint out_of_range = False
    if state_features != n_features:
        raise ValueError(
            f"The fitted state has {state_features} features but X has "
            f"{n_features}: the estimator changed during this call (is it "
            "shared between threads? One estimator must not be fitted by two "
            "threads at once)."
        )
    if sample_weight.shape[0] != n_rows:
        raise ValueError(
            f"{sample_weight.shape[0]} sample weights for {n_rows} targets."
        )
    if is_dense:
        if X_data.shape[0] != n_rows * n_features or X_indices.shape[0] < n_features:
            raise ValueError(
                f"Dense rows: {X_data.shape[0]} values for {n_rows} rows of "
                f"{n_features} features."
            )
    elif (X_indptr.shape[0] != n_rows + 1 or X_indptr[0] != 0
          or X_indptr[n_rows] != X_indices.shape[0]
          or X_data.shape[0] != X_indices.shape[0]):
        raise ValueError(
            f"Sparse rows: indptr of length {X_indptr.shape[0]} for {n_rows} "
            f"rows, {X_indices.shape[0]} indices, {X_data.shape[0]} values."
        )
    with nogil:
        for s in range(order.shape[0]):
            row = order[s]
            if row < 0 or row >= n_rows:
                bad = row
                out_of_range = True
                break
    if out_of_range:
        raise ValueError(f"Row order names row {bad} of {n_rows}.")
    return 0


cdef inline double plain_rows_largest(
    const floating[::1] X_data,
    const index_t[::1] X_indices,
    const index_t[::1] X_indptr,
    bint is_dense,
    Py_ssize_t n_features,
    Py_ssize_t n_rows,
) noexcept:
    """The largest magnitude of the ``n_rows`` rows when they are "plain",
    else -1: every value finite and, for CSR arrays, row pointers from 0 to
    the number of entries, never decreasing, and the columns of each row
    strictly increasing within [0, n_features) (scipy's canonical format:
    no duplicate to sum).

    What ``check_sparse_structure``, the finiteness check and the duplicate
    scan of a call would conclude, in one compiled pass: the short paths of
    a call on a few rows (``_short_calls``) take only such rows and leave
    everything else to the general validation, whose messages name the
    fault.  O(nnz + n_rows)."""
    cdef Py_ssize_t i, k, nnz = X_data.shape[0]
    cdef double v, biggest = 0.0
    if n_rows < 1:
        return -1.0
    if is_dense:
        if nnz != n_rows * n_features:
            return -1.0
    elif (X_indptr.shape[0] != n_rows + 1 or X_indptr[0] != 0
            or X_indptr[n_rows] != nnz or X_indices.shape[0] != nnz):
        return -1.0
    with nogil:
        if not is_dense:
            for i in range(n_rows):  # every pointer first: the scan below trusts them
                if X_indptr[i + 1] < X_indptr[i]:
                    return -1.0
            for i in range(n_rows):
                for k in range(X_indptr[i], X_indptr[i + 1]):
                    if X_indices[k] < 0 or X_indices[k] >= n_features:
                        return -1.0
                    if k > X_indptr[i] and X_indices[k] <= X_indices[k - 1]:
                        return -1.0
        for k in range(nnz):
            v = fabs(X_data[k])
            if not v <= DBL_MAX:  # infinite or NaN
                return -1.0
            biggest = fmax(biggest, v)
    return biggest


cdef inline bint learnable_rows(
    const floating[::1] X_data,
    const index_t[::1] X_indices,
    const index_t[::1] X_indptr,
    bint is_dense,
    Py_ssize_t n_features,
    Py_ssize_t n_rows,
    double largest_factor,
    double limit,
) noexcept:
    """Whether a short call's compiled passes may take the rows: plain
    (``plain_rows_largest``), with no value that could overflow the state
    against ``limit`` with a target or weight of ``largest_factor``.  Else
    the general path checks them and names the fault."""
    cdef double largest = plain_rows_largest(X_data, X_indices, X_indptr, is_dense,
                                             n_features, n_rows)
    return largest >= 0.0 and fmax(largest, 1.0) * largest_factor < limit
