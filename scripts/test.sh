#!/usr/bin/env bash
# The test command of Resolute. Runs, in order:
#   0. scripts/webui.sh                       (the web UI: npm ci + vite build into webui/dist)
#   1. cargo build --workspace --bins          (the master/CLI binary, embedding the UI, and the
#                                               benchmark tool)
#   2. cargo test --workspace                  (unit tests and store conformance on SQLite and on
#                                               PostgreSQL: a scratch cluster from scripts/pg.sh)
#   3. tests/compat with RESOLUTE_COMPAT_DB=sqlite, then =postgres
#                                              (the upstream Determined 0.38.1 CLI/SDK against
#                                               target/debug/det master run)
#   4. scripts/schemathesis.sh                 (schemathesis over the OpenAPI document, SQLite)
# then prints each runner's summary and exits non-zero if any step failed.
#
# Needs: cargo, python3 (3.8+, with venv), PostgreSQL 15 server binaries, psql, curl, jq, iproute2, Node.js
# 18+ with npm and /usr/bin/chromium (the web UI's build and browser test); for the
# PyTorch example tests, Debian's python3-torch (without it they are skipped, with the reason).
# The Python environment .venv (scripts/python-env.sh: tests/compat/requirements.txt, all pinned,
# plus Debian torch through --system-site-packages) is created on first use and reused after; it is
# re-synced when the requirements file changes. It also runs the trials of the experiment tests.
# Work files (PostgreSQL cluster, logs) go to .ci-work/. Environment knobs: PYTHON (interpreter
# for the venv when there is no Debian torch), RESOLUTE_PG_PORT (scratch cluster port, default
# 55432), CARGO_TARGET_DIR, RESOLUTE_COMPAT_PYTEST_ARGS (extra pytest arguments, e.g. -m "not slow").
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
work=$repo/.ci-work
logs=$work/logs
mkdir -p "$logs"
rm -f "$logs"/*.log

banner() { printf '\n==== %s ====\n' "$*"; }

declare -a summary=()
failed=0
record() { # record NAME STATUS DETAIL
  local verdict=ok
  if [ "$2" -ne 0 ]; then verdict="FAILED (exit $2)"; failed=1; fi
  summary+=("$1: $verdict")
  [ -z "${3:-}" ] || summary+=("$3")
}

# --- 1. build -------------------------------------------------------------------------------
# The web UI first (npm ci + vite build into webui/dist), so the det binary embeds it; its
# end-to-end test (tests/compat/test_webui.py) then fails rather than skips when a piece is missing.
banner "web UI (scripts/webui.sh)"
set +e
scripts/webui.sh 2>&1 | tee "$logs/webui-build.log"
status=${PIPESTATUS[0]}
set -e
[ "$status" -eq 0 ] || record "web UI build (scripts/webui.sh): the det binary serves the placeholder page" "$status"
export RESOLUTE_REQUIRE_WEBUI=1
# The multi-host tests (tests/compat/netns.py) fail rather than skip when namespaces cannot be made.
export RESOLUTE_REQUIRE_NETNS=1

banner "cargo build --workspace --bins"
cargo build --workspace --bins
det_bin=${CARGO_TARGET_DIR:-$repo/target}/debug/det

# --- scratch PostgreSQL -----------------------------------------------------------------------
banner "PostgreSQL (scripts/pg.sh start .ci-work/pg)"
scripts/pg.sh start "$work/pg"
scripts/pg.sh reset "$work/pg"
trap 'scripts/pg.sh stop "$work/pg" || true' EXIT
pg_url=$(scripts/pg.sh url "$work/pg")
export RESOLUTE_TEST_POSTGRES_URL=$pg_url
export RESOLUTE_REQUIRE_POSTGRES=1
echo "RESOLUTE_TEST_POSTGRES_URL=$pg_url"

# --- Python environment -------------------------------------------------------------------------
# One venv runs the compat suite and, through `det agent run --python`, the trials it starts; the
# cargo tests of checkpoint storage start its moto_server (an S3-compatible server), so it comes first.
banner "Python environment (scripts/python-env.sh .venv)"
set +e
venv_python=$(scripts/python-env.sh "$repo/.venv")
status=$?
set -e
dbs=(sqlite postgres)
if [ "$status" -eq 0 ]; then
  "$(dirname "$venv_python")/det" --version
else
  # Without the venv the compat suite cannot run; say so in the summary rather than stop here.
  record "Python environment (scripts/python-env.sh): compat suite not run" "$status"
  df -h "$repo" 2>/dev/null || true
  dbs=()
fi

# The TensorFlow Keras examples' trials (tests/compat/test_keras.py) run in a venv of their own
# (scripts/keras-venv.sh: tensorflow-cpu 2.15.1, ~90 s, ~1.6 GB); the bare harness venv of
# tests/compat/test_new_user.py (scripts/bare-venv.sh, ~45 s) is built by that test.
if [ ${#dbs[@]} -gt 0 ]; then
  banner "Keras trial environment (scripts/keras-venv.sh .ci-work/keras-venv)"
  if keras_python=$(scripts/keras-venv.sh "$work/keras-venv"); then
    export RESOLUTE_KERAS_PYTHON=$keras_python
  else
    record "Keras environment (scripts/keras-venv.sh): the Keras example tests will skip" 1
  fi
fi

# --- 2. cargo test --------------------------------------------------------------------------
banner "cargo test --workspace"
set +e
cargo test --workspace --no-fail-fast 2>&1 | tee "$logs/cargo-test.log"
status=${PIPESTATUS[0]}
set -e
results=$(grep -E '^test result:' "$logs/cargo-test.log" || true)
totals=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i } }
  END { printf "%d passed, %d failed, %d ignored", p, f, g }' "$logs/cargo-test.log")
if [ "$status" -eq 0 ] && [ -z "$results" ]; then
  echo "cargo test ran no test binaries" >&2
  status=1
fi
# The test databases (~8 MB each, over a hundred) are not needed by the compat suite, which makes its own.
scripts/pg.sh reset "$work/pg" || true
record "cargo test --workspace ($totals in $(printf '%s\n' "$results" | grep -c . || true) test suites)" "$status" "$results"

# --- 3. compatibility suite ---------------------------------------------------------------
for db in "${dbs[@]}"; do
  banner "compat suite, $db (RESOLUTE_COMPAT_DB=$db .venv/bin/python -m pytest tests/compat ${RESOLUTE_COMPAT_PYTEST_ARGS:-})"
  set +e
  # shellcheck disable=SC2086 # RESOLUTE_COMPAT_PYTEST_ARGS is a list of pytest arguments.
  RESOLUTE_COMPAT_DB=$db RESOLUTE_DET_BIN=$det_bin RESOLUTE_TRIAL_PYTHON=$venv_python \
    "$venv_python" -m pytest tests/compat ${RESOLUTE_COMPAT_PYTEST_ARGS:-} 2>&1 |
    tee "$logs/compat-$db.log"
  status=${PIPESTATUS[0]}
  set -e
  # pytest exits 5 when it collected no tests: a failure here, never a silent pass.
  [ "$status" -ne 5 ] || echo "pytest collected no tests" >&2
  last=$(grep -E '^=+ .* in [0-9.]+s' "$logs/compat-$db.log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//' || true)
  record "compat suite on $db: ${last:-no pytest summary line}" "$status"
done

# --- 4. schemathesis ----------------------------------------------------------------------------
# Schemathesis over the master's OpenAPI document, against a master of its own (SQLite) with seeded
# data: no 5xx and every response as the document declares it (scripts/schemathesis.sh).
if [ ${#dbs[@]} -gt 0 ]; then
  banner "schemathesis (scripts/schemathesis.sh)"
  set +e
  RESOLUTE_DET_BIN=$det_bin RESOLUTE_TRIAL_PYTHON=$venv_python scripts/schemathesis.sh 2>&1 | tee "$logs/schemathesis.log"
  status=${PIPESTATUS[0]}
  set -e
  st_cases=$(grep -E '^ *[0-9]+ generated' "$logs/schemathesis.log" | tail -n 1 | sed -E 's/^ +//' || true)
  last=$(grep -E '^=+ .* in [0-9.]+s' "$logs/schemathesis.log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//' || true)
  record "schemathesis: ${st_cases:-no schemathesis summary}; pytest: ${last:-no pytest summary line}" "$status"
fi

# --- summary ------------------------------------------------------------------------------------
banner "summary"
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "FAILED (logs in .ci-work/logs)"
  exit 1
fi
echo "ALL PASSED"
