"""A SIMULATION of an agent, not a model: `skill-evals runner simulated`.

It exists so the whole pipeline runs on a fresh machine with no API key, and it says so on
stderr on every invocation. Its behaviour is deterministic and deliberately simple:

* trigger: in the ``with`` variant only, the skill is loaded when at least ``MIN_SHARED_WORDS``
  distinct content words of the prompt occur in the skill's description (words are lower-cased,
  a plural ``s`` is dropped, short and common words are ignored). It never loads in ``without``.
  With a whole catalog installed (``SKILL_EVALS_SKILL_DIRS``, `skill-evals route`) it loads
  the one skill whose description shares the most such words, if it reaches the same threshold.
* answer: when loaded, the section of the SKILL.md body that shares most words with the prompt
  (a fenced ``json`` block verbatim when the prompt asks for JSON); otherwise a generic answer.
* work: given a workspace (SKILL_EVALS_WORKSPACE), it appends its answer, under a line saying
  it is simulated, to the first file the prompt names in backticks (`CHANGELOG.md`), else to
  ``answer.md``, and reports that ``write`` (and the skill load) as tool calls.

It measures nothing about a real model; use it for demos, tutorials and self-tests.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..messages import ARTEFACTS
from ..suite.frontmatter import name_and_description, parse_frontmatter
from .base import AgentInvocation, AgentResult, RunnerSetupError

MIN_SHARED_WORDS = 2
LABEL = "SIMULATION: no model was called; results say nothing about a real agent"
GENERIC_ANSWER = (
    "[simulated] I can't answer that with any specific policy or procedure; "
    "please check the relevant documentation."
)

_STOPWORDS = frozenset(
    """
    about after again all also and any are ask back bee been before but can cannot could did
    does doing done for from get got had has have how into its just like may more most much
    not now off once only other our out over own same she should some such than that the their
    them then there these they this those too under until very was way were what when where
    which while who why will with would you your yours please tell give want need make
    """.split()
)
_WORD = re.compile(r"[a-z0-9]+")
# `skill-evals runner simulated`, `python -m skill_evals runner simulated`, or either inside a
# `sh -c '…'` string: the words "runner simulated" in the command line.
_SIMULATED_COMMAND = re.compile(r"(?:^|[\s'\"])runner\s+simulated(?:$|[\s'\"])")
NOTICE = (
    "the runner is `skill-evals runner simulated`, a SIMULATION: no model is called and the "
    "figures say nothing about a real agent (use e.g. --runner 'skill-evals runner "
    "claude-code' for a real one)"
)


NOTES = (NOTICE, ARTEFACTS)


def is_simulated_command(command: str | None) -> bool:
    """Whether a ``--runner`` command runs this simulation (labelled wherever it is used)."""
    return command is not None and _SIMULATED_COMMAND.search(command) is not None


_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+")
MAX_FILE_NAME = 200
ANSWER_FILE = "answer.md"
FILE_LABEL = "[simulated] written by skill-evals runner simulated; no model was called\n"


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ characters, plural ``s`` dropped, common words removed."""
    words = set()
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.add(word)
    return words


# Line breaks of every kind (vertical tab, form feed, NEL, line and paragraph separators too).
_SENTENCE_END = re.compile(r"[.!?;\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
_EXCLUSION_STARTS = ("do not", "don't", "not for", "not when", "never", "avoid")
_EXCLUSION_PARTS = ("do not trigger", "do not use", "don't use", " not for ")


def is_exclusion(sentence: str) -> bool:
    """A sentence that says when the skill is *not* for ("Do NOT trigger when …")."""
    # Whitespace runs (tabs, no-break spaces) read as one space: "Do  not use" is "do not use".
    text = " ".join(sentence.lower().replace("\u2019", "'").split())
    return text.startswith(_EXCLUSION_STARTS) or any(p in text for p in _EXCLUSION_PARTS)


def matchable(description: str) -> str:
    """The description without its exclusion sentences (split at ``.``, ``!``, ``?``, ``;`` and
    line breaks): words that say when not to load the skill never count as a match."""
    return " ".join(s for s in _SENTENCE_END.split(description) if not is_exclusion(s))


def should_load(prompt: str, description: str) -> bool:
    """The simulated routing decision."""
    wanted = content_words(prompt)
    return len(wanted & content_words(matchable(description))) >= MIN_SHARED_WORDS


@dataclass(frozen=True)
class _Section:
    heading: str
    text: str


def _sections(body: str) -> list[_Section]:
    sections: list[_Section] = []
    heading, lines = "", list[str]()
    for line in body.splitlines():
        if line.startswith("#"):
            if lines or heading:
                sections.append(_Section(heading, "\n".join(lines).strip()))
            heading, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    sections.append(_Section(heading, "\n".join(lines).strip()))
    return [s for s in sections if s.text]


def _json_block(text: str) -> str | None:
    """The lines between the first line opening a ```json fence and the next line starting
    with ```; one pass over the lines (a regular expression would retry every fence)."""
    lines = text.split("\n")
    for start, line in enumerate(lines):
        if line.startswith("```json") and not line[len("```json") :].strip():
            for end in range(start + 1, len(lines)):
                if lines[end].startswith("```"):
                    return "\n".join(lines[start + 1 : end])
            return None
    return None


def answer_from_body(prompt: str, body: str) -> str:
    """The best-matching section of the skill body (ties: the earlier section)."""
    wanted = content_words(prompt)
    sections = _sections(body)
    if not sections:
        return GENERIC_ANSWER
    best = max(
        sections,
        key=lambda s: len(wanted & content_words(s.heading + " " + s.text)),
    )
    if "json" in wanted:
        block = _json_block(best.text)
        if block is not None:
            return block.strip()
    return f"[simulated] {best.text}"


def answer_file(prompt: str) -> str:
    """The file the simulation writes: the first backticked relative file name in the prompt
    (no ``..``, no absolute path), else ``answer.md``."""
    # The odd pieces between backticks are the quoted spans: one linear split, and each span
    # is matched only when short.
    for name in prompt.split("`")[1:-1:2]:
        if len(name) > MAX_FILE_NAME or _FILE_NAME.fullmatch(name) is None:
            continue
        if all(part not in ("", ".", "..") for part in name.split("/")):
            return name
    return ANSWER_FILE


def write_answer(workspace: Path, rel: str, text: str) -> None:
    """Append the labelled answer to ``rel`` inside ``workspace``, creating missing
    directories; never through a symlink."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        *dirs, name = rel.split("/")
        for part in dirs:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            next_fd = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        out = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644, dir_fd=fd
        )
        with os.fdopen(out, "a", encoding="utf-8") as fh:
            if fh.tell() > 0:
                fh.write("\n")
            fh.write(FILE_LABEL + text + "\n")
    finally:
        os.close(fd)


@dataclass(frozen=True)
class _Installed:
    name: str
    description: str
    body: str


def _read_skill(skill_dir: Path) -> _Installed:
    md = skill_dir / "SKILL.md"
    try:
        front, body = parse_frontmatter(md.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunnerSetupError(f"{md}: cannot read the skill ({type(exc).__name__})") from exc
    name, description = name_and_description(front, skill_dir.name)
    return _Installed(name=name, description=description, body=body)


def pick_skill(prompt: str, descriptions: list[str]) -> int | None:
    """The simulated choice among installed skills: the index of the description sharing the
    most content words with the prompt (at least ``MIN_SHARED_WORDS``), ties broken by the
    larger share of the description's own words, then by catalog order; None when none
    qualifies. Near-miss prompts between similar descriptions really are misrouted here."""
    wanted = content_words(prompt)
    best: tuple[int, float, int] | None = None
    for index, description in enumerate(descriptions):
        words = content_words(matchable(description))
        shared = len(wanted & words)
        if shared < MIN_SHARED_WORDS:
            continue
        score = (shared, shared / len(words), -index)
        if best is None or score > best:
            best = score
    return None if best is None else -best[2]


def run(invocation: AgentInvocation) -> AgentResult:
    """Answer one invocation of the runner contract. With a catalog installed
    (SKILL_EVALS_SKILL_DIRS, a routing run) it loads at most the one best-matching skill; with
    a workspace it writes its answer there."""
    print(f"skill-evals runner simulated: {LABEL}", file=sys.stderr)
    dirs = invocation.skill_dirs or (invocation.skill_dir,)
    skill = None
    if invocation.variant == "with":  # a without run reads no skill (sandboxed: it sees none)
        installed = [_read_skill(d) for d in dirs]
        chosen = pick_skill(invocation.prompt, [s.description for s in installed])
        if chosen is not None:
            skill = installed[chosen]
    output = GENERIC_ANSWER if skill is None else answer_from_body(invocation.prompt, skill.body)
    tool_calls: list[dict[str, object]] = []
    if skill is not None:
        tool_calls.append({"name": "skill", "input": {"name": skill.name}, "ok": True})
    if invocation.workspace is not None:
        target = answer_file(invocation.prompt)
        try:
            write_answer(invocation.workspace, target, output)
        except OSError as exc:
            raise RunnerSetupError(
                f"cannot write {target} in the workspace ({exc.strerror})"
            ) from exc
        tool_calls.append({"name": "write", "input": {"path": target}, "ok": True})
    return AgentResult(
        variant=invocation.variant,
        invoked_skills=[] if skill is None else [skill.name],
        output=output,
        exit_code=0,
        meta={"turns": 1 + len(tool_calls)},
        tool_calls=tool_calls,
    )


def main() -> None:
    """`skill-evals runner simulated`: one invocation from the environment and stdin, the
    contract line on stdout; exit 2 with a runnerError line when the invocation is unusable."""
    from ..escaping.terminal import terminal_safe
    from .base import read_invocation

    try:
        result = run(read_invocation(catalog=True))
    except RunnerSetupError as exc:
        print(f"skill-evals runner simulated: {terminal_safe(exc)}", file=sys.stderr)
        sys.stdout.write(exc.to_line())  # the reason the engine reports: {"runnerError": …}
        sys.exit(2)
    sys.stdout.write(result.to_line())
    sys.stdout.flush()
