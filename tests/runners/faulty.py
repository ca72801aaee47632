"""A misbehaving runner for tests: `faulty.py MODE [ARG]`. Every mode that prints output
includes the marker SECRET-OUTPUT so tests can check reasons never echo it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

MARK = "SECRET-OUTPUT"


def obj(**extra: object) -> str:
    base: dict[str, object] = {
        "variant": os.environ.get("EVALGATE_SKILL_VARIANT", "with"),
        "invokedSkills": [],
        "output": MARK,
        "exitCode": 0,
    }
    base.update(extra)
    return json.dumps(base)


def main() -> None:
    mode = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else ""
    out = sys.stdout
    if mode == "hang":
        time.sleep(60)
    elif mode == "grandchild":
        # A child that keeps stdout/stderr open and outlives us; its pid goes to ARG.
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdout=sys.stdout,
            stderr=sys.stderr,
        )
        with open(arg, "w") as fh:
            fh.write(str(child.pid))
        out.write(obj() + "\n")
        out.flush()
        os._exit(0)
    elif mode == "flood":
        chunk = (MARK + "x" * 1000 + "\n").encode() * 1000
        for _ in range(100):  # ~100 MB
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    elif mode == "stderr-flood":
        chunk = b"e" * 1_000_000
        for _ in range(100):
            sys.stderr.buffer.write(chunk)
        out.write(obj() + "\n")
    elif mode == "badutf8":
        sys.stdout.buffer.write(
            b'{"variant": "with", "output": "\xff\xfe' + MARK.encode() + b'"}\n'
        )
    elif mode == "binary":
        sys.stdout.buffer.write(bytes(range(256)) * 10 + MARK.encode())
    elif mode == "twolines":
        out.write(obj() + "\n" + obj() + "\n")
    elif mode == "wrongvariant":
        other = "without" if os.environ["EVALGATE_SKILL_VARIANT"] == "with" else "with"
        out.write(obj(variant=other) + "\n")
    elif mode == "selfkill":
        out.write(obj() + "\n")
        out.flush()
        os.kill(os.getpid(), signal.SIGTERM)
    elif mode == "exit":
        out.write(obj() + "\n")
        sys.stderr.write(MARK + "\n")
        sys.exit(int(arg or "4"))
    elif mode == "extrakey":
        out.write(obj(verdict=MARK) + "\n")
    elif mode == "promptkey":
        # An unknown key made of the prompt text: a reason must never show it.
        out.write(obj(**{sys.stdin.read(): 1}) + "\n")
    elif mode == "dupkey":
        # A duplicate key that looks like a field name: not named from stdout either.
        out.write(obj()[:-1] + ', "secretfield": 1, "secretfield": 2}\n')
    elif mode == "missingkey":
        data = json.loads(obj())
        del data["exitCode"]
        out.write(json.dumps(data) + "\n")
    elif mode == "boolcode":
        out.write(obj(exitCode=True) + "\n")
    elif mode == "badmeta":
        out.write(obj(meta={"costUsd": "a lot"}) + "\n")
    elif mode == "array":
        out.write(json.dumps([MARK]) + "\n")
    elif mode == "notjson":
        out.write(MARK + "\n")
    elif mode == "nan":
        out.write(
            '{"variant": "with", "invokedSkills": [], "output": "' + MARK + '", "exitCode": NaN}\n'
        )
    elif mode == "empty":
        pass
    elif mode == "nostdin":
        # Never reads stdin (the prompt may be large), answers at once.
        out.write(obj() + "\n")
    elif mode == "close-then-work":
        # Closes stdout/stderr, keeps working briefly, exits 0: not a failure of any kind.
        out.write(obj() + "\n")
        out.flush()
        os.close(1)
        os.close(2)
        time.sleep(0.3)
        os._exit(0)
    elif mode == "echo":
        prompt = sys.stdin.buffer.read().decode("utf-8")
        out.write(obj(output=prompt, exitCode=int(arg or "0")) + "\n")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
