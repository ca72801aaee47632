"""A runner that reports its resource limits and, given a size, writes that many bytes into its
workspace (or its working directory, outside the workspace) and waits, as a runaway agent
would: `limits_probe.py [BYTES workspace|cwd]`. A write the sandbox refuses is reported."""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def main() -> None:
    sys.stdin.read()
    limits = {
        name: resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))
        for name in ("NPROC", "FSIZE", "CORE")
    }
    if len(sys.argv) > 2:
        where = os.environ["SKILL_EVALS_WORKSPACE"] if sys.argv[2] == "workspace" else "."
        try:
            with open(os.path.join(where, "big.bin"), "wb") as handle:
                handle.write(os.urandom(int(sys.argv[1])))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            limits["write"] = exc.strerror  # type: ignore[assignment]
        else:
            time.sleep(5)  # the engine's check, every second, must end this
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    print(json.dumps({"variant": variant, "invokedSkills": [], "output": json.dumps(limits),
                      "exitCode": 0}))  # fmt: skip


if __name__ == "__main__":
    main()
