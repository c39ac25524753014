"""Compiled parser of svmlight / LIBSVM text, one block of whole lines at a
time (the chunked reader of ``sklearn_adaprox.stream`` feeds it).

A line is ``label [qid:N] index:value index:value ... [# comment]``; blank
lines and comment lines are skipped, as scikit-learn's loader does.  The
parser makes one pass over the bytes with ``strtod`` for the numbers and
writes straight into preallocated arrays: no Python object per token,
which is where ``load_svmlight_file`` spends its time.

Indices are stored as written (the index base is applied by the caller,
which may have to decide it from the data); the parser only guarantees
``0 <= index < 2**31 - 1`` and strictly increasing indices within a line,
and reports the smallest and largest index it saw so the caller can check
bounds without another pass.  An error raises ``ValueError(line, message)``
with the 1-based line number within the file, for the caller to prefix with
the file name.
"""
import numpy as np

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport strtod, strtoll

cdef int64_t MAX_INDEX = 2147483646  # indices are stored as int32


cdef inline bint is_space(char c) noexcept nogil:
    return c == b' ' or c == b'\t' or c == b'\r'


cdef inline bint ends_token(char c) noexcept nogil:
    # '#' starts a comment anywhere, as in scikit-learn's loader; '\0' is
    # the terminator CPython puts after every bytes object
    return c == b' ' or c == b'\t' or c == b'\r' or c == b'\n' or c == b'#' or c == 0


cdef inline double parse_number(const char* p, char** end) noexcept nogil:
    """strtod, with a fast path for a short optional-sign integer (labels
    and counts, the common case): at most 15 digits are exact in a double,
    so the result is strtod's bit for bit."""
    cdef const char* q = p
    cdef bint negative = False
    cdef int64_t v = 0
    if q[0] == b'-' or q[0] == b'+':
        negative = q[0] == b'-'
        q += 1
    cdef const char* digits = q
    while q[0] >= b'0' and q[0] <= b'9' and q - digits < 15:
        v = v * 10 + (q[0] - 48)  # 48 is '0'
        q += 1
    if q > digits and ends_token(q[0]):
        end[0] = <char*>q
        return -<double>v if negative else <double>v
    return strtod(p, end)


def parse_block(bytes buf, Py_ssize_t end, bint query_id, bint float32,
                int64_t first_line):
    """Parse the whole lines of ``buf[:end]`` (which must end with a newline
    or be the end of the file).

    Returns ``(labels, data, indices, indptr, qid, row_line, n_lines,
    min_index, max_index)``: labels float64; data float32 or float64;
    indices int32 as written; indptr int64 starting at 0; qid int64 (empty
    unless ``query_id``); row_line the 1-based file line of every row;
    n_lines the number of lines consumed; min/max index over the block
    (-1 when it holds no feature).
    """
    cdef const char* start = PyBytes_AS_STRING(buf)
    cdef const char* stop = start + end
    cdef const char* p = start
    cdef char* after
    cdef Py_ssize_t i, max_rows = 1, max_nnz = 0

    if end > PyBytes_GET_SIZE(buf):
        raise IndexError("end beyond the buffer")
    # upper bounds of rows and entries: every row ends a line, every entry
    # has a colon (so does a qid, which only makes the bound looser)
    for i in range(end):
        if start[i] == b'\n':
            max_rows += 1
        elif start[i] == b':':
            max_nnz += 1

    labels_arr = np.empty(max_rows, dtype=np.float64)
    indptr_arr = np.empty(max_rows + 1, dtype=np.int64)
    row_line_arr = np.empty(max_rows, dtype=np.int64)
    qid_arr = np.empty(max_rows if query_id else 0, dtype=np.int64)
    indices_arr = np.empty(max_nnz, dtype=np.int32)
    data_arr = np.empty(max_nnz, dtype=np.float32 if float32 else np.float64)
    cdef double[::1] labels = labels_arr
    cdef int64_t[::1] indptr = indptr_arr
    cdef int64_t[::1] row_line = row_line_arr
    cdef int64_t[::1] qid = qid_arr
    cdef int32_t[::1] indices = indices_arr
    cdef float[::1] data32
    cdef double[::1] data64
    if float32:
        data32 = data_arr
    else:
        data64 = data_arr

    cdef Py_ssize_t n_rows = 0, nnz = 0
    cdef int64_t line = first_line, idx, prev, min_index = -1, max_index = -1
    cdef int64_t q
    cdef double value
    cdef bint has_qid
    indptr[0] = 0

    while p < stop:
        while p < stop and is_space(p[0]):
            p += 1
        if p >= stop:
            break
        if p[0] == b'\n' or p[0] == b'#':  # blank or comment-only line
            while p < stop and p[0] != b'\n':
                p += 1
            p += 1
            line += 1
            continue

        value = parse_number(p, &after)
        if after == p or not ends_token(after[0]):
            raise ValueError(line, f"invalid label {_token(p, stop)!r}")
        labels[n_rows] = value
        row_line[n_rows] = line
        p = after
        prev = -1
        has_qid = False
        while True:
            while p < stop and is_space(p[0]):
                p += 1
            if p >= stop or p[0] == b'\n' or p[0] == b'#':
                break
            if p[0] == b'q' and stop - p > 4 and p[1] == b'i' and p[2] == b'd' and p[3] == b':':
                if has_qid or prev >= 0:
                    raise ValueError(line, "qid must come once, before the features")
                q = strtoll(p + 4, &after, 10)
                if after == p + 4 or is_space(p[4]) or not ends_token(after[0]):
                    raise ValueError(line, f"invalid qid {_token(p, stop)!r}")
                if query_id:
                    qid[n_rows] = q
                has_qid = True
                p = after
                continue
            # index: decimal digits only (a sign is an error, not a token)
            if p[0] == b'-':
                raise ValueError(line, f"negative feature index in {_token(p, stop)!r}")
            idx = 0
            after = <char*>p
            while after[0] >= b'0' and after[0] <= b'9':
                if idx <= MAX_INDEX:  # stop growing; reported below
                    idx = idx * 10 + (after[0] - 48)  # 48 is '0'
                after += 1
            if after == p or after[0] != b':':
                raise ValueError(line, f"invalid feature {_token(p, stop)!r} (expected index:value)")
            if idx > MAX_INDEX:
                raise ValueError(line, f"feature index too large in {_token(p, stop)!r}")
            if is_space(after[1]) or after[1] == b'\n':
                raise ValueError(line, f"missing value in {_token(p, stop)!r}")
            value = parse_number(after + 1, &after)
            if not ends_token(after[0]) or after == p:
                raise ValueError(line, f"invalid value in {_token(p, stop)!r}")
            if idx <= prev:
                raise ValueError(line, "feature indices must be sorted and unique "
                                       f"(index {idx} after {prev})")
            prev = idx
            indices[nnz] = <int32_t>idx
            if float32:
                data32[nnz] = <float>value
            else:
                data64[nnz] = value
            nnz += 1
            if min_index < 0 or idx < min_index:
                min_index = idx
            if idx > max_index:
                max_index = idx
            p = after
        if query_id and not has_qid:
            raise ValueError(line, "missing qid (query_id=True)")
        while p < stop and p[0] != b'\n':  # the comment, if any
            p += 1
        p += 1
        line += 1
        n_rows += 1
        indptr[n_rows] = nnz

    return (labels_arr[:n_rows], data_arr[:nnz], indices_arr[:nnz],
            indptr_arr[:n_rows + 1], qid_arr[:n_rows] if query_id else qid_arr,
            row_line_arr[:n_rows], line - first_line, min_index, max_index)


cdef str _token(const char* p, const char* stop):
    """The whitespace-delimited token at p, for error messages."""
    cdef const char* q = p
    while q < stop and not (is_space(q[0]) or q[0] == b'\n') and q - p < 60:
        q += 1
    return (<bytes>p[:q - p]).decode("utf-8", "replace")
