"""`.skill-evals.yml`: loading, JSON Schema validation, defaults and per-skill overrides
(docs/config.md).

Errors name the file and the JSON path of the offending value and exit 5 (InvalidInput).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..agents.evidence import EvidencePatterns
from ..cases import DEFAULT_CASES_FILES
from ..compare import CompareGates
from ..errors import InvalidInput
from ..jsonl import MAX_FILE_BYTES
from ..run_control import Budget
from ..yamldoc import MAX_YAML_ALIAS_NODES, MAX_YAML_DEPTH

CONFIG_NAMES = (".skill-evals.yml", ".skill-evals.yaml")
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

    def result_settings(self) -> dict[str, Any]:
        """The settings that change results, hashed into the fingerprint (docs/ci.md): runner,
        trials, gates, seed — plus bootstrap-samples, which moves the interval the uplift gate
        reads. Timeouts, jobs and byte caps do not change what a healthy run measures."""
        return {
            "runner": self.runner,
            "trials": self.trials,
            "gates": self.gates.to_json(),
            "seed": self.seed,
            "bootstrapSamples": self.bootstrap_samples,
        }


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
    cli: Mapping[str, Any] = field(default_factory=dict)  # flags that win over the file
    routing: RoutingConfig | None = None
    budget_total: Budget = field(default_factory=Budget)  # for the whole run (budget-total)

    def routing_settings(self) -> SkillSettings:
        """The runner settings of the routing run: the top level, then CLI flags (no override:
        routing is not one skill)."""
        return _apply(self.defaults, self.cli)

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

    def cache_settings(self, root: Path) -> Any:
        """The CacheSettings of every skill's run (a relative directory is relative to the
        repository root), or None without a cache."""
        from ..cache import CacheSettings, parse_max_age

        directory = self.cache_dir
        if directory is None:
            return None
        return CacheSettings(root / directory, parse_max_age(self.max_age, "cache-max-age"))

    def for_skill(self, name: str) -> SkillSettings:
        """Effective settings for the skill called ``name``: CLI flags > override > top level."""
        settings = _apply(self.defaults, self.overrides.get(name, {}))
        return _apply(settings, self.cli)

    def with_cli(self, values: Mapping[str, Any]) -> CiConfig:
        """A copy where the given config-style keys (``runner``, ``trials``, ``gates`` …, value
        None = not given) replace the file's values for every skill."""
        given = {k: v for k, v in values.items() if v is not None}
        if "gates" in given:
            given["gates"] = {k: v for k, v in given["gates"].items() if v is not None}
        return replace(self, cli={**self.cli, **given})


_KEYS = {
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
}


def _apply(base: SkillSettings, values: Mapping[str, Any]) -> SkillSettings:
    changes: dict[str, Any] = {}
    for key, attr in _KEYS.items():
        if key in values:
            changes[attr] = values[key]
    if "budget" in values:
        changes["budget"] = budget_of(values["budget"])
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


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader that rejects duplicate mapping keys (a silently ignored duplicate `gates:`
    would weaken the gate without anyone noticing)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def find_config(root: Path) -> Path | None:
    """The config file at the repository root, if any."""
    for name in CONFIG_NAMES:
        candidate = root / name
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path) -> CiConfig:
    """Load and validate ``path``; InvalidInput (exit 5) naming the file and JSON path."""
    try:
        # Non-blocking open: a FIFO given as the config is refused below, never waited on.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the config ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidInput(f"{path}: the config must be a regular file")
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise InvalidInput(f"{path}: cannot read the config ({exc.strerror})") from None
    return parse_config(data, str(path), path)


def parse_config(data: bytes, source: str, path: Path | None = None) -> CiConfig:
    """Parse config bytes (from a file or a git blob); ``source`` names it in errors."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"{source}: the config is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source}: not UTF-8 (byte {exc.start})") from None
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InvalidInput(f"{source}{where}: {problem}") from None
    except RecursionError:
        raise InvalidInput(f"{source}: nested too deeply") from None
    if raw is None:
        raw = {}
    _check_shape(raw, source)
    validate_config(raw, source)
    return _build(raw, path)


def _check_shape(raw: object, source: str) -> None:
    """Refuse what aliases can do to a small file: a recursive alias, nesting deeper than
    MAX_YAML_DEPTH, or more than MAX_YAML_ALIAS_NODES nodes added by aliases ("billion
    laughs": validating the expanded tree would never end). Iterative, linear in the distinct
    values (an aliased value is one shared object, measured once)."""
    measured: dict[int, tuple[int, int]] = {}  # id → (nodes with aliases expanded, depth)
    open_ids: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(raw, False)]
    while stack:
        value, children_done = stack.pop()
        children = list(value.values()) if isinstance(value, dict) else value
        key = id(value)
        if children_done:
            open_ids.discard(key)
            nodes, depth = 1, 0
            for child in children:
                child_nodes, child_depth = measured.get(id(child), (1, 0))
                nodes, depth = nodes + child_nodes, max(depth, child_depth)
            measured[key] = (nodes, depth + 1)
            distinct += 1 + len(children)
            continue
        if key in measured:
            continue
        open_ids.add(key)
        stack.append((value, True))
        for child in children:
            if isinstance(child, (dict, list)) and id(child) not in measured:
                if id(child) in open_ids:
                    raise InvalidInput(f"{source}: a recursive alias (a value containing itself)")
                stack.append((child, False))
    if not isinstance(raw, (dict, list)):
        return
    nodes, depth = measured[id(raw)]
    if depth > MAX_YAML_DEPTH:
        raise InvalidInput(f"{source}: nested too deeply (over {MAX_YAML_DEPTH} levels)")
    if nodes - distinct > MAX_YAML_ALIAS_NODES:
        raise InvalidInput(
            f"{source}: aliases expand to more than {MAX_YAML_ALIAS_NODES} nodes; "
            "write the data out instead"
        )


def validate_config(raw: object, source: str) -> None:
    """Validate against config.schema.json; the first error (by path) names the JSON path."""
    import jsonschema

    from ..schemas import load_schema

    # JSON Schema counts 3.0 as an integer and lets NaN through every bound (each comparison
    # with NaN is false); YAML can say both (`trials: 3.0`, `.nan`). Strict types here: an
    # integer is an int, a number is finite — else a NaN gate would silently never fail.
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {
            "integer": lambda _, value: isinstance(value, int) and not isinstance(value, bool),
            "number": lambda _, value: (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ),
        }
    )
    strict = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft202012Validator, type_checker=checker
    )
    validator = strict(load_schema("config.schema.json"))
    errors = sorted(validator.iter_errors(raw), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        error = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise InvalidInput(f"{source}: {error.json_path}: {_short(error.message)}{more}")
    assert isinstance(raw, dict)
    evidence = raw.get("evidence", {})
    for key in ("toolPatterns", "uriPatterns"):
        for index, pattern in enumerate(evidence.get(key, [])):
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise InvalidInput(
                    f"{source}: $.evidence.{key}[{index}]: not a regular expression ({exc})"
                ) from None
            if "name" not in compiled.groupindex:
                raise InvalidInput(
                    f"{source}: $.evidence.{key}[{index}]: needs a named group (?P<name>...) "
                    "that captures the skill name"
                )
    routing_cases = raw.get("routing", {}).get("cases")
    if isinstance(routing_cases, str) and (
        routing_cases.startswith("/") or "\\" in routing_cases or ".." in routing_cases.split("/")
    ):
        raise InvalidInput(
            f"{source}: $.routing.cases: give the routing case file relative to the repository "
            "root, with / separators and no .."
        )
    for where, value in _cases_values(raw):
        if value.startswith("/") or "\\" in value:
            raise InvalidInput(
                f"{source}: {where}: give the cases file relative to the skill directory, "
                "with / separators"
            )


def _cases_values(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    found = []
    if "cases" in raw:
        found.append(("$.cases", raw["cases"]))
    for name, override in raw.get("overrides", {}).items():
        if "cases" in override:
            found.append((f"$.overrides[{name!r}].cases", override["cases"]))
    return found


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _build(raw: Mapping[str, Any], path: Path | None) -> CiConfig:
    defaults = _apply(SkillSettings(), raw)
    evidence = raw.get("evidence", {})
    return CiConfig(
        path=path,
        skills=tuple(raw["skills"]) if "skills" in raw else None,
        defaults=defaults,
        overrides=dict(raw.get("overrides", {})),
        evidence=EvidencePatterns(
            tool_patterns=tuple(evidence.get("toolPatterns", ())),
            uri_patterns=tuple(evidence.get("uriPatterns", ())),
        ),
        lock=raw.get("lock", DEFAULT_LOCK),
        routing=_routing(raw.get("routing")),
        budget_total=budget_of(raw.get("budget-total", {})),
        cache=raw.get("cache"),
        cache_max_age=raw.get("cache-max-age", DEFAULT_CACHE_MAX_AGE),
    )


def _routing(raw: Mapping[str, Any] | None) -> RoutingConfig | None:
    if raw is None:
        return None
    gates = raw.get("gates", {})
    return RoutingConfig(
        cases=raw["cases"],
        skills=tuple(raw["skills"]) if "skills" in raw else None,
        min_accuracy=gates.get("min-accuracy"),
        min_skill_f1=gates.get("min-skill-f1"),
    )


def budget_of(raw: Mapping[str, Any]) -> Budget:
    """A ``budget`` / ``budget-total`` mapping (``invocations``, ``cost-usd``) as a Budget."""
    return Budget(invocations=raw.get("invocations"), cost_usd=raw.get("cost-usd"))
