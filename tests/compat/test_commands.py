"""Commands end to end: `det cmd run` with the upstream 0.38.1 CLI and with ours, against a real
master and agent — output, upstream's exit wording, context upload, list/describe/config, kill,
requests that can never fit, and unknown ids."""

import uuid
from pathlib import Path


from conftest import Agent, DetCli
from experiments import IRIS, wait_for, write_config

SUCCESS = "allocation stopped after resources exited successfully with a zero exit code"
FAILURE = "resources failed with non-zero exit code"


def command_id(launch_output: str) -> str:
    # "Launched command (id: <uuid>, name: …)."
    return launch_output.split("id: ", 1)[1].split(",", 1)[0]


def test_upstream_cmd_run_prints_output_and_upstream_wording(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    out = det.ok("cmd", "run", "echo hello-from-a-command; python3 -c 'import determined; print(determined.__version__)'")
    assert "hello-from-a-command" in out and "0.38.1" in out, out
    assert SUCCESS in out, out
    task_id = command_id(out)
    # Listings show live commands only, as upstream's; describe still finds an ended one.
    assert task_id not in det.ok("cmd", "list")
    described = det.ok("cmd", "describe", task_id)
    assert "exited successfully" in described and "TERMINATED" in described and "Uncategorized" in described, described
    assert "entrypoint" in det.ok("cmd", "config", task_id)


def test_a_failing_command_says_so_in_both_clis(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    out = det.ok("cmd", "run", "echo about-to-fail; exit 3")  # upstream's CLI itself exits 0
    assert "about-to-fail" in out and FAILURE in out and "exit code 3" in out, out
    proc = det.ours("cmd", "run", "exit 4")
    assert proc.returncode != 0, proc
    assert FAILURE in proc.stdout + proc.stderr and "exit code 4" in proc.stdout + proc.stderr
    ok = det.ours("cmd", "run", "python3", "-c", "print(6 * 7)")
    assert ok.returncode == 0 and "42" in ok.stdout and SUCCESS in ok.stdout, ok


def test_zero_slot_commands_run_as_aux_tasks_beside_slot_holders(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    # Four slot-holding commands take every slot of the 4-slot agent; an aux command still runs.
    holders = [det.ok("cmd", "run", "-d", "sleep 600").strip() for _ in range(4)]
    try:
        for h in holders:
            wait_for("the slot holders to run", lambda h=h: "RUNNING" in det.ok("cmd", "describe", h), timeout=60)
        out = det.ok("cmd", "run", "--config", "resources.slots=0", "echo aux-ok")
        assert "aux-ok" in out and SUCCESS in out, out
    finally:
        det.ok("cmd", "kill", *holders)


def test_context_directory_reaches_the_command(det: DetCli, agent: Agent, tmp_path: Path) -> None:
    det.login("determined")
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "data.txt").write_text("payload-in-context\n")
    (context / ".detignore").write_text("ignored.txt\n")
    (context / "ignored.txt").write_text("must not be uploaded\n")
    out = det.ok("cmd", "run", "-c", str(context), "cat data.txt; ls")
    assert "payload-in-context" in out and "ignored.txt" not in out.split("cat data.txt")[-1], out
    proc = det.ours("cmd", "run", "-c", str(context), "cat", "data.txt")
    assert proc.returncode == 0 and "payload-in-context" in proc.stdout, proc


def test_kill_a_running_command(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    task_id = det.ok("cmd", "run", "-d", "echo started; sleep 600").strip()
    wait_for("the command to run", lambda: "RUNNING" in det.ok("cmd", "describe", task_id), timeout=60)
    # A unique prefix of a live command names it, as upstream's CLI expands it.
    assert task_id in det.ok("cmd", "describe", task_id[:8])
    assert f"Killed command {task_id}" in det.ok("cmd", "kill", task_id)
    wait_for("the kill to end it", lambda: "TERMINATED" in det.ok("cmd", "describe", task_id), timeout=60)
    assert "killed" in det.ok("cmd", "describe", "--json", task_id)
    logs = det.ok("task", "logs", task_id)
    assert "started" in logs and "was terminated" in logs, logs


def test_requests_that_can_never_fit_and_unknown_ids_are_refused(det: DetCli, agent: Agent, tmp_path: Path) -> None:
    det.login("determined")
    out = det.fails("cmd", "run", "--config", "resources.slots=64", "true")
    assert "request unfulfillable" in out and "64 slots" in out, out
    out = det.fails("cmd", "run", "--config", "resources.priority=500", "true")
    assert "resources.priority" in out, out
    config = write_config(IRIS / "const.yaml", tmp_path / "huge.yaml", tmp_path / "ckpt", resources={"slots_per_trial": 64})
    out = det.fails("experiment", "create", str(config), str(IRIS))
    assert "request unfulfillable" in out and "64 slots" in out, out
    missing = str(uuid.uuid4())
    assert "not found" in det.fails("cmd", "describe", missing)
    assert "not found" in det.fails("cmd", "kill", missing)


def test_another_user_cannot_kill_my_command(det: DetCli, agent: Agent, unique: str) -> None:
    det.login("admin")
    det.ok("user", "create", f"mallory{unique}", "--password", "Mallory1x")
    det.login("determined")
    task_id = det.ok("cmd", "run", "-d", "sleep 600").strip()
    det.login(f"mallory{unique}", "Mallory1x")
    assert "only the owner" in det.fails("cmd", "kill", task_id)
    det.login("determined")
    det.ok("cmd", "kill", task_id)
