"""Markdown for GitHub links nothing an untrusted string brings: a case id and a judge's reason
holding a bare URL, a `www.` host and e-mail addresses are rendered by cmark-gfm (GitHub's own
engine, autolinks included) from `test --markdown`, `ci`'s summary.md and the job summary; the
HTML has no link, and each of those strings sits inside a code span."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from skill_evals.report.markdown import escape_md
from tests._judge_helpers import TABLE_RUNNER, cli_args, make_suite, run_cli

LINKS = "https://evil.example/p?q=1 www.evil.example bob@evil.example mailto:eve@evil.example"
JUDGE = f"""
import json, sys
json.loads(sys.stdin.read())
print(json.dumps({{"score": 0, "pass": False, "reason": "see {LINKS}"}}))
"""


def _html(body: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE))


def _assert_unlinked(markdown: str) -> None:
    html = _html(markdown).lower()
    assert "evil.example" in html  # the strings are shown …
    assert "<a " not in html and "<a>" not in html  # … but nothing is linked
    outside = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert "evil.example" not in outside  # each sits inside a code span


def _suite(root: Path) -> str:
    """Ten cases judged by a judge whose reason holds links; one case id holds them too."""
    rows = {f"c{i}": {"with": {"output": "a"}, "without": {"output": "b"}} for i in range(9)}
    rows[f"id {LINKS}"] = {"with": {"output": "a"}, "without": {"output": "b"}}
    make_suite(root, rows, [{"check": "judge", "rubric": "Good notes."}])
    (root / "judge.py").write_text(JUDGE, "utf-8")
    return f"{sys.executable} {root / 'judge.py'}"


@pytest.mark.parametrize(
    "text",
    [
        "see https://evil.example/p?q=1",
        "HTTP://EVIL.EXAMPLE",
        "ftp://evil.example/x",
        "go to www.evil.example now",
        "bob@evil.example",
        "mailto:eve@evil.example",
        "xmpp:mallory@evil.example",
        "(https://evil.example)",
        "a|b https://evil.example/x|y",
    ],
)
def test_escape_md_links_nothing(text: str) -> None:
    _assert_unlinked(f"| x |\n| --- |\n| {escape_md(text)} |\n\n- {escape_md(text)}\n")


def test_test_markdown_links_no_case_id_or_judge_reason(tmp_path: Path) -> None:
    judge = _suite(tmp_path)
    done = run_cli(tmp_path, *cli_args(tmp_path, "--judge", judge, "--markdown", "out.md"))
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "out.md").read_text("utf-8")
    assert "see" in markdown and "id" in markdown
    _assert_unlinked(markdown)


def test_ci_summary_and_step_summary_link_nothing(tmp_path: Path) -> None:
    judge = _suite(tmp_path / "skills")
    evals = tmp_path / "skills" / "release-notes" / "evals"
    evals.mkdir()
    (tmp_path / "skills" / "cases.jsonl").rename(evals / "cases.jsonl")
    table = tmp_path / "skills" / "table.json"
    (tmp_path / ".skill-evals.yml").write_text(
        f"runner: {sys.executable} {TABLE_RUNNER} {table}\ntrials: 1\njudge: {judge}\n"
        "gates: {min-uplift: 0.5}\n",
        "utf-8",
    )
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    step = tmp_path / "step-summary.md"
    done = run_cli(tmp_path, "ci", "--out", "out", "-q", env={"GITHUB_STEP_SUMMARY": str(step)})
    assert done.returncode == 1, done.stderr  # the judge fails every answer: no uplift
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["skills"][0]["report"]["judge"]["calls"] > 0
    summary = (tmp_path / "out" / "summary.md").read_text("utf-8")
    assert "evil.example" in summary
    _assert_unlinked(summary)
    _assert_unlinked(step.read_text("utf-8"))
