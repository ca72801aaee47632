"""A built-in judge without its key is found before the first skill runs: for every chosen
skill whose cases hold a judge check, its default and named judges are checked as `test`
checks them (docs/ci.md), so no earlier skill runs and pays first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidInput
from ..plan.judge_plan import split_judge
from ..plan.ready import check_helper_key
from ..suite.cases import CaseSuite, load_cases
from .fingerprint import SkillState
from .settings import CiConfig


def judged_suite(state: SkillState, root: Path) -> CaseSuite | None:
    """The case file of ``state``, loaded (once: its run is handed the same suite) when the
    skill has a judge to check; None without one, or when it does not load (the skill's own
    run reads it again and reports why)."""
    settings = state.location.settings
    if state.location.cases is None or (settings.judge is None and not settings.judges):
        return None
    try:
        return load_cases(root / state.location.cases, state.name)
    except InvalidInput:
        return None


def check_judges(
    state: SkillState, suite: CaseSuite, env: Mapping[str, str], config: CiConfig | None
) -> None:
    """Exit 7 (EvidenceUnavailable) for a judge of ``state`` whose program cannot start or
    whose built-in provider's key is unset, when one of the cases of ``suite`` (its loaded
    case file) would call a judge."""
    settings = state.location.settings
    if not any(c.task is not None and (c.task.judged or c.task.pairwise is not None)
               for c in suite.cases):  # fmt: skip
        return
    file = config.path.name if config is not None and config.path is not None else None
    where = f"skill {state.name}: " + (f"judge in {file}" if file else "--judge")
    check_helper_key(split_judge(settings.judge, where), "judge", where, env)
    for name, command in settings.judges:
        named = f"skill {state.name}: judges.{name}" + (f" in {file}" if file else "")
        check_helper_key(split_judge(command, named), "judge", named, env)
