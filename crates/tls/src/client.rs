//! What a client (our CLI, the agent) trusts when it connects to an `https://`/`wss://` master.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

use crate::{TlsError, provider};

/// Which server certificates a client accepts.
#[derive(Clone, Debug, Default)]
pub enum ClientTrust {
    /// The Mozilla roots only.
    #[default]
    Roots,
    /// The Mozilla roots plus these certificates (a private CA, or the master's own self-signed
    /// certificate, which is then accepted as it is).
    RootsAnd(Vec<CertificateDer<'static>>),
    /// Any certificate (upstream's `noverify`, the agent's `skip_verify`).
    NoVerify,
}

/// A client config for `trust`; `name` (when set) is the name the master's certificate must carry
/// instead of the host name in the URL (`DET_MASTER_CERT_NAME`, `master_cert_name`).
pub fn client_config(trust: &ClientTrust, name: Option<&str>, setting: &str) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let name = match name.filter(|n| !n.is_empty()) {
        Some(n) => Some(ServerName::try_from(n.to_owned()).map_err(|e| TlsError::Unusable {
            setting: setting.to_owned(),
            message: format!("{n:?} is not a valid certificate name: {e}"),
        })?),
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match trust {
        ClientTrust::NoVerify => Arc::new(AcceptAny(provider.clone())),
        ClientTrust::Roots | ClientTrust::RootsAnd(_) => {
            let extra = match trust {
                ClientTrust::RootsAnd(certs) => certs.clone(),
                _ => Vec::new(),
            };
            let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            for cert in &extra {
                roots.add(cert.clone()).map_err(|e| TlsError::Unusable {
                    setting: setting.to_owned(),
                    message: format!("a certificate cannot be used as a trust anchor: {e}"),
                })?;
            }
            let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| TlsError::Unusable { setting: setting.to_owned(), message: e.to_string() })?;
            Arc::new(MasterVerifier { inner, pinned: extra, name })
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Unusable { setting: setting.to_owned(), message: e.to_string() })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// WebPKI verification against the roots, checking `name` instead of the URL's host when set. A
/// certificate the user gave us byte for byte is accepted for its names even where WebPKI would
/// not take it as a leaf (`openssl req -x509` marks its certificates as CAs, which OpenSSL-based
/// upstream clients accept).
#[derive(Debug)]
struct MasterVerifier {
    inner: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    name: Option<ServerName<'static>>,
}

impl ServerCertVerifier for MasterVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let name = self.name.as_ref().unwrap_or(server_name);
        match self.inner.verify_server_cert(end_entity, intermediates, name, ocsp, now) {
            Ok(verified) => Ok(verified),
            Err(e) if self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => {
                let parsed = ParsedCertificate::try_from(end_entity).map_err(|_| e)?;
                rustls::client::verify_server_name(&parsed, name)?;
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Accepts any certificate, still checking that the server holds its key.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
