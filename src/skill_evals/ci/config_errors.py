"""The config's errors as a person reads them: the file and line, the key (its JSON path),
what is wrong and what to write instead. Never the value itself: a key pasted where a
variable name belongs (``require-env: [sk-ant-…]``) would otherwise reach the job's log."""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import yaml

# What a schema type asks for, in the words of a YAML file.
_WANTED = {
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "array": "a list",
    "object": "a mapping (key: value)",
    "null": "null",
}
_YAML11_BOOLEANS = {"yes", "no", "on", "off", "y", "n"}


def line_of(text: str | None, path: Sequence[object]) -> int | None:
    """The one-based line of the node at ``path`` (mapping keys, list indexes) in ``text``;
    None when it cannot be told. Composed again only when there is an error to place."""
    if text is None:
        return None
    try:
        node: Any = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError):
        return None
    for part in path:
        if isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if getattr(k, "value", None) == str(part)]
            if not found:
                break
            node = found[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
    return None if node is None else int(node.start_mark.line) + 1


def located(source: str, text: str | None, path: Sequence[object]) -> str:
    """``source:line`` when the line of ``path`` is known, else ``source``."""
    line = line_of(text, path)
    return source if line is None else f"{source}:{line}"


def _kind(value: object) -> str:
    """What a YAML value is, without saying what it holds."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number with a fraction" if math.isfinite(value) else "an infinite or NaN number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null" if value is None else type(value).__name__


def _show(choice: object) -> str:
    """An allowed value as it is written in YAML."""
    if isinstance(choice, bool):
        return "true" if choice else "false"
    return "null" if choice is None else str(choice)


def _name(key: object) -> str:
    """A key of the user's file, shown bounded and printable."""
    text = str(key)
    text = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return repr(text[:64] + ("…" if len(text) > 64 else ""))


def _type_problem(expected: Any, value: object) -> str:
    types: list[str] = [expected] if isinstance(expected, str) else list(expected or ())
    message = f"must be {' or '.join(_WANTED.get(t, t) for t in types)}, not {_kind(value)}"
    if "boolean" in types and isinstance(value, str) and value.lower() in _YAML11_BOOLEANS:
        return message + " (write true or false: yes, no, on and off are read as text)"
    if "string" in types and isinstance(value, (int, float)) and not isinstance(value, bool):
        return message + " (put it in quotes)"
    if {"integer", "number"} & set(types) and isinstance(value, str):
        return message + " (write it without quotes)"
    if "array" in types and not isinstance(value, list):
        return message + " (write [a, b] or one '- item' line each)"
    return message


def _alternatives(schemas: Sequence[Any]) -> str:
    """The forms a oneOf/anyOf allows, in words."""
    forms = []
    for schema in schemas:
        if "const" in schema:
            forms.append(_show(schema["const"]))
        elif "type" in schema:
            form = _WANTED.get(schema["type"], str(schema["type"]))
            if "pattern" in schema:
                form += f" matching {schema['pattern']}"
            if "minimum" in schema and "maximum" in schema:
                form += f" from {schema['minimum']} to {schema['maximum']}"
            forms.append(form)
    return " or ".join(forms) or "one of the forms docs/config.md lists"


def _unknown_keys(value: object, schema: Any) -> str:
    known = list(schema.get("properties", {})) if isinstance(schema, dict) else []
    unknown = [k for k in value if k not in known] if isinstance(value, dict) else []
    if not unknown:
        return "has a key that is not allowed here (docs/config.md lists the keys)"
    key = str(unknown[0])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.7)
    hint = f"; did you mean {close[0]!r}?" if close else " (docs/config.md lists the keys)"
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    return f"unknown key {_name(key)}{more}{hint}"


def problem(validator: str, expected: Any, value: object, schema: Any) -> str:
    """What is wrong with ``value`` under the failed ``validator`` keyword, and what to write."""
    if validator == "type":
        return _type_problem(expected, value)
    if validator == "enum":
        message = "must be one of " + ", ".join(_show(c) for c in expected)
        if isinstance(value, str) and value.lower() in [_show(c) for c in expected]:
            return message + " (in lower case)"
        if isinstance(value, str) and value.lower() in _YAML11_BOOLEANS:
            return message + " (yes, no, on and off are read as text, not true or false)"
        return message + f", not {_kind(value)}"
    bounds = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "greater than",
        "exclusiveMaximum": "less than",
    }
    if validator in bounds:
        return f"must be {bounds[validator]} {expected}"
    if validator == "minLength":
        return "must not be empty" if expected == 1 else f"needs at least {expected} characters"
    if validator == "maxLength":
        return f"must be at most {expected} characters long"
    if validator in ("minItems", "maxItems"):
        least = "at least" if validator == "minItems" else "at most"
        return f"must list {least} {expected} item(s)"
    if validator == "pattern":
        return f"must match the pattern {expected}"
    if validator == "const":
        return f"must be {_show(expected)}"
    if validator in ("oneOf", "anyOf"):
        return f"must be {_alternatives(expected)}, not {_kind(value)}"
    if validator == "additionalProperties":
        return _unknown_keys(value, schema)
    if validator == "required":
        missing = [k for k in expected if not isinstance(value, dict) or k not in value]
        return f"needs the key {missing[0] if missing else expected[0]!r}"
    if validator == "not" and isinstance(expected, dict) and "const" in expected:
        return f"the name {_show(expected['const'])} is reserved here"
    return f"is not allowed here ({validator}; docs/config.md)"


def schema_message(error: Any, source: str, text: str | None, more: int) -> str:
    """One line for a jsonschema ValidationError: ``source:line: $.path: problem``."""
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = [k for k in error.instance if k not in known]
        path = path + extra[:1]  # the line of the unknown key itself
    where = error.json_path if error.json_path.isprintable() else "$"
    tail = f" (and {more} more problem(s))" if more else ""
    message = problem(error.validator, error.validator_value, error.instance, error.schema)
    if "propertyNames" in error.absolute_schema_path and error.validator != "not":
        # the failing value is a key's name, not a value
        message = f"a key's name {message}"
    return f"{located(source, text, path)}: {where}: {message}{tail}"
