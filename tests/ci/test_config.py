"""`.skill-evals.yml`: validation (file + JSON path, exit 5), defaults, overrides, CLI flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_evals.agents.evidence import EvidencePatterns, skill_from_tool, skill_from_uri
from skill_evals.ci.config import load_config, parse_config
from skill_evals.ci.settings import CiConfig, Gates
from skill_evals.errors import InvalidInput

from .conftest import run_cli


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".skill-evals.yml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_file() -> None:
    settings = CiConfig().for_skill("any")
    assert (settings.trials, settings.jobs, settings.seed, settings.runner) == (3, 4, 42, None)
    # No timeout in the file: the runner's own default applies (30 s; 300 s for built-in agents).
    assert settings.timeout_ms is None and settings.bootstrap_samples == 10_000
    assert settings.retries == 2
    assert settings.gates == Gates() and settings.require_env == ()
    assert settings.allow_missing_cases is False and settings.cases is None


def test_full_config_and_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
skills: ["skills/*", ".claude/skills/*"]
cases: evals/cases.jsonl
runner: "skill-evals runner claude-code --model claude-sonnet-4-5"
trials: 3
jobs: 4
timeout-ms: 120000
seed: 7
bootstrap-samples: 2000
keep-going: true
gates: {min-trigger-f1: 0.9, min-uplift: 0.05}
require-env: [ANTHROPIC_API_KEY]
allow-missing-cases: true
overrides:
  refund-policy: {trials: 5, gates: {min-uplift: null}}
evidence:
  toolPatterns: ['^fetch_(?P<name>[a-z-]+)$']
  uriPatterns: ['^docs://(?P<name>[a-z-]+)$']
""",
    )
    config = load_config(path)
    assert config.skills == ("skills/*", ".claude/skills/*")
    other = config.for_skill("other")
    assert other.trials == 3 and other.seed == 7 and other.timeout_ms == 120_000
    assert other.gates == Gates(0.9, 0.05) and other.keep_going
    assert other.require_env == ("ANTHROPIC_API_KEY",) and other.bootstrap_samples == 2000
    refund = config.for_skill("refund-policy")
    assert refund.trials == 5
    # null in an override switches that gate off; the other gate is inherited
    assert refund.gates == Gates(0.9, None)
    assert config.evidence == EvidencePatterns(
        tool_patterns=("^fetch_(?P<name>[a-z-]+)$",), uri_patterns=("^docs://(?P<name>[a-z-]+)$",)
    )
    assert skill_from_tool("fetch_brand-deck", config.evidence) == "brand-deck"
    assert skill_from_uri("docs://brand-deck", config.evidence) == "brand-deck"


def test_comparison_gates_and_their_overrides(tmp_path: Path) -> None:
    from skill_evals.score.compare import CompareGates

    config = load_config(
        write(
            tmp_path,
            "gates: {max-f1-drop: 0.05, min-pass-gain: -0.1}\n"
            "overrides:\n  a: {gates: {max-f1-drop: null, max-pass-drop: 0.2}}\n",
        )
    )
    other = config.for_skill("other")
    assert other.gates.compare == CompareGates(max_f1_drop=0.05, min_pass_gain=-0.1)
    assert config.for_skill("a").gates.compare == CompareGates(
        max_pass_drop=0.2, min_pass_gain=-0.1
    )
    # A set comparison gate enters the fingerprint's settings; unset ones add nothing there.
    assert other.result_settings()["gates"] == {
        "minTriggerF1": None, "minUplift": None, "maxF1Drop": 0.05, "minPassGain": -0.1,
    }  # fmt: skip
    assert CiConfig().for_skill("x").result_settings()["gates"] == {
        "minTriggerF1": None, "minUplift": None,
    }  # fmt: skip


def test_cli_flags_win_over_overrides(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "trials: 2\noverrides: {a: {trials: 9}}\n"))
    flagged = config.with_cli({"trials": 1, "runner": None, "gates": {"min-uplift": 0.1}})
    assert flagged.for_skill("a").trials == 1
    assert flagged.for_skill("a").gates.min_uplift == 0.1
    assert flagged.for_skill("a").runner is None
    assert config.for_skill("a").trials == 9


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("trials: 0\n", "$.trials"),
        ("trials: '3'\n", "$.trials"),
        ("gates: {min-trigger-f1: 1.5}\n", "$.gates['min-trigger-f1']"),
        ("gates: {min-uplift: -2}\n", "$.gates['min-uplift']"),
        ("gates: {max-f1-drop: -0.1}\n", "$.gates['max-f1-drop']"),
        ("gates: {min-pass-gain: 1.5}\n", "$.gates['min-pass-gain']"),
        ("unknown-key: 1\n", "$"),
        ("overrides: {x: {trials: 500}}\n", "$.overrides.x.trials"),
        ("overrides: {x: {bogus: 1}}\n", "$.overrides.x"),
        ("require-env: ['BAD-NAME']\n", "$['require-env'][0]"),
        ("skills: []\n", "$.skills"),
        ("cases: evals/cases.txt\n", "$.cases"),
        ("cases: /abs/cases.jsonl\n", "$.cases"),
        ("evidence: {toolPatterns: ['(']}\n", "$.evidence.toolPatterns[0]"),
        ("evidence: {uriPatterns: ['^x$']}\n", "$.evidence.uriPatterns[0]"),
        ("- a list\n", "$"),
        # JSON Schema alone lets these through (NaN passes every bound; 3.0 "is" an integer):
        # a NaN gate never failed, and a float trial count crashed the run with exit 70
        ("gates: {min-trigger-f1: .nan}\n", "$.gates['min-trigger-f1']"),
        ("gates: {min-uplift: .nan}\n", "$.gates['min-uplift']"),
        ("overrides: {x: {gates: {min-uplift: -.inf}}}\n", "$.overrides.x.gates['min-uplift']"),
        ("trials: 3.0\n", "$.trials"),
        ("overrides: {x: {seed: 1.0}}\n", "$.overrides.x.seed"),
    ],
)
def test_invalid_config_names_file_and_json_path(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InvalidInput) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}:1: ")  # the line of the offending key
    assert f": {where}: " in message
    assert info.value.exit_code == 5


def test_duplicate_key_and_bad_yaml_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"\.skill-evals\.yml:3: duplicate key 'trials'"):
        load_config(write(tmp_path, "trials: 2\njobs: 1\ntrials: 5\n"))
    with pytest.raises(InvalidInput, match=r"\.skill-evals\.yml:2:"):
        load_config(write(tmp_path, "trials: 2\n  jobs: [\n"))


def test_empty_file_is_defaults() -> None:
    assert parse_config(b"", "x.yml").for_skill("a").trials == 3
    assert parse_config(b"# only a comment\n", "x.yml").skills is None


def test_ci_exits_5_on_invalid_config(tmp_path: Path) -> None:
    (tmp_path / ".skill-evals.yml").write_text("trials: 1000\n", encoding="utf-8")
    done = run_cli(["changed"], tmp_path)
    assert done.returncode == 5
    assert ".skill-evals.yml:1: $.trials: must be at most 100" in done.stderr


def test_ci_rejects_nan_and_float_counts_with_exit_5(tmp_path: Path) -> None:
    (tmp_path / ".skill-evals.yml").write_text(
        "runner: skill-evals runner simulated\ntrials: 1.0\n", encoding="utf-8"
    )
    done = run_cli(["ci", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 5 and ".skill-evals.yml:2: $.trials:" in done.stderr
    (tmp_path / ".skill-evals.yml").write_text("runner: x\n", encoding="utf-8")
    for flag in ("--min-trigger-f1", "--min-uplift"):
        for command in (["ci"], ["ci", "plan"]):
            done = run_cli([*command, flag, "nan"], tmp_path)
            assert done.returncode == 5, done.stderr
            assert f"'{flag}': nan is not in the range" in done.stderr


def test_evidence_command_uses_config_patterns(tmp_path: Path) -> None:
    config = write(tmp_path, "evidence: {toolPatterns: ['^grab_(?P<name>[a-z-]+)$']}\n")
    transcript = tmp_path / "t.jsonl"
    event = {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "id": "t1", "name": "grab_brand-deck", "input": {}}]
        },
    }
    result = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    }
    transcript.write_text(json.dumps(event) + "\n" + json.dumps(result) + "\n", encoding="utf-8")
    done = run_cli(
        ["evidence", "--agent", "claude-code", "--config", str(config), str(transcript)], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert [load["skill"] for load in json.loads(done.stdout)] == ["brand-deck"]


def test_on_off_yes_no_are_strings_and_only_true_false_are_booleans():
    config = parse_config(b"sandbox: off\nimprove: off\nrunner: no\nkeep-going: true\n", "t.yml")
    assert config.defaults.sandbox == "off" and config.improve == "off"
    assert config.defaults.runner == "no" and config.defaults.keep_going is True
    assert parse_config(b"routing: {cases: y}\n", "t.yml").routing.cases == "y"  # type: ignore[union-attr]
    with pytest.raises(InvalidInput, match=r"t.yml:1: \$\['keep-going'\]: must be true or false"):
        parse_config(b"keep-going: yes\n", "t.yml")
