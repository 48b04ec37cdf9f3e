"""Tasks run as their owner's Unix account (issue 15): `det user link-with-agent-user` with the
upstream 0.38.1 CLI (and ours), then commands of two linked users on an agent running as root —
each runs with its uid, neither reads the other's token in /proc/<pid>/environ or its work-dir
files — and an unlinked user's command runs as the unprivileged default (nobody), not root.

These masters keep the production default task user (`tasks_as_root=False`), and the agent's work
root is in a directory every account can traverse, as a multi-user agent's must be. The commands
need only /bin/sh and coreutils, which every account can run. Skipped unless run as root."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Tuple

import pytest

from conftest import Agent, DetCli, Master
from experiments import IRIS, create, wait_for, write_config

ALICE_UID, BOB_UID, NOBODY_UID = 20001, 20002, 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only an agent running as root can run tasks as other accounts")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every account can traverse (temp dirs are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="resolute-task-users-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cluster(tmp_path: Path, shared_dir: Path) -> Iterator[Tuple[Master, Agent]]:
    master = Master(tmp_path / "master", tasks_as_root=False)
    agent = Agent(master, tmp_path / "agent", extra_args=["--work-root", str(shared_dir / "work")])
    try:
        agent.wait_registered(master)
        yield master, agent
    finally:
        agent.stop()
        master.close()


def create_users(det: DetCli, *names: str) -> None:
    det.login("admin")
    for name in names:
        det.ok("user", "create", name, "--password", f"{name.title()}-pw-1234")


def login(det: DetCli, name: str) -> None:
    det.login(name, f"{name.title()}-pw-1234")


def printed(output: str, line: str) -> bool:
    """Whether the task printed exactly `line` (log lines read `[time] <container> || INFO: <line>`)."""
    return re.search(rf"\|\| INFO: {re.escape(line)}\s*$", output, re.M) is not None


def link(det: DetCli, name: str, uid: int) -> None:
    det.ok("user", "link-with-agent-user", name, "--agent-uid", str(uid), "--agent-gid", str(uid),
           "--agent-user", name, "--agent-group", name)


def test_only_admins_link_and_bad_values_are_refused(cluster: Tuple[Master, Agent], isolated_client_config: Path) -> None:
    master, _ = cluster
    det = DetCli(master.url, isolated_client_config)
    create_users(det, "alice", "bob")

    login(det, "alice")
    out = det.fails("user", "link-with-agent-user", "alice", "--agent-uid", "0", "--agent-gid", "0",
                    "--agent-user", "root", "--agent-group", "root")
    assert "only admins can link users to agent users" in out, out

    det.login("admin")
    out = det.fails("user", "link-with-agent-user", "alice", "--agent-uid", "-1", "--agent-gid", "5",
                    "--agent-user", "alice", "--agent-group", "alice")
    assert "agentUserGroup.agentUid must be between 0 and 2147483647, found -1" in out, out
    out = det.fails("user", "link-with-agent-user", "alice", "--agent-uid", "5", "--agent-gid", "5",
                    "--agent-user", "a:b", "--agent-group", "alice")
    assert "agentUserGroup.agentUser" in out and "is invalid" in out, out

    link(det, "alice", ALICE_UID)
    rows = [line for line in det.ok("user", "list").splitlines() if " alice " in f" {line} "]
    assert rows and "20001" in rows[0], rows

    # Ours: the same command, the same checks.
    ours = det.ours("user", "link-with-agent-user", "bob", "--agent-uid", "-7", "--agent-gid", "1",
                    "--agent-user", "bob", "--agent-group", "bob")
    assert ours.returncode != 0 and "found -7" in ours.stdout + ours.stderr, ours
    ours = det.ours("user", "link-with-agent-user", "bob", "--agent-uid", "20002")
    assert ours.returncode != 0 and "agent-user argument required" in ours.stdout + ours.stderr, ours
    ours = det.ours("user", "link-with-agent-user", "bob", "--agent-uid", str(BOB_UID), "--agent-gid", str(BOB_UID),
                    "--agent-user", "bob", "--agent-group", "bob")
    assert ours.returncode == 0, ours
    listed = det.ours("user", "list")
    assert any("bob" in line and "20002" in line for line in listed.stdout.splitlines()), listed


def test_tasks_run_as_their_owner_and_cannot_read_each_other(cluster: Tuple[Master, Agent], isolated_client_config: Path) -> None:
    master, _ = cluster
    det = DetCli(master.url, isolated_client_config)
    create_users(det, "alice", "bob", "carol")
    link(det, "alice", ALICE_UID)
    link(det, "bob", BOB_UID)

    # Alice's long-running command holds a token in its environment and a file in its work dir.
    login(det, "alice")
    holder = det.ok("cmd", "run", "-d", 'echo "pid=$$ dir=$PWD"; echo alice-file-secret > secret.txt; echo ready; exec sleep 600').strip()
    try:
        logs = wait_for("alice's command to be ready",
                        lambda: (lambda out: out if "ready" in out else None)(det.ok("task", "logs", holder)), timeout=90)
        found = re.search(r"pid=(\d+) dir=(\S+)", logs)
        assert found, logs
        pid, work_dir = found.group(1), found.group(2)
        probe = f"id -u; cat /proc/{pid}/environ | tr '\\0' '\\n' | grep -c '^DET_SESSION_TOKEN=.'; cat {work_dir}/secret.txt; true"

        # Alice's own account reads both.
        own = det.ok("cmd", "run", probe)
        assert printed(own, str(ALICE_UID)) and printed(own, "1") and printed(own, "alice-file-secret"), own

        # Bob's account reads neither.
        login(det, "bob")
        other = det.ok("cmd", "run", probe)
        assert printed(other, str(BOB_UID)) and printed(other, "0"), other
        assert "alice-file-secret" not in other, other
        assert other.count("Permission denied") >= 2, other

        # Carol is linked to no one: the unprivileged default, not root.
        login(det, "carol")
        unlinked = det.ok("cmd", "run", "id -u; id -G")
        assert printed(unlinked, str(NOBODY_UID)), unlinked
        assert not printed(unlinked, "0"), unlinked
    finally:
        det.login("admin")
        det.ok("cmd", "kill", holder)


def test_a_trial_runs_as_its_owner_and_keeps_its_checkpoints(
    cluster: Tuple[Master, Agent], shared_dir: Path, isolated_client_config: Path
) -> None:
    """The Iris trial runs as alice's uid and writes its checkpoints into the shared storage root,
    which the agent made sticky and world-writable; each checkpoint is alice's."""
    python = os.environ.get("RESOLUTE_TRIAL_PYTHON", sys.executable)
    reachable = subprocess.run(["setpriv", f"--reuid={ALICE_UID}", f"--regid={ALICE_UID}", "--clear-groups", python, "-c",
                                "import determined, sklearn"], capture_output=True, cwd="/")
    if shutil.which("setpriv") is None or reachable.returncode != 0:
        pytest.skip(f"uid {ALICE_UID} cannot run the trial interpreter {python} (a checkout other accounts cannot reach)")
    master, _ = cluster
    det = DetCli(master.url, isolated_client_config)
    create_users(det, "alice")
    link(det, "alice", ALICE_UID)
    login(det, "alice")
    storage = shared_dir / "checkpoints"
    config = write_config(IRIS / "const.yaml", shared_dir / "const.yaml", storage)
    exp_id = create(det, config, IRIS)
    wait_for("the experiment to complete", lambda: "COMPLETED" in det.ok("experiment", "describe", str(exp_id)), timeout=300)
    assert storage.stat().st_mode & 0o7777 == 0o1777
    # `<cluster id>/tensorboard/…` is the agent's, but for the trial's own TensorBoard dir.
    checkpoints = [p for p in storage.iterdir() if re.fullmatch(r"[0-9a-f-]{36}", p.name) and not (p / "tensorboard").exists()]
    assert checkpoints, list(storage.iterdir())
    assert all(p.stat().st_uid == ALICE_UID for p in checkpoints), [(p.name, p.stat().st_uid) for p in checkpoints]
    tensorboards = list(storage.glob(f"*/tensorboard/experiment/{exp_id}/trial/*"))
    assert tensorboards and all(p.stat().st_uid == ALICE_UID for p in tensorboards), tensorboards


AGENT_UID = 20003


class UnprivilegedAgent(Agent):
    """`det agent run` as uid 20003 (no passwd entry, no groups): it cannot switch accounts."""

    def __init__(self, master: Master, workdir: Path, work_root: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "agent.log"
        # The binary may sit where uid 20003 cannot reach it (a checkout under /root): copy it.
        binary = work_root / "det"
        shutil.copy2(os.environ.get("RESOLUTE_DET_BIN", str(Path(__file__).resolve().parents[2] / "target/debug/det")), binary)
        binary.chmod(0o755)
        (work_root / "work").mkdir()
        os.chown(work_root / "work", AGENT_UID, AGENT_UID)
        cmd = ["setpriv", f"--reuid={AGENT_UID}", f"--regid={AGENT_UID}", "--clear-groups", str(binary), "agent", "run",
               "--master-host", "127.0.0.1", "--master-port", str(master.port), "--artificial-slots", "2",
               "--python", "/bin/sh", "--work-root", str(work_root / "work"), "--agent-id", "unprivileged"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work_root / "work"),
               "DET_SECURITY_AGENT_SECRET": master.agent_secret}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=work_root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to start an agent as another uid")
def test_an_agent_that_is_not_root_runs_tasks_as_itself_and_says_so(tmp_path: Path, isolated_client_config: Path) -> None:
    master = Master(tmp_path / "master", tasks_as_root=False)
    work_root = Path(tempfile.mkdtemp(prefix="resolute-unprivileged-agent-"))
    work_root.chmod(0o755)
    agent = UnprivilegedAgent(master, tmp_path / "agent", work_root)
    try:
        agent.wait_registered(master)
        det = DetCli(master.url, isolated_client_config)
        create_users(det, "alice")
        link(det, "alice", ALICE_UID)
        login(det, "alice")
        out = det.ok("cmd", "run", "id -u")
        assert printed(out, str(AGENT_UID)), out
        assert "this task should run as alice (uid 20001)" in out and f"the task runs as uid {AGENT_UID}" in out, out
    finally:
        agent.stop()
        master.close()
        shutil.rmtree(work_root, ignore_errors=True)
