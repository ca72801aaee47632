"""Copilot's package unpacked once per run (skill_evals/agents/copilot_package.py): the real
pinned CLI unpacks itself into the run's folder, a copy without its marker is made again and
never used, parallel invocations wait for one unpacking, a CLI that does not unpack that way
leaves the runner as it was; end to end in real bubblewrap, the agent cannot write into the
shared copy and the next invocation still starts from it."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from skill_evals.agents.copilot_package import (
    MARKER,
    SharedPackage,
    complete,
    link_shared,
    shared_package,
    unpack,
)
from skill_evals.sandbox.bwrap import Sandbox
from tests.agents.conftest import agent_binary, workspaces_in
from tests.agents.e2e import caller_env, run_test_cli
from tests.agents.fake_copilot_model import Behaviour, FakeCopilotModel, parse
from tests.conftest import write_jsonl, write_skill

# A stand-in CLI with the real one's extract-only mode: it logs each start, then writes the
# package's layout (slowly, so a parallel caller would see it half made).
STAND_IN = """#!/bin/sh
echo start >> "{log}"
[ "$COPILOT_SEA_EXTRACT_ONLY" = 1 ] || exit 0
d="$COPILOT_PKG_CACHE_HOME/pkg/linux-x64/9.9.9"
mkdir -p "$d/prebuilds/linux-x64"
for f in index.js app.js cli-main.js prebuilds/linux-x64/runtime.node; do echo x > "$d/$f"; done
sleep 0.5
touch "$d/{marker}"
"""


def _stand_in(tmp_path: Path, body: str = STAND_IN) -> tuple[str, Path]:
    log = tmp_path / "starts.log"
    program = tmp_path / "bin" / "copilot"
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(body.format(log=log, marker=MARKER), encoding="utf-8")
    program.chmod(0o755)
    return str(program), log


def _bwrap() -> Sandbox:
    """The sandbox of a sandboxed run (skipped where bubblewrap cannot run)."""
    program = shutil.which("bwrap")
    if program is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    return Sandbox(program)


def _starts(log: Path) -> int:
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def test_the_real_cli_unpacks_once_and_an_incomplete_copy_is_made_again(tmp_path: Path) -> None:
    """In real bubblewrap, as the engine of a sandboxed run has it unpack."""
    store = tmp_path / "store"
    env = {"PATH": os.environ["PATH"]}
    sandbox = _bwrap()
    copy = unpack(agent_binary("copilot"), store, env, sandbox)
    assert copy is not None and complete(copy)
    assert (copy.parent.name, copy.name) == ("linux-x64", "1.0.102")
    assert [p.name for p in tmp_path.iterdir()] == ["store"]  # no temporary folder left
    inode = copy.stat().st_ino
    assert unpack(agent_binary("copilot"), store, env, sandbox) == copy  # there: not again
    assert copy.stat().st_ino == inode
    (copy / MARKER).unlink()  # a copy cut short: never used, made again
    (copy / "left-over").write_text("x", encoding="utf-8")
    assert not complete(copy)
    again = unpack(agent_binary("copilot"), store, env, sandbox)
    assert again == copy and complete(again) and not (again / "left-over").exists()


def test_parallel_invocations_wait_for_one_unpacking(tmp_path: Path) -> None:
    program, log = _stand_in(tmp_path)
    package = SharedPackage(program, tmp_path / "run", {"PATH": os.environ["PATH"]})
    homes = [tmp_path / f"home{i}" for i in range(4)]
    found: list[list[tuple[str, str]]] = []
    threads = [
        threading.Thread(target=lambda h=h: found.append(package.binds(h, None))) for h in homes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _starts(log) == 1
    ((source, _),) = found[0]
    assert complete(Path(source))
    places = sorted(place for ((_, place),) in found)
    assert places == [str(h / ".cache/copilot/pkg/linux-x64/9.9.9") for h in homes]
    assert all(Path(place).is_dir() for place in places)  # the mount points, made here
    (Path(source) / "app.js").unlink()  # damaged on the host: made again before next use
    assert package.binds(homes[0], None) == [(source, places[0])] and _starts(log) == 2
    assert complete(Path(source))


def test_a_cli_that_does_not_unpack_that_way_leaves_the_runner_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another release: it exits 0 and unpacks nothing (or fails): no bind, nothing said, and
    the run does not ask it again."""
    program, log = _stand_in(tmp_path, '#!/bin/sh\necho start >> "{log}"\nexit 0\n')
    package = SharedPackage(program, tmp_path / "run", {"PATH": os.environ["PATH"]})
    home = tmp_path / "home"
    assert package.binds(home, None) == [] and package.binds(home, None) == []
    assert _starts(log) == 1
    assert capsys.readouterr() == ("", "")
    failing, _ = _stand_in(tmp_path / "failing", '#!/bin/sh\necho "{log}" >&2\nexit 3\n')
    assert SharedPackage(failing, tmp_path / "run2", {}).binds(home, None) == []
    assert not (tmp_path / "home" / ".cache").exists()
    assert shared_package("codex", program, {}) is None
    assert shared_package("copilot", "no-such-copilot", {"PATH": ""}) is None


def test_the_engine_process_keeps_one_copy_per_binary(tmp_path: Path) -> None:
    """A ci job's skills and improve's rounds share it: one per binary per engine process,
    in a folder a later run sweeps if this engine is killed."""
    program, _ = _stand_in(tmp_path)
    env = {"PATH": f"{Path(program).parent}{os.pathsep}{os.environ['PATH']}"}
    first = shared_package("copilot", program, env)
    assert first is not None and shared_package("copilot", "copilot", env) is first
    made = set(Path(tempfile.gettempdir()).glob(f"skill-evals-ws-{os.getpid()}-copilot-*"))
    copy = first.copy(None)  # the folder is made on first use only (never for an unsandboxed run)
    assert copy is not None and copy.is_relative_to(first.store)
    assert first.store.parent.name.startswith(f"skill-evals-ws-{os.getpid()}-copilot-")
    assert first.store.parent not in made
    other, _ = _stand_in(tmp_path / "other")
    assert shared_package("copilot", other, env) not in (None, first)


def test_a_writable_copy_is_never_linked_into_the_agents_home(tmp_path: Path) -> None:
    """A user's own cache (writable) is not shared with an agent: only a read-only mount,
    the engine's bind, is (end to end below)."""
    program, _ = _stand_in(tmp_path)
    copy = unpack(program, tmp_path / "store", {"PATH": os.environ["PATH"]}, None)
    assert copy is not None
    home = tmp_path / "home"
    shutil.copytree(copy, home / ".cache/copilot/pkg/linux-x64/9.9.9")
    assert link_shared(str(home), tmp_path / "agent") == []
    assert link_shared(None, tmp_path / "agent") == []


# -------------------------------------------------------------- real bubblewrap, end to end

FIND = 'P=$(readlink -f ~/.cache/copilot/pkg/*/*); echo "linked-to=$P"; stat -c "ino=%d:%i" "$P"; '
ATTACK = FIND + (
    'touch "$P/planted"; echo "touch=$?"; rm -f "$P/app.js"; echo "rm=$?"; '
    'echo x >> "$P/index.js"; echo "append=$?"; chmod u+w "$P/cli-main.js"; echo "chmod=$?"'
)
CHECK = FIND + 'ls "$P/planted" || echo no-planted; test -f "$P/app.js" && echo app-intact'


def _bash(command: str) -> tuple[tuple[str, dict[str, str]], ...]:
    return (("bash", {"command": command, "description": "step"}),)


@pytest.mark.agents
def test_the_agent_cannot_write_into_the_shared_copy_and_the_next_run_starts_from_it(
    tmp_path: Path,
) -> None:
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    skill = write_skill(tmp_path / "skills")
    rows = [{"id": "attack", "prompt": "Do the attack steps.", "expectTrigger": False}]
    rows += [{"id": "check", "prompt": "Do the check steps.", "expectTrigger": False}]
    rows += [
        {"id": f"c{i}", "prompt": f"Hello number {i}", "expectTrigger": False} for i in range(8)
    ]
    cases = write_jsonl(tmp_path / "cases.jsonl", rows)
    behaviour = Behaviour(
        by_prompt=(
            ("attack steps", Behaviour(script=(_bash(ATTACK),))),
            ("check steps", Behaviour(script=(_bash(CHECK),))),
        )
    )
    runner = (
        f"{sys.executable} -m skill_evals runner copilot --bin {agent_binary('copilot')} "
        "--model claude-sonnet-4"
    )
    with FakeCopilotModel(behaviour) as model:
        settings = {
            "COPILOT_PROVIDER_BASE_URL": model.url,
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "sk-package-key",
        }
        done = run_test_cli(
            skill, cases, runner,
            "--arms", "with", "--trials", "1", "--jobs", "1", "--max-invocations", "2",
            "--sandbox", "required", "--report", str(tmp_path / "report.json"),
            env=caller_env(tmp_path, ("COPILOT_",), settings), timeout=300,
        )  # fmt: skip
        texts = "\n".join(t for body in model.requests for t in parse(body).texts)
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["runner"]["failures"] == [] and report["runner"]["invocations"] == 2, done.stderr
    assert report["sandbox"]["mode"] == "bwrap"
    linked = {line.split("=", 1)[1] for line in texts.splitlines() if line.startswith("linked-to=")}
    # Each run's link leads out of the agent's own home to its sandbox's HOME, where one and
    # the same folder (device and inode) stands: the engine's copy.
    assert len(linked) == 2 and "skill-evals-runs-" not in "".join(linked), linked
    assert all(t.endswith("/home/.cache/copilot/pkg/linux-x64/1.0.102") for t in linked)
    inodes = [line for line in texts.splitlines() if line.startswith("ino=")]
    assert len(inodes) == 2 and len(set(inodes)) == 1, inodes
    for step in ("touch", "rm", "append", "chmod"):
        assert f"{step}=1" in texts, step  # every write refused
    assert "Read-only file system" in texts
    assert "no-planted" in texts and "app-intact" in texts  # the next run: the copy unchanged
    assert workspaces_in(tmp_path / "tmpdir") == []
    assert list((tmp_path / "tmpdir").glob("skill-evals-ws-*")) == []  # the copy went too
