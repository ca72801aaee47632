#!/usr/bin/env sh
# Run the refund-policy suite through the real Claude Code, isolated per invocation.
# Needs: the `claude` CLI on PATH (npm install -g @anthropic-ai/claude-code@2.1.328, Node ≥ 22) and ANTHROPIC_API_KEY.
# The skill is offered only in the `with` variant; bugfix-workflow-like neighbours passed with
# --with-skill are offered in both, so routing is tested against competition.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
exec skill-evals test \
  --skill "$here/skills/refund-policy" \
  --cases "$here/skills/refund-policy/evals/cases.jsonl" \
  --runner "skill-evals runner claude-code --model ${MODEL:-claude-sonnet-4-5} --max-turns 4" \
  --trials 3 --jobs 4 --timeout-ms 120000 \
  --min-trigger-f1 0.9 --min-uplift 0.05 \
  --record "${TMPDIR:-/tmp}/refund-policy.observations.jsonl" \
  --report skill-evals-report/refund-policy.json "$@"
