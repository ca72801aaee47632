"""What a run needs from this machine, decided before anything starts (no runner, judge or
proposer has been paid for yet): the program of the runner, judge, proposer or drafter command
and a built-in runner's agent CLI (exit 7 when missing or not executable), OpenCode's
``--model`` (exit 5), and the key of a built-in judge, proposer or drafter (exit 7 when its
variable is unset). Each error names what to fix."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence

from ..agents.copilot import provider_problem
from ..agents.registry import builtin_agent
from ..agents.runner_env import agent_program
from ..agents.versions import missing_hint
from ..errors import EvidenceUnavailable, InvalidInput
from .agent_check import check_agent

# The variable each built-in model helper (judge, propose, draft) reads its key from.
HELPER_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def _subcommand(argv: Sequence[str]) -> list[str]:
    """The words after ``skill-evals`` (or ``python -m skill_evals``) and its own options; []
    for any other program."""
    if not argv:
        return []
    program = os.path.basename(argv[0])
    if program == "skill-evals":
        rest = list(argv[1:])
    elif program.startswith("python") and list(argv[1:3]) == ["-m", "skill_evals"]:
        rest = list(argv[3:])
    else:
        return []
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    return rest


def helper_provider(argv: Sequence[str], verb: str) -> str | None:
    """``anthropic``/``openai`` for ``skill-evals <verb> <provider> …``; None otherwise."""
    rest = _subcommand(argv)
    if len(rest) >= 2 and rest[0] == verb and rest[1] in HELPER_KEYS:
        return rest[1]
    return None


def check_helper_key(
    argv: Sequence[str] | None, verb: str, where: str, env: Mapping[str, str]
) -> None:
    """Exit 7 for a helper command (judge, proposer) whose program cannot be started, and for
    a built-in ``skill-evals <verb> anthropic|openai`` whose key is unset."""
    if argv:
        check_program(argv[0], env, os.getcwd(), where)
    provider = helper_provider(argv or (), verb)
    if provider is None:
        return
    variable = HELPER_KEYS[provider]
    if not env.get(variable):
        raise EvidenceUnavailable(
            f"{where}: skill-evals {verb} {provider} needs {variable}, which is not set: set it "
            "(it reaches the helper only through the credential proxy), or give another "
            f"{verb} command"
        )


def _check_copilot(argv: Sequence[str], env: Mapping[str, str], where: str) -> None:
    """Copilot runs against the caller's provider: a model and the provider's URL are needed."""
    if (
        not any(a == "--model" or a.startswith("--model=") for a in argv)
        and not env.get("COPILOT_MODEL", "").strip()
    ):
        raise InvalidInput(
            f"{where}: skill-evals runner copilot needs --model (or COPILOT_MODEL set): Copilot "
            "runs against your own provider, which has no default model"
        )
    if not env.get("COPILOT_PROVIDER_BASE_URL", "").strip():
        raise EvidenceUnavailable(
            f"{where}: skill-evals runner copilot needs COPILOT_PROVIDER_BASE_URL (with "
            "COPILOT_PROVIDER_TYPE=anthropic|openai and COPILOT_PROVIDER_API_KEY), which is not "
            "set: Copilot runs offline against your own provider (docs/agents/copilot.md)"
        )
    # A value every invocation would refuse (a URL without http(s)://, azure) fails the same
    # way each time: refused here rather than once per invocation.
    problem = provider_problem(env)
    if problem is not None:
        raise InvalidInput(
            f"{where}: skill-evals runner copilot: {problem} (docs/agents/copilot.md)"
        )


def check_runner(
    command: str | None,
    env: Mapping[str, str],
    cwd: str,
    where: str = "--runner",
    program: bool = True,
) -> None:
    """Exit 5 for ``runner opencode`` without ``--model``, ``runner copilot`` without a model
    or with a provider it would refuse, and an option the agent refuses; exit 7 for a command
    whose program cannot start, ``runner copilot`` without its provider's URL, a built-in
    runner whose agent CLI (``--bin`` or on PATH) is missing or not executable, and one whose
    key is unset (the agent plug-in's own check). ``where`` names
    where the command was given (the option, or the config's key); ``program`` False skips
    the checks of the programs it would start (a --resume that holds every invocation)."""
    if command is None:
        return
    try:
        argv = shlex.split(command)
    except ValueError:
        return  # refused with its own message where the command is split to run
    if argv and program:
        check_program(argv[0], env, cwd, where)
    agent = builtin_agent(command)
    if agent is None:
        return
    if agent == "opencode" and not any(
        a in ("--model", "-m") or a.startswith("--model=") for a in argv
    ):
        raise InvalidInput(
            f"{where}: skill-evals runner opencode needs --model provider/model (for example "
            "--model anthropic/claude-sonnet-4-5): OpenCode has no default model"
        )
    if agent == "copilot":
        _check_copilot(argv, env, where)
    binary = agent_program(command)
    if binary is None or not program:
        return
    if _found(binary, env, cwd) is None:
        raise EvidenceUnavailable(
            f"{where}: the {agent} CLI {binary!r} is missing or not executable (--bin, else "
            f"PATH); install it or point --bin at it{missing_hint(agent)}"
        )
    rest = _subcommand(argv)
    if rest[:2] == ["runner", agent]:  # the agent's own refusals: a key, an option
        check_agent(agent, rest[2:], env, where)


def _found(program: str, env: Mapping[str, str], cwd: str) -> str | None:
    """Where ``program`` is started from (a path with a separator from ``cwd``, else PATH);
    None when it is missing or not executable."""
    if os.sep in program:
        path = os.path.join(cwd, program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=env.get("PATH", os.defpath))


def check_program(program: str, env: Mapping[str, str], cwd: str, where: str) -> None:
    """Exit 7 for a command whose program cannot be started (every invocation would fail the
    same way), saying what to write instead."""
    if _found(program, env, cwd) is not None:
        return
    local = os.path.join(cwd, program)
    if "=" in program and os.sep not in program.split("=", 1)[0]:
        hint = (
            "the command runs without a shell: set the variable in the environment, or "
            "start it with env NAME=VALUE …"
        )
    elif os.path.isfile(local):
        hint = "" if os.sep in program else f"write ./{program} (a bare name is looked up on PATH)"
        if not os.access(local, os.X_OK):
            hint += (
                f"{'; ' if hint else ''}it is not executable: chmod +x it, or start it with "
                f"its interpreter (python3 {program}, bash {program})"
            )
    else:
        hint = "install it, or give its path"
    raise EvidenceUnavailable(
        f"{where}: the program {program!r} is missing or not executable; {hint} (nothing was "
        "started)"
    )
