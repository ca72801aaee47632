"""A runner script `#!/usr/bin/env python3` whose `python3` on PATH is a version manager's shim
(pyenv, rbenv, asdf: `<root>/shims/python3` running `<root>/libexec/…`) runs in the sandbox:
the shim's tree is bound with it. It failed with exit 127 ("…/libexec/pyenv: No such file")
for every pyenv user. A fake manager of the same shape, the real CLI and bubblewrap; the home
and a directory that merely holds `shims` bind nothing more."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skill_evals.sandbox.binds import program_paths
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
PYTHON = "/usr/bin/python3"  # in the system directories, which every sandbox sees


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _manager(root: Path) -> Path:
    """root/shims/python3 -> root/libexec/tool exec python3 -> root/versions/3/bin/python3."""
    _script(
        root / "shims" / "python3", f'#!/bin/sh\nexec "{root}/libexec/tool" exec python3 "$@"\n'
    )
    _script(
        root / "libexec" / "tool",
        f'#!/bin/sh\nshift 2\nexec "{root}/versions/3/bin/python3" "$@"\n',
    )
    _script(root / "versions" / "3" / "bin" / "python3", f'#!/bin/sh\nexec {PYTHON} "$@"\n')
    return root / "shims"


@pytest.mark.skipif(not os.path.exists(PYTHON), reason="needs /usr/bin/python3")
def test_a_runner_through_a_version_managers_shim_runs_sandboxed(tmp_path: Path) -> None:
    shims = _manager(tmp_path / "tools" / ".pyenv")
    runner = tmp_path / "runner.py"
    shutil.copy(REPO / "examples" / "runners" / "custom_runner.py", runner)
    runner.chmod(0o755)
    skill = REPO / "examples" / "skills" / "refund-policy"
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}{Path(sys.executable).parent}:/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "skill_evals", "test", "--skill", str(skill), "--cases",
         str(skill / "evals" / "cases.jsonl"), "--runner", "./runner.py", "--trials", "1",
         "--sandbox", "required", "--show-runner-stderr", "-q"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PASS" in done.stdout


def test_only_a_managers_tree_is_bound_for_its_shims(tmp_path: Path) -> None:
    shims = _manager(tmp_path / ".pyenv")
    bound = program_paths(str(shims / "python3"), str(tmp_path), {"PATH": str(shims)})
    assert str(tmp_path / ".pyenv") in bound
    plain = tmp_path / "other" / "shims" / "python3"  # a folder named shims, no manager
    _script(plain, "#!/bin/sh\n")
    bound = program_paths(str(plain), str(tmp_path), {"PATH": ""})
    assert str(tmp_path / "other") not in bound
    assert os.path.expanduser("~") not in bound
