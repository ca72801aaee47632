"""The options of `skill-evals test` and `skill-evals route` as the pipeline takes them: what
the command line (or the CI gate's config) said, already range-checked, and the plain settings
each step derives from them. The options objects stop at the pipeline's entry
(pipeline.py): no step below receives one."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .agents.registry import builtin_agent
from .cache.settings import CacheSettings
from .plan.files import RunFiles
from .plan.judge_plan import named_judges, plan_judging
from .plan.run_settings import RunSettings, default_timeout_ms
from .plan.scope import ArmOptions
from .plan.test_plan import (
    GateSettings,
)
from .report.blocks import Settings
from .report.route_report import RouteSettings
from .run.judging import Judging
from .sandbox.credential_proxy import Credential, proxied_credentials
from .sandbox.limits import Limits
from .sandbox.probe import (
    SandboxChoice,
    network_policy,
    requested_with_origin,
    sandbox_paths,
    shared_choice,
)
from .suite.cases import CaseSuite
from .suite.catalog import Catalog
from .suite.route_cases import load_route_catalog


@dataclass(frozen=True, kw_only=True)
class _RunOptions:
    """What `test` and `route` both take (already range-checked by the CLI)."""

    cases: Path
    runner: str | None = None
    observations: Path | None = None
    trials: int = 3
    seed: int = 42
    timeout_ms: int | None = None  # None: the default for the runner (default_timeout_ms)
    max_bytes: int = 1_000_000
    jobs: int = 4
    retries: int = 2  # re-runs of an invocation whose runner reports a retryable failure
    record: Path | None = None
    resume: Path | None = None
    keep_going: bool = False
    outputs: tuple[Path, ...] = ()  # every path we will write: outside every offered skill
    env: Mapping[str, str] | None = None
    cache: CacheSettings | None = None  # reuse valid observations (docs/cost.md)
    require_verified_isolation: bool = False
    sandbox: str | None = None  # --sandbox (else SKILL_EVALS_SANDBOX, else the config's)
    sandbox_config: str | None = None  # the ci config's sandbox: (else auto)
    sandbox_where: str = "--sandbox"  # where `sandbox` came from (or the action's input)
    sandbox_config_where: str = "config sandbox"  # where `sandbox_config` came from
    sandbox_path: tuple[str, ...] = ()  # --sandbox-path PATH[:rw]
    network: str | None = None  # --network model|allow|host (else the config's, else model)
    network_allow: tuple[str, ...] = ()  # --network-allow HOST[:PORT]
    fail_on_finding: bool = False  # --fail-on-finding: a behaviour finding fails the gate
    max_invocation_tokens: int | None = None  # --max-invocation-tokens (wire, per invocation)
    max_workspace_bytes: int | None = None  # --max-workspace-bytes (W, TMPDIR and HOME)
    credential: tuple[str, ...] = ()  # --credential ENV,STYLE,UPSTREAM (a custom runner's)
    credentials_config: tuple[object, ...] = ()  # the ci config's credentials: entries

    def proxied(self) -> tuple[Credential, ...]:
        """The custom runner's credentials to proxy (exit 5 for a bad one)."""
        environ = os.environ if self.env is None else self.env
        return proxied_credentials(self.credential, self.credentials_config, environ)

    def sandbox_mode(self) -> SandboxChoice:
        """The run's sandbox choice, one per engine run for the same settings (the skills of
        `ci` share it); exit 5 for an unknown mode or a bad --sandbox-path or --network."""
        environ = os.environ if self.env is None else self.env
        where = (self.sandbox_config_where, self.sandbox_where)
        mode, origin = requested_with_origin(self.sandbox, environ, self.sandbox_config, *where)
        network = network_policy(self.network, self.network_allow, "--network")
        limits = Limits(workspace_bytes=self.max_workspace_bytes or Limits.workspace_bytes)
        return shared_choice(
            mode,
            sandbox_paths(self.sandbox_path),
            environ,
            origin,
            network=network,
            limits=limits,
            max_invocation_tokens=self.max_invocation_tokens,
        )

    @property
    def effective_timeout_ms(self) -> int:
        """--timeout-ms, or the default for this runner when it was not given."""
        return self.timeout_ms if self.timeout_ms is not None else default_timeout_ms(self.runner)

    @property
    def mode(self) -> Literal["runner", "observations"]:
        """The report's settings.mode."""
        return "observations" if self.observations is not None else "runner"

    def shape(self) -> dict[str, Any]:
        """The settings every run's report gives (:class:`~.report.blocks.RunShape`)."""
        return {
            "mode": self.mode,
            "trials": self.trials,
            "seed": self.seed,
            "timeout_ms": self.effective_timeout_ms,
            "max_bytes": self.max_bytes,
            "jobs": self.jobs,
            "fail_on_finding": self.fail_on_finding,
        }

    def files(self) -> RunFiles:
        """The paths this run reads and writes."""
        return RunFiles(self.cases, self.observations, self.record, self.resume, self.outputs)

    def run_settings(self, **more: Any) -> RunSettings:
        """How each invocation runs (``more``: the command's own settings)."""
        return RunSettings(
            runner=self.runner,
            trials=self.trials,
            jobs=self.jobs,
            timeout_ms=self.effective_timeout_ms,
            max_bytes=self.max_bytes,
            keep_going=self.keep_going,
            retries=self.retries,
            env=self.env,
            cache=self.cache,
            **more,
        )


@dataclass(frozen=True, kw_only=True)
class TestOptions(_RunOptions):
    """Everything `skill-evals test` takes. ``require_verified_isolation``: an unverified
    without run is exit 7."""

    skill: Path
    agent: str | None = None  # --agent: the frontmatter profile (default: the runner's agent)
    strict: bool = False  # --strict: a lint warning is exit 5 before any runner
    bootstrap_samples: int = 10_000
    min_trigger_f1: float | None = None
    min_uplift: float | None = None
    keep_workspaces: Path | None = None  # move each invocation's workspace here
    retry_delay: Callable[[int], float] | None = None  # backoff (seconds before re-run n)
    scope: ArmOptions = field(default_factory=ArmOptions)  # arms, baseline, budget, settle
    judge: str | None = None  # the default judge of judge checks (docs/judging.md)
    judges: tuple[str, ...] | Mapping[str, str] = ()  # --judges NAME=CMD, config judges:
    judge_timeout_ms: int = 120_000
    max_judge_calls: int | None = None
    judge_fallback: tuple[str, float] = ("absolute", 0.05)  # --judge-fallback and its margin
    # ci: the case file as its judge pre-check loaded it, with the skill name it was loaded
    # for; the run uses it when its skill has that name (each case file is read once).
    loaded_cases: tuple[str, CaseSuite] | None = None

    def judging(self, suite: CaseSuite) -> Judging | None:
        """The run's judging (None without judge checks); exit 5 for an undefined judge."""
        return plan_judging(
            suite,
            self.judge,
            named=named_judges(self.judges),
            sandbox=self.sandbox_mode(),
            timeout_ms=self.judge_timeout_ms,
            max_bytes=self.max_bytes,
            retries=self.retries,
            max_calls=self.max_judge_calls,
            max_cost_usd=self.scope.max_cost_usd,
            trials=self.trials,
            seed=self.seed,
            baseline=self.scope.baseline is not None,
            arms=self.scope.arms,
            env=self.env,
            retry_delay=self.retry_delay,
            fallback=self.judge_fallback,
        )

    def run_settings(self, **more: Any) -> RunSettings:
        """How each invocation runs."""
        return super().run_settings(
            retry_delay=self.retry_delay, keep_workspaces=self.keep_workspaces, **more
        )

    @property
    def profile(self) -> str | None:
        """The agent profile of the frontmatter check: --agent, else a built-in runner's agent."""
        return self.agent or builtin_agent(self.runner)

    def gates(self) -> GateSettings:
        """The gates and the bootstrap that judges them."""
        return GateSettings(self.min_trigger_f1, self.min_uplift, self.seed, self.bootstrap_samples)

    def settings(self) -> Settings:
        """The report's settings block."""
        return Settings(
            **self.shape(),
            bootstrap_samples=self.bootstrap_samples,
            min_trigger_f1=self.min_trigger_f1,
            min_uplift=self.min_uplift,
            compare=self.scope.compare,
            require_verified_isolation=self.require_verified_isolation,
        )


@dataclass(frozen=True, kw_only=True)
class RouteOptions(_RunOptions):
    """Everything `skill-evals route` takes. A routing run has no without arm:
    ``require_verified_isolation`` is said in a note and has no effect."""

    skills: tuple[Path, ...] = ()
    catalog_globs: tuple[str, ...] = ()
    min_accuracy: float | None = None
    min_skill_f1: float | None = None
    cwd: Path | None = None  # where --catalog globs start (default: the working directory)

    def catalog(self) -> Catalog:
        """The catalog given by --skill or --catalog."""
        return load_route_catalog(self.skills, self.catalog_globs, self.cwd)

    def settings(self) -> RouteSettings:
        """The report's settings."""
        return RouteSettings(
            **self.shape(),
            retries=self.retries,
            min_accuracy=self.min_accuracy,
            min_skill_f1=self.min_skill_f1,
        )
