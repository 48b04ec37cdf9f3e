#!/usr/bin/env bash
# TLS cost: requests/s and p95 latency of an authenticated `GET /api/v1/me`, against two masters
# started here from the same binary on the same machine — one plain HTTP, one with
# `security.tls.cert`/`key` (a self-signed P-256 certificate made with openssl) — under the same
# wrk load: keep-alive connections (TLS paid once per connection) and a new connection per request
# (a full handshake each time).
#
#   bench/tls_cost.sh [DET_BINARY] [SECONDS] [CONNECTIONS] [THREADS]
#
# Defaults: target/release/det, 20 s, 32 connections, 2 threads. Needs wrk, openssl, curl, jq.
set -euo pipefail
det=${1:-target/release/det}
seconds=${2:-20}
connections=${3:-32}
threads=${4:-2}
for tool in wrk openssl curl jq; do
  command -v "$tool" >/dev/null || { echo "tls_cost.sh needs $tool (apt-get install $tool)" >&2; exit 2; }
done
[ -x "$det" ] || { echo "no det binary at $det (cargo build --release -p resolute-cli)" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME URL-SCHEME [extra flags...]: echoes the base URL once the master answers.
start() {
  local name=$1 scheme=$2; shift 2
  local port; port=$(free_port)
  "$det" master run --port "$port" --listen-address 127.0.0.1 --data-dir "$work/$name" "$@" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  local url="$scheme://localhost:$port"
  for _ in $(seq 1 300); do
    if curl -sf --cacert "$work/cert.pem" "$url/info" >/dev/null; then echo "$url"; return; fi
    sleep 0.1
  done
  echo "master $name did not start; log:" >&2; cat "$work/$name.log" >&2; exit 1
}

token() {
  curl -sf --cacert "$work/cert.pem" -H 'Content-Type: application/json' \
    -d '{"username":"admin","password":""}' "$1/api/v1/auth/login" | jq -r .token
}

cat >"$work/report.lua" <<'LUA'
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT %.0f %.2f %.2f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, summary.requests, errors))
end
LUA

plain=$(start plain http)
tls=$(start tls https --security-tls-cert "$work/cert.pem" --security-tls-key "$work/key.pem")

run() { # LABEL URL TOKEN [extra wrk args]
  local label=$1 url=$2 tok=$3; shift 3
  local line
  line=$(wrk -t"$threads" -c"$connections" -d"${seconds}s" -s "$work/report.lua" \
    -H "Authorization: Bearer $tok" "$@" "$url/api/v1/me" | grep '^RESULT')
  read -r _ rps p50 p95 total errors <<<"$line"
  printf '| %-34s | %9s | %8s | %8s | %9s | %6s |\n' "$label" "$rps" "$p50" "$p95" "$total" "$errors"
}

printf '| %-34s | %9s | %8s | %8s | %9s | %6s |\n' "GET /api/v1/me, $connections conns" "req/s" "p50 ms" "p95 ms" "requests" "errors"
printf '|%s|%s|%s|%s|%s|%s|\n' "------------------------------------" "-----------" "----------" "----------" "-----------" "--------"
plain_token=$(token "$plain")
tls_token=$(token "$tls")
run "HTTP, keep-alive" "$plain" "$plain_token"
run "HTTPS, keep-alive" "$tls" "$tls_token"
run "HTTP, new connection per request" "$plain" "$plain_token" -H "Connection: close"
run "HTTPS, new connection per request" "$tls" "$tls_token" -H "Connection: close"
