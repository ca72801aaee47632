"""End to end through the Claude Code runner with a fake ``claude`` (a short script passed with
``--bin`` that prints the stream-json lines the real CLI prints): a neighbour sharing a section
with the tested skill is no isolation breach; a ``base64`` of a SKILL.md is isolation
unverified (a warning in every output, exit 7 with --require-verified-isolation); a skill whose
whole text a neighbour holds is a warning at load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_valid_report, skill_md, write_jsonl

SHARED = " ".join(f"Shared line {i}: keep PDF files intact and never drop pages." for i in range(8))

# It reads the prompt, then acts on it in the project the runner made (its working directory):
# "use" → the Skill tool when the skill is installed; "neighbour" → Bash cat of the neighbour's
# SKILL.md (the real file, shared section included); "encoded" → Bash base64 of the tested
# skill's SKILL.md (the result: base64 text, which no text match sees).
FAKE = r"""#!PYTHON
import base64, json, os, sys
message = json.loads(sys.stdin.readline())
prompt = message["message"]["content"]
prompt = prompt if isinstance(prompt, str) else " ".join(b.get("text", "") for b in prompt)
def out(event):
    sys.stdout.write(json.dumps(event) + "\n")
out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "s",
     "tools": ["Bash", "Read", "Skill"], "model": "claude-x", "permissionMode": "acceptEdits",
     "skills": sorted(os.listdir(".claude/skills"))})
call, result = None, None
if "use" in prompt and os.path.isdir(".claude/skills/pdf-forms"):
    call = {"name": "Skill", "input": {"skill": "pdf-forms"}}
    result = "Launching skill: pdf-forms"
elif "neighbour" in prompt:
    path = ".claude/skills/pdf-tools/SKILL.md"
    call = {"name": "Bash", "input": {"command": "cat " + path}}
    result = open(path, encoding="utf-8").read()
elif "encoded" in prompt:
    call = {"name": "Bash", "input": {"command": "base64 .claude/skills/pdf-forms/SKILL.md"}}
    result = base64.b64encode(b"---\nname: pdf-forms\n" * 30).decode()
if call is not None:
    out({"type": "assistant", "session_id": "s", "message": {"id": "m1", "role": "assistant",
         "type": "message", "content": [{"type": "tool_use", "id": "t1", **call}]}})
    out({"type": "user", "session_id": "s", "message": {"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "t1", "content": result, "is_error": False}]}})
out({"type": "assistant", "session_id": "s", "message": {"id": "m2", "role": "assistant",
     "type": "message", "content": [{"type": "text", "text": "done"}]}})
out({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5,
     "duration_api_ms": 4, "num_turns": 2, "result": "done", "session_id": "s",
     "total_cost_usd": 0, "usage": {"input_tokens": 1, "output_tokens": 1}})
"""

CASES = [
    ("u1", "use the forms skill on my PDF", True),
    ("u2", "use it to fill the PDF form", True),
    ("u3", "use the form filler", True),
    ("u4", "please use the PDF forms skill", True),
    ("u5", "use forms for this invoice", True),
    ("n1", "read the neighbour skill first", False),
    ("n2", "check the neighbour notes", False),
    ("e1", "show me the encoded skill", False),
    ("p1", "write a poem", False),
    ("p2", "sort a list in Python", False),
]


def _setup(tmp: Path, neighbour_text: str) -> tuple[Path, Path, Path, Path]:
    skills = tmp / "skills"
    tested = skills / "pdf-forms"
    tested.mkdir(parents=True)
    own = "Fill every form field, then check each box twice. " * 6
    (tested / "SKILL.md").write_text(
        skill_md("pdf-forms", "Fill PDF forms.", f"# Forms\n\n{own}\n\n{SHARED}\n"), "utf-8"
    )
    neighbour = skills / "pdf-tools"
    neighbour.mkdir()
    (neighbour / "SKILL.md").write_text(neighbour_text, encoding="utf-8")
    cases = write_jsonl(
        tmp / "cases.jsonl", [{"id": i, "prompt": p, "expectTrigger": t} for i, p, t in CASES]
    )
    fake = tmp / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(FAKE.replace("PYTHON", sys.executable, 1), encoding="utf-8")
    fake.chmod(0o755)
    return tested, neighbour, cases, fake


def _test(tmp: Path, tested: Path, neighbour: Path, cases: Path, fake: Path, *extra: str) -> Any:
    (tmp / "t").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["TMPDIR"] = str(tmp / "t")
    report = tmp / "report.json"
    runner = f"skill-evals runner claude-code --bin {fake} --with-skill {neighbour}"
    argv = ["skill-evals", "test", "--skill", str(tested), "--cases", str(cases), "--runner",
            runner, "--trials", "1", "--jobs", "2", "--report", str(report), "--markdown",
            str(tmp / "r.md"), "--junit", str(tmp / "r.xml"), "--html", str(tmp / "r.html"),
            *extra]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    return proc, json.loads(report.read_text(encoding="utf-8"))


LINE = (
    "isolation unverified on 1 of 10 without runs: a command named the skill's files and its "
    "result could not be matched to its text"
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("shared")
    merge = "Merge and split documents, keeping the order. " * 6
    text = skill_md("pdf-tools", "Merge PDFs.", f"# Tools\n\n{merge}\n\n{SHARED}\n")
    tested, neighbour, cases, fake = _setup(tmp, text)
    proc, report = _test(tmp, tested, neighbour, cases, fake)
    strict = tmp / "strict"
    strict.mkdir()
    proc7, report7 = _test(strict, tested, neighbour, cases, fake, "--require-verified-isolation")
    return {"tmp": tmp, "proc": proc, "report": report, "proc7": proc7, "report7": report7}


def test_a_shared_section_read_in_without_is_no_breach(shared: dict[str, Any]) -> None:
    proc, report = shared["proc"], shared["report"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_valid_report(report)
    assert report["runner"]["failures"] == []
    assert report["trigger"]["tp"] == 5 and report["trigger"]["fp"] == 0


def test_an_encoded_read_is_isolation_unverified_in_every_output(shared: dict[str, Any]) -> None:
    report, tmp = shared["report"], shared["tmp"]
    assert report["loading"]["isolationUnverified"] == 1
    assert report["loading"]["unverified"] == [
        {"caseId": "e1", "trial": 1, "variant": "without", "skill": "pdf-forms",
         "source": "Bash result"}
    ]  # fmt: skip
    pairs = list(zip(report["messageSeverities"], report["messages"], strict=True))
    assert ("warning", LINE) in pairs
    assert LINE in shared["proc"].stdout
    for name in ("r.md", "r.xml"):
        assert LINE in (tmp / name).read_text(encoding="utf-8"), name
    html = (tmp / "r.html").read_text(encoding="utf-8")
    assert LINE.replace("'", "&#x27;") in html or LINE in html
    assert "without: unverified" in html  # the per-case detail shows the state
    load_state = next(c for c in report["caseResults"] if c["id"] == "e1")["loadState"]
    assert load_state["without"] == ["unverified"]


def test_require_verified_isolation_makes_it_exit_7(shared: dict[str, Any]) -> None:
    proc, report = shared["proc7"], shared["report7"]
    assert proc.returncode == 7, proc.stdout
    assert_valid_report(report)
    pairs = list(zip(report["messageSeverities"], report["messages"], strict=True))
    assert ("error", LINE) in pairs
    junit = (shared["tmp"] / "strict" / "r.xml").read_text(encoding="utf-8")
    assert 'name="isolation"' in junit and "<error" in junit


def test_a_skill_held_whole_by_its_neighbour_is_a_warning_at_load(tmp_path: Path) -> None:
    tested, neighbour, cases, fake = _setup(tmp_path, "placeholder")
    whole = (tested / "SKILL.md").read_text(encoding="utf-8")
    (neighbour / "SKILL.md").write_text(
        skill_md("pdf-tools", "All PDF work.", "Included:\n\n" + whole), encoding="utf-8"
    )
    proc, report = _test(tmp_path, tested, neighbour, cases, fake, "--max-invocations", "2")
    warning = (
        "pdf-forms: no 200 characters are unique to it (shared with pdf-tools); only a skill "
        "tool or an explicit invocation can prove its load"
    )
    assert proc.stderr.splitlines().count(f"skill-evals: warning: {warning}") == 1
    pairs = list(zip(report["messageSeverities"], report["messages"], strict=True))
    assert ("warning", warning) in pairs


def test_the_ci_summary_says_it_too(shared: dict[str, Any]) -> None:
    from skill_evals.ci.summary import render_summary
    from tests.report.test_diagnosis import ci_report

    for report in (shared["report"], shared["report7"]):
        assert LINE in render_summary(ci_report(report))


def test_the_runner_warns_at_load_too(tmp_path: Path) -> None:
    tested, neighbour, _, fake = _setup(tmp_path, "placeholder")
    whole = (tested / "SKILL.md").read_text(encoding="utf-8")
    (neighbour / "SKILL.md").write_text(
        skill_md("pdf-tools", "All PDF work.", "Included:\n\n" + whole), encoding="utf-8"
    )
    (tmp_path / "t").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(TMPDIR=str(tmp_path / "t"), EVALGATE_SKILL_VARIANT="without",
               EVALGATE_SKILL_DIR=str(tested), EVALGATE_SKILL_CASE_ID="c1",
               EVALGATE_SKILL_TRIAL="1")  # fmt: skip
    argv = ["skill-evals", "runner", "claude-code", "--bin", str(fake), "--with-skill",
            str(neighbour)]  # fmt: skip
    proc = subprocess.run(argv, input="write a poem", capture_output=True, text=True, env=env,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (
        "skill-evals: warning: pdf-forms: no 200 characters are unique to it (shared with "
        "pdf-tools)" in proc.stderr
    )
    assert json.loads(proc.stdout)["invokedSkills"] == []
