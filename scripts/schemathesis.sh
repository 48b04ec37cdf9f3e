#!/usr/bin/env bash
# Schemathesis over the master's OpenAPI document (/api/v1/openapi.json): starts a master of its own
# (SQLite, fresh data dir) and an agent, seeds an experiment whose trial reports metrics, a template
# and a command, then runs schemathesis as the admin (tests/compat/test_schemathesis.py, config in
# tests/compat/schemathesis/schemathesis.toml). Fails on any 5xx but a documented 501 and on any
# response the document does not describe. Needs target/debug/det (cargo build --bins) and the
# venv (scripts/python-env.sh).
#
#   scripts/schemathesis.sh [extra pytest arguments]
#
# Knobs: RESOLUTE_SCHEMATHESIS_MAX_EXAMPLES (examples per operation, default 12),
# RESOLUTE_SCHEMATHESIS_SEED (default 1), RESOLUTE_DET_BIN, RESOLUTE_TRIAL_PYTHON.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
python=${RESOLUTE_TRIAL_PYTHON:-$repo/.venv/bin/python}
export RESOLUTE_SCHEMATHESIS=1
export RESOLUTE_COMPAT_DB=sqlite
export RESOLUTE_DET_BIN=${RESOLUTE_DET_BIN:-${CARGO_TARGET_DIR:-$repo/target}/debug/det}
export RESOLUTE_TRIAL_PYTHON=$python
exec "$python" -m pytest tests/compat/test_schemathesis.py -s "$@"
