"""`skill-evals ci`: evaluate every changed skill of a repository and write the gate's outputs
(docs/ci.md): report.json, junit.xml, summary.md, comment.md, report.html, observations/*.jsonl,
``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``, annotations and the sticky PR comment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..agents import simulated
from ..codes import INTERRUPTED, INVALID, UNAVAILABLE, combine
from ..errors import InvalidInput
from ..messages import severities_of
from ..render.answers import Answers
from ..scope import ArmOptions
from . import workflow
from .base_commit import event_base_sha
from .base_skills import CompareBase, compare_ref
from .budget import TotalBudget
from .changes import BaseChoice, ChangeSet, detect_changes
from .config import CiConfig, SkillSettings, find_config, load_config
from .console import Console, annotate
from .discovery import WorkTree, discover
from .fingerprint import SkillState, worktree_states
from .outputs import build_report, prepare_out, write_outputs
from .routing import (
    ROUTING_NAME,
    RoutingRun,
    RoutingState,
    routing_decision,
    routing_result,
    routing_state,
)
from .routing import preflight as routing_preflight

MAX_SKILL_MESSAGES = 10  # per skill, on stderr
NO_CASES_GATE = 1  # a skill without cases fails the gate unless allow-missing-cases


@dataclass(frozen=True)
class CiOptions:
    """Everything `skill-evals ci` takes."""

    root: Path
    out: Path
    config: Path | None = None
    choice: BaseChoice = field(default_factory=BaseChoice)
    only: tuple[str, ...] = ()
    comment: bool = False
    fail_on_missing_secrets: bool = False
    cli: Mapping[str, Any] = field(default_factory=dict)  # runner, trials, jobs, gates
    quiet: bool = False


@dataclass
class Workspace:
    """The repository as the gate sees it: config, skills with fingerprints, messages."""

    root: Path
    config: CiConfig
    states: list[SkillState]
    messages: list[str]
    routing: RoutingState | None = None  # the `routing:` entry (docs/routing.md)


def load_workspace(root: Path, config_path: Path | None, cli: Mapping[str, Any]) -> Workspace:
    """Load the config (explicit, else the root's .skill-evals.yml, else defaults), discover
    the skills and fingerprint them."""
    path = config_path if config_path is not None else find_config(root)
    config = load_config(path) if path is not None else CiConfig()
    config = config.with_cli(cli)
    tree = WorkTree(root)
    locations, messages = discover(tree, config, root.resolve().name)
    routing = routing_state(tree, config, root.resolve().name)
    return Workspace(root, config, worktree_states(root, locations), messages, routing)


def select(
    workspace: Workspace, options: CiOptions, env: Mapping[str, str]
) -> tuple[ChangeSet, list[SkillState]]:
    """The change set and the skills to evaluate. ``--only`` names skills (by name or path) to
    evaluate whatever their change status: the plan job already decided they changed."""
    if options.only:
        wanted = expand_only(options.only, workspace)
        chosen = [s for s in workspace.states if s.name in wanted or s.path in wanted]
        unknown = wanted - {s.name for s in chosen} - {s.path for s in chosen}
        if workspace.routing is not None:
            unknown.discard(ROUTING_NAME)  # the routing entry is chosen by this name
        if unknown:
            known = [s.name for s in workspace.states]
            shown = ", ".join(known[:20]) + (
                f" and {len(known) - 20} more" if len(known) > 20 else ""
            )
            raise InvalidInput(
                "--only " + ", ".join(sorted(unknown)) + f": no such skill (known: {shown})"
            )
        changes = ChangeSet(base={"mode": "only", "only": sorted(wanted)})
        for state in chosen:
            changes.changed[state.path] = "chosen with --only"
        return changes, chosen
    changes = detect_changes(
        workspace.root, workspace.config, workspace.states, options.choice, env
    )
    return changes, [s for s in workspace.states if changes.is_changed(s.path)]


def expand_only(values: Iterable[str], workspace: Workspace) -> set[str]:
    """The skills ``--only`` names: a value that is exactly a skill's name or path (or the
    routing entry's name) is that skill, whatever it holds; any other value is a list
    separated by commas, spaces or line breaks — the action's ``only`` input passes its text
    as one value, so a matrix job's name with a space or comma still names one skill."""
    known = {s.name for s in workspace.states} | {s.path for s in workspace.states}
    if workspace.routing is not None:
        known.add(ROUTING_NAME)
    wanted: set[str] = set()
    for value in values:
        pieces = [value] if value in known else [p for p in _ONLY_SEPARATORS.split(value) if p]
        wanted.update(pieces or [value])
    return wanted


_ONLY_SEPARATORS = re.compile(r"[,\s]+")
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


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


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


def _missing_env(names: Sequence[str], env: Mapping[str, str]) -> list[str]:
    return [n for n in names if not env.get(n)]


def run_ci(
    options: CiOptions, env: Mapping[str, str], err: TextIO | None = None, out: TextIO | None = None
) -> int:
    """Run the gate, write every output, return the exit code."""
    console = Console(env, options.quiet, err or sys.stderr, out or sys.stdout)
    writable = True
    try:
        workspace = load_workspace(options.root, options.config, options.cli)
        for state in workspace.states:
            if _inside(options.out, options.root / state.path):
                writable = False  # writing there would change the skill it reports on
                raise InvalidInput(
                    f"--out {options.out}: lies inside the skill directory {state.path}; "
                    "write the report elsewhere (it would change the skill's hash)"
                )
        try:
            prepare_out(options.out)  # before anything runs, not after the whole run
        except InvalidInput:
            writable = False
            raise
        changes, chosen = select(workspace, options, env)
        _preflight(chosen, env)
        routing = routing_decision(
            options.root, workspace.config, workspace.routing, changes, changes.base.get("only")
        )
        if routing is not None and routing[0]:
            routing_preflight(workspace.routing, env)
    except InvalidInput as exc:
        if console.actions:  # a workflow command means nothing outside GitHub Actions
            console.command(workflow.annotation("error", str(exc)))
        console.error(str(exc))
        if writable:
            ci_report = build_report(exc.exit_code, [], {"mode": "none"}, [str(exc)])
            _write_early(ci_report, options, env, console)
        return exc.exit_code
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM while hashing or reading git: nothing ran; still say so in the outputs.
        console.error("interrupted before any skill was evaluated")
        if writable:
            message = "interrupted before any skill was evaluated"
            ci_report = build_report(INTERRUPTED, [], {"mode": "none"}, [message])
            _write_early(ci_report, options, env, console)
        return INTERRUPTED

    answers: dict[str, Answers] = {}  # skill path → answer texts, for include-outputs only
    skills = _evaluate(workspace, changes, chosen, options, env, console, answers)
    routed = routing_result(
        workspace.routing,
        routing,
        any(s["exitCode"] == INTERRUPTED for s in skills),
        RoutingRun(options.root, options.out, env, runner_env(env), console, options.quiet),
        fail_on_missing_secrets=options.fail_on_missing_secrets,
    )
    messages = list(workspace.messages)
    if not chosen and (routed is None or routed["status"] == "unchanged"):
        messages.append(
            "no skill to evaluate: nothing changed"
            if workspace.states
            else "no skill found in the repository"
        )
    messages.extend(changes.base.get("messages", []))
    if changes.base.get("reason"):
        console.info(str(changes.base["reason"]))
    codes = [s["exitCode"] for s in skills] + ([routed["exitCode"]] if routed else [])
    exit_code = combine(codes)
    ci_report = build_report(exit_code, skills, changes.base, messages, changes.removed, routed)
    for message in messages:
        console.info(message)
    write_outputs(ci_report, options.out, env, console, comment=options.comment, answers=answers)
    annotate(ci_report, console)
    console.info(f"{ci_report['status']} (exit {exit_code}); report in {options.out}")
    return exit_code


def _write_early(
    ci_report: dict[str, Any], options: CiOptions, env: Mapping[str, str], console: Console
) -> None:
    """The outputs of a run stopped before any skill was chosen, when --out can take them."""
    try:
        prepare_out(options.out)
    except InvalidInput:
        return  # the error that stopped the run is reported; this one shows once it is fixed
    write_outputs(ci_report, options.out, env, console, comment=options.comment)


def _preflight(chosen: Sequence[SkillState], env: Mapping[str, str]) -> None:
    """Decide configuration errors before any runner starts (exit 5)."""
    for state in chosen:
        settings = state.location.settings
        if state.location.cases is None or _missing_env(settings.require_env, env):
            continue
        if settings.runner is None:
            raise InvalidInput(
                f"skill {state.name}: no runner configured; set `runner:` in .skill-evals.yml "
                f"(or overrides.{state.name}.runner), or pass --runner"
            )


def _evaluate(
    workspace: Workspace,
    changes: ChangeSet,
    chosen: list[SkillState],
    options: CiOptions,
    env: Mapping[str, str],
    console: Console,
    answers: dict[str, Answers] | None = None,
) -> list[dict[str, Any]]:
    from ..pipeline import TestOptions, run_test
    from ..progress import ProgressPrinter

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
        missing = _missing_env(settings.require_env, env)
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
        try:
            observations_dir.mkdir(parents=True, exist_ok=True)
            record.unlink(missing_ok=True)  # --record appends; a stale file would mix runs
        except OSError as exc:
            text = f"{state.name}: cannot prepare observations/{record.name} ({exc.strerror})"
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
                reason = f"{reason}; {note}" if reason else note
            if baseline is not None:
                scope = dataclasses.replace(
                    test_options.scope, baseline=baseline, compare=settings.gates.compare
                )
                test_options = dataclasses.replace(test_options, scope=scope)
            elif settings.gates.compare.any_set:
                # Nothing to compare with (a new skill, or compare: none): said, not failed.
                skipped = "comparison gates skipped: no base version to compare with"
                console.info(f"note: {state.name}: {skipped}")
                reason = f"{reason}; {skipped}" if reason else skipped
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
        for severity, message in severities_of(report)[:MAX_SKILL_MESSAGES]:
            if severity == "error":
                console.error(f"{state.name}: {message}")
            elif severity == "warning":
                console.warning(f"{state.name}: {message}")
            elif message != simulated.NOTICE:  # said once above
                console.info(f"note: {state.name}: {message}")
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
