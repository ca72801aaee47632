"""A loopback fake of the Anthropic Messages and OpenAI Chat Completions APIs for the built-in
judges: on 127.0.0.1, port 0, answering a script of replies in order, logging each request's
path, headers and body, bounded in requests and time, stopped by the test; and the run of
`skill-evals judge|propose` pointed at it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_REQUESTS = 200
MAX_BODY = 4 << 20


@dataclass
class Reply:
    """One scripted reply: a status and a body, or ``drop`` (close without answering)."""

    status: int = 200
    body: bytes = b""
    drop: bool = False


def anthropic_text(text: str, tokens: tuple[int, int] = (120, 30)) -> Reply:
    """A Messages API reply whose text is ``text``."""
    body = {
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }  # fmt: skip
    return Reply(200, json.dumps(body).encode())


def openai_text(text: str, tokens: tuple[int, int] = (90, 20)) -> Reply:
    """A Chat Completions reply whose text is ``text``."""
    body = {
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }  # fmt: skip
    return Reply(200, json.dumps(body).encode())


@dataclass
class FakeJudgeApi:
    """The server; ``script`` is answered in order (the last reply repeats)."""

    script: list[Reply]
    log: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def do_POST(self) -> None:
                length = min(int(self.headers.get("content-length") or 0), MAX_BODY)
                body = self.rfile.read(length)
                with fake.lock:
                    if len(fake.log) >= MAX_REQUESTS:
                        self.send_error(503)
                        return
                    fake.log.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": json.loads(body),
                        }
                    )
                    reply = fake.script[min(len(fake.log) - 1, len(fake.script) - 1)]
                if reply.drop:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, *args: Any) -> None:
                return

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def run_model_command(
    command: str, provider: str, url: str, key: str | None, request: Any, *more: str
) -> subprocess.CompletedProcess[str]:
    """``skill-evals COMMAND PROVIDER MORE…`` (``judge`` or ``propose``) with ``request`` on
    stdin, pointed at ``url`` with ``key`` (none: no key variable), and none of the caller's
    own API keys and addresses."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    env[f"{provider.upper()}_BASE_URL"] = url
    if key is not None:
        env[f"{provider.upper()}_API_KEY"] = key
    return subprocess.run(
        ["skill-evals", command, provider, *more],
        input=json.dumps(request), capture_output=True, text=True, env=env, timeout=120,
        check=False,
    )  # fmt: skip
