"""Compiled helpers of ``sklearn_adaprox.stream``: the svmlight / LIBSVM
block parser and the bounded-memory ROC AUC of a stream.

The parser reads one block of whole lines at a time (the chunked reader
feeds it).  A line is ``label [qid:N] index:value index:value ... [#
comment]``; blank lines and comment lines are skipped, as scikit-learn's
loader does.  It makes one pass over the bytes with ``strtod`` for the
numbers and writes straight into preallocated arrays: no Python object per
token, which is where ``load_svmlight_file`` spends its time.  The pass runs
without the GIL, so a reader thread parses the next chunk while the learner
works on this one.

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
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcpy, memset
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


cdef enum ParseError:
    NO_ERROR
    BAD_LABEL
    QID_TWICE
    BAD_QID
    NEGATIVE_INDEX
    BAD_FEATURE
    INDEX_TOO_LARGE
    MISSING_VALUE
    BAD_VALUE
    UNSORTED
    MISSING_QID


cdef struct Parsed:
    # what the pass produced, or where it stopped
    Py_ssize_t n_rows
    Py_ssize_t nnz
    int64_t line
    int64_t min_index
    int64_t max_index
    ParseError error
    const char* error_at  # the offending token
    int64_t error_index  # UNSORTED: this index came after error_prev
    int64_t error_prev


cdef void parse_lines(const char* p, const char* stop, bint query_id,
                      double* labels, int64_t* indptr, int64_t* row_line,
                      int64_t* qid, int32_t* indices, float* data32,
                      double* data64, Parsed* out) noexcept nogil:
    """The pass itself: fills the arrays (data32 or data64, whichever is
    not NULL) and ``out``; stops at the first error, recorded in ``out``."""
    cdef char* after
    cdef Py_ssize_t n_rows = 0, nnz = 0
    cdef int64_t line = out.line, idx, prev, min_index = -1, max_index = -1
    cdef int64_t q
    cdef double value
    cdef bint has_qid
    cdef ParseError error = NO_ERROR
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
            error = BAD_LABEL
            break
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
                    error = QID_TWICE
                    break
                q = strtoll(p + 4, &after, 10)
                if after == p + 4 or is_space(p[4]) or not ends_token(after[0]):
                    error = BAD_QID
                    break
                if query_id:
                    qid[n_rows] = q
                has_qid = True
                p = after
                continue
            # index: decimal digits only (a sign is an error, not a token)
            if p[0] == b'-':
                error = NEGATIVE_INDEX
                break
            idx = 0
            after = <char*>p
            while after[0] >= b'0' and after[0] <= b'9':
                if idx <= MAX_INDEX:  # stop growing; reported below
                    idx = idx * 10 + (after[0] - 48)  # 48 is '0'
                after += 1
            if after == p or after[0] != b':':
                error = BAD_FEATURE
                break
            if idx > MAX_INDEX:
                error = INDEX_TOO_LARGE
                break
            if is_space(after[1]) or after[1] == b'\n':
                error = MISSING_VALUE
                break
            value = parse_number(after + 1, &after)
            if not ends_token(after[0]) or after == p:
                error = BAD_VALUE
                break
            if idx <= prev:
                error = UNSORTED
                out.error_index = idx
                out.error_prev = prev
                break
            prev = idx
            indices[nnz] = <int32_t>idx
            if data32 != NULL:
                data32[nnz] = <float>value
            else:
                data64[nnz] = value
            nnz += 1
            if min_index < 0 or idx < min_index:
                min_index = idx
            if idx > max_index:
                max_index = idx
            p = after
        if error != NO_ERROR:
            break
        if query_id and not has_qid:
            error = MISSING_QID
            break
        while p < stop and p[0] != b'\n':  # the comment, if any
            p += 1
        p += 1
        line += 1
        n_rows += 1
        indptr[n_rows] = nnz

    out.n_rows, out.nnz, out.line = n_rows, nnz, line
    out.min_index, out.max_index = min_index, max_index
    out.error, out.error_at = error, p


cdef object error_message(Parsed* parsed, const char* stop):
    cdef str token = _token(parsed.error_at, stop)
    if parsed.error == BAD_LABEL:
        return f"invalid label {token!r}"
    if parsed.error == QID_TWICE:
        return "qid must come once, before the features"
    if parsed.error == BAD_QID:
        return f"invalid qid {token!r}"
    if parsed.error == NEGATIVE_INDEX:
        return f"negative feature index in {token!r}"
    if parsed.error == BAD_FEATURE:
        return f"invalid feature {token!r} (expected index:value)"
    if parsed.error == INDEX_TOO_LARGE:
        return f"feature index too large in {token!r}"
    if parsed.error == MISSING_VALUE:
        return f"missing value in {token!r}"
    if parsed.error == BAD_VALUE:
        return f"invalid value in {token!r}"
    if parsed.error == UNSORTED:
        return ("feature indices must be sorted and unique "
                f"(index {parsed.error_index} after {parsed.error_prev})")
    return "missing qid (query_id=True)"


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
    cdef Py_ssize_t i, max_rows = 1, max_nnz = 0

    if end > PyBytes_GET_SIZE(buf):
        raise IndexError("end beyond the buffer")
    # upper bounds of rows and entries: every row ends a line, every entry
    # has a colon (so does a qid, which only makes the bound looser)
    with nogil:
        for i in range(end):
            if start[i] == b'\n':
                max_rows += 1
            elif start[i] == b':':
                max_nnz += 1

    # one spare element each, so that &a[0] exists even for a block
    # without entries; the parser writes only within the counted bounds
    labels_arr = np.empty(max_rows, dtype=np.float64)
    indptr_arr = np.empty(max_rows + 1, dtype=np.int64)
    row_line_arr = np.empty(max_rows, dtype=np.int64)
    qid_arr = np.empty(max_rows, dtype=np.int64)
    indices_arr = np.empty(max_nnz + 1, dtype=np.int32)
    data_arr = np.empty(max_nnz + 1, dtype=np.float32 if float32 else np.float64)
    cdef double[::1] labels = labels_arr
    cdef int64_t[::1] indptr = indptr_arr
    cdef int64_t[::1] row_line = row_line_arr
    cdef int64_t[::1] qid = qid_arr
    cdef int32_t[::1] indices = indices_arr
    cdef float[::1] data32
    cdef double[::1] data64
    cdef float* data32_ptr = NULL
    cdef double* data64_ptr = NULL
    if float32:
        data32 = data_arr
        data32_ptr = &data32[0]
    else:
        data64 = data_arr
        data64_ptr = &data64[0]
    cdef Parsed parsed
    memset(&parsed, 0, sizeof(parsed))
    parsed.line = first_line
    with nogil:
        parse_lines(start, stop, query_id, &labels[0], &indptr[0], &row_line[0],
                    &qid[0], &indices[0], data32_ptr, data64_ptr, &parsed)
    if parsed.error != NO_ERROR:
        raise ValueError(parsed.line, error_message(&parsed, stop))
    cdef Py_ssize_t n_rows = parsed.n_rows, nnz = parsed.nnz
    return (labels_arr[:n_rows], data_arr[:nnz], indices_arr[:nnz],
            indptr_arr[:n_rows + 1], qid_arr[:n_rows if query_id else 0],
            row_line_arr[:n_rows], parsed.line - first_line, parsed.min_index,
            parsed.max_index)


cdef str _token(const char* p, const char* stop):
    """The whitespace-delimited token at p, for error messages."""
    cdef const char* q = p
    while q < stop and not (is_space(q[0]) or q[0] == b'\n') and q - p < 60:
        q += 1
    return (<bytes>p[:q - p]).decode("utf-8", "replace")


# ----------------------------------------------------------------------
# ROC AUC of a stream in bounded memory
#
# A score is put in one of 2**AUC_KEY_BITS bins by the leading bits of its
# float32 bit pattern, mapped so that the order of the keys is the order
# of the scores (flip every bit of a negative number, the sign bit of a
# positive one): the bins are a fixed logarithmic grid, 2**11 per octave.
# Two Fenwick trees (binary indexed trees) count the positive and the
# negative rows per bin; a row inserted in a stream's order is compared
# with every row before it in O(AUC_KEY_BITS) steps, so the pair counts
# are exact for the binned scores, and pairs in one bin count one half
# (as tied scores do in the exact AUC).

cdef enum:
    AUC_KEY_BITS = 20
    AUC_BINS = 1 << AUC_KEY_BITS

AUC_N_BINS = AUC_BINS  # for Python: the trees have AUC_N_BINS + 1 counts


cdef inline Py_ssize_t score_key(double score) noexcept nogil:
    cdef float f = <float>score + <float>0.0  # -0.0 + 0.0 is +0.0
    cdef uint32_t bits
    memcpy(&bits, &f, 4)
    if bits >> 31:
        bits = ~bits
    else:
        bits = bits | 0x80000000u
    return bits >> (32 - AUC_KEY_BITS)


cdef inline int64_t count_below(const int64_t* tree, Py_ssize_t key) noexcept nogil:
    """Rows whose key is < key."""
    cdef int64_t total = 0
    cdef Py_ssize_t i = key
    while i > 0:
        total += tree[i]
        i &= i - 1
    return total


cdef inline void insert_key(int64_t* tree, Py_ssize_t key) noexcept nogil:
    cdef Py_ssize_t i = key + 1
    while i <= AUC_BINS:
        tree[i] += 1
        i += i & -i


def auc_insert(int64_t[::1] tree_pos not None, int64_t[::1] tree_neg not None,
               const double[::1] scores not None, const uint8_t[::1] positive not None,
               int64_t n_pos):
    """Insert a chunk of scored rows into the two trees (each of
    ``AUC_N_BINS + 1`` counts), in order.

    Returns ``(ordered2, ties)``: twice the number of (positive, negative)
    pairs this chunk adds where the positive's bin is above the negative's,
    plus the pairs in one bin (``ties``, also returned alone).  ``n_pos`` is
    the number of positive rows inserted before this chunk.
    """
    if tree_pos.shape[0] != AUC_BINS + 1 or tree_neg.shape[0] != AUC_BINS + 1:
        raise ValueError(f"the trees must have {AUC_BINS + 1} elements")
    if scores.shape[0] != positive.shape[0]:
        raise ValueError("scores and positive differ in length")
    cdef Py_ssize_t i, key
    cdef int64_t below, at_or_below, ordered2 = 0, ties = 0
    cdef int64_t* pos = &tree_pos[0]
    cdef int64_t* neg = &tree_neg[0]
    with nogil:
        for i in range(scores.shape[0]):
            key = score_key(scores[i])
            if positive[i]:
                below = count_below(neg, key)
                at_or_below = count_below(neg, key + 1)
                ordered2 += 2 * below + (at_or_below - below)
                insert_key(pos, key)
                n_pos += 1
            else:
                below = count_below(pos, key)
                at_or_below = count_below(pos, key + 1)
                ordered2 += 2 * (n_pos - at_or_below) + (at_or_below - below)
                insert_key(neg, key)
            ties += at_or_below - below
    return ordered2, ties
