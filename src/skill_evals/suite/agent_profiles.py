"""Agent profiles of the frontmatter check: which keys beyond the Agent Skills specification an
agent documents, and the values it accepts for them.

The default profile is the specification itself. ``claude-code`` adds Claude Code's documented
skill fields (code.claude.com/docs/en/skills): each accepted with an info line saying it is not
portable, a wrong value an error. Codex, pi, Gemini CLI, OpenCode, Copilot CLI and Qwen Code are
checked against the specification alone.
"""

from __future__ import annotations

from collections.abc import Callable

CLAUDE_CODE = "claude-code"
PROFILES = ("claude-code", "codex", "pi", "gemini", "opencode", "copilot", "qwen")
EFFORTS = ("low", "medium", "high", "xhigh", "max")

Check = Callable[[object], str | None]  # the problem with a value, or None when it is accepted


def _string(value: object) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _strings(value: object) -> str | None:
    if isinstance(value, str):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return None
    return "must be a string or a list of strings"


def _one_of(*allowed: str) -> Check:
    def check(value: object) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        return "must be " + (allowed[0] if len(allowed) == 1 else "one of " + ", ".join(allowed))

    return check


def _mapping(value: object) -> str | None:
    return None if isinstance(value, dict) else "must be a mapping"


# Claude Code's fields and how each is checked; ``allowed-tools`` is also a specification key
# (a string there), which Claude Code accepts as a list too.
CLAUDE_CODE_FIELDS: dict[str, Check] = {
    "when_to_use": _string,
    "argument-hint": _string,
    "model": _string,
    "agent": _string,
    "arguments": _strings,
    "paths": _strings,
    "allowed-tools": _strings,
    "disable-model-invocation": _one_of("true", "false"),
    "user-invocable": _one_of("true", "false"),
    "effort": _one_of(*EFFORTS),
    "context": _one_of("fork"),
    "shell": _one_of("bash", "powershell"),
    "hooks": _mapping,
}


def extra_fields(profile: str | None) -> dict[str, Check]:
    """The fields a profile accepts beyond the specification (none for the default)."""
    return CLAUDE_CODE_FIELDS if profile == CLAUDE_CODE else {}


def info_line(field: str) -> str:
    """The info line for an accepted agent field that is not in the specification."""
    return f"info: {field!r} is a Claude Code field (not in the Agent Skills specification)"
