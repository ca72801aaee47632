"""Outputs of a route report: JUnit valid against the project's junit-10-like schema for any
input, Markdown and HTML escaping, the HTML heat map in headless Chromium, --lint, and the
bundled example through the simulated runner (a real confusion matrix offline)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from skill_evals.report.route import render_route
from tests._route_helpers import make_catalog, observation_file, route_json, run_route
from tests.ci.test_html import _chromium
from tests.ci.test_junit_schema import assert_schema_valid
from tests.conftest import REPO, write_jsonl, write_skill

# Case ids cannot hold control characters (the case reader refuses them), but every other
# character a file can carry reaches the outputs.
# The first three are misrouted (so they appear in every output's advice).
HOSTILE = [
    "md|`x`*_[y](z)<img src=x onerror=alert(1)>",
    "bidi\u202eevil\u2028sep",
    "@someone #1",
    "xml<&>\"'-\U0001f600",
    "zero\u200bwidth",
    "line\u2029break",
]


@pytest.fixture
def hostile_report(tmp_path: Path) -> dict[str, Any]:
    """A failing route report whose case ids are hostile and which collides and misses."""
    dirs = make_catalog(tmp_path)
    records = [
        {"id": cid, "prompt": f"prompt {i}", "expect": ["alpha"]} for i, cid in enumerate(HOSTILE)
    ]
    records += [{"id": f"n{i}", "prompt": f"none {i}", "expect": []} for i in range(5)]
    cases = write_jsonl(tmp_path / "routing.jsonl", records)
    loads: dict[str, list[list[str]]] = {r["id"]: [["beta"]] for r in records[:3]}
    loads |= {r["id"]: [["alpha"]] for r in records[3:6]}
    loads |= {r["id"]: [[]] for r in records[6:]}
    loads["n0"] = [["gamma"]]
    obs = observation_file(tmp_path / "obs.jsonl", loads)
    code, report, _ = route_json(
        [
            *[a for d in dirs for a in ("--skill", str(d))],
            "--cases",
            str(cases),
            "--observations",
            str(obs),
            "--trials",
            "1",
            "--min-accuracy",
            "0.9",
        ]
    )
    assert code == 1
    return report


@pytest.mark.skipif(shutil.which("xmllint") is None, reason="xmllint not installed")
def test_junit_is_schema_valid_and_marks_misroutes(
    hostile_report: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "route.xml"
    path.write_text(render_route(hostile_report, "junit"), encoding="utf-8")
    xml = assert_schema_valid(path)
    cases = {case.name: case for suite in xml for case in suite}
    assert "route[n1]" in cases and "accuracy" in cases
    failed = [
        name for name, case in cases.items() if case.result and case.result[0]._tag == "failure"
    ]
    # the three misrouted hostile ids (sanitised) and the accuracy gate fail; n0 (gamma) too
    assert len(failed) == 5 and "accuracy" in failed
    suite = next(iter(xml))
    assert suite.name == "routing" and suite.failures == 5 and suite.errors == 0


@pytest.mark.skipif(shutil.which("xmllint") is None, reason="xmllint not installed")
def test_junit_for_every_status(tmp_path: Path) -> None:
    dirs = make_catalog(tmp_path)
    skills = [a for d in dirs for a in ("--skill", str(d))]
    few = write_jsonl(tmp_path / "few.jsonl", [{"id": "x", "prompt": "p", "expect": []}])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "x", "prompt": "p", "expect": ["zz"]}])
    for cases, code in ((few, 6), (bad, 5)):
        done = run_route([*skills, "--cases", str(cases), "--runner", "true", "--format", "junit"])
        assert done.returncode == code
        path = tmp_path / f"{code}.xml"
        path.write_text(done.stdout, encoding="utf-8")
        xml = assert_schema_valid(path)
        assert [c.name for s in xml for c in s] == ["evaluation"]


def test_markdown_escapes_every_user_string(hostile_report: dict[str, Any]) -> None:
    text = render_route(hostile_report, "markdown")
    assert not re.search(r"(?<!\\)<img", text)  # only ever as escaped text
    assert "\u2028" not in text and "\u202e" not in text
    assert "\\<img src=x onerror=alert\\(1\\)\\>" in text
    assert "`@`someone" in text and "\u200b" not in text
    assert "| alpha | 6 |" in text  # per-skill row: alpha expected by the six hostile cases
    assert "descriptions of alpha and beta compete on cases" in text


def test_text_shows_collisions_and_advice(hostile_report: dict[str, Any]) -> None:
    text = render_route(hostile_report, "text")
    assert text.startswith("FAIL  routing — accuracy 0.636")  # 7 of 11
    assert "alpha ↔ beta: 3 observation(s)" in text
    assert "gamma loaded on cases n0 where no skill should" in text
    assert "\u202e" not in text and "\u2028" not in text and "\\u202e" in text


def test_html_is_self_contained_and_escaped(hostile_report: dict[str, Any]) -> None:
    page = render_route(hostile_report, "html")
    assert page.startswith("<!DOCTYPE html>") and "default-src 'none'" in page
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert html.escape("md|`x`*_[y](z)<img src=x onerror=alert(1)>", quote=True) in page
    assert 'table class="heat" id="confusion"' in page
    # the diagonal is green, misroutes red; the empty cells carry no colour
    assert "rgba(45,164,78," in page and "rgba(207,34,46," in page


@pytest.mark.browser
def test_heat_map_renders_in_chromium(hostile_report: dict[str, Any], tmp_path: Path) -> None:
    page = tmp_path / "route.html"
    page.write_text(render_route(hostile_report, "html"), encoding="utf-8")
    dom = _chromium(["--dump-dom", page.as_uri()], tmp_path / "profile")
    assert 'id="confusion"' in dom and "Confusion matrix" in dom
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    # every cell of the 4 × 4 matrix is there, with its count
    assert dom.count('<td title="expected ') == 16
    assert '<td title="expected alpha, loaded beta: 3"' in dom


def test_lint_overlaps_and_unexpected(tmp_path: Path) -> None:
    write_skill(
        tmp_path / "skills", "returns", "Answer questions about returns and refunds of orders."
    )
    write_skill(
        tmp_path / "skills", "refunds", "Answer questions about refunds and returns of orders."
    )
    write_skill(tmp_path / "skills", "hours", "Opening hours of the stores.")
    cases = write_jsonl(
        tmp_path / "routing.jsonl",
        [{"id": "a", "prompt": "p", "expect": ["returns"]}],
    )
    done = run_route(["--catalog", "skills/*", "--cases", str(cases), "--lint"], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "refunds ↔ returns: 1.00 (8 of 8 words shared)" in done.stdout
    assert "  - hours — add cases" in done.stdout and "  - refunds — add cases" in done.stdout
    done = run_route(
        ["--catalog", "skills/*", "--cases", str(cases), "--lint", "--format", "json"], cwd=tmp_path
    )
    data = json.loads(done.stdout)
    assert data["overlaps"] == [
        {"a": "refunds", "b": "returns", "jaccard": 1.0, "shared": 8, "union": 8}
    ]
    assert data["unexpected"] == ["hours", "refunds"] and data["findings"] == 3
    # no finding: exit 0; an invalid case file: exit 5 (lint reads it with every rule)
    write_skill(tmp_path / "solo", "hours", "Opening hours of the stores.")
    only = write_jsonl(tmp_path / "only.jsonl", [{"id": "a", "prompt": "p", "expect": ["hours"]}])
    done = run_route(["--skill", str(tmp_path / "solo" / "hours"), "--cases", str(only), "--lint"])
    assert done.returncode == 0 and "0 finding(s)" in done.stdout
    broken = write_jsonl(tmp_path / "broken.jsonl", [{"id": "a", "prompt": "p", "expect": ["x"]}])
    done = run_route(
        ["--skill", str(tmp_path / "solo" / "hours"), "--cases", str(broken), "--lint"]
    )
    assert done.returncode == 5


def test_jaccard_threshold_is_inclusive() -> None:
    from skill_evals.suite.catalog import Catalog
    from skill_evals.suite.route_lint import overlaps
    from skill_evals.suite.skill import load_skill

    root = Path(__file__).parent / "_lint_tmp"
    shutil.rmtree(root, ignore_errors=True)
    try:
        a = write_skill(root, "a", "one two three")  # {one two three}
        b = write_skill(root, "b", "one two four")  # shared 2, union 4: exactly 0.5
        c = write_skill(root, "c", "one five six")  # with a: 1 of 5
        found = overlaps(Catalog(tuple(load_skill(p) for p in (a, b, c))))
        assert [(o.a, o.b, o.jaccard) for o in found] == [("a", "b", 0.5)]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_bundled_example_with_the_simulated_runner(tmp_path: Path) -> None:
    """The README's routing example: offline, a real confusion matrix with a collision."""
    done = run_route(
        [
            "--catalog",
            "examples/skills/*",
            "--cases",
            "examples/evals/routing.jsonl",
            "--runner",
            "skill-evals runner simulated",
            "--trials",
            "1",
            "--jobs",
            "4",
            "--format",
            "json",
            "-q",
            "--min-accuracy",
            "0.7",
        ],
        cwd=REPO,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, report["messages"]
    names = [c["name"] for c in report["catalog"]]
    assert {"refund-policy", "shipping-policy", "gift-cards"} <= set(names)
    assert report["collisions"] and report["accuracy"] < 1.0
    counts = report["confusion"]["counts"]
    off_diagonal = sum(v for r, row in enumerate(counts) for c, v in enumerate(row) if r != c)
    assert off_diagonal > 0
    assert any("SIMULATION" in m for m in report["messages"])
