#!/usr/bin/env python3
"""Task start-up: `det cmd run true` (submit → exit seen by the CLI) with our CLI and the upstream
0.38.1 CLI, and notebook start → ready (POST /api/v1/notebooks → the task's allocation reports
`isReady`, i.e. JupyterLab printed that it runs), against a local master and agent (both started
here, SQLite, loopback).

    bench/cmd_run.py [--det target/release/det] [--runs 20] [--python .venv/bin/python]

Prints the median and p90 wall time of each client's whole `det cmd run true` invocation
(process start, login-token load, POST /api/v1/commands, the agent starting `true`, the log
stream ending on the task's end). Upstream's target with Docker: seconds; ours: < 300 ms.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not answer in {timeout} s")


def timed(cmd, env) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "exited successfully" not in proc.stdout:
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed


def notebook_start(port: int, work: Path, runs: int) -> None:
    """POST /api/v1/notebooks → allocation ready, then kill; median over `runs`."""
    import json

    base = f"http://127.0.0.1:{port}"

    def call(method: str, path: str, body=None, token=None):
        req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        return json.loads(urllib.request.urlopen(req, timeout=30).read() or b"{}")

    token = call("POST", "/api/v1/auth/login", {"username": "determined", "password": ""})["token"]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        nb = call("POST", "/api/v1/notebooks", {"config": {}}, token)["notebook"]["id"]
        while True:
            allocations = call("GET", f"/api/v1/tasks/{nb}", token=token)["task"].get("allocations", [])
            if allocations and allocations[0].get("isReady"):
                break
            time.sleep(0.02)
        samples.append(time.perf_counter() - start)
        call("POST", f"/api/v1/notebooks/{nb}/kill", {}, token)
        time.sleep(1)
    samples.sort()
    print(f"notebook start → ready      median {statistics.median(samples) * 1000:7.1f} ms   max {samples[-1] * 1000:7.1f} ms   ({runs} runs)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--det", default=str(REPO / "target" / "release" / "det"))
    ap.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--notebooks", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cmd-bench-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DET_")}
    env["DET_DEBUG_CONFIG_PATH"] = str(work / "client")
    env["DET_MASTER"] = f"127.0.0.1:{port}"
    master = subprocess.Popen([args.det, "master", "run", "--port", str(port), "--data-dir", str(work / "data")],
                              stdout=open(work / "master.log", "w"), stderr=subprocess.STDOUT)
    agent = None
    try:
        wait_http(f"http://127.0.0.1:{port}/info")
        agent = subprocess.Popen([args.det, "agent", "run", "--master-host", "127.0.0.1", "--master-port", str(port),
                                  "--agent-id", "bench", "--artificial-slots", "2", "--python", args.python],
                                 stdout=open(work / "agent.log", "w"), stderr=subprocess.STDOUT)
        upstream = str(Path(args.python).parent / "det")
        subprocess.run([upstream, "user", "login", "determined"], input="\n", env=env, check=True, capture_output=True, text=True)
        time.sleep(2)  # the agent registers
        for name, cmd in [("ours", [args.det, "cmd", "run", "true"]), ("upstream 0.38.1", [upstream, "cmd", "run", "true"])]:
            timed(cmd, env)  # warm-up
            samples = sorted(timed(cmd, env) for _ in range(args.runs))
            p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
            print(f"det cmd run true, {name:16} median {statistics.median(samples) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   ({args.runs} runs)")
        notebook_start(port, work, args.notebooks)
    finally:
        for p in (agent, master):
            if p:
                p.terminate()
                p.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
