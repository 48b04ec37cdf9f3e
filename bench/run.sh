#!/usr/bin/env bash
# Benchmarks the release master on both backends: SQLite, then PostgreSQL (a scratch cluster from
# scripts/pg.sh in .ci-work/bench-pg, stopped afterwards). Extra arguments go to resolute-bench
# (e.g. --seconds 5 --clients 25). Output: markdown tables on stdout, also saved to
# .ci-work/bench/results.md.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

cargo build --release -p resolute-cli -p resolute-bench
target=${CARGO_TARGET_DIR:-$repo/target}/release
out=.ci-work/bench
mkdir -p "$out"

scripts/pg.sh start .ci-work/bench-pg
trap 'scripts/pg.sh stop .ci-work/bench-pg || true' EXIT

{
  echo "# Resolute master benchmark ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -m))"
  echo
  "$target/resolute-bench" "$target/det" --db sqlite "$@"
  echo
  "$target/resolute-bench" "$target/det" --db postgres --pg-url "$(scripts/pg.sh url .ci-work/bench-pg)" "$@"
} | tee "$out/results.md"
