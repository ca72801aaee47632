"""`draft: suggest` in `ci` (docs/drafting.md#in-ci): for a chosen skill with no cases file,
`skill-evals cases draft` runs with the trusted config's drafter and writes the drafted suite
under ``--out/drafts/``; summary.md shows its lint summary. It is never a gate: the skill's
status and exit code stay those of a skill with no cases, and nothing is committed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..draft.run import DraftOptions, run_draft
from .fingerprint import SkillState
from .settings import CiConfig

DRAFTS = "drafts"


def no_cases_hint(path: str) -> str:
    """What a skill with no cases is listed as: the command that drafts some."""
    return f"no cases — draft some: skill-evals cases draft --skill {path} --drafter …"


def draft_suite(
    state: SkillState,
    root: Path,
    out: Path,
    config: CiConfig,
    env: Mapping[str, str],
    file_stem: str,
    catalog: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """The skill entry's ``draft`` (None when ``draft`` is off): the drafted suite written to
    ``out/drafts/<file_stem>.jsonl`` and its lint summary, or why there is none. ``catalog``:
    the repository's skill paths, whose names and descriptions the drafter gets as neighbours."""
    if config.draft != "suggest" or not config.drafter:
        return None
    settings = state.location.settings
    gate = settings.gates.min_uplift
    target = out / DRAFTS / f"{file_stem}.jsonl"
    result = run_draft(
        DraftOptions(
            skill=root / state.path,
            drafter=config.drafter,
            catalog=catalog,
            out=target,
            min_uplift=gate if gate is not None and gate > 0 else None,
            min_uplift_from="gates.min-uplift {} in "
            + (config.path.name if config.path else "the config"),
            seed=settings.seed,
            retries=settings.retries,
            env=env,
            sandbox=settings.sandbox_option,
            sandbox_config=settings.sandbox,
            sandbox_path=settings.sandbox_paths,
            cwd=root,
            drafter_where=f"drafter in {config.path.name}" if config.path else "drafter",
            out_shown=f"{DRAFTS}/{file_stem}.jsonl",  # as report.json names it, no machine path
        )
    )
    problems = (result.get("lint") or {}).get("problems") or []
    warnings = sorted({p["rule"] for p in problems if p["severity"] == "warning"})
    written = result["exitCode"] == 0
    return {
        "status": result["status"],
        "path": f"{DRAFTS}/{file_stem}.jsonl" if written else None,
        "cases": sum((result.get("written") or {}).values()) if written else 0,
        "lintWarnings": sum(1 for p in problems if p["severity"] == "warning"),
        "rules": warnings,
        "reason": result["reason"],
    }


def draft_markdown(skills: list[Mapping[str, Any]], escape: Any) -> list[str]:
    """summary.md's section on the drafted suites (none when nothing was drafted)."""
    drafted = [s for s in skills if isinstance(s.get("draft"), Mapping)]
    if not drafted:
        return []
    lines = ["### Drafted suites (review before use; never a gate)", ""]
    for skill in drafted:
        found, name = skill["draft"], escape(skill.get("name"))
        if found["path"] is None:
            lines.append(f"- {name}: no suite drafted: {escape(found['reason'])}")
            continue
        lint = f"lint: {found['lintWarnings']} warning(s)"
        if found["rules"]:
            lint += " (" + ", ".join(escape(rule) for rule in found["rules"]) + ")"
        lines.append(
            f"- {name}: {found['cases']} drafted case(s) in {escape(found['path'])}; {lint}"
        )
    return [*lines, ""]
