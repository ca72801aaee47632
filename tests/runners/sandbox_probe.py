"""A probe run as runner, setup command and command check: `sandbox_probe.py ROLE`.

It plants nothing and is told no secret: it reports what it can reach as hashes (every
environment value of its own and of every process in its /proc, the content of every file
named in $PROBE_TARGETS, a JSON list of paths, and of every further argument), which
processes it sees, and — as the runner — whether a process that a setup command left
behind is still alive. It writes its findings to ``probe-ROLE.json`` in the workspace
(the test keeps the workspaces).

As ``setup`` it also starts an escapee (``setsid``, environment cleared) that touches
``heartbeat`` in the workspace every 50 ms for 30 s, unless it is killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time

HEARTBEAT = (
    "import os, sys, time\n"
    "path = os.path.join(sys.argv[1], 'heartbeat')\n"
    "end = time.monotonic() + 30\n"
    "while time.monotonic() < end:\n"
    "    with open(path, 'w') as f: f.write(str(time.monotonic()))\n"
    "    time.sleep(0.05)\n"
)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _environ_hashes() -> tuple[list[str], list[str]]:
    """Hashes of every environment value visible, and each process's first argument."""
    hashes = [_hash(v.encode()) for v in os.environ.values()]
    programs = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                for entry in handle.read(1 << 20).split(b"\0"):
                    hashes.append(_hash(entry.partition(b"=")[2]))
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                programs.append(os.path.basename(handle.read(4096).split(b"\0")[0].decode()))
        except OSError:
            continue
    return hashes, programs


def _target(path: str) -> dict[str, object]:
    entry: dict[str, object] = {"exists": os.path.exists(path)}
    with contextlib.suppress(OSError):
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                entry["sha256"] = _hash(handle.read(1 << 20))
        elif os.path.isdir(path):
            entry["entries"] = len(os.listdir(path))
    return entry


def _heartbeat_alive(workspace: str) -> bool:
    path = os.path.join(workspace, "heartbeat")
    try:
        first = os.stat(path).st_mtime_ns
    except OSError:
        return False
    time.sleep(0.4)
    try:
        return os.stat(path).st_mtime_ns != first
    except OSError:
        return False


def main() -> None:
    role = sys.argv[1]
    workspace = os.environ.get("SKILL_EVALS_WORKSPACE", os.getcwd())
    started = time.time()
    if role == "setup":
        subprocess.Popen(
            ["setsid", sys.executable, "-c", HEARTBEAT, workspace],
            env={},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(0.2)
    hashes, programs = _environ_hashes()
    findings: dict[str, object] = {
        "role": role,
        "pid": os.getpid(),
        "home": os.environ.get("HOME"),
        "hashes": sorted(set(hashes)),
        "programs": programs,
        "targets": {p: _target(p) for p in json.loads(os.environ.get("PROBE_TARGETS", "[]"))},
        # What its own arguments name, in order (the case chose them; keyed by position).
        "args": [_target(path) for path in sys.argv[2:]],
        "tmp": sorted(os.listdir("/tmp")) if os.path.isdir("/tmp") else None,
    }
    if role == "runner":
        sys.stdin.read()
        findings["escapeeAlive"] = _heartbeat_alive(workspace)
        time.sleep(float(os.environ.get("PROBE_SLEEP", "0")))
    findings["span"] = [started, time.time()]
    with open(os.path.join(workspace, f"probe-{role}.json"), "w", encoding="utf-8") as handle:
        json.dump(findings, handle)
    if role == "runner":
        variant = os.environ["EVALGATE_SKILL_VARIANT"]
        print(json.dumps({"variant": variant, "invokedSkills": [], "output": "ok", "exitCode": 0}))


if __name__ == "__main__":
    main()
