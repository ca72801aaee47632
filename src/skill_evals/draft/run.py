"""`skill-evals cases draft` from options to result: the skill and its neighbours, the buckets
sized for the gate, up to three drafter calls (each asking only for what is still missing), the
cases checked, written without overwriting, and linted."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EvalError, InvalidInput
from ..plan.lint import LintResult, lint_suite
from ..plan.ready import check_program
from ..plan.run_control import retry_delay
from ..run.helper_cell import HelperCell
from ..run.processes import ProcessSweeper
from ..run.runner import split_command
from ..sandbox.probe import requested_mode, sandbox_paths, shared_choice
from ..suite.cases import MIN_UNITS, load_cases
from ..suite.catalog import catalog_dirs
from ..suite.skill import Skill, load_skill
from .accept import Accepted
from .buckets import plan_buckets, task_units_needed
from .drafter import DrafterFailed, DrafterSpec, draft, request
from .keys import missing_key
from .output import write_suite

CALLS = 3  # a drafter whose replies keep being dropped is not asked forever


@dataclass(frozen=True, kw_only=True)
class DraftOptions:
    """Everything `skill-evals cases draft` takes."""

    skill: Path
    drafter: str
    catalog: tuple[str, ...] = ()
    out: Path | None = None
    append: bool = False
    count: int = 20
    min_uplift: float | None = None
    min_uplift_from: str = "--min-uplift {}"  # where the gate came from ({}: its value)
    with_tasks: bool = False
    body_chars: int = 2000
    drafter_timeout_ms: int = 120_000
    seed: int = 42
    retries: int = 2
    env: Mapping[str, str] | None = None  # the caller's environment (default: os.environ)
    sandbox: str | None = None  # --sandbox (else SKILL_EVALS_SANDBOX, else sandbox_config)
    sandbox_config: str | None = None  # ci's config sandbox:
    sandbox_path: tuple[str, ...] = ()  # --sandbox-path PATH[:rw]
    cwd: Path | None = None  # where --catalog globs start (default: the working directory)
    drafter_where: str = "--drafter"  # where the drafter command was given, for messages
    out_shown: str | None = None  # how messages name the file written (default: as given)


def _neighbours(options: DraftOptions, skill: Skill) -> list[dict[str, str]]:
    """Name and description of every other skill the catalog globs match (nothing else)."""
    if not options.catalog:
        return []
    found: dict[str, dict[str, str]] = {}
    for directory in catalog_dirs(options.catalog, options.cwd or Path.cwd()):
        other = load_skill(directory)
        if other.path != skill.path and other.name != skill.name:
            found.setdefault(other.name, {"name": other.name, "description": other.description})
    return list(found.values())


def _described(directory: Path, cwd: Path | None) -> Skill:
    """The skill at ``directory``; exit 5 when no description can be read from its SKILL.md
    (no frontmatter, invalid YAML, none or blank): drafts from it would be about nothing.
    The message names it from ``cwd`` (ci: the repository's root) when it lies below."""
    skill = load_skill(directory)
    if not skill.description.strip():
        if cwd is not None and directory.is_relative_to(cwd):
            directory = directory.relative_to(cwd)
        raise InvalidInput(
            f"{directory / 'SKILL.md'}: no description could be read (the frontmatter is "
            "missing, is not valid YAML, or has no description), and the drafter drafts from "
            f"it: fix SKILL.md (skill-evals validate {directory} says what is wrong)"
        )
    return skill


def _existing(out: Path, shown: str, append: bool, skill_name: str, accepted: Accepted) -> bytes:
    """The bytes already in ``out`` (``--append``; ``shown`` in messages), noted in
    ``accepted``; exit 5 when it exists without ``--append``."""
    if out.suffix.lower() != ".jsonl":
        raise InvalidInput(f"--out {shown}: drafted cases are written as JSONL; name a .jsonl file")
    if not os.path.lexists(out):
        return b""
    if not append:
        raise InvalidInput(
            f"--out {shown}: the file exists and is never overwritten; pass --append to add new "
            "cases to it, or name another --out"
        )
    suite = load_cases(out, skill_name)
    accepted.existing((c.id for c in suite.cases), (c.prompt for c in suite.cases))
    return out.read_bytes()


def _ask(
    spec: DrafterSpec, base: dict[str, Any], accepted: Accepted, asked: Mapping[str, int]
) -> int:
    """Call the drafter until every bucket is full, a call adds nothing, or CALLS calls."""
    sweeper = ProcessSweeper()
    names = [n["name"] for n in base["neighbours"]]
    calls = 0
    while calls < CALLS:
        have = accepted.counts()
        missing = {b: max(0, n - have[b]) for b, n in asked.items()}
        if not any(missing.values()):
            break
        before = len(accepted.cases)
        items = draft(spec, {**base, "buckets": missing}, sweeper)
        calls += 1
        accepted.offer(items, missing, base["withTasks"], names)
        if len(accepted.cases) == before:
            break
    return calls


def _drafter_spec(
    options: DraftOptions, argv: tuple[str, ...], environ: Mapping[str, str]
) -> DrafterSpec:
    """How each drafter call runs: its command, timeout, retries, seed and sandbox."""
    mode = requested_mode(options.sandbox, environ, options.sandbox_config)
    choice = shared_choice(mode, sandbox_paths(options.sandbox_path), environ)
    return DrafterSpec(
        argv,
        options.drafter_timeout_ms,
        options.retries,
        options.seed,
        HelperCell(environ, choice),
        retry_delay,
    )


def _blank() -> dict[str, Any]:
    """The result before anything is known."""
    return {
        "schemaVersion": 1,
        "skill": None,
        "out": None,
        "asked": None,
        "written": None,
        "ids": [],
        "dropped": {},
        "drafter": {"calls": 0},
        "lint": None,
        "reason": None,
    }


def failed(exc: EvalError) -> dict[str, Any]:
    """The result of a run refused before it started (``exc`` says why)."""
    return {**_blank(), "status": exc.status, "exitCode": exc.exit_code, "reason": str(exc)}


def run_draft(options: DraftOptions) -> dict[str, Any]:
    """Run `cases draft` and return its result (``exitCode`` is the exit)."""
    environ = os.environ if options.env is None else options.env
    result = _blank()
    try:
        argv = tuple(split_command(options.drafter, options.drafter_where))
        unset = missing_key(argv, environ)
        if unset is not None:  # decided before anything starts
            provider, variable = unset
            raise DrafterFailed(  # worded as for a judge or a proposer without its key
                f"{options.drafter_where}: skill-evals draft {provider} needs {variable}, which "
                "is not set: set it (it reaches the drafter only through the credential proxy), "
                "or give another drafter command"
            )
        if argv:
            check_program(argv[0], environ, os.getcwd(), options.drafter_where)
        skill = _described(options.skill, options.cwd)
        result["skill"] = skill.name
        out = options.out or skill.path / "evals" / "cases.jsonl"
        result["out"] = str(out)
        accepted = Accepted(skill.name)
        shown = str(out) if options.out_shown is None else options.out_shown
        before = _existing(out, shown, options.append, skill.name, accepted)
        try:
            task_units = (
                task_units_needed(options.min_uplift, options.min_uplift_from)
                if options.min_uplift
                else 0
            )
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        with_tasks = options.with_tasks or task_units > 0
        asked = plan_buckets(options.count, task_units)
        result["asked"] = asked
        spec = _drafter_spec(options, argv, environ)
        visible = {
            "name": skill.name,
            "description": skill.description,
            "body": skill.body[: options.body_chars],
        }
        base = request(visible, _neighbours(options, skill), asked, with_tasks)
        result["drafter"]["calls"] = _ask(spec, base, accepted, asked)
        result["written"], result["dropped"] = accepted.counts(), dict(accepted.dropped)
        result["ids"] = [c["id"] for c in accepted.cases]
        suite = write_suite(
            out, before, accepted.cases, skill.name, MIN_UNITS,
            replace=os.path.lexists(out), shown=shown,
        )  # fmt: skip
        lint = lint_suite(suite, skill.name, min_uplift=options.min_uplift)
        result["lint"] = _lint_json(lint)
        return {**result, "status": "drafted", "exitCode": 0}
    except DrafterFailed as exc:
        return {**result, "status": "unavailable", "exitCode": 7, "reason": str(exc)}
    except EvalError as exc:
        return {**result, "status": exc.status, "exitCode": exc.exit_code, "reason": str(exc)}


def _lint_json(lint: LintResult) -> dict[str, Any]:
    return {
        "problems": [p.to_json() for p in lint.problems],
        "mde": lint.mde.to_json() if lint.mde is not None else None,
    }
