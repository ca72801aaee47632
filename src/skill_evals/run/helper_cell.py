"""Where the programs that hold a key run: judges and proposers (docs/judging.md, docs/improve.md).

They are named by the trusted side (the command line, the trusted config), yet what they read —
answers, workspace files, failing prompts — is not, so they are contained like a built-in runner:

- in the run's bubblewrap sandbox when the run is sandboxed (--sandbox, SKILL_EVALS_SANDBOX, the
  config), with a private HOME and TMPDIR, the caller's directory empty but for what is bound;
- with the built-in runners' allowlist of the caller's environment (path, locale, time zone,
  terminal, proxy and CA settings), never the rest of it;
- with each provider key of the caller's environment (Anthropic, OpenAI, Gemini) replaced by the
  credential proxy's placeholder, and the provider's base-URL variable pointed at the proxy: the
  built-in `skill-evals judge|propose` and a program using a provider SDK work unchanged, and the
  real key never enters the process.

The proxy lives for one call: started before the program, closed after it. In a contained
network (``--network model``, the default, or ``allow``) the program's sandbox has its own
network namespace too: it reaches its proxy (and any allowed host) through the egress proxy
alone, like a runner.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..agents.environment import BASE_PREFIXES, BASE_VARIABLES
from ..sandbox.binds import BindRefused
from ..sandbox.bwrap import Sandbox, sizes_tmpfs, startable
from ..sandbox.credential_proxy import CredentialProxy, builtin_credentials
from ..sandbox.egress import INSIDE_PORT, EgressProxy
from ..sandbox.probe import (
    SandboxChoice,
    SandboxState,
    SandboxUnusable,
    requested_mode,
    shared_choice,
)
from .helper_commands import probe_environment

# What a Python program needs beyond the runners' base variables to start as the caller's would.
_PYTHON_NAMES = frozenset({"PYTHONPATH", "PYTHONDONTWRITEBYTECODE"})
# Every provider row of the proxy's table: OpenCode's runner uses all three providers.
_PROVIDERS = "opencode"


def helper_env(
    caller: Mapping[str, str], proxied: Mapping[str, str], home: Path, tmp: Path
) -> dict[str, str]:
    """A judge's or proposer's environment: the allowlist of ``caller``, the proxy's variables
    (placeholders, ``SKILL_EVALS_PROXY_*``, base URLs) and the private HOME and TMPDIR."""
    env = {
        name: value
        for name, value in caller.items()
        if name in BASE_VARIABLES or name in _PYTHON_NAMES or name.startswith(BASE_PREFIXES)
    }
    env.update(proxied)
    env["HOME"], env["TMPDIR"] = str(home), str(tmp)
    return env


class Unconfinable(Exception):
    """The program cannot start as it must: the sandbox is required and unusable, or a
    directory to bind cannot be checked. ``str()`` says why (the caller's failure reason)."""


@dataclass(frozen=True)
class Confined:
    """One call's program: the command line to start (wrapped in bwrap when sandboxed) and its
    environment."""

    argv: list[str]
    env: dict[str, str]


class HelperCell:
    """How one engine run starts its judges or proposers: the sandbox decision (taken once,
    shared with the run's runners when they share the choice) and the caller's keys."""

    def __init__(self, caller: Mapping[str, str], choice: SandboxChoice | None = None) -> None:
        self._caller = dict(caller)
        self._choice = choice
        self._lock = threading.Lock()
        self._decided = False
        self._sandbox: Sandbox | None = None
        self._unusable: str | None = None
        self._state: SandboxState | None = None

    @property
    def sandbox(self) -> Sandbox | None:
        """The sandbox the programs run in (None: unsandboxed), once decided."""
        return self._sandbox

    @property
    def state(self) -> SandboxState | None:
        """The decision (``proxied``: the caller's provider keys the programs get through the
        proxy), None until one was taken or when the sandbox was required and unusable."""
        if self._state is None:
            return None
        names = tuple(c.env for c in builtin_credentials(_PROVIDERS, self._caller))
        return dataclasses.replace(self._state, proxied=names)

    def decide(self) -> str | None:
        """Decide the sandbox (probing it the first time); the reason when it is required and
        unusable (then nothing may start), else None."""
        with self._lock:
            if not self._decided:
                choice = self._choice
                if choice is None:
                    mode = requested_mode(None, self._caller, None)
                    choice = shared_choice(mode, (), self._caller)
                try:
                    state = choice.state(self._caller, probe_environment(self._caller))
                except SandboxUnusable as exc:
                    self._unusable = str(exc)
                else:
                    self._state = state
                    if state.program is not None:
                        contained = choice.network.mode != "host"
                        egress = EgressProxy(choice.network) if contained else None
                        self._sandbox = Sandbox(
                            state.program,
                            choice.paths,
                            egress=egress,
                            sized_root=sizes_tmpfs(state.version),
                        )
                self._decided = True
            return self._unusable

    @contextmanager
    def confined(self, argv: Sequence[str], cwd: str | None = None) -> Iterator[Confined]:
        """The program ``argv`` ready to start in ``cwd`` (default: the current directory):
        its proxy running, its private HOME and TMPDIR made; all gone afterwards.
        Unconfinable when it may not start."""
        unusable = self.decide()
        if unusable is not None:
            raise Unconfinable(unusable)
        where = cwd or os.getcwd()
        with ExitStack() as stack:
            root = Path(tempfile.mkdtemp(prefix="skill-evals-helper-"))
            stack.callback(shutil.rmtree, root, True)
            home, tmp = root / "home", root / "tmp"
            home.mkdir()
            tmp.mkdir()
            sandbox = self._sandbox
            egress = sandbox.egress if sandbox is not None else None
            proxied = self._proxied(stack, egress)
            env = helper_env(self._caller, proxied, home, tmp)
            command = list(argv)
            if sandbox is not None and command and startable(command[0], where, env):
                channel = sandbox.channel("command")
                if channel is not None:
                    stack.callback(channel.close)
                    env.update(sandbox.network_env())
                try:
                    command = sandbox.command(command, env, where, [home, tmp], channel=channel)
                except BindRefused as exc:
                    raise Unconfinable(str(exc)) from None
            yield Confined(command, env)

    def _proxied(self, stack: ExitStack, egress: EgressProxy | None) -> dict[str, str]:
        """The call's credential proxy started (closed with ``stack``) and the variables that
        point at it: on the engine's loopback, or at the contained sandbox's way out."""
        credentials = builtin_credentials(_PROVIDERS, self._caller)
        if not credentials:
            return {}
        proxy = stack.enter_context(CredentialProxy(credentials))
        if egress is None:
            return proxy.child_environment()
        routes = proxy.routes()
        egress.routes.update(routes)
        stack.callback(lambda: [egress.routes.pop(prefix, None) for prefix in routes])
        return proxy.child_environment(f"http://127.0.0.1:{INSIDE_PORT}")
