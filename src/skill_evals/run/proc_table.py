"""The process table as /proc shows it (Linux; empty elsewhere): each process's parent, group,
session, state, start time and command name, and the descendants of a set of processes."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PROC = "/proc"


@dataclass(frozen=True, slots=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # start time in clock ticks since boot: tells a reused pid apart
    comm: bytes = b""


def read_stat(pid: int) -> Proc | None:
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            data = handle.read(4096)
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    head, _, tail = data.rpartition(b")")
    fields = tail.split()
    try:
        ppid, pgid, sid = (int(f) for f in fields[1:4])
        return Proc(
            pid, ppid, pgid, sid, fields[0].decode(), int(fields[19]), head[1 + head.find(b"(") :]
        )
    except (IndexError, ValueError):
        return None


def scan() -> dict[int, Proc]:
    """Every process visible in /proc (empty where there is no /proc)."""
    found: dict[int, Proc] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            proc = read_stat(int(name))
            if proc is not None:
                found[proc.pid] = proc
    return found


def descendants(procs: Mapping[int, Proc], roots: Sequence[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in procs.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen
