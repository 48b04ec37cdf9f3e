#!/usr/bin/env bash
# Builds `det`, starts a local cluster (master + one agent; SQLite, data under
# $XDG_DATA_HOME/resolute), and runs the seed-001 workflow: log in, train the Iris classifier
# (examples/iris, Core API) to completion while following its logs, list its checkpoints and
# download the best one.
#
# The agent runs trials with the Python of .venv (scripts/python-env.sh: the upstream
# determined==0.38.1 harness, scikit-learn, and Debian's CPU torch when installed).
set -euo pipefail
cd "$(dirname "$0")/.."

# The web UI, embedded in the binary and served at the master's root, when Node.js is available.
if command -v npm >/dev/null; then
  scripts/webui.sh
else
  echo "npm not found: the master will serve a page saying how to build the web UI (scripts/webui.sh)"
fi
cargo build --release -p resolute-cli
det=$PWD/target/release/det
venv_python=$(scripts/python-env.sh .venv)
export DET_MASTER=${DET_MASTER:-http://localhost:8080}
port=${DET_MASTER##*:}

DET_PYTHON=$venv_python "$det" deploy local cluster-up --master-port "$port" --no-gpu
"$det" master info
echo "Web UI: $DET_MASTER/ (user determined, blank password)"
echo "" | "$det" user login determined
for _ in $(seq 1 50); do
  "$det" agent list | grep -q . && "$det" slot list | grep -qv FREE_NONE && break
  sleep 0.2
done
"$det" agent list
"$det" experiment create examples/iris/const.yaml examples/iris -f
id=$("$det" experiment list --json | "$venv_python" -c 'import json,sys; print(max(e["id"] for e in json.load(sys.stdin)))')
"$det" experiment describe "$id"
"$det" experiment list-checkpoints "$id" --best 1
uuid=$("$det" experiment list-checkpoints "$id" --best 1 --json | "$venv_python" -c 'import json,sys; print(json.load(sys.stdin)[0]["uuid"])')
"$det" checkpoint download "$uuid" -o "demo-checkpoint-$id"
ls "demo-checkpoint-$id"
echo
echo "The cluster is still running at $DET_MASTER. Stop it with: $det deploy local cluster-down"
