"""The real Claude Code in a contained sandbox: the scripted model, only where the skill is
offered (the with arm), has the agent fetch a URL the skill names with a Bash command. The
request leaves through the sandbox's proxy variables, is refused by the egress proxy before any
connection (nothing leaves the machine), and becomes a finding in the report; the model itself
is reached through the credential proxy with streaming, in both arms."""

from __future__ import annotations

import json
import secrets
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.e2e import claude_code_runner, run_test_cli, without_claude_settings
from tests.agents.fake_anthropic import FakeAnthropic
from tests.conftest import assert_valid_report, write_jsonl, write_skill

CASES = 10
URL = "http://docs.refund-rules.test/policy"
FETCH = (
    'python3 -c "import urllib.request as u\n'
    "try: u.urlopen('" + URL + "', timeout=10)\n"
    "except Exception as e: print('fetch', type(e).__name__, getattr(e, 'code', ''))\""
)


@pytest.fixture(scope="module")
def contained_claude(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if shutil.which("bwrap") is None or not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap is not installed here (apt-get install -y bubblewrap)")
    root = tmp_path_factory.mktemp("claude-network")
    skill = write_skill(
        root / "skills",
        description="Answers refund questions about returns, receipts and store credit.",
        body=f"# Refunds\n\nThe full rules are at {URL}.\n",
    )
    rows = [
        {"id": f"c{i}", "prompt": f"Can I get a refund for order {i}?", "expectTrigger": True}
        for i in range(CASES)
    ]
    cases = write_jsonl(root / "cases.jsonl", rows)
    with FakeAnthropic(run=FETCH, run_if_offered="refund-policy") as fake:
        env = without_claude_settings() | fake.env()
        env["ANTHROPIC_API_KEY"] = "sk-ant-" + secrets.token_hex(20)
        done = run_test_cli(
            skill, cases, claude_code_runner(),
            *("--trials", "1", "--jobs", "2", "--timeout-ms", "120000", "--sandbox", "required"),
            *("--report", str(root / "report.json"), "--record", str(root / "rec.jsonl")),
            env=env, cwd=root,
        )  # fmt: skip
        yield {
            "done": done,
            "report": json.loads((root / "report.json").read_text(encoding="utf-8")),
            "records": [json.loads(x) for x in (root / "rec.jsonl").read_text().splitlines()],
            "fake": fake,
        }


@pytest.mark.agents
def test_a_url_fetched_only_with_the_skill_is_a_finding(contained_claude: dict[str, Any]) -> None:
    report, done = contained_claude["report"], contained_claude["done"]
    assert_valid_report(report)
    assert report["runner"]["failures"] == [], done.stderr[-2000:]
    assert report["sandbox"]["mode"] == "bwrap" and report["sandbox"]["network"] == "model"
    findings = [
        (f["kind"], f["host"], f["port"], f["arms"]) for f in report["behaviour"]["findings"]
    ]
    assert findings == [
        ("new-destination", "docs.refund-rules.test", 80, ["with"]),
        ("refused-destination", "docs.refund-rules.test", 80, ["with"]),
    ]
    assert any(
        "behaviour: new destination docs.refund-rules.test:80" in m for m in report["messages"]
    )
    # The fake saw the fetch refused (403) from inside the agent's Bash tool.
    assert any("fetch HTTPError 403" in text for text in contained_claude["fake"].tool_results)


@pytest.mark.agents
def test_the_model_is_reached_through_the_proxy_in_both_arms(
    contained_claude: dict[str, Any],
) -> None:
    arms = contained_claude["report"]["behaviour"]["arms"]
    for arm in ("with", "without"):
        model = [d for d in arms[arm]["contacted"] if d["host"] == "127.0.0.1"]
        assert model and model[0]["count"] >= CASES, arms
    for record in contained_claude["records"]:
        kinds = {item["kind"] for item in record.get("network", [])}
        assert "model" in kinds
        if record["variant"] == "without":
            assert kinds == {"model"}  # nothing but the model without the skill
