"""The CI gate's settings as plain dataclasses (docs/config.md): the gates, one skill's
effective settings, the routing entry and the whole configuration, with the rule that layers
the top level, a skill's override and the CLI flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..agents.evidence import EvidencePatterns
from ..agents.registry import shipped_runner
from ..cache.settings import CacheSettings, parse_max_age
from ..errors import InvalidInput
from ..plan.run_control import Budget
from ..score.compare import CompareGates
from ..suite.cases import DEFAULT_CASES_FILES

DEFAULT_LOCK = ".skill-evals.lock.json"
DEFAULT_CASES = DEFAULT_CASES_FILES
DEFAULT_CACHE_MAX_AGE = "7d"


# The comparison gates' config keys and their CompareGates fields (docs/comparison.md).
COMPARE_GATE_KEYS = {
    "max-f1-drop": "max_f1_drop",
    "max-pass-drop": "max_pass_drop",
    "min-f1-gain": "min_f1_gain",
    "min-pass-gain": "min_pass_gain",
}


@dataclass(frozen=True)
class Gates:
    """The gates; ``None`` means the gate is off. The comparison gates read the baseline arm,
    so they apply only where a skill runs against its base version (``compare: base``)."""

    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    compare: CompareGates = field(default_factory=CompareGates)

    def to_json(self) -> dict[str, float | None]:
        """The gates as they appear in fingerprints and reports. A comparison gate appears only
        when set, so configs without one keep the fingerprints they had."""
        doc = {"minTriggerF1": self.min_trigger_f1, "minUplift": self.min_uplift}
        for name, value in self.compare.as_dict().items():
            if value is not None:
                doc[name] = value
        return doc


@dataclass(frozen=True)
class SkillSettings:
    """The effective settings of one skill: top-level config, then its override, then CLI flags."""

    cases: str | None = None  # relative to the skill dir; None → the DEFAULT_CASES lookup
    runner: str | None = None
    trials: int = 3
    jobs: int = 4
    timeout_ms: int | None = None  # None: the runner's default (300000 for a built-in agent)
    retries: int = 2
    max_bytes: int = 1_000_000
    seed: int = 42
    bootstrap_samples: int = 10_000
    keep_going: bool = False
    gates: Gates = field(default_factory=Gates)
    require_env: tuple[str, ...] = ()
    allow_missing_cases: bool = False
    include_outputs: bool = False  # answers in report.html's per-case detail (opt-in)
    arms: str = "auto"  # --arms: only the arms a gate needs (docs/comparison.md)
    stop_when_settled: bool = True
    budget: Budget = field(default_factory=Budget)  # per skill (budget: {invocations, cost-usd})
    compare_base: bool = False  # compare: base — the base commit's version as the baseline arm
    require_verified_isolation: bool = False  # an unverified without run → exit 7
    judge: str | None = None  # the default judge of judge checks (docs/judging.md)
    judges: tuple[tuple[str, str], ...] = ()  # judges: {NAME: CMD}, picked by name by a check
    judge_timeout_ms: int = 120_000
    judge_fallback: str = "absolute"  # an inconsistent pairwise pair: absolute grades or a tie
    judge_fallback_margin: float = 0.05
    strict: bool = False  # a lint warning → exit 5 before any runner
    agent: str | None = None  # the frontmatter profile; None: the runner's agent
    sandbox: str | None = None  # the config's sandbox: (docs/sandbox.md)
    sandbox_option: str | None = None  # --sandbox (before SKILL_EVALS_SANDBOX and the config)
    sandbox_option_where: str = "--sandbox"  # or the action's sandbox input
    sandbox_where: str = "config sandbox"  # the config file (and commit) sandbox: came from
    sandbox_paths: tuple[str, ...] = ()  # sandbox-paths: and --sandbox-path
    credentials: tuple[Any, ...] = ()  # credentials: [{env, header, upstream}] (the proxy)
    network: str | None = None  # network: model|allow|host (docs/sandbox.md); None: model
    network_allow: tuple[str, ...] = ()  # network-allow: and --network-allow
    fail_on_finding: bool = False  # a behaviour finding fails the gate
    max_invocation_tokens: int | None = None  # wire tokens per invocation (429 past them)
    max_workspace_bytes: int | None = None  # W, TMPDIR and HOME of one sandboxed invocation

    def missing_env(self, env: Mapping[str, str]) -> list[str]:
        """The ``require-env`` variables empty or unset in ``env``. None are required when the
        runner in effect is the simulation itself (it calls no model, so it needs no key); a
        command that merely mentions it (a wrapper, a shell line) still needs them."""
        if shipped_runner(self.runner) == "simulated":
            return []
        return [name for name in self.require_env if not env.get(name)]

    def result_settings(self) -> dict[str, Any]:
        """The settings that change results, hashed into the fingerprint (docs/ci.md): runner,
        trials, gates, seed — plus bootstrap-samples, which moves the interval the uplift gate
        reads. Timeouts, jobs and byte caps do not change what a healthy run measures."""
        settings: dict[str, Any] = {
            "runner": self.runner,
            "trials": self.trials,
            "gates": self.gates.to_json(),
            "seed": self.seed,
            "bootstrapSamples": self.bootstrap_samples,
        }
        if self.judge is not None:  # only when set: configs without one keep their fingerprints
            settings["judge"] = self.judge
        if self.judges:
            settings["judges"] = dict(self.judges)
        return settings


@dataclass(frozen=True)
class RoutingConfig:
    """The ``routing:`` entry (docs/routing.md): a case file over the catalog, the catalog's
    globs (None: the gate's skills) and the two routing gates (None: off)."""

    cases: str
    skills: tuple[str, ...] | None = None
    min_accuracy: float | None = None
    min_skill_f1: float | None = None


@dataclass(frozen=True)
class CiConfig:
    """A loaded, validated configuration. ``path`` is None when no file was found (defaults)."""

    path: Path | None = None
    skills: tuple[str, ...] | None = None  # globs; None → every dir holding SKILL.md
    defaults: SkillSettings = field(default_factory=SkillSettings)
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    evidence: EvidencePatterns = field(default_factory=EvidencePatterns)
    lock: str = DEFAULT_LOCK
    cache: str | None = None  # the observation cache directory (relative to the root)
    cache_max_age: str = DEFAULT_CACHE_MAX_AGE
    history: str | bool | None = None  # history.jsonl's place; False: none; None: the cache's
    listing: Mapping[str, Any] = field(default_factory=dict)  # the listing: entry
    improve: str = "off"  # improve: suggest — a validated description for a failed trigger gate
    proposer: str | None = None  # the proposer command of improve: suggest
    improve_options: Mapping[str, Any] = field(default_factory=dict)
    draft: str = "off"  # draft: suggest — a drafted suite for each skill with no cases
    drafter: str | None = None  # the drafter command of draft: suggest
    validate: str = "error"  # a SKILL.md validate rejects: error (fails the gate) or warn
    cli: Mapping[str, Any] = field(default_factory=dict)  # flags that win over the file
    routing: RoutingConfig | None = None
    budget_total: Budget = field(default_factory=Budget)  # for the whole run (budget-total)

    def routing_settings(self) -> SkillSettings:
        """The runner settings of the routing run: the top level, then CLI flags (no override:
        routing is not one skill)."""
        return apply_settings(self.defaults, self.cli)

    @property
    def cache_dir(self) -> str | None:
        """The cache directory: ``--cache``, else the file's ``cache:``; None: no cache."""
        value = self.cli.get("cache")
        return str(value) if value is not None else self.cache

    @property
    def max_age(self) -> str:
        """``--cache-max-age``, else the file's ``cache-max-age``, else 7d."""
        value = self.cli.get("cache-max-age")
        return str(value) if value is not None else self.cache_max_age

    def cache_settings(self, root: Path) -> CacheSettings | None:
        """The CacheSettings of every skill's run (a relative directory is relative to the
        repository root), or None without a cache."""
        directory = self.cache_dir
        if directory is None:
            return None
        return CacheSettings(root / directory, parse_max_age(self.max_age, "cache-max-age"))

    def for_skill(self, name: str) -> SkillSettings:
        """Effective settings for the skill called ``name``: CLI flags > override > top level."""
        settings = apply_settings(self.defaults, self.overrides.get(name, {}))
        return apply_settings(settings, self.cli)

    def with_cli(self, values: Mapping[str, Any]) -> CiConfig:
        """A copy where the given config-style keys (``runner``, ``trials``, ``gates`` …, value
        None = not given) replace the file's values for every skill."""
        given = {k: v for k, v in values.items() if v is not None}
        if "gates" in given:
            given["gates"] = {k: v for k, v in given["gates"].items() if v is not None}
        improve = given.pop("improve", self.improve)
        proposer = given.pop("proposer", self.proposer)
        if improve == "suggest" and not proposer:
            raise InvalidInput(
                "--improve suggest needs a proposer: --proposer CMD, or proposer: in the config"
            )
        return replace(self, cli={**self.cli, **given}, improve=improve, proposer=proposer)


SETTING_KEYS = {
    "cases": "cases",
    "runner": "runner",
    "trials": "trials",
    "jobs": "jobs",
    "timeout-ms": "timeout_ms",
    "retries": "retries",
    "max-bytes": "max_bytes",
    "seed": "seed",
    "bootstrap-samples": "bootstrap_samples",
    "keep-going": "keep_going",
    "allow-missing-cases": "allow_missing_cases",
    "include-outputs": "include_outputs",
    "arms": "arms",
    "stop-when-settled": "stop_when_settled",
    "require-verified-isolation": "require_verified_isolation",
    "judge": "judge",
    "judge-timeout-ms": "judge_timeout_ms",
    "judge-fallback": "judge_fallback",
    "judge-fallback-margin": "judge_fallback_margin",
    "strict": "strict",
    "agent": "agent",
    "sandbox": "sandbox",
    "sandbox-option": "sandbox_option",
    "sandbox-option-where": "sandbox_option_where",
    "sandbox-where": "sandbox_where",
    "network": "network",
    "fail-on-finding": "fail_on_finding",
    "max-invocation-tokens": "max_invocation_tokens",
    "max-workspace-bytes": "max_workspace_bytes",
}


def apply_settings(base: SkillSettings, values: Mapping[str, Any]) -> SkillSettings:
    """``base`` with the config-style keys of ``values`` (top level, override or CLI) applied."""
    changes: dict[str, Any] = {}
    for key, attr in SETTING_KEYS.items():
        if key in values:
            changes[attr] = values[key]
    if "budget" in values:
        changes["budget"] = budget_of(values["budget"])
    if "judges" in values:
        changes["judges"] = tuple((str(k), str(v)) for k, v in values["judges"].items())
    if "credentials" in values:
        changes["credentials"] = tuple(values["credentials"])
    if values.get("sandbox-paths"):
        changes["sandbox_paths"] = (*base.sandbox_paths, *values["sandbox-paths"])
    if values.get("network-allow"):
        changes["network_allow"] = (*base.network_allow, *values["network-allow"])
    if "require-env" in values:
        changes["require_env"] = tuple(values["require-env"])
    if "compare" in values:
        changes["compare_base"] = values["compare"] == "base"
    if "gates" in values:
        gates = values["gates"]
        # A gate given as null in an override switches that gate off for the skill.
        compare = {
            attr: gates.get(key, getattr(base.gates.compare, attr))
            for key, attr in COMPARE_GATE_KEYS.items()
        }
        changes["gates"] = Gates(
            min_trigger_f1=gates.get("min-trigger-f1", base.gates.min_trigger_f1),
            min_uplift=gates.get("min-uplift", base.gates.min_uplift),
            compare=CompareGates(**compare),
        )
    return replace(base, **changes) if changes else base


def budget_of(raw: Mapping[str, Any]) -> Budget:
    """A ``budget`` / ``budget-total`` mapping (``invocations``, ``cost-usd``) as a Budget."""
    return Budget(
        invocations=raw.get("invocations"),
        cost_usd=raw.get("cost-usd"),
        judge_calls=raw.get("judge-calls"),
    )


def runner_origin(config: CiConfig | None, name: str | None) -> str:
    """Where a skill's runner command was given: the option, or the config's key."""
    if config is None or config.cli.get("runner"):
        return "--runner"
    file = config.path.name if config.path is not None else ".skill-evals.yml"
    if name is not None and "runner" in config.overrides.get(name, {}):
        return f"overrides.{name}.runner in {file}"
    return f"runner in {file}"
