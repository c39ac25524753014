"""Learn from files bigger than memory: chunked readers and a streaming driver.

Readers (each is an iterable of chunks; one ``for`` loop is one pass over
its files):

* :class:`SvmlightStream`: svmlight / LIBSVM files, plain or gzip, bz2, xz
  compressed, parsed by compiled code into CSR chunks of ``chunk_size`` rows
  with a fixed ``n_features``.  Yields ``(X, y)`` (``(X, y, qid)`` with
  ``query_id=True``).
* :class:`JsonLinesStream` and :class:`CsvStream`: a text field / column and
  a label, turned into CSR by a stateless vectorizer (``HashingVectorizer``
  by default); :class:`CsvStream` also takes tabular rows through a fitted
  ``ColumnTransformer``.

Memory is bounded by one read block plus one chunk: a file is never held
whole.  Several files are given as a list or a glob; ``shuffle=True`` permutes
the files and the rows within every chunk, from ``random_state`` and the pass
number only, so pass ``p`` is the same sequence of chunks whenever it is
read (what an exact resume needs).  ``passes_`` counts the passes begun.

The driver is :func:`fit_stream` (progressive validation, held-out
evaluation, checkpoints, exact resume, early stopping, a live progress
table on stderr).
"""
import bz2
import contextlib
import csv
import glob
import gzip
import io
import json
import lzma
import os
import queue
import sys
import tempfile
import threading
import time
import zlib
from collections import deque

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier

from ._stream_fast import AUC_N_BINS, auc_insert, parse_block

# Bytes handed to the parser at a time: large enough that the per-block
# Python overhead is nothing, small enough to be a rounding error in memory.
BLOCK_SIZE = 1 << 22

_MAGIC = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", bz2.BZ2File),
    (b"\xfd7zXZ\x00", lzma.LZMAFile),
)


def expand_files(files):
    """Expand a path, a glob or a list of them into the list of paths.

    Parameters
    ----------
    files : str, path-like or list of them
        Paths or glob patterns.

    Returns
    -------
    paths : list of str
        The paths in the order given, each glob replaced by its matches in
        sorted order.

    Raises
    ------
    FileNotFoundError
        If a path does not exist or a glob matches nothing.
    ValueError
        If no path is given.
    """
    if isinstance(files, (str, bytes, os.PathLike)):
        files = [files]
    paths = []
    for f in files:
        f = os.fspath(f)
        if glob.has_magic(f):
            matched = sorted(glob.glob(f))
            if not matched:
                raise FileNotFoundError(f"No file matches {f!r}.")
            paths.extend(matched)
        else:
            if not os.path.isfile(f):
                raise FileNotFoundError(f"No such file: {f!r}.")
            paths.append(f)
    if not paths:
        raise ValueError("No input files given.")
    return paths


class Chunk(tuple):
    """A chunk of rows, as the readers yield it, with where its rows come from.

    It is the tuple ``(X, y)`` (``(X, y, qid)`` with ``query_id=True``), so
    ``X, y = chunk`` works; ``path`` and ``lines`` say where each row was
    read, so that a problem found later in a row (a label outside
    ``classes``) names its file and line.

    Parameters
    ----------
    parts : sequence
        ``(X, y)`` or ``(X, y, qid)``.
    path : str
        The file the rows were read from.
    lines : ndarray of shape (n_rows,)
        The 1-based line of every row in that file.
    """

    def __new__(cls, parts, path, lines):
        chunk = super().__new__(cls, parts)
        chunk.path = path
        chunk.lines = lines
        return chunk

    def __reduce__(self):
        return Chunk, (tuple(self), self.path, self.lines)

    def where(self, row):
        """Where row ``row`` of the chunk was read.

        Parameters
        ----------
        row : int
            Index of the row in the chunk.

        Returns
        -------
        location : str
            ``"<path>, line <n>"``.
        """
        return f"{self.path}, line {self.lines[row]}"


class _Source:
    """One file opened for reading whole-line blocks of bytes, decompressed
    by its magic number (not its name); counts the raw bytes consumed and
    turns decompression failures into ValueError naming the file."""

    def __init__(self, path, block_size=BLOCK_SIZE):
        self.path = path
        self.block_size = block_size
        self.raw = open(path, "rb")
        magic = self.raw.read(6)
        self.raw.seek(0)
        self.file = self.raw
        for prefix, opener in _MAGIC:
            if magic.startswith(prefix):
                self.file = opener(self.raw)
                break

    def close(self):
        self.file.close()
        self.raw.close()

    def tell(self):
        """Raw (compressed) bytes read so far."""
        try:
            return self.raw.tell()
        except (ValueError, OSError):
            return 0

    def _read(self):
        try:
            return self.file.read(self.block_size)
        except (EOFError, OSError, lzma.LZMAError, zlib.error) as exc:
            raise ValueError(
                f"{self.path}: corrupt or truncated compressed file ({exc})."
            ) from None

    def blocks(self):
        """Yield ``(buf, end)``: ``buf[:end]`` is whole lines (the file's
        last line gets its newline); the rest is carried to the next."""
        tail = b""
        while True:
            data = self._read()
            if not data:
                if tail.strip():
                    buf = tail + b"\n"
                    yield buf, len(buf)
                return
            buf = tail + data if tail else data
            end = buf.rfind(b"\n") + 1
            if end == 0:  # a line longer than a block: keep reading
                tail = buf
                continue
            yield buf, end
            tail = buf[end:]


class _FileStream:
    """What the readers share: files, passes, shuffling, progress."""

    def __init__(self, files, chunk_size, shuffle, random_state):
        self.files = expand_files(files)
        if int(chunk_size) < 1:
            raise ValueError(f"chunk_size must be at least 1; got {chunk_size!r}.")
        self.chunk_size = int(chunk_size)
        self.shuffle = bool(shuffle)
        if random_state is None:
            # drawn once, so that every pass of this object is reproducible
            random_state = int(np.random.SeedSequence().entropy % (2**32))
        self.random_state = int(random_state)
        self.passes_ = 0
        self.total_bytes = sum(os.path.getsize(f) for f in self.files)
        self._done_bytes = 0
        self._source = None

    @property
    def bytes_read(self):
        """Raw bytes read in the current pass (for percentage and ETA)."""
        current = self._source.tell() if self._source is not None else 0
        return self._done_bytes + current

    def __iter__(self):
        self.passes_ += 1
        return self.iter_pass(self.passes_ - 1)

    def iter_pass(self, pass_index):
        """Iterate over the chunks of one pass.

        The chunks of a pass are a function of the files, the options and
        ``random_state`` only, so a pass can be read again identically.

        Parameters
        ----------
        pass_index : int
            Number of the pass (0-based); with ``shuffle=True`` it seeds the
            order of the files and of the rows within every chunk.

        Yields
        ------
        chunk : tuple
            ``(X, y)``, or ``(X, y, qid)`` for an ``SvmlightStream`` with
            ``query_id=True``; X is a CSR matrix.
        """
        rng = np.random.default_rng([self.random_state, pass_index])
        order = rng.permutation(len(self.files)) if self.shuffle else range(len(self.files))
        self._done_bytes = 0
        for i in order:
            path = self.files[i]
            source = _Source(path)
            self._source = source
            try:
                for chunk in self._file_chunks(source):
                    if self.shuffle:
                        perm = rng.permutation(chunk[0].shape[0])
                        chunk = Chunk([part[perm] for part in chunk], chunk.path,
                                      chunk.lines[perm])
                    yield chunk
            finally:
                source.close()
                self._source = None
            self._done_bytes += os.path.getsize(path)

    def _file_chunks(self, source):  # pragma: no cover
        raise NotImplementedError


class SvmlightStream(_FileStream):
    """Read svmlight / LIBSVM files in chunks of rows as CSR matrices.

    The files are parsed by compiled code one block of bytes at a time, so a
    file is never held whole in memory.  Errors: a malformed line (bad
    label, token, index or value, unsorted or repeated indices, a negative
    index) raises ``ValueError("<file>, line <n>: ...")``; a corrupt or
    truncated compressed file and a file without any data line raise
    ValueError naming the file.

    Parameters
    ----------
    files : str, path or list of them
        Paths or globs; each file is plain or gzip / bz2 / xz compressed
        (told by its first bytes).
    n_features : int
        Number of columns of every chunk.
    chunk_size : int, default=10000
        Rows per chunk (the last chunk of each file may be shorter).
    zero_based : bool or "auto", default="auto"
        Whether the indices of the file start at 0.  "auto" decides from the
        first lines that hold a feature: one-based unless an index 0 is
        there (scikit-learn's loader looks at the whole file, which a stream
        cannot); a later index 0 in a file taken as one-based is an error
        that says to pass ``zero_based=True``.
    query_id : bool, default=False
        Also yield the ``qid`` of every row (int64); rows must have one.
    dtype : float64 or float32, default=float64
        The dtype of ``X.data``; labels are float64.
    out_of_range : {"error", "drop", "hash"}, default="error"
        What a feature index ``>= n_features`` does: raise a ValueError
        naming the file and line, be dropped, or be folded in by
        ``index % n_features`` (values of colliding indices are summed).
    shuffle : bool, default=False
        Permute the file order and the rows within every chunk, per pass.
    random_state : int, default=None
        Seed of the shuffling; pass ``p`` depends on (random_state, p) only.

    Attributes
    ----------
    passes_ : int
        Number of passes begun.
    zero_based_ : bool or None
        The index base in use (None until "auto" has seen a feature).
    """

    def __init__(self, files, n_features, *, chunk_size=10000, zero_based="auto",
                 query_id=False, dtype=np.float64, out_of_range="error",
                 shuffle=False, random_state=None):
        super().__init__(files, chunk_size, shuffle, random_state)
        if int(n_features) < 1:
            raise ValueError(f"n_features must be at least 1; got {n_features!r}.")
        self.n_features = int(n_features)
        if zero_based not in (True, False, "auto"):
            raise ValueError(f"zero_based must be True, False or 'auto'; got {zero_based!r}.")
        self.zero_based = zero_based
        self.query_id = bool(query_id)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64; got {dtype!r}.")
        if out_of_range not in ("error", "drop", "hash"):
            raise ValueError(
                f"out_of_range must be 'error', 'drop' or 'hash'; got {out_of_range!r}.")
        self.out_of_range = out_of_range
        self.zero_based_ = None if zero_based == "auto" else bool(zero_based)

    # ------------------------------------------------------------------
    def _fix_indices(self, path, data, indices, indptr, row_line, lo, hi):
        """Apply the index base and ``out_of_range`` to one block; returns
        (data, indices, indptr)."""
        if lo >= 0 and self.zero_based_ is None:
            self.zero_based_ = bool(lo == 0)
        if lo == 0 and self.zero_based_ is False:
            self._raise_at(path, indices == 0, indptr, row_line,
                           "feature index 0 in a file read as one-based "
                           "(pass zero_based=True)")
        if self.zero_based_ is False and lo > 0:
            indices -= 1
            hi -= 1
        if hi < self.n_features:
            return data, indices, indptr
        beyond = indices >= self.n_features
        if self.out_of_range == "error":
            first = int(indices[np.argmax(beyond)]) + (0 if self.zero_based_ else 1)
            self._raise_at(path, beyond, indptr, row_line,
                           f"feature index {first} is beyond n_features={self.n_features}")
        if self.out_of_range == "drop":
            kept = np.concatenate([[0], np.cumsum(~beyond)])
            return data[~beyond], indices[~beyond], kept[indptr]
        # hash: fold, then sort and sum the indices that now collide
        X = sp.csr_matrix((data, indices % self.n_features, indptr),
                          shape=(indptr.shape[0] - 1, self.n_features))
        X.sum_duplicates()
        return X.data, X.indices, X.indptr.astype(np.int64)

    @staticmethod
    def _raise_at(path, bad, indptr, row_line, message):
        entry = int(np.argmax(bad))
        row = int(np.searchsorted(indptr, entry, side="right")) - 1
        raise ValueError(f"{path}, line {row_line[row]}: {message}.")

    def _file_chunks(self, source):
        pieces = deque()  # parsed blocks with a cursor on their first unused row
        have = 0
        n_rows_file = 0
        blocks = self._blocks(source)
        exhausted = False
        while True:
            while have < self.chunk_size and not exhausted:
                piece = next(blocks, None)
                if piece is None:
                    exhausted = True
                else:
                    pieces.append([piece, 0])
                    have += piece[0].shape[0]
            if have == 0:
                break
            take = min(have, self.chunk_size)
            parts = []
            need = take
            while need:
                entry = pieces[0]
                piece, r0 = entry
                n = min(need, piece[0].shape[0] - r0)
                parts.append(_slice_rows(piece, r0, r0 + n))
                need -= n
                if r0 + n == piece[0].shape[0]:
                    pieces.popleft()
                else:
                    entry[1] = r0 + n
            have -= take
            n_rows_file += take
            yield self._assemble(parts, source.path)
        if n_rows_file == 0:
            raise ValueError(f"{source.path}: empty file (no data line).")

    def _blocks(self, source):
        line = 1
        for buf, end in source.blocks():
            try:
                (labels, data, indices, indptr, qid, row_line, n_lines,
                 lo, hi) = parse_block(buf, end, self.query_id,
                                       self.dtype == np.float32, line)
            except ValueError as exc:
                if len(exc.args) == 2:
                    raise ValueError(
                        f"{source.path}, line {exc.args[0]}: {exc.args[1]}.") from None
                raise
            line += n_lines
            if labels.shape[0] == 0:
                continue
            data, indices, indptr = self._fix_indices(
                source.path, data, indices, indptr, row_line, lo, hi)
            yield labels, data, indices, indptr, qid, row_line

    def _assemble(self, parts, path):
        """One CSR chunk (int32 indices) from row slices of parsed blocks."""
        if len(parts) == 1:
            labels, data, indices, indptr, qid, row_line = parts[0]
        else:
            labels = np.concatenate([p[0] for p in parts])
            data = np.concatenate([p[1] for p in parts])
            indices = np.concatenate([p[2] for p in parts])
            offsets = np.cumsum([0] + [p[1].shape[0] for p in parts])
            indptr = np.concatenate(
                [[0]] + [p[3][1:] + off for p, off in zip(parts, offsets)])
            qid = np.concatenate([p[4] for p in parts])
            row_line = np.concatenate([p[5] for p in parts])
        index_dtype = np.int32 if data.shape[0] < 2**31 else np.int64
        X = sp.csr_matrix(
            (data, indices.astype(index_dtype, copy=False),
             indptr.astype(index_dtype, copy=False)),
            shape=(labels.shape[0], self.n_features))
        return Chunk((X, labels, qid) if self.query_id else (X, labels), path, row_line)


def _slice_rows(piece, r0, r1):
    """Rows r0:r1 of a parsed block, with indptr starting at 0."""
    labels, data, indices, indptr, qid, row_line = piece
    a, b = indptr[r0], indptr[r1]
    return (labels[r0:r1], data[a:b], indices[a:b], indptr[r0:r1 + 1] - a,
            qid[r0:r1] if qid.shape[0] else qid, row_line[r0:r1])


# ----------------------------------------------------------------------
# text and tabular readers

def _default_vectorizer():
    from sklearn.feature_extraction.text import HashingVectorizer
    return HashingVectorizer(n_features=2**20)


def _as_labels(values):
    """Numbers when every label is one (CSV gives strings), else as is."""
    labels = np.asarray(values)
    if labels.dtype.kind in "USO":
        try:
            return labels.astype(np.float64)
        except (TypeError, ValueError):
            return labels
    return labels


class _LineStream(_FileStream):
    """Chunks of ``chunk_size`` non-blank lines of text files, with the file
    line number of the first one."""

    def _line_chunks(self, source, header=False):
        """With ``header``, the first non-blank line comes alone, first."""
        lines, line = [], 1
        for buf, end in source.blocks():
            for raw in buf[:end].split(b"\n")[:-1]:
                if raw.strip():
                    lines.append((line, raw))
                    if len(lines) == self.chunk_size or header:
                        header = False
                        yield lines
                        lines = []
                line += 1
        if lines:
            yield lines


class JsonLinesStream(_LineStream):
    """Read JSON-lines files (one object per line) in chunks of rows.

    The text of ``text_field`` is turned into CSR by ``vectorizer``.  Yields
    ``(X, y)`` with y the ``label_field`` values (numbers stay numbers).
    Compression, globs, shuffling and passes as :class:`SvmlightStream`.  A
    line that is not a JSON object with both fields raises
    ``ValueError("<file>, line <n>: ...")``.

    Parameters
    ----------
    files : str, path-like or list of them
        Paths or globs; each file is plain or gzip / bz2 / xz compressed.
    text_field : str, default="text"
        Key of the text of every object.
    label_field : str, default="label"
        Key of the label of every object.
    vectorizer : transformer or None, default=None
        Stateless vectorizer with ``transform`` (e.g.
        :class:`~sklearn.feature_extraction.text.HashingVectorizer`), so that
        every chunk lands in the same columns; None:
        ``HashingVectorizer(n_features=2**20)``.
    chunk_size : int, default=1000
        Rows per chunk (the last chunk of each file may be shorter).
    shuffle : bool, default=False
        Permute the file order and the rows within every chunk, per pass.
    random_state : int, default=None
        Seed of the shuffling; pass ``p`` depends on (random_state, p) only.

    Attributes
    ----------
    passes_ : int
        Number of passes begun.
    n_features : int or None
        The vectorizer's ``n_features``, if it has one.
    """

    def __init__(self, files, *, text_field="text", label_field="label",
                 vectorizer=None, chunk_size=1000, shuffle=False, random_state=None):
        super().__init__(files, chunk_size, shuffle, random_state)
        self.text_field = text_field
        self.label_field = label_field
        self.vectorizer = _default_vectorizer() if vectorizer is None else vectorizer
        self.n_features = getattr(self.vectorizer, "n_features", None)

    def _file_chunks(self, source):
        n = 0
        for lines in self._line_chunks(source):
            try:  # one C call per chunk; line by line only to find an error
                records = json.loads(b"[" + b",".join(raw for _, raw in lines) + b"]")
            except ValueError:
                records = None
            if records is None or len(records) != len(lines):
                for line, raw in lines:
                    try:
                        json.loads(raw)
                    except ValueError as exc:
                        raise ValueError(f"{source.path}, line {line}: invalid JSON ({exc}).") from None
                raise ValueError(f"{source.path}: invalid JSON-lines content.")
            try:
                texts = [r[self.text_field] for r in records]
                labels = [r[self.label_field] for r in records]
            except (KeyError, TypeError):
                for (line, _), r in zip(lines, records):
                    if not (isinstance(r, dict) and self.text_field in r and self.label_field in r):
                        raise ValueError(
                            f"{source.path}, line {line}: not an object with fields "
                            f"{self.text_field!r} and {self.label_field!r}.") from None
                raise
            n += len(records)
            yield Chunk((sp.csr_matrix(self.vectorizer.transform(texts)), _as_labels(labels)),
                        source.path, np.array([line for line, _ in lines]))
        if n == 0:
            raise ValueError(f"{source.path}: empty file (no data line).")


class CsvStream(_LineStream):
    """CSV files with a header line, read in chunks of rows.

    With ``text_column``, that column is turned into CSR by ``vectorizer``
    (as :class:`JsonLinesStream`); otherwise every column but the label goes
    through ``transformer``, a fitted ``ColumnTransformer`` (or any fitted
    transformer): a pandas DataFrame with the header's names when pandas is
    installed, else a 2-D array (float when every value is a number).  With
    ``transformer="passthrough"`` those columns are the features as they
    are (numbers; anything else is an error naming the file and line).
    Yields ``(X, y)``; y is numeric when every label is a number.

    Parameters
    ----------
    files : str, path-like or list of them
        Paths or globs; each file is plain or gzip / bz2 / xz compressed.
    label_column : str
        Name (in the header line) of the label column.
    text_column : str or None, default=None
        Name of a text column to vectorize; None for tabular rows.
    vectorizer : transformer or None, default=None
        Stateless vectorizer of the text column; None:
        ``HashingVectorizer(n_features=2**20)``.
    transformer : transformer, "passthrough" or None, default=None
        Fitted transformer of the other columns (tabular rows), or
        "passthrough" to take them as numbers.
    delimiter : str, default=","
        Field separator.
    chunk_size : int, default=1000
        Rows per chunk (the last chunk of each file may be shorter).
    shuffle : bool, default=False
        Permute the file order and the rows within every chunk, per pass.
    random_state : int, default=None
        Seed of the shuffling; pass ``p`` depends on (random_state, p) only.

    Attributes
    ----------
    passes_ : int
        Number of passes begun.
    """

    def __init__(self, files, *, label_column, text_column=None, vectorizer=None,
                 transformer=None, delimiter=",", chunk_size=1000, shuffle=False,
                 random_state=None):
        super().__init__(files, chunk_size, shuffle, random_state)
        if (text_column is None) == (transformer is None) and vectorizer is None:
            raise ValueError("Give either text_column (with an optional vectorizer) "
                             "or a fitted transformer.")
        self.label_column = label_column
        self.text_column = text_column
        self.vectorizer = (_default_vectorizer() if vectorizer is None and text_column
                           else vectorizer)
        self.transformer = transformer
        self.delimiter = delimiter
        self.n_features = getattr(self.vectorizer, "n_features", None)

    def _file_chunks(self, source):
        header = None
        n = 0
        for lines in self._line_chunks(source, header=True):
            text = b"\n".join(raw for _, raw in lines).decode("utf-8")
            rows = list(csv.reader(io.StringIO(text), delimiter=self.delimiter))
            if header is None:
                header, rows, lines = rows[0], rows[1:], lines[1:]
                for name in (self.label_column, self.text_column):
                    if name is not None and name not in header:
                        raise ValueError(f"{source.path}: no column {name!r} in the header "
                                         f"{header!r}.")
                label_at = header.index(self.label_column)
                if not rows:
                    continue
            for (line, _), row in zip(lines, rows):
                if len(row) != len(header):
                    raise ValueError(f"{source.path}, line {line}: {len(row)} fields, "
                                     f"the header has {len(header)}.")
            labels = _as_labels([row[label_at] for row in rows])
            if self.text_column is not None:
                at = header.index(self.text_column)
                X = self.vectorizer.transform([row[at] for row in rows])
            elif isinstance(self.transformer, str) and self.transformer == "passthrough":
                X = self._numbers(source.path, lines, rows, label_at)
            else:
                X = self.transformer.transform(self._table(header, rows, label_at))
            n += len(rows)
            yield Chunk((sp.csr_matrix(X), labels), source.path,
                        np.array([line for line, _ in lines]))
        if n == 0:
            raise ValueError(f"{source.path}: empty file (no data line).")

    @staticmethod
    def _numbers(path, lines, rows, label_at):
        """The columns but the label as a float array."""
        try:
            return np.array([[v for j, v in enumerate(row) if j != label_at]
                             for row in rows], dtype=np.float64)
        except ValueError:
            for (line, _), row in zip(lines, rows):
                for j, v in enumerate(row):
                    if j != label_at:
                        try:
                            float(v)
                        except ValueError:
                            raise ValueError(f"{path}, line {line}: {v!r} is not a "
                                             "number (tabular CSV)") from None
            raise

    @staticmethod
    def _table(header, rows, label_at):
        names = [h for j, h in enumerate(header) if j != label_at]
        cells = [[v for j, v in enumerate(row) if j != label_at] for row in rows]
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            frame = pd.DataFrame(cells, columns=names)
            for name in names:
                try:
                    frame[name] = frame[name].astype(np.float64)
                except (TypeError, ValueError):
                    pass
            return frame
        try:
            return np.array(cells, dtype=np.float64)
        except ValueError:
            return np.array(cells, dtype=object)


# ----------------------------------------------------------------------
# metrics over a stream

class StreamingAUC:
    """ROC AUC of every row scored so far, in bounded memory (16 MB).

    The scores are binned on a fixed logarithmic grid of 2**20 bins (the
    leading 20 bits of their float32 representation: 2048 bins per octave,
    relative width 0.05%) and counted per class in two Fenwick trees, so
    each row costs O(20) and the memory never grows with the stream.  The
    AUC is exact for the binned scores; pairs in one bin count one half, as
    tied scores do, so it differs from the exact AUC by at most
    ``max_error`` (half the share of (positive, negative) pairs that share a
    bin), which is reported with it.
    """

    def __init__(self):
        self.tree_pos = np.zeros(AUC_N_BINS + 1, dtype=np.int64)
        self.tree_neg = np.zeros(AUC_N_BINS + 1, dtype=np.int64)
        self.n_pos = self.n_neg = 0
        self.ordered2 = 0  # 2 * (ordered pairs) + (pairs in one bin)
        self.ties = 0

    def update(self, scores, positive):
        """Add scored rows, in the order of the stream.

        Parameters
        ----------
        scores : ndarray of shape (n_rows,)
            Decision scores of the rows.
        positive : ndarray of shape (n_rows,)
            Whether each row is of the positive class.
        """
        positive = np.ascontiguousarray(positive, dtype=np.uint8)
        ordered2, ties = auc_insert(self.tree_pos, self.tree_neg,
                                    np.ascontiguousarray(scores, dtype=np.float64),
                                    positive, self.n_pos)
        self.ordered2 += ordered2
        self.ties += ties
        new_pos = int(np.count_nonzero(positive))
        self.n_pos += new_pos
        self.n_neg += positive.shape[0] - new_pos

    @property
    def value(self):
        """The ROC AUC of the rows added so far (NaN without both classes)."""
        pairs = self.n_pos * self.n_neg
        return self.ordered2 / (2 * pairs) if pairs else np.nan

    @property
    def max_error(self):
        """The bound of the difference between ``value`` and the exact AUC."""
        pairs = self.n_pos * self.n_neg
        return self.ties / (2 * pairs) if pairs else np.nan

    def __getstate__(self):
        # checkpoints: the trees are mostly zeros; keep their non-zeros
        state = dict(self.__dict__)
        for name in ("tree_pos", "tree_neg"):
            at = np.flatnonzero(state[name])
            state[name] = (at, state[name][at])
        return state

    def __setstate__(self, state):
        for name in ("tree_pos", "tree_neg"):
            at, values = state[name]
            tree = np.zeros(AUC_N_BINS + 1, dtype=np.int64)
            tree[at] = values
            state[name] = tree
        self.__dict__.update(state)


def _chunk_outputs(estimator, X):
    """``(decision_function, predict_proba or None, predict)`` of one chunk;
    the package's classifiers derive the last two from the scores, so X is
    read once."""
    scores = estimator.decision_function(X)
    from_scores = getattr(estimator, "_outputs_from_scores", None)
    if from_scores is not None:
        proba, pred = from_scores(scores)
    else:
        proba = estimator.predict_proba(X) if hasattr(estimator, "predict_proba") else None
        pred = estimator.predict(X)  # its own rule (a threshold may not be 0)
    return scores, proba, pred


class _Scorer:
    """Sums from which the progressive and held-out metrics are exact over
    any number of chunks: loss, accuracy (classifiers) or R^2 (regressors);
    for binary classifiers the ROC AUC of all rows so far
    (:class:`StreamingAUC`)."""

    def __init__(self, estimator, classes):
        self.classifier = is_classifier(estimator)
        self.classes = classes
        self.n = 0
        self.loss_sum = 0.0
        self.correct = 0  # classifiers
        self.sum_y = self.sum_y2 = 0.0  # regressors (R^2 from sums)
        self.auc = (StreamingAUC() if self.classifier and classes is not None
                    and len(classes) == 2 else None)

    def loss_name(self, estimator):
        if not self.classifier:
            return "squared_error"
        return "log_loss" if hasattr(estimator, "predict_proba") else "hinge"

    def update(self, estimator, X, y):
        """Score one chunk; returns (chunk loss, chunk score)."""
        n = y.shape[0]
        if self.classifier:
            scores, proba, pred = _chunk_outputs(estimator, X)
            classes = self.classes
            if proba is not None:
                y_index = np.searchsorted(classes, y)
                loss = -np.log(np.clip(proba[np.arange(n), y_index], 1e-15, 1.0))
            elif scores.ndim == 1:
                margin = np.where(y == classes[1], scores, -scores)
                loss = np.maximum(0.0, 1.0 - margin)
            else:  # Crammer-Singer style multiclass hinge, as sklearn's hinge_loss
                y_index = np.searchsorted(classes, y)
                true = scores[np.arange(n), y_index]
                others = scores.copy()
                others[np.arange(n), y_index] = -np.inf
                loss = np.maximum(0.0, 1.0 - true + others.max(axis=1))
            correct = int(np.count_nonzero(pred == y))
            self.correct += correct
            if self.auc is not None:
                self.auc.update(scores, y == classes[1])
            chunk_loss, chunk_score = loss.sum(), correct / n
        else:
            pred = estimator.predict(X)
            sse = float(np.sum((y - pred) ** 2))
            self.sum_y += float(y.sum())
            self.sum_y2 += float(np.dot(y, y))
            chunk_loss = sse
            sst = float(np.sum((y - y.mean()) ** 2))
            chunk_score = 1.0 - sse / sst if sst > 0 else np.nan
        self.n += n
        self.loss_sum += float(chunk_loss)
        return float(chunk_loss) / n, chunk_score

    @property
    def loss(self):
        return self.loss_sum / self.n if self.n else np.nan

    @property
    def score(self):
        if not self.n:
            return np.nan
        if self.classifier:
            return self.correct / self.n
        sst = self.sum_y2 - self.sum_y**2 / self.n
        return 1.0 - self.loss_sum / sst if sst > 0 else np.nan

    @property
    def roc_auc(self):
        return self.auc.value if self.auc is not None else np.nan


def _check_labels(chunk, classes, where):
    """Refuse a chunk with a label outside ``classes``, naming the file and
    line of the first such row when the chunk knows them, else ``where``."""
    y = chunk[1]
    known = np.isin(y, classes)
    if not np.all(known):
        if isinstance(chunk, Chunk):
            where = chunk.where(int(np.argmin(known)))
        raise ValueError(
            f"{where}: y contains labels {np.unique(y[~known]).tolist()!r} that "
            f"are not in classes {classes.tolist()!r}.")


def _read_ahead(chunks, depth=2):
    """Iterate ``chunks`` in a reader thread, at most ``depth`` chunks ahead.

    The parser and the kernels run without the GIL, so reading (and
    decompressing) the next chunk overlaps with learning this one.  The
    order of the chunks is unchanged; an exception of the reader is raised
    here, at the chunk where it happened; leaving the loop early stops the
    reader and closes the files.
    """
    slots = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item):
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def read():
        iterator = iter(chunks)
        try:
            for chunk in iterator:
                if not put((chunk, None)):
                    break
            else:
                put((end, None))
        except BaseException as exc:  # handed to the consumer, raised there
            put((None, exc))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    reader = threading.Thread(target=read, name="sklearn_adaprox-reader", daemon=True)
    reader.start()
    try:
        while True:
            chunk, exc = slots.get()
            if exc is not None:
                raise exc
            if chunk is end:
                return
            yield chunk
    finally:
        stop.set()
        reader.join()


def evaluate_stream(estimator, stream):
    """Evaluate a fitted estimator over one pass of a stream.

    Computes the loss, the score (accuracy or R^2) and, for a binary
    classifier, the ROC AUC of :class:`StreamingAUC` (bounded memory).

    Parameters
    ----------
    estimator : estimator
        A fitted classifier or regressor.
    stream : iterable of chunks
        ``(X, y)`` or ``(X, y, qid)`` chunks, e.g. a reader of this module.

    Returns
    -------
    result : dict
        ``rows``, ``loss``, ``loss_name``, ``score``, ``score_name``
        ("accuracy" or "r2"), ``roc_auc`` (NaN unless binary with both
        classes present) and ``roc_auc_max_error`` (the bound of its
        difference to the exact AUC).
    """
    classes = getattr(estimator, "classes_", None)
    scorer = _Scorer(estimator, classes)
    for chunk in _read_ahead(stream):
        if scorer.classifier:
            _check_labels(chunk, classes, "evaluation stream")
        scorer.update(estimator, chunk[0], chunk[1])
    return {
        "rows": scorer.n, "loss": scorer.loss, "loss_name": scorer.loss_name(estimator),
        "score": scorer.score, "score_name": "accuracy" if scorer.classifier else "r2",
        "roc_auc": scorer.roc_auc,
        "roc_auc_max_error": scorer.auc.max_error if scorer.auc is not None else np.nan,
    }


# ----------------------------------------------------------------------
# checkpoints

def save_atomic(obj, path):
    """Write ``obj`` with ``joblib.dump`` so that no partial file is ever seen.

    The object is written to a temporary file in the same folder, synced,
    then renamed to ``path``: a reader (or a crash) never sees a partial
    file.

    Parameters
    ----------
    obj : object
        Any object joblib can pickle.
    path : str or path-like
        Destination file.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            joblib.dump(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ----------------------------------------------------------------------
# progress on stderr

class _Progress:
    """A table in the manner of Vowpal Wabbit's: a line after the first
    chunk, then whenever the row count has doubled, and a last line."""

    HEADER = (f"{'rows':>11} {'non-zeros':>12} {'rows/s':>9} {'avg loss':>10} "
              f"{'since last':>10} {'avg AUC':>8} {'holdout':>10} {'elapsed':>9} "
              f"{'done':>6} {'ETA':>8}")

    def __init__(self, stream, n_passes, file=None):
        self.file = file if file is not None else sys.stderr
        self.stream = stream
        self.n_passes = n_passes
        self.next_report = 1
        self.last_loss_sum = 0.0
        self.last_n = 0
        self.printed_header = False

    def maybe_report(self, state, force=False):
        if state["rows"] < self.next_report and not force:
            return
        self.next_report = 2 * state["rows"]  # doubling from the first line
        if not self.printed_header:
            print(self.HEADER, file=self.file)
            self.printed_header = True
        scorer = state["scorer"]
        since_n = scorer.n - self.last_n
        since = (scorer.loss_sum - self.last_loss_sum) / since_n if since_n else np.nan
        self.last_n, self.last_loss_sum = scorer.n, scorer.loss_sum
        elapsed = state["elapsed"]
        total = getattr(self.stream, "total_bytes", 0) * self.n_passes
        done = eta = ""
        if total:
            fraction = (state["pass"] * self.stream.total_bytes + self.stream.bytes_read) / total
            fraction = min(max(fraction, 0.0), 1.0)
            done = f"{100 * fraction:5.1f}%"
            if 0 < fraction:
                eta = _duration(elapsed * (1 - fraction) / fraction)
        rate = state["rows"] / elapsed if elapsed > 0 else np.nan
        print(f"{state['rows']:>11d} {state['nnz']:>12d} {rate:>9.0f} "
              f"{_num(scorer.loss):>10} {_num(since):>10} {_num(scorer.roc_auc, 4):>8} "
              f"{_num(state['holdout']):>10} "
              f"{_duration(elapsed):>9} {done:>6} {eta:>8}", file=self.file, flush=True)


def _num(x, digits=6):
    return "" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


# ----------------------------------------------------------------------
# the driver

_HISTORY_KEYS = ("rows", "passes", "elapsed", "chunk_loss", "progressive_loss",
                 "progressive_score", "progressive_auc")
_HOLDOUT_KEYS = ("holdout_rows", "holdout_loss", "holdout_score", "holdout_auc")
# counting the non-zero weights is O(n_features): at doubling row counts only
_NONZERO_KEYS = ("nonzero_rows", "nonzero_weights")
CHECKPOINT_VERSION = 2  # 2: the progressive AUC over the whole stream


def fit_stream(estimator, stream, *, classes=None, n_passes=1, holdout=None,
               holdout_every=None, checkpoint=None, checkpoint_every=None,
               resume=False, early_stopping=False, n_iter_no_change=3, tol=1e-4,
               progressive=True, verbose=0):
    """Learn from a stream of chunks by ``partial_fit``, one chunk at a time.

    Every chunk is scored before it is learned (progressive validation), a
    held-out stream is evaluated at regular intervals, and checkpoints allow
    an exact resume after an interruption.

    Parameters
    ----------
    estimator : an estimator of this package (or any with ``partial_fit``)
        Learns from its current state (``partial_fit`` semantics): pass an
        unfitted estimator, or ``sklearn.base.clone`` one, for a fresh start.
    stream : iterable of ``(X, y)`` or ``(X, y, qid)`` chunks
        A reader of this module (or anything with ``iter_pass(p)``, else a
        re-iterable); one pass is one iteration over it.
    classes : array-like, default=None
        All labels of the stream (classifiers; required unless the
        estimator is already fitted).  A chunk with another label raises
        ValueError before anything is learned from it.
    n_passes : int, default=1
        Number of passes over the stream.
    holdout : stream, default=None
        Held-out chunks, evaluated every ``holdout_every`` rows (and at the
        end): loss, score (accuracy or R^2), ROC AUC for binary classifiers.
    holdout_every : int, default=None
        Rows between held-out evaluations (None: once per pass).
    checkpoint : path, default=None
        File that receives ``{"estimator", position, history, ...}`` every
        ``checkpoint_every`` rows and at the end, through a temporary file
        and a rename (never partial).
    checkpoint_every : int, default=None
        Rows between checkpoints (None: at the end of every pass).
    resume : bool, default=False
        Continue from ``checkpoint`` if it exists: the estimator takes the
        checkpoint's state and the stream is read from the position after
        it, so the result equals the uninterrupted run's (the stream must
        be the same files with the same options and ``random_state``).
    early_stopping : bool, default=False
        Stop when the held-out loss has not improved by ``tol`` for
        ``n_iter_no_change`` evaluations in a row (needs ``holdout``).
    n_iter_no_change : int, default=3
        Number of held-out evaluations without improvement that stop the
        stream when ``early_stopping``.
    tol : float, default=1e-4
        Improvement of the held-out loss that counts for early stopping.
    progressive : bool, default=True
        Score every chunk before learning it (progressive validation).  The
        first chunk of a fresh estimator is not scored (there is no model
        yet).  False saves one prediction per chunk.
    verbose : int, default=0
        >= 1: a live progress table on stderr (rows, input non-zeros,
        rows/s, average and since-last progressive loss at doubling row
        counts, progressive ROC AUC (binary), last held-out loss, elapsed, percentage and ETA of the
        bytes of the stream's files).  Never on stdout.

    Returns
    -------
    history : dict of 1-D arrays and a few scalars
        Per chunk: ``rows`` (rows learned so far), ``passes``, ``elapsed``
        (seconds), ``chunk_loss`` (this
        chunk, before learning it), ``progressive_loss`` and
        ``progressive_score`` and ``progressive_auc`` (binary classifiers,
        :class:`StreamingAUC`) over all scored rows so far.  Per held-out
        evaluation: ``holdout_rows``, ``holdout_loss``, ``holdout_score``,
        ``holdout_auc``.  ``nonzero_weights`` (of ``coef_``) at
        ``nonzero_rows``: after the first chunk, whenever the row count has
        doubled, and at the end (counting reads every weight, where a chunk
        costs what its rows cost).  Scalars: ``loss_name``, ``score_name``
        ("accuracy" or "r2"), ``stopped_early``,
        ``progressive_auc_max_error`` (the bound of the binned AUC's
        difference to the exact one).

    Notes
    -----
    The stream is read in a thread of its own, two chunks ahead of the
    learner: parsing and decompression overlap with learning, and the
    chunks and the model are those of a plain loop.
    """
    classifier = is_classifier(estimator)
    if classifier:
        if classes is None:
            if not hasattr(estimator, "classes_"):
                raise ValueError("classes must be given for a classifier that is not "
                                 "fitted yet.")
            classes = estimator.classes_
        classes = np.unique(np.asarray(classes))
    if int(n_passes) < 1:
        raise ValueError(f"n_passes must be at least 1; got {n_passes!r}.")
    if early_stopping and holdout is None:
        raise ValueError("early_stopping needs a holdout stream.")
    if resume and checkpoint is None:
        raise ValueError("resume needs a checkpoint path.")

    hist = {k: [] for k in _HISTORY_KEYS + _HOLDOUT_KEYS + _NONZERO_KEYS}
    state = {"pass": 0, "chunk": 0, "rows": 0, "nnz": 0, "holdout": None,
             "best": np.inf, "no_improvement": 0, "stopped_early": False,
             "next_holdout": holdout_every, "next_checkpoint": checkpoint_every,
             "elapsed_before": 0.0}
    scorer = _Scorer(estimator, classes)
    if resume and os.path.exists(checkpoint):
        saved = joblib.load(checkpoint)
        if saved.get("version") != CHECKPOINT_VERSION or \
                type(saved["estimator"]) is not type(estimator):
            raise ValueError(f"{checkpoint} is not a checkpoint of a "
                             f"{type(estimator).__name__} stream.")
        estimator.__dict__.update(saved["estimator"].__dict__)
        hist = saved["history"]
        state.update(saved["state"])
        scorer.__dict__.update(saved["scorer"])
    state["scorer"] = scorer

    progress = _Progress(stream, int(n_passes)) if verbose else None
    start = time.perf_counter()
    n_fitted = hasattr(estimator, "coef_")

    def elapsed():
        return state["elapsed_before"] + time.perf_counter() - start

    def evaluate_holdout():
        result = evaluate_stream(estimator, holdout)
        hist["holdout_rows"].append(state["rows"])
        hist["holdout_loss"].append(result["loss"])
        hist["holdout_score"].append(result["score"])
        hist["holdout_auc"].append(result["roc_auc"])
        state["holdout"] = result["loss"]
        if early_stopping:
            if result["loss"] < state["best"] - tol:
                state["no_improvement"] = 0
            else:
                state["no_improvement"] += 1
            state["best"] = min(state["best"], result["loss"])
            if state["no_improvement"] >= n_iter_no_change:
                state["stopped_early"] = True

    def save_checkpoint():
        saved_state = {k: v for k, v in state.items() if k != "scorer"}
        saved_state["elapsed_before"] = elapsed()
        save_atomic({"version": CHECKPOINT_VERSION, "estimator": estimator,
                     "state": saved_state, "history": hist,
                     "scorer": {k: v for k, v in scorer.__dict__.items()}},
                    checkpoint)

    def learn_chunk(chunk):
        nonlocal n_fitted
        X, y = chunk[0], chunk[1]
        if classifier:
            where = (f"pass {state['pass'] + 1}, rows {state['rows'] + 1}-"
                     f"{state['rows'] + y.shape[0]}")
            _check_labels(chunk, classes, where)
        chunk_loss = np.nan
        if progressive and n_fitted:
            chunk_loss, _ = scorer.update(estimator, X, y)
        if classifier:
            estimator.partial_fit(X, y, classes=classes)
        else:
            estimator.partial_fit(X, y)
        n_fitted = True
        state["rows"] += y.shape[0]
        state["nnz"] += X.nnz if sp.issparse(X) else int(np.count_nonzero(X))
        state["chunk"] += 1
        state["elapsed"] = elapsed()
        hist["rows"].append(state["rows"])
        hist["passes"].append(state["pass"] + 1)
        hist["elapsed"].append(state["elapsed"])
        hist["chunk_loss"].append(chunk_loss)
        hist["progressive_loss"].append(scorer.loss)
        hist["progressive_score"].append(scorer.score)
        hist["progressive_auc"].append(scorer.roc_auc)
        if holdout is not None and holdout_every and state["rows"] >= state["next_holdout"]:
            while state["next_holdout"] <= state["rows"]:
                state["next_holdout"] += holdout_every
            evaluate_holdout()
        if checkpoint is not None and checkpoint_every and \
                state["rows"] >= state["next_checkpoint"]:
            while state["next_checkpoint"] <= state["rows"]:
                state["next_checkpoint"] += checkpoint_every
            save_checkpoint()
        if state["rows"] >= 2 * (hist["nonzero_rows"] or [0])[-1]:
            count_nonzero_weights()
        if progress:
            progress.maybe_report(state)

    def count_nonzero_weights():
        hist["nonzero_rows"].append(state["rows"])
        hist["nonzero_weights"].append(int(np.count_nonzero(estimator.coef_)))

    for p in range(state["pass"], int(n_passes)):
        if state["stopped_early"]:
            break
        skip = state["chunk"] if p == state["pass"] else 0
        state["pass"], state["chunk"] = p, skip
        chunks = stream.iter_pass(p) if hasattr(stream, "iter_pass") else stream
        if hasattr(stream, "passes_"):
            stream.passes_ = p + 1
        with contextlib.closing(_read_ahead(chunks)) as chunks:
            for c, chunk in enumerate(chunks):
                if c >= skip:  # a resumed pass skips the chunks learned before
                    learn_chunk(chunk)
                if state["stopped_early"]:
                    break
        if not state["stopped_early"]:
            # a pass is complete
            state["pass"], state["chunk"] = p + 1, 0
            if holdout is not None and not holdout_every:
                evaluate_holdout()
            if checkpoint is not None and not checkpoint_every:
                save_checkpoint()
    if state["rows"] == 0:
        raise ValueError("The stream has no rows.")
    if holdout is not None and (not hist["holdout_rows"] or
                                hist["holdout_rows"][-1] != state["rows"]):
        evaluate_holdout()
    if hist["nonzero_rows"][-1] != state["rows"]:
        count_nonzero_weights()
    if checkpoint is not None:
        save_checkpoint()
    state["elapsed"] = elapsed()
    if progress:
        progress.maybe_report(state, force=True)

    history = {k: np.asarray(v, dtype=np.float64 if k not in ("rows", "passes",
                                                                "nonzero_weights",
                                                                "nonzero_rows",
                                                                "holdout_rows") else np.int64)
               for k, v in hist.items()}
    history["loss_name"] = scorer.loss_name(estimator)
    history["score_name"] = "accuracy" if classifier else "r2"
    history["stopped_early"] = state["stopped_early"]
    history["progressive_auc_max_error"] = (scorer.auc.max_error if scorer.auc is not None
                                            else np.nan)
    return history
