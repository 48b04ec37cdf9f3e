"""Notebooks end to end: real JupyterLab started by the agent, reached through the master's
`/proxy/<id>/` with the user's session — HTTP and a kernel's websocket —, only by its owner or an
admin; started with the upstream 0.38.1 CLI and with ours."""

import json
import re
import uuid

import requests
import websocket

from conftest import Agent, DetCli, Master
from experiments import wait_for


def token(master: Master, user: str, password: str = "") -> str:
    r = requests.post(f"{master.url}/api/v1/auth/login", json={"username": user, "password": password}, timeout=10)
    r.raise_for_status()
    return r.json()["token"]


def start_upstream(det: DetCli, *args: str) -> str:
    out = det.ok("notebook", "start", "--no-browser", *args, timeout=180)
    assert "is ready" in out, out
    return re.search(r"Launched notebook \(id: ([0-9a-f-]+)", out).group(1)


def run_in_kernel(master: Master, bearer: str, nb: str, code: str) -> str:
    """Starts a kernel through the proxy, runs `code` over its websocket, returns its stdout."""
    base = f"{master.url}/proxy/{nb}"
    headers = {"Authorization": f"Bearer {bearer}"}
    kernel = requests.post(f"{base}/api/kernels", json={"name": "python3"}, headers=headers, timeout=30)
    kernel.raise_for_status()
    ws_url = base.replace("http://", "ws://") + f"/api/kernels/{kernel.json()['id']}/channels"
    ws = websocket.create_connection(ws_url, header=[f"Authorization: Bearer {bearer}"], timeout=60)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex, "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False},
        }))
        out = ""
        while True:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return out
    finally:
        ws.close()


def test_notebook_serves_through_the_proxy_and_runs_code(det: DetCli, master: Master, agent: Agent) -> None:
    det.login("determined")
    nb = start_upstream(det)
    bearer = token(master, "determined")
    status = requests.get(f"{master.url}/proxy/{nb}/api/status", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert status.status_code == 200, status.text
    # The `auth` cookie works as the browser sends it.
    lab = requests.get(f"{master.url}/proxy/{nb}/lab", cookies={"auth": bearer}, timeout=30)
    assert lab.status_code == 200 and "JupyterLab" in lab.text
    assert run_in_kernel(master, bearer, nb, "print(6 * 7)").strip() == "42"
    assert nb in det.ok("notebook", "list")
    det.ok("notebook", "kill", nb)
    # Listings show live notebooks only, as upstream's.
    wait_for("the notebook to end", lambda: nb not in det.ok("notebook", "list"), timeout=60)
    gone = requests.get(f"{master.url}/proxy/{nb}/api/status", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert gone.status_code == 404, gone.text


def test_only_the_owner_or_an_admin_reach_a_notebook(det: DetCli, master: Master, agent: Agent, unique: str) -> None:
    det.login("admin")
    det.ok("user", "create", f"eve{unique}", "--password", "EvePass1x")
    det.login("determined")
    nb = start_upstream(det)
    try:
        url = f"{master.url}/proxy/{nb}/api/status"
        assert requests.get(url, timeout=30).status_code == 401
        other = requests.get(url, headers={"Authorization": f"Bearer {token(master, f'eve{unique}', 'EvePass1x')}"}, timeout=30)
        assert other.status_code == 403 and "only the owner" in other.text, other.text
        admin = requests.get(url, headers={"Authorization": f"Bearer {token(master, 'admin')}"}, timeout=30)
        assert admin.status_code == 200, admin.text
    finally:
        det.ok("notebook", "kill", nb)


def test_our_cli_starts_a_notebook_and_unknown_ids_are_not_found(det: DetCli, master: Master, agent: Agent) -> None:
    det.login("determined")
    proc = det.ours("notebook", "start", "-d")
    assert proc.returncode == 0, proc
    nb = proc.stdout.strip().splitlines()[-1]
    listed = det.ours("notebook", "list")
    assert nb in listed.stdout and "RUNNING" in listed.stdout, listed
    assert det.ours("notebook", "kill", nb).returncode == 0
    missing = str(uuid.uuid4())
    assert "not found" in det.fails("notebook", "kill", missing)
    bearer = token(master, "determined")
    r = requests.get(f"{master.url}/proxy/{missing}/", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert r.status_code == 404 and missing in r.text


def test_an_idle_notebook_is_killed_and_one_with_a_kernel_is_not(det: DetCli, master: Master, agent: Agent) -> None:
    det.login("determined")
    bearer = token(master, "determined")
    idle = det.ok("notebook", "start", "-d", "--config", "idle_timeout=3s", timeout=180).strip().splitlines()[-1]
    busy = det.ok("notebook", "start", "-d", "--config", "idle_timeout=3s", timeout=180).strip().splitlines()[-1]
    try:
        # A kernel keeps the default idle type (kernels_or_terminals) from calling it idle.
        wait_for(
            "the second notebook to serve",
            lambda: requests.post(f"{master.url}/proxy/{busy}/api/kernels", json={"name": "python3"},
                                  headers={"Authorization": f"Bearer {bearer}"}, timeout=30).status_code == 201,
            timeout=120,
        )
        wait_for("the idle notebook to be killed", lambda: idle not in det.ok("notebook", "list"), timeout=90)
        logs = det.ok("task", "logs", idle)
        assert "was killed after being idle for" in logs and "(idle_timeout)" in logs, logs
        assert busy in det.ok("notebook", "list"), "a notebook with an open kernel is in use"
    finally:
        det.ok("notebook", "kill", busy)


def test_seed_001_notebook_config_starts_and_says_what_it_ignores(det: DetCli, agent: Agent, tmp_path) -> None:
    """Seed 001's Notebook-config.yaml, as written: a CPU-only notebook with a bind mount and an
    idle timeout."""
    det.login("determined")
    config = tmp_path / "Notebook-config.yaml"
    config.write_text(
        "description: My-notebook\n"
        "resources:\n  slots: 0  # Launch a Notebook that does not use any GPU\n"
        "bind_mounts:\n  - host_path: /tmp\n    container_path: /determined_shared_fs\n"
        "idle_timeout: 30m\n"
    )
    nb = start_upstream(det, "--config-file", str(config))
    try:
        assert "My-notebook" in det.ok("notebook", "list")
        logs = det.ok("notebook", "logs", nb)
        assert "WARNING: bind_mounts ignored" in logs, logs
    finally:
        det.ok("notebook", "kill", nb)
