#!/usr/bin/env bash
# Runs the hyperparameter-search benchmark: builds the Rust driver, creates the venv (once), checks
# that the Rust and Python implementations of the synthetic function agree, then runs every method
# and writes bench/hpo/results.md. Extra arguments go to run.py (e.g. --seeds 20 --ray-real-seeds 0).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${HPO_VENV:-$repo/.ci-work/hpovenv}
cd "$repo"
cargo build --release -p resolute-searcher --examples
binary=${CARGO_TARGET_DIR:-$repo/target}/release/examples/hpo_bench
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$here/requirements.txt"
fi
cd "$here"
"$venv/bin/python" test_agreement.py "$binary"
"$venv/bin/python" run.py --binary "$binary" "$@"
