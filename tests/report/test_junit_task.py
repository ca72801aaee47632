"""``task[<case id>]`` testcases in every JUnit output (test --junit, ci, ci merge), from real
runs whose scripted runner fails some cases' tasks in some trials only: read with junitparser
and validated against the junit-10-like schema with xmllint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from tests.ci.conftest import commit_all, git, run_cli
from tests.ci.test_junit_schema import assert_schema_valid
from tests.conftest import REPO, write_jsonl, write_skill

TASKY = REPO / "tests" / "runners" / "tasky.py"
pytestmark = pytest.mark.skipif(shutil.which("xmllint") is None, reason="xmllint not installed")

# c-flaky fails its task with the skill in trial 2 only; c-broken's with runs are all runner
# failures; c-late fails in trials 1 and 3; c-ok passes; c-route has no task check.
CASES = [
    {"id": "c-ok", "prompt": "refund question one", "expectTrigger": True,
     "task": {"check": "includes_all", "expected": ["ok"]}},
    {"id": "c-route", "prompt": "weather today", "expectTrigger": False},
    {"id": "c-flaky", "prompt": "refund question two", "expectTrigger": True,
     "task": {"check": "includes_all", "expected": ["ok"]}},
    {"id": "c-broken", "prompt": "refund question three", "expectTrigger": True,
     "task": {"check": "includes_all", "expected": ["ok"]}},
    {"id": "c-late", "prompt": "refund question four", "expectTrigger": True,
     "task": {"check": "includes_all", "expected": ["ok"]}},
]  # fmt: skip
# at least ten independent cases make a run sufficient
CASES += [
    {"id": f"c-more-{i}", "prompt": f"other topic {i}", "expectTrigger": False} for i in range(6)
]
RULES = ["c-flaky:2:fail", "c-broken:*:error", "c-late:1,3:fail"]


def _runner(skill: str) -> str:
    return " ".join([sys.executable, str(TASKY), skill, *RULES])


def _cases(suite: Any) -> dict[str, Any]:
    return {case.name: case for case in suite}


@pytest.fixture(scope="module")
def test_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One `test --junit` run over three trials, --keep-going past the runner failures."""
    tmp = tmp_path_factory.mktemp("task-junit")
    skill = write_skill(tmp / "skills", "refund-policy")
    cases = write_jsonl(tmp / "cases.jsonl", CASES)
    junit = tmp / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", _runner("refund-policy"), "--trials", "3", "--jobs", "2",
         "--keep-going", "--junit", str(junit), "--format", "json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return {"done": done, "junit": junit, "report": json.loads(done.stdout)}


def test_task_testcases_mark_the_failing_cases(test_run: dict[str, Any]) -> None:
    root = assert_schema_valid(test_run["junit"])
    (suite,) = list(root)
    cases = _cases(suite)
    names = [case.name for case in suite]
    # in case-file order, right after the trigger[...] testcases; no task[] for c-route
    task_names = [n for n in names if n.startswith("task[")]
    assert task_names == ["task[c-ok]", "task[c-flaky]", "task[c-broken]", "task[c-late]"]
    last_trigger = max(i for i, n in enumerate(names) if n.startswith("trigger["))
    assert names.index("task[c-ok]") == last_trigger + 1
    assert cases["task[c-ok]"].result == []
    # no uplift gate failed: the failed trials are noted (system-out and a property), not failed
    flaky = cases["task[c-flaky]"]
    assert flaky.result == []
    note = "failed in 1 of 3 trials with the skill: " + _reason(test_run["report"], "c-flaky")
    assert flaky.system_out == note
    assert {p.name: p.value for p in suite.properties()}["task[c-flaky]"] == note
    late = cases["task[c-late]"]
    assert late.result == [] and (late.system_out or "").startswith("failed in 2 of 3 trials")
    (broken,) = cases["task[c-broken]"].result
    assert isinstance(broken, Error) and "scripted failure" in broken.message
    # the aggregate testcases stay, and the suite counts include the task testcases
    assert {"uplift", "trigger"} <= set(names)
    assert suite.tests == len(names)
    assert suite.failures == sum(isinstance(c.result[0], Failure) for c in suite if c.result)
    assert suite.errors == sum(isinstance(c.result[0], Error) for c in suite if c.result)


def _reason(report: dict[str, Any], case_id: str) -> str:
    (result,) = [r for r in report["caseResults"] if r["id"] == case_id]
    assert result["failedCheck"]["variant"] == "with"
    reason: str = result["failedCheck"]["reason"]
    assert "done" not in reason  # the reason never quotes the output
    return reason


def test_without_results_never_fail_the_task_testcase(test_run: dict[str, Any]) -> None:
    """Every without run fails its task (no `ok`), yet c-ok's testcase passes."""
    report = test_run["report"]
    (ok,) = [r for r in report["caseResults"] if r["id"] == "c-ok"]
    assert ok["without"] == [False, False, False] and ok["with"] == [True, True, True]
    cases = _cases(next(iter(JUnitXml.fromfile(str(test_run["junit"])))))
    assert cases["task[c-ok]"].result == []


def test_cases_that_never_ran_are_skipped(tmp_path: Path) -> None:
    """Fail-fast after the first runner failure: the task cases after it are `not run`."""
    skill = write_skill(tmp_path / "skills", "refund-policy")
    cases = write_jsonl(tmp_path / "cases.jsonl", [CASES[3], *CASES[:1], *CASES[4:], CASES[2]])
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", _runner("refund-policy"), "--trials", "1", "--jobs", "1",
         "--junit", str(junit), "--quiet"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 7, done.stderr[-2000:]
    cases_by_name = _cases(next(iter(assert_schema_valid(junit))))
    assert isinstance(cases_by_name["task[c-broken]"].result[0], Error)
    for name in ("task[c-ok]", "task[c-late]"):
        (skipped,) = cases_by_name[name].result
        assert isinstance(skipped, Skipped) and skipped.message.startswith("not run: ")


@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two ci shards over a repo (the scripted runner per skill) and their merge."""
    tmp = tmp_path_factory.mktemp("task-ci")
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    overrides = []
    for name in ("alpha", "beta"):
        skill = write_skill(repo / "skills", name)
        (skill / "evals").mkdir()
        write_jsonl(skill / "evals" / "cases.jsonl", CASES)
        overrides.append(f"  {name}: {{runner: {json.dumps(_runner(name))}}}")
    config = "trials: 3\nkeep-going: true\nstop-when-settled: false\noverrides:\n"
    (repo / ".skill-evals.yml").write_text(config + "\n".join(overrides) + "\n", "utf-8")
    commit_all(repo, "initial")
    outs = {}
    for name in ("alpha", "beta"):
        outs[name] = tmp / name
        done = run_cli(["ci", "--all", "--only", name, "--out", str(outs[name])], repo)
        assert done.returncode in (0, 1, 7), done.stderr[-2000:]
    outs["merged"] = tmp / "merged"
    done = run_cli(["ci", "merge", str(outs["alpha"]), str(outs["beta"]), "--out",
                    str(outs["merged"])], tmp)  # fmt: skip
    assert done.returncode in (0, 1, 7), done.stderr[-2000:]
    return outs


@pytest.mark.parametrize("which", ["alpha", "merged"])
def test_ci_and_merge_junit_hold_the_task_testcases(ci_runs: dict[str, Path], which: str) -> None:
    root = assert_schema_valid(ci_runs[which] / "junit.xml")
    suites = {suite.name: suite for suite in root}
    assert set(suites) == ({"alpha"} if which == "alpha" else {"alpha", "beta"})
    for suite in suites.values():
        cases = _cases(suite)
        assert cases["task[c-ok]"].result == []
        assert cases["task[c-flaky]"].result == []
        assert "failed in 1 of 3 trials" in (cases["task[c-flaky]"].system_out or "")
        assert isinstance(cases["task[c-broken]"].result[0], Error)
        assert "task[c-route]" not in cases


def _gate_run(tmp: Path, rules: list[str], *extra: str) -> tuple[int, Any, dict[str, Any]]:
    """A `test --junit` run of ten task cases with the scripted runner."""
    tmp.mkdir()
    skill = write_skill(tmp / "skills", "refund-policy")
    cases = [
        {"id": f"t{i}", "prompt": f"refund question {i}", "expectTrigger": True,
         "task": {"check": "includes_all", "expected": ["ok"]}}
        for i in range(10)
    ]  # fmt: skip
    junit = tmp / "junit.xml"
    runner = " ".join([sys.executable, str(TASKY), "refund-policy", *rules])
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(write_jsonl(tmp / "cases.jsonl", cases)), "--runner", runner, "--trials", "3",
         "--junit", str(junit), "--format", "json", *extra],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    return done.returncode, assert_schema_valid(junit), json.loads(done.stdout)


def test_junit_counts_agree_with_the_gate(tmp_path: Path) -> None:
    """A passing --min-uplift gate with tasks failing in some trials: exit 0 and not one
    failure or error; the same run with a gate it fails: exit 1 and exactly the cases that
    failed their task carry <failure>."""
    rules = ["t1:2:fail", "t4:1,3:fail"]
    code, root, _ = _gate_run(tmp_path / "pass", rules, "--min-uplift", "0.3")
    assert code == 0
    assert (root.failures, root.errors) == (0, 0)
    (suite,) = list(root)
    assert (suite.failures, suite.errors) == (0, 0)
    assert "failed in 2 of 3 trials" in (_cases(suite)["task[t4]"].system_out or "")
    code, root, report = _gate_run(tmp_path / "fail", rules, "--min-uplift", "0.99")
    assert code == 1 and report["gates"]["minUplift"]["passed"] is False
    (suite,) = list(root)
    failing = sorted(c.name for c in suite if c.result and isinstance(c.result[0], Failure))
    assert failing == ["task[t1]", "task[t4]", "uplift"]
    assert (root.failures, root.errors) == (3, 0)
