"""`skill-evals route` over the whole catalog, workspace tasks and `--read-only` through the real
Gemini CLI and pi (`-m agents`); the checks are tests/agents/catalog_work.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import catalog_work
from tests.agents.catalog_work import Scripted

AGENTS = catalog_work.agents_of(Path(__file__).name)


@pytest.mark.agents
@pytest.mark.parametrize("agent", AGENTS)
def test_routes_across_the_whole_catalog(agent: Scripted, tmp_path: Path) -> None:
    catalog_work.routes_across_the_whole_catalog(agent, tmp_path)


@pytest.mark.agents
@pytest.mark.parametrize("agent", AGENTS)
def test_the_agent_works_in_the_engine_workspace(agent: Scripted, tmp_path: Path) -> None:
    catalog_work.works_in_the_engine_workspace(agent, tmp_path)


@pytest.mark.agents
@pytest.mark.parametrize("agent", AGENTS)
def test_read_only_refuses_edits_and_commands(agent: Scripted, tmp_path: Path) -> None:
    catalog_work.read_only_refuses_edits_and_commands(agent, tmp_path)
