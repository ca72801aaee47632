"""A probe of the network run as runner, setup command and command check:
`net_probe.py ROLE CONFIG OUT_DIR`.

CONFIG (JSON) names a loopback service's port and an optional host to fetch through the proxy.
The probe reports what it could reach — directly, through the sandbox's proxy variables, and in
its /proc/net/tcp — into OUT_DIR/net-ROLE.json (the first invocation of each role writes it;
once it is there, later ones only answer: under ``--network host`` each probe of the outside
address waits out its 3 s timeout).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request


def _direct(host: str, port: int) -> dict[str, object]:
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=3):
            result = "connected"
    except OSError as exc:
        result = type(exc).__name__
    return {"result": result, "seconds": round(time.monotonic() - started, 3)}


def _listening_ports() -> list[int]:
    ports = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(set(ports))


def _fetch(url: str) -> dict[str, object]:
    proxy = os.environ.get("HTTP_PROXY")
    handlers = [urllib.request.ProxyHandler({"http": proxy} if proxy else {})]
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=10) as response:
            return {"status": response.status, "body": response.read(2000).decode()}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code, "body": exc.read(2000).decode()}
    except OSError as exc:
        return {"status": None, "body": type(exc).__name__}


def _via_proxy(target: str) -> dict[str, object]:
    """An absolute-form GET sent to the proxy itself (NO_PROXY would send 127.0.0.1 direct)."""
    proxy = os.environ.get("HTTP_PROXY", "")
    if not proxy:
        return {"status": None, "body": "no proxy"}
    host, _, port = proxy.removeprefix("http://").rstrip("/").partition(":")
    request = f"GET http://{target}/hello HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n"
    data = b""
    try:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(request.encode())
            while chunk := sock.recv(65536):
                data += chunk
    except OSError as exc:
        return {"status": None, "body": type(exc).__name__}
    head, _, body = data.partition(b"\r\n\r\n")
    words = head.split(b" ", 2)
    status = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
    return {"status": status, "body": body.decode(errors="replace")}


def _connect_through_proxy(target: str) -> str:
    proxy = os.environ.get("HTTP_PROXY", "")
    if not proxy:
        return "no proxy"
    host, _, port = proxy.removeprefix("http://").rstrip("/").partition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            return sock.recv(4096).decode(errors="replace")
    except OSError as exc:
        return type(exc).__name__


def main() -> None:
    role, config_path, out_dir = sys.argv[1:4]
    path = os.path.join(out_dir, f"net-{role}.json")
    if not os.path.exists(path):
        _probe(role, config_path, path)
    if role == "runner":
        sys.stdin.read()
        variant = os.environ["EVALGATE_SKILL_VARIANT"]
        print(json.dumps({"variant": variant, "invokedSkills": [], "output": "ok", "exitCode": 0}))


def _probe(role: str, config_path: str, path: str) -> None:
    """Probe what ``role`` can reach; write it to ``path`` unless a concurrent probe did."""
    with open(config_path) as handle:
        config = json.load(handle)
    service = config["service"]
    found: dict[str, object] = {
        "role": role,
        "direct": _direct("127.0.0.1", service),
        "outside": _direct("192.0.2.1", 80),  # TEST-NET-1: never routed anywhere
        "listening": _listening_ports(),
        "proxied": _via_proxy(config.get("fetch", f"127.0.0.1:{service}")),
        "connect": _connect_through_proxy("example.test:443"),
        "proxyEnv": {k: os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")},
    }
    model = os.environ.get("SKILL_EVALS_PROXY_PROBE_KEY")
    if model:
        found["model"] = _fetch(model + "/v1/ping")
    if not os.path.exists(path):
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(found, handle)


if __name__ == "__main__":
    main()
