"""A master serving HTTPS only (`security.tls.cert`/`key`, a self-signed certificate made here)
with the upstream CLI, SDK and harness: `det -m https://…` with DET_MASTER_CERT_FILE logs in,
creates an experiment that an agent verifying the master's certificate runs to completion (so the
harness reports over HTTPS too), and lists it; an agent given the wrong certificate is refused with
the reason in its output; a client without the certificate is refused."""

import datetime
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from determined.experimental import client

from conftest import CLIENT_ENV_VARS, DB_ENV_VARS, DetCli, compat_db, create_pg_database, free_port, master_binary, psql
from experiments import IRIS, ExpState, create, wait_state, write_config


# requests lets these replace a session's `verify` (upstream's way of trusting DET_MASTER_CERT_FILE)
# when a request passes none; a machine that sets them (a proxy's CA) would hide what is tested.
CA_BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def make_cert(dir: Path, prefix: str) -> Tuple[Path, Path]:
    """A self-signed certificate for `localhost` and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = dir / f"{prefix}-cert.pem", dir / f"{prefix}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class TlsMaster:
    """`det master run` with security.tls from master.yaml, on loopback."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.cert, key = make_cert(workdir, "master")
        self.port = free_port()
        self.url = f"https://localhost:{self.port}"
        config = workdir / "master.yaml"
        config.write_text(f"port: {self.port}\nlisten_address: 127.0.0.1\nsecurity:\n  tls:\n    cert: {self.cert}\n    key: {key}\n")
        self.env = {k: v for k, v in os.environ.items() if k not in DB_ENV_VARS}
        # As conftest's Master(tasks_as_root=True): the trials write under pytest's 0700 temp dirs.
        for key, value in [("UID", "0"), ("GID", "0"), ("USER", "root"), ("GROUP", "root")]:
            self.env[f"DET_SECURITY_DEFAULT_TASK_USER_{key}"] = value
        self.db = compat_db()
        if self.db == "postgres":
            self.env.update(create_pg_database())
        self.log_path = workdir / "master.log"
        cmd = [str(master_binary()), "master", "run", "--config-file", str(config), "--data-dir", str(workdir / "data")]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        context = ssl.create_default_context(cafile=str(self.cert))
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, f"TLS master exited early:\n{self.log_path.read_text()}"
            try:
                with urllib.request.urlopen(self.url + "/info", timeout=2, context=context) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            assert time.monotonic() < deadline, f"TLS master did not answer:\n{self.log_path.read_text()}"
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.db == "postgres":
            psql(f"DROP DATABASE IF EXISTS {self.env['DET_DB_NAME']} WITH (FORCE)")


@pytest.fixture(scope="module")
def tls_master(tmp_path_factory: pytest.TempPathFactory):
    m = TlsMaster(tmp_path_factory.mktemp("tls-master"))
    yield m
    m.close()


def start_agent(master: TlsMaster, workdir: Path, cert: Path, *extra: str) -> Tuple[subprocess.Popen, Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "agent.log"
    cmd: List[str] = [
        str(master_binary()),
        "agent",
        "run",
        "--master-host",
        "localhost",
        "--master-port",
        str(master.port),
        "--artificial-slots",
        "1",
        "--python",
        os.environ.get("RESOLUTE_TRIAL_PYTHON", sys.executable),
        "--work-root",
        str(workdir / "work"),
        "--security-tls-enabled",
        "--security-tls-master-cert",
        str(cert),
        *extra,
    ]
    drop = CLIENT_ENV_VARS + DB_ENV_VARS + CA_BUNDLE_VARS
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if k not in drop}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    return proc, log_path


def test_an_agent_with_the_wrong_certificate_is_refused(tls_master: TlsMaster, tmp_path: Path) -> None:
    wrong, _ = make_cert(tmp_path, "wrong")
    proc, log_path = start_agent(tls_master, tmp_path / "agent", wrong, "--agent-reconnect-attempts", "1")
    assert proc.wait(timeout=60) != 0
    log = log_path.read_text()
    assert "certificate is not trusted" in log and "security.tls.master_cert" in log, log


def test_upstream_cli_without_the_certificate_is_refused(tls_master: TlsMaster, tmp_path: Path) -> None:
    det = DetCli(tls_master.url, tmp_path / "det-config")
    for var in CA_BUNDLE_VARS:
        det.env.pop(var, None)
    # Upstream offers to trust the unknown certificate; declining ends the command.
    out = det.fails("user", "login", "admin", input="n\n")
    assert "Unable to verify master certificate" in out, out


def test_upstream_cli_sdk_and_harness_over_https(
    tls_master: TlsMaster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    det = DetCli(tls_master.url, tmp_path / "det-config")
    for var in CA_BUNDLE_VARS:
        det.env.pop(var, None)
        monkeypatch.delenv(var, raising=False)
    det.env["DET_MASTER_CERT_FILE"] = str(tls_master.cert)
    det.login("admin")
    assert "admin" in det.ok("user", "whoami")

    proc, log_path = start_agent(tls_master, tmp_path / "agent", tls_master.cert)
    try:
        config = write_config(
            IRIS / "const.yaml",
            tmp_path / "const.yaml",
            tmp_path / "checkpoints",
            name="iris-over-tls",
            searcher={"max_length": {"batches": 400}},
            min_validation_period={"batches": 200},
        )
        exp_id = create(det, config, IRIS, timeout=120)

        # The SDK, in this process, trusts the master through the same variable.
        monkeypatch.setenv("DET_MASTER_CERT_FILE", str(tls_master.cert))
        d = client.Determined(master=tls_master.url, user="admin", password="")
        exp = d.get_experiment(exp_id)
        try:
            wait_state(exp, {ExpState.COMPLETED}, timeout=240, context="on an agent verifying the master over TLS")
        except AssertionError as e:
            raise AssertionError(f"{e}\nagent log:\n{log_path.read_text()[-4000:]}") from e
        trial = exp.list_trials()[0]
        # Reported by the harness, necessarily over HTTPS: the master serves nothing else.
        validations = list(trial.iter_metrics("validation"))
        assert [m.steps_completed for m in validations] == [200, 400], validations
        assert "iris-over-tls" in det.ok("experiment", "list")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
