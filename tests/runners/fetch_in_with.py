"""A runner that, only in the with arm, fetches each URL given as an argument through the
sandbox's HTTP proxy (as an agent following a link in the skill would): `fetch_in_with.py URL…`."""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.parse


def _fetch(url: str) -> None:
    proxy = os.environ.get("HTTP_PROXY", "")
    host, _, port = proxy.removeprefix("http://").rstrip("/").partition(":")
    target = urllib.parse.urlsplit(url).netloc
    request = f"GET {url} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection((host, int(port or 0)), timeout=10) as sock:
            sock.sendall(request.encode())
            while sock.recv(65536):
                pass
    except (OSError, ValueError):
        pass


def main() -> None:
    sys.stdin.read()
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    if variant == "with":
        for url in sys.argv[1:]:
            _fetch(url)
    skills = ["refund-policy"] if variant == "with" else []
    print(json.dumps({"variant": variant, "invokedSkills": skills, "output": "ok", "exitCode": 0}))


if __name__ == "__main__":
    main()
