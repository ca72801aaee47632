"""A scripted drafter for the tests: logs each request it is shown (one JSON line) to --log,
then prints reply N of --replies (a JSON array; the last repeats) for its N-th call, exiting
with the reply's "exit" code when it has one."""

import json
import sys


def main() -> None:
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    request = json.load(sys.stdin)
    with open(args["--log"], "a", encoding="utf-8") as log:
        log.write(json.dumps(request) + "\n")
    with open(args["--log"], encoding="utf-8") as log:
        calls = sum(1 for _ in log)
    with open(args["--replies"], encoding="utf-8") as f:
        replies = json.load(f)
    reply = replies[min(calls, len(replies)) - 1]
    code = reply.pop("exit", 0) if isinstance(reply, dict) else 0
    print(json.dumps(reply))
    sys.exit(code)


if __name__ == "__main__":
    main()
