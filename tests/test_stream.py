"""Streaming readers and the streaming driver (sklearn_adaprox.stream)."""
import bz2
import gzip
import json
import lzma
import os
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.metrics import roc_auc_score

import sklearn_adaprox
from sklearn_adaprox.stream import CsvStream, JsonLinesStream, StreamingAUC, SvmlightStream

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
    X = X.tolil()
    X[0, 0] = 2.5  # an index 0 in the first line: "auto" means zero-based
    X = X.tocsr()
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


def test_csv_tabular_passthrough(tmp_path):
    table = np.round(np.random.RandomState(1).standard_normal((30, 2)), 6)
    path = tmp_path / "tab.csv"
    path.write_text("x1,label,x2\n" + "\n".join(
        f"{r[0]},{int(r[0] > 0)},{r[1]}" for r in table) + "\n")
    chunks = list(CsvStream(path, label_column="label", transformer="passthrough",
                            chunk_size=7))
    assert np.array_equal(np.vstack([c[0].toarray() for c in chunks]), table)
    assert [c.lines[0] for c in chunks] == [2, 9, 16, 23, 30]  # 7 rows each
    path.write_text("x1,label,x2\n1,0,2\n3,1,three\n")
    with pytest.raises(ValueError, match=r"tab.csv, line 3: 'three' is not a number"):
        list(CsvStream(path, label_column="label", transformer="passthrough"))


@pytest.mark.parametrize("fmt", ["svmlight", "jsonl", "csv"])
def test_label_not_in_classes_names_file_and_line(tmp_path, fmt):
    labels = [1, -1, 1, 1, 7, -1]  # the 7 is on line 5 of the data
    if fmt == "svmlight":
        path = tmp_path / "d.svm"
        path.write_text("# a comment line\n" + "".join(f"{y} 1:1\n" for y in labels))
        stream, line = SvmlightStream(path, 3, chunk_size=4, shuffle=True, random_state=0), 6
    elif fmt == "jsonl":
        path = tmp_path / "d.jsonl"
        path.write_text("".join(json.dumps({"text": "a b", "label": y}) + "\n"
                                for y in labels))
        stream, line = JsonLinesStream(path, chunk_size=4), 5
    else:
        path = tmp_path / "d.csv"
        path.write_text("text,label\n" + "".join(f"a b,{y}\n" for y in labels))
        stream, line = CsvStream(path, text_column="text", label_column="label",
                                 chunk_size=4), 6
    est = AdaGradClassifier()
    with pytest.raises(ValueError, match=rf"{path.name}, line {line}: y contains labels \[7"):
        fit_stream(est, stream, classes=[-1, 1])
    assert est.t_ == 4  # the first chunk was learned, nothing of the second


def test_streaming_auc_equals_roc_auc_within_its_bound():
    rng = np.random.RandomState(0)
    y = rng.rand(5000) < 0.3
    scores = rng.standard_normal(5000) + y
    ties = np.round(scores, 1)  # many exact ties: bins never split them
    for s in (scores, ties, ties * 1e-30, -ties * 1e30):
        auc = StreamingAUC()
        for lo in range(0, 5000, 700):  # any chunking gives the same counts
            auc.update(s[lo:lo + 700], y[lo:lo + 700])
        exact = roc_auc_score(y, s)
        assert abs(auc.value - exact) <= auc.max_error + 1e-12
        one = StreamingAUC()
        one.update(s, y)
        assert (one.value, one.max_error) == (auc.value, auc.max_error)
        if s is scores:  # continuous scores: few pairs share a bin
            assert auc.max_error < 1e-3
    # scores far apart: the binned AUC is exact, the bound 0
    auc = StreamingAUC()
    auc.update(np.array([-0.0, 0.0, 1.0, 2.0, -3.0]), np.array([1, 0, 1, 0, 0], bool))
    assert auc.value == roc_auc_score([1, 0, 1, 0, 0], [0.0, 0.0, 1, 2, -3])
    # a checkpoint keeps the counts: continuing after pickling is the same
    import pickle
    a, b = StreamingAUC(), StreamingAUC()
    a.update(scores[:100], y[:100])
    b.update(scores[:100], y[:100])
    b = pickle.loads(pickle.dumps(b))
    a.update(scores[100:], y[100:])
    b.update(scores[100:], y[100:])
    assert (a.value, a.ties, a.n_pos) == (b.value, b.ties, b.n_pos)


def test_read_ahead_keeps_order_errors_and_closes():
    from sklearn_adaprox.stream import _read_ahead
    closed = []

    def chunks(fail_at=None):
        try:
            for i in range(10):
                if i == fail_at:
                    raise ValueError(f"bad chunk {i}")
                yield i
        finally:
            closed.append(True)

    assert list(_read_ahead(chunks())) == list(range(10))
    got = []
    with pytest.raises(ValueError, match="bad chunk 4"):
        for i in _read_ahead(chunks(fail_at=4)):
            got.append(i)
    assert got == [0, 1, 2, 3]
    reader = _read_ahead(chunks())
    assert next(reader) == 0
    reader.close()  # leaving early stops the reader thread and closes its source
    assert closed == [True, True, True]


# ----------------------------------------------------------------------
# the driver

from sklearn.base import clone  # noqa: E402

from sklearn_adaprox import (AdaGradClassifier, ImplicitFTRLClassifier,  # noqa: E402
                             ImplicitFTRLRegressor, PairwiseAUCClassifier,
                             RDAPlusClassifier)
from sklearn_adaprox.stream import evaluate_stream, fit_stream  # noqa: E402

ESTIMATORS = [
    AdaGradClassifier(loss="log_loss"),
    AdaGradClassifier(penalty="l1", alpha=1e-3, update="ftrl_proximal"),
    # the Newton local phase is scheduled by call sizes: compare the
    # dual-averaging phase; gamma, G, beta and eta are resolved from the
    # first call's data unless given
    RDAPlusClassifier(alpha=1e-3, gamma=1.0, local_phase=False),
    ImplicitFTRLClassifier(G=2.0, beta=1.0),
    PairwiseAUCClassifier(eta=1.0),
    ImplicitFTRLRegressor(G=5.0, beta=1.0),
]


# reports about the calls rather than the model: per-call sums (rounded in
# another order), the optimality measures of the last call's data, and the
# local phase's schedule (unused with local_phase=False)
DIAGNOSTICS = {"optimality_", "violation_", "cumulative_loss_", "cumulative_weight_",
               "next_switch_"}


def _state(est):
    return {k: v for k, v in vars(est).items()
            if k.endswith("_") and isinstance(v, np.ndarray) and k not in DIAGNOSTICS}


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_fit_stream_equals_one_pass_fit(tmp_path, est):
    X, y = make_sparse(400, 30)
    if not hasattr(est, "classes_") and type(est).__name__.endswith("Regressor"):
        y = X @ np.linspace(-1, 1, 30) + 0.1
    path = write_svmlight(tmp_path / "d.svm.gz", X, y, True, "gz")
    ref = clone(est).set_params(max_iter=1, shuffle=False, random_state=0, tol=None)
    X_ref, y_ref = load_svmlight_file(_decompressed(path, tmp_path), n_features=30,
                                      zero_based=True)
    ref.fit(X_ref, y_ref)
    got = clone(ref)
    classes = [-1.0, 1.0] if hasattr(ref, "classes_") else None
    history = fit_stream(got, SvmlightStream(path, 30, chunk_size=64, zero_based=True),
                         classes=classes)
    assert history["rows"].tolist() == [64 * i for i in range(1, 7)] + [400]
    assert got.t_ == ref.t_ == 400
    for name, value in _state(ref).items():
        if isinstance(ref, PairwiseAUCClassifier):
            # its iterate average is summed per call: equal to round-off
            np.testing.assert_allclose(_state(got)[name], value, rtol=1e-10, atol=1e-12)
        else:
            assert np.array_equal(_state(got)[name], value, equal_nan=True), name
    # progressive validation: every chunk but the first was scored first
    assert np.isnan(history["chunk_loss"][0]) and np.all(np.isfinite(history["chunk_loss"][1:]))
    assert history["nonzero_weights"][-1] == np.count_nonzero(ref.coef_)


@pytest.mark.parametrize("est", [e for e in ESTIMATORS if hasattr(e, "predict_proba")
                                 or type(e).__name__.endswith("Classifier")]
                         + [AdaGradClassifier(loss="log_loss", multi_class="multinomial"),
                            AdaGradClassifier(loss="modified_huber")],
                         ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=3
def test_outputs_from_scores_equal_the_public_methods(est, n_classes):
    if isinstance(est, PairwiseAUCClassifier) and n_classes == 3:
        pytest.skip("binary only")
    X, _ = make_sparse(200, 30, seed=3)
    y = np.random.RandomState(0).randint(n_classes, size=200)
    model = clone(est).set_params(max_iter=3).fit(X, y)
    proba, labels = model._outputs_from_scores(model.decision_function(X))
    assert np.array_equal(labels, model.predict(X))
    if hasattr(model, "predict_proba"):
        assert np.array_equal(proba, model.predict_proba(X))
    else:
        assert proba is None


def test_progressive_metrics_are_those_of_the_model_before_each_chunk(tmp_path):
    X, y = make_sparse(300, 30, seed=1)
    path = write_svmlight(tmp_path / "d.svm", X, y, True)
    est = AdaGradClassifier(loss="log_loss", random_state=0)
    history = fit_stream(est, SvmlightStream(path, 30, chunk_size=100, zero_based=True),
                         classes=[-1, 1])
    # replay: score chunk k with the model fitted on chunks < k
    from sklearn.metrics import log_loss
    replay = AdaGradClassifier(loss="log_loss", random_state=0)
    losses, correct, scores = [], 0, []
    for lo in range(0, 300, 100):
        Xc, yc = X[lo:lo + 100], y[lo:lo + 100]
        if lo:
            losses.append(log_loss(yc, replay.predict_proba(Xc), labels=[-1, 1]))
            correct += np.sum(replay.predict(Xc) == yc)
            scores = np.concatenate([scores, replay.decision_function(Xc)])
        replay.partial_fit(Xc, yc, classes=[-1, 1])
    np.testing.assert_allclose(history["chunk_loss"][1:], losses, rtol=1e-12)
    assert history["progressive_loss"][-1] == pytest.approx(np.mean(losses), rel=1e-12)
    assert history["progressive_score"][-1] == pytest.approx(correct / 200)
    assert history["loss_name"] == "log_loss" and history["score_name"] == "accuracy"
    # the AUC of every scored row so far (not per chunk), from the same replay
    assert np.isnan(history["progressive_auc"][0])
    error = history["progressive_auc_max_error"]
    assert 0 <= error < 1e-3
    assert abs(history["progressive_auc"][-1] - roc_auc_score(y[100:], scores)) <= error + 1e-12
    assert abs(history["progressive_auc"][1] - roc_auc_score(y[100:200], scores[:100])) < 1e-3


def test_checkpoint_resume_equals_uninterrupted(tmp_path):
    X, y = make_sparse(500, 30, seed=2)
    path = write_svmlight(tmp_path / "d.svm", X, y, True)
    hold = write_svmlight(tmp_path / "h.svm", X[:100], y[:100], True)

    def stream():
        return SvmlightStream(path, 30, chunk_size=50, zero_based=True, shuffle=True,
                              random_state=7)

    kwargs = dict(classes=[-1, 1], n_passes=3, holdout_every=200,
                  checkpoint_every=150)
    full = AdaGradClassifier(random_state=0)
    h_full = fit_stream(full, stream(), holdout=SvmlightStream(hold, 30, zero_based=True),
                        checkpoint=tmp_path / "full.ckpt", **kwargs)

    class Interrupt(Exception):
        pass

    class Crashing(SvmlightStream):  # dies in pass 2, after its 4th chunk
        def iter_pass(self, p):
            for c, chunk in enumerate(super().iter_pass(p)):
                if p == 1 and c == 4:
                    raise Interrupt
                yield chunk

    ckpt = tmp_path / "run.ckpt"
    crashing = Crashing(path, 30, chunk_size=50, zero_based=True, shuffle=True, random_state=7)
    with pytest.raises(Interrupt):
        fit_stream(AdaGradClassifier(random_state=0), crashing,
                   holdout=SvmlightStream(hold, 30, zero_based=True), checkpoint=ckpt, **kwargs)
    assert ckpt.exists() and not list(tmp_path.glob(".*.tmp"))
    resumed = AdaGradClassifier(random_state=0)
    h_res = fit_stream(resumed, stream(), holdout=SvmlightStream(hold, 30, zero_based=True),
                       checkpoint=ckpt, resume=True, **kwargs)
    for name, value in _state(full).items():
        assert np.array_equal(_state(resumed)[name], value), name
    assert resumed.t_ == full.t_ == 1500
    for key in ("rows", "chunk_loss", "progressive_loss", "holdout_rows", "holdout_loss"):
        assert np.array_equal(h_res[key], h_full[key], equal_nan=True), key


def test_holdout_early_stopping_and_regressor_metrics(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((600, 5))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.01 * rng.standard_normal(600)
    path = tmp_path / "r.svm"
    dump_svmlight_file(X, y, str(path), zero_based=True)
    hold = tmp_path / "rh.svm"
    dump_svmlight_file(X[:100], y[:100], str(hold), zero_based=True)
    est = ImplicitFTRLRegressor(random_state=0)
    history = fit_stream(est, SvmlightStream(path, 5, chunk_size=50, zero_based=True),
                         holdout=SvmlightStream(hold, 5, zero_based=True), holdout_every=100,
                         n_passes=50, early_stopping=True, n_iter_no_change=2, tol=1e-3)
    assert history["stopped_early"] and history["rows"][-1] < 50 * 600
    assert history["score_name"] == "r2" and history["holdout_score"][-1] > 0.99
    result = evaluate_stream(est, SvmlightStream(hold, 5, zero_based=True))
    assert result["loss"] == pytest.approx(np.mean((est.predict(X[:100]) - y[:100]) ** 2))


def test_bad_chunk_leaves_last_good_model_and_no_partial_file(tmp_path):
    X, y = make_sparse(200, 30)
    path = write_svmlight(tmp_path / "d.svm", X, y, True)
    with open(path, "a") as f:
        f.write("3 1:1\n")  # a label that is not in classes, in the last chunk
    est = AdaGradClassifier(random_state=0)
    ckpt = tmp_path / "m.ckpt"
    with pytest.raises(ValueError, match=r"d\.svm, line 201: y contains labels \[3.0\]"):
        fit_stream(est, SvmlightStream(path, 30, chunk_size=100, zero_based=True),
                   classes=[-1, 1], checkpoint=ckpt, checkpoint_every=100)
    assert est.t_ == 200  # the two good chunks were learned, nothing of the bad one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.svm", "m.ckpt"]


def test_progress_table_on_stderr_only(tmp_path, capsys):
    X, y = make_sparse(1000, 30)
    path = write_svmlight(tmp_path / "d.svm", X, y, True)
    fit_stream(AdaGradClassifier(loss="log_loss"),
               SvmlightStream(path, 30, chunk_size=100, zero_based=True), classes=[-1, 1])
    assert capsys.readouterr() == ("", "")  # quiet by default
    fit_stream(AdaGradClassifier(loss="log_loss"),
               SvmlightStream(path, 30, chunk_size=100, zero_based=True), classes=[-1, 1],
               verbose=1)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].split()[:3] == ["rows", "non-zeros", "rows/s"]
    rows = [int(line.split()[0]) for line in lines[1:]]
    assert rows == [100, 200, 400, 800, 1000]  # doubling, then the end
    assert "100.0%" in lines[-1]


# ----------------------------------------------------------------------
# memory: opt in with SKLEARN_ADAPROX_MEMORY_TEST=1 (writes a 2 GB file)

def write_text_like_svmlight(path, n_bytes, n_features=2**20, seed=0):
    """A svmlight file of about ``n_bytes``: rows of ~30 hashed word counts
    (Zipf-distributed indices), labels from a sparse linear rule.  64
    distinct blocks of 4096 rows are cycled (enough to be realistic for a
    reader and a learner, fast to write)."""
    rng = np.random.RandomState(seed)
    w = rng.standard_normal(n_features) * (rng.rand(n_features) < 0.01)
    blocks = []
    for _ in range(64):
        lines = []
        for _ in range(4096):
            idx = np.unique(np.minimum(rng.zipf(1.3, 30), n_features) - 1)
            idx = np.unique((idx * 2654435761) % n_features)  # spread like a hash
            counts = rng.randint(1, 4, idx.shape[0])
            label = 1 if w[idx] @ counts + 0.1 * rng.standard_normal() > 0 else -1
            lines.append(f"{label} " + " ".join(f"{i}:{c}" for i, c in zip(idx, counts)))
        blocks.append(("\n".join(lines) + "\n").encode())
    written = 0
    with open(path, "wb") as f:
        while written < n_bytes:
            block = blocks[(written // len(blocks[0])) % len(blocks)]
            f.write(block)
            written += len(block)
    return written


MEMORY_SCRIPT = """
import resource, sys, time
from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.stream import SvmlightStream, fit_stream
stream = SvmlightStream(sys.argv[1], 2**20, chunk_size=10000, zero_based=True)
start = time.perf_counter()
history = fit_stream(AdaGradClassifier(), stream, classes=[-1, 1])
print(int(history["rows"][-1]), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      time.perf_counter() - start, history["progressive_score"][-1])
"""


@pytest.mark.skipif(os.environ.get("SKLEARN_ADAPROX_MEMORY_TEST") != "1",
                    reason="writes and streams a 2 GB file; set SKLEARN_ADAPROX_MEMORY_TEST=1")
def test_memory_does_not_grow_with_the_file(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "big.svm"
    size = write_text_like_svmlight(path, 2 * 10**9)
    # the folder of the package this test imported (checkout or site-packages)
    root = pathlib.Path(sklearn_adaprox.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(path)],
                       capture_output=True, text=True, env=env, timeout=3600)
    assert r.returncode == 0, r.stderr
    rows, peak_mb, seconds, accuracy = map(float, r.stdout.split())
    print(f"\n{size / 1e9:.2f} GB, {rows:.0f} rows in {seconds:.1f} s: peak RSS {peak_mb:.0f} MB")
    assert peak_mb < 400
    assert accuracy > 0.6  # it learned something from the stream


def test_bundled_a9a_equals_load_svmlight_file():
    # real data shipped with the package: one-based, "auto" must find it
    path = pathlib.Path(__file__).resolve().parents[1] / "sklearn_adaprox/datasets/data/a9a.svm.gz"
    X_ref, y_ref = load_svmlight_file(str(path), n_features=123)
    stream = SvmlightStream(path, 123, chunk_size=5000)
    X, y, chunks = read_all(stream)
    assert stream.zero_based_ is False and len(chunks) == 7
    assert np.array_equal(X.indptr, X_ref.indptr) and np.array_equal(X.indices, X_ref.indices)
    assert np.array_equal(X.data, X_ref.data) and np.array_equal(y, y_ref)
