"""Content proof counts only text unique to a skill among the exposed skills; a completed call
that named a skill's files without proving it is ``unverified``; ``skill-evals evidence``
without ``--skill`` lists every completed SKILL.md read as unverified (each agent's real event
shape: the recorded transcripts in tests/agents/fixtures)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from skill_evals.agents.content import index_skills, normalize, not_unique_warnings
from tests.conftest import skill_md, write_skill

FIXTURES = Path(__file__).parent / "fixtures"

SHARED = " ".join(
    f"Shared guidance line {i} about PDF files and their careful handling." for i in range(8)
)
FOOTER = ("Maintained by the documents team. Report problems in the tracker, include the file, "
          "the steps and what you expected; we answer within two working days, weekends "
          "excluded, public holidays as well, sorry.")  # fmt: skip


def _md(name: str, own: str, shared: str = SHARED) -> str:
    return skill_md(name, f"Work with {name}.", f"# {name}\n\n{own}\n\n{shared}\n")


def test_a_shared_section_proves_neither_skill_and_unique_text_still_does() -> None:
    assert 200 <= len(FOOTER) < 215 and len(SHARED) > 450
    for shared in (SHARED, FOOTER):
        tested, neighbour = index_skills([
            ("pdf-forms", _md("pdf-forms", "Fill every form field; " * 12, shared)),
            ("pdf-tools", _md("pdf-tools", "Merge and split documents; " * 12, shared)),
        ])  # fmt: skip
        assert tested.shared_with == ("pdf-tools",) and neighbour.shared_with == ("pdf-forms",)
        shown = normalize(_md("pdf-tools", "Merge and split documents; " * 12, shared))
        assert neighbour.shown_in(shown) and not tested.shown_in(shown)
        assert not tested.shown_in(normalize(shared))
        assert tested.shown_in(normalize("Fill every form field; " * 12))
        assert not_unique_warnings([tested, neighbour]) == []


def test_a_skill_held_whole_by_another_has_no_proof_and_a_warning() -> None:
    small = skill_md("pdf-forms", "Fill PDF forms.", "# Forms\n\n" + "Fill each field. " * 20)
    big = skill_md("pdf-tools", "All PDF work.", "# Tools\n\nIncluded:\n\n" + small + "\nMore.\n")
    tiny = skill_md("tiny", "T.", "x")
    holder = skill_md("holder", "H.", "see below\n" + tiny)
    skills = index_skills([("pdf-forms", small), ("pdf-tools", big), ("tiny", tiny),
                           ("holder", holder)])  # fmt: skip
    assert not skills[0].shown_in(normalize(big)) and skills[1].shown_in(normalize(big))
    assert not skills[2].shown_in(normalize(tiny))
    assert not_unique_warnings(skills) == [
        "pdf-forms: no 200 characters are unique to it (shared with pdf-tools); only a skill "
        "tool or an explicit invocation can prove its load",
        "tiny: no 200 characters are unique to it (shared with holder); only a skill tool or an "
        "explicit invocation can prove its load",
    ]


def test_a_copy_of_the_same_skill_still_proves_it() -> None:
    text = _md("pdf-forms", "Fill every form field; " * 12)
    first, copy = index_skills([("pdf-forms", text), ("pdf-forms", text)])
    assert first.shown_in(normalize(text)) and not_unique_warnings([first, copy]) == []


def test_hostile_sizes_stay_linear() -> None:
    """Two 1 MiB skills that share everything, and one that shares every other line."""
    line = "".join(chr(0x61 + (i % 26)) for i in range(97))
    body = "\n".join(f"{i:07d} {line}" for i in range(10_000))
    started = time.monotonic()
    skills = index_skills([("a", skill_md("a", "A.", body)), ("b", skill_md("b", "B.", body)),
                           ("c", skill_md("c", "C.", body[::2]))])  # fmt: skip
    assert time.monotonic() - started < 20
    assert [s.name for s in skills if not s.provable] == []  # the frontmatter stays unique
    assert not skills[0].shown_in(normalize(body))


# ------------------------------------------------------------------ evidence without --skill

# (agent, recorded transcript of a real run that read a SKILL.md, the tool label of that read)
READS = [
    ("claude-code", "claude-code/read-skill-md.jsonl", "Read result"),
    ("codex", "codex/sed_read.jsonl", "command_execution result"),
    ("pi", "pi/shapes-read.jsonl", "read result"),
    ("gemini", "gemini/read-file.jsonl", "read_file result"),
    ("opencode", "opencode/reads.jsonl", "read result"),
    ("copilot", "copilot/reads.jsonl", "view result"),
]
NATIVE = [
    ("claude-code", "claude-code/with-skill-tool.jsonl"),
    ("gemini", "gemini/with.jsonl"),
    ("opencode", "opencode/with.jsonl"),
    ("copilot", "copilot/with.jsonl"),
]
NOTE = "reads cannot be proven without --skill DIR; listed as unverified"


def _evidence(*args: str) -> tuple[list[dict[str, Any]], str]:
    proc = subprocess.run(["skill-evals", "evidence", *args], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize(("agent", "name", "source"), READS)
def test_reads_without_skill_are_listed_as_unverified(agent: str, name: str, source: str) -> None:
    items, stderr = _evidence("--agent", agent, str(FIXTURES / name))
    reads = [i for i in items if i["skill"] == "refund-policy"]
    want = {"skill": "refund-policy", "state": "unverified", "delivery": "read", "agent": agent,
            "source": source}  # fmt: skip
    assert want in [{k: v for k, v in i.items() if k != "index"} for i in reads]
    assert stderr.count(NOTE) == 1
    assert all(i["state"] != "loaded" for i in items if i["delivery"] == "read")


@pytest.mark.parametrize(("agent", "name"), NATIVE)
def test_native_skill_tools_are_still_loaded_without_skill(agent: str, name: str) -> None:
    items, stderr = _evidence("--agent", agent, str(FIXTURES / name))
    assert [(i["skill"], i["state"], i["delivery"]) for i in items] == [
        ("refund-policy", "loaded", "native")
    ]
    assert NOTE not in stderr


def test_a_shell_variable_is_no_skill_folder() -> None:
    items, _ = _evidence("--agent", "pi", str(FIXTURES / "pi/shapes-read.jsonl"))
    assert {i["skill"] for i in items} == {"refund-policy", "dotdot-skill", "python-skill"}


def test_evidence_with_skills_warns_about_a_skill_with_no_unique_text(tmp_path: Path) -> None:
    small = write_skill(tmp_path, "pdf-forms", "Fill PDF forms.", "Fill each field. " * 20)
    big = tmp_path / "pdf-tools"
    big.mkdir()
    (big / "SKILL.md").write_text(
        skill_md("pdf-tools", "All PDF work.", "Included:\n\n" + (small / "SKILL.md").read_text()),
        encoding="utf-8",
    )
    transcript = FIXTURES / "claude-code/read-skill-md.jsonl"
    _, stderr = _evidence("--agent", "claude-code", "--skill", str(small), "--skill", str(big),
                          str(transcript))  # fmt: skip
    assert (
        "skill-evals: warning: pdf-forms: no 200 characters are unique to it (shared with "
        "pdf-tools); only a skill tool or an explicit invocation can prove its load"
    ) in stderr.splitlines()


def test_a_loader_naming_the_skill_needs_its_text_not_unique_text(tmp_path: Path) -> None:
    """An MCP load_<name>_skill whose result is the skill's text loads it even when a neighbour
    holds that whole text (only content proof needs unique text)."""
    tested = write_skill(tmp_path, "refund-policy")
    holder = tmp_path / "holder"
    holder.mkdir()
    (holder / "SKILL.md").write_text(
        skill_md("holder", "Holds.", "Copy:\n\n" + (tested / "SKILL.md").read_text()), "utf-8"
    )
    transcript = FIXTURES / "claude-code/mcp-with.jsonl"
    items, stderr = _evidence("--agent", "claude-code", "--skill", str(tested), "--skill",
                              str(holder), str(transcript))  # fmt: skip
    assert ("refund-policy", "loaded", "mcp") in [
        (i["skill"], i["state"], i["delivery"]) for i in items
    ]
    assert "refund-policy: no 200 characters are unique to it (shared with holder)" in stderr


def test_a_neighbour_of_exactly_200_characters_held_whole_proves_neither() -> None:
    head = "---\nname: b\ndescription: B.\n---\n"
    short = head + "q" * (200 - len(normalize(head)) - 1)
    assert len(normalize(short)) == 200
    big = skill_md("a", "A.", "Own words of a. " * 20 + "\n" + short + "\n" + "More of a. " * 20)
    tested, neighbour = index_skills([("a", big), ("b", short)])
    assert not tested.shown_in(normalize(short)) and tested.shown_in(normalize(big))
    assert not neighbour.provable and neighbour.shared_with == ("a",)


def test_the_warning_names_every_skill_that_holds_the_text() -> None:
    own = skill_md("a", "A.", "Only the words of the first skill, repeated. " * 8)
    holder_b = skill_md("b", "B.", "Before. " * 30 + own)
    holder_c = skill_md("c", "C.", own + "After. " * 30)
    skills = index_skills([("a", own), ("b", holder_b), ("c", holder_c)])
    assert skills[0].shared_with == ("b", "c")
    assert not_unique_warnings(skills)[0].startswith(
        "a: no 200 characters are unique to it (shared with b, c);"
    )


@pytest.mark.parametrize(
    "command",
    [
        'base64 "/w/p/.claude/skills/quoted-skill"/SKILL.md',
        "xxd '/w/p/.claude/skills/quoted-skill'/SKILL.md",
        "rev < ./.claude/skills/quoted-skill/./SKILL.md",
    ],
)
def test_a_quoted_or_dotted_skill_md_path_is_listed_without_skill(
    tmp_path: Path, command: str
) -> None:
    events = [
        {"type": "system", "subtype": "init", "cwd": "/w/p", "session_id": "s", "tools": ["Bash"]},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "LS0tCm5h", "is_error": False}
        ]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_api_ms": 3},
    ]  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    items, stderr = _evidence("--agent", "claude-code", str(transcript))
    assert [(i["skill"], i["state"], i["delivery"]) for i in items] == [
        ("quoted-skill", "unverified", "read")
    ]
    assert stderr.count(NOTE) == 1
