"""Shells end to end: `det shell start/open/kill` with the upstream 0.38.1 CLI and with ours,
against a real master and agent. The shell is a real sshd on the agent, reached through the
master's `/proxy/<id>/` tunnel with the key the master made for it; another key is refused."""

import getpass
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Agent, DetCli
from experiments import wait_for
from test_commands import command_id

# CI installs both (.ci/run), so there a missing one fails instead of skipping.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (shutil.which("ssh") is None or not Path("/usr/sbin/sshd").exists()),
    reason="needs OpenSSH's client and server (apt-get install openssh-client openssh-server)",
)

# Keeps the shells' host keys out of the user's known_hosts (ssh reads options after the host).
QUIET_SSH = ["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


def shell_ended(det: DetCli, shell_id: str) -> bool:
    """Listings show live shells only, as upstream's."""
    return shell_id not in det.ok("shell", "list")


def start_shell(det: DetCli) -> str:
    shell_id = det.ok("shell", "start", "-d").strip()
    assert len(shell_id) == 36, shell_id
    return shell_id


def test_upstream_cli_opens_a_shell_and_runs_a_command(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    shell_id = start_shell(det)
    try:
        # Upstream passes what follows the id to ssh after the destination: the remote command.
        out = det.ok("shell", "open", shell_id, "--", *QUIET_SSH, "whoami; echo task=$DET_TASK_ID; pwd", timeout=120)
        assert getpass.getuser() in out, out
        assert f"task={shell_id}" in out, "the session carries the task's environment"
        assert "To reconnect, run: det shell open" in out, out
        assert "RUNNING" in next(line for line in det.ok("shell", "list").splitlines() if shell_id in line)

        proc = det.ours("shell", "open", shell_id, *QUIET_SSH, "echo", "ours-$(whoami)", timeout=120)
        assert proc.returncode == 0, proc
        assert f"ours-{getpass.getuser()}" in proc.stdout, proc
    finally:
        assert f"Killed shell {shell_id}" in det.ok("shell", "kill", shell_id)
    wait_for("the kill to end the shell", lambda: shell_ended(det, shell_id), timeout=60)


def test_upstream_shell_start_without_detach_logs_in(det: DetCli, agent: Agent) -> None:
    # `start` opens the shell from the launch response, before the shell is placed: its login
    # user (`agentUserGroup`) must be right already then.
    det.login("determined")
    out = det.ok("shell", "start", "--", *QUIET_SSH, "echo started-as-$(whoami)", timeout=120)
    assert f"started-as-{getpass.getuser()}" in out, out
    det.ok("shell", "kill", command_id(out))


def test_our_cli_starts_opens_and_kills_a_shell(det: DetCli, agent: Agent) -> None:
    det.login("determined")
    proc = det.ours("shell", "start", "-d")
    assert proc.returncode == 0, proc
    shell_id = proc.stdout.strip()
    opened = det.ours("shell", "open", shell_id[:8], *QUIET_SSH, "exit 0", timeout=120)
    assert opened.returncode == 0, opened
    shown = det.ours("shell", "show-ssh-command", shell_id)
    assert shown.returncode == 0 and "ProxyCommand=" in shown.stdout and f"@{shell_id}" in shown.stdout, shown
    killed = det.ours("shell", "kill", shell_id)
    assert killed.returncode == 0, killed
    wait_for("the kill to end the shell", lambda: shell_ended(det, shell_id), timeout=60)


def test_a_key_other_than_the_shells_is_refused(det: DetCli, agent: Agent, tmp_path: Path) -> None:
    det.login("determined")
    shell_id = start_shell(det)
    try:
        # Waits for the shell, so the refusal below is sshd's and not a tunnel that is not up yet.
        det.ok("shell", "open", shell_id, "--", *QUIET_SSH, "true", timeout=120)
        key = tmp_path / "other_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        tunnel = f"{sys.executable} -m determined.cli.tunnel {det.master_url} %h"
        proc = subprocess.run(
            ["ssh", "-o", f"ProxyCommand={tunnel}", "-o", "StrictHostKeyChecking=no", "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", "-i", str(key), *QUIET_SSH, f"{getpass.getuser()}@{shell_id}", "whoami"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=det.env,
        )
        assert proc.returncode == 255 and "Permission denied" in proc.stderr, proc
    finally:
        det.ok("shell", "kill", shell_id)
