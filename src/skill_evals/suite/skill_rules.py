"""The Agent Skills format, checked (`skill-evals validate`; warnings of `test`).

The rules are the specification's, with the reference validator `skills-ref`
(agentskills/agentskills) deciding wherever the prose is open; what the specification does not
make an error is a warning that names whose rule it is. See docs/inputs.md#validate.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import InvalidInput
from .agent_profiles import extra_fields, info_line
from .cases import DEFAULT_CASES_FILES, MIN_UNITS, load_cases
from .frontmatter import decode_skill_md, parse_frontmatter, split_frontmatter
from .jsonl import MAX_FILE_BYTES
from .listing import ListedSkill
from .nfkc import nfkc
from .walks import TreeTooLarge, walk

ALLOWED_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
_SHOWN = 80  # a name or key quoted in a message is cut to this many characters

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Problem:
    """One finding: ``text`` is the printed line, ``PATH: message`` (``PATH: warning: …`` for
    a warning, ``PATH: info: …`` for an info line)."""

    text: str
    severity: Severity = "error"
    key: str | None = None  # the frontmatter key it is about: its line is named


def _show(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


def _name_problems(name: str, dir_name: str) -> list[str]:
    """The rules for ``name``, compared after NFKC (``café`` in either normal form is one)."""
    problems: list[str] = []
    normal = nfkc(name)
    if not 1 <= len(normal) <= MAX_NAME_CHARS:
        problems.append(f"'name' must be 1-{MAX_NAME_CHARS} characters (it has {len(normal)})")
    # Lowercase letters of any script (a letter with no case, such as 技, counts), digits, "-".
    if normal and (normal != normal.lower() or not all(c.isalnum() or c == "-" for c in normal)):
        problems.append(
            "'name' may only contain lowercase letters, digits and hyphens "
            "(letters of any script; no capitals, spaces or other characters)"
        )
    if normal.startswith("-") or normal.endswith("-"):
        problems.append("'name' must not start or end with a hyphen")
    if "--" in normal:
        problems.append("'name' must not contain two hyphens in a row")
    if normal and normal != nfkc(dir_name):
        problems.append(
            f"'name' {_show(name)} must equal the directory name {_show(dir_name)} "
            "(compared after Unicode NFKC normalisation)"
        )
    return problems


def _key_problems(front: dict[str, object], profile: str | None) -> list[Problem]:
    """Keys beyond the specification: an agent profile's own fields (an info line, or an error
    for a wrong value); any other key is an error."""
    extra = extra_fields(profile)
    allowed = ", ".join((*ALLOWED_KEYS, *(k for k in extra if k not in ALLOWED_KEYS)))
    problems = []
    for key, value in front.items():
        check = extra.get(key)
        if check is not None:
            wrong = check(value)
            if wrong is not None:
                problems.append(Problem(f"{key!r} {wrong} (a Claude Code field)", key=key))
            elif key not in ALLOWED_KEYS:
                problems.append(Problem(info_line(key), "info"))
        elif key not in ALLOWED_KEYS:
            problems.append(
                Problem(
                    f"unknown frontmatter key {_show(key)}; allowed keys are {allowed}", key=key
                )
            )
    return problems


def _field_problems(
    front: dict[str, object], dir_name: str, profile: str | None = None
) -> list[Problem]:
    """Every problem of the frontmatter's fields, in the order of the rules."""
    problems = _key_problems(front, profile)
    problems += _keyed("name", _name_field(front.get("name"), dir_name))
    problems += _keyed("description", _description_field(front.get("description")))
    if "compatibility" in front:
        problems += _keyed("compatibility", _compatibility_field(front["compatibility"]))
    for key in ("license", "allowed-tools"):
        if key in extra_fields(profile):
            continue
        if key in front and not isinstance(front[key], str):
            problems.append(Problem(f"{key!r} must be a string", key=key))
    if "metadata" in front:
        problems += _keyed("metadata", _metadata_field(front["metadata"]))
    return problems


def _keyed(key: str, problems: list[Problem]) -> list[Problem]:
    return [Problem(p.text, p.severity, key) for p in problems]


def _key_lines(text: str) -> dict[str, int]:
    """The line of each top-level frontmatter key (block style, as SKILL.md files write
    them): a line starting with the key, then ``:``. The block starts on line 2."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.split("\n")[1:], start=2):
        if line.rstrip("\r").rstrip(" \t") == "---":
            break
        head, colon, _ = line.partition(":")
        if colon and head and not head[0].isspace() and head[0] not in "#-":
            lines.setdefault(head.strip().strip("'\""), number)
    return lines


def _name_field(name: object, dir_name: str) -> list[Problem]:
    """``name``: required, a string, following the naming rules."""
    if name is None:
        return [Problem("missing required key 'name'")]
    if not isinstance(name, str):
        return [Problem("'name' must be a string")]
    return [Problem(message) for message in _name_problems(name, dir_name)]


def _description_field(description: object) -> list[Problem]:
    """``description``: required, 1-1024 characters, not blank (angle brackets: a warning)."""
    if description is None:
        return [Problem("missing required key 'description'")]
    if not isinstance(description, str):
        return [Problem("'description' must be a string")]
    problems: list[Problem] = []
    if not description.strip() or len(description) > MAX_DESCRIPTION_CHARS:
        problems.append(
            Problem(
                f"'description' must be 1-{MAX_DESCRIPTION_CHARS} characters and not blank "
                f"(it has {len(description)})"
            )
        )
    if "<" in description or ">" in description:
        problems.append(
            Problem(
                "'description' contains '<' or '>': Anthropic's skill upload refuses them "
                "(a rule of that upload, not of the Agent Skills specification)",
                "warning",
            )
        )
    return problems


def _compatibility_field(compatibility: object) -> list[Problem]:
    """``compatibility`` when given: a string of 1-500 characters."""
    if not isinstance(compatibility, str):
        return [Problem("'compatibility' must be a string")]
    if not compatibility:
        return [
            Problem(f"'compatibility' must not be empty (1-{MAX_COMPATIBILITY_CHARS} characters)")
        ]
    if len(compatibility) > MAX_COMPATIBILITY_CHARS:
        return [
            Problem(
                f"'compatibility' must be at most {MAX_COMPATIBILITY_CHARS} characters "
                f"(it has {len(compatibility)})"
            )
        ]
    return []


def _metadata_field(metadata: object) -> list[Problem]:
    """``metadata`` when given: a mapping of string values."""
    if not isinstance(metadata, dict):
        return [Problem("'metadata' must be a mapping of string keys to string values")]
    return [
        Problem(f"'metadata' value of {_show(key)} must be a string, not a list or mapping")
        for key, value in metadata.items()
        if not isinstance(value, str)
    ]


def frontmatter_problems(
    md: Path, dir_name: str, text: str, profile: str | None = None
) -> list[Problem]:
    """The Agent Skills rules for the frontmatter of ``text`` (the contents of ``md``), with the
    extra fields of the agent ``profile`` (None: the specification alone)."""
    stripped = text.removeprefix("\ufeff")
    try:
        if split_frontmatter(stripped) is None:
            return [Problem(f"{md}: missing frontmatter; the file must start with a line '---'")]
        front, _ = parse_frontmatter(text)
    except ValueError as exc:
        return [Problem(f"{md}: {exc}")]
    found = _field_problems(front, dir_name, profile)
    lines = _key_lines(stripped) if found else {}
    return [Problem(_located(md, p, lines), p.severity) for p in found]


def _located(md: Path, problem: Problem, lines: dict[str, int]) -> str:
    line = lines.get(problem.key) if problem.key is not None else None
    where = f"{md}:{line}" if line is not None else f"{md}"
    if problem.severity == "warning":
        return f"{where}: warning: {problem.text}"
    return f"{where}: {problem.text}"


def _skill_md(path: Path) -> tuple[Path, str] | Problem:
    """SKILL.md of the directory ``path`` and its text, or the problem that prevents reading it."""
    md = path / "SKILL.md"
    try:
        md_st = os.lstat(md)
    except FileNotFoundError:
        try:
            variants = [n for n in os.listdir(path) if n.lower() == "skill.md"]
        except OSError:
            variants = []
        if variants:
            return Problem(
                f"{path}: missing SKILL.md; found {_show(variants[0])}: the file must be named "
                "SKILL.md, in capitals (rename it)"
            )
        return Problem(f"{path}: missing SKILL.md")
    except OSError as exc:
        return Problem(f"{md}: cannot read ({exc.strerror})")
    if not stat.S_ISREG(md_st.st_mode):
        return Problem(f"{md}: must be a regular file (not a symlink, directory or FIFO)")
    if md_st.st_size > MAX_FILE_BYTES:
        return Problem(f"{md}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return md, decode_skill_md(md, md.read_bytes())
    except OSError as exc:
        return Problem(f"{md}: cannot read ({exc.strerror})")
    except InvalidInput as exc:
        return Problem(str(exc))


def _cases_problems(path: Path, skill_name: str) -> list[Problem]:
    """The case rules for the skill's cases file, when one is at a default location."""
    for rel in DEFAULT_CASES_FILES:
        cases = path / rel
        if not os.path.lexists(cases):
            continue
        try:
            suite = load_cases(cases, skill_name)
        except InvalidInput as exc:
            return [Problem(str(exc))]
        if suite.unit_count < MIN_UNITS:
            return [
                Problem(
                    f"{cases}: warning: {suite.unit_count} independent case(s) after normalising "
                    f"prompts; skill-evals test needs at least {MIN_UNITS} (exit 6)",
                    "warning",
                )
            ]
        return []
    return []


def _bound_problem(path: Path) -> Problem | None:
    """The skill's directory walked within the walk bounds (the hash would refuse it)."""
    try:
        for _ in walk(path, on_error=lambda *_: None):
            pass
    except TreeTooLarge as exc:
        return Problem(str(exc))
    except OSError as exc:
        return Problem(f"{path}: cannot read ({exc.strerror})")
    return None


def check_skill(path: Path, profile: str | None = None) -> list[Problem]:
    """Every problem of the skill directory ``path``: SKILL.md against the Agent Skills format
    (with the agent ``profile``'s fields), then its cases file (the first of evals/cases.jsonl,
    evals/cases.yaml, cases.jsonl)."""
    return check_skill_md(path, profile, cases=True)


def check_skill_md(path: Path, profile: str | None = None, *, cases: bool = False) -> list[Problem]:
    """The problems of ``path``'s SKILL.md (and, with ``cases``, of its cases file)."""
    try:
        st = os.stat(path)
    except OSError:
        return [Problem(f"{path}: skill directory does not exist or cannot be read")]
    if not stat.S_ISDIR(st.st_mode):
        return [Problem(f"{path}: not a directory; a skill is a directory holding SKILL.md")]
    found = _skill_md(path)
    if isinstance(found, Problem):
        return [found]
    bound = _bound_problem(path)
    if bound is not None:
        return [bound]
    md, text = found
    dir_name = path.resolve().name
    problems = frontmatter_problems(md, dir_name, text, profile)
    try:
        front, _ = parse_frontmatter(text)
    except ValueError:
        front = {}
    name = front.get("name")
    skill_name = name if isinstance(name, str) and name else dir_name
    return problems + (_cases_problems(path, skill_name) if cases else [])


def validate_skill(path: Path) -> list[str]:
    """Every problem of ``path`` as a printed line (``PATH: message``); empty when valid."""
    return [problem.text for problem in check_skill(path)]


def listed_skill(path: Path) -> ListedSkill | None:
    """The skill at ``path`` as an agent's listing sees it (name and frontmatter); None when its
    SKILL.md cannot be read or parsed (``check_skill`` reports why)."""
    found = _skill_md(path) if os.path.isdir(path) else None
    if found is None or isinstance(found, Problem):
        return None
    md, text = found
    try:
        front, _ = parse_frontmatter(text)
    except ValueError:
        return None
    name = front.get("name")
    return ListedSkill(name if isinstance(name, str) and name else path.resolve().name, md, front)
