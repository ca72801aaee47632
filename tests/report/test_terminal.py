"""One escaping function for terminals; core prints of user strings use it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.escaping.terminal import terminal_safe
from skill_evals.report.text import clean
from skill_evals.run.execute import Progress
from skill_evals.run.progress import ProgressPrinter
from tests.conftest import EXAMPLE_SKILL

RAW_CONTROLS = ["\x1b", "\n", "\r", "\x07", "\x00", "\x7f", "\x9b", "\u202e", "\u2028", "\u200b"]


@pytest.mark.parametrize("char", RAW_CONTROLS)
def test_control_format_and_separator_characters_are_escaped(char: str) -> None:
    shown = terminal_safe(f"a{char}b")
    assert char not in shown
    assert shown == f"a\\u{ord(char):04x}b"


def test_printable_text_is_unchanged_and_astral_format_chars_use_lowercase_hex() -> None:
    assert terminal_safe("café 技能 ✓ é") == "café 技能 ✓ é"
    assert terminal_safe("tag\U000e0041") == "tag\\ue0041"
    # A lone surrogate (an undecodable byte of a file name) cannot reach the terminal either.
    assert terminal_safe("x\udcff") == "x\\udcff"


def test_text_report_and_progress_share_the_one_function() -> None:
    assert clean("a\x1b[31m") == terminal_safe("a\x1b[31m")

    class Sink:
        text = ""

        def write(self, data: str) -> None:
            self.text += data

        def flush(self) -> None:
            pass

    sink = Sink()
    ProgressPrinter(sink)(  # type: ignore[arg-type]
        Progress(1, 2, "sk\x1b]0;x\x07", "id\n::error::x", 1, "with", True, 10.0)
    )
    assert sink.text.count("\n") == 1
    assert "\x1b" not in sink.text and "\x07" not in sink.text
    assert "\\u001b" in sink.text and "id\\u000a::error::x" in sink.text


def test_cli_error_lines_escape_paths(tmp_path: Path) -> None:
    skill = tmp_path / "evil\x1b[2J\n::error::forged"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "skill_evals", "test", "--skill", str(skill)),
            *("--cases", str(EXAMPLE_SKILL / "evals" / "cases.jsonl"), "--runner", "true"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 5
    assert "\x1b" not in proc.stderr
    assert "\n::error::" not in proc.stderr
    assert "evil\\u001b[2J\\u000a::error::forged" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_validate_escapes_paths(tmp_path: Path) -> None:
    skill = tmp_path / "bad\x1bname"
    skill.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "skill_evals", "validate", str(skill)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout + proc.stderr
    assert "bad\\u001bname" in proc.stdout
