"""Census of hostile inputs: run every (case x estimator configuration x
method) of ``tests/hostile_cases.py`` and count the outcomes.

    python benchmarks/hostile_census.py [--json out.json] [--mode fork|batch]
                                        [--configs a,b] [--families x,y]

The package measured is the one ``import sklearn_adaprox`` finds (set
PYTHONPATH to the checkout to measure).  Outcomes (see hostile_cases.py):
ok, clean_error, crash, corruption, silent_wrong, wrong_error.  By default
every job runs in its own forked child (``--mode fork``), so one job's
crash or heap damage cannot be blamed on another, and glibc's checking
allocator is preloaded so heap damage is reported close to its cause.  With
``--teardown`` a child that accepted an input it should have refused exits
through the interpreter's full finalisation, where damage to long-lived
objects shows (slower).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import hostile_cases as hc  # noqa: E402


def describe_code():
    """Where the measured package lives, and its git commit if any."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn_adaprox")
    root = os.path.dirname(os.path.dirname(spec.origin))
    try:
        commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return root, commit


def table(rows, columns, counts, row_title):
    width = max([len(row_title)] + [len(r) for r in rows]) + 2
    header = row_title.ljust(width) + "".join(c.rjust(13) for c in columns) + "total".rjust(8)
    lines = [header, "-" * len(header)]
    for r in rows:
        cells = [counts[r].get(c, 0) for c in columns]
        lines.append(r.ljust(width) + "".join(str(x).rjust(13) for x in cells)
                     + str(sum(cells)).rjust(8))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write every outcome and the summary here")
    parser.add_argument("--mode", choices=("fork", "batch"), default="fork")
    parser.add_argument("--configs", help="comma-separated configurations (default: all)")
    parser.add_argument("--families", help="comma-separated case families (default: all)")
    parser.add_argument("--no-malloc-check", action="store_true",
                        help="do not preload glibc's checking allocator")
    parser.add_argument("--teardown", action="store_true",
                        help="fork mode: a child that accepted malformed input exits "
                             "through the interpreter's finalisation, which finds more "
                             "heap damage (about 0.3 s per such job)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds before a job counts as hung (a crash)")
    args = parser.parse_args()

    configs = args.configs.split(",") if args.configs else None
    jobs = hc.all_jobs(configs=configs)
    if args.families:
        families = set(args.families.split(","))
        jobs = [j for j in jobs if hc.CASES[j[1]].family in families]
    root, commit = describe_code()
    print(f"package: {root} (commit {commit})")
    print(f"{len(jobs)} jobs: {len({j[1] for j in jobs})} cases x "
          f"{len({j[0] for j in jobs})} configurations x methods, mode {args.mode}")

    start = time.perf_counter()

    def progress(config, results):
        counts = collections.Counter(r["outcome"] for r in results)
        print(f"  {config:22s} {len(results):5d} jobs  "
              + "  ".join(f"{k}={counts[k]}" for k in hc.OUTCOMES if counts[k])
              + f"  [{time.perf_counter() - start:.0f} s]", flush=True)

    results = hc.run_jobs(jobs, isolate=args.mode, timeout=args.timeout,
                          malloc_check=not args.no_malloc_check, progress=progress,
                          teardown=args.teardown)
    elapsed = time.perf_counter() - start

    outcomes = list(hc.OUTCOMES)
    extra = sorted({r["outcome"] for r in results} - set(outcomes))
    outcomes += extra  # e.g. harness_error: a defect of the cases themselves
    by_outcome = collections.Counter(r["outcome"] for r in results)
    by_family = collections.defaultdict(collections.Counter)
    by_config = collections.defaultdict(collections.Counter)
    for r in results:
        config, case, _ = r["job"]
        by_family[hc.CASES[case].family][r["outcome"]] += 1
        by_config[config][r["outcome"]] += 1
    undocumented = [r for r in results
                    if r["outcome"] == "clean_error" and r.get("message_ok") is False]
    # what the documented behaviour allows: a case fails when its outcome is
    # not among them (or a clean error lacks the documented message)
    failing = [r for r in results
               if r["outcome"] not in hc.CASES[r["job"][1]].expected
               or (r["outcome"] == "clean_error" and r.get("message_ok") is False)]

    print(f"\n{len(results)} (case x configuration x method) combinations in {elapsed:.0f} s")
    print("\nper outcome:")
    for o in outcomes:
        print(f"  {o:14s} {by_outcome.get(o, 0):6d}")
    print(f"  (clean errors without the documented message: {len(undocumented)})")
    print(f"  combinations not as documented: {len(failing)}")
    print("\nper case family:")
    print(table(sorted(by_family), outcomes, by_family, "family"))
    print("\nper configuration:")
    print(table(list(dict.fromkeys(j[0] for j in jobs)), outcomes, by_config, "configuration"))

    examples = collections.defaultdict(list)
    for r in results:
        if r["outcome"] in ("crash", "corruption", "silent_wrong", "wrong_error", "harness_error"):
            examples[r["outcome"]].append(r)
    for outcome, rs in examples.items():
        print(f"\nexamples of {outcome} ({len(rs)}):")
        seen = set()
        for r in rs:
            case = r["job"][1]
            if case in seen:
                continue
            seen.add(case)
            detail = r.get("detail") or ""
            if r.get("error"):
                detail += f" [{r['error']['type']}: {r['error']['message'][:80]}]"
            print(f"  {'/'.join(r['job']):60s} {detail[:150]}")
            if len(seen) >= 12:
                break

    if args.json:
        summary = {
            "package": root, "commit": commit, "mode": args.mode,
            "n_jobs": len(results), "seconds": round(elapsed, 1),
            "per_outcome": dict(by_outcome),
            "per_family": {k: dict(v) for k, v in by_family.items()},
            "per_configuration": {k: dict(v) for k, v in by_config.items()},
            "clean_errors_without_documented_message": len(undocumented),
            "not_as_documented": len(failing),
        }
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "results": results}, f, indent=0)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
