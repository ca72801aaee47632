"""Scoring --observations is linear — a 50 MB observations file is validated and scored
in at most 3× the time a bare ``json.loads`` loop over its lines takes.

Two files, both just under the 50 MB input limit:
- short outputs, many trials: 2,000 cases (every one with an exit_code task check) × 100
  trials × 2 variants = 400,000 observation lines;
- long outputs, many cases: 10,000 trigger-only cases × 3 trials × 2 variants = 60,000 lines
  with ~800-byte outputs (a large report: one result per case).
Scoring is the whole `test --observations --format json` pipeline (strict reading,
completeness checks, trigger metrics, uplift with the minimum 1,000 bootstrap samples — the
bootstrap's own O(B·n) cost is measured by bench_bootstrap.py — and the JSON report). Both
sides are the median of REPEAT runs, taken alternately after one warm-up scoring (lazy imports,
page cache). For the first file it also prints the same for a quarter of the file (linear
growth) and, when NumPy is installed, one scoring with NumPy hidden (the pure-Python bootstrap).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from _common import verdict, write_cases, write_skill

from skill_evals.pipeline import TestOptions, run_test
from skill_evals.report.json import render_json

CASES = 2000
TRIALS = 100
TARGET_BYTES = 49_500_000  # just under the 50,000,000-byte input limit
REPEAT = 5
LONG_CASES = 10_000
LONG_TRIALS = 3


def write_observations(path: Path, cases: int, trials: int, pad: int, task: bool = True) -> int:
    """The observations of ``cases`` × ``trials`` × with/without; outputs padded by ``pad``
    characters of prose; with ``task`` an exit code that the task check reads."""
    filler = ("lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(cases):
            for trial in range(1, trials + 1):
                for variant in ("with", "without"):
                    triggered = variant == "with" and (i + trial) % 3 != 0
                    passed = variant == "with" or trial % 2 or not task
                    fh.write(
                        json.dumps(
                            {
                                "caseId": f"case-{i}",
                                "trial": trial,
                                "variant": variant,
                                "invokedSkills": ["bench-skill"] if triggered else [],
                                "output": f"answer {i} {filler}",
                                "exitCode": 0 if passed else 1,
                            },
                            separators=(",", ":"),
                        )
                        + "\n"
                    )
    return path.stat().st_size


def bare_loop(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as fh:
        for line in fh:
            json.loads(line)
    return time.perf_counter() - start


def score(skill: Path, cases: Path, observations: Path, trials: int) -> float:
    options = TestOptions(
        skill=skill,
        cases=cases,
        observations=observations,
        trials=trials,
        bootstrap_samples=1000,
    )
    start = time.perf_counter()
    report = run_test(options)
    render_json(report)
    elapsed = time.perf_counter() - start
    assert report["exitCode"] == 0, report["messages"]
    return elapsed


def score_without_numpy(skill: Path, cases: Path, observations: Path, trials: int) -> float | None:
    """One scoring with ``import numpy`` failing (the engine then takes the pure-Python
    bootstrap), or None when NumPy is not installed anyway."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return None
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "numpy"}
    sys.modules["numpy"] = None  # type: ignore[assignment]  # makes `import numpy` raise
    try:
        return score(skill, cases, observations, trials)
    finally:
        del sys.modules["numpy"]
        sys.modules.update(saved)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=CASES, help="cases (default %(default)s)")
    parser.add_argument(
        "--trials", type=int, default=TRIALS, help="trials, >= 4 (default %(default)s)"
    )
    parser.add_argument(
        "--pad", type=int, default=None, help="filler characters per output (default: fill 50 MB)"
    )
    parser.add_argument(
        "--skip-long", action="store_true", help="skip the long-outputs file (10,000 cases)"
    )
    args = parser.parse_args(argv)
    n_cases, trials = args.cases, max(4, args.trials)
    lines = n_cases * trials * 2
    # A line is ~112 bytes before padding; by default pad up to just under the input limit.
    pad = args.pad if args.pad is not None else max(0, TARGET_BYTES // lines - 113)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skill = write_skill(root)
        cases = write_cases(root / "cases.jsonl", n_cases)
        full = root / "observations.jsonl"
        size = write_observations(full, n_cases, trials, pad)
        quarter = root / "quarter.jsonl"
        write_observations(quarter, n_cases, trials // 4, pad)
        print(
            f"file: {size / 1e6:.1f} MB, {lines} lines ({n_cases} cases × {trials} trials × 2); "
            f"median of {REPEAT} runs"
        )
        score(skill, cases, quarter, trials // 4)  # warm-up
        # Baseline and scoring alternate, so a shared machine's drifting speed hits both alike.
        times: dict[str, list[float]] = {"bare": [], "score": [], "quarter bare": [], "quarter": []}
        for _ in range(REPEAT):
            times["quarter bare"].append(bare_loop(quarter))
            times["quarter"].append(score(skill, cases, quarter, trials // 4))
            times["bare"].append(bare_loop(full))
            times["score"].append(score(skill, cases, full, trials))
        bare, full_time = median(times["bare"]), median(times["score"])
        quarter_bare, quarter_time = median(times["quarter bare"]), median(times["quarter"])
        print(
            f"bare json.loads loop: quarter {quarter_bare:.2f} s, whole {bare:.2f} s "
            f"({bare / lines * 1e6:.2f} µs per line)"
        )
        print(
            f"scoring: quarter {quarter_time:.2f} s, whole {full_time:.2f} s "
            f"(×{full_time / quarter_time:.2f} for ×4 the lines; "
            f"{full_time / lines * 1e6:.2f} µs per line)"
        )
        # The quarter has the same cases, so the fixed per-case costs (cases file, bootstrap
        # over one unit per case, the report) weigh more there; the cost of the extra lines
        # between the two sizes is the per-line figure.
        extra = lines - n_cases * (trials // 4) * 2
        print(
            f"scoring / bare loop: quarter {quarter_time / quarter_bare:.2f}, whole "
            f"{full_time / bare:.2f}; per extra line: scoring "
            f"{(full_time - quarter_time) / extra * 1e6:.2f} µs, bare "
            f"{(bare - quarter_bare) / extra * 1e6:.2f} µs"
        )
        pure = score_without_numpy(skill, cases, full, trials)
        if pure is not None:
            print(
                f"scoring the whole without NumPy (pure-Python bootstrap, one run): {pure:.2f} s "
                f"→ ratio {pure / bare:.2f}"
            )
    name = "observations 50 MB vs bare json.loads loop"
    if (n_cases, trials, args.pad) != (CASES, TRIALS, None):
        name = f"observations {size / 1e6:.1f} MB ({n_cases} × {trials}) vs bare json.loads loop"
    ok = verdict(name, full_time, bare, 3.0)
    if not args.skip_long:
        ok = long_outputs() and ok
    return 0 if ok else 1


def long_outputs() -> bool:
    """The second file: many trigger-only cases with long outputs, so the per-case work (the
    cases file, one result per case in the JSON report) weighs as much as the lines."""
    n_cases, trials = LONG_CASES, LONG_TRIALS
    lines = n_cases * trials * 2
    pad = max(0, TARGET_BYTES // lines - 113)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skill = write_skill(root)
        cases = write_cases(root / "cases.jsonl", n_cases, task=False)
        path = root / "observations.jsonl"
        size = write_observations(path, n_cases, trials, pad, task=False)
        print(
            f"file: {size / 1e6:.1f} MB, {lines} lines ({n_cases} trigger-only cases × {trials} "
            f"trials × 2, {pad}-character outputs); median of {REPEAT} runs"
        )
        score(skill, cases, path, trials)  # warm-up
        bare_times, score_times = [], []
        for _ in range(REPEAT):
            bare_times.append(bare_loop(path))
            score_times.append(score(skill, cases, path, trials))
        bare, scored = median(bare_times), median(score_times)
    return verdict(
        f"observations {size / 1e6:.0f} MB, long outputs ({n_cases} cases) vs bare json.loads loop",
        scored,
        bare,
        3.0,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
