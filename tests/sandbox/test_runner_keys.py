"""No child gets another runner's key, and the built-in runners that may use several providers
get each key through the credential proxy: the environment every built-in runner starts with;
the real pi CLI on a loopback Anthropic API through ``skill-evals test`` (the upstream gets the
real key, pi the placeholder); OpenCode's ``--provider-config`` keys routed to each provider's
endpoint through the proxy, or refused with exit 5 naming the provider."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.agents import registry
from skill_evals.agents.environment import agent_env
from skill_evals.agents.opencode_config import auth_variables
from skill_evals.agents.opencode_keys import routed_providers
from skill_evals.agents.runner_env import builtin_runner_env
from skill_evals.sandbox.credential_proxy import PLACEHOLDER
from tests.agents.conftest import agent_binary
from tests.agents.fake_anthropic import FakeAnthropic
from tests.conftest import assert_valid_report, write_jsonl, write_skill

PI_KEY = "SKILL_EVALS_PI_API_KEY"


@pytest.mark.parametrize("runner", [*registry.names(), "simulated"])
def test_no_built_in_runner_but_pi_starts_with_pis_key(runner: str) -> None:
    caller = {"PATH": "/bin", PI_KEY: "k-1", "SKILL_EVALS_MY_TOKEN": "k-2", "SKILL_EVALS_X": "1"}
    alone = builtin_runner_env(f"skill-evals runner {runner}", caller)
    assert alone is not None and PI_KEY not in alone  # unused without its base URL: nobody's
    caller["SKILL_EVALS_PI_BASE_URL"] = "http://127.0.0.1:9/v1"
    env = builtin_runner_env(f"skill-evals runner {runner}", caller)
    assert env is not None
    assert (PI_KEY in env) is (runner == "pi")
    assert "SKILL_EVALS_MY_TOKEN" not in env  # nobody's: no runner gets it
    assert env["SKILL_EVALS_X"] == "1"  # the engine's other variables pass
    if runner == "simulated":
        return
    # And the agent's own environment, built by the runner from that one.
    allowed = (
        auth_variables(env, [])
        if runner == "opencode"
        else tuple(registry.agent(runner).environment)
    )
    agent = agent_env(env, Path("/nonexistent-home"), allowed)
    assert (PI_KEY in agent) is (runner == "pi")
    assert not any(k.startswith("SKILL_EVALS_MY") for k in agent)


def _cases(root: Path) -> Path:
    rows = [{"id": f"c{i}", "prompt": f"hello {i}", "expectTrigger": False} for i in range(10)]
    return write_jsonl(root / "cases.jsonl", rows)


@pytest.mark.agents
def test_pi_gets_a_providers_key_through_the_proxy(tmp_path: Path) -> None:
    pi = agent_binary("pi")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    skill = write_skill(tmp_path / "skills")
    key = "sk-ant-" + secrets.token_hex(16)
    runner = (
        f"{shlex.quote(sys.executable)} -m skill_evals runner pi --bin {pi} "
        "--model anthropic/claude-sonnet-4-5"
    )
    with FakeAnthropic() as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PI_"))}
        env = {k: v for k, v in env.items() if not k.startswith("SKILL_EVALS_PI_")}
        env |= {**fake.env(), "ANTHROPIC_API_KEY": key, "OPENAI_API_KEY": "sk-" + "o" * 20}
        done = subprocess.run(
            [
                *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
                *("--cases", str(_cases(tmp_path)), "--runner", runner, "--arms", "with"),
                *("--trials", "1", "--jobs", "2", "--sandbox", "required"),
                *("--report", str(tmp_path / "r.json")),
            ],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        received = list(fake.credentials)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], done.stderr[-2000:]
    assert report["sandbox"]["proxied"] == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
    assert received and set(received) == {key}  # the real key upstream, from the proxy
    assert key not in done.stdout + done.stderr


def _provider_file(tmp_path: Path, providers: dict[str, object]) -> Path:
    path = tmp_path / "providers.json"
    path.write_text(json.dumps(providers), encoding="utf-8")
    return path


def _opencode_run(
    tmp_path: Path, providers: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    skill = write_skill(tmp_path / "skills")
    runner = (
        f"{shlex.quote(sys.executable)} -m skill_evals runner opencode --bin /bin/true "
        f"--model my/m1 --provider-config {providers}"
    )
    return subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(_cases(tmp_path)), "--runner", runner, "--arms", "with"),
            *("--trials", "1", "--format", "json"),
        ],
        env={**os.environ, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "env", "said"),
    [
        ({"npm": "@ai-sdk/openai-compatible", "options": {"apiKey": "{env:MY_LLM_KEY}"}},
         {"MY_LLM_KEY": "k"}, "reads its key from MY_LLM_KEY but has no options.baseURL"),
        ({"npm": "@ai-sdk/openai-compatible",
          "options": {"apiKey": "{env:OPENAI_API_KEY}", "baseURL": "http://127.0.0.1:9/v1"}},
         {"OPENAI_API_KEY": "k"}, "OPENAI_API_KEY is also OpenCode's own key"),
    ],
)  # fmt: skip
def test_an_opencode_key_that_cannot_be_routed_is_exit_5_naming_the_provider(
    tmp_path: Path, entry: dict[str, object], env: dict[str, str], said: str
) -> None:
    providers = _provider_file(tmp_path, {"my": {**entry, "models": {"m1": {}}}})
    done = _opencode_run(tmp_path, providers, env)
    assert done.returncode == 5, done.stderr
    assert "provider.my" in done.stderr and said in done.stderr
    assert "k" not in done.stderr.split(": ")[-1].split()  # never the value


def test_opencode_providers_point_at_the_proxy_serving_their_key() -> None:
    providers = {
        "my": {"npm": "@ai-sdk/openai-compatible",
               "options": {"apiKey": "{env:MY_LLM_KEY}", "baseURL": "https://llm.example/v1"}},
        "plain": {"options": {"baseURL": "https://other.example/v1"}},
    }  # fmt: skip
    url = "http://127.0.0.1:4242/" + "a" * 32
    env = {"MY_LLM_KEY": PLACEHOLDER, "SKILL_EVALS_PROXY_MY_LLM_KEY": url}
    routed = routed_providers(providers, env)
    assert routed["my"]["options"] == {"apiKey": "{env:MY_LLM_KEY}", "baseURL": url}
    assert routed["plain"] == providers["plain"]
    assert providers["my"]["options"]["baseURL"] == "https://llm.example/v1"  # not changed
    with pytest.raises(Exception, match=r"provider\.my: MY_LLM_KEY is a credential proxy"):
        routed_providers(providers, {"MY_LLM_KEY": PLACEHOLDER})
