"""The end of `test` and `route`: run the pipeline with progress on stderr, write the report
files, say the warnings and the error on stderr, print the report on stdout and exit with
its code."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from ..codes import INVALID
from ..escaping.terminal import terminal_safe
from .common import fail

Report = dict[str, Any]
Held = dict[Path, int]  # pipes and devices among the outputs, opened by the checks


def run_and_write(
    runner: str | None,
    quiet: bool,
    run: Callable[[Any, Held], Report],
    write: Callable[[Report, Held], None],
) -> NoReturn:
    """``run(progress, held)`` then ``write(report, held)``, with SIGTERM as an interrupt; exit
    with the report's code."""
    from ..agents.simulated import NOTICE, is_simulated_command
    from ..report.outputs import close_held
    from ..run.interrupts import sigterm_interrupts
    from ..run.progress import ProgressPrinter

    if is_simulated_command(runner):
        # Said on every run, --quiet or not: these figures must never pass for a model's.
        click.echo(f"skill-evals: note: {NOTICE}", err=True)
    printer = None if quiet else ProgressPrinter(sys.stderr)
    held: Held = {}
    try:
        with sigterm_interrupts():
            try:
                report = run(printer, held)
            finally:
                if printer is not None:
                    printer.close()
            write(report, held)
    finally:
        close_held(held)
    sys.exit(int(report["exitCode"]))


def write_reports(
    report: Report,
    files: Sequence[tuple[Path, Callable[[], str]]],
    stdout: Callable[[], str],
    fmt: str,
    offered: Sequence[Path],
    inputs: Sequence[Path],
    held: Held | None = None,
) -> None:
    """Write each of ``files`` ((path, its rendering), in order), then the messages on stderr and
    ``stdout`` on stdout. A file inside an ``offered`` skill or over an input is not written
    (both are exit 5 already)."""
    from ..plan.files import path_inside
    from ..report.outputs import write_output

    for path, render in files:
        if any(path_inside(path, directory) for directory in offered):
            continue
        if any(path.resolve() == given.resolve() for given in inputs):
            continue
        try:
            write_output(path, render(), held)
        except OSError as exc:
            if report["exitCode"] == INVALID:
                continue  # already invalid (e.g. this very path failed the checks): say why
            fail(f"{path}: cannot write ({exc.strerror})")
    _say_messages(report, fmt)
    click.echo(stdout(), nl=False)


def _say_messages(report: Report, fmt: str) -> None:
    from ..messages import by_severity, stderr_warnings

    for message in stderr_warnings(report):
        click.echo(f"skill-evals: warning: {terminal_safe(message)}", err=True)
    to_person = fmt == "text" and sys.stdout.isatty()
    if report["exitCode"] in (5, 6, 7) and not to_person:
        # One clear line on stderr (stdout may be JSON/XML for a machine, or a file); the text
        # report on the user's own terminal already says it, once.
        for message in by_severity(report, "error")[:1]:
            click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
