"""What every command's ``--help`` shares: the click context (width, defaults shown) and the
closing paragraph with an example and the page to read.

Kept free of imports beyond the standard library: ``skill-evals --help`` must start fast.
"""

from __future__ import annotations

from typing import Any

# show_default: every option's help ends with its default (and click adds the range). Command
# summaries are given as short_help, which click wraps but never cuts off.
CONTEXT: dict[str, Any] = {
    "help_option_names": ["-h", "--help"],
    "max_content_width": 100,
    "show_default": True,
}


def epilog(example: str, *pages: str) -> str:
    """The end of a command's help: ``Example:`` (kept as written) and ``Read:`` the pages
    of the documentation (the docs/ folder of the skill-evals repository)."""
    lines = ["\b", "Example:", *(f"  {line}" for line in example.strip().splitlines())]
    lines += ["", "\b", "Read: " + ", ".join(pages) + " (the docs/ folder of skill-evals)"]
    return "\n".join(lines)
