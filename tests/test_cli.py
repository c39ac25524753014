"""The command line: python -m sklearn_adaprox train|predict|evaluate|info."""
import gzip
import json
import os
import pathlib
import subprocess
import sys

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import sklearn_adaprox
from sklearn_adaprox import AdaGradClassifier
from sklearn_adaprox.__main__ import main

# the folder holding the package this test imported (the checkout for an
# editable install, site-packages for a regular one): the subprocess imports
# the same
PACKAGE_PARENT = pathlib.Path(sklearn_adaprox.__file__).resolve().parents[1]


def run(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT) + os.pathsep
               + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "sklearn_adaprox", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.fixture
def data(tmp_path):
    rng = np.random.RandomState(0)
    w = rng.standard_normal(20)
    X = sp.random(600, 20, density=0.3, format="csr", random_state=rng)
    y = np.where(X @ w > 0, 1, -1)
    dump_svmlight_file(X[:500], y[:500], str(tmp_path / "train.svm"), zero_based=False)
    (tmp_path / "train.svm.gz").write_bytes(gzip.compress((tmp_path / "train.svm").read_bytes()))
    dump_svmlight_file(X[500:], y[500:], str(tmp_path / "test.svm"), zero_based=False)
    return tmp_path


def test_train_predict_evaluate_info_end_to_end(data):
    r = run("train", "train.svm.gz", "-o", "m.joblib", "--n-features", 20,
            "--classes", "-1,1", "-p", "loss=log_loss", "-p", "random_state=0",
            "--chunk-size", 100, "--holdout", "test.svm", cwd=data)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""  # the progress table goes to stderr
    assert r.stderr.splitlines()[0].split()[:2] == ["rows", "non-zeros"]

    # the model is the one the Python driver learns
    bundle = joblib.load(data / "m.joblib")
    X, y = load_svmlight_file(str(data / "train.svm"), n_features=20, zero_based=False)
    ref = AdaGradClassifier(loss="log_loss", random_state=0)
    for lo in range(0, 500, 100):
        ref.partial_fit(X[lo:lo + 100], y[lo:lo + 100], classes=[-1, 1])
    est = bundle["estimator"]
    assert np.array_equal(est.coef_, ref.coef_) and bundle["rows_seen"] == 500

    X_test, y_test = load_svmlight_file(str(data / "test.svm"), n_features=20, zero_based=False)
    r = run("predict", "m.joblib", "test.svm", "--what", "proba", cwd=data)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.loadtxt(r.stdout.splitlines()), ref.predict_proba(X_test),
                               rtol=1e-8)
    r = run("predict", "m.joblib", "test.svm", "-o", "labels.txt", cwd=data)
    assert r.returncode == 0 and r.stdout == ""
    assert np.array_equal(np.loadtxt(data / "labels.txt"), ref.predict(X_test))

    r = run("evaluate", "m.joblib", "test.svm", cwd=data)
    metrics = dict(line.split() for line in r.stdout.splitlines())
    assert float(metrics["accuracy"]) == pytest.approx(ref.score(X_test, y_test))
    assert int(metrics["rows"]) == 100 and 0.5 < float(metrics["roc_auc"]) <= 1

    r = run("info", "m.joblib", cwd=data)
    assert "estimator AdaGradClassifier" in r.stdout and "rows_seen 500" in r.stdout
    assert f"nonzero_weights {np.count_nonzero(ref.coef_)} of 20" in r.stdout
    # the values "auto" resolved to, as the Python driver resolved them
    assert f"resolved update_={ref.update_!r}, alpha_={ref.alpha_!r}\n" in r.stdout


def test_train_tabular_csv_through_a_transformer(tmp_path):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler
    from sklearn_adaprox.stream import CsvStream, fit_stream
    rng = np.random.RandomState(0)
    table = np.round(rng.standard_normal((300, 3)) * [1, 10, 100], 6)
    y = (table @ [1, 0.1, -0.01] > 0).astype(int)
    (tmp_path / "t.csv").write_text("a,b,label,c\n" + "\n".join(
        f"{r[0]},{r[1]},{lab},{r[2]}" for r, lab in zip(table, y)) + "\n")
    ct = ColumnTransformer([("s", StandardScaler(), [0, 1, 2])]).fit(table)
    joblib.dump(ct, tmp_path / "ct.joblib")
    r = run("train", "t.csv", "--transformer", "ct.joblib", "-o", "m.joblib",
            "--classes", "0,1", "--chunk-size", 50, "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    est = joblib.load(tmp_path / "m.joblib")["estimator"]
    ref = AdaGradClassifier()
    fit_stream(ref, CsvStream(tmp_path / "t.csv", label_column="label", transformer=ct,
                              chunk_size=50), classes=[0, 1])
    assert np.array_equal(est.coef_, ref.coef_)
    r = run("evaluate", "m.joblib", "t.csv", cwd=tmp_path)
    metrics = dict(line.split() for line in r.stdout.splitlines())
    assert float(metrics["accuracy"]) > 0.9 and float(metrics["roc_auc_max_error"]) < 1e-3
    # numbers as they are, without a transformer
    r = run("train", "t.csv", "--tabular", "-o", "raw.joblib", "--classes", "0,1", "-q",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    raw = joblib.load(tmp_path / "raw.joblib")["estimator"]
    assert raw.n_features_in_ == 3
    r = run("predict", "raw.joblib", "t.csv", cwd=tmp_path)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 300
    r = run("train", "t.csv", "--transformer", "missing.joblib", "-o", "x.joblib",
            "--classes", "0,1", cwd=tmp_path)
    assert r.returncode == 2 and "no such transformer file" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.joblib").exists()


@pytest.mark.parametrize("args, message", [
    (["train", "train.svm", "-o", "m", "--classes", "-1,1"], "needs --n-features"),
    (["train", "train.svm", "-o", "m", "--n-features", "20"], "needs --classes"),
    (["train", "nope.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1"], "No such file"),
    (["train", "train.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1",
      "--estimator", "Bogus"], "invalid choice"),
    (["train", "train.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1",
      "-p", "alpha=-1"], "'alpha' parameter"),
    (["train", "train.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1",
      "-p", "colour=red"], "Invalid parameter 'colour'"),
    (["train", "train.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1",
      "--passes", "0"], "--passes must be at least 1"),
    (["predict", "missing.joblib", "test.svm"], "no such model file"),
    (["evaluate"], "required"),
])
def test_usage_errors_exit_2_with_one_line(data, capsys, monkeypatch, args, message):
    monkeypatch.chdir(data)
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and message in err
    assert not (data / "m").exists()


def test_usage_error_in_a_subprocess_has_no_traceback(data):
    r = run("train", "train.svm", "-o", "m", "--n-features", "20", "--classes", "-1,1",
            "--bogus", cwd=data)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("train", "--help", cwd=data)
    assert r.returncode == 0 and "--checkpoint-every" in r.stdout


@pytest.mark.parametrize("content, message", [
    ("1 1:0.5 3:x\n", "bad.svm, line 3: invalid value"),
    ("1 0:0.5\n", "bad.svm, line 3: feature index 0 in a file read as one-based"),
    ("1 21:1\n", "bad.svm, line 3: feature index 21 is beyond n_features=20"),
    ("1 -2:1\n", "bad.svm, line 3: negative feature index"),
    ("2 1:1\n", "y contains labels [2.0]"),
])
def test_bad_data_exits_1_and_writes_no_model(data, capsys, monkeypatch, content, message):
    monkeypatch.chdir(data)
    (data / "bad.svm").write_text("1 1:1 2:1\n-1 2:1\n" + content + "1 4:1\n")
    args = ["train", "bad.svm", "-o", "m.joblib", "--n-features", "20", "--classes", "-1,1",
            "--zero-based", "false", "--chunk-size", "2", "--checkpoint", "c.ckpt",
            "--checkpoint-every", "2", "-q"]
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert message in err and len(err.strip().splitlines()) == 1 and out == ""
    # no model file, no temporary file; only the complete checkpoint of the
    # first good chunk
    assert sorted(p.name for p in data.iterdir() if "m.joblib" in p.name) == []
    assert not list(data.glob(".*tmp"))


def test_truncated_gzip_and_empty_file_exit_1(data, capsys, monkeypatch):
    monkeypatch.chdir(data)
    raw = gzip.compress(b"1 1:1\n" * 100000)
    (data / "cut.svm.gz").write_bytes(raw[: len(raw) // 2])
    (data / "empty.svm").write_text("")
    for name, message in (("cut.svm.gz", "corrupt or truncated"), ("empty.svm", "empty file")):
        assert main(["train", name, "-o", "m.joblib", "--n-features", "20",
                     "--classes", "-1,1", "-q"]) == 1
        assert message in capsys.readouterr().err
        assert not (data / "m.joblib").exists()


def test_text_jsonl_regressor_and_resume(data, capsys, monkeypatch):
    monkeypatch.chdir(data)
    rng = np.random.RandomState(0)
    words = ["good", "bad", "fine", "awful", "great", "poor"]
    lines = []
    for _ in range(300):
        doc = rng.choice(words, 4)
        score = sum({"good": 1, "great": 2, "fine": 0.5}.get(w, -1) for w in doc)
        lines.append(json.dumps({"review": " ".join(doc), "score": score}))
    (data / "r.jsonl").write_text("\n".join(lines))
    common = ["r.jsonl", "--estimator", "ImplicitFTRLRegressor", "-p", "G=10.0",
              "--text-field", "review", "--label-field", "score", "--bits", "8",
              "--chunk-size", "50", "--passes", "3", "-q"]
    assert main(["train", *common, "-o", "full.joblib"]) == 0
    assert main(["train", *common, "-o", "half.joblib", "--checkpoint", "c.ckpt",
                 "--checkpoint-every", "400", "--passes", "2"]) == 0
    assert main(["train", *common, "-o", "resumed.joblib", "--checkpoint", "c.ckpt",
                 "--resume"]) == 0
    full, resumed = joblib.load("full.joblib"), joblib.load("resumed.joblib")
    assert np.array_equal(full["estimator"].coef_, resumed["estimator"].coef_)
    assert resumed["rows_seen"] == 900
    capsys.readouterr()
    assert main(["evaluate", "full.joblib", "r.jsonl"]) == 0
    metrics = dict(line.split() for line in capsys.readouterr().out.splitlines())
    assert float(metrics["r2"]) > 0.9


def test_skops_model_file(data, capsys, monkeypatch):
    pytest.importorskip("skops")
    monkeypatch.chdir(data)
    assert main(["train", "train.svm", "-o", "m.skops", "--n-features", "20",
                 "--classes", "-1,1", "-q"]) == 0
    assert main(["info", "m.skops"]) == 0
    assert "rows_seen 500" in capsys.readouterr().out
    # a file naming a type outside the allowed ones is refused, not loaded
    import fractions

    import skops.io as sio
    from sklearn.linear_model import SGDClassifier
    sio.dump({"format": "sklearn_adaprox-stream-model", "x": fractions.Fraction(1, 3)},
             "other.skops")
    assert main(["info", "other.skops"]) == 1
    assert "refusing to load untrusted types ['fractions.Fraction']" in capsys.readouterr().err
    sio.dump({"format": "sklearn_adaprox-stream-model", "estimator": SGDClassifier()},
             "sgd.skops")
    assert main(["info", "sgd.skops"]) == 1
    assert "not a fitted model" in capsys.readouterr().err
