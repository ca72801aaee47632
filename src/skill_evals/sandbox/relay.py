"""The first process inside every sandbox: it sets the sandbox's resource limits, starts the
sandboxed command and, when the network is contained, relays the sandbox's own loopback port to
the engine's egress proxy.

Run as a file (``python -I -S relay.py …``) on the C modules of the standard library alone
(``_socket``, ``_signal``, ``_thread``: the Python wrappers import ``enum``, which would cost
every invocation several milliseconds). Inside a contained sandbox the only way out is the unix
socket the engine bound in; this relay listens on ``127.0.0.1:PORT`` of the sandbox's own
network namespace and copies each connection, byte for byte, to that socket. What may pass is
decided outside, by the egress proxy; the relay decides nothing.

Usage: ``relay.py --nproc N --fsize BYTES [--socket PATH --port P] -- ARGV…``. The exit status
is the command's (128 + the signal number when a signal ended it).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal would import enum
import _socket
import _thread
import os
import resource
import sys

_CHUNK = 64 * 1024
_BACKLOG = 128
_MAX_RELAYED = 256  # connections relayed at once; more are closed at once


def _limits(nproc: int, fsize: int) -> None:
    """Soft and hard limits for everything the sandbox starts (root ignores RLIMIT_NPROC)."""
    for which, value in (
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_CORE, 0),
    ):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            # A hard limit already lower than ours: keep it (lowering is all we want).
            _soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY and hard < value:
                resource.setrlimit(which, (hard, hard))


def _copy(source: _socket.socket, sink: _socket.socket, done: _thread.LockType) -> None:
    """Copy ``source`` to ``sink`` until end of stream, then half-close ``sink``."""
    try:
        while True:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:  # noqa: SIM105 - no contextlib: the relay imports as little as it can
        sink.shutdown(_socket.SHUT_WR)
    except OSError:
        pass
    done.release()


def _relay(client: _socket.socket, path: str, active: list[int], lock: _thread.LockType) -> None:
    try:
        upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            upstream.close()
            return
        back = _thread.allocate_lock()
        back.acquire()
        _thread.start_new_thread(_copy, (upstream, client, back))
        forth = _thread.allocate_lock()
        forth.acquire()
        _copy(client, upstream, forth)
        back.acquire()  # the other direction is done too
        upstream.close()
    finally:
        client.close()
        with lock:
            active[0] -= 1


def _serve(listener: _socket.socket, path: str) -> None:
    lock = _thread.allocate_lock()
    active = [0]
    while True:
        try:
            fd, _address = listener._accept()  # type: ignore[attr-defined]
        except OSError:
            return
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        with lock:
            full = active[0] >= _MAX_RELAYED
            if not full:
                active[0] += 1
        if full:
            client.close()
            continue
        _thread.start_new_thread(_relay, (client, path, active, lock))


def _status(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _parse(args: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    while args and args[0] != "--":
        if len(args) < 2 or not args[0].startswith("--"):
            raise SystemExit("skill-evals relay: usage: relay.py --OPTION VALUE … -- ARGV…")
        options[args[0][2:]] = args[1]
        args = args[2:]
    return options, args[1:]


def _exec(argv: list[str]) -> int:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"skill-evals relay: cannot start {argv[0]}: {exc.strerror}\n".encode())
    return 127


def main(args: list[str]) -> int:
    """Set the limits, start ``ARGV`` and relay until it ends; its exit status."""
    options, argv = _parse(args)
    if not argv:
        raise SystemExit("skill-evals relay: no command after --")
    _limits(int(options.get("nproc", "1024")), int(options.get("fsize", str(1 << 30))))
    path = options.get("socket")
    if path is None:  # no network to relay: nothing to stay for
        return _exec(argv)
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(options.get("port", "3128"))))
    listener.listen(_BACKLOG)
    pid = os.fork()
    if pid == 0:
        listener.close()
        os._exit(_exec(argv))
    for number in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(number, lambda signum, _frame: os.kill(pid, signum))
    _thread.start_new_thread(_serve, (listener, path))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return _status(status)
        except InterruptedError:
            continue


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
