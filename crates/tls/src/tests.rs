//! Handshakes between our server and client configs over loopback, and the errors a user sees
//! for unusable files.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio::net::{TcpListener, TcpStream};

use super::*;

struct Pem {
    cert: String,
    key: String,
}

fn self_signed(names: &[&str], is_ca: bool) -> Pem {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if is_ca {
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    }
    let cert = params.self_signed(&key).unwrap();
    Pem { cert: cert.pem(), key: key.serialize_pem() }
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Serves one handshake with `pem`, connects with `trust`/`name` to `host`; the client's outcome.
async fn handshake(pem: &Pem, trust: ClientTrust, name: Option<&str>, host: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let server = server_config(
        "security.tls.cert",
        &write(dir.path(), "c.pem", &pem.cert),
        "security.tls.key",
        &write(dir.path(), "k.pem", &pem.key),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let _ = tokio_rustls::TlsAcceptor::from(server).accept(tcp).await;
    });
    let client = client_config(&trust, name, "DET_MASTER_CERT_FILE").unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let result = tokio_rustls::TlsConnector::from(client)
        .connect(ServerName::try_from(host.to_owned()).unwrap(), tcp)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string());
    accept.await.unwrap();
    result
}

fn certs(pem: &Pem) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    let dir = tempfile::tempdir().unwrap();
    read_certificates("DET_MASTER_CERT_FILE", &write(dir.path(), "c.pem", &pem.cert)).unwrap()
}

#[tokio::test]
async fn a_self_signed_master_is_trusted_only_with_its_certificate() {
    let pem = self_signed(&["localhost"], false);
    handshake(&pem, ClientTrust::RootsAnd(certs(&pem)), None, "localhost").await.unwrap();
    let refused = handshake(&pem, ClientTrust::Roots, None, "localhost").await.unwrap_err();
    assert!(refused.contains("UnknownIssuer"), "{refused}");
    let other = self_signed(&["localhost"], false);
    assert!(handshake(&pem, ClientTrust::RootsAnd(certs(&other)), None, "localhost").await.is_err());
    handshake(&pem, ClientTrust::NoVerify, None, "localhost").await.unwrap();
}

#[tokio::test]
async fn the_cert_name_replaces_the_host_name() {
    let pem = self_signed(&["master.example"], false);
    let trust = ClientTrust::RootsAnd(certs(&pem));
    let wrong = handshake(&pem, trust.clone(), None, "localhost").await.unwrap_err();
    assert!(wrong.contains("not valid for name"), "{wrong}");
    handshake(&pem, trust.clone(), Some("master.example"), "localhost").await.unwrap();
    assert!(handshake(&pem, trust, Some("other.example"), "localhost").await.is_err());
}

#[tokio::test]
async fn a_pinned_certificate_marked_as_ca_is_accepted_for_its_names() {
    // What `openssl req -x509` makes by default.
    let pem = self_signed(&["localhost"], true);
    handshake(&pem, ClientTrust::RootsAnd(certs(&pem)), None, "localhost").await.unwrap();
    assert!(handshake(&pem, ClientTrust::RootsAnd(certs(&pem)), Some("elsewhere"), "localhost").await.is_err());
}

#[test]
fn unusable_files_name_the_setting_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pem = self_signed(&["localhost"], false);
    let cert = write(dir.path(), "cert.pem", &pem.cert);
    let key = write(dir.path(), "key.pem", &pem.key);
    let missing = dir.path().join("missing.pem");
    let garbage = write(dir.path(), "garbage.pem", "not a pem file\n");
    let err = |c: &Path, k: &Path| server_config("security.tls.cert", c, "security.tls.key", k).unwrap_err().to_string();

    let e = err(&missing, &key);
    assert!(e.starts_with("security.tls.cert: cannot read") && e.contains("missing.pem"), "{e}");
    let e = err(&cert, &missing);
    assert!(e.starts_with("security.tls.key: cannot read") && e.contains("missing.pem"), "{e}");
    let e = err(&garbage, &key);
    assert!(e.starts_with("security.tls.cert:") && e.contains("garbage.pem") && e.contains("no PEM certificate"), "{e}");
    let e = err(&cert, &garbage);
    assert!(e.starts_with("security.tls.key:") && e.contains("garbage.pem") && e.contains("no PEM private key"), "{e}");
    // The key of another certificate.
    let other = write(dir.path(), "other.pem", &self_signed(&["localhost"], false).key);
    let e = err(&cert, &other);
    assert!(e.contains("cert.pem") && e.contains("other.pem") && e.contains("cannot be used together"), "{e}");
    // A truncated PEM block.
    let truncated = write(dir.path(), "truncated.pem", &pem.cert[..pem.cert.len() / 2]);
    let e = err(&truncated, &key);
    assert!(e.starts_with("security.tls.cert:") && e.contains("truncated.pem"), "{e}");
    assert!(server_config("security.tls.cert", &cert, "security.tls.key", &key).is_ok());
    let _ = Arc::new(());
}
