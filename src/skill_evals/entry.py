"""The `skill-evals` console entry point. The simulated runner (`skill-evals runner
simulated`, run once per invocation by demos and self-tests) starts without the command-line
framework and the other commands: about half its start-up time (docs/performance.md). Anything
else goes to the full command line (cli.py)."""

from __future__ import annotations

import sys
from typing import NoReturn


def main() -> NoReturn:
    """Run `skill-evals` with ``sys.argv``."""
    if sys.argv[1:] == ["runner", "simulated"]:
        try:
            from .agents.simulated import main as simulated_main

            simulated_main()
        except KeyboardInterrupt:
            print("skill-evals: interrupted", file=sys.stderr)
            sys.exit(130)
        except Exception as exc:  # as the full command line reports one (exit 70)
            from .codes import INTERNAL
            from .escaping.terminal import terminal_safe

            print(f"skill-evals: internal error: {type(exc).__name__}: {terminal_safe(exc)}",
                  file=sys.stderr)  # fmt: skip
            sys.exit(INTERNAL)
        sys.exit(0)
    from .cli.main import main as cli_main

    cli_main()
