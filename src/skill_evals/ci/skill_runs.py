"""The CI gate's skill runs: the preflight that refuses a chosen skill without a runner before
anything starts, then each chosen skill evaluated with ``skill-evals test`` in turn (its
baseline, its share of the budget, the cache, the runner's environment without the CI's own
tokens) or skipped with a reason, and turned into its report entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..agents import simulated
from ..codes import INTERRUPTED, INVALID, UNAVAILABLE
from ..errors import InvalidInput
from ..messages import join_clauses
from ..plan.scope import ArmOptions
from ..report.answers import Answers
from ..run.record_lock import RecordLocks
from .base_commit import event_base_sha
from .base_skills import CompareBase, compare_ref
from .budget import TotalBudget
from .changes import ChangeSet
from .console import Console
from .fingerprint import SkillState
from .outputs import fresh_record
from .selection import CiOptions, Workspace
from .settings import SkillSettings

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


# Credentials of the CI itself: a runner (an agent that reads untrusted prompts) never needs them.
CI_SECRETS = ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN")


def runner_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment handed to runners: the caller's minus the CI's own tokens."""
    return {k: v for k, v in env.items() if k not in CI_SECRETS}


def preflight_skills(chosen: Sequence[SkillState], env: Mapping[str, str]) -> None:
    """Decide configuration errors before any runner starts (exit 5)."""
    for state in chosen:
        settings = state.location.settings
        if state.location.cases is None or settings.missing_env(env):
            continue
        if settings.runner is None:
            raise InvalidInput(
                f"skill {state.name}: no runner configured; set `runner:` in .skill-evals.yml "
                f"(or overrides.{state.name}.runner), or pass --runner"
            )


def evaluate_skills(
    workspace: Workspace,
    changes: ChangeSet,
    chosen: list[SkillState],
    options: CiOptions,
    env: Mapping[str, str],
    console: Console,
    answers: dict[str, Answers] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate each chosen skill with ``skill-evals test`` (its baseline, budget and cache)
    and return the report entries of every skill, unchanged ones included, in workspace
    order. ``answers`` collects answer texts per skill path for ``include-outputs``."""
    from ..pipeline import TestOptions, run_test
    from ..run.progress import ProgressPrinter

    chosen_paths = {s.path for s in chosen}
    entries: dict[str, dict[str, Any]] = {}
    for state in workspace.states:
        if state.path not in chosen_paths and not options.only:
            entries[state.path] = _entry(
                state, "unchanged", changes.unchanged.get(state.path, "unchanged"), 0
            )
    observations_dir = options.out / "observations"
    interrupted = False
    total = TotalBudget.of(workspace.config.budget_total)
    ref = compare_ref(changes.base, options.choice.base, event_base_sha(env))
    bases = CompareBase(workspace.root, workspace.config, ref)
    cache = workspace.config.cache_settings(workspace.root)
    for state in chosen:
        settings = state.location.settings
        reason = changes.changed.get(state.path)
        missing = settings.missing_env(env)
        if interrupted:
            entries[state.path] = _entry(state, "skipped", "not run: interrupted", INTERRUPTED)
            continue
        if missing:
            code = UNAVAILABLE if options.fail_on_missing_secrets else 0
            text = (
                f"{state.name}: skipped, required environment variable(s) empty or unset: "
                + ", ".join(missing)
            )
            console.warning(text)
            entries[state.path] = _entry(state, "skipped", text, code)
            continue
        if state.location.cases is None:
            looked = (
                state.location.cases_configured
                or "evals/cases.jsonl, evals/cases.yaml, cases.jsonl"
            )
            allowed = settings.allow_missing_cases
            text = f"{state.name}: no cases file ({looked} in {state.path})" + (
                "; allowed by allow-missing-cases"
                if allowed
                else "; add one or set allow-missing-cases: true"
            )
            entries[state.path] = _entry(state, "no-cases", text, 0 if allowed else NO_CASES_GATE)
            continue
        record = observations_dir / f"{safe_file_name(state.name)}.jsonl"
        try:  # held until this process exits: no other run may write or clear it meanwhile
            record.parent.mkdir(parents=True, exist_ok=True)
            RecordLocks().take(record)
            problem = fresh_record(record)
        except InvalidInput as exc:
            problem = str(exc)
        except OSError as exc:
            problem = str(exc.strerror)
        if problem is not None:
            text = f"{state.name}: cannot prepare observations/{record.name} ({problem})"
            console.error(text)
            entries[state.path] = _entry(state, "skipped", text, INVALID)
            continue
        test_options = TestOptions(
            skill=workspace.root / state.path,
            cases=workspace.root / state.location.cases,
            runner=settings.runner,
            trials=settings.trials,
            seed=settings.seed,
            bootstrap_samples=settings.bootstrap_samples,
            timeout_ms=settings.timeout_ms,
            max_bytes=settings.max_bytes,
            jobs=settings.jobs,
            min_trigger_f1=settings.gates.min_trigger_f1,
            min_uplift=settings.gates.min_uplift,
            record=record,
            keep_going=settings.keep_going,
            retries=settings.retries,
            require_verified_isolation=settings.require_verified_isolation,
            outputs=(record, options.out / "report.json"),
            env=runner_env(env),
            scope=_scope(settings, total),
            cache=cache,
        )
        console.group(f"skill-evals {state.name} ({state.path})")
        console.info(f"evaluating {state.name} ({reason})")
        if simulated.is_simulated_command(settings.runner):
            console.info(f"note: {state.name}: {simulated.NOTICE}")
        printer = None if options.quiet else ProgressPrinter(console.err)
        collected: dict[tuple[str, int, str], str] | None = (
            {} if settings.include_outputs and answers is not None else None
        )
        with bases.baseline(state) as (baseline, note):
            if note is not None:
                console.info(f"{state.name}: {note}")
                reason = join_clauses(reason, note)
            if baseline is not None:
                scope = dataclasses.replace(
                    test_options.scope, baseline=baseline, compare=settings.gates.compare
                )
                test_options = dataclasses.replace(test_options, scope=scope)
            elif settings.gates.compare.any_set:
                # Nothing to compare with (a new skill, or compare: none): said, not failed.
                skipped = "comparison gates skipped: no base version to compare with"
                console.info(f"note: {state.name}: {skipped}")
                reason = join_clauses(reason, skipped)
            try:
                report = run_test(test_options, progress=printer, answers=collected)
            except KeyboardInterrupt:
                # Ctrl-C/SIGTERM outside the runner's own handling (loading, hashing,
                # scoring): stop here, still write the outputs. What finished is in the
                # observations file.
                text = "interrupted during its evaluation; finished observations are in " + (
                    f"observations/{record.name}"
                )
                entries[state.path] = _entry(state, "skipped", text, INTERRUPTED)
                interrupted = True
                continue
            finally:
                if printer is not None:
                    printer.close()
                console.endgroup()
        total.spend(report)
        code = int(report.get("exitCode", 70))
        console.info(f"{state.name}: {report.get('status')} (exit {code})")
        # Why it did not pass belongs in the log too (an invalid cases line, too few cases,
        # runner failures), not only inside the artifact, each message with its own severity.
        # Messages never hold prompts, outputs or runner stderr (docs/report.md).
        console.report_messages(state.name, report, said=simulated.NOTICE)
        entries[state.path] = _entry(state, "evaluated", reason, code, report)
        if collected is not None and answers is not None:
            answers[state.path] = collected
        if code == INTERRUPTED:
            interrupted = True
    workspace.messages.extend(bases.messages)
    return [entries[s.path] for s in workspace.states if s.path in entries]


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
