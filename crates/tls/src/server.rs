//! The master's server side: `security.tls.cert` (the certificate chain, leaf first) and
//! `security.tls.key` (its private key) read into a rustls server config serving HTTP/1.1.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;

use crate::{TlsError, provider, read_certificates};

/// Reads the chain and key; `cert_setting`/`key_setting` name them in errors.
pub fn server_config(cert_setting: &str, cert: &Path, key_setting: &str, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = read_certificates(cert_setting, cert)?;
    let bytes = std::fs::read(key).map_err(|source| TlsError::Read { setting: key_setting.to_owned(), path: key.to_owned(), source })?;
    let key_der = match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(k) => k,
        Err(rustls::pki_types::pem::Error::NoItemsFound) => {
            return Err(TlsError::NoKey { setting: key_setting.to_owned(), path: key.to_owned() });
        }
        Err(e) => return Err(TlsError::BadPem { setting: key_setting.to_owned(), path: key.to_owned(), message: e.to_string() }),
    };
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Unusable { setting: cert_setting.to_owned(), message: e.to_string() })?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| TlsError::Unusable {
            setting: format!("{cert_setting}/{key_setting}"),
            message: format!("{} and {} cannot be used together: {e}", cert.display(), key.display()),
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
