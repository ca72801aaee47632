"""Real Claude Code against the scripted model server: a `without` run that reads a neighbour
skill sharing a ~450-character section with the tested skill is no isolation breach (the shared
text proves neither; the neighbour's own text still proves the neighbour)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skill_evals.agents import claude_code
from skill_evals.agents.base import AgentInvocation, AgentOptions
from tests.agents.conftest import agent_binary
from tests.agents.fake_anthropic import FakeAnthropic
from tests.conftest import write_skill

SHARED = " ".join(f"Shared line {i}: keep store receipts and never drop pages." for i in range(8))


@pytest.mark.agents
def test_a_shared_section_read_in_without_is_no_breach(tmp_path: Path) -> None:
    assert len(SHARED) >= 450
    tested = write_skill(
        tmp_path / "skills", "refund-policy", body=f"# Refunds\n\nWithin 30 days.\n\n{SHARED}\n"
    )
    neighbour = write_skill(
        tmp_path / "neighbours", "shipping-times", "Answer questions about shipping times.",
        f"# Shipping\n\nTwo to five days.\n\n{SHARED}\n",
    )  # fmt: skip
    script = [
        ("Bash", {"command": "cat {skill:shipping-times}", "description": "read"}),
    ]
    options = AgentOptions(bin=agent_binary("claude"), with_skills=(neighbour,))
    invocation = AgentInvocation("without", tested, "case", 1, "Do the steps.")
    with FakeAnthropic(script=script) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update(fake.env())
        result = claude_code.run(invocation, options, env)
    assert result.invoked_skills == ["shipping-times"]  # its unique text was shown: a load
    states = {(e["skill"], e["state"]) for e in result.evidence}
    assert ("refund-policy", "loaded") not in states  # the shared section proves nothing
    assert "refund-policy" not in result.invoked_skills
