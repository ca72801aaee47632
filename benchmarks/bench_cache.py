"""What the observation cache buys, as exact invocation counts (docs/cost.md#what-it-buys).

A suite of N cases (half with a task check), 3 trials, arms with and without, run through
`skill-evals test --cache` with a runner that logs each invocation. Scenarios, each after a
full cached run:

- nothing changed: 0 invocations;
- one case's prompt edited: exactly trials × arms invocations, all of that case;
- only the skill changed: every `with` runs again, no `without` does;
- the base version was evaluated (a plain run of it), then the changed skill runs with the base
  version as its baseline (what `compare: base` does): at most the invocations of a plain run
  of the changed skill, since the baseline arm is the base run's `with`;
- the same through `skill-evals ci` with `compare: base` in a git repository (the base commit
  evaluated first with the same cache).

Each line prints the count, the reference and their ratio; the script exits 1 if any figure
misses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _common import REPO, verdict

N = 20
TRIALS = 3
RUNNER_SOURCE = """
import fcntl, json, os, sys
prompt = sys.stdin.read()
variant = os.environ["EVALGATE_SKILL_VARIANT"]
with open(os.environ["BENCH_LOG"], "a", encoding="utf-8") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write("%s %s %s\\n" % (os.environ["EVALGATE_SKILL_CASE_ID"],
             os.environ["EVALGATE_SKILL_TRIAL"], os.environ.get("SKILL_EVALS_ARM", variant)))
text = open(os.path.join(os.environ["EVALGATE_SKILL_DIR"], "SKILL.md"), encoding="utf-8").read()
name = [l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("name:")][0]
offered = variant == "with"
print(json.dumps({"variant": variant,
                  "invokedSkills": [name] if offered and "refund" in prompt else [],
                  "output": "answer", "exitCode": 0 if offered and "helps" in text else 1,
                  "meta": {"costUsd": 0.01, "inputTokens": 100, "outputTokens": 20}}))
"""


def write_skill(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: bench-skill\ndescription: Refunds and returns.\n---\n{body}\n",
        encoding="utf-8",
    )
    return directory


def write_cases(path: Path, edited: int | None = None) -> Path:
    rows = []
    for i in range(N):
        row: dict[str, object] = {
            "id": f"c{i}",
            "prompt": f"a refund question number {i}" + (" (edited)" if i == edited else ""),
            "expectTrigger": i % 3 != 0,
        }
        if i % 2 == 0:
            row["task"] = {"check": "exit_code", "expected": 0}
        rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class Bench:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.runner = root / "runner.py"
        self.runner.write_text(RUNNER_SOURCE, encoding="utf-8")
        self.log = root / "invocations.log"
        self.cache = root / "cache"
        self.env = {
            **os.environ,
            "BENCH_LOG": str(self.log),
            "PYTHONPATH": str(REPO / "src"),
        }

    def invocations(self, argv: list[str], cwd: Path | None = None) -> Counter[str]:
        """Run one command; the invocations it made, counted per arm."""
        self.log.unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "skill_evals", *argv],
            cwd=cwd or self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return Counter(line.split()[2] for line in lines)

    def test(
        self, skill: Path, cases: Path, *extra: str, cache: Path | None = None
    ) -> Counter[str]:
        return self.invocations(
            [
                "test", "--skill", str(skill), "--cases", str(cases), "--trials", str(TRIALS),
                "--runner", f"{sys.executable} {self.runner}",
                "--cache", str(cache or self.cache), "-q", *extra,
            ]
        )  # fmt: skip


def exact(name: str, measured: int, expected: int) -> bool:
    ok = measured == expected
    print(
        f"{name}: {measured} invocation(s), expected exactly {expected} {'PASS' if ok else 'FAIL'}"
    )
    return ok


def test_scenarios(root: Path) -> list[bool]:
    bench = Bench(root)
    skill = write_skill(root / "skill", "This helps.")
    cases = write_cases(root / "cases.jsonl")
    full = sum(bench.test(skill, cases).values())
    results = [exact("first run, empty cache", full, N * TRIALS * 2)]
    results.append(exact("unchanged re-run", sum(bench.test(skill, cases).values()), 0))
    write_cases(cases, edited=7)
    edited = bench.test(skill, cases)
    results.append(exact("one case edited (trials × arms)", sum(edited.values()), TRIALS * 2))
    base = root / "base" / "skill"
    shutil.copytree(skill, base)
    write_skill(skill, "This helps, now shorter.")
    changed = bench.test(skill, cases)
    results.append(exact("skill changed: with re-runs", changed["with"], N * TRIALS))
    results.append(exact("skill changed: without re-runs", changed["without"], 0))
    # compare: base by hand — the base version was evaluated before (its runs are in the
    # cache), then the next change runs with it as the baseline. The reference is a plain run
    # of the same change from the same cache (a copy of it, so neither helps the other).
    write_skill(skill, "This helps, third version.")
    shutil.copytree(bench.cache, root / "cache-plain")
    plain = sum(bench.test(skill, cases, cache=root / "cache-plain").values())
    compared = sum(bench.test(skill, cases, "--baseline", str(base)).values())
    results.append(
        verdict("test --baseline after the base was evaluated", compared, plain, 1.0, "")
    )
    return results


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def ci_scenario(root: Path) -> list[bool]:
    """`ci --all` on the base commit, then `ci --base` with compare: base on the change."""
    bench = Bench(root)
    repo = root / "repo"
    skill = write_skill(repo / "skills" / "bench-skill", "This helps.")
    write_cases(skill / "evals" / "cases.jsonl")
    (repo / ".skill-evals.yml").write_text(
        f"runner: {sys.executable} {bench.runner}\ntrials: {TRIALS}\ncache: {bench.cache}\n",
        encoding="utf-8",
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    bench.invocations(["ci", "--all", "--out", str(root / "out-base"), "-q"], cwd=repo)
    write_skill(skill, "This helps, better.")
    git(repo, "commit", "-q", "-am", "change")
    # The reference: a plain run of the change from a copy of the same cache.
    shutil.copytree(bench.cache, root / "cache-plain")
    plain_argv = ["ci", "--out", str(root / "out-plain"), "-q", "--base", "HEAD~1"]
    plain = sum(
        bench.invocations([*plain_argv, "--cache", str(root / "cache-plain")], repo).values()
    )
    compared = bench.invocations(
        ["ci", "--out", str(root / "out-compare"), "-q", "--base", "HEAD~1", "--compare", "base"],
        cwd=repo,
    )  # fmt: skip
    report = json.loads((root / "out-compare" / "report.json").read_text(encoding="utf-8"))
    ledger = report["skills"][0]["report"]["runner"]["ledger"]
    print(f"ci compare: base: ran {dict(compared)}, reused per arm "
          f"{ {a: v['cached'] for a, v in ledger['arms'].items()} }")  # fmt: skip
    return [verdict("ci compare: base after the base commit was evaluated", sum(compared.values()),
                    plain, 1.0, "")]  # fmt: skip


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        root = Path(tmp)
        (root / "test").mkdir()
        (root / "ci").mkdir()
        results = test_scenarios(root / "test") + ci_scenario(root / "ci")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
