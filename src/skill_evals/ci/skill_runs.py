"""The CI gate's skill runs: the preflight that refuses a chosen skill without a runner before
anything starts, then each chosen skill evaluated with ``skill-evals test`` in turn (its
baseline, its share of the budget, the cache, the runner's environment without the CI's own
tokens) or skipped with a reason, and turned into its report entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..agents import simulated
from ..codes import INTERRUPTED, INVALID, UNAVAILABLE
from ..errors import InvalidInput
from ..messages import join_clauses
from ..plan.ready import check_runner
from ..plan.scope import ArmOptions
from ..report.answers import Answers
from ..run.record_lock import RecordLocks
from ..suite.cases import CaseSuite
from .base_commit import event_base_sha
from .base_skills import CompareBase, compare_ref
from .budget import TotalBudget
from .changes import ChangeSet
from .console import Console
from .draft_suggest import draft_suite, no_cases_hint
from .entry_run import entry_group, run_fields, run_with_progress, runner_env, say_result
from .fingerprint import SkillState
from .judge_preflight import check_judges, judged_suite
from .outputs import fresh_record
from .selection import CiOptions, Workspace
from .settings import CiConfig, SkillSettings, runner_origin
from .suggest import suggest

NO_CASES_GATE = 1  # a skill without cases fails the gate unless allow-missing-cases

_FILE_SAFE = re.compile(r"[a-z0-9_-][a-z0-9._-]{0,99}")


def safe_file_name(name: str) -> str:
    """A file name for the skill called ``name``, distinct for distinct names: a name of at
    most 100 lowercase letters, digits, ``.``, ``_``, ``-`` (not starting with ``.``) is used
    as it is; any other gets a readable prefix and then the hash of the whole name, last, so
    nothing cuts it off (and names differing only in case differ on case-insensitive disks)."""
    if _FILE_SAFE.fullmatch(name):
        return name
    prefix = re.sub(r"[^a-z0-9._-]", "_", name.lower()).lstrip(".")[:80] or "skill"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}-{digest}"


def _entry(
    state: SkillState,
    status: str,
    reason: str | None,
    exit_code: int,
    report: dict[str, Any] | None = None,
) -> dict[str, Any]:
    runner = state.location.settings.runner or ""
    return {
        "name": state.name,
        "path": state.path,
        "cases": state.location.cases,
        "fingerprint": state.fingerprint,
        "status": status,
        "reason": reason,
        "exitCode": exit_code,
        "report": report,
        # The simulated runner is labelled wherever its figures appear (docs/agents/).
        "simulated": simulated.is_simulated_command(runner),
    }


def preflight_skills(
    chosen: Sequence[SkillState],
    env: Mapping[str, str],
    config: CiConfig | None = None,
    root: Path | None = None,
) -> dict[str, CaseSuite]:
    """Decide configuration errors before any runner starts, for every chosen skill before
    the first one runs: no runner (exit 5), a built-in runner that cannot start (exit 5 or
    7, naming where the command was given), a judge its cases need that cannot start or has
    no key (exit 7; needs the repository's ``root`` to read the cases). Returns the case
    files it loaded, by skill path, for the skills' runs (each file is read once)."""
    loaded: dict[str, CaseSuite] = {}
    for state in chosen:
        settings = state.location.settings
        if state.location.cases is None or settings.missing_env(env):
            continue
        if settings.runner is None:
            raise InvalidInput(
                f"skill {state.name}: no runner configured; set `runner:` in .skill-evals.yml "
                f"(or overrides.{state.name}.runner), or pass --runner"
            )
        where = runner_origin(config, state.name)
        check_runner(settings.runner, env, os.getcwd(), f"skill {state.name}: {where}")
        suite = judged_suite(state, root) if root is not None else None
        if suite is not None:
            check_judges(state, suite, env, config)
            loaded[state.path] = suite
    return loaded


def evaluate_skills(
    workspace: Workspace,
    changes: ChangeSet,
    chosen: list[SkillState],
    options: CiOptions,
    env: Mapping[str, str],
    console: Console,
    answers: dict[str, Answers] | None = None,
    loaded: Mapping[str, CaseSuite] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate each chosen skill with ``skill-evals test`` (its baseline, budget and cache)
    and return the report entries of every skill, unchanged ones included, in workspace
    order. ``answers`` collects answer texts per skill path for ``include-outputs``;
    ``loaded``: case files the pre-check loaded, by skill path (not read again)."""
    chosen_paths = {s.path for s in chosen}
    entries: dict[str, dict[str, Any]] = {}
    for state in workspace.states:
        if state.path not in chosen_paths and not options.only:
            entries[state.path] = _entry(
                state, "unchanged", changes.unchanged.get(state.path, "unchanged"), 0
            )
    runs = _SkillRuns(workspace, changes, options, env, console)
    runs.loaded = dict(loaded or {})
    interrupted = False
    for state in chosen:
        entry = _not_run(state, interrupted, options, env, console, workspace)
        if entry is None:
            entry = runs.evaluate(state, answers)
        elif entry["status"] == "no-cases" and workspace.config.draft == "suggest":
            entry["draft"] = runs.draft(state)
        entries[state.path] = entry
        interrupted = interrupted or entry["exitCode"] == INTERRUPTED
    workspace.messages.extend(runs.bases.messages)
    return [entries[s.path] for s in workspace.states if s.path in entries]


def _not_run(
    state: SkillState,
    interrupted: bool,
    options: CiOptions,
    env: Mapping[str, str],
    console: Console,
    workspace: Workspace,
) -> dict[str, Any] | None:
    """The entry of a chosen skill that is not evaluated (an interrupt before it, a SKILL.md
    that validate rejects, a missing secret, no cases file); None for one that is."""
    settings = state.location.settings
    missing = settings.missing_env(env)
    if interrupted:
        return _entry(state, "skipped", "not run: interrupted", INTERRUPTED)
    invalid = invalid_skill(workspace.root, state, workspace.config.validate, console)
    if invalid is not None:
        return _entry(state, "invalid-skill", invalid, INVALID)
    if missing:
        code = UNAVAILABLE if options.fail_on_missing_secrets else 0
        text = (
            f"{state.name}: skipped, required environment variable(s) empty or unset: "
            + ", ".join(missing)
        )
        if code:
            text += "; set them for this job (only a fork's pull request skips without them)"
        (console.error if code else console.warning)(text)
        return _entry(state, "skipped", text, code)
    if state.location.cases is None:
        looked = (
            state.location.cases_configured or "evals/cases.jsonl, evals/cases.yaml, cases.jsonl"
        )
        allowed = settings.allow_missing_cases
        text = f"{state.name}: {no_cases_hint(state.path)} (looked for {looked})" + (
            "; allowed by allow-missing-cases"
            if allowed
            else "; add one or set allow-missing-cases: true"
        )
        return _entry(state, "no-cases", text, 0 if allowed else NO_CASES_GATE)
    return None


def invalid_skill(root: Path, state: SkillState, mode: str, console: Console) -> str | None:
    """The errors of a skill whose SKILL.md ``skill-evals validate`` rejects, said on the
    console: the entry's reason under ``validate: error`` (the default), a warning (and None)
    under ``validate: warn``; None for a valid skill."""
    from ..suite.skill_rules import check_skill_md

    # Named from the repository's root, as every other place in ci's outputs (the comment and
    # summary never show the runner machine's folders).
    top = str(root.resolve()).rstrip("/") + "/"
    errors = [
        p.text.removeprefix(top).removeprefix(str(root).rstrip("/") + "/")
        for p in check_skill_md(root / state.path)
        if p.severity == "error"
    ]
    if not errors:
        return None
    text = f"{state.name}: invalid skill ({len(errors)} error(s) from skill-evals validate): "
    text += "; ".join(errors[:10]) + ("; …" if len(errors) > 10 else "")
    if mode == "warn":
        console.warning(text + " (validate: warn)")
        return None
    console.error(text + "; fix them, or set validate: warn")
    return text


def _prepare_record(record: Path) -> str | None:
    """Why the skill's observations file cannot be written afresh (None: it can). The lock is
    held until this process exits: no other run may write or clear it meanwhile."""
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        RecordLocks().take(record)
        return fresh_record(record)
    except InvalidInput as exc:
        return str(exc)
    except OSError as exc:
        return str(exc.strerror)


class _SkillRuns:
    """The chosen skills' runs of one `ci` invocation: the budget they share, their base
    versions, the cache and where their observations go."""

    def __init__(
        self,
        workspace: Workspace,
        changes: ChangeSet,
        options: CiOptions,
        env: Mapping[str, str],
        console: Console,
    ) -> None:
        self.workspace, self.changes, self.options = workspace, changes, options
        self.env, self.console = env, console
        self.total = TotalBudget.of(workspace.config.budget_total)
        ref = compare_ref(changes.base, options.choice.base, event_base_sha(env))
        self.bases = CompareBase(workspace.root, workspace.config, ref)
        self.cache = workspace.config.cache_settings(workspace.root)
        self.loaded: dict[str, CaseSuite] = {}  # case files the pre-check loaded, by path

    def evaluate(self, state: SkillState, answers: dict[str, Answers] | None) -> dict[str, Any]:
        """Run ``skill-evals test`` for one skill and return its entry."""
        settings, console = state.location.settings, self.console
        reason = self.changes.changed.get(state.path)
        record = self.options.out / "observations" / f"{safe_file_name(state.name)}.jsonl"
        problem = _prepare_record(record)
        if problem is not None:
            text = f"{state.name}: cannot prepare observations/{record.name} ({problem})"
            console.error(text)
            return _entry(state, "skipped", text, INVALID)
        collected: dict[tuple[str, int, str], str] | None = (
            {} if settings.include_outputs and answers is not None else None
        )
        title = f"skill-evals {state.name} ({state.path})"
        intro = f"evaluating {state.name} ({reason})"
        with (
            entry_group(console, title, intro, state.name, settings.runner),
            self.bases.baseline(state) as (baseline, note),
        ):
            reason = self._compare_note(state, baseline, note, reason)
            options = self._options(state, record, baseline)
            report = run_with_progress(
                console,
                self.options.quiet,
                lambda progress: _run_test(options, progress, collected, console.line),
            )
        if report is None:
            # What finished is in the observations file; the outputs are still written.
            text = "interrupted during its evaluation; finished observations are in " + (
                f"observations/{record.name}"
            )
            return _entry(state, "skipped", text, INTERRUPTED)
        self.total.spend(report)
        code = say_result(console, state.name, report)
        if collected is not None and answers is not None:
            answers[state.path] = collected
        entry = _entry(state, "evaluated", reason, code, report)
        if self.workspace.config.improve == "suggest":
            entry["suggestion"] = self._suggest(state, report)
        return entry

    def draft(self, state: SkillState) -> dict[str, Any] | None:
        """A drafted suite for a skill with no cases; never changes the verdict."""
        root, out, stem = self.workspace.root, self.options.out, safe_file_name(state.name)
        catalog = tuple(s.path for s in self.workspace.states)  # the neighbours
        config, env = self.workspace.config, runner_env(self.env)
        found = draft_suite(state, root, out, config, env, stem, catalog)
        if found is not None:
            shown = found["reason"] or (
                f"{found['cases']} case(s) in {found['path']}, lint: {found['lintWarnings']} "
                "warning(s); review them before use"
            )
            self.console.info(f"{state.name}: drafted suite: {shown}")
        return found

    def _suggest(self, state: SkillState, report: dict[str, Any]) -> dict[str, Any] | None:
        """A validated description for a failed trigger gate; never changes the verdict."""
        try:
            found = suggest(
                state,
                report,
                self.workspace.root,
                self.options.out,
                self.workspace.config,
                self.total,
                runner_env(self.env),
                safe_file_name(state.name),
            )
        except OSError as exc:
            reason = f"cannot write the suggestion ({exc.strerror})"
            found = {"accepted": False, "description": None, "heldOut": None, "reason": reason}
            found["diff"] = None
        if found is not None:
            shown = "suggested a description" if found["accepted"] else "no validated suggestion"
            self.console.info(f"{state.name}: {shown}: {found['reason']}")
        return found

    def _compare_note(
        self, state: SkillState, baseline: Path | None, note: str | None, reason: str | None
    ) -> str | None:
        """Say which base version the skill is compared with, or that there is none; the
        entry's reason with it."""
        if note is not None:
            self.console.info(f"{state.name}: {note}")
            reason = join_clauses(reason, note)
        if baseline is None and state.location.settings.gates.compare.any_set:
            # Nothing to compare with (a new skill, or compare: none): said, not failed.
            skipped = "comparison gates skipped: no base version to compare with"
            self.console.info(f"note: {state.name}: {skipped}")
            reason = join_clauses(reason, skipped)
        return reason

    def _options(self, state: SkillState, record: Path, baseline: Path | None) -> Any:
        """The TestOptions of one skill's run."""
        from ..pipeline import TestOptions

        settings = state.location.settings
        scope = _scope(settings, self.total)
        if baseline is not None:
            scope = dataclasses.replace(scope, baseline=baseline, compare=settings.gates.compare)
        assert state.location.cases is not None  # skills without cases are not run
        suite = self.loaded.get(state.path)
        return TestOptions(
            loaded_cases=(state.name, suite) if suite is not None else None,
            skill=self.workspace.root / state.path,
            cases=self.workspace.root / state.location.cases,
            bootstrap_samples=settings.bootstrap_samples,
            min_trigger_f1=settings.gates.min_trigger_f1,
            min_uplift=settings.gates.min_uplift,
            require_verified_isolation=settings.require_verified_isolation,
            strict=settings.strict,
            agent=settings.agent,
            scope=scope,
            cache=self.cache,
            judge=settings.judge,
            judges=dict(settings.judges),
            judge_timeout_ms=settings.judge_timeout_ms,
            judge_fallback=(settings.judge_fallback, settings.judge_fallback_margin),
            max_judge_calls=self.total.for_skill(settings.budget).judge_calls,
            **run_fields(settings, record, self.options.out, runner_env(self.env)),
        )


def _run_test(
    options: Any,
    progress: Any,
    collected: dict[tuple[str, int, str], str] | None,
    notice: Any,
) -> dict[str, Any]:
    from ..pipeline import run_test

    return run_test(options, progress=progress, answers=collected, notice=notice)


def _scope(settings: SkillSettings, total: TotalBudget) -> ArmOptions:
    """Arms, budget and early stop of one skill's run: ``arms`` and ``stop-when-settled`` (by
    default auto and on), its ``budget`` capped by what is left of ``budget-total``."""
    budget = total.for_skill(settings.budget)
    return ArmOptions(
        arms=settings.arms,
        max_invocations=budget.invocations,
        max_cost_usd=budget.cost_usd,
        stop_when_settled=settings.stop_when_settled,
    )
