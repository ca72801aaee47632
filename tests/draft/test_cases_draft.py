"""`skill-evals cases draft` through the real CLI, in the real sandbox, with a scripted drafter
that logs every request it is shown: what it saw (the skill's first --body-chars characters,
the neighbours' names and descriptions, never an eval file), what was kept and dropped, the ids
and the source, no overwrite without --append; the drafted suite then goes through `lint` and
`test` with the simulated runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
DRAFTER = HERE / "scripted_drafter.py"
BODY = "# Invoice audit\n\n" + "Check the totals and tax lines of each supplier invoice. " * 8
BODY += "\n\nBODY-TAIL-MARKER never shown with a small --body-chars.\n"
MARKERS = ("OWN-EVAL-MARKER", "OWN-REF-MARKER", "NEIGHBOUR-EVAL-MARKER", "NEIGHBOUR-BODY-MARKER")


def _c(bucket: str, prompt: str, label: bool, **more: Any) -> dict[str, Any]:
    return {"bucket": bucket, "prompt": prompt, "expectTrigger": label, **more}


GOOD = [
    _c("explicit", "Audit this supplier invoice: check totals and tax lines.", True,
       task={"check": "output_matches", "pattern": "total", "flags": "i"}),
    _c("explicit", "Please audit the invoice totals for vendor ACME.", True,
       task={"check": "nope"}),  # refused by the parser: dropped
    _c("explicit", "Run the Invoice-Audit skill on this bill.", True),  # names the skill
    _c("explicit", "Check the tax lines and totals on these supplier invoices.", True),
    _c("explicit", "Audit invoice totals and vendor details for March.", True),
    _c("explicit", "Verify supplier invoice tax lines before payment.", True),
    _c("explicit", "Audit the invoices from our paper supplier.", True),  # one too many
    _c("implicit", "The supplier bill adds up to more than its lines; is the total right?", True),
    _c("implicit", "the supplier bill adds up to more than its LINES;   is the total right?", True),
    _c("implicit", "Do the VAT lines on this vendor bill look correct?", True),
    _c("implicit", "Our accounts team found a mismatch on a vendor bill total.", True),
    _c("implicit", "Is the tax on this supplier's bill calculated correctly?", True),
    _c("contextual", "x" * 4001, True),
    _c("contextual", "   ", True),
    _c("contextual", "I'm closing the month. Before payroll, check the invoice totals from "
       "our three suppliers, then draft a note to finance.", True),
    _c("contextual", "While planning the budget review, audit the tax lines on last week's "
       "supplier invoices and list any errors.", True),
    _c("near-miss", "What is the balance on my gift card?", False, neighbour="gift-cards"),
    _c("near-miss", "Redeem a gift card for an online order.", False, neighbour="nobody"),
    _c("near-miss", "Write an invoice template for my freelance work.", False),
    _c("near-miss", "Explain what a tax line is in general terms.", False),
    _c("near-miss", "Send a reminder for an unpaid invoice I issued.", False),
    _c("near-miss", "Translate this supplier's letter into German.", False),
    _c("unrelated", "What is the capital of Australia?", False),
    _c("unrelated", "Write a haiku about autumn rain.", True),  # label disagrees: dropped
    _c("unrelated", "Convert 72 Fahrenheit to Celsius.", False),
    _c("unrelated", "Suggest a name for a pet goldfish.", False),
    _c("unrelated", "Plan a three-day trip to Lisbon.", False),
]  # fmt: skip
DROPPED = {
    "invalid task": 1, "prompt-names-skill": 1, "more than the bucket asked for": 1,
    "duplicate prompt": 1, "prompt over 4000 characters": 1, "empty prompt": 1,
    "expectTrigger disagrees with its bucket": 1,
}  # fmt: skip


def _skill(root: Path, name: str, description: str, body: str, marker: str) -> Path:
    skill = root / "skills" / name
    (skill / "evals").mkdir(parents=True)
    front = f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n"
    (skill / "SKILL.md").write_text(front + body, "utf-8")
    (skill / "evals" / "cases.jsonl").write_text(
        json.dumps({"id": "x", "prompt": marker, "expectTrigger": True}) + "\n", "utf-8"
    )
    return skill


def _env(tmp: Path) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp / "home"),
        "LANG": "C.UTF-8",
    }


def draft(tmp: Path, replies: list[Any], *more: str, name: str = "log") -> tuple[Any, list[Any]]:
    """Run `cases draft` with the scripted drafter; (the completed process, the requests)."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    log, replies_file = work / f"{name}.jsonl", work / f"{name}-replies.json"
    replies_file.write_text(json.dumps(replies), "utf-8")
    drafter = f"{sys.executable} {DRAFTER} --log={log} --replies={replies_file}"
    args = [
        sys.executable, "-m", "skill_evals", "cases", "draft", "--skill", "skills/invoice-audit",
        "--drafter", drafter, "--sandbox", "required", "--sandbox-path", f"{work}:rw", *more,
    ]  # fmt: skip
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=300, cwd=tmp, env=_env(tmp), check=False
    )
    lines = log.read_text("utf-8").splitlines() if log.exists() else []
    seen = [json.loads(line) for line in lines]
    return done, seen


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("draft")
    (tmp / "home").mkdir()
    own = _skill(tmp, "invoice-audit", "Audit supplier invoices: totals, tax lines and vendor "
                 "details.", BODY, "OWN-EVAL-MARKER")  # fmt: skip
    (own / "references").mkdir()
    (own / "references" / "notes.md").write_text("OWN-REF-MARKER\n", "utf-8")
    _skill(tmp, "gift-cards", "Answer questions about gift card balances and redeeming them.",
           "# Gift cards\n\nNEIGHBOUR-BODY-MARKER\n", "NEIGHBOUR-EVAL-MARKER")  # fmt: skip
    done, seen = draft(
        tmp, [{"cases": GOOD}], "--catalog", "skills/*", "--body-chars", "100", "--with-tasks",
        "--out", "drafted/cases.jsonl", "--format", "json",
    )  # fmt: skip
    return {"tmp": tmp, "done": done, "seen": seen}


def test_the_drafter_sees_only_the_documented_request(setup: dict[str, Any]) -> None:
    done, seen = setup["done"], setup["seen"]
    assert done.returncode == 0, done.stderr
    (request,) = seen  # every bucket was filled by the first reply: one call
    assert set(request) == {"skill", "neighbours", "buckets", "withTasks"}
    assert request["skill"]["name"] == "invoice-audit"
    assert request["skill"]["body"] == BODY[:100]
    described = "Answer questions about gift card balances and redeeming them."
    assert request["neighbours"] == [{"name": "gift-cards", "description": described}]
    assert request["buckets"] == {"explicit": 4, "implicit": 4, "contextual": 2, "near-miss": 6,
                                  "unrelated": 4}  # fmt: skip
    assert request["withTasks"] is True
    shown = json.dumps(seen)
    assert not any(marker in shown for marker in (*MARKERS, "BODY-TAIL-MARKER"))


def test_what_is_kept_dropped_and_written(setup: dict[str, Any]) -> None:
    tmp, done = setup["tmp"], setup["done"]
    result = json.loads(done.stdout)
    assert result["status"] == "drafted" and result["drafter"] == {"calls": 1}
    assert result["dropped"] == DROPPED
    assert result["written"] == {"explicit": 4, "implicit": 4, "contextual": 2, "near-miss": 6,
                                 "unrelated": 4}  # fmt: skip
    lines = (tmp / "drafted" / "cases.jsonl").read_text("utf-8").splitlines()
    cases = [json.loads(line) for line in lines]
    assert [c["id"] for c in cases][:5] == [f"explicit-{n}" for n in (1, 2, 3, 4)] + ["implicit-1"]
    assert all(c["source"] == "drafted" for c in cases)
    assert cases[0]["task"] == GOOD[0]["task"] and "task" not in cases[1]
    near = [c for c in cases if c["id"].startswith("near-miss")]
    assert near[0]["tags"] == ["near-miss", "neighbour:gift-cards"]
    assert near[1]["tags"] == ["near-miss"]  # an unknown neighbour is not named
    # Errors and summaries never quote a prompt.
    assert "supplier" not in done.stderr


def test_the_drafted_suite_lints_and_runs(setup: dict[str, Any]) -> None:
    tmp = setup["tmp"]
    cases = tmp / "drafted" / "cases.jsonl"
    base = [sys.executable, "-m", "skill_evals"]
    lint = subprocess.run(
        [*base, "lint", "--skill", "skills/invoice-audit", "--cases", str(cases), "--format",
         "json"], capture_output=True, text=True, cwd=tmp, env=_env(tmp), timeout=120, check=False,
    )  # fmt: skip
    assert lint.returncode == 0, lint.stderr
    assert [p["rule"] for p in json.loads(lint.stdout)["problems"]] == []
    report = tmp / "report.json"
    test = subprocess.run(
        [*base, "test", "--skill", "skills/invoice-audit", "--cases", str(cases), "--runner",
         "skill-evals runner simulated", "--trials", "1", "--format", "json", "--report",
         str(report), "--html", str(tmp / "report.html")], capture_output=True, text=True,
        cwd=tmp, env=_env(tmp), timeout=300, check=False,
    )  # fmt: skip
    assert test.returncode in (0, 1), test.stderr
    results = json.loads(report.read_text("utf-8"))["caseResults"]
    assert len(results) == 20 and {r["source"] for r in results} == {"drafted"}
    page = (tmp / "report.html").read_text("utf-8")
    assert "<code>explicit-1</code> <small>(drafted)</small>" in page  # the per-case table


def test_never_overwritten_and_append_adds_new_ids(setup: dict[str, Any]) -> None:
    tmp = setup["tmp"]
    out = tmp / "drafted" / "cases.jsonl"
    before = out.read_bytes()
    done, seen = draft(tmp, [{"cases": GOOD}], "--out", str(out), name="again")
    assert done.returncode == 5 and "never overwritten" in done.stderr and seen == []
    assert out.read_bytes() == before
    more = [_c("explicit", "Audit the invoice from our printer supplier for errors.", True),
            _c("unrelated", "List five facts about octopuses.", False),
            _c("unrelated", "What is the capital of Australia?", False)]  # fmt: skip
    done, seen = draft(tmp, [{"cases": more}], "--out", str(out), "--append", "--count", "10",
                       name="append")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(seen) == 2  # buckets still short: asked again; that call added nothing, so it ends
    after = out.read_bytes()
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].decode().splitlines()]
    assert [c["id"] for c in added] == ["explicit-5", "unrelated-5"]


def test_drafter_failures_exit_7_and_write_nothing(setup: dict[str, Any]) -> None:
    tmp = setup["tmp"]
    out = tmp / "fail" / "cases.jsonl"
    cases: list[tuple[list[Any], str, int]] = [
        ([{"runnerError": "quota gone", "retryable": False}], "drafter: quota gone", 1),
        ([{"cases": GOOD, "exit": 3}], "drafter: exited with code 3", 1),
        ([{"cases": GOOD, "extra": 1}], "drafter: the reply has an unknown key 'extra'", 1),
        ([{"runnerError": "busy", "retryable": True}], "drafter: busy", 2),
    ]
    for i, (replies, reason, calls) in enumerate(cases):
        done, seen = draft(tmp, replies, "--out", str(out), "--retries", "1", name=f"f{i}")
        assert done.returncode == 7 and reason in done.stderr, done.stderr
        assert len(seen) == calls and not out.exists()
    ok = [{"runnerError": "busy", "retryable": True}, {"cases": GOOD}]
    done, seen = draft(tmp, ok, "--out", str(out), "--retries", "1", name="retry")
    assert done.returncode == 0 and len(seen) == 2 and out.exists()


def test_a_gate_sizes_the_suite_and_a_short_one_writes_nothing(setup: dict[str, Any]) -> None:
    tmp = setup["tmp"]
    out = tmp / "gate" / "cases.jsonl"
    top_up = [_c("explicit", "Check the invoice totals our auditor flagged.", True),
              _c("implicit", "Does this vendor bill charge the right sales tax?", True),
              _c("contextual", "Between two calls, audit the totals of the cleaning "
                 "supplier's invoice and note what is wrong.", True)]  # fmt: skip
    done, seen = draft(tmp, [{"cases": GOOD}, {"cases": top_up}], "--out", str(out),
                       "--min-uplift", "0.2", name="gate")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert seen[0]["withTasks"] is True
    assert seen[0]["buckets"] == {"explicit": 5, "implicit": 5, "contextual": 3, "near-miss": 7,
                                  "unrelated": 5}  # fmt: skip
    assert seen[1]["buckets"] == {"explicit": 0, "implicit": 1, "contextual": 1, "near-miss": 1,
                                  "unrelated": 1}  # fmt: skip
    assert "few-task-cases" in done.stdout  # the scripted drafter gave too few tasks: lint says so
    short = tmp / "short" / "cases.jsonl"
    done, _ = draft(tmp, [{"cases": GOOD[:8]}], "--out", str(short), name="short")
    assert done.returncode == 6 and "nothing was written" in done.stderr
    assert not short.exists() and not os.listdir(short.parent)


def test_the_config_gate_and_count_size_the_request(setup: dict[str, Any]) -> None:
    tmp = setup["tmp"]
    out = tmp / "sized" / "cases.jsonl"
    done, seen = draft(tmp, [{"runnerError": "stop here", "retryable": False}], "--out",
                       str(out), "--count", "10", name="count")  # fmt: skip
    assert done.returncode == 7 and seen[0]["withTasks"] is False
    assert seen[0]["buckets"] == {"explicit": 2, "implicit": 2, "contextual": 1, "near-miss": 3,
                                  "unrelated": 2}  # fmt: skip
    (tmp / ".skill-evals.yml").write_text("gates:\n  min-uplift: 0.3\n", "utf-8")
    try:
        done, seen = draft(tmp, [{"runnerError": "stop here", "retryable": False}], "--out",
                           str(out), name="config")  # fmt: skip
        assert "sizing for min-uplift 0.3 from .skill-evals.yml" in done.stderr
        positives = sum(seen[0]["buckets"][b] for b in ("explicit", "implicit", "contextual"))
        assert seen[0]["withTasks"] is True and positives == 29
        done, seen = draft(tmp, [], "--out", str(out), "--min-uplift", "0.5", name="high")
        assert done.returncode == 5 and "use a gate below 0.5" in done.stderr and seen == []
    finally:
        (tmp / ".skill-evals.yml").unlink()
