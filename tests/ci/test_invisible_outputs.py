"""One rule for invisible characters in every output: a real `ci` run under a GitHub-like
environment over cases whose ids carry format characters (zero-width, bidi, BOM, soft hyphen,
Mongolian vowel separator, tag characters) and line separators. No output may hold one raw or
as a character reference; each is shown as ``\\u`` and lowercase hex."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest

from tests.conftest import write_skill

from .conftest import SIMULATED, commit_all, gh_env, make_repo, run_cli

INVISIBLE = "\u200b\u2060\ufeff\u00ad\u180e\u061c\u202e\u2066\ufff9\U000e0041\u2028\u2029"
SHOWN = [f"\\u{ord(c):04x}" for c in INVISIBLE]


def _raw(text: str) -> list[str]:
    return [hex(ord(c)) for c in text if unicodedata.category(c) == "Cf" or c in "\u2028\u2029"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("invisible")
    repo = make_repo(tmp / "repo", skills=(), config=SIMULATED + "gates: {min-trigger-f1: 0.99}\n")
    skill = write_skill(
        repo / "skills",
        name="zest",
        description="Answer questions about zest topics and zest things.",
        body="# zest\n\nAll about zest.\n",
    )
    cases = [
        # expected to trigger, with no word of the description: a missed trigger
        {"id": f"miss{INVISIBLE}one", "prompt": "hello there", "expectTrigger": True},
        {"id": f"hit{INVISIBLE}two", "prompt": "question about zest topics", "expectTrigger": True},
        *(
            {"id": f"quiet-{i}", "prompt": f"unrelated words number {i}", "expectTrigger": False}
            for i in range(10)
        ),
    ]
    (skill / "evals").mkdir()
    (skill / "evals" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8"
    )
    commit_all(repo)
    env = gh_env(tmp)
    env["TMPDIR"] = str(tmp)
    out = tmp / "out"
    done = run_cli(["ci", "--all", "--out", str(out)], repo, env)
    return {"done": done, "out": out, "tmp": tmp}


def test_the_run_failed_on_the_gate(run: dict[str, Any]) -> None:
    assert run["done"].returncode == 1, run["done"].stderr[-3000:]


@pytest.mark.parametrize(
    "name", ["summary.md", "comment.md", "junit.xml", "report.html", "step-summary", "console"]
)
def test_no_output_holds_an_invisible_character(run: dict[str, Any], name: str) -> None:
    if name == "step-summary":
        text = (run["tmp"] / "summary.md").read_text(encoding="utf-8")
    elif name == "console":
        text = run["done"].stdout + run["done"].stderr
    else:
        text = (run["out"] / name).read_text(encoding="utf-8")
    assert _raw(text) == [], name
    assert "&#x200b;" not in text.lower() and "&#8203;" not in text
    for shown in SHOWN:
        assert shown in text, (name, shown)


def test_annotations_show_the_invisible_characters(run: dict[str, Any]) -> None:
    errors = [line for line in run["done"].stdout.splitlines() if line.startswith("::error")]
    assert any("miss" in line for line in errors), run["done"].stdout[-2000:]
    for line in errors:
        assert _raw(line) == []
    assert any(all(s in line for s in SHOWN) for line in errors)
