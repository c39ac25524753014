"""Result files of the benchmark scripts (``--json PATH``).

A benchmark script keeps printing its tables as before; with ``--json PATH``
it also writes them to a JSON file that the documentation renders (the
benchmarks page of the site reads the committed files of
``doc/benchmarks/results/``, never numbers typed by hand).  The file
records when, how and where the numbers were measured::

    {
      "benchmark": "bench_adagrad",
      "date": "2026-12-01T03:40:12+00:00",
      "command": "python benchmarks/bench_adagrad.py --quick --json ...",
      "machine": {"cpu": ..., "cores": 2, "load_average": [..], ...},
      "versions": {"python": ..., "numpy": ..., "scipy": ..., ...},
      "tables": [{"name": ..., "title": ..., "columns": [...],
                  "rows": [[...], ...], "notes": ...}, ...]
    }

Use::

    from _results import Results
    RESULTS = Results("bench_x")             # at import
    RESULTS.add_argument(parser)             # adds --json PATH
    RESULTS.table("speed", "title", ["col", ...], notes="...")
    RESULTS.row("speed", value, ...)         # wherever a row is printed
    RESULTS.write(args.json)                 # at the end (no-op for None)
"""
import datetime
import json
import os
import platform
import shlex
import sys

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "doc",
                           "benchmarks", "results")


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    """CPU model, cores, load average and operating system of this machine."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load_average": load,
        "platform": platform.platform(),
    }


def versions():
    """Versions of Python and of the libraries the benchmarks compare."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "scipy", "sklearn", "sklearn_adaprox", "joblib", "vowpalwabbit"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name)
            except ImportError:
                continue
        out["scikit-learn" if name == "sklearn" else name] = getattr(module, "__version__", "?")
    return out


def _plain(value):
    """JSON-friendly scalar: numpy numbers become Python numbers, NaN None."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


class Results:
    """Tables of one benchmark run, written as one JSON file."""

    def __init__(self, benchmark):
        self.benchmark = benchmark
        self.tables = {}
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.load_at_start = machine()["load_average"]

    def add_argument(self, parser):
        parser.add_argument(
            "--json", metavar="PATH", default=None,
            help="also write the tables, the command, the date, the machine and "
            "the versions to this JSON file (e.g. doc/benchmarks/results/"
            f"{self.benchmark}.json)")

    def table(self, name, title, columns, notes=""):
        if name not in self.tables:
            self.tables[name] = {"name": name, "title": title, "columns": list(columns),
                                 "rows": [], "notes": notes}
        return self.tables[name]

    def row(self, name, *values):
        table = self.tables[name]
        if len(values) != len(table["columns"]):
            raise ValueError(f"{name}: {len(values)} values for {len(table['columns'])} columns")
        table["rows"].append([_plain(v) for v in values])

    def write(self, path):
        if path is None:
            return
        # the command as run from the repository root
        script = os.path.relpath(os.path.abspath(sys.argv[0]),
                                 os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        argv = [script] + sys.argv[1:]
        info = machine()
        info["load_average_at_start"] = self.load_at_start
        finished = datetime.datetime.now(datetime.timezone.utc)
        document = {
            "benchmark": self.benchmark,
            "date": finished.isoformat(timespec="seconds"),
            "wall_time_s": round((finished - self.started).total_seconds(), 1),
            "command": "python " + " ".join(shlex.quote(a) for a in argv),
            "machine": info,
            "versions": versions(),
            "tables": list(self.tables.values()),
        }
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as f:
            json.dump(document, f, indent=1)
            f.write("\n")
        print(f"results written to {path}")
