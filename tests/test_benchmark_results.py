"""The benchmark result files that the documentation renders.

``benchmarks/_results.py`` writes them (``--json PATH`` of the benchmark
scripts); the benchmarks page of the site reads the committed ones in
``doc/benchmarks/results/``.  Both must carry what the page shows: the date,
the command, the machine with its load average, the versions, and tables
whose rows match their columns.
"""
import datetime
import importlib.util
import json
import math
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
HELPER = ROOT / "benchmarks" / "_results.py"
RESULTS = ROOT / "doc" / "benchmarks" / "results"

pytestmark = pytest.mark.skipif(not HELPER.exists(), reason="not run from a checkout")


def _load_helper():
    spec = importlib.util.spec_from_file_location("_bench_results", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_document(doc):
    datetime.datetime.fromisoformat(doc["date"])
    assert doc["command"].startswith("python benchmarks/")
    machine = doc["machine"]
    assert machine["cores"] >= 1 and machine["cpu"]
    assert len(machine["load_average"]) == 3
    assert {"python", "numpy", "scipy", "scikit-learn"} <= set(doc["versions"])
    assert doc["tables"]
    for table in doc["tables"]:
        assert table["title"] and table["columns"]
        for row in table["rows"]:
            assert len(row) == len(table["columns"])


def test_helper_writes_a_complete_result_file(tmp_path, monkeypatch):
    import numpy as np

    helper = _load_helper()
    results = helper.Results("bench_example")
    results.table("speed", "A title", ["learner", "seconds", "ratio"], notes="a note")
    results.row("speed", "ours", np.float64(0.5), float("nan"))
    results.table("speed", "ignored: the table exists", ["x"])
    with pytest.raises(ValueError):
        results.row("speed", "too", "few")
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "bench_example.py"), "--quick"])
    path = tmp_path / "out" / "bench_example.json"
    results.write(str(path))
    doc = json.loads(path.read_text())
    _check_document(doc)
    assert doc["benchmark"] == "bench_example"
    assert doc["command"] == "python benchmarks/bench_example.py --quick"
    (table,) = doc["tables"]
    assert table["columns"] == ["learner", "seconds", "ratio"]
    assert table["rows"] == [["ours", 0.5, None]]  # numpy scalar and NaN made JSON-safe
    assert table["notes"] == "a note"


def test_write_without_a_path_writes_nothing(tmp_path, monkeypatch):
    helper = _load_helper()
    monkeypatch.chdir(tmp_path)
    helper.Results("bench_example").write(None)
    assert list(tmp_path.iterdir()) == []


def test_committed_result_files_are_complete():
    files = sorted(RESULTS.glob("*.json"))
    assert files, "the benchmarks page needs at least one result file"
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["benchmark"] == path.stem
        _check_document(doc)
        for table in doc["tables"]:
            for row in table["rows"]:
                for cell in row:
                    assert not (isinstance(cell, float) and math.isnan(cell))
