"""A fake of the GitHub REST API on 127.0.0.1 for the PR comment and review tests: the sticky
issue comments of one pull request (paginated, created and edited), who the token is, the pull
request's head commit and changed files, and review comments. It checks the bearer token on every
request, records each request and is bounded: at most ``max_requests`` requests (then 429), a
request body of at most 1 MB, ten seconds of a stalled client, ``lifetime_s`` seconds in all."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = "octo/skills"
MAX_BODY = 1_000_000
PAGE = 100


class FakeGitHub:
    """The fake API's state: the PR's comments, who the token is, forced failures, the files
    the PR changes, the review comments posted and the requests seen."""

    def __init__(self, token: str, pr: int, *, max_requests: int = 400) -> None:
        self.token, self.pr, self.max_requests = token, pr, max_requests
        self.comments: list[dict[str, Any]] = []
        self.bodies: list[str] = []  # every comment body posted or edited, in order
        self.next_id = 100
        self.user: str | None = "skill-bot"  # None → /user answers 403 (Actions token)
        self.fail_with: int | None = None
        self.requests: list[tuple[str, str, str]] = []  # method, path, authorization
        self.head_sha = "a" * 40
        self.files: list[dict[str, Any]] = []  # the PR's changed files (filename, patch)
        self.reviews: list[dict[str, Any]] = []

    def add(self, login: str, body: str) -> int:
        """A comment by ``login`` on the PR; its id."""
        self.next_id += 1
        self.comments.append({"id": self.next_id, "user": {"login": login}, "body": body})
        return self.next_id

    def answer(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        """The status and JSON payload for one authorised request."""
        if self.fail_with is not None:
            return self.fail_with, {"message": "Resource not accessible"}
        split = urllib.parse.urlsplit(target)
        page = int(urllib.parse.parse_qs(split.query).get("page", ["1"])[0])
        pages = slice((page - 1) * PAGE, page * PAGE)
        pull, issue = f"/repos/{REPO}/pulls/{self.pr}", f"/repos/{REPO}/issues/{self.pr}"
        route = (method, split.path)
        if route == ("GET", "/user"):
            if self.user is None:
                return 403, {"message": "Resource not accessible by integration"}
            return 200, {"login": self.user}
        if route == ("GET", pull):
            return 200, {"number": self.pr, "head": {"sha": self.head_sha}}
        if route == ("GET", f"{pull}/files"):
            return 200, self.files[pages]
        if route == ("POST", f"{pull}/comments"):
            self.reviews.append(body)
            self.next_id += 1
            return 201, {"id": self.next_id}
        if route == ("GET", f"{issue}/comments"):
            return 200, self.comments[pages]
        if route == ("POST", f"{issue}/comments"):
            self.bodies.append(body["body"])
            return 201, {"id": self.add(self.user or "github-actions[bot]", body["body"])}
        if method == "PATCH" and split.path.startswith(f"/repos/{REPO}/issues/comments/"):
            comment_id = int(split.path.rsplit("/", 1)[1])
            for comment in self.comments:
                if comment["id"] == comment_id:
                    comment["body"] = body["body"]
                    self.bodies.append(body["body"])
                    return 200, comment
        return 404, {"message": "Not Found"}


def pr_env(
    tmp_path: Path, token: str, pr: int, url: str, base: str = "0" * 40, **extra: str
) -> dict[str, str]:
    """The GitHub Actions variables of a ``pull_request`` event for PR ``pr`` of REPO (its
    event file, naming the base commit ``base``, written into ``tmp_path``), the API at
    ``url``; then ``extra``. A base the checkout does not hold leaves the policy at the
    defaults (the pull request's own configuration is never trusted)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "base": {"sha": base}}}))
    return {
        "GITHUB_TOKEN": token,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": url,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": "pull_request",
        **extra,
    }


@contextmanager
def serving(state: FakeGitHub, lifetime_s: float = 120.0) -> Iterator[str]:
    """Serve ``state`` on 127.0.0.1 (port 0) for at most ``lifetime_s``; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a stalled client cannot hold the server

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            authorization = self.headers.get("Authorization", "")
            state.requests.append((method, self.path, authorization))
            if len(state.requests) > state.max_requests:
                return self._send(429, {"message": "request budget of the fake API spent"})
            if authorization != f"Bearer {state.token}":
                return self._send(401, {"message": "Bad credentials"})
            length = min(int(self.headers.get("Content-Length", "0")), MAX_BODY)
            body = json.loads(self.rfile.read(length) or b"null")
            self._send(*state.answer(method, self.path, body))

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    stopper = threading.Timer(lifetime_s, server.shutdown)  # bounded in time
    stopper.daemon = True
    stopper.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stopper.cancel()
        server.shutdown()
        server.server_close()
