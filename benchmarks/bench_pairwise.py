"""Pairwise judging with a position-biased judge: accuracy and confident wrong winners.

Each seeded run is 20 pairs (one case each, one trial) through `skill-evals test` with a table
runner and the judge of benchmarks/_pair_scripts.py, offline: every answer has a true quality,
the two answers of a pair differ by 0.02–0.3 (uniform, either arm better); when they differ by
less than 0.2 (close) the judge names the first position 70 % of the time, else the better
answer 4 times in 5; its absolute grades are the quality plus noise (sd 0.1). A pair is *right*
when the preference names the better answer and a *confident wrong winner* when it names the
worse one (a tie is neither). The figures are the means over SEEDS runs per 20 pairs, for
`--judge-fallback tie` (inconsistent asks are ties) and `--judge-fallback absolute` (they are
decided by the two grades past the 0.05 margin). Goal: accuracy ≥ 0.75 with ≤ 2.5 wrong winners
per 20 (absolute).

Usage: python benchmarks/bench_pairwise.py [--seeds N]
"""

from __future__ import annotations

import json
import random
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "_pair_scripts.py"
PAIRS = 20
SEEDS = 10
SKILL = "notes-skill"


def _suite(root: Path, seed: int) -> list[int]:
    """Write the skill, the cases and the table of one seed; return each pair's better arm
    (+1 with, -1 without)."""
    rng = random.Random(seed)
    skill = root / SKILL
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: Write release notes from a changelog.\n---\n# Notes\n"
    )
    cases, table, truth = [], {}, []
    for i in range(PAIRS):
        base, gap = rng.uniform(0.2, 0.5), rng.uniform(0.02, 0.3)
        better = 1 if rng.random() < 0.5 else -1
        q_with, q_without = (base + gap, base) if better > 0 else (base, base + gap)
        truth.append(better)
        case_id = f"c{i}"
        prompt = f"Write the release notes of version 1.{i}"
        task = [{"check": "judge_pairwise", "rubric": "Which notes are clearer for users?"}]
        cases.append({"id": case_id, "prompt": prompt, "expectTrigger": True, "task": task})
        table[case_id] = {"with": f"notes {i} [[q={q_with:.3f}]]",
                          "without": f"other {i} [[q={q_without:.3f}]]"}  # fmt: skip
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "table.json").write_text(json.dumps({"skill": SKILL, "cases": table}))
    return truth


def _run(root: Path, seed: int, fallback: str) -> tuple[int, int, int]:
    """One run: (right, wrong winners, judge calls)."""
    runner = shlex.join([sys.executable, str(SCRIPTS), "runner", str(root / "table.json")])
    judge = shlex.join([sys.executable, str(SCRIPTS), "judge", f"--seed={seed}"])
    args = ["test", "--skill", SKILL, "--cases", "cases.jsonl", "--trials", "1", "-q",
            "--runner", runner, "--judge", judge, "--judge-fallback", fallback,
            "--seed", str(seed), "--format", "json", "--jobs", "2"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", *args],
        cwd=root, capture_output=True, text=True, check=False,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    report = json.loads(done.stdout)
    truth = json.loads((root / "truth.json").read_text())
    prefs = [c["preference"]["without"][0] for c in report["caseResults"]]
    right = sum(1 for p, t in zip(prefs, truth, strict=True) if p == t)
    wrong = sum(1 for p, t in zip(prefs, truth, strict=True) if p == -t)
    return right, wrong, int(report["judge"]["calls"])


def main(argv: list[str]) -> int:
    seeds = int(argv[argv.index("--seeds") + 1]) if "--seeds" in argv else SEEDS
    ok = True
    for fallback in ("tie", "absolute"):
        right = wrong = calls = 0
        for seed in range(1, seeds + 1):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                (root / "truth.json").write_text(json.dumps(_suite(root, seed)))
                r, w, c = _run(root, seed, fallback)
            right, wrong, calls = right + r, wrong + w, calls + c
        accuracy, wrong_per_20 = right / (PAIRS * seeds), wrong * 20 / (PAIRS * seeds)
        met = accuracy >= 0.75 and wrong_per_20 <= 2.5
        if fallback == "absolute":
            ok = met
        print(
            f"--judge-fallback {fallback}: accuracy {accuracy:.2f}, confident wrong winners "
            f"{wrong_per_20:.1f} per 20, judge calls {calls / seeds:.1f} per 20 pairs"
            + (f" (goal ≥ 0.75 and ≤ 2.5: {'PASS' if met else 'FAIL'})" * (fallback == "absolute"))
        )
    print("BENCH " + json.dumps({"name": "pairwise-absolute", "accuracy": accuracy,
                                 "wrongPer20": wrong_per_20, "pass": ok}))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
