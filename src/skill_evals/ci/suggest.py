"""`improve: suggest` in `ci` (docs/ci.md#suggested-descriptions): for a skill whose trigger gate
failed, `skill-evals improve` runs after the gate and its validated description becomes a
suggestion — in the summary and the comment, under ``--out/suggestions/``, and (with
``--comment``, when the pull request's diff touches the description) as a review comment. The
verdict and the exit code never change; nothing is committed, pushed or edited."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agents.registry import builtin_agent
from ..improve.edit import description_line, description_span
from ..improve.run import ImproveOptions, run_improve
from ..plan.run_settings import default_timeout_ms
from .budget import TotalBudget
from .fingerprint import SkillState
from .settings import CiConfig

SUGGESTIONS = "suggestions"


def gate_failed(report: Mapping[str, Any] | None) -> bool:
    """Whether the skill's ``min-trigger-f1`` gate ran and failed."""
    gates = (report or {}).get("gates") or {}
    gate = gates.get("minTriggerF1") if isinstance(gates, Mapping) else None
    return isinstance(gate, Mapping) and gate.get("passed") is False


def _options(
    state: SkillState, root: Path, config: CiConfig, total: TotalBudget, env: Mapping[str, str]
) -> ImproveOptions:
    settings = state.location.settings
    given = config.improve_options
    assert settings.runner is not None and state.location.cases is not None
    return ImproveOptions(
        skill=root / state.path,
        cases=root / state.location.cases,
        runner=settings.runner,
        proposer=config.proposer or "",
        proposer_where=f"proposer (--proposer, or proposer: in {config.path.name})"
        if config.path
        else "--proposer",
        holdout=given.get("holdout", 0.4),
        rounds=given.get("rounds", 3),
        min_gain=given.get("min-gain", 0.05),
        trials=given.get("trials", settings.trials),
        seed=settings.seed,
        bootstrap_samples=settings.bootstrap_samples,
        jobs=settings.jobs,
        timeout_ms=settings.timeout_ms or default_timeout_ms(settings.runner),
        retries=settings.retries,
        agent=settings.agent or builtin_agent(settings.runner),
        max_invocations=total.for_skill(settings.budget).invocations,
        max_cost_usd=total.for_skill(settings.budget).cost_usd,
        env=env,
        display_root=root,
        sandbox=settings.sandbox_option,
        sandbox_config=settings.sandbox,
        sandbox_path=settings.sandbox_paths,
    )


def _held_out(report: Mapping[str, Any]) -> dict[str, Any] | None:
    comparison = report.get("heldOutComparison")
    if not comparison:
        return None
    before = (report.get("original") or {}).get("heldOut") or {}
    after = (report.get("candidate") or {}).get("heldOut") or {}
    return {
        "before": before.get("f1"),
        "after": after.get("f1"),
        "difference": comparison["f1Difference"],
        "lower": comparison["interval"]["lower"],
        "upper": comparison["interval"]["upper"],
        "cases": len((report.get("split") or {}).get("heldOut") or []),
    }


def review_comment(state: SkillState, root: Path, description: str) -> dict[str, Any]:
    """The review comment that suggests the new description line on the PR's diff."""
    text = (root / state.path / "SKILL.md").read_bytes().decode("utf-8")
    start, end = description_span(text)
    body = "```suggestion\n" + description_line(description) + "\n```"
    comment: dict[str, Any] = {"path": f"{state.path}/SKILL.md", "line": end, "side": "RIGHT"}
    if end - start > 1:
        comment["start_line"] = start + 1
    comment["body"] = body
    return comment


def suggest(
    state: SkillState,
    report: Mapping[str, Any] | None,
    root: Path,
    out: Path,
    config: CiConfig,
    total: TotalBudget,
    env: Mapping[str, str],
    file_stem: str,
) -> dict[str, Any] | None:
    """The skill entry's ``suggestion`` (None when improve does not run for it), with its files
    written under ``out/suggestions/``."""
    if config.improve != "suggest" or not gate_failed(report):
        return None
    result = run_improve(_options(state, root, config, total, env))
    invocations = int(result["runner"]["invocations"])
    if total.invocations is not None:
        total.invocations = max(0, total.invocations - invocations)
    folder = out / SUGGESTIONS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{file_stem}.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    accepted = result["status"] == "accepted"
    description = (result.get("candidate") or {}).get("description")
    if accepted and description is not None:
        (folder / f"{file_stem}.diff").write_text(result["diff"] or "", "utf-8")
        comment = review_comment(state, root, description)
        (folder / f"{file_stem}.review.json").write_text(json.dumps(comment, indent=2) + "\n")
    return {
        "accepted": accepted,
        "description": description if accepted else None,
        "heldOut": _held_out(result) if accepted else None,
        "reason": str(result["decision"]["reason"]),
        "diff": result["diff"] if accepted else None,
    }


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (so it cannot close it)."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def suggestion_markdown(skill: Mapping[str, Any], escape: Any) -> list[str]:
    """The summary's and comment's lines for a skill's suggestion (none without one)."""
    found = skill.get("suggestion")
    if not isinstance(found, Mapping):
        return []
    held = found.get("heldOut")
    if not found.get("accepted") or not isinstance(held, Mapping):
        return [f"- no validated suggestion: {escape(found.get('reason'))}", ""]
    line = (
        f"Suggested description — held-out F1 {held['before']:.2f} → {held['after']:.2f} "
        f"({held['difference']:+.2f} [{held['lower']:+.2f}, {held['upper']:+.2f}]) on "
        f"{held['cases']} held-out cases"
    )
    diff = str(found.get("diff") or "")
    # The diff's own text is shown as code: inside a fence nothing in it is Markdown, and the
    # fence is longer than any backtick run it holds; control characters are escaped.
    shown = "".join(c if c.isprintable() or c == "\n" else f"\\u{ord(c):04x}" for c in diff)
    fence = _fence(shown)
    return [line, "", f"{fence}diff", shown.rstrip("\n"), fence, ""]
