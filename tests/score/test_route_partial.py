"""Routing gates of a run stopped by a runner failure are not verdicts: `passed` null,
`partial` true, "partial: k of n, not decided" in the text, an error (never a pass) in JUnit.
Real `skill-evals route` subprocesses with the scripted router and a private TMPDIR."""

from __future__ import annotations

import json
import os
from pathlib import Path

import junitparser

from tests._route_helpers import (
    assert_valid_route_report,
    make_catalog,
    route_cases,
    router_command,
    run_route,
)
from tests.cli.test_route_cli import EXPECTS, LOADS


def test_gates_of_a_stopped_routing_run_are_partial(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    cases = route_cases(tmp_path / "routing.jsonl", EXPECTS)
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(LOADS), encoding="utf-8")
    junit = tmp_path / "junit.xml"
    report_path = tmp_path / "report.json"
    args = [
        *[a for d in dirs for a in ("--skill", str(d))],
        *("--cases", str(cases), "--runner", router_command(mapping, "--fail-case", "c4")),
        *("--trials", "1", "--jobs", "1", "--min-accuracy", "0.1", "--min-skill-f1", "0.1"),
        *("--report", str(report_path)),
    ]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp), "PATH": os.environ.get("PATH", "")}
    done = run_route(args, env=env)
    assert done.returncode == 7, done.stderr[-3000:]
    junit.write_text(run_route([*args, "--format", "junit"], env=env).stdout, encoding="utf-8")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert_valid_route_report(report)
    observed, planned = report["coverage"]["observed"], report["coverage"]["planned"]
    assert 0 < observed < planned
    for key in ("minAccuracy", "minSkillF1"):
        gate = report["gates"][key]
        assert gate["passed"] is None and gate["partial"] is True, key
    assert f"(partial: {observed} of {planned}, not decided)" in done.stdout
    xml = junitparser.JUnitXml.fromfile(str(junit))
    results = {case.name: case.result for suite in xml for case in suite}
    assert results["accuracy"] and isinstance(results["accuracy"][0], junitparser.Error)
    f1_cases = [name for name in results if name.startswith("skill-f1[")]
    assert f1_cases and all(isinstance(results[n][0], junitparser.Error) for n in f1_cases)
