#!/bin/sh
# A runner for cache and cost tests (POSIX sh: it starts in a few milliseconds): answers
# deterministically and counts its invocations.
# - Appends "case trial arm" to $COUNTING_LOG for every invocation (named by the environment,
#   not the command line: a command-line path would enter the cache key).
# - Loads the skill $COUNTING_SKILL (default refund-policy) in the with variant when the prompt
#   mentions "refund".
# - The task's exit code is 0 when the offered SKILL.md contains "helps", else 1 (without: 1).
# - Reports meta.costUsd 0.01, inputTokens 100, outputTokens 20.
# - $COUNTING_FAIL_CASE: exit 3 (a runner failure) for that case id.
prompt=$(cat)
if [ -n "${COUNTING_LOG:-}" ]; then
  printf '%s %s %s\n' "$EVALGATE_SKILL_CASE_ID" "$EVALGATE_SKILL_TRIAL" \
    "${SKILL_EVALS_ARM:-$EVALGATE_SKILL_VARIANT}" >>"$COUNTING_LOG"
fi
if [ "$EVALGATE_SKILL_CASE_ID" = "${COUNTING_FAIL_CASE:-}" ]; then
  exit 3
fi
skills='[]'
code=1
if [ "$EVALGATE_SKILL_VARIANT" = with ]; then
  case "$prompt" in *refund*) skills="[\"${COUNTING_SKILL:-refund-policy}\"]" ;; esac
  if grep -q helps "$EVALGATE_SKILL_DIR/SKILL.md"; then code=0; fi
fi
printf '{"variant":"%s","invokedSkills":%s,"output":"answer","exitCode":%s,"meta":{"costUsd":0.01,"inputTokens":100,"outputTokens":20}}\n' \
  "$EVALGATE_SKILL_VARIANT" "$skills" "$code"
