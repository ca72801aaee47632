"""The simulated runner ignores a description's exclusion sentences ("Do NOT trigger when …"),
and every output of a run with it says its figures are artefacts of word matching."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest

from skill_evals.agents.simulated import ARTEFACTS, is_exclusion, matchable, should_load
from tests.conftest import assert_valid_report, write_jsonl, write_skill

DESCRIPTION = (
    "Fill PDF forms and edit PDF form fields. Do NOT trigger when the user asks about merging "
    "or splitting documents; never for scanned invoices!\nAvoid: watermarks, stamps"
)


@pytest.mark.parametrize(
    "sentence",
    [
        "Do NOT trigger when the user asks about merging",
        "  don't use it for invoices",
        "Don\u2019t answer tax questions",
        "Not for spreadsheets",
        "not when the file is encrypted",
        "Never for scanned invoices",
        "AVOID watermarks",
        "This skill is not for scanned pages",
        "Use it for forms; do not use it for merging",
        "Please do not trigger for images",
        "Do  not\tuse it for receipts",
        "do\u00a0not use it for receipts",
        "Fill forms\u2028Never for scanned pages",
        "Fill forms\x85Never for scanned pages",
        "This skill is\tnot  for scanned pages",
    ],
)
def test_exclusion_sentences(sentence: str) -> None:
    last = re.split("[;\u2028\x85]", sentence)[-1]
    assert is_exclusion(last) and matchable(sentence).strip() in (
        "",
        "Use it for forms",
        "Fill forms",
    )


@pytest.mark.parametrize(
    "sentence",
    ["Fill PDF forms", "Notes for invoices", "Use it when not sure", "Knot forms"],
)
def test_other_sentences_are_kept(sentence: str) -> None:
    assert not is_exclusion(sentence)


def test_exclusions_are_removed_before_matching() -> None:
    kept = matchable(DESCRIPTION)
    assert "merging" not in kept and "invoices" not in kept and "watermarks" not in kept
    assert "Fill PDF forms" in kept
    assert not should_load("Help with merging and splitting documents", DESCRIPTION)
    assert not should_load("Remove watermarks and stamps from scanned invoices", DESCRIPTION)
    assert should_load("Fill the fields of this PDF form", DESCRIPTION)


CASES = [
    ("t-fill", "Fill the fields of this PDF form", True),
    ("t-edit", "Edit a form field in my PDF", True),
    ("t-forms", "How do I fill PDF forms?", True),
    ("t-field", "Change PDF form fields for me", True),
    ("t-blank", "Complete the blank PDF form fields", True),
    ("n-merge", "Help with merging and splitting documents", False),
    ("n-invoice", "Read these scanned invoices", False),
    ("n-stamps", "Remove watermarks and stamps", False),
    ("n-split", "Splitting documents and merging them again", False),
    ("n-python", "Write a Python function that reverses a string", False),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("simulated")
    skill = write_skill(tmp / "skills", "pdf-forms", DESCRIPTION, "# Forms\n\nFill each field.\n")
    cases = write_jsonl(
        tmp / "cases.jsonl", [{"id": i, "prompt": p, "expectTrigger": t} for i, p, t in CASES]
    )
    (tmp / "t").mkdir()
    env = dict(os.environ, TMPDIR=str(tmp / "t"))
    argv = ["skill-evals", "test", "--skill", str(skill), "--cases", str(cases), "--trials",
            "1", "--runner", "skill-evals runner simulated", "--report", str(tmp / "r.json"),
            "--markdown", str(tmp / "r.md"), "--html", str(tmp / "r.html"), "--junit",
            str(tmp / "r.xml")]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return {
        "proc": proc,
        "report": json.loads((tmp / "r.json").read_text(encoding="utf-8")),
        "markdown": (tmp / "r.md").read_text(encoding="utf-8"),
        "html": (tmp / "r.html").read_text(encoding="utf-8"),
        "junit": (tmp / "r.xml").read_text(encoding="utf-8"),
    }


def test_no_false_trigger_from_exclusion_words(run: dict[str, Any]) -> None:
    report = run["report"]
    assert_valid_report(report)
    assert run["proc"].returncode == 0, run["proc"].stderr
    assert report["trigger"]["fp"] == 0 and report["trigger"]["tp"] == 5


def test_every_output_carries_the_word_matching_note(run: dict[str, Any]) -> None:
    assert ARTEFACTS == (
        "simulated runner: figures are artefacts of word matching between the prompts and the "
        "description, not a model's behaviour"
    )
    texts = [m.get("text", m) if isinstance(m, dict) else m for m in run["report"]["messages"]]
    assert any(ARTEFACTS in str(t) for t in texts)
    assert ARTEFACTS in run["proc"].stdout
    assert ARTEFACTS in run["markdown"]
    assert ARTEFACTS.replace("'", "&#x27;") in run["html"] or ARTEFACTS in run["html"]
    # a passing run's JUnit too (no message of its own): a property of the suite
    assert f'<property name="simulated" value="{ARTEFACTS}" />' in run["junit"]
