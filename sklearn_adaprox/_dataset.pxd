# Row access shared by every kernel: one accessor for CSR and dense rows.
#
# Both layouts are passed to a kernel as the three arrays of CSR
# (data, indices, indptr) plus ``is_dense``.  A dense C-contiguous matrix is
# passed as ``data = X.ravel()`` (a view, never a copy), ``indices`` =
# arange(n_features) and an unused ``indptr``: row i then starts at
# ``i * n_features`` in data and at 0 in indices.  The kernels only ever see a
# row as (pointer to values, pointer to feature indices, number of entries).
from cython cimport floating
from libc.stdint cimport int32_t, int64_t

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
