"""A custom runner that uses a proxied key: `proxied.py ENV`. It reports the hash of the value it
got for ENV (never the value) and the upstream's answer to one POST through
$SKILL_EVALS_PROXY_<ENV>."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.request


def main() -> None:
    name = sys.argv[1]
    sys.stdin.read()
    url = os.environ[f"SKILL_EVALS_PROXY_{name}"] + "/v1/messages?x=1"
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={"x-api-key": "mine"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = response.read(1000).decode()
    output = {"seen": hashlib.sha256(os.environ[name].encode()).hexdigest(), "answer": answer}
    variant = os.environ["EVALGATE_SKILL_VARIANT"]
    print(
        json.dumps(
            {"variant": variant, "invokedSkills": [], "output": json.dumps(output), "exitCode": 0}
        )
    )


if __name__ == "__main__":
    main()
