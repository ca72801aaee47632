"""Run Qwen Code for one invocation: cap its own model-API retries at one and append its chat
log to the event stream (docs/agents/qwen.md, "Retries" and "Evidence").

Qwen Code 0.24 retries a failed model request (429, 5xx, 529) up to seven times with a backoff
of up to 30 s, and no setting lowers that; a 5xx prints nothing on stdout while it waits. It
records every failed attempt in its chat log (a ``qwen-code.api_error`` record with the HTTP
status), so this supervisor runs Qwen Code with the same stdin, stdout and stderr, watches the
chat log, and after the second failed attempt (the first try and one retry) ends Qwen Code and
prints one marker event on stdout::

    {"type": "skill_evals.retry_cap", "attempts": 2, "status": 529}

Once Qwen Code has exited it prints ``{"type": "skill_evals_chat"}`` and the chat log's records:
the stream's ``tool_result`` of the ``skill`` tool shows only the description, the chat log what
the model was sent. Usage: ``python -I qwen_guard.py QWEN-ARGV...`` (standard library only, so it
runs in the agent's environment; ``HOME`` is the agent's fresh home); exits with Qwen Code's
status, or 0 after printing the retry marker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

RETRY_CAP = "skill_evals.retry_cap"
CHAT_MARKER = "skill_evals_chat"
MAX_ATTEMPTS = 2  # the first request and one retry
POLL_SECONDS = 0.2
_API_ERROR = b'"qwen-code.api_error"'


def chat_logs() -> list[Path]:
    """The run's chat log files (its home is fresh: every one is this run's)."""
    root = Path(os.environ.get("HOME", "/nonexistent")) / ".qwen" / "projects"
    return sorted(root.glob("*/chats/*.jsonl"))


class Attempts:
    """The failed model requests the chat log records so far (read on from where it left off:
    a long run's log is not read again at every poll)."""

    def __init__(self) -> None:
        self.count = 0
        self.status: int | None = None  # the HTTP status of the last one
        self._read: dict[Path, int] = {}

    def poll(self) -> int:
        """Read what the chat log gained; the number of failed requests."""
        for path in chat_logs():
            at = self._read.get(path, 0)
            try:
                with path.open("rb") as handle:
                    handle.seek(at)
                    data = handle.read()
            except OSError:
                continue
            complete = data[: data.rfind(b"\n") + 1]  # a record still being written waits
            self._read[path] = at + len(complete)
            for line in complete.splitlines():
                if _API_ERROR in line:
                    self._failed(line)
        return self.count

    def _failed(self, line: bytes) -> None:
        self.count += 1
        try:
            code = json.loads(line)["systemPayload"]["uiEvent"].get("status_code")
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        if isinstance(code, int):
            self.status = code


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``; just ``pid`` elsewhere): Qwen Code's
    launcher starts the CLI as a child process."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                queue += [int(child) for child in task.read_text().split()]
            except (OSError, ValueError):
                continue
    return found


def _end(proc: subprocess.Popen[bytes], grace: float = 5) -> None:
    """SIGTERM to Qwen Code and its children, SIGKILL to those left after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    pids = _tree(proc.pid)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM if grace else signal.SIGKILL)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def supervise(argv: list[str]) -> int:
    """Run ``argv`` (Qwen Code) until it exits or fails its second model request; the exit
    status to use."""
    proc = subprocess.Popen(argv)

    def forward(signum: int, frame: FrameType | None) -> None:
        _end(proc)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, forward)
    attempts = Attempts()
    while proc.poll() is None:
        time.sleep(POLL_SECONDS)
        if attempts.poll() >= MAX_ATTEMPTS:
            # Qwen Code keeps retrying for a while after SIGTERM: no third request.
            _end(proc, grace=0)
            _emit({"type": RETRY_CAP, "attempts": attempts.count, "status": attempts.status})
            return 0
    return proc.returncode


def _emit(event: dict[str, object]) -> None:
    # A leading newline ends any line Qwen Code left unfinished when it was ended.
    sys.stdout.buffer.write(b"\n" + json.dumps(event).encode() + b"\n")
    sys.stdout.flush()


def append_chat() -> None:
    """The marker line, then every chat log record."""
    _emit({"type": CHAT_MARKER})
    for path in chat_logs():
        try:
            data = path.read_bytes()
        except OSError:
            continue
        sys.stdout.buffer.write(data if data.endswith(b"\n") or not data else data + b"\n")
    sys.stdout.flush()


def main() -> None:
    """Entry point: ``python -I qwen_guard.py QWEN-ARGV...``."""
    if len(sys.argv) < 2:
        sys.exit("usage: python -I qwen_guard.py QWEN-ARGV...")
    status = supervise(sys.argv[1:])
    append_chat()
    sys.exit(status if status >= 0 else 128 - status)  # killed by a signal: 128 + its number


if __name__ == "__main__":
    main()
