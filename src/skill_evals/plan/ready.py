"""What a run needs from this machine, decided before anything starts (no runner, judge or
proposer has been paid for yet): a built-in runner's agent CLI (exit 7 when it is missing or
not executable), OpenCode's ``--model`` (exit 5), and the key of a built-in judge, proposer or
drafter (exit 7 when its variable is unset). Each error names what to fix."""

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
    """Exit 7 for a built-in ``skill-evals <verb> anthropic|openai`` whose key is unset."""
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
    command: str | None, env: Mapping[str, str], cwd: str, where: str = "--runner"
) -> None:
    """Exit 5 for ``runner opencode`` without ``--model`` and ``runner copilot`` without a
    model or with a provider it would refuse; exit 7 for ``runner copilot`` without its
    provider's URL and for a built-in runner
    whose agent CLI (``--bin`` or on PATH) is missing or not executable. ``where`` names
    where the command was given (the option, or the config's key)."""
    agent = builtin_agent(command)
    if agent is None or command is None:
        return
    argv = shlex.split(command)
    if agent == "opencode" and not any(
        a in ("--model", "-m") or a.startswith("--model=") for a in argv
    ):
        raise InvalidInput(
            f"{where}: skill-evals runner opencode needs --model provider/model (for example "
            "--model anthropic/claude-sonnet-4-5): OpenCode has no default model"
        )
    if agent == "copilot":
        _check_copilot(argv, env, where)
    program = agent_program(command)
    if program is None:
        return
    if os.sep in program:
        path = os.path.join(cwd, program)
        found = path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise EvidenceUnavailable(
            f"{where}: the {agent} CLI {program!r} is missing or not executable (--bin, else "
            f"PATH); install it or point --bin at it{missing_hint(agent)}"
        )
