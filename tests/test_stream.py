"""Streaming readers and the streaming driver (sklearn_adaprox.stream)."""
import bz2
import gzip
import json
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from sklearn_adaprox.stream import CsvStream, JsonLinesStream, SvmlightStream

COMPRESSORS = {
    "plain": lambda b: b,
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def make_sparse(n_samples=300, n_features=40, density=0.15, seed=0):
    rng = np.random.RandomState(seed)
    X = sp.random(n_samples, n_features, density=density, format="csr", random_state=rng)
    X.data = np.round(rng.standard_normal(X.nnz), 6)
    y = np.where(rng.rand(n_samples) < 0.4, 1.0, -1.0)
    return X, y


def write_svmlight(path, X, y, zero_based=True, compress="plain", **kw):
    plain = path.with_suffix(".tmp")
    dump_svmlight_file(X, y, str(plain), zero_based=zero_based, **kw)
    path.write_bytes(COMPRESSORS[compress](plain.read_bytes()))
    plain.unlink()
    return path


def read_all(stream):
    chunks = list(stream)
    X = sp.vstack([c[0] for c in chunks], format="csr")
    return X, np.concatenate([c[1] for c in chunks]), chunks


@pytest.mark.parametrize("compress", list(COMPRESSORS))
@pytest.mark.parametrize("zero_based", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chunks_equal_load_svmlight_file(tmp_path, compress, zero_based, dtype):
    X, y = make_sparse()
    path = write_svmlight(tmp_path / f"d.{compress}", X, y, zero_based, compress)
    X_ref, y_ref = load_svmlight_file(str(tmp_path / f"d.{compress}") if compress == "plain"
                                      else _decompressed(path, tmp_path),
                                      n_features=50, zero_based=zero_based, dtype=dtype)
    stream = SvmlightStream(path, 50, chunk_size=37, zero_based=zero_based, dtype=dtype)
    X_got, y_got, chunks = read_all(stream)
    assert [c[0].shape[0] for c in chunks[:-1]] == [37] * (len(chunks) - 1)
    assert all(c[0].shape[1] == 50 for c in chunks)
    assert X_got.dtype == dtype and y_got.dtype == np.float64
    assert np.array_equal(y_got, y_ref)
    assert np.array_equal(X_got.indptr, X_ref.indptr)
    assert np.array_equal(X_got.indices, X_ref.indices)
    assert np.array_equal(X_got.data, X_ref.data)  # same rounding of every value


def _decompressed(path, tmp_path):
    data = path.read_bytes()
    for magic, open_ in ((b"\x1f\x8b", gzip.decompress), (b"BZh", bz2.decompress),
                         (b"\xfd7zXZ", lzma.decompress)):
        if data.startswith(magic):
            data = open_(data)
    out = tmp_path / "ref.svm"
    out.write_bytes(data)
    return str(out)


def test_auto_base_query_id_comments(tmp_path):
    X, y = make_sparse(50, 10)
    X[0, 0] = 2.5  # an index 0 in the first line: "auto" means zero-based
    qid = np.repeat(np.arange(10), 5)
    path = write_svmlight(tmp_path / "q.svm", X, y, True, query_id=qid, comment="made here")
    text = path.read_text().splitlines()
    text.insert(5, "")
    text.insert(9, "# a comment line")
    text[12] += "  # trailing comment"
    path.write_text("\n".join(text))  # no final newline either
    X_ref, y_ref, q_ref = load_svmlight_file(str(path), n_features=10, query_id=True)
    stream = SvmlightStream(path, 10, chunk_size=8, query_id=True)
    chunks = list(stream)
    assert stream.zero_based_ is True
    assert (sp.vstack([c[0] for c in chunks]) != X_ref).nnz == 0
    assert np.array_equal(np.concatenate([c[2] for c in chunks]), q_ref)
    assert np.array_equal(np.concatenate([c[1] for c in chunks]), y_ref)


@pytest.mark.parametrize("line, message", [
    ("1 3:1 x:2", "line 2: invalid feature 'x:2'"),
    ("1 -3:1", "line 2: negative feature index"),
    ("abc 3:1", "line 2: invalid label 'abc'"),
    ("1 3:1 3:2", "line 2: feature indices must be sorted and unique"),
    ("1 3:", "line 2: missing value"),
    ("1 3:1e", "line 2: invalid value"),
    ("1 99999999999:1", "line 2: feature index too large"),
    ("1 20:1", "line 2: feature index 20 is beyond n_features=10"),
])
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.svm"
    path.write_text(f"-1 1:0.5 4:1\n{line}\n1 2:1\n")
    with pytest.raises(ValueError) as exc:
        list(SvmlightStream(path, 10, zero_based=True))
    assert str(exc.value).startswith(f"{path}, {message}")


def test_out_of_range_drop_and_hash(tmp_path):
    path = tmp_path / "wide.svm"
    path.write_text("1 2:1 12:2 15:3\n-1 3:4 22:5\n")
    X, _, _ = read_all(SvmlightStream(path, 10, zero_based=True, out_of_range="drop"))
    assert X.toarray().tolist()[0] == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert X.toarray()[1, 3] == 4 and X.nnz == 2
    X, _, _ = read_all(SvmlightStream(path, 10, zero_based=True, out_of_range="hash"))
    assert X.toarray()[0].tolist() == [0, 0, 3, 0, 0, 3, 0, 0, 0, 0]  # 12 -> 2, 15 -> 5
    assert X.toarray()[1].tolist() == [0, 0, 5, 4, 0, 0, 0, 0, 0, 0]
    assert X.has_sorted_indices


def test_one_based_file_with_a_late_zero_index(tmp_path):
    path = tmp_path / "late0.svm"
    path.write_text("1 1:1\n" * 5 + "1 0:1\n")
    with pytest.raises(ValueError, match=r"line 6: feature index 0 .*zero_based=True"):
        list(SvmlightStream(path, 10, zero_based=False))


def test_truncated_gzip_and_empty_file(tmp_path):
    X, y = make_sparse(2000, 40)
    path = write_svmlight(tmp_path / "t.gz", X, y, True, "gz")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="t.gz: corrupt or truncated compressed file"):
        list(SvmlightStream(path, 40))
    empty = tmp_path / "empty.svm"
    empty.write_text("\n# only a comment\n")
    with pytest.raises(ValueError, match="empty.svm: empty file"):
        list(SvmlightStream(empty, 40))


def test_files_glob_shuffle_and_passes(tmp_path):
    X, y = make_sparse(90, 20)
    for i in range(3):
        write_svmlight(tmp_path / f"part{i}.svm", X[30 * i:30 * i + 30], y[30 * i:30 * i + 30])
    stream = SvmlightStream(str(tmp_path / "part*.svm"), 20, chunk_size=10, zero_based=True)
    X_got, y_got, _ = read_all(stream)
    assert (X_got != X).nnz == 0 and np.array_equal(y_got, y)
    shuffled = SvmlightStream(str(tmp_path / "part*.svm"), 20, chunk_size=10,
                              zero_based=True, shuffle=True, random_state=3)
    first, second = read_all(shuffled)[1], read_all(shuffled)[1]
    assert shuffled.passes_ == 2
    # a permutation of the data, different per pass, reproducible per pass
    assert np.array_equal(np.sort(first), np.sort(y)) and not np.array_equal(first, second)
    again = [c[1] for c in shuffled.iter_pass(1)]
    assert np.array_equal(np.concatenate(again), second)
    assert shuffled.bytes_read == shuffled.total_bytes


def test_jsonlines_and_csv_text(tmp_path):
    from sklearn.feature_extraction.text import HashingVectorizer
    docs = [("spam offer now", "spam"), ("see you at lunch", "ham"),
            ("free prize, call", "spam"), ("ok", "ham"), ("meeting moved", "ham")]
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(
        json.dumps({"text": t, "label": lab}) for t, lab in docs).encode()))
    vec = HashingVectorizer(n_features=2**10)
    chunks = list(JsonLinesStream(path, vectorizer=vec, chunk_size=2))
    assert [c[0].shape[0] for c in chunks] == [2, 2, 1]
    X = sp.vstack([c[0] for c in chunks])
    assert (X != vec.transform([t for t, _ in docs])).nnz == 0
    assert np.concatenate([c[1] for c in chunks]).tolist() == [lab for _, lab in docs]

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": 1}\n{"text": "b", "label"\n')
    with pytest.raises(ValueError, match="bad.jsonl, line 2: invalid JSON"):
        list(JsonLinesStream(bad))
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"text": "a", "label": 1}\n{"body": "b", "label": 0}\n')
    with pytest.raises(ValueError, match="missing.jsonl, line 2: not an object"):
        list(JsonLinesStream(missing))

    csv_path = tmp_path / "t.csv"
    csv_path.write_text("id,body,y\n" + "\n".join(
        f'{i},"{t}",{int(lab == "spam")}' for i, (t, lab) in enumerate(docs)) + "\n")
    chunks = list(CsvStream(csv_path, text_column="body", label_column="y",
                            vectorizer=vec, chunk_size=3))
    assert (sp.vstack([c[0] for c in chunks]) != vec.transform([t for t, _ in docs])).nnz == 0
    assert np.concatenate([c[1] for c in chunks]).tolist() == [1, 0, 1, 0, 0]


def test_csv_tabular_through_column_transformer(tmp_path):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler
    rng = np.random.RandomState(0)
    table = rng.standard_normal((40, 3))
    y = (table[:, 0] > 0).astype(int)
    path = tmp_path / "tab.csv"
    path.write_text("a,b,label,c\n" + "\n".join(
        f"{r[0]:.17g},{r[1]:.17g},{lab},{r[2]:.17g}" for r, lab in zip(table, y)))
    ct = ColumnTransformer([("s", StandardScaler(), [0, 2])]).fit(table)
    chunks = list(CsvStream(path, label_column="label", transformer=ct, chunk_size=16))
    X = np.vstack([c[0].toarray() for c in chunks])
    assert np.allclose(X, ct.transform(table))
    assert np.concatenate([c[1] for c in chunks]).tolist() == y.tolist()
