"""Pages of the sklearn_adaprox site that are written at build time.

Nothing the site quotes as a measurement is typed by hand: when the
configuration is read (``config-inited``), this extension

* runs the demo, ``python -m sklearn_adaprox``, and saves what it prints
  (``_generated/demo.txt``, shown on the home page);
* writes the API reference (``api/index.rst``) from the list of public
  objects that the docstring tests check (``tests/_public_api.py``), so a
  new public function or class appears in the reference without an edit;
* gives the guide pages the ``adaprox-run`` directive, which runs a code
  block at build time and shows its output, for the numbers they quote;
* renders every result file of ``benchmarks/results/`` (written by the
  benchmark scripts with ``--json``) as tables and figures
  (``_generated/benchmark_results.md``), with its date, command, machine
  and versions.
"""
import datetime
import html
import json
import os
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1]
REPO = DOC.parent
GENERATED = DOC / "_generated"
RESULTS = DOC / "benchmarks" / "results"


# ----------------------------------------------------------------------
# gallery: sys.argv of every example


def gallery_argv(gallery_conf, script_vars):
    """Arguments of an example run by sphinx-gallery: its PNG goes to the
    build folder (the gallery shows the figure it scrapes from matplotlib)
    instead of the examples folder."""
    name = Path(script_vars["src_file"]).stem
    out = DOC / "_build" / "example_outputs"
    out.mkdir(parents=True, exist_ok=True)
    return ["--out", str(out / f"{name}.png")]


# ----------------------------------------------------------------------
# the demo


def write_demo():
    command = [sys.executable, "-m", "sklearn_adaprox"]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          cwd=str(GENERATED), check=True, timeout=600)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (GENERATED / "demo.txt").write_text(done.stdout)
    (GENERATED / "demo_note.md").write_text(
        f"Printed by `python -m sklearn_adaprox` when this site was built "
        f"({date}, {os.cpu_count()} cores); the fit times vary from run to run, "
        "the other columns are reproducible (every learner uses `random_state=0`).\n")


# ----------------------------------------------------------------------
# the API reference

API_SECTIONS = [
    ("sklearn_adaprox", "Estimators",
     "The learners, with the scikit-learn estimator API."),
    ("sklearn_adaprox.datasets", "Data sets",
     "Bundled real data and synthetic sparse data."),
    ("sklearn_adaprox.stream", "Streaming",
     "Chunked readers of files bigger than memory and the streaming driver."),
    ("sklearn_adaprox.distributed", "Distributed",
     "Data-parallel training on a Dask cluster (the ``dask`` extra)."),
]


def write_api():
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from _public_api import public_names
    finally:
        sys.path.pop(0)
    import importlib
    import inspect

    lines = [
        ".. _api:",
        "",
        "API reference",
        "=============",
        "",
        "Every public class and function of the package, with its full docstring.",
        "Parameter types and \"See Also\" entries link to the documentation of",
        "scikit-learn, NumPy, SciPy and Python.",
        "",
    ]
    for module_name, title, blurb in API_SECTIONS:
        module = importlib.import_module(module_name)
        names = public_names(module_name)
        lines += [
            f"``{module_name}``: {title.lower()}",
            "-" * (len(module_name) + len(title) + 6),
            "",
            f".. automodule:: {module_name}",
            "   :no-members:",
            "   :no-inherited-members:",
            "",
            blurb,
            "",
            f".. currentmodule:: {module_name}",
            "",
        ]
        for kind, test in (("Classes", inspect.isclass), ("Functions", inspect.isfunction)):
            chosen = [n for n in names if test(getattr(module, n))]
            if not chosen:
                continue
            template = "class.rst" if kind == "Classes" else "function.rst"
            lines += [
                kind,
                "~" * len(kind),
                "",
                ".. autosummary::",
                "   :toctree: generated/",
                f"   :template: {template}",
                "",
                *[f"   {n}" for n in chosen],
                "",
            ]
    api = DOC / "api"
    api.mkdir(exist_ok=True)
    _write_if_changed(api / "index.rst", "\n".join(lines))


# ----------------------------------------------------------------------
# the benchmarks page

BENCHMARKS = {
    "bench_adagrad": (
        "AdaGrad against SGDClassifier: time of one epoch",
        "One epoch of hinge-loss `AdaGradClassifier` (dual averaging and mirror "
        "descent) and scikit-learn's `SGDClassifier` with the same penalty and "
        "alpha, on the same CSR matrices; best of several runs.  *vs SGD* is the "
        "speed ratio against the anchor (< 1: AdaGrad is faster)."),
    "bench_adagrad_rules": (
        "Every update rule against SGDClassifier on hashed text",
        "One epoch of every `update` x `penalty` x `loss` of `AdaGradClassifier`, "
        "with `ImplicitFTRLClassifier` and `PairwiseAUCClassifier` beside them, "
        "against `SGDClassifier` with the same loss and penalty, on hashed SMS and "
        "20 newsgroups texts (2**20 columns, bigrams), w8a and a text-like Zipf "
        "matrix: median and spread over interleaved rounds, *vs SGD* the ratio of "
        "the medians, *x floor* the median as a multiple of a bare `X @ w`, *x pair "
        "floor* as a multiple of the same product over 16-byte entries (the cache "
        "lines of AdaGrad's (u, root) pairs)."),
    "bench_stream": (
        "Streaming: file to model against Vowpal Wabbit and scikit-learn",
        "One pass over a generated svmlight file (hashed word counts, 2**20 "
        "columns): our command line and `fit_stream`, scikit-learn's "
        "`load_svmlight_file` + `SGDClassifier.partial_fit` loop, and Vowpal "
        "Wabbit.  *time / ours* is the ratio against the command line."),
    "bench_auc": (
        "PairwiseAUCClassifier beside Sun et al. (2023), Tables 2 and 3",
        "Test ROC AUC after cross-validated hyper-parameters, next to the "
        "paper's numbers (mean and standard deviation; the paper: 25 runs)."),
    "bench_rdaplus": (
        "RDA+ against LIBLINEAR, and beside Lee & Wright (2012), Table 1",
        "Part A: time until the optimality violation is at most 1e-4, RDA+ "
        "against LIBLINEAR (the anchor, tightened until it reaches the same "
        "target on its own objective), with plain RDA and SGD given RDA+'s "
        "time.  Part B: samples until plain RDA identifies a superset of twice "
        "the support, and the optimal support, medians (standard deviation) "
        "over shuffles, next to the paper's columns."),
    "bench_rdaplus_text": (
        "RDA+'s objective against SGD's defaults on text",
        "Test accuracy of the l1-logistic objective that `RDAPlusClassifier` "
        "solves, with its `alpha=\"auto\"` rule at several ratios r of "
        "`alpha_max` (0.01 is the default) and by LIBLINEAR at the default, "
        "beside `SGDClassifier()` and `SGDClassifier(loss=\"log_loss\")` with "
        "their defaults, on the splits of `bench_defaults.py`; non-zero weights "
        "in parentheses, one fit's seconds."),
    "bench_adagrad_multiclass": (
        "AdaGrad against non-adaptive RDA at equal lambda "
        "(Duchi, Hazan & Singer 2011, Table 3)",
        "One pass, no intercept, step chosen on a validation split; test error "
        "and the fraction of non-zero feature rows of the coefficient matrix."),
    "bench_ftrl": (
        "Implicit FTRL: averaged online loss against beta "
        "(Chen & Orabona 2023, Figures 1-3)",
        "One online pass; each sample is predicted before the model learns "
        "from it.  The implicit updates (truncated, proximal) should stay flat "
        "as beta grows, the linear one should not."),
    "bench_partial_fit": (
        "partial_fit per row, by chunk size and width",
        "`AdaGradClassifier.partial_fit` and `SGDClassifier.partial_fit` on "
        "chunks of 1 to 1000 text-like rows, and river's `learn_one`, from "
        "2**16 to 2**24 columns: a cost per row that does not grow with the "
        "width is a call that costs what its rows cost.  `PairwiseAUCClassifier` "
        "beside its SGD twin, `SGDClassifier(loss=\"log_loss\")`, on the same "
        "chunks.  The second table "
        "scores one row at a time, beside the plain products a user could "
        "write instead and river's `predict_proba_one`."),
    "bench_defaults": (
        "Defaults against scikit-learn's defaults",
        "Every estimator with its default parameters (and the two variants a "
        "user tries first: `AdaGradClassifier(penalty=\"l1\")` and "
        "`loss=\"log_loss\"`) beside `SGDClassifier` / `SGDRegressor` with theirs, "
        "`LogisticRegression` and `Ridge`, in the obvious pipeline, mean over "
        "seeds.  *time/SGD* is the `fit` time against `SGDClassifier()` or "
        "`SGDRegressor()` on the same matrix; *target* marks the issue's targets: "
        "within 0.5 point of the SGD defaults it is compared with (ROC AUC for "
        "the pairwise learner) and at most 1.5 times SGD's fit time."),
    "bench_distributed": (
        "Data-parallel training: threads, Dask and dask-ml against one core",
        "Wall time per pass and test accuracy / log loss of the in-memory "
        "learner, `ThreadShardedTrainer(n_jobs=2)` (a `fit` per pass, and the "
        "passes of one `fit`), the floor of two threads (each half of the rows "
        "passed over by its own model, no merge), `DaskShardedTrainer` on a "
        "2-worker `LocalCluster` (the rounds of one `fit`) and dask-ml's "
        "`Incremental`; then accuracy per pass against the number of shards for "
        "both merges, and the bytes a round sends."),
    "bench_epoch": (
        "One epoch of every estimator against SGDClassifier",
        "The time of one pass of each estimator with its default update, beside "
        "`SGDClassifier` with the same loss on the same matrices (a9a and a "
        "text-like Zipf matrix with 2**20 columns), interleaved, best of the "
        "repeats.  *ratio* < 1: faster than SGD."),
    "bench_design_choices": (
        "The measurements behind design choices of the engine",
        "Choices that exist because they were measured to pay off, and that "
        "the code's comments refer to: the row order of a shuffled pass, a "
        "plain thread pool rather than joblib's for the one-vs-rest problems, "
        "`np.take` for a chunk's columns, and the widest full-matrix AdaGrad "
        "model."),
    "bench_input_checks": (
        "Cost of the input checks and of partial_fit per call",
        "The validation that every `fit` runs, against a one-pass fit, and "
        "the per-call cost of `partial_fit`."),
}


def _cell(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-3:
            return f"{value:.3g}"
        return f"{value:.4g}"
    return html.escape(str(value)).replace("|", "\\|")


def _table(table):
    out = [f"**{table['title']}**", ""]
    out.append("| " + " | ".join(_cell(c) for c in table["columns"]) + " |")
    out.append("|" + "---|" * len(table["columns"]))
    for row in table["rows"]:
        out.append("| " + " | ".join(_cell(c) for c in row) + " |")
    out.append("")
    if table.get("notes"):
        out += [table["notes"], ""]
    return out


def _provenance(result):
    m, v = result["machine"], result["versions"]
    load = m.get("load_average")
    load_start = m.get("load_average_at_start")
    return [
        f"*Measured {result['date']}* with",
        "",
        "```text",
        result["command"],
        "```",
        "",
        f"on {m['cpu']}, {m['cores']} cores, load average "
        f"{' / '.join(map(str, load_start)) if load_start else '?'} (start) and "
        f"{' / '.join(map(str, load)) if load else '?'} (end, 1/5/15 min); "
        f"{result.get('wall_time_s', '?')} s in all.  Versions: "
        + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        "",
    ]


def _figure_adagrad(result, plt):
    table = next(t for t in result["tables"] if t["name"] == "epoch")
    cols = table["columns"]
    rows = [dict(zip(cols, r)) for r in table["rows"] if r[1] != "SGDClassifier"]
    sets = list(dict.fromkeys(r["data set"] for r in rows))
    series = list(dict.fromkeys((r["learner"], r["penalty"]) for r in rows))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / len(series)
    for k, (learner, penalty) in enumerate(series):
        values = [next((r["vs SGD"] for r in rows if r["data set"] == s
                        and r["learner"] == learner and r["penalty"] == penalty), float("nan"))
                  for s in sets]
        ax.bar([i + k * width for i in range(len(sets))], values, width,
               label=f"{learner}, {penalty}")
    ax.axhline(1.0, color="k", lw=1, ls="--", label="SGDClassifier (= 1)")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sets))], sets)
    ax.set_xlabel("data set")
    ax.set_ylabel("epoch time / SGDClassifier's (ratio)")
    ax.set_title("One epoch, hinge loss: time relative to SGDClassifier (lower is faster)")
    ax.legend(fontsize=8, ncol=2)
    return fig


def _figure_stream(result, plt):
    table = result["tables"][0]
    names = [r[0] for r in table["rows"]]
    rate = [r[2] / 1e3 for r in table["rows"]]
    fig, ax = plt.subplots(figsize=(8, 3))
    bars = ax.barh(range(len(names)), rate, color=["C0", "C0", "C1", "C2"][:len(names)])
    ax.set_yticks(range(len(names)), [n.split(" (")[0] for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("throughput (thousand rows per second)")
    ax.set_ylabel("contender")
    ax.set_title("File to model, one pass of logistic regression")
    ax.legend([bars[0]], ["rows/s, higher is faster"], fontsize=8, loc="lower right")
    return fig


def _figure_auc(result, plt):
    table = result["tables"][0]
    cols = table["columns"]
    rows = [dict(zip(cols, r)) for r in table["rows"] if r[4] is not None]
    labels = [f"{r['data set']}\n{r['learner']}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.errorbar([i - 0.1 for i in x], [r["mean"] for r in rows], [r["std"] for r in rows],
                fmt="o", label="sklearn_adaprox (this run)")
    ax.errorbar([i + 0.1 for i in x], [r["paper mean"] for r in rows],
                [r["paper std"] for r in rows], fmt="s", label="Sun et al. (2023)")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_xlabel("data set and learner")
    ax.set_ylabel("test ROC AUC (mean ± std)")
    ax.set_title("PairwiseAUCClassifier beside the paper's Tables 2 and 3")
    ax.legend(fontsize=8)
    return fig


def _figure_ftrl(result, plt):
    table = next(t for t in result["tables"] if t["name"] == "loss")
    cols = table["columns"]
    rows = [dict(zip(cols, r)) for r in table["rows"]]
    panels = list(dict.fromkeys((r["data set"], r["loss"], r["norm"]) for r in rows))
    ncols = min(4, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.0 * nrows + 0.6),
                             squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (name, loss, norm) in zip(axes.flat, panels):
        sel = [r for r in rows if (r["data set"], r["loss"], r["norm"]) == (name, loss, norm)]
        for method in dict.fromkeys(r["method"] for r in sel):
            pts = [(r["beta"], r["averaged online loss"]) for r in sel
                   if r["method"] == method and r["averaged online loss"] is not None]
            if pts:
                ax.plot(*zip(*pts), "o-", ms=3, label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("beta (SGD: eta0, PA: C), log scale", fontsize=8)
        ax.set_ylabel("averaged online loss (log scale)", fontsize=8)
        ax.set_title(f"{name}, {loss}, {norm}", fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle("Averaged online loss against beta (cf. Chen & Orabona 2023, Figs. 1-3)")
    return fig


def _figure_multiclass(result, plt):
    table = result["tables"][0]
    cols = table["columns"]
    rows = [dict(zip(cols, r)) for r in table["rows"]]
    sets = list(dict.fromkeys(r["data set"] for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 3.8), squeeze=False)
    for ax, name in zip(axes[0], sets):
        sel = [r for r in rows if r["data set"] == name]
        for method in dict.fromkeys(r["method"] for r in sel):
            pts = [(r["lambda"], r["test error"]) for r in sel if r["method"] == method]
            ax.plot(*zip(*pts), "o-", ms=3, label=method)
        ax.set_xscale("log")
        ax.set_xlabel("lambda (log scale)")
        ax.set_ylabel("test error (fraction)")
        ax.set_title(name)
        ax.legend(fontsize=6)
    fig.suptitle("Test error at equal lambda, one pass (cf. Duchi et al. 2011, Table 3)")
    return fig


def _figure_rdaplus(result, plt):
    table = next((t for t in result["tables"] if t["name"] == "part_a"), None)
    if table is None:
        return None
    cols = table["columns"]
    rows = [dict(zip(cols, r)) for r in table["rows"]]
    labels = [f"{r['data'].split(' (')[0]}\n{r['a/amax']} alpha_max" for r in rows]
    ratios = [float(r["RDA+/LIB"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.bar(range(len(rows)), ratios, color="C3", label="RDA+ time / LIBLINEAR time")
    ax.axhline(1.0, color="k", lw=1, ls="--", label="LIBLINEAR (= 1)")
    ax.axhline(2.0, color="gray", lw=1, ls=":", label="target: within 2x")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_xlabel("data set and alpha")
    ax.set_yscale("log")
    ax.set_ylabel("time to violation <= 1e-4\n(ratio, log scale)")
    ax.set_title("RDA+ against LIBLINEAR: time to the same optimality (lower is faster)")
    ax.legend(fontsize=8)
    return fig


FIGURES = {
    "bench_adagrad": _figure_adagrad,
    "bench_stream": _figure_stream,
    "bench_auc": _figure_auc,
    "bench_ftrl": _figure_ftrl,
    "bench_adagrad_multiclass": _figure_multiclass,
    "bench_rdaplus": _figure_rdaplus,
}


def write_benchmarks():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = sorted(RESULTS.glob("*.json"),
                   key=lambda p: list(BENCHMARKS).index(p.stem) if p.stem in BENCHMARKS else 99)
    out = []
    for path in files:
        result = json.loads(path.read_text())
        name = result["benchmark"]
        title, text = BENCHMARKS.get(name, (name, ""))
        out += [f"## {title}", "", text, "",
                f"Result file: `doc/benchmarks/results/{path.name}`.", ""]
        out += _provenance(result)
        fig = FIGURES[name](result, plt) if name in FIGURES else None
        if fig is not None:
            fig.tight_layout()
            fig.savefig(GENERATED / f"{name}.png", dpi=100)
            plt.close(fig)
            out += [f"```{{image}} /_generated/{name}.png", f":alt: {title}", "```", ""]
        for table in result["tables"]:
            out += _table(table)
    if not files:
        out = ["No result files were found in `doc/benchmarks/results/`.", ""]
    _write_if_changed(GENERATED / "benchmark_results.md", "\n".join(out))


# ----------------------------------------------------------------------


def _write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(app, config):
    GENERATED.mkdir(exist_ok=True)
    write_api()
    write_benchmarks()
    write_demo()


# ----------------------------------------------------------------------
# docstrings inherited from scikit-learn (get_params, score,
# set_fit_request, ...) use roles that only resolve inside scikit-learn's
# own documentation (its glossary, its user-guide labels): keep their text,
# drop those two roles.

_SKLEARN_ROLE = None


def plain_sklearn_roles(app, what, name, obj, options, lines):
    import re

    global _SKLEARN_ROLE
    if _SKLEARN_ROLE is None:
        _SKLEARN_ROLE = re.compile(r":(?:ref|term):`(?:([^`<]*?)\s*<[^`>]*>|([^`]*))`")
    module = getattr(obj, "__module__", "") or ""
    if not module.startswith("sklearn."):
        return
    for i, line in enumerate(lines):
        lines[i] = _SKLEARN_ROLE.sub(lambda m: m.group(1) or m.group(2), line)


# ----------------------------------------------------------------------
# numbers quoted in the guide: ```{adaprox-run}``` runs its Python code at
# build time and shows the code and what it printed (stdout and stderr), so
# that a number in the text is the output of the code beside it.


def _run_directive():
    import contextlib
    import io
    import warnings

    from docutils import nodes
    from docutils.parsers.rst import directives
    from sphinx.util.docutils import SphinxDirective

    class AdaproxRun(SphinxDirective):
        has_content = True
        option_spec = {"hide-code": directives.flag}

        def run(self):
            code = "\n".join(self.content)
            out = io.StringIO()
            namespace = {"__name__": "__adaprox_run__"}
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exec(compile(code, f"<{self.env.docname}: adaprox-run>", "exec"), namespace)
            result = []
            if "hide-code" not in self.options:
                block = nodes.literal_block(code, code)
                block["language"] = "python"
                result.append(block)
            text = out.getvalue().rstrip("\n")
            block = nodes.literal_block(text, text)
            block["language"] = "text"
            block["classes"].append("adaprox-run-output")
            result.append(block)
            return result

    return AdaproxRun


# ----------------------------------------------------------------------
# the gallery's time budget: an example that runs 60 s or more on the build
# machine fails the build (a warning, an error under -W); the environment
# variable SKLEARN_ADAPROX_EXAMPLE_TIME_LIMIT (seconds) overrides the budget

EXAMPLE_TIME_LIMIT_S = float(os.environ.get("SKLEARN_ADAPROX_EXAMPLE_TIME_LIMIT", 60))


def check_example_times(app, exception):
    import re

    from sphinx.util import logging

    if exception is not None:
        return
    times = DOC / "auto_examples" / "sg_execution_times.rst"
    if not times.exists():
        return
    text = times.read_text()
    pattern = re.compile(r"\(``(plot_[^`]+\.py)``\)\s*\n\s*- (\d+):(\d+(?:\.\d+)?)")
    for name, minutes, seconds in pattern.findall(text):
        elapsed = 60 * int(minutes) + float(seconds)
        if elapsed >= EXAMPLE_TIME_LIMIT_S:
            logging.getLogger(__name__).warning(
                f"example {name} took {elapsed:.0f} s, over the gallery's budget of "
                f"{EXAMPLE_TIME_LIMIT_S:.0f} s: subsample it (and say so in the example)")


def setup(app):
    # at config-inited: the API page must exist before Sphinx lists the
    # source files, which autosummary then scans for its stub pages
    app.connect("config-inited", generate)
    app.connect("autodoc-process-docstring", plain_sklearn_roles)
    app.add_directive("adaprox-run", _run_directive())
    app.connect("build-finished", check_example_times)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
