"""What the command modules share: the one-line error exit and a NaN-safe float range."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from ..codes import INVALID
from ..escaping.terminal import terminal_safe


def fail(message: str, code: int = INVALID) -> NoReturn:
    """Print ``skill-evals: error: MESSAGE`` on stderr (terminal-safe) and exit with ``code``."""
    click.echo(f"skill-evals: error: {terminal_safe(message)}", err=True)
    sys.exit(code)


class FloatRange(click.FloatRange):
    """click.FloatRange that also rejects NaN: every comparison with NaN is false, so click's
    own range check lets ``nan`` through (and the gate would then compare against it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if result != result:  # NaN
            self.fail(f"{value} is not in the range {self._describe_range()}.", param, ctx)
        return result
