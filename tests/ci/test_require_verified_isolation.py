"""`require-verified-isolation` in the config (top level and per skill) and `--require-verified-
isolation` on `ci` reach the skill's run settings; a wrong type is refused naming the key."""

from __future__ import annotations

import pytest

from skill_evals.ci.config import parse_config
from skill_evals.errors import InvalidInput


def test_the_config_key_and_its_override() -> None:
    config = parse_config(
        b"require-verified-isolation: true\noverrides: {x: {require-verified-isolation: false}}\n",
        "cfg",
    )
    assert config.for_skill("y").require_verified_isolation is True
    assert config.for_skill("x").require_verified_isolation is False
    assert parse_config(b"trials: 1\n", "cfg").for_skill("y").require_verified_isolation is False


def test_the_cli_flag_wins() -> None:
    config = parse_config(b"trials: 1\n", "cfg").with_cli({"require-verified-isolation": True})
    assert config.for_skill("y").require_verified_isolation is True


def test_a_wrong_type_is_refused_naming_the_key() -> None:
    with pytest.raises(InvalidInput, match="require-verified-isolation"):
        parse_config(b"require-verified-isolation: 'yes'\n", "cfg")
