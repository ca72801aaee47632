"""A runner that sends raw requests to the sandbox's HTTP proxy, as a hostile agent would:
`egress_attacks.py REQUESTS_JSON OUT_DIR`. REQUESTS_JSON is a list of raw HTTP request texts,
where @MODEL@ stands for the model's path behind the proxy (SKILL_EVALS_PROXY_PROBE_KEY); what
each got back (its first 4,000 characters, or the error) goes to OUT_DIR/attacks.json (first
invocation)."""

from __future__ import annotations

import json
import os
import socket
import sys


def _send(proxy: tuple[str, int], raw: str) -> str:
    data = b""
    try:
        with socket.create_connection(proxy, timeout=10) as sock:
            sock.sendall(raw.encode("latin-1"))
            # A tunnel stays open: its answer is the head alone.
            while not (raw.startswith("CONNECT") and b"\r\n\r\n" in data):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        return f"error {type(exc).__name__}"
    return data[:4000].decode("latin-1")


def main() -> None:
    sys.stdin.read()
    with open(sys.argv[1], encoding="utf-8") as handle:
        requests = json.load(handle)
    host, _, port = os.environ["HTTP_PROXY"].removeprefix("http://").rstrip("/").partition(":")
    path = os.path.join(sys.argv[2], "attacks.json")
    if not os.path.exists(path):  # the first invocation attacks; the others only answer
        model = os.environ.get("SKILL_EVALS_PROXY_PROBE_KEY", "http://x/none")
        model_path = "/" + model.removeprefix("http://").split("/", 1)[1]
        answers = [_send((host, int(port)), raw.replace("@MODEL@", model_path)) for raw in requests]
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(answers, handle)
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    print(json.dumps({"variant": variant, "invokedSkills": [], "output": "ok", "exitCode": 0}))


if __name__ == "__main__":
    main()
