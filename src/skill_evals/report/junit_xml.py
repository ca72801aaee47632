"""JUnit XML building and serialising: the <testsuite> builder with the counts JUnit readers
want, times as junit-10.xsd accepts them, and the one sanitiser every attribute and text passes
through.

The shape is the one Jenkins xunit's ``junit-10.xsd`` accepts: no ``skipped`` attribute on
``<testsuites>`` (the per-suite counts carry it), ``time`` on every suite and testcase as plain
decimals. Every attribute and text passes through one sanitiser when the tree is serialised,
so no path can write a character XML 1.0 cannot carry.
"""

from __future__ import annotations

import hashlib
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from ..escaping.invisible import show_invisible
from ..messages import ARTEFACTS, severities_of
from ..sandbox.behaviour import finding_text
from ..sandbox.probe import warning_text
from .values import mapping

# Characters XML 1.0 cannot carry, plus the C0/C1 controls it can but consumers choke on
# (\t, \n, \r stay): removed, never written.
_XML_UNSAFE = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# An attribute longer than this is cut (with a hash of the whole, so distinct names stay
# distinct): some readers refuse attributes of megabytes (libxml2 without its huge option).
MAX_ATTRIBUTE_CHARS = 65_536
# Text content (messages, system-out) is cut at this size.
MAX_TEXT_CHARS = 1_000_000


def xml_text(value: object) -> str:
    """The one XML sanitiser: ``value`` as text with invisible characters shown as ``\\uXXXX``
    (the shared rule) and every character XML cannot carry removed."""
    return _XML_UNSAFE.sub("", show_invisible(value))


def _attribute(value: object) -> str:
    text = xml_text(value)
    if len(text) <= MAX_ATTRIBUTE_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return text[: MAX_ATTRIBUTE_CHARS - 20] + "…" + digest


def _content(value: object) -> str:
    text = xml_text(value)
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "…"


def junit_time(seconds: object) -> str:
    """A time as junit-10.xsd's SUREFIRE_TIME accepts it: digits, a dot, three decimals."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return "0.000"
    value = float(seconds)
    return f"{value:.3f}" if math.isfinite(value) and value >= 0 else "0.000"


def report_properties(
    report: Mapping[str, Any], identity: list[tuple[str, object]]
) -> list[tuple[str, object]]:
    """The properties every report's suite starts with: status, exit code, the tool's version,
    what identifies the tested skill (``identity``), the case file and the run's settings."""
    cases, settings = mapping(report.get("cases")), mapping(report.get("settings"))
    return [
        ("status", report.get("status")),
        ("exitCode", report.get("exitCode")),
        ("tool.version", mapping(report.get("tool")).get("version")),
        *identity,
        ("cases.path", cases.get("path")),
        ("cases.sha256", cases.get("sha256")),
        ("mode", settings.get("mode")),
        ("trials", settings.get("trials")),
        ("seed", settings.get("seed")),
    ]


def note_properties(report: Mapping[str, Any]) -> list[tuple[str, object]]:
    """Properties for the notes every output carries: a run with the simulated runner says
    its figures are artefacts of word matching (a passing suite has no message of its own)."""
    found: list[tuple[str, object]] = []
    messages = report.get("messages")
    if isinstance(messages, list) and ARTEFACTS in messages:
        found.append(("simulated", ARTEFACTS))
    sandbox = report.get("sandbox")
    reason = sandbox.get("reason") if isinstance(sandbox, Mapping) else None
    if isinstance(reason, str):
        found.append(("sandbox", f"warning: {warning_text(reason)}"))
    found += [("behaviour", finding_text(f)) for f in _findings(report)]
    return found


def _findings(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    findings = mapping(report.get("behaviour")).get("findings")
    return [f for f in findings if isinstance(f, Mapping)] if isinstance(findings, list) else []


def behaviour_case(suite: Suite, report: Mapping[str, Any]) -> None:
    """A ``behaviour`` testcase when the run raised findings: their lines in system-out, a
    failure when they failed the gate (--fail-on-finding)."""
    lines = [finding_text(f) for f in _findings(report)]
    if not lines:
        return
    errors = {m for severity, m in severities_of(report) if severity == "error"}
    failed = any(m.startswith("behaviour: ") for m in errors)
    case = suite.case("behaviour", system_out="\n".join(lines))
    if failed:
        suite.result(case, "failure", f"{lines[0]} (--fail-on-finding)")


class Suite:
    """A <testsuite> being built: its testcases and the counts JUnit readers want."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.properties: list[tuple[str, str]] = []
        self.cases: list[ET.Element] = []
        self.counts = {"failures": 0, "errors": 0, "skipped": 0}

    def case(self, name: str, *, system_out: str | None = None) -> ET.Element:
        """A new <testcase> (time 0), with ``system_out`` when given."""
        element = ET.Element("testcase", name=name, classname=self.name, time=junit_time(0))
        if system_out:
            ET.SubElement(element, "system-out").text = system_out
        self.cases.append(element)
        return element

    def result(
        self, case: ET.Element, kind: str, message: str, text: str | None = None
    ) -> ET.Element:
        """Add <failure>, <error> or <skipped> to ``case`` (before any system-out)."""
        attrs = {"message": message} if kind == "skipped" else {"message": message, "type": kind}
        element = ET.Element(kind, attrs)
        if text:
            element.text = text
        case.insert(0, element)
        self.counts["skipped" if kind == "skipped" else kind + "s"] += 1
        return element

    def element(self, wall_s: float) -> ET.Element:
        """The <testsuite> element: counts, ``wall_s`` as its time, properties, testcases."""
        suite = ET.Element(
            "testsuite",
            name=self.name,
            tests=str(len(self.cases)),
            failures=str(self.counts["failures"]),
            errors=str(self.counts["errors"]),
            skipped=str(self.counts["skipped"]),
            time=junit_time(wall_s),
        )
        if self.properties:
            props = ET.SubElement(suite, "properties")
            for key, value in self.properties:
                ET.SubElement(props, "property", name=key, value=value)
        suite.extend(self.cases)
        return suite


def evaluation_error(suite: Suite, report: Mapping[str, Any], messages: list[str]) -> None:
    """The ``evaluation`` error testcase that explains an exit code (5, 6, 7, 130) no other
    testcase explains: the first message, all of them as its text."""
    suite.result(
        suite.case("evaluation"),
        "error",
        messages[0] if messages else f"status {report.get('status')}",
        "\n".join(messages),
    )


def serialise(root: ET.Element) -> str:
    """Every attribute and text through the sanitiser, then the document with its declaration."""
    for element in root.iter():
        for key, value in element.attrib.items():
            element.set(key, _attribute(value))
        if element.text is not None:
            element.text = _content(element.text)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
