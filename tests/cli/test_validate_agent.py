"""`skill-evals validate --agent`: an agent's own frontmatter fields, and its skill listing
budget, through the real CLI. Expected figures are computed here from the documented model, not
with the engine's functions."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

CLAUDE_INFO = "is a Claude Code field (not in the Agent Skills specification)"


def _validate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skill_evals", "validate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _skill(root: Path, name: str, *lines: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    front = "\n".join([f"name: {name}", *lines])
    (folder / "SKILL.md").write_text(f"---\n{front}\n---\nBody.\n", encoding="utf-8")
    return folder


def test_claude_code_fields_are_accepted_with_an_info_line_each(tmp_path: Path) -> None:
    skill = _skill(
        tmp_path, "alpha", "description: Alpha work.", "when_to_use: When alpha is asked for.",
        "argument-hint: '[file]'", "model: sonnet", "agent: helper", "arguments: [a, b]",
        "paths: '*.py'", "allowed-tools: [Read, Grep]", "disable-model-invocation: false",
        "user-invocable: true", "effort: xhigh", "context: fork", "shell: powershell",
        "hooks:\n  PreToolUse: []",
    )  # fmt: skip
    md = skill / "SKILL.md"
    plain = _validate(skill)
    assert plain.returncode == 1  # the specification alone refuses them
    assert re.search(
        rf"{re.escape(str(md))}:\d+: unknown frontmatter key 'when_to_use'", plain.stdout
    )
    assert re.search(rf"{re.escape(str(md))}:\d+: 'allowed-tools' must be a string", plain.stdout)
    claude = _validate("--agent", "claude-code", skill)
    assert claude.returncode == 0, claude.stdout
    fields = [
        "when_to_use", "argument-hint", "model", "agent", "arguments", "paths",
        "disable-model-invocation", "user-invocable", "effort", "context", "shell", "hooks",
    ]  # fmt: skip
    infos = [f"{md}: info: '{f}' {CLAUDE_INFO}" for f in fields]
    assert [line for line in claude.stdout.splitlines() if ": info: '" in line] == infos
    assert "allowed-tools" not in claude.stdout  # a specification key: no info line
    for other in ("codex", "pi", "gemini", "opencode", "copilot", "qwen"):
        assert _validate("--agent", other, skill).returncode == 1, other


@pytest.mark.parametrize("agent", ["copilot", "qwen"])
def test_specification_alone_profiles_accept_a_portable_skill(tmp_path: Path, agent: str) -> None:
    skill = _skill(tmp_path, "gamma", "description: Gamma work.", "license: MIT")
    assert _validate("--agent", agent, skill).returncode == 0
    other = _skill(tmp_path, "delta", "description: Delta work.", "when_to_use: Always.")
    result = _validate("--agent", agent, other)
    assert result.returncode == 1
    md = re.escape(str(other / "SKILL.md"))
    assert re.search(rf"{md}:\d+: unknown frontmatter key 'when_to_use'", result.stdout)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("effort: huge", "'effort' must be one of low, medium, high, xhigh, max"),
        ("context: thread", "'context' must be fork"),
        ("shell: zsh", "'shell' must be one of bash, powershell"),
        ("disable-model-invocation: yes", "'disable-model-invocation' must be one of true, false"),
        ("paths: {a: b}", "'paths' must be a string or a list of strings"),
        ("when_to_use: [a]", "'when_to_use' must be a string"),
        ("hooks: none", "'hooks' must be a mapping"),
        ("colour: blue", "unknown frontmatter key 'colour'"),
    ],
)
def test_wrong_claude_code_values_and_other_keys_are_errors(
    tmp_path: Path, line: str, message: str
) -> None:
    skill = _skill(tmp_path, "beta", "description: Beta work.", line)
    result = _validate("--agent", "claude-code", skill)
    assert result.returncode == 1
    line = rf"{re.escape(str(skill / 'SKILL.md'))}:\d+: {re.escape(message)}"  # the key's line
    assert re.search(line, result.stdout), result.stdout


def _claude_demand(entries: dict[str, str]) -> int:
    return sum(len(f"- {name}: {text}\n") for name, text in entries.items())


def test_claude_code_listing_cuts_long_entries_and_drops_the_last_descriptions(
    tmp_path: Path,
) -> None:
    skills = []
    texts: dict[str, str] = {}
    for index in range(12):
        name = f"skill-{index:02d}"
        description = f"Use for task {index}. " + "word " * 150
        skills.append(_skill(tmp_path, name, f"description: {description.strip()}"))
        texts[name] = description.strip()
    when = "w" * 900
    long_one = _skill(tmp_path, "aaa-long", "description: " + "d" * 1000, f"when_to_use: {when}")
    texts["aaa-long"] = ("d" * 1000 + "\n" + when)[:1536]
    hidden = _skill(
        tmp_path, "zzz-hidden", "description: " + "h" * 900, "disable-model-invocation: true"
    )
    dirs = [long_one, *skills, hidden]
    result = _validate("--agent", "claude-code", *dirs)
    assert result.returncode == 0, result.stdout
    demand = _claude_demand(dict(sorted(texts.items())))
    budget = 200_000 * 4 // 100
    assert demand > budget
    # Drop from the end of the name order until it fits.
    names = sorted(texts)
    total, dropped = demand, []
    for name in reversed(names):
        if total <= budget:
            break
        total -= len(f"- {name}: {texts[name]}\n") - len(f"- {name}\n")
        dropped.append(name)
    lines = result.stdout.splitlines()
    assert (
        f"{long_one / 'SKILL.md'}: warning: claude-code listing: the entry is 1901 characters, "
        "cut at 1536"
    ) in lines
    for name in dropped:
        md = tmp_path / name / "SKILL.md"
        assert (
            f"{md}: warning: claude-code listing: {demand} of {budget} characters for 14 skills: "
            "this description is dropped (name only)"
        ) in lines
    assert (
        f"claude-code listing: {demand} of {budget} characters, 14 skills, 1 cut, "
        f"{len(dropped)} dropped"
    ) in lines
    assert any("least-invoked" in line for line in lines)
    assert not [line for line in lines if "zzz-hidden" in line and "claude-code listing:" in line]
    strict = _validate("--agent", "claude-code", "--strict", *dirs)
    assert strict.returncode == 1
    # A bigger window, then an explicit budget that wins over it.
    roomy = _validate("--agent", "claude-code", "--context-tokens", "1000000", *dirs)
    assert (
        f"claude-code listing: {demand} of 40000 characters, 14 skills, 1 cut, 0 dropped"
        in roomy.stdout
    )
    tight = _validate(
        "--agent", "claude-code", "--context-tokens", "1000000", "--listing-budget", "500",
        "--max-entry-chars", "100", "--listing-fraction", "0.5", long_one, skills[0],
    )  # fmt: skip
    small = {"aaa-long": ("d" * 100), "skill-00": texts["skill-00"][:100]}
    assert (
        f"claude-code listing: {_claude_demand(small)} of 500 characters, 2 skills, 2 cut, "
        "0 dropped" in tight.stdout
    )


def test_codex_listing_warns_once_when_codex_would_shorten(tmp_path: Path) -> None:
    dirs = [_skill(tmp_path, f"c-{i}", "description: " + "x" * 1000) for i in range(9)]
    entries = [f"- c-{i}: {'x' * 1000} (file: {d / 'SKILL.md'})\n" for i, d in enumerate(dirs)]
    chars = sum(len(e) for e in entries)
    result = _validate("--agent", "codex", *dirs)
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == (
        f"codex listing: {chars} of 8000 characters: Codex shortens descriptions"
    )
    tokens = sum(math.ceil(len(e.encode()) / 4) for e in entries)
    windowed = _validate("--agent", "codex", "--context-tokens", "100000", *dirs)
    assert f"codex listing: {tokens} of 2000 tokens: Codex shortens descriptions" in windowed.stdout
    assert "codex listing" not in _validate("--agent", "codex", *dirs[:2]).stdout
    assert _validate("--agent", "codex", "--strict", *dirs).returncode == 1
    other = _validate("--agent", "gemini", *dirs)
    assert other.returncode == 0
    assert "gemini listing: gemini documents no listing limit; not checked" in other.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--agent", "claude-kode"],
        ["--agent", "claude-code", "--context-tokens", "0"],
        ["--agent", "claude-code", "--listing-fraction", "0"],
        ["--agent", "claude-code", "--listing-fraction", "nan"],
        ["--agent", "claude-code", "--listing-budget", "-1"],
    ],
)
def test_bad_listing_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    skill = _skill(tmp_path, "gamma", "description: Gamma.")
    result = _validate(*args, skill)
    assert result.returncode == 5
    assert result.stderr.startswith("skill-evals: ")


def test_test_takes_the_profile_of_its_runners_agent(tmp_path: Path) -> None:
    """`test` with --agent claude-code reports no warning for Claude Code's fields; without it a
    custom runner's run warns as before."""
    skill = _skill(
        tmp_path, "delta", "description: Use for delta questions.", "when_to_use: When delta."
    )
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "prompt": f"delta question {i}", "expectTrigger": i < 5})
            + "\n"
            for i in range(10)
        )
    )
    runner = f"{sys.executable} -m skill_evals runner simulated"

    def warnings(*extra: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
             str(cases), "--runner", runner, "--trials", "1", "--format", "json", "-q", *extra],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        return list(json.loads(result.stdout)["skill"]["warnings"])

    assert any("unknown frontmatter key 'when_to_use'" in w for w in warnings())
    assert warnings("--agent", "claude-code") == []
