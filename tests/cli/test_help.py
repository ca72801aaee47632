"""`--help` of every command: a summary that is not cut off, every option described (with its
default when it has none to show), an example and the page to read — and those pages exist."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from skill_evals.cli.main import cli
from tests.conftest import REPO


def commands(
    group: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(path) or "skill-evals", group
    if isinstance(group, click.Group):
        for name, command in sorted(group.commands.items()):
            yield from commands(command, (*path, name))


ALL = list(commands(cli))


@pytest.mark.parametrize(("name", "command"), ALL, ids=[n for n, _ in ALL])
def test_every_command_has_a_summary_an_example_and_a_page(
    name: str, command: click.Command
) -> None:
    if name != "skill-evals":
        assert command.short_help, f"{name}: no short_help (the command list would cut it)"
        assert len(command.short_help) <= 90, f"{name}: short_help longer than one line"
    assert command.help, name
    epilog = command.epilog or ""
    assert "Example:" in epilog, f"{name}: its help ends without an example"
    pages = re.findall(r"docs/[\w./#-]+", epilog.split("Read:", 1)[-1])
    assert pages, f"{name}: its help names no page to read"
    for page in pages:
        path = page.split("#", 1)[0]
        assert (REPO / path).exists(), f"{name}: {page} does not exist"


@pytest.mark.parametrize(("name", "command"), ALL, ids=[n for n, _ in ALL])
def test_every_option_is_described_with_its_default(name: str, command: click.Command) -> None:
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in ("help", "version"):
            continue
        text = (param.help or "").strip()
        assert text, f"{name} {param.opts[0]}: no help text"
        shows_default = param.default not in (None, False, ()) or param.is_flag
        if not (param.required or param.multiple or shows_default):
            # click prints nothing for a None default: the text must say what happens.
            assert "default" in text.lower(), f"{name} {param.opts[0]}: says no default"


def test_command_list_shows_whole_summaries() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=100)
    assert result.exit_code == 0
    for name, command in cli.commands.items():  # type: ignore[attr-defined]
        line = next(x for x in result.output.splitlines() if x.strip().startswith(name + " "))
        assert str(command.short_help) in line, line
    listed = result.output.split("Commands:", 1)[1]
    assert "..." not in listed


def test_ranges_and_defaults_are_printed() -> None:
    result = CliRunner().invoke(cli, ["test", "--help"], terminal_width=100)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "[default: 3; 1<=x<=100]" in text  # --trials
    assert "[default: 4; 1<=x<=64]" in text  # --jobs
    assert "Default: no gate. [0<=x<=1]" in text  # --min-trigger-f1
    assert "Default: no gate. [-1<=x<=1]" in text  # --min-uplift
