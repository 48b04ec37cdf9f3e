"""Several hosts on one machine: network namespaces joined by a bridge, for multi-agent tests.

A `Network` is one Linux bridge on the host with its own /24 (`10.213.N.0/24`, N picked free under
a machine-wide lock, so concurrent test runs never collide). The host side of the bridge is
`10.213.N.1`: a master started by the tests on the host (it listens on every interface) is
reachable there from every namespace, at a non-loopback address. Each `Host` is a network
namespace with a veth pair to the bridge and its own address (`10.213.N.11`, `.12`, ...); programs
started through it run inside the namespace, so an agent there sees and reports that address.

    net = Network(tmp_path / "net")
    a = net.host("a")                                   # 10.213.N.11
    agent = a.start_agent(master, slots=2)              # master: conftest.Master (port + secret)
    agent.wait_registered(master.url)
    a.run(["ip", "-4", "addr"])                         # CompletedProcess, inside the namespace
    partition(a); ...; heal(a)                          # cut / restore a's link (ip link set down/up)
    net.close()                                         # kills everything inside, deletes it all

Teardown never leaks: `close()` kills every process inside each namespace (`ip netns pids`),
deletes the namespaces (which removes their veth pairs) and the bridge; it is idempotent and also
runs at interpreter exit. If a test run is killed outright (SIGKILL), the next `Network()` on the
machine sweeps what the dead run left: each network's owner pid is recorded under
/run/resolute-netns/, and networks whose owner is gone are removed.

Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2's `ip`; `netns_unavailable()` says why not
when they are missing (fixtures skip with that reason, or fail when RESOLUTE_REQUIRE_NETNS=1).
Names: namespaces `resolute-N-NAME`, bridge `rsbrN`, host-side veths `rsvNhI` (15-char limit).
This module only uses the standard library and `conftest`'s master/agent conventions: the agent is
the Rust `det agent run`, with the master's join secret (`DET_SECURITY_AGENT_SECRET`).
"""

import atexit
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

STATE_DIR = Path("/run/resolute-netns")
NS_PREFIX = "resolute-"
SUBNET_BASE = "10.213"
FIRST_HOST = 11
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,20}$")

Cmd = Union[str, Sequence[str]]


class NetnsError(RuntimeError):
    """An `ip` command of the harness failed (the message has the command and its stderr)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def netns_unavailable() -> Optional[str]:
    """Why namespaces cannot be made here (None when they can): not root, or no `ip`."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{NS_PREFIX}probe-{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _namespaces() -> List[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _kill_namespace(ns: str) -> None:
    """SIGKILLs every process in namespace `ns` (polling until none is left), then deletes it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split() if p.isdigit()]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    _ip("netns", "del", ns, check=False)


def _remove_network(n: int) -> None:
    for ns in _namespaces():
        if ns.startswith(f"{NS_PREFIX}{n}-"):
            _kill_namespace(ns)
    _ip("link", "del", f"rsbr{n}", check=False)
    (STATE_DIR / f"{n}.pid").unlink(missing_ok=True)


def _sweep_dead_owners() -> None:
    """Removes networks whose owning process is gone (a test run killed before its teardown)."""
    for owner in STATE_DIR.glob("*.pid"):
        try:
            n, pid = int(owner.stem), int(owner.read_text().strip() or "0")
        except (ValueError, OSError):
            continue
        if not _pid_alive(pid):
            _remove_network(n)


def _subnets_in_use() -> set:
    used = set()
    out = _ip("-o", "-4", "addr", "show", check=False).stdout
    for m in re.finditer(rf"inet {re.escape(SUBNET_BASE)}\.(\d+)\.", out):
        used.add(int(m.group(1)))
    for owner in STATE_DIR.glob("*.pid"):
        if owner.stem.isdigit():
            used.add(int(owner.stem))
    return used


class Network:
    """A bridge with a free /24; `host(name)` adds a namespace attached to it."""

    def __init__(self, workdir: Path) -> None:
        reason = netns_unavailable()
        if reason is not None:
            raise NetnsError(reason)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.hosts: List["Host"] = []
        self._closed = False
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with open(STATE_DIR / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _sweep_dead_owners()
            used = _subnets_in_use()
            free = [n for n in range(0, 256) if n not in used]
            if not free:
                raise NetnsError(f"no free {SUBNET_BASE}.N.0/24 subnet left")
            self.n = free[0]
            (STATE_DIR / f"{self.n}.pid").write_text(str(os.getpid()))
        self.bridge = f"rsbr{self.n}"
        self.gateway = f"{SUBNET_BASE}.{self.n}.1"
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
        except Exception:
            self.close()
            raise
        _live_networks.add(self)

    def host(self, name: str) -> "Host":
        """A new namespace `name` (lower-case letters, digits, '-') at the next free address."""
        if not _NAME_RE.match(name):
            raise ValueError(f"host name {name!r}: use lower-case letters, digits and '-' (at most 21)")
        if any(h.name == name for h in self.hosts):
            raise ValueError(f"host name {name!r} is already used on this network")
        index = len(self.hosts)
        host = Host(self, name, f"{SUBNET_BASE}.{self.n}.{FIRST_HOST + index}", index)
        self.hosts.append(host)
        return host

    def master_url(self, master: Any) -> str:
        """The URL at which namespaces reach a master on the host (`master.port`, or a port)."""
        port = master if isinstance(master, int) else master.port
        return f"http://{self.gateway}:{port}"

    def close(self) -> None:
        """Stops every process in every host, deletes the namespaces and the bridge. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for host in self.hosts:
            host._stop_processes()
        _remove_network(self.n)

    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Host:
    """One network namespace on a `Network`: its own address, loopback and default route."""

    def __init__(self, network: Network, name: str, ip: str, index: int) -> None:
        self.network = network
        self.name = name
        self.ip = ip
        self.netns = f"{NS_PREFIX}{network.n}-{name}"
        self.veth = f"rsv{network.n}h{index}"
        self.workdir = network.workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.procs: List[subprocess.Popen] = []
        _ip("netns", "add", self.netns)
        _ip("link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        _ip("link", "set", self.veth, "master", network.bridge)
        _ip("link", "set", self.veth, "up")
        for args in (
            ["addr", "add", f"{ip}/24", "dev", "eth0"],
            ["link", "set", "eth0", "up"],
            ["link", "set", "lo", "up"],
            ["route", "add", "default", "via", network.gateway],
        ):
            _ip("-n", self.netns, *args)

    def _argv(self, cmd: Cmd) -> List[str]:
        inner = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return ["ip", "netns", "exec", self.netns, *inner]

    def run(self, cmd: Cmd, timeout: float = 60, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess:
        """Runs `cmd` (argv list, or a shell string) inside the namespace; text output captured."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.run(self._argv(cmd), capture_output=True, text=True, timeout=timeout, check=check, **kwargs)

    def popen(self, cmd: Cmd, log_path: Optional[Path] = None, **kwargs: Any) -> subprocess.Popen:
        """Starts `cmd` inside the namespace (stdout+stderr to `log_path` when given); stopped by
        `close()` of the network."""
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        if log_path is not None:
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(self._argv(cmd), stdout=log, stderr=subprocess.STDOUT, **kwargs)
        else:
            proc = subprocess.Popen(self._argv(cmd), **kwargs)
        self.procs.append(proc)
        return proc

    def start_agent(
        self,
        master: Any,
        slots: int = 2,
        pool: Optional[str] = None,
        secret: Optional[str] = None,
        agent_id: Optional[str] = None,
        extra_args: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
    ) -> "NetnsAgent":
        """Starts `det agent run` in this namespace with `slots` artificial slots.

        `master`: a conftest `Master` (its port and join secret are used; the agent dials the
        bridge address `10.213.N.1`, never loopback), or a master URL `http://HOST:PORT` (then
        pass `secret`). `agent_id` defaults to the host name; `pool` is `--resource-pool`."""
        if isinstance(master, str):
            url = master
        else:
            url = self.network.master_url(master)
            if secret is None:
                secret = getattr(master, "agent_secret", None)
        return NetnsAgent(self, url, slots, pool, secret, agent_id or self.name, extra_args or [], env or {})

    def partition(self) -> None:
        """Cuts this host off the network (its veth's host side goes down); connections hang."""
        _ip("link", "set", self.veth, "down")

    def heal(self) -> None:
        """Restores the link cut by `partition()`."""
        _ip("link", "set", self.veth, "up")

    def _stop_processes(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass


def partition(host: Host) -> None:
    """Cuts `host` off the network (see `Host.partition`)."""
    host.partition()


def heal(host: Host) -> None:
    """Restores `host`'s link (see `Host.heal`)."""
    host.heal()


def _det_binary() -> Path:
    repo = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("RESOLUTE_DET_BIN", repo / "target" / "debug" / "det"))


# Client and database variables of the test process that must not leak into an agent.
_SCRUBBED = (
    "DET_MASTER",
    "DET_USER",
    "DET_PASS",
    "DET_USER_TOKEN",
    "DET_DEBUG_CONFIG_PATH",
    "DET_SECURITY_AGENT_SECRET",
    "DET_DB_HOST",
    "DET_DB_PORT",
    "DET_DB_USER",
    "DET_DB_PASSWORD",
    "DET_DB_NAME",
    "DET_DB_SSL_MODE",
)


class NetnsAgent:
    """A `det agent run` process inside a `Host`'s namespace (log: HOST_WORKDIR/agent-ID.log)."""

    def __init__(
        self,
        host: Host,
        master_url: str,
        slots: int,
        pool: Optional[str],
        secret: Optional[str],
        agent_id: str,
        extra_args: List[str],
        env: Dict[str, str],
    ) -> None:
        self.host = host
        self.agent_id = agent_id
        self.master_url = master_url
        m = re.match(r"^https?://\[?([^\]/]+?)\]?:(\d+)/?$", master_url)
        if m is None:
            raise ValueError(f"master URL {master_url!r}: expected http://HOST:PORT")
        self.workdir = host.workdir / f"agent-{agent_id}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = host.workdir / f"agent-{agent_id}.log"
        cmd = [
            str(_det_binary()),
            "agent",
            "run",
            "--master-host",
            m.group(1),
            "--master-port",
            m.group(2),
            "--agent-id",
            agent_id,
            "--artificial-slots",
            str(slots),
            "--python",
            os.environ.get("RESOLUTE_TRIAL_PYTHON", sys.executable),
            "--work-root",
            str(self.workdir / "tasks"),
        ]
        if pool is not None:
            cmd += ["--resource-pool", pool]
        cmd += extra_args
        child_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        if secret is not None:
            child_env["DET_SECURITY_AGENT_SECRET"] = secret
        child_env.update(env)
        self.proc = host.popen(cmd, log_path=self.log_path, cwd=self.workdir, env=child_env)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_registered(self, master_url: str, timeout: float = 60.0, user: str = "admin", password: str = "") -> Dict[str, Any]:
        """Polls `GET /api/v1/agents` at `master_url` (any URL the test process reaches) until
        this agent is listed with slots; returns its JSON."""
        from determined.common.api import bindings
        from determined.experimental import client

        session = client.Determined(master=master_url, user=user, password=password)._session
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent {self.agent_id} exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            for a in bindings.get_GetAgents(session).agents or []:
                if a.id == self.agent_id and a.slots:
                    return a.to_json()
            time.sleep(0.2)
        raise RuntimeError(f"agent {self.agent_id} did not register in {timeout} s; log:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM, SIGKILL after `timeout` s. Returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL (the agent process only; its tasks are in the namespace until `close()`)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_live_networks: "weakref.WeakSet[Network]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for net in list(_live_networks):
        net.close()
