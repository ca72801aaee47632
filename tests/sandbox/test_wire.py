"""Usage at the wire and the per-invocation token budget, with real bubblewrap and the contained
network: a scripted runner asks a loopback model upstream (Anthropic-shaped, as one JSON body
or as server-sent events) through the credential proxy; the record carries the tokens the
upstream reported, the ledger says where its sums come from, and past --max-invocation-tokens
the next model request gets 429 and the invocation ends as a budget stop."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skill_evals.sandbox.usage import UsageScanner
from tests.sandbox._quiet_run import quiet_run

RUNNER = Path(__file__).resolve().parents[1] / "runners" / "wire_user.py"
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None or not sys.platform.startswith("linux"),
    reason="bubblewrap is not installed here (apt-get install -y bubblewrap)",
)
SSE = (
    'event: message_start\ndata: {"type": "message_start", "message": {"usage": '
    '{"input_tokens": 90, "cache_read_input_tokens": 10, "output_tokens": 1}}}\n\n'
    'event: content_block_delta\ndata: {"type": "content_block_delta"}\n\n'
    'event: message_delta\ndata: {"type": "message_delta", "usage": {"output_tokens": 20}}\n\n'
)


class _Model(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("stream"):
            data, kind = SSE.encode(), "text/event-stream"
        else:
            usage = {"input_tokens": 100, "output_tokens": 20}
            data, kind = (
                json.dumps({"type": "message", "usage": usage}).encode(),
                "application/json",
            )
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def model() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _run(root: Path, port: int, asks: int, kind: str, *extra: str) -> dict[str, Any]:
    report = quiet_run(
        root,
        f"{sys.executable} {RUNNER} {asks} {kind}",
        *("--credential", f"PROBE_KEY,x-api-key,http://127.0.0.1:{port}", *extra),
        env={**os.environ, "PROBE_KEY": "probe-key-1234"},
    )
    records = [json.loads(x) for x in (root / "rec.jsonl").read_text().splitlines()]
    return {"report": report, "records": records}


@needs_bwrap
@pytest.mark.parametrize("kind", ["json", "sse"])
def test_the_tokens_the_model_reported_are_recorded_per_invocation(
    model: int, tmp_path: Path, kind: str
) -> None:
    ran = _run(tmp_path, model, 2, kind)
    assert ran["report"]["runner"]["failures"] == []
    for record in ran["records"]:
        assert record["meta"]["wireTokens"] == {"input": 200, "output": 40}
        assert json.loads(record["output"]) == [200, 200]
    ledger = ran["report"]["runner"]["ledger"]
    assert ledger["tokensSource"] == "wire"
    assert ledger["inputTokens"] == 20 * 200 and ledger["outputTokens"] == 20 * 40


@needs_bwrap
def test_past_the_budget_the_next_model_request_is_refused(model: int, tmp_path: Path) -> None:
    ran = _run(tmp_path, model, 5, "json", "--max-invocation-tokens", "150", "--keep-going")
    failures = ran["report"]["runner"]["failures"]
    assert len(failures) == 20  # every invocation: 120, then 240 > 150, then 429
    assert all(f["reason"].startswith("budget: ") for f in failures)
    assert "--max-invocation-tokens 150" in failures[0]["reason"]
    assert ran["report"]["exitCode"] == 7


def test_the_scanner_reads_each_providers_usage() -> None:
    def scan(chunks: list[bytes], sse: bool) -> tuple[int, int] | None:
        scanner = UsageScanner(sse)
        for chunk in chunks:
            scanner.feed(chunk)
        scanner.finish()
        return scanner.tokens

    raw = SSE.encode()
    assert scan([raw[:37], raw[37:120], raw[120:]], True) == (100, 20)  # split anywhere
    openai = b'{"usage": {"prompt_tokens": 7, "completion_tokens": 3}}'
    assert scan([openai], False) == (7, 3)
    responses = (
        b'data: {"type": "response.completed", "response": {"usage": '
        b'{"input_tokens": 5, "output_tokens": 6}}}\n\n'
    )
    assert scan([responses], True) == (5, 6)
    gemini = (
        b'data: {"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2}}\n'
        b'data: {"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 9}}\n'
    )
    assert scan([gemini], True) == (4, 9)
    assert scan([b"not json"], False) is None
    assert scan([b"data: " + b"x" * (2 << 20) + b"\n"], True) is None  # an over-long line
