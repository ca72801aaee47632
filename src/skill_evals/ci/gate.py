"""`skill-evals ci`: evaluate every changed skill of a repository and write the gate's outputs
(docs/ci.md): report.json, junit.xml, summary.md, comment.md, report.html, observations/*.jsonl,
``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``, annotations and the sticky PR comment.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .. import __version__
from ..agents import simulated
from ..codes import INTERRUPTED, STATUS_BY_CODE, UNAVAILABLE, combine
from ..errors import InvalidInput
from ..messages import by_severity, severities_of
from . import github
from .changes import BaseChoice, ChangeSet, detect_changes
from .config import CiConfig, find_config, load_config
from .discovery import WorkTree, discover
from .fingerprint import SkillState, worktree_states

SCHEMA_VERSION = 1
MAX_ANNOTATIONS = 50
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


def load_workspace(root: Path, config_path: Path | None, cli: Mapping[str, Any]) -> Workspace:
    """Load the config (explicit, else the root's .skill-evals.yml, else defaults), discover
    the skills and fingerprint them."""
    path = config_path if config_path is not None else find_config(root)
    config = load_config(path) if path is not None else CiConfig()
    config = config.with_cli(cli)
    locations, messages = discover(WorkTree(root), config, root.resolve().name)
    return Workspace(root, config, worktree_states(root, locations), messages)


def select(
    workspace: Workspace, options: CiOptions, env: Mapping[str, str]
) -> tuple[ChangeSet, list[SkillState]]:
    """The change set and the skills to evaluate. ``--only`` names skills (by name or path) to
    evaluate whatever their change status: the plan job already decided they changed."""
    if options.only:
        wanted = set(options.only)
        chosen = [s for s in workspace.states if s.name in wanted or s.path in wanted]
        unknown = wanted - {s.name for s in chosen} - {s.path for s in chosen}
        if unknown:
            raise InvalidInput(
                "--only "
                + ", ".join(sorted(unknown))
                + ": no such skill (known: "
                + ", ".join(s.name for s in workspace.states)
                + ")"
            )
        changes = ChangeSet(base={"mode": "only", "only": sorted(wanted)})
        for state in chosen:
            changes.changed[state.path] = "chosen with --only"
        return changes, chosen
    changes = detect_changes(
        workspace.root, workspace.config, workspace.states, options.choice, env
    )
    return changes, [s for s in workspace.states if changes.is_changed(s.path)]


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe_file_name(name: str, path: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "skill"
    if safe != name:
        safe += "-" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:8]
    return safe[:120]


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


def _one_line(text: str) -> str:
    """Names and ids come from user files: a line break in one must not start a new log line
    (under GitHub Actions a line starting with ``::`` is a workflow command)."""
    return " ".join(text.splitlines())


class Console:
    """Progress, groups and warnings on stderr; annotations on stdout (GitHub reads both)."""

    def __init__(self, env: Mapping[str, str], quiet: bool, err: TextIO, out: TextIO) -> None:
        self.actions = env.get("GITHUB_ACTIONS") == "true"
        self.quiet = quiet
        self.err = err
        self.out = out

    def info(self, message: str) -> None:
        """One line on stderr (not with --quiet)."""
        if not self.quiet:
            self._write(self.err, f"skill-evals: {_one_line(message)}")

    def warning(self, message: str) -> None:
        """A warning: an annotation under Actions, a stderr line elsewhere (even with --quiet)."""
        if self.actions:
            self._write(self.out, github.annotation("warning", message))
        self._write(self.err, f"skill-evals: warning: {_one_line(message)}")

    def error(self, message: str) -> None:
        """An error line on stderr."""
        self._write(self.err, f"skill-evals: error: {_one_line(message)}")

    def group(self, title: str) -> None:
        """Open a foldable log group under Actions."""
        if self.actions:
            self._write(self.err, f"::group::{github.escape_data(title)}")

    def endgroup(self) -> None:
        """Close the log group."""
        if self.actions:
            self._write(self.err, "::endgroup::")

    def command(self, line: str) -> None:
        """A workflow command on stdout."""
        self._write(self.out, line)

    @staticmethod
    def _write(stream: TextIO, line: str) -> None:
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass


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
        changes, chosen = select(workspace, options, env)
        _preflight(chosen, env)
    except InvalidInput as exc:
        if console.actions:  # a workflow command means nothing outside GitHub Actions
            console.command(github.annotation("error", str(exc)))
        console.error(str(exc))
        if writable:
            ci_report = _ci_report(exc.exit_code, [], {"mode": "none"}, [str(exc)])
            _write_all(ci_report, options, env, console)
        return exc.exit_code
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM while hashing or reading git: nothing ran; still say so in the outputs.
        console.error("interrupted before any skill was evaluated")
        if writable:
            message = "interrupted before any skill was evaluated"
            ci_report = _ci_report(INTERRUPTED, [], {"mode": "none"}, [message])
            _write_all(ci_report, options, env, console)
        return INTERRUPTED

    skills = _evaluate(workspace, changes, chosen, options, env, console)
    messages = list(workspace.messages)
    if not chosen:
        messages.append(
            "no skill to evaluate: nothing changed"
            if workspace.states
            else "no skill found in the repository"
        )
    messages.extend(changes.base.get("messages", []))
    if changes.base.get("reason"):
        console.info(str(changes.base["reason"]))
    exit_code = combine(s["exitCode"] for s in skills)
    ci_report = _ci_report(exit_code, skills, changes.base, messages, changes.removed)
    for message in messages:
        console.info(message)
    _write_all(ci_report, options, env, console)
    _annotate(ci_report, console)
    console.info(f"{ci_report['status']} (exit {exit_code}); report in {options.out}")
    return exit_code


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
        observations_dir.mkdir(parents=True, exist_ok=True)
        record = observations_dir / f"{_safe_file_name(state.name, state.path)}.jsonl"
        record.unlink(missing_ok=True)  # --record appends; a stale file would mix runs
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
            outputs=(record, options.out / "report.json"),
            env=runner_env(env),
        )
        console.group(f"skill-evals {state.name} ({state.path})")
        console.info(f"evaluating {state.name} ({reason})")
        if simulated.is_simulated_command(settings.runner):
            console.info(f"note: {state.name}: {simulated.NOTICE}")
        printer = None if options.quiet else ProgressPrinter(console.err)
        try:
            report = run_test(test_options, progress=printer)
        except KeyboardInterrupt:
            # Ctrl-C/SIGTERM outside the runner's own handling (loading, hashing, scoring):
            # stop here, still write the outputs. What finished is in the observations file.
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
        if code == INTERRUPTED:
            interrupted = True
    return [entries[s.path] for s in workspace.states if s.path in entries]


def _ci_report(
    exit_code: int,
    skills: list[dict[str, Any]],
    base: Mapping[str, Any],
    messages: list[str],
    removed: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    status = STATUS_BY_CODE.get(exit_code, "invalid")
    considered = [s for s in skills if s["status"] != "unchanged"]
    if exit_code == 0 and considered and all(s["status"] == "skipped" for s in considered):
        status = "skipped"
    any_simulated = any(s.get("simulated") and s["status"] == "evaluated" for s in skills)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tool": {"name": "skill-evals", "version": __version__},
        "status": status,
        "exitCode": exit_code,
        "base": {**base, "removed": list(removed)} if removed else dict(base),
        "skills": skills,
        "changedSkills": [s["name"] for s in skills if s["status"] != "unchanged"],
        "simulated": any_simulated,
        "messages": messages,
    }


def _write_all(
    ci_report: dict[str, Any], options: CiOptions, env: Mapping[str, str], console: Console
) -> None:
    write_outputs(ci_report, options.out, env, console, comment=options.comment)


def write_outputs(
    ci_report: dict[str, Any],
    out: Path,
    env: Mapping[str, str],
    console: Console,
    comment: bool = False,
) -> None:
    """report.json, junit.xml, summary.md, comment.md, report.html; then the step summary,
    ``$GITHUB_OUTPUT`` and (with ``comment``) the sticky PR comment."""
    from ..render.html import render_html
    from .summary import render_comment, render_summary

    out.mkdir(parents=True, exist_ok=True)
    summary = render_summary(ci_report)
    url = github.run_url(env)
    files = {
        "report.json": json.dumps(ci_report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        "junit.xml": render_ci_junit(ci_report),
        "summary.md": summary,
        "comment.md": render_comment(ci_report, url),
        "report.html": render_html(ci_report),
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    try:
        github.append_step_summary(env, summary)
    except OSError as exc:
        console.warning(f"cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})")
    changed = json.dumps(
        ci_report.get("changedSkills", []), ensure_ascii=False, separators=(",", ":")
    )
    try:
        github.write_outputs(
            env,
            {
                "exit-code": str(ci_report["exitCode"]),
                "status": str(ci_report["status"]),
                "changed-skills": changed,
                "report-dir": str(out.resolve()),
                "junit": str(out.resolve() / "junit.xml"),
            },
        )
    except OSError as exc:
        console.warning(f"cannot write GITHUB_OUTPUT ({exc.strerror})")
    if comment:
        result = github.post_comment(files["comment.md"], env)
        if result.action in ("created", "updated"):
            console.info(result.message)
        else:
            console.warning(result.message)


def render_ci_junit(ci_report: dict[str, Any]) -> str:
    """JUnit for the gate: evaluated skills with their reports, skipped skills <skipped>,
    a skill without cases as a <failure> (or <skipped> when allowed). Unchanged skills are
    left out: they were not tested in this run."""
    from ..render.junit import SuiteInput, render_junit

    suites: list[SuiteInput] = []
    for skill in ci_report.get("skills", []):
        status = skill["status"]
        name = str(skill["name"])
        if status == "evaluated" and isinstance(skill.get("report"), dict):
            suites.append(SuiteInput(name, report=skill["report"]))
        elif status == "skipped" or (status == "no-cases" and skill["exitCode"] == 0):
            suites.append(SuiteInput(name, skipped=skill.get("reason") or status))
        elif status == "no-cases":
            suites.append(SuiteInput(name, failed=skill.get("reason") or "no cases file"))
    return render_junit(suites)


def _annotate(ci_report: Mapping[str, Any], console: Console) -> None:
    """``::error file=<cases file>,line=<N>::`` for each failing case of a failing skill."""
    if not console.actions:
        return
    emitted = 0
    for skill in ci_report.get("skills", []):
        report = skill.get("report")
        if skill.get("status") != "evaluated" or not isinstance(report, dict):
            continue
        if skill.get("exitCode") == 0:
            continue
        cases = failing_cases(report)
        if not cases:
            # Stopped before any case could fail (invalid or too few cases, a gate that needs
            # task checks): annotate the cases file with the reason, at its line when known.
            for message in by_severity(report, "error")[:3]:
                if emitted >= MAX_ANNOTATIONS:
                    return
                console.command(
                    github.annotation(
                        "error",
                        f"{skill['name']}: {message}",
                        file=skill.get("cases"),
                        line=_message_line(str(message), skill.get("cases")),
                        title="skill-evals",
                    )
                )
                emitted += 1
            continue
        for case_id, line, why in cases:
            if emitted >= MAX_ANNOTATIONS:
                console.command(
                    github.annotation(
                        "warning", f"more failing cases than {MAX_ANNOTATIONS}; see report.html"
                    )
                )
                return
            console.command(
                github.annotation(
                    "error",
                    f"{skill['name']}: case {case_id}: {why}",
                    file=skill.get("cases"),
                    line=line,
                    title="skill-evals",
                )
            )
            emitted += 1


def _message_line(message: str, cases: object) -> int | None:
    """N when ``message`` starts with ``<the cases file>:N:`` (the engine names the cases
    file by the path it was given, here absolute)."""
    if not isinstance(cases, str):
        return None
    match = re.match(r"(?P<path>.+?):(?P<line>\d+): ", message)
    path = match["path"].replace("\\", "/") if match is not None else ""
    if match is None or not (path == cases or path.endswith("/" + cases)):
        return None
    return int(match["line"])


def failing_cases(report: Mapping[str, Any]) -> list[tuple[str, int | None, str]]:
    """(case id, line, why) for every case that missed or falsely fired its trigger, broke a
    loading rule, failed a task with the skill or had a runner failure."""
    lines = {c.get("id"): c.get("line") for c in report.get("caseResults") or []}
    why: dict[str, list[str]] = {}
    trigger = report.get("trigger") or {}
    for case_id in trigger.get("missedTriggerCaseIds") or []:
        why.setdefault(case_id, []).append("the skill did not trigger")
    for case_id in trigger.get("falseTriggerCaseIds") or []:
        why.setdefault(case_id, []).append("the skill triggered but should not")
    for violation in (report.get("loading") or {}).get("violations") or []:
        why.setdefault(violation.get("caseId"), []).append(
            f"loading violation ({violation.get('variant')}, trial {violation.get('trial')})"
        )
    for failure in (report.get("runner") or {}).get("failures") or []:
        why.setdefault(failure.get("caseId"), []).append(
            f"runner failure ({failure.get('variant')}, trial {failure.get('trial')}): "
            f"{failure.get('reason')}"
        )
    for case in report.get("caseResults") or []:
        passes = case.get("with")
        if isinstance(passes, list) and any(p is False for p in passes):
            why.setdefault(case.get("id"), []).append("the task failed with the skill")
    order = [c.get("id") for c in report.get("caseResults") or []]
    ordered = [c for c in order if c in why] + [c for c in why if c not in order]
    result = []
    for case_id in ordered:
        line = lines.get(case_id)
        result.append(
            (
                str(case_id),
                line if isinstance(line, int) else None,
                "; ".join(dict.fromkeys(why[case_id])),
            )
        )
    return result


# ------------------------------------------------------------------------------- plan, merge


def plan(options: CiOptions, env: Mapping[str, str]) -> dict[str, Any]:
    """``{"include": [{"skill", "path"}]}`` of the skills to evaluate, for strategy.matrix."""
    workspace = load_workspace(options.root, options.config, options.cli)
    _, chosen = select(workspace, options, env)
    return {"include": [{"skill": s.name, "path": s.path} for s in chosen]}


def merge(
    dirs: Sequence[Path], out: Path, env: Mapping[str, str], comment: bool, console: Console
) -> int:
    """Combine shards' outputs into one report/summary/JUnit/comment and exit code."""
    import jsonschema

    from .schema import ci_report_validator

    validator = ci_report_validator()
    skills: dict[str, dict[str, Any]] = {}
    messages: list[str] = []
    shard_codes: list[int] = []
    base: dict[str, Any] = {}
    for directory in dirs:
        path = directory / "report.json"
        try:
            shard = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InvalidInput(f"{path}: cannot read a shard's report ({exc.strerror})") from None
        except ValueError:
            raise InvalidInput(f"{path}: not valid JSON") from None
        if (
            not isinstance(shard, dict)
            or shard.get("schemaVersion") != SCHEMA_VERSION
            or not isinstance(shard.get("skills"), list)
        ):
            raise InvalidInput(f"{path}: not a skill-evals ci report (schemaVersion 1)")
        # A shard's directory went through an artifact, written in a job where an agent ran
        # the PR's skill: validate it fully, so every value rendered into the merged summary,
        # comment and HTML has the type the renderers expect (a string where a trial number
        # belongs would reach the PR comment unescaped).
        problem = jsonschema.exceptions.best_match(validator.iter_errors(shard))
        if problem is not None:
            raise InvalidInput(
                f"{path}: not a valid skill-evals ci report: {problem.json_path}: "
                f"{_short(problem.message)}"
            )
        shard_codes.append(int(shard.get("exitCode", 0)))
        base = base or dict(shard.get("base") or {})
        messages.extend(str(m) for m in shard.get("messages") or [])
        for skill in shard["skills"]:
            if not isinstance(skill, dict) or "path" not in skill:
                raise InvalidInput(f"{path}: $.skills has an entry without a path")
            previous = skills.get(skill["path"])
            if previous is None or previous["status"] == "unchanged":
                skills[skill["path"]] = skill
        source = directory / "observations"
        if source.is_dir():
            target = out / "observations"
            target.mkdir(parents=True, exist_ok=True)
            for item in sorted(source.glob("*.jsonl")):
                if item.is_file() and not item.is_symlink():
                    shutil.copyfile(item, target / item.name)
    ordered = sorted(skills.values(), key=lambda s: str(s["path"]))
    exit_code = combine([*shard_codes, *(int(s.get("exitCode", 0)) for s in ordered)])
    info = {"mode": "merged", "shards": len(dirs)}
    ci_report = _ci_report(exit_code, ordered, info, list(dict.fromkeys(messages)))
    write_outputs(ci_report, out, env, console, comment=comment)
    _annotate(ci_report, console)
    console.info(f"merged {len(dirs)} shard(s): {ci_report['status']} (exit {exit_code})")
    return exit_code
