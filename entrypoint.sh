#!/usr/bin/env bash
# The action's entry point: a private venv under $RUNNER_TEMP with the package installed from
# $GITHUB_ACTION_PATH (so the pinned tag is the version), then `skill-evals ci` with the inputs.
# Inputs arrive only as INPUT_* environment variables and are passed as separate arguments —
# never evaluated as shell code. The step exits with skill-evals' own exit code.
set -euo pipefail

# An ::error workflow command whose message is escaped as GitHub requires (%, CR, LF), so an
# input quoted in it cannot end the command and start another.
fail() {
  local message="skill-evals action: $*"
  message="${message//'%'/%25}"
  message="${message//$'\r'/%0D}"
  message="${message//$'\n'/%0A}"
  echo "::error::$message"
  exit 5
}

action_path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set (run this through action.yml)}"
python="${INPUT_PYTHON:-python3}"
command -v -- "$python" >/dev/null 2>&1 || fail "python: '$python' not found on PATH"

# `entrypoint.sh cache-key`: the cache directory and the actions/cache keys, as step outputs.
# The key prefers caches of the same runner, config and shard (`only`, `report-dir`);
# restore-keys fall back
# to any earlier skill-evals cache (entries are keyed by content, so reusing one is safe). Each
# save needs a key of its own: the run id, attempt and job end it.
if [ "${1:-}" = "cache-key" ]; then
  config="${INPUT_CONFIG:-}"
  if [ -z "$config" ]; then
    for candidate in .skill-evals.yml .skill-evals.yaml; do
      if [ -f "$candidate" ]; then config="$candidate"; break; fi
    done
  fi
  scope="$("$python" - "${INPUT_RUNNER:-}" "$config" <<'PY'
import hashlib, os, sys
digest = hashlib.sha256(sys.argv[1].encode("utf-8", "surrogateescape") + b"\0")
path = sys.argv[2]
if path and os.path.isfile(path):
    with open(path, "rb") as handle:
        digest.update(handle.read(50_000_000))
print(digest.hexdigest()[:16])
PY
)"
  # The shard: `only` and `report-dir`, so two uses of the action in one job save apart.
  shard="$("$python" -c 'import hashlib, sys; print(hashlib.sha256("\0".join(sys.argv[1:]).encode("utf-8", "surrogateescape")).hexdigest()[:8])' "${INPUT_ONLY:-}" "${INPUT_REPORT_DIR:-}")"
  os="${RUNNER_OS:-unknown}"
  os="${os//[^A-Za-z0-9]/-}"
  prefix="skill-evals-cache-v1-$os"
  run="${GITHUB_RUN_ID:-0}-${GITHUB_RUN_ATTEMPT:-1}-${GITHUB_JOB:-job}"
  run="${run//[^A-Za-z0-9._-]/-}"
  dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/skill-evals-cache"
  case "$dir" in *$'\n'* | *$'\r'*) fail "cache: the runner's temporary directory must be one line" ;; esac
  {
    echo "dir=$dir"
    echo "key=$prefix-$scope-$shard-$run"
    echo "restore-keys<<SKILL_EVALS_EOF"
    echo "$prefix-$scope-$shard-"
    echo "$prefix-$scope-"
    echo "$prefix-"
    echo "SKILL_EVALS_EOF"
  } >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
  exit 0
fi

# `entrypoint.sh sandbox-setup`: bubblewrap installed (apt) when missing, and allowed to create
# user namespaces where Ubuntu (23.10 and later) restricts them: an AppArmor profile for
# /usr/bin/bwrap, else the sysctl set to 0. Needs sudo; whatever fails leaves the decision
# to the gate (auto: unsandboxed with a warning; required: exit 7).
if [ "${1:-}" = "sandbox-setup" ]; then
  sudo_=()
  [ "$(id -u)" -ne 0 ] && sudo_=(sudo -n)
  if ! command -v bwrap >/dev/null 2>&1; then
    "${sudo_[@]}" apt-get install -y bubblewrap >/dev/null ||
      { "${sudo_[@]}" apt-get update -qq >/dev/null && "${sudo_[@]}" apt-get install -y bubblewrap >/dev/null; } ||
      { echo "::warning::skill-evals: cannot install bubblewrap; runs are not sandboxed"; exit 0; }
  fi
  restrict=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
  if [ -r "$restrict" ] && [ "$(cat "$restrict")" = "1" ]; then
    profile=/etc/apparmor.d/skill-evals-bwrap
    bwrap_path="$(command -v bwrap)"
    if command -v apparmor_parser >/dev/null 2>&1 &&
      printf 'abi <abi/4.0>,\ninclude <tunables/global>\nprofile skill-evals-bwrap %s flags=(unconfined) {\n  userns,\n}\n' "$bwrap_path" |
      "${sudo_[@]}" tee "$profile" >/dev/null &&
      "${sudo_[@]}" apparmor_parser -r "$profile"; then
      :
    else
      "${sudo_[@]}" sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0 ||
        echo "::warning::skill-evals: cannot allow bubblewrap's user namespaces; runs are not sandboxed"
    fi
  fi
  exit 0
fi

# One venv per action path; hashed with Python (sha256sum is GNU coreutils, not on every image).
key="$("$python" -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:12])' "$action_path")"
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/skill-evals-venv-$key"
if [ ! -x "$venv/bin/skill-evals" ]; then
  echo "::group::Install skill-evals from $action_path"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$action_path"
  echo "::endgroup::"
fi

out="${INPUT_REPORT_DIR:-skill-evals-report}"
case "$out" in *$'\n'* | *$'\r'*) fail "report-dir: must be one line" ;; esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac

args=(ci --out "$out")
[ -n "${INPUT_CONFIG:-}" ] && args+=(--config "$INPUT_CONFIG")
[ -n "${INPUT_BASE:-}" ] && args+=(--base "$INPUT_BASE")
[ -n "${INPUT_RUNNER:-}" ] && args+=(--runner "$INPUT_RUNNER")
[ -n "${INPUT_TRIALS:-}" ] && args+=(--trials "$INPUT_TRIALS")
[ -n "${INPUT_JOBS:-}" ] && args+=(--jobs "$INPUT_JOBS")
[ -n "${INPUT_MIN_TRIGGER_F1:-}" ] && args+=(--min-trigger-f1 "$INPUT_MIN_TRIGGER_F1")
[ -n "${INPUT_MIN_UPLIFT:-}" ] && args+=(--min-uplift "$INPUT_MIN_UPLIFT")
[ -n "${INPUT_COMPARE:-}" ] && args+=(--compare "$INPUT_COMPARE")
[ -n "${INPUT_IMPROVE:-}" ] && args+=(--improve "$INPUT_IMPROVE")
[ -n "${INPUT_PROPOSER:-}" ] && args+=(--proposer "$INPUT_PROPOSER")
# The sandbox: the input, else required on Linux (the step before made bubblewrap usable).
# SKILL_EVALS_SANDBOX_FROM_ACTION lets the report name the input rather than a flag.
if [ -n "${INPUT_SANDBOX:-}" ]; then
  args+=(--sandbox "$INPUT_SANDBOX")
  export SKILL_EVALS_SANDBOX_FROM_ACTION=input
elif [ "${RUNNER_OS:-$(uname -s)}" = "Linux" ]; then
  args+=(--sandbox required)
  export SKILL_EVALS_SANDBOX_FROM_ACTION=default
fi
[ -n "${INPUT_NETWORK:-}" ] && args+=(--network "$INPUT_NETWORK")
# A boolean input is true or false (any case): `yes`, `on` and the like are refused by name,
# never read as false (upload-artifact: yes once meant no upload, unsaid).
flag() { # NAME VALUE: true or false in $REPLY, else the run stops naming the input
  REPLY="${2,,}"
  case "$REPLY" in
    true | false) ;;
    *) fail "$1: expected true or false (yes, no, on and off are not read as booleans)" ;;
  esac
}
flag trust-pr-config "${INPUT_TRUST_PR_CONFIG:-false}"
[ "$REPLY" = true ] && args+=(--trust-pr-config)
flag skip-on-missing-secrets "${INPUT_SKIP_ON_MISSING_SECRETS:-false}"
[ "$REPLY" = true ] && args+=(--skip-on-missing-secrets)
flag cache "${INPUT_CACHE:-false}"
[ "$REPLY" = true ] && [ -n "${INPUT_CACHE_DIR:-}" ] && args+=(--cache "$INPUT_CACHE_DIR")
flag upload-artifact "${INPUT_UPLOAD_ARTIFACT:-true}" # the upload step reads the input itself

# `only`: names or paths separated by commas, spaces or newlines, passed as one value:
# skill-evals splits it unless it is exactly one skill's name or path (a matrix job's name
# may hold a space or a comma).
only="${INPUT_ONLY:-}"
if [ -n "$only" ]; then
  args+=(--only "$only")
fi

case "${INPUT_COMMENT:-auto}" in
  true) args+=(--comment) ;;
  false) ;;
  auto)
    case "${GITHUB_EVENT_NAME:-}" in
      pull_request | pull_request_target) args+=(--comment) ;;
    esac
    ;;
  *) fail "comment: expected true, false or auto" ;;
esac

# The upload step's artifact name: the input as given, else derived from `only`, with the
# characters upload-artifact refuses (/ \ : < > | * ? " and line breaks) and blanks replaced —
# `only` may hold paths such as skills/alpha.
artifact="${INPUT_ARTIFACT_NAME:-}"
if [ -z "$artifact" ]; then
  artifact="skill-evals-report"
  if [ -n "$only" ]; then
    artifact="skill-evals-${only//[^A-Za-z0-9._-]/-}"
  fi
fi
artifact="${artifact//[$'\r\n']/-}" # one line in $GITHUB_OUTPUT, whatever the input held

# The venv's bin first on PATH, so `--runner 'skill-evals runner …'` uses this very version.
export PATH="$venv/bin:$PATH"
set +e
skill-evals "${args[@]}"
code=$?
set -e

if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "artifact-name=$artifact" >>"$GITHUB_OUTPUT"
  # The gate writes its outputs itself; when it stopped before that (a usage error), say so.
  # (Its own step's GITHUB_OUTPUT, not a report.json that an earlier step may have left.)
  if ! grep -q '^status=' "$GITHUB_OUTPUT"; then
    {
      echo "status=invalid"
      echo "changed-skills=[]"
      echo "report-dir=$out"
      echo "junit=$out/junit.xml"
      echo "sandboxed=false"
    } >>"$GITHUB_OUTPUT"
  fi
  echo "exit-code=$code" >>"$GITHUB_OUTPUT"
fi
exit "$code"
