"""Compiled core of ``sklearn_adaprox.merge``: one pass over one part of a
state that merges the shard models' values of it (``merge_entries``), or
over AdaGrad's two parts kept side by side (``merge_pairs``).

Merging K shard models in memory (``merge``, the threads of
``ThreadShardedTrainer``) reads every entry of every model's state once.
Written with NumPy, the increments, their weights, the weighted sums and the
quotient are a dozen passes over arrays of the width of the model, each
allocated anew: on a hashed model of 2**20 columns that took as long as
a shard's pass over its rows.  Here each entry is read once and the result
written once.

The floating-point operations are those of the increments that the Dask
driver adds up (``merge._increment``, ``merge._add``, ``merge._apply``),
in the same order, so both give the same merged state.
"""
from libc.math cimport sqrt
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from ._dataset cimport prefetch_stream

# merge_pairs asks for the rows this many entries ahead: they are scattered
# over arrays larger than the caches, and the loop would otherwise wait on
# each one in turn (82,000 columns of 2**20 merged from two models: 1.3 ->
# 1.1 ms)
cdef enum:
    AHEAD = 16


def merge_entries(double[:] out, const double[:] base, list values,
                  const double[:] weight_base, list weight_values,
                  const double[::1] step_weights, bint average, bint add_base,
                  bint roots=False, bint weight_roots=False,
                  const int64_t[::1] entries=None, Py_ssize_t lo=0, Py_ssize_t hi=-1):
    """Merge one part of a state, entry by entry (``out`` may be ``base``).

    With ``d_k = values[k] - base`` (``base`` None: zero), ``out`` is
    ``base + sum_k d_k`` (``average`` false), or ``base + sum_k a_k d_k /
    sum_k a_k`` where the weights ``a_k = max(weight_values[k] -
    weight_base, 0)`` (per entry), else ``max(step_weights[k], 0)``, else 1
    are positive, and ``base + sum_k d_k / K`` where they are not.  Without
    ``add_base`` the base is left out of the result (the caller rounds an
    integer count first).

    ``roots``: ``base``, ``values`` and ``out`` hold the square roots of the
    sums (as AdaGrad keeps ``sqrt(sum g**2)``): the entries are squared
    first and the root of the result is written (of zero if it is
    negative).  ``weight_roots``: the same for the weights.

    ``entries``: merge only these entries (sorted, distinct, in range);
    ``out`` is left as it is elsewhere (where no model differs from the
    base, the merge would write the base again).  ``lo``, ``hi``: merge only
    the entries (or the ``entries``) from position ``lo`` to ``hi`` (-1: the
    end), so that threads can share a part.
    """
    cdef Py_ssize_t n = out.shape[0], K = len(values), k
    if K == 0:
        raise ValueError("merge_entries needs at least one model.")
    cdef bint has_base = base is not None, per_entry = weight_values is not None
    cdef bint per_model = step_weights is not None
    if has_base and base.shape[0] != n:
        raise ValueError("base and out differ in length.")
    if per_entry and (len(weight_values) != K or weight_base is None
                      or weight_base.shape[0] != n):
        raise ValueError("weight_values needs one array per model and weight_base.")
    if per_model and step_weights.shape[0] != K:
        raise ValueError("step_weights needs one weight per model.")
    cdef const int64_t[::1] no_entries = None
    hi = _checked_range(entries, n, lo, hi)
    # the memoryviews are kept in lists (they own the buffers); the loop reads
    # through raw pointers and strides
    views = [_view(v, n) for v in values]
    weights = [_view(v, n) for v in weight_values] if per_entry else []
    cdef const double** value_ptr = <const double**> malloc(K * sizeof(double*))
    cdef Py_ssize_t* value_stride = <Py_ssize_t*> malloc(K * sizeof(Py_ssize_t))
    cdef const double** weight_ptr = <const double**> malloc(K * sizeof(double*))
    cdef Py_ssize_t* weight_stride = <Py_ssize_t*> malloc(K * sizeof(Py_ssize_t))
    cdef const double[:] view
    if (value_ptr == NULL or value_stride == NULL or weight_ptr == NULL
            or weight_stride == NULL):
        free(value_ptr)
        free(value_stride)
        free(weight_ptr)
        free(weight_stride)
        raise MemoryError()
    try:
        for k in range(K):
            view = views[k]
            value_ptr[k] = &view[0] if n else NULL
            value_stride[k] = view.strides[0] // sizeof(double)
            if per_entry:
                view = weights[k]
                weight_ptr[k] = &view[0] if n else NULL
                weight_stride[k] = view.strides[0] // sizeof(double)
        with nogil:
            _merge(out, base, value_ptr, value_stride, weight_base, weight_ptr,
                   weight_stride, step_weights, K, average and per_entry, average,
                   add_base, roots, weight_roots,
                   entries if entries is not None else no_entries, lo, hi)
    finally:
        free(value_ptr)
        free(value_stride)
        free(weight_ptr)
        free(weight_stride)


# Entries are merged in blocks: each model's block is read in one tight loop
# (its branches decided once per block, not per entry and model), the sums
# kept in small arrays on the stack.
cdef enum:
    BLOCK = 512


cdef void _merge(double[:] out, const double[:] base, const double** value_ptr,
                 const Py_ssize_t* value_stride, const double[:] weight_base,
                 const double** weight_ptr, const Py_ssize_t* weight_stride,
                 const double[::1] step_weights, Py_ssize_t K, bint per_entry,
                 bint average, bint add_base, bint roots, bint weight_roots,
                 const int64_t[::1] entries, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t pos[BLOCK]  # the entries of the block
    cdef double b[BLOCK]
    cdef double wb[BLOCK]
    cdef double plain[BLOCK]
    cdef double weighted[BLOCK]
    cdef double total[BLOCK]
    cdef bint some = entries is not None
    cdef Py_ssize_t start = lo, m, j, k, vs, ws
    cdef const double* v
    cdef const double* w
    cdef double d, a
    cdef bint has_base = base is not None
    cdef bint per_model = step_weights is not None
    while start < hi:
        m = min(BLOCK, hi - start)
        for j in range(m):
            pos[j] = entries[start + j] if some else start + j
        for j in range(m):
            d = base[pos[j]] if has_base else 0.0
            b[j] = d * d if roots else d
        if per_entry:
            for j in range(m):
                d = weight_base[pos[j]]
                wb[j] = d * d if weight_roots else d
        for k in range(K):
            vs = value_stride[k]
            v = value_ptr[k]
            # the first model's terms start the sums as they are (not 0.0 +
            # d): the increments' sums start from the first increment
            for j in range(m):
                d = v[pos[j] * vs]
                d = (d * d if roots else d) - b[j]
                plain[j] = d if k == 0 else plain[j] + d
            if not average:
                continue
            if per_entry:
                ws = weight_stride[k]
                w = weight_ptr[k]
                for j in range(m):
                    a = w[pos[j] * ws]
                    a = (a * a if weight_roots else a) - wb[j]
                    a = a if a > 0.0 else 0.0
                    d = v[pos[j] * vs]
                    d = (d * d if roots else d) - b[j]
                    weighted[j] = a * d if k == 0 else weighted[j] + a * d
                    total[j] = a if k == 0 else total[j] + a
            else:
                a = step_weights[k] if per_model else 1.0
                a = a if a > 0.0 else 0.0
                for j in range(m):
                    d = v[pos[j] * vs]
                    d = (d * d if roots else d) - b[j]
                    weighted[j] = a * d if k == 0 else weighted[j] + a * d
                    total[j] = a if k == 0 else total[j] + a
        for j in range(m):
            if average:
                d = weighted[j] / total[j] if total[j] > 0.0 else plain[j] / K
            else:
                d = plain[j]
            d = b[j] + d if add_base else d
            if roots:
                d = sqrt(d) if d > 0.0 else 0.0
            out[pos[j]] = d
        start += m


def merge_pairs(double[:, ::1] out, const double[:] base_value, const double[:] base_root,
                list values, bint average, const int64_t[::1] entries=None,
                list copies=None, Py_ssize_t lo=0, Py_ssize_t hi=-1):
    """AdaGrad's two parts of a feature, ``u`` and ``sqrt(n)``, which its
    state keeps side by side (rows of ``(entries, 2)`` arrays), merged in
    one pass: each row is read once for both parts, where ``merge_entries``
    would read it once per part (on a wide model the merge waits on memory,
    not on arithmetic).

    ``out[e]`` is ``(u, sqrt n)`` with ``u`` what ``merge_entries`` gives
    for the base ``base_value`` and the models' first columns, and ``n``
    for the base ``base_root`` and their second columns (``roots``), both
    weighted, when ``average``, by each model's increment of ``n``: the same
    floating-point operations in the same order, so the same numbers.
    ``out`` may be the base's array.  ``entries``, ``lo``, ``hi``: as in
    ``merge_entries``.  ``copies``: arrays of the shape of ``out`` that
    receive the merged rows too (the models' own, when they go on from the
    merged state: no copy back afterwards).
    """
    cdef Py_ssize_t n = out.shape[0], K = len(values), n_copies, k
    if K == 0:
        raise ValueError("merge_pairs needs at least one model.")
    if base_value.shape[0] != n or base_root.shape[0] != n:
        raise ValueError("The base and out differ in length.")
    views = [_pairs(v, n) for v in values]
    writes = [_writable_pairs(v, n) for v in copies] if copies is not None else []
    n_copies = len(writes)
    hi = _checked_range(entries, n, lo, hi)
    cdef const double** value_ptr = <const double**> malloc((K + 1) * sizeof(double*))
    cdef double** copy_ptr = <double**> malloc((n_copies + 1) * sizeof(double*))
    if value_ptr == NULL or copy_ptr == NULL:
        free(value_ptr)
        free(copy_ptr)
        raise MemoryError()
    cdef const double[:, ::1] view
    cdef double[:, ::1] target
    try:
        for k in range(K):
            view = views[k]
            value_ptr[k] = &view[0, 0] if n else NULL
        for k in range(n_copies):
            target = writes[k]
            copy_ptr[k] = &target[0, 0] if n else NULL
        with nogil:
            _merge_pairs(out, base_value, base_root, value_ptr, K, copy_ptr, n_copies,
                         average, entries, lo, hi)
    finally:
        free(value_ptr)
        free(copy_ptr)


cdef void _merge_pairs(double[:, ::1] out, const double[:] base_value,
                       const double[:] base_root, const double** value_ptr, Py_ssize_t K,
                       double** copy_ptr, Py_ssize_t n_copies, bint average,
                       const int64_t[::1] entries, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    cdef bint some = entries is not None
    cdef Py_ssize_t i, e, k, ahead
    cdef const double* v
    cdef double ub, nb, du, dn, a, plain_u = 0.0, plain_n = 0.0
    cdef double weighted_u = 0.0, weighted_n = 0.0, total = 0.0, u, n
    for i in range(lo, hi):
        e = entries[i] if some else i
        if some and i + AHEAD < hi:
            ahead = entries[i + AHEAD]
            prefetch_stream(&base_value[ahead], sizeof(double))
            for k in range(K):
                prefetch_stream(value_ptr[k] + 2 * ahead, 2 * sizeof(double))
        ub = base_value[e]
        nb = base_root[e] * base_root[e]
        for k in range(K):
            v = value_ptr[k] + 2 * e
            du = v[0] - ub
            dn = v[1] * v[1] - nb
            # the first model's terms start the sums, as in _merge
            plain_u = du if k == 0 else plain_u + du
            plain_n = dn if k == 0 else plain_n + dn
            if average:
                a = dn if dn > 0.0 else 0.0  # the weight: this model's increment of n
                weighted_u = a * du if k == 0 else weighted_u + a * du
                weighted_n = a * dn if k == 0 else weighted_n + a * dn
                total = a if k == 0 else total + a
        if average and total > 0.0:
            du = weighted_u / total
            dn = weighted_n / total
        elif average:
            du = plain_u / K
            dn = plain_n / K
        else:
            du = plain_u
            dn = plain_n
        u = ub + du
        n = nb + dn
        n = sqrt(n) if n > 0.0 else 0.0
        out[e, 0] = u
        out[e, 1] = n
        for k in range(n_copies):
            copy_ptr[k][2 * e] = u
            copy_ptr[k][2 * e + 1] = n


cdef const double[:, ::1] _pairs(value, Py_ssize_t n):
    cdef const double[:, ::1] view = value
    if view.shape[0] != n or view.shape[1] != 2:
        raise ValueError("Every model's pairs must have the shape of out.")
    return view


cdef double[:, ::1] _writable_pairs(value, Py_ssize_t n):
    cdef double[:, ::1] view = value
    if view.shape[0] != n or view.shape[1] != 2:
        raise ValueError("Every copy must have the shape of out.")
    return view


cdef Py_ssize_t _checked_range(const int64_t[::1] entries, Py_ssize_t n, Py_ssize_t lo,
                               Py_ssize_t hi) except -1:
    """``hi`` (-1: the end) of a merge of the positions ``lo`` to ``hi`` of
    ``entries`` (sorted, so its ends bound it; None: all ``n`` entries),
    or ValueError."""
    if entries is not None and entries.shape[0] and (
            entries[0] < 0 or entries[entries.shape[0] - 1] >= n):
        raise ValueError("entries out of range.")
    cdef Py_ssize_t size = entries.shape[0] if entries is not None else n
    if hi < 0:
        hi = size
    if not 0 <= lo <= hi <= size:
        raise ValueError(f"lo={lo}, hi={hi} outside the {size} entries.")
    return hi


cdef const double[:] _view(value, Py_ssize_t n):
    cdef const double[:] view = value
    if view.shape[0] != n:
        raise ValueError("Every model's entries must have the length of out.")
    return view


def copy_columns(double[:, :, ::1] out, const double[:, :, ::1] source,
                 const int64_t[::1] columns):
    """``out[:, columns, :] = source[:, columns, :]`` for sorted, distinct
    columns in range: the columns a pass changed, of one part of a state
    (axis 1: the features), copied back into a shard that reuses its
    arrays.  NumPy's assignment through an index array on an array of three
    dimensions costs several times more."""
    cdef Py_ssize_t n_rows = out.shape[0], width = out.shape[1], inner = out.shape[2]
    cdef Py_ssize_t r, c, i, j
    if (source.shape[0] != n_rows or source.shape[1] != width
            or source.shape[2] != inner):
        raise ValueError("copy_columns: out and source differ in shape.")
    for j in range(columns.shape[0]):
        if not 0 <= columns[j] < width:
            raise ValueError(f"copy_columns: column {columns[j]} of {width}.")
    with nogil:
        for r in range(n_rows):
            for j in range(columns.shape[0]):
                c = columns[j]
                for i in range(inner):
                    out[r, c, i] = source[r, c, i]
