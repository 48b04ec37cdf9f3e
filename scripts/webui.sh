#!/usr/bin/env bash
# Builds the web UI (webui/: npm ci, then tsc + vite build into webui/dist), which the next
# `cargo build` embeds into the det binary (crates/master/build.rs). Needs Node.js 18+ and npm.
# Re-running is cheap: `npm ci` is skipped while node_modules matches package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../webui"
if ! command -v npm >/dev/null; then
  echo "scripts/webui.sh: npm not found; install Node.js 18+ (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund
fi
npm run build
