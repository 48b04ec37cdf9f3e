//! Which certificate the CLI trusts for an `https://` master, as upstream's
//! `certs.default_load`: `DET_MASTER_CERT_FILE` (a PEM file, or `noverify`), else the certificate
//! the upstream CLI stored for this master in `certs.json` beside `auth.json`; and
//! `DET_MASTER_CERT_NAME`, the name the certificate must carry instead of the URL's host. The
//! same rustls config serves reqwest (REST, streams) and tokio-tungstenite (`det tunnel`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use resolute_tls::{ClientTrust, TlsError};
use rustls::ClientConfig;

/// What to trust, before it becomes a rustls config.
#[derive(Clone, Debug, Default)]
pub struct MasterCert {
    pub trust: ClientTrust,
    pub name: Option<String>,
    /// Where `trust` came from, for error messages.
    pub origin: String,
}

impl MasterCert {
    /// Explicit options (`det tunnel --cert-file/--cert-name`) replace the environment and the
    /// store, as upstream's explicit arguments do.
    pub fn explicit(cert_file: Option<&str>, name: Option<&str>) -> Result<MasterCert, TlsError> {
        let name = name.filter(|n| !n.is_empty()).map(str::to_owned);
        let trust = match cert_file {
            Some(f) if f.eq_ignore_ascii_case("noverify") => ClientTrust::NoVerify,
            Some(f) => ClientTrust::RootsAnd(resolute_tls::read_certificates("--cert-file", Path::new(f))?),
            None => ClientTrust::Roots,
        };
        Ok(MasterCert { trust, name, origin: "--cert-file".to_owned() })
    }

    /// `DET_MASTER_CERT_FILE`, else `certs.json`; `DET_MASTER_CERT_NAME`.
    pub fn from_environment(master: &str) -> Result<MasterCert, TlsError> {
        let name = std::env::var("DET_MASTER_CERT_NAME").ok().filter(|n| !n.is_empty());
        let env_path = std::env::var("DET_MASTER_CERT_FILE").ok().filter(|p| !p.is_empty());
        let (trust, origin) = match env_path {
            Some(p) if p.eq_ignore_ascii_case("noverify") => (ClientTrust::NoVerify, "DET_MASTER_CERT_FILE".to_owned()),
            Some(p) if Path::new(&p).exists() => (
                ClientTrust::RootsAnd(resolute_tls::read_certificates("DET_MASTER_CERT_FILE", Path::new(&p))?),
                "DET_MASTER_CERT_FILE".to_owned(),
            ),
            Some(p) => {
                // Upstream warns and goes on with the default roots.
                eprintln!("DET_MASTER_CERT_FILE={p} path not found; continuing without cert");
                (ClientTrust::Roots, "the default roots".to_owned())
            }
            None => match stored_certificate(master) {
                Some((store, pem)) => {
                    let certs =
                        parse_stored(&pem).map_err(|message| TlsError::Unusable { setting: store.display().to_string(), message })?;
                    (ClientTrust::RootsAnd(certs), store.display().to_string())
                }
                None => (ClientTrust::Roots, "the default roots".to_owned()),
            },
        };
        Ok(MasterCert { trust, name, origin })
    }

    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        resolute_tls::client_config(&self.trust, self.name.as_deref(), "DET_MASTER_CERT_NAME")
    }
}

/// The rustls config for `master` from the environment, built once per master and process (so a
/// missing-file warning is printed once). `http://` masters get the default roots without
/// reading anything.
pub fn config_for(master: &str) -> Result<Arc<ClientConfig>, TlsError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<ClientConfig>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(config) = cache.lock().ok().and_then(|c| c.get(master).cloned()) {
        return Ok(config);
    }
    let cert = if master.starts_with("https://") { MasterCert::from_environment(master)? } else { MasterCert::default() };
    let config = cert.client_config()?;
    if let Ok(mut c) = cache.lock() {
        c.insert(master.to_owned(), config.clone());
    }
    Ok(config)
}

/// The upstream CLI's trust-on-first-use store: `{"<master url>": "<PEM chain>"}`.
fn stored_certificate(master: &str) -> Option<(std::path::PathBuf, String)> {
    let store = crate::auth_store::default_path().ok()?.with_file_name("certs.json");
    let text = std::fs::read_to_string(&store).ok()?;
    let map: HashMap<String, serde_json::Value> = serde_json::from_str(&text).ok()?;
    let pem = map.get(master)?.as_str()?.to_owned();
    Some((store, pem))
}

fn parse_stored(pem: &str) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("the stored certificate is not PEM".to_owned());
    }
    Ok(certs)
}

/// The hint added to a failed `https://` connection whose cause is the certificate.
pub fn untrusted_hint(cause: &str) -> Option<&'static str> {
    let lower = cause.to_ascii_lowercase();
    (lower.contains("certificate") || lower.contains("unknownissuer") || lower.contains("not valid for name")).then_some(
        "the master's TLS certificate is not trusted: set DET_MASTER_CERT_FILE to its PEM file (or to noverify), \
         and DET_MASTER_CERT_NAME if the certificate names another host",
    )
}
