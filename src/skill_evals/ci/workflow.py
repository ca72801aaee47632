"""The GitHub Actions runner's interface: workflow commands (annotations, groups) and the
``$GITHUB_OUTPUT`` / ``$GITHUB_STEP_SUMMARY`` files.

A workflow command is any output line starting with ``::``; names, paths and messages come
from user files, so every one written into a command goes through :func:`workflow_escape` —
the one escaping function for this output kind.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
import urllib.parse
from collections.abc import Mapping

from ..escaping.invisible import escape_char, is_invisible

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
LEVELS = frozenset({"error", "warning", "notice"})
# Removed from workflow commands: controls other than \r and \n (those are %-escaped) and lone
# surrogates. Format characters and line/paragraph separators follow the shared rule (shown).
_DROPPED = frozenset({"Cc", "Cs"})
_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = {**_DATA, ":": "%3A", ",": "%2C"}


def workflow_escape(text: object, *, prop: bool = False) -> str:
    """``text`` safe inside a workflow command: GitHub's own escapes (``%``, ``\\r``, ``\\n``,
    and in a property value also ``:`` and ``,``), invisible characters shown as ``\\uXXXX``
    and every other control removed, so it stays one command and shows as the text it was."""
    table = _PROPERTY if prop else _DATA
    out: list[str] = []
    for char in str(text):
        if char in table:
            out.append(table[char])
        elif char == "\t":
            out.append(" ")
        elif is_invisible(char):
            out.append(escape_char(char))
        elif unicodedata.category(char) not in _DROPPED:
            out.append(char)
    return "".join(out)


def annotation(
    level: str,
    message: str,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    """``::error file=F,line=N,title=T::message`` (one line)."""
    if level not in LEVELS:
        raise ValueError(f"unknown annotation level {level!r}")
    props = []
    if file:
        props.append(f"file={workflow_escape(file, prop=True)}")
    if line:
        props.append(f"line={int(line)}")
    if title:
        props.append(f"title={workflow_escape(title, prop=True)}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{workflow_escape(message)}"


def group(title: str) -> str:
    """``::group::title`` (one line)."""
    return f"::group::{workflow_escape(title)}"


def write_outputs(env: Mapping[str, str], values: Mapping[str, str]) -> None:
    """Append ``key=value`` lines to ``$GITHUB_OUTPUT`` (values on one line; multi-line values
    use the heredoc form with a random delimiter)."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    lines = []
    for key, value in values.items():
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
            lines.append(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{key}={value}\n")
    with open(path, "a", encoding="utf-8", errors="replace") as fh:
        fh.write("".join(lines))


def append_step_summary(env: Mapping[str, str], text: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when set."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8", errors="replace") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def run_url(env: Mapping[str, str], run_id: str | None = None) -> str | None:
    """The URL of this workflow run (or of run ``run_id`` of the same repository), when the
    environment names one."""
    server = env.get("GITHUB_SERVER_URL", "")
    repo = env.get("GITHUB_REPOSITORY", "")
    run_id = run_id if run_id is not None else env.get("GITHUB_RUN_ID", "")
    if not (server and _REPO.match(repo) and run_id.isdigit() and run_id.isascii()):
        return None
    parsed = urllib.parse.urlparse(server)
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.netloc
        or not server.isprintable()
        or any(c in server for c in "()<> \"'`[]")
    ):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
