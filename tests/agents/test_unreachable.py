"""A dead model API says so: the credential proxy's 502 body names where (scheme, host, port)
and why (connection refused), and each built-in runner's reason reads `the model API at
<scheme://host:port> is unreachable (connection refused)`, not a server error. The real agent
CLIs talk to the real proxy, whose upstream is a loopback port nothing listens on."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_evals.sandbox.credential_proxy import Credential, CredentialProxy
from tests.agents.conftest import agent_binary
from tests.agents.e2e import caller_env, run_runner_cli
from tests.conftest import write_skill

_KEYS = ("PI_", "SKILL_EVALS_PI_", "ANTHROPIC_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_")


@pytest.fixture(scope="module")
def dead_port() -> int:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port: int = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    return port


@pytest.fixture
def proxy(dead_port: int) -> Iterator[CredentialProxy]:
    upstream = f"http://127.0.0.1:{dead_port}/v1"
    credentials = [
        Credential(name, style, upstream, None, "not-a-secret")
        for name, style in (
            ("ANTHROPIC_API_KEY", "x-api-key"),
            ("OPENAI_API_KEY", "bearer"),
            ("GEMINI_API_KEY", "x-goog-api-key"),
        )
    ]
    with CredentialProxy(credentials) as running:
        yield running


def test_the_proxys_502_says_where_and_why(proxy: CredentialProxy, dead_port: int) -> None:
    import urllib.error
    import urllib.request

    url = proxy.url("OPENAI_API_KEY") + "/chat"
    with pytest.raises(urllib.error.HTTPError) as failed:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"), timeout=30)
    assert failed.value.code == 502
    assert json.loads(failed.value.read()) == {
        "error": {
            "type": "upstream_unreachable",
            "message": f"skill-evals proxy: the model API at http://127.0.0.1:{dead_port} is "
            "unreachable (connection refused)",
        }
    }


@pytest.mark.agents
# Copilot is left out: its runner stops it at its second failed request, before it says why
# (the proxy's 502 reads as a server error there, docs/agents/copilot.md).
@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi", "gemini"])
def test_a_runners_reason_names_the_dead_upstream(
    agent: str, proxy: CredentialProxy, dead_port: int, tmp_path: Path
) -> None:
    settings = {
        "claude-code": {
            "ANTHROPIC_API_KEY": "placeholder",
            "ANTHROPIC_BASE_URL": proxy.url("ANTHROPIC_API_KEY"),
        },
        "codex": {"OPENAI_API_KEY": "placeholder", "OPENAI_BASE_URL": proxy.url("OPENAI_API_KEY")},
        "gemini": {
            "GEMINI_API_KEY": "placeholder",
            "GOOGLE_GEMINI_BASE_URL": proxy.url("GEMINI_API_KEY"),
        },
        "pi": {
            "SKILL_EVALS_PI_API_KEY": "placeholder",
            "SKILL_EVALS_PI_BASE_URL": proxy.url("OPENAI_API_KEY"),
        },
    }[agent]
    binary = agent_binary({"claude-code": "claude"}.get(agent, agent))
    (tmp_path / "home").mkdir()
    env = caller_env(tmp_path, _KEYS, {**settings, "HOME": str(tmp_path / "home")})
    skill = write_skill(tmp_path / "skills")
    argv = ["runner", agent, "--bin", binary, "--model", "fake-model"][1:]
    proc = run_runner_cli(argv, "with", skill, env, "a question", 180)
    line = json.loads(proc.stdout)
    assert line["runnerError"].startswith(
        f"the model API at http://127.0.0.1:{dead_port} is unreachable (connection refused)"
    ), proc.stderr
    assert line["retryable"] is False
