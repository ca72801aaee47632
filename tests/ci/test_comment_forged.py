"""The fork-safe PR comment against a forged report: `ci comment` posts to a fake GitHub REST API
on 127.0.0.1 (bounded in time and requests); the posted body is rendered with cmark-gfm (GitHub's
own Markdown engine, autolinks included) and the HTML must hold no link, image, HTML tag or
mention the report supplied, and no raw invisible character."""

from __future__ import annotations

import copy
import json
import re
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from skill_evals.ci.summary import MARKER
from skill_evals.report.md_text import code_span

from .conftest import SIMULATED, build_repo, run_cli
from .fake_github import FakeGitHub, pr_env, serving

TOKEN = "ghs_forgedCommentToken000000"
PR = 9
MAX_REQUESTS = 20
SERVER_SECONDS = 120.0

LINKS = (
    "see https://evil.example/p?q=1 and www.evil.example, mail bob@evil.example, "
    "mailto:eve@evil.example xmpp:mallory@evil.example"
)
HOSTILE = (
    f"{LINKS} @everyone @octo/team <img src=x onerror=alert(1)> ![i](https://evil.example/i.png) "
    "[click](https://evil.example) <a href='https://evil.example'>a</a> ``tick`` `"
    "\u200b\u2060\ufeff\u00ad\u180e\u202e\u2066\U000e0041\U000e0042\u2028end"
)


@pytest.fixture
def api() -> Iterator[tuple[FakeGitHub, str]]:
    state = FakeGitHub(TOKEN, PR, max_requests=MAX_REQUESTS)
    with serving(state, SERVER_SECONDS) as url:
        yield state, url


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real failing `ci` run (trigger gate above what the simulation reaches): its report
    has missed triggers, messages and reasons to forge."""
    tmp = tmp_path_factory.mktemp("forged")
    repo = build_repo(tmp / "repo", SIMULATED + "gates: {min-trigger-f1: 0.99}\n")
    out = tmp / "out"
    (tmp / "tmp").mkdir()
    done = run_cli(
        ["ci", "--only", "refund-policy", "--out", str(out)], repo, {"TMPDIR": str(tmp / "tmp")}
    )
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {"repo": repo, "report": report, "tmp": tmp}


def _forge(report: dict[str, Any], where: str) -> dict[str, Any]:
    """A copy of ``report`` with HOSTILE written into one kind of field."""
    forged = copy.deepcopy(report)
    skill = forged["skills"][0]
    inner = skill["report"]
    if where == "name":
        skill["name"] = HOSTILE
        inner["skill"]["name"] = HOSTILE
    elif where == "reason":
        skill["reason"] = HOSTILE
        skill["exitCode"] = 1
        skill["status"] = "skipped"
        skill["report"] = None
    elif where == "case-ids":
        hostile_ids = [f"{HOSTILE} {i}" for i in range(3)]
        inner["trigger"]["missedTriggerCaseIds"] = hostile_ids
        inner["trigger"]["falseTriggerCaseIds"] = hostile_ids[:1]
    elif where == "messages":
        forged["messages"] = [HOSTILE]
        inner["messages"] = [HOSTILE, HOSTILE + " 2"]
        inner["messageSeverities"] = ["error", "warning"]
    elif where == "path":
        skill["path"] = HOSTILE.replace("\u2028", " ")
        inner["skill"]["path"] = skill["path"]
    return forged


def _html(body: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE))


def _outside_code(html: str) -> str:
    return re.sub(r"<code>.*?</code>", "", html, flags=re.S)


def _assert_inert(body: str) -> None:
    assert body.startswith(MARKER)
    raw = [c for c in body if unicodedata.category(c) == "Cf" or c in "\u2028\u2029"]
    assert raw == [], [hex(ord(c)) for c in raw]
    assert "&#" not in body  # never as a character reference either
    html = _html(body)
    assert "<a " not in html and "<a>" not in html  # no link: autolinked or written
    assert "<img" not in html
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9-]*)", html))
    assert tags <= {
        "p",
        "h2",
        "h3",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "ul",
        "li",
        "strong",
        "em",
        "details",
        "summary",
        "blockquote",
        "br",
    }, tags
    text = _outside_code(html)
    assert not re.search(r"(?<![\w`])@[A-Za-z0-9]", text), text  # no mention outside code
    assert "evil.example" not in text  # everything the report wrote sits inside code spans


@pytest.mark.parametrize("where", ["name", "reason", "case-ids", "messages", "path"])
def test_a_forged_report_posts_no_link_image_tag_or_mention(
    api: tuple[FakeGitHub, str], real_run: dict[str, Any], tmp_path: Path, where: str
) -> None:
    state, url = api
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(_forge(real_run["report"], where)), encoding="utf-8")
    env = pr_env(tmp_path, TOKEN, PR, url, GITHUB_EVENT_NAME="workflow_run", TMPDIR=str(tmp_path))
    started = time.monotonic()
    done = run_cli(["ci", "comment", str(report_path), "--pr", str(PR)], real_run["repo"], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < SERVER_SECONDS
    (body,) = state.bodies
    _assert_inert(body)
    if where != "path":  # (the comment shows no path)
        assert "\\ue0041" in body and "\\u200b" in body  # the invisible text shown, not dropped
    if where == "name":
        # a name of the base repository stays plain text; a forged one is a code span
        # (its own ``tick`` is a code span of its own, so the rest needs only a 1-tick fence)
        assert "| refund-policy |" not in body and "` see https://evil.example" in body
        assert "` tick `" in body


def test_a_base_repository_skill_name_is_plain_text(
    api: tuple[FakeGitHub, str], real_run: dict[str, Any], tmp_path: Path
) -> None:
    state, url = api
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(real_run["report"]), encoding="utf-8")
    env = pr_env(tmp_path, TOKEN, PR, url, TMPDIR=str(tmp_path))
    done = run_cli(["ci", "comment", str(report_path), "--pr", str(PR)], real_run["repo"], env)
    assert done.returncode == 0, done.stderr[-3000:]
    (body,) = state.bodies
    _assert_inert(body)
    assert "| refund-policy |" in body  # found in the checked-out repository
    # from elsewhere (no such skill there) the same name is a code span
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli(["ci", "comment", str(report_path), "--pr", str(PR)], elsewhere, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| ` refund-policy ` |" in state.bodies[-1]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("plain", "` plain `"),
        ("a`b", "`` a`b ``"),
        ("``x```", "```` ``x``` ````"),
        ("line\nbreak\r\nhere", "` line break here `"),
        ("a|b", "` a\\|b `"),
        ("zw\u200bj\U000e0041", "` zw\\u200bj\\ue0041 `"),
    ],
)
def test_code_span_fences_and_escapes(text: str, span: str) -> None:
    assert code_span(text) == span
