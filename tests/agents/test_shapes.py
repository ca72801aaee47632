"""The read shapes, parsed again from the transcripts the real CLIs produced (captured by the
`agents` tests with SKILL_EVALS_CAPTURE_FIXTURES=1): every way of reading a skill is a load in
call order, every call that only names a path is a failed attempt — for each agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill_evals.agents.content import SkillText
from skill_evals.agents.evidence import loaded_names, read_events
from skill_evals.agents.proof import prove
from skill_evals.agents.registry import agent as load_agent
from tests.agents.scripts import shape_body, shape_description
from tests.agents.test_claude_code import LONG_BODY
from tests.conftest import skill_md

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHAPES = ("glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill", "head-skill")
SKILLS = [
    SkillText.of("refund-policy", skill_md("refund-policy")),
    SkillText.of("long-skill", skill_md("long-skill", shape_description("long-skill"), LONG_BODY)),
    *(SkillText.of(n, skill_md(n, shape_description(n), shape_body(n))) for n in SHAPES),
]
READ = {
    "claude-code": ("claude-code/shapes-read.jsonl",
                    ["glob-skill", "head-skill", "dotdot-skill", "long-skill", "cd-skill"]),
    "codex": ("codex/shapes_read.jsonl",
              ["glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill",
               "refund-policy"]),
    "pi": ("pi/shapes-read.jsonl",
           ["glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill",
            "refund-policy"]),
    "copilot": ("copilot/shapes-read.jsonl",
                ["glob-skill", "loop-skill", "cd-skill", "dotdot-skill", "python-skill",
                 "refund-policy"]),
}  # fmt: skip
NAMED = {
    "claude-code": "claude-code/shapes-named.jsonl",
    "codex": "codex/shapes_named.jsonl",
    "pi": "pi/shapes-named.jsonl",
    "copilot": "copilot/shapes-named.jsonl",
}


@pytest.mark.parametrize("agent", sorted(READ))
def test_every_read_shape_is_a_load_in_call_order(agent: str) -> None:
    name, expected = READ[agent]
    loads = prove(load_agent(agent), read_events(FIXTURES / name), SKILLS)
    assert loaded_names(loads) == expected
    assert {ld.delivery for ld in loads if ld.state == "loaded"} == {"read"}


@pytest.mark.parametrize("agent", sorted(NAMED))
def test_calls_that_only_name_a_path_are_failed_attempts(agent: str) -> None:
    events = read_events(FIXTURES / NAMED[agent])
    available = frozenset({"glob-skill"})  # what the `without` run offered
    loads = prove(load_agent(agent), events, SKILLS, None, None, available)
    assert loaded_names(loads) == []
    # Completed calls that named the file: unverified; failed ones: failed. Never loaded.
    tried = {ld.skill for ld in loads if ld.state in ("failed", "unverified")}
    assert {"refund-policy", "glob-skill"} <= tried
