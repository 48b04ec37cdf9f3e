"""Generic tasks and the task listings end to end with the upstream 0.38.1 CLI: `det task create`
then `det task logs`, `det task list` / `det slot list` naming every kind, pause/unpause/kill of
a running generic task; and `task_container_defaults` reaching a command's environment."""

import json
import subprocess
from pathlib import Path
from typing import List

from conftest import Agent, DetCli, Master, master_binary
from experiments import wait_for

SUCCESS = "allocation stopped after resources exited successfully with a zero exit code"


def ours(det: DetCli, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Our `det` with the same master and token cache as the upstream one."""
    cmd: List[str] = [str(master_binary()), "-m", det.master_url, *args]
    proc = subprocess.run(cmd, env=det.env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    print(f"$ det(ours) {' '.join(args)}  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
    return proc


def created_id(out: str) -> str:
    # "Created task <uuid>"
    return out.split("Created task ", 1)[1].split()[0]


def test_upstream_task_create_then_logs_show_the_output(det: DetCli, agent: Agent, tmp_path: Path) -> None:
    det.login("determined")
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "data.txt").write_text("payload-in-generic-context\n")
    config = tmp_path / "task.yaml"
    config.write_text('entrypoint: ["sh", "-c", "echo hello-generic-$DET_TASK_TYPE; cat data.txt"]\nresources: {slots: 1}\n')
    out = det.ok("task", "create", str(config), "--context", str(context), "-f")
    task_id = created_id(out)
    assert "hello-generic-GENERIC" in out and "payload-in-generic-context" in out and SUCCESS in out, out
    logs = det.ok("task", "logs", task_id)
    assert "hello-generic-GENERIC" in logs and SUCCESS in logs, logs
    shown = json.loads(det.ok("task", "config", task_id, "--json"))
    assert shown["entrypoint"][0] == "sh", shown
    # Our CLI reads the same task.
    proc = ours(det, "task", "logs", task_id)
    assert proc.returncode == 0 and "payload-in-generic-context" in proc.stdout, proc


def test_listings_name_each_kind_and_pause_unpause_kill(det: DetCli, agent: Agent, tmp_path: Path) -> None:
    det.login("determined")
    config = tmp_path / "task.yaml"
    config.write_text('entrypoint: ["sh", "-c", "echo generic-started; sleep 600"]\n')
    task_id = created_id(det.ok("task", "create", str(config)))
    command_id = det.ok("cmd", "run", "-d", "echo command-started; sleep 600").strip()
    try:
        # `det task list` reads GET /api/v1/tasks; `det slot list` joins it with the agents' slots.
        listed = wait_for(
            "both tasks on an agent",
            lambda: (lambda out: out if task_id in out and command_id in out and "unassigned" not in out else None)(
                det.ok("task", "list")
            ),
            timeout=60,
        )
        assert f"Generic Task {task_id}" in listed and f"Command ({command_id[:8]})" in listed, listed
        slots = det.ok("slot", "list")
        assert f"Generic Task {task_id}" in slots and f"Command ({command_id[:8]})" in slots, slots
        wait_for("the generic task to run", lambda: "generic-started" in det.ok("task", "logs", task_id), timeout=60)

        assert f"Paused task: {task_id}" in det.ok("task", "pause", task_id)
        wait_for("the pause", lambda: "was paused" in det.ok("task", "logs", task_id), timeout=60)
        assert task_id not in det.ok("task", "list"), "a paused task holds no allocation"
        assert f"Unpaused task: {task_id}" in det.ok("task", "unpause", task_id)
        wait_for("a second allocation", lambda: f"{task_id}.2" in det.ok("task", "list"), timeout=60)
        wait_for("the second run", lambda: det.ok("task", "logs", task_id).count("generic-started") == 2, timeout=60)

        assert f"Sucessfully killed task: {task_id}" in det.ok("task", "kill", task_id)
        wait_for("the kill", lambda: "killed by a user" in det.ok("task", "logs", task_id), timeout=60)
        assert task_id not in det.ok("task", "list")
    finally:
        det("cmd", "kill", command_id)
        det("task", "kill", task_id)


def test_task_container_defaults_reach_a_command(tmp_path: Path, isolated_client_config: Path) -> None:
    config = (
        "task_container_defaults:\n  environment_variables:\n    - FOO=from-task-container-defaults\n"
        "  startup_hook: export HOOKED=yes-from-the-hook\n  shm_size_bytes: 4294967296\n"
    )
    master = Master(tmp_path / "tcd-master", config_yaml=config)
    agent = Agent(master, tmp_path / "tcd-agent", slots=1)
    try:
        agent.wait_registered(master)
        det = DetCli(master.url, isolated_client_config)
        det.login("determined")
        out = det.ok("cmd", "run", "echo FOO=$FOO")
        assert "FOO=from-task-container-defaults" in out and SUCCESS in out, out
        mine = det.ok("cmd", "run", "--config", "environment.environment_variables=[FOO=mine]", "echo FOO=$FOO")
        assert "FOO=mine" in mine, mine
        # The startup hook runs first, in the task's shell, before its own startup-hook.sh.
        hooked = det.ok("cmd", "run", "echo HOOKED=$HOOKED")
        assert "HOOKED=yes-from-the-hook" in hooked, hooked
        assert "shm_size_bytes" in master.log_tail(200), "the inert key is named in the master's log"
    finally:
        agent.stop()
        master.close()
