"""Regular-expression searches within the check time bound, for the checks (a ``Matcher``) and
the built-in agents' evidence patterns.

Python's ``re`` cannot be interrupted: a pattern that backtracks badly on text an agent wrote
(``(a+)+$`` on thirty ``a``s and a ``b``) would hang the engine. So searches run in small
helper processes, one per concurrent search, reused between searches; a search that passes
the time bound kills its helper and the check fails with "check took too long".
"""

from __future__ import annotations

import contextlib
import re
import selectors
import subprocess
import sys
import threading
import time

from ..checks.model import CHECK_SECONDS
from ..checks.parse import compile_flags
from .processes import forget_child, start_child

# The helper: reads "<pattern bytes> <text bytes> <flags> <op>\n" + pattern + text. Op "s"
# (search) answers 1 or 0; op "n" (fullmatch, the group "name") answers 0, or 1 and then
# "<bytes>\n" + the captured name.
_HELPER = r"""
import re, sys
src, dst = sys.stdin.buffer, sys.stdout.buffer
FLAGS = {"i": re.I, "m": re.M, "s": re.S, "x": re.X}
while True:
    head = src.readline()
    if not head:
        break
    plen, tlen, letters, op = head.decode("ascii").split()
    pattern = src.read(int(plen)).decode("utf-8", "surrogatepass")
    text = src.read(int(tlen)).decode("utf-8", "surrogatepass")
    flags = 0
    for letter in letters.strip("-"):
        flags |= FLAGS[letter]
    if op == "s":
        dst.write(b"1" if re.search(pattern, text, flags) else b"0")
    else:
        match = re.fullmatch(pattern, text, flags)
        name = (match.group("name") or "") if match else ""
        raw = name.encode("utf-8", "surrogatepass")
        dst.write(b"1%d\n" % len(raw) + raw if raw else b"0")
    dst.flush()
"""


class RegexTimeout(Exception):
    """A bounded match took longer than its time bound (or its helper could not run)."""


class _Helper:
    """One helper process."""

    def __init__(self) -> None:
        # The engine's own (registered): no setup command's or verifier's sweep may take it.
        self.proc = start_child(
            lambda: subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,
                bufsize=0,
            )
        )

    def search(self, pattern: str, flags: str, text: str, seconds: float) -> bool | None:
        answer = self._ask("s", pattern, flags, text, seconds)
        return None if answer is None else answer == b"1"

    def name(self, pattern: str, text: str, seconds: float) -> str | None:
        """The ``name`` group of a full match ("" when none); None on time-out."""
        answer = self._ask("n", pattern, "", text, seconds)
        return None if answer is None else answer.decode("utf-8", "surrogatepass")

    def _ask(self, op: str, pattern: str, flags: str, text: str, seconds: float) -> bytes | None:
        """Op "s": b"1"/b"0"; op "n": the captured name's bytes (b"" for none). None when the
        helper did not answer within ``seconds`` or answered nonsense."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        deadline = time.monotonic() + seconds
        raw_pattern = pattern.encode("utf-8", "surrogatepass")
        raw_text = text.encode("utf-8", "surrogatepass")
        head = f"{len(raw_pattern)} {len(raw_text)} {flags or '-'} {op}\n".encode("ascii")
        try:
            self.proc.stdin.write(head + raw_pattern + raw_text)
        except OSError:
            return None
        first = self._read(1, deadline)
        if op == "s" or first != b"1":
            if first in (b"0", b"1"):
                return first if op == "s" else b""
            return None
        size = b""
        while len(size) <= len(str(len(raw_text))):  # the name is no longer than the text
            byte = self._read(1, deadline)
            if byte is None or byte == b"\n":
                break
            size += byte
        if not size.isdigit() or int(size) > len(raw_text):
            return None
        return self._read(int(size), deadline)

    def _read(self, count: int, deadline: float) -> bytes | None:
        """Exactly ``count`` bytes of the helper's answer before ``deadline``, else None."""
        assert self.proc.stdout is not None
        out = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while len(out) < count:
                if not sel.select(max(0.0, deadline - time.monotonic())):
                    return None
                try:
                    chunk = self.proc.stdout.read(count - len(out))
                except OSError:
                    return None
                if not chunk:
                    return None
                out += chunk
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self.proc.wait()
        forget_child(self.proc.pid)


class RegexPool:
    """Bounded searches for the checks of one run (thread-safe). Use as a context manager:
    leaving it ends every helper process."""

    def __init__(self, seconds: float = CHECK_SECONDS) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._idle: list[_Helper] = []
        self._closed = False

    def search(self, pattern: str, flags: str, text: str) -> bool | None:
        """Whether ``pattern`` (with ``flags`` letters) is found in ``text``; None when the
        search took longer than the time bound (or its helper could not run)."""
        if not sys.executable:  # an embedded interpreter: no helper possible
            return re.search(pattern, text, compile_flags(flags)) is not None
        with self._lock:
            helper = self._idle.pop() if self._idle else None
        if helper is None:
            try:
                helper = _Helper()
            except OSError:
                return None
        found = helper.search(pattern, flags, text, self.seconds)
        with self._lock:
            keep = found is not None and not self._closed
            if keep:
                self._idle.append(helper)
        if not keep:
            helper.close()
        return found

    def fullmatch_name(self, pattern: str, text: str) -> str | None:
        """The group ``name`` when ``pattern`` matches the whole ``text`` (None when it does not
        match or captured nothing); RegexTimeout past the time bound."""
        if not sys.executable:  # an embedded interpreter: no helper possible
            match = re.fullmatch(pattern, text)
            return (match.group("name") or None) if match else None
        with self._lock:
            helper = self._idle.pop() if self._idle else None
        if helper is None:
            try:
                helper = _Helper()
            except OSError as exc:
                raise RegexTimeout(f"cannot start a regex helper ({exc.strerror})") from None
        name = helper.name(pattern, text, self.seconds)
        with self._lock:
            keep = name is not None and not self._closed
            if keep:
                self._idle.append(helper)
        if not keep:
            helper.close()
        if name is None:
            raise RegexTimeout(f"took longer than {self.seconds:g} s")
        return name or None

    def close(self) -> None:
        """End every idle helper (idempotent)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for helper in idle:
            helper.close()

    def __enter__(self) -> RegexPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
