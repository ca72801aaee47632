"""How the reports write a number: a fixed count of decimals, a sign, a percentage, a p-value,
a threshold as typed; ``n/a`` for null, so an undefined figure is never shown as 0."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def is_number(value: object) -> bool:
    """A JSON number (bools are not numbers)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fmt(value: object, digits: int = 3) -> str:
    """A metric with ``digits`` decimals; ``n/a`` for null (undefined is never shown as 0)."""
    return f"{value:.{digits}f}" if is_number(value) else "n/a"


def fmt_signed(value: object, digits: int = 3) -> str:
    """A difference with its sign."""
    return f"{value:+.{digits}f}" if is_number(value) else "n/a"


def fmt_pct(value: object) -> str:
    """A rate as a percentage."""
    return f"{value * 100:.1f}%" if is_number(value) else "n/a"  # type: ignore[operator]


def fmt_p(value: object) -> str:
    """A p-value: 4 significant digits, never rounded to 0."""
    return format(value, ".4g") if is_number(value) else "n/a"


def fmt_threshold(value: object) -> str:
    """A gate threshold as the user typed it (shortest repr)."""
    return repr(value) if is_number(value) else "n/a"


RATES = ("precision", "recall", "f1")


def confusion_cells(figures: Mapping[str, object], counts: Sequence[str]) -> list[str]:
    """A row of a confusion table as text: the ``counts`` (``tp``, ``fp``, …) as they are,
    then precision, recall and F1 with ``fmt``."""
    return [str(figures.get(key)) for key in counts] + [fmt(figures.get(key)) for key in RATES]
