"""Hostile inputs never crash the process, corrupt memory or leave a damaged
model: every case of ``hostile_cases.py``, for every estimator
configuration and every method, behaves as documented.

* malformed sparse structure (CSR, CSC, COO; bad indices, indptr, lengths,
  arrays replaced after construction, out-of-range index dtypes) raises
  ``ValueError("Malformed sparse matrix X: ...")``;
* non-finite X, y or sample_weight raise scikit-learn's ValueError; huge
  values are refused naming the input and suggesting scaling, or learnt
  (never a NaN or all-zero model); invalid class weights, labels and shapes
  raise ValueError; an over-wide X raises (MemoryError or ValueError);
* after any exception the estimator's pickled bytes are unchanged, and a
  prediction method never changes them;
* valid variants (strided arrays, other index dtypes and formats, unsorted
  or duplicated entries, read-only or memory-mapped state) give the model
  (or the predictions) of their canonical twin.

The cases run in worker subprocesses, one per configuration (see
``hostile_cases.run_jobs``): a crash fails the tests of that configuration
instead of killing the test session, and the configuration is then run
again job by job in forked children so the failure names the culprit.
"""
import pytest

import hostile_cases as hc


def _pair_of(item):
    callspec = getattr(item, "callspec", None)
    if callspec is None or "case_name" not in callspec.params:
        return None
    return callspec.params["config"], callspec.params["case_name"]


@pytest.fixture(scope="module")
def outcomes(request):
    """{(config, case, method): outcome} of every job of the tests selected
    in this session, from one worker subprocess (computed once)."""
    selected = {_pair_of(item) for item in request.session.items
                if item.module is request.module}
    jobs = [job for job in hc.all_jobs() if (job[0], job[1]) in selected]
    results = hc.run_jobs(jobs, isolate="batch", one_worker=True)
    return {tuple(r["job"]): r for r in results}


PAIRS = [
    (config, name)
    for config in hc.CONFIGS
    for name, case in hc.CASES.items()
    if case.family != "selfcheck" and case.in_tests
    and any(case.applies(config, m) for m in hc.METHODS)
]


def _describe(method, result):
    text = f"{method}: {result['outcome']}"
    if result.get("detail"):
        text += f" ({result['detail']})"
    if result.get("error"):
        text += f" [{result['error']['type']}: {result['error']['message'][:200]}]"
    return text


@pytest.mark.parametrize("config, case_name", PAIRS, ids=[f"{c}-{n}" for c, n in PAIRS])
def test_hostile_input(config, case_name, outcomes):
    case = hc.CASES[case_name]
    failures = []
    for method in hc.METHODS:
        if not case.applies(config, method):
            continue
        result = outcomes[(config, case_name, method)]
        if result["outcome"] not in case.expected:
            failures.append(_describe(method, result))
        elif result["outcome"] == "clean_error" and result["message_ok"] is False:
            failures.append(_describe(method, result) + " -- not the documented message")
    assert not failures, (
        f"{case_name} ({case.family}) on {config}: expected {case.expected}\n"
        + "\n".join(failures)
    )


def test_every_malformed_structure_reaches_every_estimator_and_method():
    """The issue's list: each malformed-CSR case is tried on every
    configuration with fit, partial_fit, predict and decision_function."""
    malformed = [n for n, c in hc.CASES.items() if c.family == "sparse_structure"]
    assert len(malformed) >= 20
    for config in hc.CONFIGS:
        wanted = {"fit", "partial_fit", "partial_fit_fitted", "predict"}
        if hc.config_task(config) != "regression":
            wanted.add("decision_function")
        for name in malformed:
            applied = {m for m in hc.METHODS if hc.CASES[name].applies(config, m)}
            assert wanted <= applied, (config, name, wanted - applied)


def test_harness_detects_crash_heap_report_and_acceptance():
    """The harness itself: a segfault is a crash named at its job (the batch
    is re-run job by job), an allocator report is corruption, an accepted
    input that must be refused is silent_wrong, and the other jobs of the
    batch are unaffected."""
    jobs = [
        ("adagrad", "base_data_sparse", "fit"),
        ("adagrad", "selfcheck_segfault", "fit"),
        ("adagrad", "selfcheck_heap_report", "predict"),
        ("adagrad", "selfcheck_valid_input_must_be_refused", "fit"),
        ("adagrad", "base_data_dense", "predict"),
    ]
    outcomes = [r["outcome"] for r in hc.run_jobs(jobs, isolate="batch")]
    assert outcomes == ["ok", "crash", "corruption", "silent_wrong", "ok"]
