//! A master serving HTTPS (`security.tls.cert`/`key`, a self-signed certificate made here): our
//! CLI trusts it through `DET_MASTER_CERT_FILE` (or `noverify`), refuses it otherwise with a reason,
//! accepts another name with `DET_MASTER_CERT_NAME`; an agent verifies it against `master_cert`;
//! unusable certificate files stop the master with the setting and the file named.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{DET, Det, describe, free_port};

/// A self-signed certificate for `localhost` (only), written as PEM files.
struct Cert {
    cert: PathBuf,
    key: PathBuf,
}

fn make_cert(dir: &Path, prefix: &str) -> Cert {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().self_signed(&key).unwrap();
    let (cert_path, key_path) = (dir.join(format!("{prefix}-cert.pem")), dir.join(format!("{prefix}-key.pem")));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    Cert { cert: cert_path, key: key_path }
}

struct TlsMaster {
    child: Child,
    port: u16,
    dir: TempDir,
    cert: Cert,
}

impl TlsMaster {
    fn start() -> TlsMaster {
        let dir = tempfile::tempdir().unwrap();
        let cert = make_cert(dir.path(), "master");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("master.log")).unwrap();
        let mut child = Command::new(DET)
            .args(["master", "run", "--port", &port.to_string(), "--listen-address", "127.0.0.1", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--security-tls-cert")
            .arg(&cert.cert)
            .arg("--security-tls-key")
            .arg(&cert.key)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "TLS master exited early with {status}: {}",
                    std::fs::read_to_string(dir.path().join("master.log")).unwrap_or_default()
                );
            }
            assert!(Instant::now() < deadline, "TLS master did not listen within 30 s");
            sleep(Duration::from_millis(50));
        }
        TlsMaster { child, port, dir, cert }
    }

    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}", self.port)
    }
}

impl Drop for TlsMaster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_cli_talks_https_with_the_masters_certificate() {
    let master = TlsMaster::start();
    let cert = master.cert.cert.to_string_lossy().into_owned();
    let det = Det::new(&master.url("localhost"));
    let trusted = [("DET_MASTER_CERT_FILE", cert.as_str())];

    det.ok_env(&["user", "login", "admin"], "\n", &trusted);
    let list = det.ok_env(&["experiment", "list"], "", &trusted);
    assert!(list.contains("ID"), "{list}");
    assert!(det.ok_env(&["master", "info"], "", &trusted).contains("version"));

    // Without the certificate the handshake fails, and the error says what to set.
    let err = det.fails(&["experiment", "list"], "", &[]);
    assert!(err.contains("not trusted") && err.contains("DET_MASTER_CERT_FILE"), "{err}");
    // Another certificate is no better.
    let other = make_cert(master.dir.path(), "other");
    let other = other.cert.to_string_lossy().into_owned();
    let err = det.fails(&["experiment", "list"], "", &[("DET_MASTER_CERT_FILE", other.as_str())]);
    assert!(err.contains("not trusted"), "{err}");
    // `noverify`, as upstream, trusts anything.
    det.ok_env(&["experiment", "list"], "", &[("DET_MASTER_CERT_FILE", "noverify")]);
    // The certificate the upstream CLI stored for this master (trust on first use) is trusted.
    let stored = serde_json::json!({ det.master.clone(): std::fs::read_to_string(&master.cert.cert).unwrap() });
    std::fs::write(det.config.path().join("certs.json"), stored.to_string()).unwrap();
    assert!(det.ok_env(&["experiment", "list"], "", &[]).contains("ID"));
    std::fs::remove_file(det.config.path().join("certs.json")).unwrap();
    // A cert file that is not PEM is named.
    let garbage = master.dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let err = det.fails(&["experiment", "list"], "", &[("DET_MASTER_CERT_FILE", garbage.to_str().unwrap())]);
    assert!(err.contains("DET_MASTER_CERT_FILE") && err.contains("garbage.pem"), "{err}");
}

#[test]
fn the_cert_name_overrides_the_host_name() {
    let master = TlsMaster::start();
    let cert = master.cert.cert.to_string_lossy().into_owned();
    // The certificate names `localhost`; the URL says 127.0.0.1.
    let det = Det::new(&master.url("127.0.0.1"));
    let err = det.fails(&["user", "login", "admin"], "\n", &[("DET_MASTER_CERT_FILE", cert.as_str())]);
    assert!(err.contains("not valid for name") && err.contains("DET_MASTER_CERT_NAME"), "{err}");
    let named = [("DET_MASTER_CERT_FILE", cert.as_str()), ("DET_MASTER_CERT_NAME", "localhost")];
    det.ok_env(&["user", "login", "admin"], "\n", &named);
    assert!(det.ok_env(&["experiment", "list"], "", &named).contains("ID"));
}

#[test]
fn plain_http_gets_no_answer_from_a_tls_master() {
    let master = TlsMaster::start();
    let det = Det::new(&format!("http://127.0.0.1:{}", master.port));
    let err = det.fails(&["experiment", "list"], "", &[]);
    assert!(err.contains("cannot reach the master"), "{err}");
}

/// `det agent run` against the TLS master; returns its output once it exits.
fn agent(master: &TlsMaster, cert: &Path, extra: &[&str]) -> Child {
    let work = master.dir.path().join(format!("agent-{}", extra.len()));
    Command::new(DET)
        .args(["agent", "run", "--master-host", "localhost", "--master-port", &master.port.to_string()])
        .args(["--agent-id", "tls-agent", "--artificial-slots", "1", "--security-tls-enabled", "--security-tls-master-cert"])
        .arg(cert)
        .arg("--work-root")
        .arg(work)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn the_agent_verifies_the_masters_certificate() {
    let master = TlsMaster::start();
    let det = Det::new(&master.url("localhost"));
    let cert = master.cert.cert.to_string_lossy().into_owned();
    let trusted = [("DET_MASTER_CERT_FILE", cert.as_str())];

    // A wrong certificate: refused, with the reason, and the agent gives up.
    let other = make_cert(master.dir.path(), "other");
    let out = agent(&master, &other.cert, &["--agent-reconnect-attempts", "1"]).wait_with_output().unwrap();
    assert!(!out.status.success(), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certificate is not trusted") && stderr.contains("security.tls.master_cert"), "{stderr}");

    // The right one: the agent joins over wss://.
    let mut good = agent(&master, &master.cert.cert, &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = det.ok_env(&["agent", "list"], "", &trusted);
        if list.contains("tls-agent") {
            break;
        }
        if let Ok(Some(status)) = good.try_wait() {
            panic!("the agent exited with {status}: {}", describe(&good.wait_with_output().unwrap()));
        }
        assert!(Instant::now() < deadline, "the agent did not join within 30 s: {list}");
        sleep(Duration::from_millis(200));
    }
    let _ = good.kill();
    let _ = good.wait();
}

#[test]
fn unusable_certificate_files_stop_the_master_with_the_setting_named() {
    let dir = tempfile::tempdir().unwrap();
    let cert = make_cert(dir.path(), "m");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n").unwrap();
    let missing = dir.path().join("missing-key.pem");
    let run = |cert: &Path, key: &Path| {
        Command::new(DET)
            .args(["master", "run", "--port", &free_port().to_string(), "--listen-address", "127.0.0.1", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--security-tls-cert")
            .arg(cert)
            .arg("--security-tls-key")
            .arg(key)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&cert.cert, &missing);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("security.tls.key") && stderr.contains("missing-key.pem"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let out = run(&garbage, &cert.key);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("security.tls.cert") && stderr.contains("garbage.pem"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
