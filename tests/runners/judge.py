"""A scripted judge for tests: logs each request it receives and decides from markers.

argv: [--log=LOG] [--mode MODE]; LOG names the log (else $JUDGE_LOG). One word ``--log=…``
names no existing file, so it stays out of the request key (an argument naming a file enters
each request key by its content); a judge gets only an allowlist of the caller's environment.
Each request is appended to the log as one JSON line (with the judge's environment names under
"_env"). Absolute requests: the answer's output and files' text are
searched for a marker — ``[[score=X]]`` gives score X (pass when X ≥ the scale's middle),
``GOOD`` score hi / pass, otherwise score lo / fail — and these make the judge misbehave:
``[[judge-exit]]`` exits 3, ``[[judge-hang]]`` sleeps 60 s, ``[[judge-flood]]`` prints 2 MB,
``[[judge-garbage]]`` prints a non-JSON line, ``[[judge-retry]]`` answers a retryable runnerError,
``[[judge-outside]]`` a score outside the scale, ``[[judge-child]]`` leaves a child process
that sleeps 60 s (a token of its command line appended to LOG + ".pids").
Pairwise requests: the answer holding ``BETTER`` wins (either answer holding ``FIRSTWINS``: "a"
wins, so the two asks of that pair disagree); ``--mode first`` always answers "a";
``--mode hang`` waits for such a child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid


def _text(answer: dict) -> str:
    parts = [answer.get("output") or ""]
    parts += [f["text"] for f in answer.get("files", [])]
    return "\n".join(parts)


def _absolute(request: dict) -> dict:
    text = _text(request["answer"])
    lo, hi = request["scale"]
    if "[[score=" in text:
        score = float(text.split("[[score=", 1)[1].split("]]", 1)[0])
    else:
        score = hi if "GOOD" in text else lo
    return {
        "score": score,
        "pass": score >= (lo + hi) / 2,
        "reason": "GOOD found" if score >= (lo + hi) / 2 else "no GOOD\x1b[31m in the answer",
        "meta": {"inputTokens": 10, "outputTokens": 2, "costUsd": 0.001},
    }


def _pairwise(request: dict, mode: str) -> dict:
    if mode == "first" or "FIRSTWINS" in _text(request["a"]) + _text(request["b"]):
        return {"winner": "a", "reason": "first"}
    a, b = "BETTER" in _text(request["a"]), "BETTER" in _text(request["b"])
    winner = "a" if a and not b else "b" if b and not a else "tie"
    return {"winner": winner, "reason": f"{winner} is better", "meta": {"inputTokens": 5}}


def _sleeper(log: str) -> subprocess.Popen[bytes]:
    """A child that sleeps 60 s, its command line holding a unique token (appended to
    LOG.pids): a sandboxed judge sees its own pid namespace, so the test finds it by token."""
    token = f"judge-sleeper-{uuid.uuid4().hex}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", token])
    with open(log + ".pids", "a", encoding="utf-8") as handle:
        handle.write(f"{token}\n")
    return child


def main() -> None:
    args = sys.argv[1:]
    logs = [a.split("=", 1)[1] for a in args if a.startswith("--log=")]
    log = logs[0] if logs else os.environ["JUDGE_LOG"]
    args = [a for a in args if not a.startswith("--log=")]
    mode = args[1] if len(args) > 1 and args[0] == "--mode" else "markers"
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({**request, "_env": sorted(os.environ)}) + "\n")
    text = _text(request["answer"]) if request["kind"] == "absolute" else ""
    if mode == "hang" and request["kind"] == "pairwise":
        _sleeper(log).wait()
    if "[[judge-exit]]" in text:
        sys.exit(3)
    if "[[judge-hang]]" in text:
        time.sleep(60)
    if "[[judge-flood]]" in text:
        sys.stdout.write("x" * 2_000_000)
        return
    if "[[judge-garbage]]" in text:
        print("SECRET-JUDGE-TEXT not json")
        return
    if "[[judge-retry]]" in text:
        print(json.dumps({"runnerError": "overloaded, try later", "retryable": True}))
        return
    if "[[judge-child]]" in text:
        _sleeper(log)
    if request["kind"] == "absolute":
        answer = _absolute(request)
        if "[[judge-outside]]" in text:
            answer["score"] = request["scale"][1] + 1
    else:
        answer = _pairwise(request, mode)
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
