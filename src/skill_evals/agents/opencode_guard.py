"""Cap OpenCode's own model-API retries at one (docs/agents/opencode.md, "Retries").

OpenCode 1.18 retries a failed model request (429, 5xx, overload, network) five times with a
backoff of up to 30 s, and no setting changes that; only after the last attempt does ``opencode
run --format json`` print an ``error`` event. The engine's ``--retries`` should decide instead, with
the reason visible. OpenCode logs every failed attempt on stderr (``--print-logs``) as a
``message="stream error"`` line, so this small supervisor runs OpenCode with the same stdin and
stdout, copies its stderr through, and after the second failed attempt of the main session (the
first try and one retry) ends OpenCode and prints one marker event on stdout::

    {"type": "skill_evals.retry_cap", "attempts": 2, "kind": "rate limit"}

``kind`` is a classification of the logged error (never its text). When OpenCode ends by itself
after logging errors, the names of those errors (identifiers such as
``ProviderModelNotFoundError``, never their messages) follow as
``{"type": "skill_evals.errors", "names": [...]}``, because its own ``error`` event often says
only ``UnknownError``. Usage: ``python -I opencode_guard.py OPENCODE-ARGV...`` (standard library
only, so it runs in the agent's environment); exits with OpenCode's status, or 0 after printing
the retry marker.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from types import FrameType

MARKER = "skill_evals.retry_cap"
ERRORS = "skill_evals.errors"
MAX_NAMES = 10
MAX_ATTEMPTS = 2  # the first request and one retry
MAX_LINE = 64 * 1024  # a longer stderr line is copied in pieces and never counted
# A failed model request of the main session (title and summary requests run with small=true).
_STREAM_ERROR = b'message="stream error"'
_MAIN_SESSION = b" small=false "
_ERROR_NAME = re.compile(rb'\berror="(?P<name>[A-Z][A-Za-z0-9]{0,63}Error)\b')
_ERROR_TEXT = re.compile(rb'error\.error="(?P<text>[^"\n]{0,2000})')
# What the logged error says, classified (first match wins); the text itself is never printed.
KINDS = (
    ("rate limit", re.compile(rb"\b429\b|rate.?limit|too many requests", re.I)),
    ("overloaded", re.compile(rb"\b529\b|overloaded|capacity|unavailable", re.I)),
    ("server error", re.compile(rb"\b5\d\d\b|internal|server error", re.I)),
    (
        "connection failed",
        re.compile(rb"fetch failed|connect|socket|timed? ?out|econn|enotfound|network", re.I),
    ),
)


def classify(line: bytes) -> str:
    """The kind of failure a ``stream error`` log line reports (``"retryable error"`` when no
    pattern matches)."""
    match = _ERROR_TEXT.search(line)
    text = match.group("text") if match else line
    for kind, pattern in KINDS:
        if pattern.search(text):
            return kind
    return "retryable error"


def end(proc: subprocess.Popen[bytes]) -> None:
    """End a process: SIGTERM, SIGKILL if it lingers. The runners' scaffold uses this one too
    (this module stays standard-library only, as the guard runs on its own)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def supervise(argv: list[str]) -> int:
    """Run ``argv`` (OpenCode), watching its stderr; the exit status to use."""
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE)

    def forward(signum: int, frame: FrameType | None) -> None:
        end(proc)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, forward)
    assert proc.stderr is not None
    attempts = 0
    kind = ""
    names: dict[str, None] = {}
    while True:
        line = proc.stderr.readline(MAX_LINE)
        if not line:
            break
        sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
        if not line.endswith(b"\n"):
            continue
        name = _ERROR_NAME.search(line)
        if name and len(names) < MAX_NAMES:
            names.setdefault(name.group("name").decode("ascii"), None)
        if _STREAM_ERROR in line and _MAIN_SESSION in line:
            attempts += 1
            kind = classify(line)
            if attempts >= MAX_ATTEMPTS:
                end(proc)
                marker = {"type": MARKER, "attempts": attempts, "kind": kind}
                _emit(marker)
                return 0
    status = proc.wait()
    if names:
        _emit({"type": ERRORS, "names": list(names)})
    return status


def _emit(event: dict[str, object]) -> None:
    # A leading newline ends any line OpenCode left unfinished when it was ended.
    sys.stdout.write("\n" + json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> None:
    """Entry point: ``python -I opencode_guard.py OPENCODE-ARGV...``."""
    if len(sys.argv) < 2:
        sys.exit("usage: python -I opencode_guard.py OPENCODE-ARGV...")
    status = supervise(sys.argv[1:])
    sys.exit(status if status >= 0 else 128 - status)  # killed by a signal: 128 + its number


if __name__ == "__main__":
    main()
