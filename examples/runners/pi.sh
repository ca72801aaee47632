#!/usr/bin/env sh
# The same suite through pi (`pi` on PATH; a provider key such as ANTHROPIC_API_KEY set).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
exec skill-evals test \
  --skill "$here/skills/refund-policy" \
  --cases "$here/skills/refund-policy/evals/cases.jsonl" \
  --runner "skill-evals runner pi ${MODEL:+--model $MODEL}" \
  --trials 3 --timeout-ms 180000 --min-trigger-f1 0.9 \
  --report skill-evals-report/refund-policy.pi.json "$@"
