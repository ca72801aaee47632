"""The run every agent shares, written once: resolve the binary and the skills, make the fresh
workspace and environment, start the agent with the prompt on stdin, collect its JSON event
stream (bounded), save the transcript, and turn the agent's :class:`~.protocol.Outcome` into the
runner contract's line. Agent modules supply only what differs (:class:`~.protocol.Agent`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from ..escaping.terminal import terminal_safe
from ..run.observations import MAX_TOOL_CALLS
from .base import AgentInvocation, AgentOptions, AgentResult, RunnerSetupError, SkillRef, skill_ref
from .content import SkillText, index_skills, not_unique_warnings
from .environment import agent_env, find_binary
from .evidence import (
    MAX_TRANSCRIPT_BYTES,
    Event,
    EvidencePatterns,
    ToolCall,
    loaded_names,
    parse_lines,
)
from .opencode_guard import end
from .proof import INJECTED, prove, runner_evidence
from .protocol import Agent, Finished, Launch, RunSetup
from .versions import missing_hint, runner_check
from .workspace import Workspace, remove_added, tree

# When set, every agent runner copies the run's JSON event stream to
# DIR/<case id>.<trial>.<variant>.jsonl (for `skill-evals evidence` and debugging). Transcripts
# hold the prompt and the answer, never the API key.
TRANSCRIPT_DIR_VAR = "SKILL_EVALS_TRANSCRIPT_DIR"
# What a workspace kept with --keep-workspace holds, the same for every agent.
TRANSCRIPT_FILE = "transcript.jsonl"
STDERR_FILE = "agent.stderr"
KEEP_HINT = f"rerun with --keep-workspace to inspect {STDERR_FILE} and {TRANSCRIPT_FILE}"


def transcript_name(invocation: AgentInvocation) -> str:
    """``<case id>.<trial>.<variant>.jsonl``; characters of the case id other than letters,
    digits, ``-`` and ``_`` become ``_`` (case ids are free text, file names are not)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in invocation.case_id) or "case"
    return f"{safe}.{invocation.trial}.{invocation.variant}.jsonl"


def save_transcript(data: bytes, invocation: AgentInvocation, env: Mapping[str, str]) -> None:
    """Copy a run's event stream to ``$SKILL_EVALS_TRANSCRIPT_DIR`` when that is set.

    Raises RunnerSetupError (a runner failure) when the directory cannot be written: the caller
    asked for the evidence to be kept, so losing it silently would be wrong."""
    target = env.get(TRANSCRIPT_DIR_VAR)
    if not target:
        return
    folder = Path(target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / transcript_name(invocation)).write_bytes(data)
    except OSError as exc:
        raise RunnerSetupError(
            f"{TRANSCRIPT_DIR_VAR}={target}: cannot write the transcript ({exc.strerror})"
        ) from exc


def project_skills(project: Path, folders: Sequence[str]) -> list[SkillRef]:
    """Skills a ``--fixture`` brings in the agent's native project folders (e.g.
    ``.agents/skills``): each ``<folder>/<dir>/SKILL.md``, in name order. They are part of the
    project under test, so they are offered in both variants and their loads are reported."""
    found: list[SkillRef] = []
    for folder in folders:
        root = project / folder
        if not root.is_dir():
            continue
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and (entry / "SKILL.md").is_file():
                found.append(skill_ref(entry))
    return found


def folder_aliases(refs: Iterable[SkillRef]) -> dict[str, str]:
    """``{folder name: skill name}`` for skills whose folder is named differently from their
    ``name``: a read of ``…/skills/<folder>/SKILL.md`` is a load of ``name``."""
    return {ref.path.name: ref.name for ref in refs if ref.path.name != ref.name}


def print_available(agent: str, names: Iterable[str]) -> None:
    """Say on stderr which skills the run offered: recorded for diagnosis, never a load."""
    listed = list(dict.fromkeys(names))
    if listed:
        print(f"skill-evals runner {agent}: available skills: {', '.join(listed)}", file=sys.stderr)


def _tested_ref(invocation: AgentInvocation) -> SkillRef:
    """The tested skill. A sandboxed ``without`` run sees an empty directory at its path
    (docs/sandbox.md): it is then known by its folder name only (the name a skill's folder
    carries), and nothing of its text can be read, so nothing needs matching."""
    path = invocation.skill_dir
    if invocation.variant == "without" and not (path / "SKILL.md").exists():
        return SkillRef(name=path.name, path=path.resolve(), description="")
    return skill_ref(path)


def skill_refs(
    invocation: AgentInvocation, options: AgentOptions
) -> tuple[SkillRef, tuple[SkillRef, ...]]:
    """The tested skill and the ``--with-skill`` neighbours; a neighbour with the tested name or
    two with one name are refused (one would leak into ``without`` or hide the other)."""
    tested = _tested_ref(invocation)
    neighbours: list[SkillRef] = []
    used = {tested.name: "the skill under test"}
    # A routing run offers its whole catalog (SKILL_EVALS_SKILL_DIRS): the rest of it is
    # offered like neighbours, and every load of one is reported.
    catalog = [p for p in invocation.skill_dirs if p.resolve() != tested.path]
    sources = [(p, f"SKILL_EVALS_SKILL_DIRS entry {p}") for p in catalog]
    sources += [(p, f"--with-skill {p}") for p in options.with_skills]
    for path, source in sources:
        ref = skill_ref(path)
        if ref.name in used:
            raise RunnerSetupError(
                f"{source}: skill name '{ref.name}' is already used by "
                f"{used[ref.name]}; each offered skill needs its own name"
            )
        used[ref.name] = source
        neighbours.append(ref)
    return tested, tuple(neighbours)


def fixture_skills(
    project: Path, folders: Sequence[str], offered: Sequence[SkillRef], fixture: Path | None
) -> tuple[SkillRef, ...]:
    """The skills the fixture brings in the agent's project folders; one that holds an offered
    skill's name (as its name or its folder) is refused in both variants: it would leak into
    ``without`` or shadow the copy under test."""
    names = {ref.name for ref in offered}
    for folder in folders:
        for name in sorted(names):
            if (project / folder / name).exists():
                raise RunnerSetupError(
                    f"--fixture {fixture}: already contains {folder}/{name}; "
                    "remove it, the runner installs the skills itself"
                )
    found = project_skills(project, folders)
    for ref in found:
        if ref.name in names:
            where = ref.path.relative_to(project.resolve()).as_posix()
            raise RunnerSetupError(
                f"--fixture {fixture}: already contains {where} (skill {ref.name}); "
                "remove it, the runner installs the skills itself"
            )
    return tuple(found)


def run_agent(
    agent: Agent,
    invocation: AgentInvocation,
    options: AgentOptions,
    environ: Mapping[str, str] | None = None,
    *,
    works: bool = False,
) -> AgentResult:
    """Run ``agent`` once for ``invocation`` in a fresh isolated workspace.

    ``environ`` (default ``os.environ``) supplies auth and endpoints, which reach the agent only
    through its environment, never a file. ``works``: the agent runs in the engine's workspace
    (``invocation.workspace``, unless ``options.read_only``) and what the runner adds there is
    removed before this returns. Raises RunnerSetupError for a void run."""
    caller_env = os.environ if environ is None else environ
    agent.check(options, caller_env)
    binary = find_binary(options.bin, agent.binary, caller_env, missing_hint(agent.name))
    line = runner_check(agent.name, binary, caller_env)
    if line is not None:
        print(f"skill-evals: warning: {terminal_safe(line)}", file=sys.stderr)
    tested, neighbours = skill_refs(invocation, options)
    project = invocation.workspace if works and not options.read_only else None
    with Workspace(options.fixture, keep=options.keep_workspace, project=project) as ws:
        before = tree(ws.project) if project is not None else set()
        added: set[str] | None = None  # None until prepare is done: all new paths are ours
        try:
            found = fixture_skills(
                ws.project, agent.skill_folders, [tested, *neighbours], options.fixture
            )
            # What could prove each load, known before the agent starts (and said then).
            skills = index_skills([(ref.name, ref.text) for ref in (tested, *neighbours, *found)])
            for warning in not_unique_warnings(skills):
                print(f"skill-evals: warning: {terminal_safe(warning)}", file=sys.stderr)
            env = agent_env(caller_env, ws.home, agent.environment)
            env["TMPDIR"] = str(ws.tmp)  # the agent's temporary files go with the workspace
            setup = RunSetup(
                invocation, options, binary, tested, neighbours, found, ws, caller_env, env
            )
            launch = agent.prepare(setup)
            if project is not None:
                added = tree(ws.project) - before
            data, finished = _launch(launch, setup)
        finally:
            if project is not None:
                remove_added(ws.project, tree(ws.project) - before if added is None else added)
    return _agent_result(agent, parse_lines(data), setup, finished, skills)


class AgentRun(Protocol):
    """An agent module's ``run``: one isolated run for the invocation (see :func:`run_agent`)."""

    def __call__(
        self,
        invocation: AgentInvocation,
        options: AgentOptions,
        environ: Mapping[str, str] | None = None,
    ) -> AgentResult: ...


def agent_run(agent: Agent, works: bool = False) -> AgentRun:
    """The module-level ``run`` of an agent module: :func:`run_agent` with ``agent`` (and
    ``works``, for an agent that runs in the engine's workspace)."""

    def run(
        invocation: AgentInvocation, options: AgentOptions, environ: Mapping[str, str] | None = None
    ) -> AgentResult:
        return run_agent(agent, invocation, options, environ, works=works)

    return run


def _launch(launch: Launch, setup: RunSetup) -> tuple[bytes, Finished]:
    """Run the prepared agent: its transcript (the epilogue's lines appended, kept in the
    workspace and saved where the caller asked) and how it ended."""
    started = time.monotonic()
    data, status, stopped = execute(launch, setup)
    finished = Finished(status, (time.monotonic() - started) * 1000.0, stopped)
    if launch.epilogue is not None:
        extra = launch.epilogue()
        data += extra
        with (setup.workspace.root / TRANSCRIPT_FILE).open("ab") as kept:
            kept.write(extra)
    save_transcript(data, setup.invocation, setup.caller_env)
    return data, finished


def _agent_result(
    agent: Agent,
    events: list[dict[str, Any]],
    setup: RunSetup,
    finished: Finished,
    skills: Sequence[SkillText],
) -> AgentResult:
    """The runner-contract answer: the agent's output and meta, the loads its transcript
    proves, what was offered, its tool calls."""
    invocation, options = setup.invocation, setup.options
    outcome = agent.finish(events, setup, finished)
    offered = [ref.name for ref in (*setup.offered, *setup.fixture_skills)]
    available = frozenset([*offered, *outcome.offered, *setup.aliases])
    loads = prove(
        agent, events, skills, invocation.prompt, EvidencePatterns(), available, setup.aliases
    )
    print_available(agent.name, [*offered, *outcome.offered])
    delivery = "mcp" if options.delivery == "mcp" else "native"
    offers = [(ref.name, delivery, "runner") for ref in setup.offered]
    offers += [(ref.name, "native", "fixture") for ref in setup.fixture_skills]
    return AgentResult(
        variant=invocation.variant,
        invoked_skills=loaded_names(loads),
        output=outcome.output,
        exit_code=outcome.exit_code,
        meta=outcome.meta,
        evidence=runner_evidence(offers, loads),
        tool_calls=contract_tool_calls(agent.tool_calls(events)),
    )


# A tool input's strings are cut to this many characters, and once the calls reported so far
# take this many bytes, later ones are reported without input: a run that writes big files
# must not push its one output line past the engine's --max-bytes (a runner failure).
MAX_INPUT_STRING = 4_000
MAX_TOOL_CALL_BYTES = 400_000


def contract_tool_calls(calls: Sequence[ToolCall]) -> list[dict[str, object]]:
    """The transcript's tool calls as the runner line reports them, in call order:
    ``{"name", "input", "ok"}`` (messages the agent injected itself are no tool calls)."""
    ordered = sorted((c for c in calls if c.name != INJECTED), key=lambda c: c.order)
    reported: list[dict[str, object]] = []
    size = 0
    for call in ordered[:MAX_TOOL_CALLS]:
        tool_input = _cut_strings(dict(call.input)) if size < MAX_TOOL_CALL_BYTES else {}
        size += len(json.dumps(tool_input, ensure_ascii=False)) + len(call.name)
        reported.append({"name": call.name, "input": tool_input, "ok": call.ok})
    return reported


def _cut_strings(value: dict[str, object]) -> dict[str, object]:
    """A copy of ``value`` with every string inside cut to MAX_INPUT_STRING characters;
    iterative, since a model's tool input may nest deeply."""
    root: dict[str, object] = {}
    stack: list[tuple[dict[str, object] | list[object], dict[str, object] | list[object]]]
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            copied: object
            if isinstance(item, str):
                copied = item[:MAX_INPUT_STRING]
            elif isinstance(item, (dict, list)):
                copied = {} if isinstance(item, dict) else []
                stack.append((item, copied))  # type: ignore[arg-type]
            else:
                copied = item
            if isinstance(target, dict):
                target[str(key)] = copied
            else:
                target.append(copied)
    return root


def execute(launch: Launch, setup: RunSetup) -> tuple[bytes, int, bool]:
    """Start the agent in the project, feed stdin, collect stdout (also written to the
    workspace's transcript file) until it exits or ``launch.stop_after`` says so.

    Returns (stdout bytes, exit status, stopped early). The agent stays in the runner's process
    group on purpose: when the engine kills that group (timeout, output cap, or after the runner
    ends) the agent and anything it started die with it."""
    ws = setup.workspace
    with (ws.root / STDERR_FILE).open("wb") as err, (ws.root / TRANSCRIPT_FILE).open("wb") as log:
        try:
            proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=ws.project,
                env=setup.env,
            )
        except OSError as exc:
            raise RunnerSetupError(f"cannot start {launch.argv[0]} ({exc.strerror})") from exc
        try:
            return _collect(proc, launch, log)
        finally:
            end(proc)  # only does something when reading ended early


def _collect(
    proc: subprocess.Popen[bytes], launch: Launch, log: IO[bytes]
) -> tuple[bytes, int, bool]:
    assert proc.stdin is not None and proc.stdout is not None
    # A writer thread: an agent that prints before reading all of a large prompt must not
    # deadlock against us.
    feeder = threading.Thread(target=_feed, args=(proc.stdin, launch.stdin), daemon=True)
    feeder.start()
    chunks: list[bytes] = []
    size = 0
    stopped = False
    for raw in proc.stdout:
        size += len(raw)
        if size > MAX_TRANSCRIPT_BYTES:
            raise RunnerSetupError(
                f"{launch.argv[0]} printed more than {MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB "
                f"of events; {KEEP_HINT}"
            )
        chunks.append(raw)
        log.write(raw)
        if launch.stop_after is not None and _stops(launch, raw):
            stopped = True
            end(proc)
            break
    status = proc.wait()
    feeder.join(timeout=5)
    return b"".join(chunks), status, stopped


def _stops(launch: Launch, raw: bytes) -> bool:
    try:
        event: Event = json.loads(raw)
    except ValueError:
        return False
    return isinstance(event, dict) and launch.stop_after is not None and launch.stop_after(event)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, ValueError, OSError):
        pass  # the agent exited before reading; its status and stderr tell why
