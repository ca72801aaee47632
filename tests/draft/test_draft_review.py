"""`cases draft` against a drafter that misbehaves, through the real CLI in the real sandbox:
an unparseable or empty --drafter is named as --drafter; a prompt naming the skill in any
spelling (underscores, full-width letters, other hyphens, spacing, line breaks) is dropped, as
lint flags it; a reply that leaves either label short of five independent cases writes
nothing (exit 6). Every --format json result, written or not, validates against
draft.schema.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skill_evals.schemas import load_schema
from tests.draft.test_cases_draft import DRAFTER, _c, _skill, draft

POSITIVES = [
    _c("explicit", "Check the tax lines and totals on these supplier invoices.", True),
    _c("explicit", "Audit invoice totals and vendor details for March.", True),
    _c("explicit", "Verify supplier invoice tax lines before payment.", True),
    _c("explicit", "Audit the invoices from our paper supplier.", True),
    _c("implicit", "Do the VAT lines on this vendor bill look correct?", True),
    _c("implicit", "Our accounts team found a mismatch on a vendor bill total.", True),
    _c("implicit", "Is the tax on this supplier's bill calculated correctly?", True),
    _c("implicit", "The cleaning company's bill seems too high; can you look?", True),
    _c("contextual", "I'm closing the month; check the invoice totals from our suppliers.", True),
    _c("contextual", "Before the budget review, check last week's supplier bills.", True),
]  # fmt: skip
NEGATIVES = [
    _c("near-miss", "What is the balance on my gift card?", False),
    _c("near-miss", "Write an invoice template for my freelance work.", False),
    _c("near-miss", "Explain what a tax line is in general terms.", False),
    _c("near-miss", "Send a reminder for an unpaid invoice I issued.", False),
    _c("near-miss", "Translate this supplier's letter into German.", False),
    _c("near-miss", "Redeem a gift card for an online order.", False),
    _c("unrelated", "What is the capital of Australia?", False),
    _c("unrelated", "Convert 72 Fahrenheit to Celsius.", False),
    _c("unrelated", "Suggest a name for a pet goldfish.", False),
    _c("unrelated", "Plan a three-day trip to Lisbon.", False),
]  # fmt: skip
# The skill's name spelled so that a plain substring test misses it.
NAMING = [
    "Run invoice_audit on this bill.",
    "Use ＩＮＶＯＩＣＥ-ＡＵＤＩＴ for the March bills.",
    "Start invoice\u2011audit on the vendor bill.",
    "Please do an Invoice  Audit of this bill.",
    "Load the invoice\naudit instructions first.",
]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("draft-review")
    (root / "home").mkdir()
    _skill(root, "invoice-audit", "Audit supplier invoices: totals, tax lines and vendor "
           "details.", "# Invoice audit\n\nCheck the totals.\n", "OWN-EVAL-MARKER")  # fmt: skip
    return root


@pytest.mark.parametrize("command", ["'unclosed", "", "   "])
def test_a_drafter_command_that_cannot_be_split_is_named_as_drafter(
    tmp: Path, command: str
) -> None:
    args = [sys.executable, "-m", "skill_evals", "cases", "draft", "--skill",
            "skills/invoice-audit", "--drafter", command, "--out", "x.jsonl",
            "--format", "json"]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, cwd=tmp, timeout=120, check=False)
    assert done.returncode == 5
    jsonschema.validate(json.loads(done.stdout), load_schema("draft.schema.json"))
    assert "--drafter:" in done.stderr and "--runner" not in done.stderr
    assert not (tmp / "x.jsonl").exists()


def test_a_prompt_naming_the_skill_in_any_spelling_is_dropped(tmp: Path) -> None:
    naming = [_c("explicit", prompt, True) for prompt in NAMING]
    out = tmp / "naming" / "cases.jsonl"
    done, _ = draft(tmp, [{"cases": naming + POSITIVES + NEGATIVES}], "--out", str(out),
                    "--format", "json", name="naming")  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    jsonschema.validate(result, load_schema("draft.schema.json"))
    assert result["dropped"].get("prompt-names-skill") == len(NAMING)
    written = [json.loads(line)["prompt"] for line in out.read_text("utf-8").splitlines()]
    assert not set(NAMING) & set(written)
    # lint, run on a hand-written file, flags the same spellings
    by_hand = tmp / "naming" / "by-hand.jsonl"
    rows = [{"id": f"n{i}", "prompt": p, "expectTrigger": True} for i, p in enumerate(NAMING)]
    by_hand.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    linted = subprocess.run(
        [sys.executable, "-m", "skill_evals", "lint", "--skill", "skills/invoice-audit",
         "--cases", str(by_hand), "--format", "json"],
        capture_output=True, text=True, cwd=tmp, timeout=120, check=False,
    )  # fmt: skip
    problems = json.loads(linted.stdout)["problems"]
    named = [p for p in problems if p["rule"] == "prompt-names-skill"]
    assert named and sorted(named[0]["lines"]) == list(range(1, len(NAMING) + 1))


@pytest.mark.parametrize(
    ("kept", "label"),
    [(NEGATIVES + POSITIVES[:4], "true"), (POSITIVES + NEGATIVES[:4], "false")],
    ids=["few-positives", "few-negatives"],
)
def test_a_label_short_of_five_writes_nothing(
    tmp: Path, kept: list[dict[str, Any]], label: str
) -> None:
    out = tmp / f"short-{label}" / "cases.jsonl"
    done, seen = draft(tmp, [{"cases": kept}], "--out", str(out), "--format", "json",
                       name=f"short-{label}")  # fmt: skip
    assert done.returncode == 6, done.stderr
    result = json.loads(done.stdout)
    jsonschema.validate(result, load_schema("draft.schema.json"))
    assert result["status"] == "insufficient" and result["lint"] is None
    assert f"expectTrigger {label}" in done.stderr and "nothing was written" in done.stderr
    assert len(seen) == 2  # asked once more for the missing ones, which added nothing
    assert not out.exists() and not list(out.parent.iterdir())


@pytest.mark.parametrize(
    "front",
    [
        "---\nname: odd\ndescription: [unclosed SECRET-FRONT\n---\n",  # invalid YAML
        "",  # no frontmatter
        "---\nname: odd\n---\n",  # no description
        "---\nname: odd\ndescription: '   '\n---\n",  # a blank one
    ],
    ids=["invalid-yaml", "no-frontmatter", "no-description", "blank-description"],
)
def test_a_skill_without_a_readable_description_is_refused(tmp: Path, front: str) -> None:
    skill = tmp / "skills" / "odd"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(front + "# Odd\n\nSECRET-BODY\n", "utf-8")
    log, replies = tmp / "odd.log", tmp / "odd-replies.json"
    replies.write_text(json.dumps([{"cases": POSITIVES + NEGATIVES}]), "utf-8")
    drafter = f"{sys.executable} {DRAFTER} --log={log} --replies={replies}"
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "cases", "draft", "--skill", "skills/odd",
         "--drafter", drafter, "--out", "odd.jsonl", "--format", "json"],
        capture_output=True, text=True, cwd=tmp, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr
    jsonschema.validate(json.loads(done.stdout), load_schema("draft.schema.json"))
    assert "skills/odd/SKILL.md" in done.stderr and "skill-evals validate skills/odd" in done.stderr
    assert "SECRET" not in done.stderr + done.stdout
    assert not log.exists() and not (tmp / "odd.jsonl").exists()  # the drafter never ran


def test_a_reply_with_a_lone_surrogate_is_refused_not_a_crash(tmp: Path) -> None:
    # json.loads accepts "\ud800"; such a string can never be written as UTF-8.
    bad = [_c("explicit", "Check the totals on this supplier bill \ud800 now.", True)]
    out = tmp / "surrogate" / "cases.jsonl"
    done, _ = draft(tmp, [{"cases": bad + POSITIVES + NEGATIVES}], "--out", str(out),
                    "--retries", "0", "--format", "json", name="surrogate")  # fmt: skip
    assert done.returncode == 7, done.stderr
    result = json.loads(done.stdout)
    jsonschema.validate(result, load_schema("draft.schema.json"))
    assert result["reason"].startswith("drafter: the reply is not one JSON object")
    assert "surrogate" in result["reason"] and "internal error" not in done.stderr
    assert not out.exists()


def test_a_gate_from_the_config_is_named_as_the_config_key(tmp: Path) -> None:
    root = tmp / "configured"
    (root / "home").mkdir(parents=True)
    _skill(root, "invoice-audit", "Audit supplier invoices: totals, tax lines and vendor "
           "details.", "# Invoice audit\n\nCheck the totals.\n", "OWN-EVAL-MARKER")  # fmt: skip
    (root / ".skill-evals.yml").write_text("gates:\n  min-uplift: 0.6\n", "utf-8")
    done, seen = draft(root, [], "--out", "x.jsonl", "--format", "json", name="high")
    assert done.returncode == 5 and seen == []
    assert "gates.min-uplift 0.6 in .skill-evals.yml: no suite size" in done.stderr
    assert "--min-uplift" not in done.stderr
    jsonschema.validate(json.loads(done.stdout), load_schema("draft.schema.json"))
    # a config that cannot be read: still one JSON result on stdout
    (root / ".skill-evals.yml").write_text("gates:\n  min-uplift: lots\n", "utf-8")
    done, seen = draft(root, [], "--out", "x.jsonl", "--format", "json", name="bad")
    assert done.returncode == 5 and seen == [] and ".skill-evals.yml:2:" in done.stderr
    result = json.loads(done.stdout)
    jsonschema.validate(result, load_schema("draft.schema.json"))
    assert result["status"] == "invalid" and "lots" not in done.stderr + done.stdout
