#!/usr/bin/env bash
# Builds `det`, starts a local cluster (SQLite, data under $XDG_DATA_HOME/resolute) and walks through
# the user workflow of the seed documents: log in, create a user, list users.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p resolute-cli
det=target/release/det
export DET_MASTER=${DET_MASTER:-http://localhost:8080}
port=${DET_MASTER##*:}

"$det" deploy local cluster-up --master-port "$port"
"$det" master info
echo "" | "$det" user login admin
"$det" user whoami
if ! "$det" user list --all | grep -qw demo-user; then
  "$det" user create demo-user --password 'DemoPass1'
fi
"$det" user list
echo
echo "The master is still running at $DET_MASTER. Stop it with: $det deploy local cluster-down"
