"""`.skill-evals.yml`: finding, reading (bounded, duplicate keys refused), JSON Schema
validation and building the settings (ci/settings.py) from it (docs/config.md).

Errors name the file and the JSON path of the offending value and exit 5 (InvalidInput).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..agents.evidence import EvidencePatterns
from ..errors import InvalidInput
from ..suite.jsonl import MAX_FILE_BYTES
from ..suite.yamldoc import MAX_YAML_ALIAS_NODES, MAX_YAML_DEPTH
from .config_errors import located, schema_message
from .settings import (
    DEFAULT_CACHE_MAX_AGE,
    DEFAULT_LOCK,
    CiConfig,
    RoutingConfig,
    SkillSettings,
    apply_settings,
    budget_of,
)

CONFIG_NAMES = (".skill-evals.yml", ".skill-evals.yaml")


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

# Only true/false are booleans (as in YAML 1.2): `sandbox: off`, `improve: off`, a name `no`
# read as the strings they look like, never as false.
_BOOL_TAG = "tag:yaml.org,2002:bool"
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in _UniqueKeyLoader.yaml_implicit_resolvers.items()
}
_UniqueKeyLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
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
    return parse_config(_read_bytes(path), str(path), path)


def _read_bytes(path: Path) -> bytes:
    """The config file's bytes, bounded; a FIFO or a device is refused, never waited on."""
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
    return data


def read_config_file(path: Path) -> dict[str, Any]:
    """Read and validate ``path`` into its raw mapping (exit 5 naming the file and JSON path)."""
    return read_raw(_read_bytes(path), str(path))


def parse_config(data: bytes, source: str, path: Path | None = None) -> CiConfig:
    """Parse config bytes (from a file or a git blob); ``source`` names it in errors."""
    return build_config(read_raw(data, source), path)


def read_raw(data: bytes, source: str) -> dict[str, Any]:
    """Config bytes parsed and validated into their raw mapping; ``source`` names it in
    errors."""
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
    validate_config(raw, source, text)
    assert isinstance(raw, dict)
    return raw


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


def validate_config(raw: object, source: str, text: str | None = None) -> None:
    """Validate against config.schema.json; the first error (by path) names the line (when
    ``text``, the file's text, is given) and the JSON path. Then what the schema cannot say:
    patterns that compile, relative paths, the commands a ``suggest`` needs."""
    _check_schema(raw, source, text)
    assert isinstance(raw, dict)
    _check_evidence_patterns(raw, source, text)
    routing_cases = raw.get("routing", {}).get("cases")
    if _not_repo_relative(routing_cases):
        raise InvalidInput(
            f"{located(source, text, ('routing', 'cases'))}: $.routing.cases: give the routing "
            "case file relative to the repository root, with / separators and no .."
        )
    if raw.get("improve") == "suggest" and not raw.get("proposer"):
        raise InvalidInput(
            f"{located(source, text, ('improve',))}: $.improve: suggest needs a proposer "
            "command (proposer: CMD, docs/improve.md)"
        )
    if raw.get("draft") == "suggest" and not raw.get("drafter"):
        raise InvalidInput(
            f"{located(source, text, ('draft',))}: $.draft: suggest needs a drafter command "
            "(drafter: CMD, docs/drafting.md)"
        )
    history = raw.get("history")
    if _not_repo_relative(history):
        raise InvalidInput(
            f"{located(source, text, ('history',))}: $.history: give the history file "
            "relative to the repository root, with / separators and no .."
        )
    for where, path, value in _cases_values(raw):
        if value.startswith("/") or "\\" in value:
            raise InvalidInput(
                f"{located(source, text, path)}: {where}: give the cases file relative to the "
                "skill directory, with / separators"
            )


def _not_repo_relative(value: object) -> bool:
    """A path given that is absolute, has a backslash or climbs out with ``..``."""
    return isinstance(value, str) and (
        value.startswith("/") or "\\" in value or ".." in value.split("/")
    )


def _check_schema(raw: object, source: str, text: str | None) -> None:
    """InvalidInput naming the first schema error by line and path (and how many more there
    are), what is wrong and what to write, never the value."""
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
        raise InvalidInput(schema_message(errors[0], source, text, len(errors) - 1))


def _check_evidence_patterns(raw: dict[str, Any], source: str, text: str | None) -> None:
    """Each evidence pattern compiles and has a group ``name`` for the skill."""
    evidence = raw.get("evidence", {})
    for key in ("toolPatterns", "uriPatterns"):
        for index, pattern in enumerate(evidence.get(key, [])):
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                where = _pattern_at(source, text, key, index)
                raise InvalidInput(f"{where}: not a regular expression ({exc})") from None
            if "name" not in compiled.groupindex:
                raise InvalidInput(
                    f"{_pattern_at(source, text, key, index)}: needs a named group (?P<name>...) "
                    "that captures the skill name"
                )


def _pattern_at(source: str, text: str | None, key: str, index: int) -> str:
    """Where evidence pattern ``index`` of ``key`` is; looked up only for an error."""
    return f"{located(source, text, ('evidence', key, index))}: $.evidence.{key}[{index}]"


def _cases_values(raw: Mapping[str, Any]) -> list[tuple[str, tuple[object, ...], str]]:
    found: list[tuple[str, tuple[object, ...], str]] = []
    if "cases" in raw:
        found.append(("$.cases", ("cases",), raw["cases"]))
    for name, override in raw.get("overrides", {}).items():
        if "cases" in override:
            path = ("overrides", name, "cases")
            found.append((f"$.overrides[{name!r}].cases", path, override["cases"]))
    return found


def build_config(raw: Mapping[str, Any], path: Path | None) -> CiConfig:
    """The CiConfig of a validated raw mapping (``path``: the file it came from, if any)."""
    defaults = apply_settings(SkillSettings(), raw)
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
        cache_max_age=str(raw.get("cache-max-age", DEFAULT_CACHE_MAX_AGE)),  # 0 unquoted
        history=raw.get("history"),
        listing=dict(raw.get("listing", {})),
        improve="suggest" if raw.get("improve") == "suggest" else "off",
        proposer=raw.get("proposer"),
        improve_options=dict(raw.get("improve-options", {})),
        draft="suggest" if raw.get("draft") == "suggest" else "off",
        drafter=raw.get("drafter"),
        validate=raw.get("validate", "error"),
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
