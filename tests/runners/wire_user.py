"""A runner that asks its model N times through the credential proxy (as an agent would):
`wire_user.py N json|sse`. Its answer's output lists the HTTP statuses it got."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request


def main() -> None:
    sys.stdin.read()
    count, kind = int(sys.argv[1]), sys.argv[2]
    base = os.environ["SKILL_EVALS_PROXY_PROBE_KEY"]
    statuses = []
    for _ in range(count):
        body = json.dumps({"stream": kind == "sse", "messages": []}).encode()
        request = urllib.request.Request(base + "/v1/messages", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("x-api-key", os.environ["PROBE_KEY"])
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                response.read()
                statuses.append(response.status)
        except urllib.error.HTTPError as exc:
            statuses.append(exc.code)
            if exc.code == 429:
                break
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    answer = {"variant": variant, "invokedSkills": [], "output": json.dumps(statuses),
              "exitCode": 0}  # fmt: skip
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
