"""Helpers for the routing tests: a small catalog, case files, observation files, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from skill_evals.schemas import load_schema
from tests.conftest import REPO, write_jsonl, write_skill

ROUTER = REPO / "tests" / "runners" / "router.py"

DESCRIPTIONS = {
    "alpha": "Answer questions about alpha widgets and their alpha settings.",
    "beta": "Answer questions about beta gadgets and beta configuration.",
    "gamma": "Answer questions about gamma tools.",
    "delta": "Answer questions about delta reports.",
}


def make_catalog(root: Path, names: Sequence[str] = ("alpha", "beta", "gamma")) -> list[Path]:
    """Skill dirs under ``root/skills`` (created in the order given)."""
    return [
        write_skill(root / "skills", name, DESCRIPTIONS.get(name, f"Answer {name} questions."))
        for name in names
    ]


def route_cases(path: Path, expects: Mapping[str, Sequence[str]], pad_to: int = 10) -> Path:
    """A routing case file: one case per (id → expect); padded with distinct E=∅ cases so the
    file has at least ``pad_to`` units."""
    records: list[dict[str, Any]] = [
        {"id": cid, "prompt": f"prompt for {cid}", "expect": list(expect)}
        for cid, expect in expects.items()
    ]
    for i in range(max(0, pad_to - len(records))):
        records.append({"id": f"pad-{i}", "prompt": f"padding prompt {i}", "expect": []})
    return write_jsonl(path, records)


def observation_file(path: Path, loads: Mapping[str, Sequence[Sequence[str]]]) -> Path:
    """One observation per (case, trial): ``loads[case]`` lists each trial's invokedSkills."""
    records = [
        {
            "caseId": cid,
            "trial": t,
            "variant": "with",
            "invokedSkills": list(skills),
            "output": "x",
            "exitCode": 0,
        }
        for cid, trials in loads.items()
        for t, skills in enumerate(trials, start=1)
    ]
    return write_jsonl(path, records)


def assert_valid_route_report(report: Mapping[str, Any]) -> None:
    """Validate against the shipped route-report schema."""
    jsonschema.Draft202012Validator(load_schema("route-report.schema.json")).validate(report)


def run_route(
    args: Iterable[str], cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m skill_evals route ARGS``."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "route", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=300,
        check=False,
    )


def route_json(args: Iterable[str], cwd: Path | None = None) -> tuple[int, dict[str, Any], str]:
    """Run with --format json; (exit code, validated report, stderr)."""
    done = run_route([*args, "--format", "json", "-q"], cwd=cwd)
    report = json.loads(done.stdout)
    assert_valid_route_report(report)
    assert report["exitCode"] == done.returncode
    return done.returncode, report, done.stderr


def router_command(mapping: Path, *extra: str) -> str:
    """The --runner string of tests/runners/router.py."""
    parts = [sys.executable, str(ROUTER), "--map", str(mapping), *extra]
    return " ".join(f"'{p}'" for p in parts)
