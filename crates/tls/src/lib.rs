//! TLS for the master (serving), and the CLI and the agent (connecting), on rustls with the aws-lc
//! provider. One place decides how PEM files are read and what a client trusts, so the CLI, the
//! agent and the tests cannot disagree.
//!
//! Client trust follows upstream's `determined.common.api.certs`: the Mozilla roots (upstream uses
//! certifi, we use the same list from `webpki-roots`) plus the certificates of a PEM file, or no
//! verification at all (`noverify`); an optional name replaces the host name the certificate must
//! carry (`DET_MASTER_CERT_NAME`).

mod client;
mod server;

pub use client::{ClientTrust, client_config};
pub use server::server_config;

use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// A TLS setting that cannot be used; every variant names the setting and the file.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{setting}: cannot read {path}: {source}")]
    Read { setting: String, path: PathBuf, source: std::io::Error },
    #[error("{setting}: {path} holds no PEM certificate (expected a -----BEGIN CERTIFICATE----- block)")]
    NoCertificate { setting: String, path: PathBuf },
    #[error("{setting}: {path} holds no PEM private key (expected a -----BEGIN PRIVATE KEY-----, RSA or EC key block)")]
    NoKey { setting: String, path: PathBuf },
    #[error("{setting}: {path} is not valid PEM: {message}")]
    BadPem { setting: String, path: PathBuf, message: String },
    #[error("{setting}: {message}")]
    Unusable { setting: String, message: String },
}

/// Every certificate in the PEM file at `path`; `setting` names where the path came from.
pub fn read_certificates(setting: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read { setting: setting.to_owned(), path: path.to_owned(), source })?;
    let certs = CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>().map_err(|e| TlsError::BadPem {
        setting: setting.to_owned(),
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { setting: setting.to_owned(), path: path.to_owned() });
    }
    Ok(certs)
}

/// The aws-lc provider, which every config here is built with (no process-wide default needed).
pub(crate) fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

#[cfg(test)]
mod tests;
