"""Bounded connections for the HTTP transport: how many, and how long each may take.

A thread serves one connection, so both the number of live connections and the time each may
keep its thread are bounded (:class:`HttpLimits`). When every slot is taken, a newcomer takes
the slot of the connection that has waited longest for its client (an idle keep-alive
connection, or one still trickling its request): those cost the server nothing to drop and are
what a slow or hostile client holds. Only when every connection is being answered does a
newcomer wait (briefly) for a slot, and then gets a ``503``.
"""

from __future__ import annotations

import contextlib
import io
import math
import socket
import threading
import time
from dataclasses import dataclass, field

from .jsonrpc import MAX_MESSAGE_BYTES

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None  # type: ignore[assignment]

_RESERVED_FDS = 16  # descriptors kept for the interpreter, logs and the listening socket


@dataclass(frozen=True)
class HttpLimits:
    """Limits of the HTTP transport (seconds and bytes); the defaults are the documented ones."""

    max_connections: int = 32
    idle_timeout: float = 30.0  # keep-alive: wait this long for the next request to start
    request_timeout: float = 10.0  # request line, headers and body, from their first byte
    write_timeout: float = 10.0  # each write of a response to a client that does not read
    queue_timeout: float = 2.0  # a newcomer waits this long for a slot, then gets a 503
    max_body_bytes: int = MAX_MESSAGE_BYTES

    def connection_cap(self) -> int:
        """``max_connections``, lowered so the open-file limit can never be the one hit."""
        if resource is None:  # pragma: no cover
            return self.max_connections
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft - _RESERVED_FDS))


@dataclass
class _Slot:
    waiting: bool = True  # waiting for (or reading) a request, not answering one
    since: float = field(default_factory=time.monotonic)
    evicted: bool = False


class ConnectionSlots:
    """The live connections, at most ``cap``; shared by the accept loop and handler threads."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._cond = threading.Condition()
        self._slots: dict[socket.socket, _Slot] = {}

    def admit(self, sock: socket.socket, wait: float) -> bool:
        """Take a slot for ``sock``, evicting the longest-waiting connection when all are
        taken; False when none frees up within ``wait`` seconds (everyone is being answered)."""
        deadline = time.monotonic() + wait
        with self._cond:
            while len(self._slots) >= self._cap:
                if not any(slot.evicted for slot in self._slots.values()):
                    self._evict_longest_waiting()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            self._slots[sock] = _Slot()
            return True

    def _evict_longest_waiting(self) -> None:
        candidates = [(slot.since, id(s), s) for s, slot in self._slots.items() if slot.waiting]
        if not candidates:
            return
        _, _, victim = min(candidates)
        self._slots[victim].evicted = True
        _shut(victim)  # its thread's blocked read returns at once; the thread then ends

    def set_waiting(self, sock: socket.socket, waiting: bool) -> None:
        """Mark ``sock`` as waiting for its client (evictable) or being answered (not)."""
        with self._cond:
            slot = self._slots.get(sock)
            if slot is not None:
                slot.waiting = waiting
                slot.since = time.monotonic()

    def release(self, sock: socket.socket) -> None:
        """Free the slot of a finished connection."""
        with self._cond:
            self._slots.pop(sock, None)
            self._cond.notify_all()

    def shut_all(self) -> None:
        """End every live connection (server shutdown); their threads then finish."""
        with self._cond:
            for sock in self._slots:
                _shut(sock)

    def any_waiting(self) -> bool:
        """Whether some live connection is waiting for its client (so could be evicted)."""
        with self._cond:
            return any(slot.waiting for slot in self._slots.values())

    def __len__(self) -> int:
        with self._cond:
            return len(self._slots)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its thread
        sock.shutdown(socket.SHUT_RDWR)


class DeadlineReader(io.RawIOBase):
    """A socket's input that gives up at ``deadline`` (a ``time.monotonic()`` value) however
    the bytes trickle in: each receive may only wait for the time that is left."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self.deadline = math.inf
        self.expired = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.expired = True
            raise TimeoutError("the client did not send in time")
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            self.expired = True
            raise


class DeadlineWriter(io.BufferedIOBase):
    """A socket's output where each write must complete within ``timeout`` seconds."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        super().__init__()
        self._sock = sock
        self._timeout = timeout

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._sock.settimeout(self._timeout)  # sendall: the whole call, not each send
        self._sock.sendall(data)
        return len(data)
