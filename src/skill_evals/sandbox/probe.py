"""Whether the work under test runs sandboxed (docs/sandbox.md): the requested mode (option,
``SKILL_EVALS_SANDBOX``, config, else ``auto``), the probe of the bubblewrap program, the
decision once per engine run, the report's ``sandbox`` block and the warning of an
unsandboxed run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import EvidenceUnavailable, InvalidInput
from .limits import Limits
from .network_policy import MODES as NETWORK_MODES
from .network_policy import NetworkError, NetworkPolicy, parse_allow

if TYPE_CHECKING:
    from .bwrap import Sandbox

MODES = ("auto", "required", "off")
MODE_VAR = "SKILL_EVALS_SANDBOX"
PROGRAM_VAR = "SKILL_EVALS_BWRAP"
PROBE_SECONDS = 5.0
_REASON_CHARS = 200
_READ_CAP = 65_536


def requested_mode(option: str | None, environ: Mapping[str, str], config: str | None,
                   config_where: str = "config sandbox") -> str:  # fmt: skip
    """The requested mode: ``--sandbox``, else ``SKILL_EVALS_SANDBOX``, else the config's
    ``sandbox:``, else ``auto``. Another value is exit 5 naming where it came from."""
    return requested_with_origin(option, environ, config, config_where)[0]


def requested_with_origin(option: str | None, environ: Mapping[str, str], config: str | None,
                          config_where: str = "config sandbox",
                          option_where: str = "--sandbox") -> tuple[str, str]:  # fmt: skip
    """:func:`requested_mode` and where it came from: ``option_where`` (``--sandbox``, or the
    action's input that set it), ``SKILL_EVALS_SANDBOX``, ``config_where`` or ``default``."""
    for value, where in (
        (option, option_where),
        (environ.get(MODE_VAR), MODE_VAR),
        (config, config_where),
    ):
        if value is None or (where == MODE_VAR and value == ""):
            continue
        if value not in MODES:
            shown = value[:40].encode("unicode_escape").decode("ascii")
            raise InvalidInput(
                f"{where}: unknown sandbox mode {shown!r}; use one of {', '.join(MODES)}"
            )
        return value, where
    return "auto", "default"


def off_reason(origin: str) -> str:
    """Why a run with the sandbox turned off is unsandboxed: what turned it off (``origin``:
    ``--sandbox``, ``SKILL_EVALS_SANDBOX``, the action's input, else a config file)."""
    if origin == "--sandbox":
        return "--sandbox off"
    if origin == MODE_VAR:
        return f"{MODE_VAR}=off"
    if origin.startswith("the action"):
        return f"{origin}: off"
    return f"sandbox: off in {origin}"


def sandbox_paths(
    given: Sequence[str], where: str = "--sandbox-path"
) -> tuple[tuple[str, bool], ...]:
    """``PATH`` (read-only) or ``PATH:rw`` (read-write) entries as absolute paths; exit 5 for
    one that does not exist or is ``/``."""
    found: list[tuple[str, bool]] = []
    for text in given:
        path, writable = (text[:-3], True) if text.endswith(":rw") else (text, False)
        absolute = os.path.abspath(os.path.expanduser(path)) if path else ""
        if not absolute or absolute == "/" or not os.path.exists(absolute):
            shown = text[:200].encode("unicode_escape").decode("ascii")
            raise InvalidInput(
                f"{where} {shown!r}: give an existing file or directory other than / "
                "(append :rw for read-write)"
            )
        found.append((absolute, writable))
    return tuple(found)


def warning_text(reason: str) -> str:
    """The warning every output of an unsandboxed run carries (without the ``warning:``)."""
    return (
        f"not sandboxed ({reason}): runner, setup and command checks can read this machine's "
        "files and processes"
    )


class SandboxUnusable(EvidenceUnavailable):
    """``--sandbox required`` and bubblewrap cannot be used: exit 7 before anything starts."""

    nothing_started = True


@dataclass(frozen=True)
class SandboxState:
    """What the engine decided: ``mode`` ``bwrap`` (``program`` the bwrap to run) or ``off``
    (``reason`` why)."""

    requested: str
    mode: str
    reason: str | None
    version: str | None
    program: str | None = None
    proxied: tuple[str, ...] = field(default=())
    masked: int = 0  # .git directories masked in the run (never their paths)
    requested_by: str = "default"  # where the requested mode came from
    network: str = "host"  # model|allow: contained (docs/sandbox.md); host: the machine's

    def to_json(self) -> dict[str, Any]:
        """The report's ``sandbox`` block."""
        return {
            "requested": self.requested,
            "requestedBy": self.requested_by,
            "mode": self.mode,
            "reason": self.reason,
            "version": self.version,
            "proxied": list(self.proxied),
            "masked": self.masked,
            "network": self.network if self.mode == "bwrap" else "host",
        }

    @property
    def warning(self) -> str | None:
        """The message of an unsandboxed run, None when sandboxed."""
        return None if self.reason is None else warning_text(self.reason)


def _clean_line(data: bytes) -> str:
    line = data.decode("utf-8", "replace").splitlines()[0] if data.strip() else ""
    kept = "".join(c for c in line if c.isprintable())
    return kept[:_REASON_CHARS]


def _version(program: str, env: Mapping[str, str]) -> str | None:
    try:
        done = subprocess.run(
            [program, "--version"],
            capture_output=True,
            timeout=PROBE_SECONDS,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return _clean_line(done.stdout[:_READ_CAP]) or None


def find_program(environ: Mapping[str, str]) -> str | None:
    """``SKILL_EVALS_BWRAP`` when set, else ``bwrap`` on ``PATH``; None when neither exists."""
    given = environ.get(PROGRAM_VAR)
    if given:
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    return shutil.which("bwrap", path=environ.get("PATH", os.defpath))


def probe(program: str, env: Mapping[str, str]) -> str | None:
    """Run ``true`` in a sandbox holding only the system directories; None when it exited 0
    within 5 seconds, else the reason."""
    from .bwrap import probe_argv

    try:
        done = subprocess.run(
            probe_argv(program),
            capture_output=True,
            timeout=PROBE_SECONDS,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "bwrap probe timed out"
    except OSError as exc:
        return f"bwrap failed its probe (exit 127: {exc.strerror or type(exc).__name__})"
    if done.returncode == 0:
        return None
    first = _clean_line(done.stderr[:_READ_CAP])
    return f"bwrap failed its probe (exit {done.returncode}: {first})"


def decide(
    requested: str,
    environ: Mapping[str, str],
    probe_env: Mapping[str, str],
    origin: str = "--sandbox",
) -> SandboxState:
    """Probe (unless ``off``) and decide; SandboxUnusable for ``required`` when unusable.
    ``origin``: where the requested mode came from (said in the reason and the report)."""
    program: str | None = None
    if requested == "off":
        reason: str | None = off_reason(origin)
    elif not sys.platform.startswith("linux"):
        reason = "not Linux"
    elif (program := find_program(environ)) is None:
        reason = "bwrap not found"
    else:
        reason = probe(program, probe_env)
    if reason is None:
        assert program is not None
        version = _version(program, probe_env)
        return SandboxState(requested, "bwrap", None, version, program, requested_by=origin)
    if requested == "required":
        raise SandboxUnusable(f"sandbox required but unusable: {reason}")
    return SandboxState(requested, "off", reason, None, requested_by=origin)


class SandboxChoice:
    """The requested mode of one engine run and its decision, taken once, when something is
    about to run (a ``ci`` run's skills share it). The warning is printed once on stderr."""

    def __init__(
        self,
        requested: str = "auto",
        paths: tuple[tuple[str, bool], ...] = (),
        origin: str = "default",
        *,
        network: NetworkPolicy | None = None,
        limits: Limits | None = None,
        max_invocation_tokens: int | None = None,
    ) -> None:
        self.requested = requested
        self.origin = origin  # where the requested mode came from
        self.paths = paths  # --sandbox-path: (absolute path, writable)
        self.network = network if network is not None else NetworkPolicy()
        self.limits = limits if limits is not None else Limits()
        self.max_invocation_tokens = max_invocation_tokens  # wire tokens (contained network)
        self._network_warned = False
        self._lock = threading.Lock()
        self._state: SandboxState | None = None
        self._error: SandboxUnusable | None = None

    def state(self, environ: Mapping[str, str], probe_env: Mapping[str, str]) -> SandboxState:
        """The decision (probing the first time); SandboxUnusable (exit 7) for ``required``."""
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._state is None:
                try:
                    self._state = decide(self.requested, environ, probe_env, self.origin)
                except SandboxUnusable as exc:
                    self._error = exc  # said once by the command, with the run's other errors
                    raise
                if self._state.warning is not None:
                    print(f"skill-evals: warning: {self._state.warning}", file=sys.stderr,
                          flush=True)  # fmt: skip
            return self._state

    def trusted(self, environ: Mapping[str, str], probe_env: Mapping[str, str]) -> Sandbox | None:
        """Where the engine's own trusted one-shot programs of this run go
        (:meth:`Sandbox.trusted_command`): None when the run is unsandboxed (``off``, or
        ``auto`` without a usable bubblewrap: they run as the run's programs do, unsandboxed);
        SandboxUnusable as :meth:`state`."""
        if self.requested == "off":  # known without deciding (nor warning) yet
            return None
        state = self.state(environ, probe_env)
        if state.program is None:
            return None
        from .bwrap import Sandbox, sizes_tmpfs

        return Sandbox(
            state.program, self.paths, limits=self.limits, sized_root=sizes_tmpfs(state.version)
        )

    def network_warning(self) -> str | None:
        """For a sandboxed run on the host's network: the warning (printed on stderr once)."""
        if self.network.mode != "host":
            return None
        text = (
            "sandbox network is the host's (--network host): runner, setup and command checks "
            "can reach this machine's loopback services and any address"
        )
        with self._lock:
            if not self._network_warned:
                self._network_warned = True
                print(f"skill-evals: warning: {text}", file=sys.stderr, flush=True)
        return text

    @property
    def decided(self) -> SandboxState | None:
        """The decision, when one was taken."""
        return self._state


_CHOICES: dict[tuple[object, ...], SandboxChoice] = {}
_CHOICES_LOCK = threading.Lock()


def shared_choice(
    requested: str,
    paths: tuple[tuple[str, bool], ...],
    environ: Mapping[str, str],
    origin: str = "default",
    *,
    network: NetworkPolicy | None = None,
    limits: Limits | None = None,
    max_invocation_tokens: int | None = None,
) -> SandboxChoice:
    """The one choice of this engine run for these settings (and this bwrap program): probed
    once, warned once."""
    policy = network if network is not None else NetworkPolicy()
    bounds = limits if limits is not None else Limits()
    key = (
        requested,
        paths,
        environ.get(PROGRAM_VAR),
        origin,
        policy,
        bounds,
        max_invocation_tokens,
    )
    with _CHOICES_LOCK:
        made = SandboxChoice(
            requested,
            paths,
            origin,
            network=policy,
            limits=bounds,
            max_invocation_tokens=max_invocation_tokens,
        )
        return _CHOICES.setdefault(key, made)


def network_policy(mode: str | None, allow: tuple[str, ...], source: str) -> NetworkPolicy:
    """``--network`` (or the config's ``network:``) and its allow list; exit 5 naming the
    option for an unknown mode or a bad entry."""
    chosen = mode or "model"
    if chosen not in NETWORK_MODES:
        raise InvalidInput(f"{source}: unknown network {chosen!r}: use model, allow or host")
    try:
        entries = tuple(parse_allow(text, f"{source}-allow {text!r}"[:200]) for text in allow)
    except NetworkError as exc:
        raise InvalidInput(str(exc)) from None
    if entries and chosen != "allow":
        raise InvalidInput(
            f"{source}-allow is given but the network is {chosen!r}: use --network allow"
        )
    return NetworkPolicy(chosen, entries)
