#!/bin/bash
# bench/soak_sampled.sh OUTDIR BENCH DET [resolute-bench soak options…]
# Runs `--mode soak` and, beside it, bench/memsample.py on the master it starts (every 15 s) and
# the load average (every 30 s). Writes OUTDIR/bench.txt, OUTDIR/mem.txt, OUTDIR/load.txt.
set -u
out=$1; bench=$2; det=$3; shift 3
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
"$bench" "$det" --mode soak "$@" >"$out/bench.txt" 2>&1 &
bpid=$!
mpid=""
for _ in $(seq 1 200); do
  mpid=$(pgrep -P "$bpid" -f "master" | head -1)
  [ -n "$mpid" ] && break
  sleep 0.1
done
[ -n "$mpid" ] && python3 "$here/memsample.py" "$mpid" --every 15 >"$out/mem.txt" 2>&1 &
spid=$!
( while kill -0 "$bpid" 2>/dev/null; do echo "$(date -u +%T) $(cat /proc/loadavg)"; sleep 30; done ) >"$out/load.txt" &
wait "$bpid"; rc=$?
kill "$spid" 2>/dev/null
echo "bench exit $rc (master pid $mpid)" >>"$out/bench.txt"
