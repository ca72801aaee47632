"""Every JUnit file we write (test --junit, ci's junit.xml, ci merge) is well-formed for any
input, validates against our own junit-10-like schema (the constraints Jenkins xunit's
junit-10.xsd places on a report) and is read back by junitparser; cases that did not run are
<skipped message="not run: …">, never passing testcases."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from skill_evals.report.junit import SuiteInput, render_junit
from skill_evals.report.junit_xml import MAX_ATTRIBUTE_CHARS
from tests.conftest import REPO, write_jsonl, write_skill

from .conftest import commit_all, make_repo, run_cli

XSD = REPO / "tests" / "data" / "junit-10-like.xsd"
GOOD = REPO / "tests" / "runners" / "good.py"
pytestmark = pytest.mark.skipif(shutil.which("xmllint") is None, reason="xmllint not installed")

# Case ids a cases file may hold: control characters, an escape sequence, bidi overrides, a
# lone-surrogate-free astral character, XML specials, and one longer than an attribute may be.
HOSTILE_IDS = [
    "ctl\x01\x02\x7f\x85-id",
    "esc\x1b[31mred\x1b[0m",
    "bidi\u202eevil\u2066",
    "xml<&>\"'-\U0001f600",
    "nl\n::error::X",
    "h" * (MAX_ATTRIBUTE_CHARS + 5000),
]


def assert_schema_valid(path: Path) -> JUnitXml:
    """xmllint --schema passes and junitparser reads the file."""
    done = subprocess.run(
        ["xmllint", "--noout", "--schema", str(XSD), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return JUnitXml.fromfile(str(path))


def _write(tmp_path: Path, text: str, name: str = "junit.xml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_refuses_what_junit_10_refuses(tmp_path: Path) -> None:
    """The schema is a real check: a skipped attribute on the root, an exponent time, an
    unknown element or a testsuite without its counts all fail."""
    ok = '<testsuites><testsuite name="a" tests="0" failures="0" errors="0"/></testsuites>'
    assert_schema_valid(_write(tmp_path, ok))
    bad = [
        '<testsuites skipped="1"><testsuite name="a" tests="0" failures="0" errors="0"/>'
        "</testsuites>",
        '<testsuites time="1e-05"/>',
        '<testsuites><testsuite name="a" tests="0" failures="0" errors="0" time="-1"/>'
        "</testsuites>",
        '<testsuites><testsuite name="a" tests="0"/></testsuites>',
        '<testsuites><testsuite name="a" tests="0" failures="0" errors="0"><bogus/>'
        "</testsuite></testsuites>",
        '<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase/>'
        "</testsuite></testsuites>",
    ]
    for i, text in enumerate(bad):
        path = _write(tmp_path, text, f"bad{i}.xml")
        done = subprocess.run(
            ["xmllint", "--noout", "--schema", str(XSD), str(path)],
            capture_output=True,
            check=False,
        )
        assert done.returncode != 0, text


def _report(ids: list[str], ran: int, status: str = "interrupted") -> dict[str, Any]:
    """A minimal report whose first ``ran`` cases were observed."""
    results = []
    for i, cid in enumerate(ids):
        observed = i < ran
        results.append(
            {
                "id": cid,
                "line": i + 1,
                "unit": i,
                "tags": [],
                "expectTrigger": True,
                "triggered": [True] if observed else [None],
                "with": None,
                "without": None,
            }
        )
    return {
        "status": status,
        "exitCode": 130 if status == "interrupted" else 7,
        "skill": {"name": "s\x01kill"},
        "trigger": {"precision": 1.0, "recall": 1.0, "f1": 1.0},
        "task": None,
        "gates": {},
        "runner": {"wallMs": 1e20, "failures": [], "invocations": ran},
        "caseResults": results,
        "messages": ["interrupted"],
    }


def test_not_run_cases_are_skipped_with_a_reason(tmp_path: Path) -> None:
    xml = render_junit([SuiteInput("s\x01kill", report=_report(["a", "b", "c"], ran=1))])
    root = assert_schema_valid(_write(tmp_path, xml))
    suite = next(iter(root))
    cases = {c.name: c for c in suite}
    assert cases["trigger[a]"].result == []
    for name in ("trigger[b]", "trigger[c]"):
        (skipped,) = cases[name].result
        assert isinstance(skipped, Skipped)
        assert skipped.message.startswith("not run: ") and "interrupted" in skipped.message
    assert suite.skipped >= 2
    # nothing ran at all: the aggregate trigger testcase is not a pass either
    none = render_junit([SuiteInput("z", report=_report(["a"], ran=0))])
    cases = {c.name: c for c in next(iter(assert_schema_valid(_write(tmp_path, none, "n.xml"))))}
    assert isinstance(cases["trigger"].result[0], Skipped)


def test_renderer_output_is_valid_for_hostile_names(tmp_path: Path) -> None:
    suites = [
        SuiteInput(HOSTILE_IDS[0], report=_report(HOSTILE_IDS, ran=3, status="unavailable")),
        SuiteInput("nc\x01", failed="no cases \x1b file"),
        SuiteInput("sk\x00ip\ud800", skipped="not run: \x0c interrupted"),
        ("tuple\x02", None, None),
    ]
    text = render_junit(suites)
    root = assert_schema_valid(_write(tmp_path, text))
    names = [s.name for s in root]
    assert names == ["ctl-id", "nc", "skip", "tuple"]
    for char in "\x00\x01\x02\x0c\x1b\x7f\x85":
        assert char not in text
    assert "skipped=" not in text.split("<testsuite ", 1)[0]  # never on <testsuites>
    long_case = next(c for c in next(iter(root)) if c.name.startswith("trigger[hhh"))
    assert len(long_case.name) <= MAX_ATTRIBUTE_CHARS


def _cases_file(path: Path, ids: list[str]) -> Path:
    return write_jsonl(
        path,
        [
            {"id": cid, "prompt": f"question {i} about refunds", "expectTrigger": i % 2 == 0}
            for i, cid in enumerate(ids)
        ],
    )


def test_test_junit_with_hostile_ids_and_fail_fast(tmp_path: Path) -> None:
    """`test --junit`: a runner failure on the second case stops the run (fail-fast); the
    cases after it are skipped "not run", and the file stays valid whatever the ids hold."""
    # Case ids cannot hold control characters (the cases file refuses them); a skill name
    # can be as long as SKILL.md allows.
    long_name = "refund-" + "h" * (MAX_ATTRIBUTE_CHARS + 100)
    skill = write_skill(tmp_path / "skills", "refund-policy")
    md = skill / "SKILL.md"
    md.write_text(md.read_text("utf-8").replace("name: refund-policy", f"name: {long_name}"))
    legal = [i for i in HOSTILE_IDS if i.isprintable() and len(i) <= 200] + ["i" * 200]
    ids = ["first", "second", *legal, *[f"later-{i}" for i in range(10)]]
    cases = _cases_file(tmp_path / "cases.jsonl", ids)
    junit = tmp_path / "out" / "junit.xml"
    runner = f"{sys.executable} {GOOD} --invoke {long_name} --fail-case second"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(cases), "--runner", runner, "--jobs", "1", "--trials", "1", "--junit", str(junit),
         "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 7, done.stderr[-2000:]
    root = assert_schema_valid(junit)
    suite = next(iter(root))
    assert len(suite.name) <= MAX_ATTRIBUTE_CHARS and suite.name.startswith("refund-hhh")
    cases = {c.name: c for c in suite}
    assert isinstance(cases["trigger[second]"].result[0], Error)
    skipped = [n for n, c in cases.items() if c.result and isinstance(c.result[0], Skipped)]
    assert "trigger[later-9]" in skipped
    for name in skipped:
        if name.startswith("trigger["):
            message = cases[name].result[0].message
            assert message.startswith("not run: ") and "runner failure" in message
    # no not-run case passes: every trigger[...] testcase without a result was observed
    report = json.loads(done.stdout)
    observed = {
        r["id"] for r in report["caseResults"] if any(t is not None for t in r["triggered"])
    }
    for name, case in cases.items():
        if name.startswith("trigger[") and not case.result:
            assert any(name == f"trigger[{i}]" for i in observed), name


def test_ci_and_merge_junit_valid_with_hostile_skill_names(tmp_path: Path) -> None:
    """ci's junit.xml (a skill without cases named with a control character, an interrupted
    evaluation) and ci merge's: valid and readable."""
    config = "runner: skill-evals runner simulated\ntrials: 1\nvalidate: warn\n"  # nc's name
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=config)
    nc = repo / "skills" / "nc"
    nc.mkdir()
    (nc / "SKILL.md").write_text(
        '---\nname: "nc\\x01\\x1b[2J"\ndescription: A skill without cases.\n---\nbody\n',
        encoding="utf-8",
    )
    commit_all(repo)
    shard_a, shard_b = tmp_path / "shard-a", tmp_path / "shard-b"
    first = run_cli(["ci", "--all", "--only", "alpha", "--out", str(shard_a)], repo)
    assert first.returncode == 0, first.stderr[-2000:]
    second = run_cli(["ci", "--all", "--out", str(shard_b)], repo)
    assert second.returncode == 1, second.stderr[-2000:]
    root = assert_schema_valid(shard_b / "junit.xml")
    names = {s.name for s in root}
    assert "nc[2J" in names  # the control characters removed, the rest kept
    nc_suite = next(s for s in root if s.name == "nc[2J")
    assert isinstance(next(iter(nc_suite)).result[0], Failure)
    merged = tmp_path / "merged"
    done = run_cli(["ci", "merge", str(shard_a), str(shard_b), "--out", str(merged)], tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert {s.name for s in assert_schema_valid(merged / "junit.xml")} == names


def test_route_junit_is_valid(tmp_path: Path) -> None:
    """`route --format junit` goes through the same writer: valid against the schema too."""
    examples = REPO / "examples"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "route", "--catalog", "skills/*", "--cases",
         "evals/routing.jsonl", "--runner", f"{sys.executable} -m skill_evals runner simulated",
         "--trials", "1", "--min-accuracy", "0.99", "--format", "junit", "--quiet"],
        cwd=examples, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    root = assert_schema_valid(_write(tmp_path, done.stdout, "route.xml"))
    assert [s.name for s in root] == ["routing"]
