"""Fixtures of the compatibility suite: a Resolute master driven by the upstream Determined client.

The master under test is `target/debug/det master run` (override with RESOLUTE_DET_BIN). Its
database is SQLite in a temporary data directory, or, with RESOLUTE_COMPAT_DB=postgres, a fresh
database on the PostgreSQL server at RESOLUTE_COMPAT_PG_URL (default: RESOLUTE_TEST_POSTGRES_URL,
as exported by scripts/test.sh).

The client is the upstream CLI `det` (determined==0.38.1) installed next to the Python running
pytest, and the upstream Python SDK imported in-process.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest
from determined.common.api import bindings
from determined.experimental import client

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_DET = Path(sys.executable).parent / "det"

# Client-side variables that would change which master/user the upstream client picks.
CLIENT_ENV_VARS = ("DET_MASTER", "DET_USER", "DET_PASS", "DET_USER_TOKEN", "DET_DEBUG_CONFIG_PATH")
DB_ENV_VARS = (
    "DET_DB_HOST",
    "DET_DB_PORT",
    "DET_DB_USER",
    "DET_DB_PASSWORD",
    "DET_DB_NAME",
    "DET_DB_SSL_MODE",
)


def master_binary() -> Path:
    path = Path(os.environ.get("RESOLUTE_DET_BIN", REPO / "target" / "debug" / "det"))
    if not path.exists():
        pytest.exit(f"{path} not found: run `cargo build --workspace --bins` first", returncode=2)
    return path


def compat_db() -> str:
    db = os.environ.get("RESOLUTE_COMPAT_DB", "sqlite")
    if db not in ("sqlite", "postgres"):
        pytest.exit(f"RESOLUTE_COMPAT_DB must be sqlite or postgres, not {db!r}", returncode=2)
    return db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_admin_url() -> str:
    url = os.environ.get("RESOLUTE_COMPAT_PG_URL") or os.environ.get("RESOLUTE_TEST_POSTGRES_URL")
    if not url:
        pytest.exit(
            "RESOLUTE_COMPAT_DB=postgres needs RESOLUTE_COMPAT_PG_URL or RESOLUTE_TEST_POSTGRES_URL "
            "(start one with scripts/pg.sh start DIR; scripts/pg.sh url DIR)",
            returncode=2,
        )
    return url


def psql(sql: str, url: Optional[str] = None) -> str:
    proc = subprocess.run(
        ["psql", url or pg_admin_url(), "-v", "ON_ERROR_STOP=1", "-qtAc", sql],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"psql {sql!r} failed: {proc.stderr}"
    return proc.stdout.strip()


def create_pg_database() -> Dict[str, str]:
    """Creates a fresh database on the scratch server; returns the DET_DB_* variables for it."""
    url = pg_admin_url()
    name = "resolute_compat_" + uuid.uuid4().hex[:12]
    psql(f"CREATE DATABASE {name}")
    u = urllib.parse.urlparse(url)
    return {
        "DET_DB_HOST": u.hostname or "127.0.0.1",
        "DET_DB_PORT": str(u.port or 5432),
        "DET_DB_USER": urllib.parse.unquote(u.username or "postgres"),
        "DET_DB_PASSWORD": urllib.parse.unquote(u.password or ""),
        "DET_DB_NAME": name,
        "DET_DB_SSL_MODE": "disable",
    }


class Master:
    """One `det master run` child process on a free loopback port, with a fresh agent join secret
    (`DET_SECURITY_AGENT_SECRET`), which the `Agent`s started for it present."""

    def __init__(self, workdir: Path, config_yaml: Optional[str] = None, tasks_as_root: bool = True) -> None:
        """`tasks_as_root`: a test fixture choice. Trials and commands in these tests run the
        checkout's `.venv` Python and write under pytest's temp dirs (mode 0700), which the
        unprivileged default task user (nobody) cannot reach; so unless a test asks otherwise
        (test_task_users.py), unlinked users' tasks run as root here."""
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_file: Optional[Path] = None
        if config_yaml is not None:
            self.config_file = workdir / "master.yaml"
            self.config_file.write_text(config_yaml)
        self.db = compat_db()
        self.env = {k: v for k, v in os.environ.items() if k not in DB_ENV_VARS}
        self.agent_secret = uuid.uuid4().hex
        self.env["DET_SECURITY_AGENT_SECRET"] = self.agent_secret
        if self.db == "postgres":
            self.env.update(create_pg_database())
        if tasks_as_root:
            for key, value in [("UID", "0"), ("GID", "0"), ("USER", "root"), ("GROUP", "root")]:
                self.env[f"DET_SECURITY_DEFAULT_TASK_USER_{key}"] = value
        self.log_path = workdir / "master.log"
        self._spawn()

    def _spawn(self, port: Optional[int] = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            str(master_binary()),
            "master",
            "run",
            "--port",
            str(self.port),
            "--data-dir",
            str(self.workdir / "data"),
        ]
        if self.config_file is not None:
            cmd += ["--config-file", str(self.config_file)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_for_info()

    def restart(self, same_port: bool = False) -> "Master":
        """Stops the master (if running) and starts it again on the same data, on a new port
        (or, with `same_port`, where its agents look for it)."""
        self.stop()
        self._spawn(self.port if same_port else None)
        return self

    def close(self) -> None:
        """Stops the master and drops its PostgreSQL database."""
        self.stop()
        if self.db == "postgres":
            psql(f"DROP DATABASE IF EXISTS {self.env['DET_DB_NAME']} WITH (FORCE)")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _wait_for_info(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"master exited with {self.proc.returncode} before answering GET /info;"
                    f" log:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.url + "/info", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"master did not answer GET /info in {timeout} s; log:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM; SIGKILL after `timeout` seconds. Returns the exit status (None if killed)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class DetCli:
    """Runs the upstream `det -m <master>` CLI with an isolated token cache.

    Passwords: the upstream CLI reads them with `getpass.getpass`, which opens /dev/tty. The child
    is started in a new session (no controlling terminal), so opening /dev/tty fails and getpass
    falls back to reading the line from stdin (printing a GetPassWarning). That is how `input=`
    supplies passwords here, and why this works the same in a terminal and in CI.
    """

    def __init__(self, master_url: str, config_dir: Path) -> None:
        self.master_url = master_url
        self.env = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV_VARS}
        self.env["DET_DEBUG_CONFIG_PATH"] = str(config_dir)

    def __call__(self, *args: str, input: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
        cmd: List[str] = [str(UPSTREAM_DET), "-m", self.master_url, *args]
        proc = subprocess.run(
            cmd,
            input=input,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
        # Shown by pytest when a test fails.
        print(f"$ det {' '.join(args)}  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
        return proc

    def ok(self, *args: str, input: str = "", timeout: float = 60) -> str:
        """Runs a command that must succeed; returns its stdout."""
        proc = self(*args, input=input, timeout=timeout)
        assert proc.returncode == 0, (
            f"`det {' '.join(args)}` exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.stdout

    def fails(self, *args: str, input: str = "", timeout: float = 60) -> str:
        """Runs a command that must fail cleanly (non-zero, no traceback); returns stdout+stderr."""
        proc = self(*args, input=input, timeout=timeout)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, f"`det {' '.join(args)}` should have failed:\n{out}"
        assert "Traceback" not in out, f"`det {' '.join(args)}` crashed instead of failing:\n{out}"
        return out

    def login(self, user: str, password: str = "") -> None:
        self.ok("user", "login", user, input=password + "\n")

    def ours(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Our `det` with the same master and token cache (auth.json is shared by both CLIs)."""
        cmd: List[str] = [str(master_binary()), "-m", self.master_url, *args]
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        print(f"$ det(ours) {' '.join(args)}  (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")
        return proc


class Agent:
    """One `det agent run` child process (the Rust binary) attached to a master, with artificial
    slots; it runs trials with RESOLUTE_TRIAL_PYTHON (default: the Python running pytest, whose
    venv scripts/python-env.sh builds with the harness, scikit-learn and, if available, torch)."""

    def __init__(
        self,
        master: Master,
        workdir: Path,
        slots: int = 4,
        port: Optional[int] = None,
        secret: Optional[str] = "master's",
        extra_args: Optional[List[str]] = None,
        master_host: str = "127.0.0.1",
    ) -> None:
        """`port`: where the agent looks for the master (default: the master's own port);
        `secret`: the join secret it presents (default: the master's; None: none);
        `master_host`: the master's address it dials (the agent reports the local end of that
        connection as its own address)."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / "agent.log"
        cmd = [
            str(master_binary()),
            "agent",
            "run",
            "--master-host",
            master_host,
            "--master-port",
            str(port or master.port),
            "--artificial-slots",
            str(slots),
            "--python",
            os.environ.get("RESOLUTE_TRIAL_PYTHON", sys.executable),
            *(extra_args or []),
        ]
        env = {k: v for k, v in os.environ.items() if k not in CLIENT_ENV_VARS + DB_ENV_VARS}
        env.pop("DET_SECURITY_AGENT_SECRET", None)
        if secret == "master's":
            secret = master.agent_secret
        if secret is not None:
            env["DET_SECURITY_AGENT_SECRET"] = secret
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_registered(self, master: Master, timeout: float = 60.0) -> None:
        """Polls GET /api/v1/agents (as admin) until an agent with slots is listed."""
        session = client.Determined(master=master.url, user="admin", password="")._session
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            agents = bindings.get_GetAgents(session).agents or []
            if any(a.slots for a in agents):
                return
            time.sleep(0.2)
        raise RuntimeError(f"no agent registered with the master in {timeout} s; agent log:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def master(tmp_path_factory: pytest.TempPathFactory):
    """The master shared by the whole session."""
    m = Master(tmp_path_factory.mktemp("master"))
    yield m
    m.close()


@pytest.fixture
def fresh_master(tmp_path: Path):
    """A master of its own, for tests that need an empty user table (fixed user names)."""
    m = Master(tmp_path / "fresh-master")
    yield m
    m.close()


@pytest.fixture(autouse=True)
def isolated_client_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own upstream token cache (also for the in-process SDK)."""
    config = tmp_path / "det-config"
    config.mkdir()
    for var in CLIENT_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DET_DEBUG_CONFIG_PATH", str(config))
    # `client.login()` may be called once per process: give every test a fresh SDK singleton.
    monkeypatch.setattr(client, "_determined", None)
    return config


@pytest.fixture(scope="session")
def agent(master: Master, tmp_path_factory: pytest.TempPathFactory):
    """An agent with 4 artificial slots on the session master, for tests that run trials."""
    a = Agent(master, tmp_path_factory.mktemp("agent"))
    try:
        a.wait_registered(master)
        yield a
    finally:
        a.stop()


@pytest.fixture
def det(master: Master, isolated_client_config: Path) -> DetCli:
    return DetCli(master.url, isolated_client_config)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for user names in the shared master."""
    return uuid.uuid4().hex[:8]


def pytest_report_header(config: pytest.Config) -> List[str]:
    return [
        f"resolute master: {os.environ.get('RESOLUTE_DET_BIN', REPO / 'target/debug/det')}"
        f" (db: {os.environ.get('RESOLUTE_COMPAT_DB', 'sqlite')})",
        f"upstream client: {UPSTREAM_DET}",
        f"jq: {shutil.which('jq')}, curl: {shutil.which('curl')}, psql: {shutil.which('psql')}",
    ]



@pytest.fixture
def netns_network(tmp_path: Path):
    """A bridge network for hosts in network namespaces (tests/compat/netns.py): `net.host(name)`
    makes one, `host.start_agent(master, slots=N)` starts an agent there. Everything is torn down
    after the test, even when it fails. Skipped where namespaces cannot be made (not root, no
    iproute2), unless RESOLUTE_REQUIRE_NETNS=1 (CI), which makes that a failure."""
    from netns import Network, netns_unavailable

    reason = netns_unavailable()
    if reason is not None:
        if os.environ.get("RESOLUTE_REQUIRE_NETNS") == "1":
            pytest.fail(f"RESOLUTE_REQUIRE_NETNS=1 but {reason}")
        pytest.skip(reason)
    net = Network(tmp_path / "net")
    try:
        yield net
    finally:
        net.close()
