"""Which credentials are proxied: the built-in agents' table and the ``--credential`` /
``credentials:`` forms for custom runners, with the errors a user gets for bad ones."""

from __future__ import annotations

import pytest

from skill_evals.sandbox.credential_proxy import (
    CredentialError,
    builtin_credentials,
    credential_from_config,
    parse_credential_option,
)

KEY = "not-a-real-key-0123"


def _rows(agent: str, env: dict[str, str]) -> list[tuple[str, str, str, str | None]]:
    return [(c.env, c.style, c.upstream, c.base_url_env) for c in builtin_credentials(agent, env)]


def test_each_agent_proxies_its_providers_variables_that_are_set():
    env = {
        "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": "", "OPENAI_API_KEY": KEY,
        "CODEX_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "GOOGLE_API_KEY": KEY, "UNRELATED_TOKEN": KEY,
    }  # fmt: skip
    assert _rows("claude-code", env) == [
        ("ANTHROPIC_API_KEY", "x-api-key", "https://api.anthropic.com", "ANTHROPIC_BASE_URL")
    ]
    assert _rows("codex", env) == [
        ("OPENAI_API_KEY", "bearer", "http://127.0.0.1:9/v1", "OPENAI_BASE_URL"),
        ("CODEX_API_KEY", "bearer", "http://127.0.0.1:9/v1", "OPENAI_BASE_URL"),
    ]
    assert _rows("gemini", env) == [
        (
            "GOOGLE_API_KEY",
            "x-goog-api-key",
            "https://generativelanguage.googleapis.com",
            "GOOGLE_GEMINI_BASE_URL",
        )
    ]
    assert [row[0] for row in _rows("opencode", env)] == [
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_API_KEY", "GOOGLE_API_KEY",
    ]  # fmt: skip
    assert _rows("simulated", env) == [] and _rows("no-such-agent", env) == []


@pytest.mark.parametrize(
    ("api", "style"),
    [
        ("anthropic-messages", "x-api-key"),
        ("google-generative-ai", "x-goog-api-key"),
        ("openai-completions", "bearer"),
        ("", "bearer"),
    ],
)
def test_pi_proxies_its_custom_provider_in_that_apis_style(api, style):
    env = {
        "SKILL_EVALS_PI_API_KEY": KEY,
        "SKILL_EVALS_PI_API": api,
        "SKILL_EVALS_PI_BASE_URL": "http://127.0.0.1:8/v1",
        "ANTHROPIC_API_KEY": KEY,  # pi's built-in providers are redirected too: proxied
        "GROQ_API_KEY": KEY,
    }
    anthropic = (
        "ANTHROPIC_API_KEY",
        "x-api-key",
        "https://api.anthropic.com",
        "ANTHROPIC_BASE_URL",
    )
    groq = ("GROQ_API_KEY", "bearer", "https://api.groq.com/openai/v1", None)
    assert _rows("pi", env) == [
        ("SKILL_EVALS_PI_API_KEY", style, "http://127.0.0.1:8/v1", "SKILL_EVALS_PI_BASE_URL"),
        anthropic,
        groq,
    ]
    del env["SKILL_EVALS_PI_BASE_URL"]
    assert _rows("pi", env) == [anthropic, groq]


def test_a_credential_option_names_the_variable_style_and_upstream():
    credential = parse_credential_option(
        "MY_KEY, key-query ,https://models.example/v1?x=1,2",
        {"MY_KEY": KEY},
        source="--credential",
    )
    assert (credential.env, credential.style, credential.upstream) == (
        "MY_KEY",
        "key-query",
        "https://models.example/v1?x=1,2",
    )
    assert credential.base_url_env is None and credential.secret == KEY
    entry = {"env": "MY_KEY", "header": "bearer", "upstream": "http://127.0.0.1:1"}
    assert credential_from_config(entry, {"MY_KEY": KEY}, source="credentials[0]").style == "bearer"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MY_KEY,bearer", "--credential: expected ENV,STYLE,UPSTREAM"),
        ("MY_KEY,basic,https://x.example", "--credential: unknown style 'basic' for MY_KEY"),
        ("MY_KEY,bearer,ftp://x.example", "must be an http:// or https:// URL"),
        ("MY_KEY,bearer,https://", "must be an http:// or https:// URL"),
        ("MY_KEY,bearer,http://x.example:99999", "must be an http:// or https:// URL"),
        ("UNSET_KEY,bearer,https://x.example", "--credential: UNSET_KEY is not set"),
        ("EMPTY_KEY,bearer,https://x.example", "--credential: EMPTY_KEY is not set"),
        ("1BAD,bearer,https://x.example", "'1BAD' is not an environment variable name"),
    ],
)
def test_bad_credential_options_say_what_to_fix(text, message):
    with pytest.raises(CredentialError) as error:
        parse_credential_option(text, {"MY_KEY": KEY, "EMPTY_KEY": ""}, source="--credential")
    assert message in str(error.value)
    assert KEY not in str(error.value)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("MY_KEY", "credentials[1]: expected a mapping"),
        ({"env": "MY_KEY", "header": "bearer"}, "credentials[1].upstream: expected a non-empty"),
        ({"env": "MY_KEY", "header": 3, "upstream": "https://x"}, "credentials[1].header"),
        (
            {"env": "MY_KEY", "header": "bearer", "upstream": "https://x", "style": "b"},
            "unknown key 'style'",
        ),
    ],
)
def test_bad_config_credentials_name_the_entry(entry, message):
    with pytest.raises(CredentialError) as error:
        credential_from_config(entry, {"MY_KEY": KEY}, source="credentials[1]")
    assert message in str(error.value)
