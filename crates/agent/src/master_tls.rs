//! The agent's side of TLS to the master (upstream's agent `security.tls`): whether it dials
//! `wss://`, which certificate it trusts (`master_cert`, else the Mozilla roots; `skip_verify`
//! trusts any), the name it expects (`master_cert_name`), and what its tasks get so that the
//! harness reaches the master over HTTPS with the same trust: `DET_MASTER=https://…`,
//! `DET_USE_TLS`, `DET_MASTER_CERT_FILE` (a copy of `master_cert` in the task's work dir, or
//! `noverify`) and `DET_MASTER_CERT_NAME`, which upstream's `certs.default_load` reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use resolute_tls::{ClientTrust, TlsError};

use crate::config::AgentConfig;
use crate::work_files::WorkFile;

/// The file name of the master's certificate in a task's work dir.
pub const TASK_CERT_FILE: &str = ".det-master.crt";

/// `security.tls`, loaded once when the agent starts.
#[derive(Clone, Debug, Default)]
pub struct MasterTls {
    /// `None` when TLS is off.
    pub client: Option<Arc<rustls::ClientConfig>>,
    skip_verify: bool,
    cert_name: Option<String>,
    /// The PEM text of `master_cert`, copied into each task's work dir.
    cert_pem: Option<Vec<u8>>,
}

impl MasterTls {
    /// Reads `master_cert`; an unreadable or non-PEM file names the setting and the path.
    pub fn from_config(config: &AgentConfig) -> Result<MasterTls, TlsError> {
        let tls = &config.security.tls;
        if !tls.enabled {
            return Ok(MasterTls::default());
        }
        let cert_name = tls.master_cert_name.clone().filter(|n| !n.is_empty());
        let (trust, cert_pem) = match (&tls.master_cert, tls.skip_verify) {
            (_, true) => (ClientTrust::NoVerify, None),
            (Some(path), false) => {
                let certs = resolute_tls::read_certificates("security.tls.master_cert", path)?;
                let pem = std::fs::read(path).map_err(|source| TlsError::Read {
                    setting: "security.tls.master_cert".to_owned(),
                    path: path.clone(),
                    source,
                })?;
                (ClientTrust::RootsAnd(certs), Some(pem))
            }
            (None, false) => (ClientTrust::Roots, None),
        };
        let client = resolute_tls::client_config(&trust, cert_name.as_deref(), "security.tls.master_cert_name")?;
        Ok(MasterTls { client: Some(client), skip_verify: tls.skip_verify, cert_name, cert_pem })
    }

    pub fn enabled(&self) -> bool {
        self.client.is_some()
    }

    /// `http` or `https`, as tasks reach the master.
    pub fn scheme(&self) -> &'static str {
        if self.enabled() { "https" } else { "http" }
    }

    /// Adds the TLS variables to a task's environment, and the certificate to its work files.
    pub fn add_to_task(&self, env: &mut BTreeMap<String, String>, files: &mut Vec<WorkFile>, work_dir: &Path) {
        if !self.enabled() {
            return;
        }
        env.entry("DET_USE_TLS".to_owned()).or_insert_with(|| "true".to_owned());
        if let Some(name) = &self.cert_name {
            env.entry("DET_MASTER_CERT_NAME".to_owned()).or_insert_with(|| name.clone());
        }
        let cert_file: Option<PathBuf> = match (&self.cert_pem, self.skip_verify) {
            (_, true) => Some(PathBuf::from("noverify")),
            (Some(pem), false) => match WorkFile::new(TASK_CERT_FILE, pem.clone(), 0o644) {
                Ok(file) => {
                    files.push(file);
                    Some(work_dir.join(TASK_CERT_FILE))
                }
                Err(e) => {
                    tracing::warn!("cannot give tasks the master's certificate: {e}");
                    None
                }
            },
            (None, false) => None,
        };
        if let Some(path) = cert_file {
            env.entry("DET_MASTER_CERT_FILE".to_owned()).or_insert_with(|| path.display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TlsConfig;

    fn config(tls: TlsConfig) -> AgentConfig {
        let mut config = AgentConfig::default();
        config.security.tls = tls;
        config
    }

    #[test]
    fn tasks_reach_a_tls_master_over_https_with_a_copy_of_its_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["master.example".to_owned()]).unwrap().cert.pem();
        let path = dir.path().join("master.crt");
        std::fs::write(&path, &cert).unwrap();
        let tls = MasterTls::from_config(&config(TlsConfig {
            enabled: true,
            master_cert: Some(path),
            master_cert_name: Some("master.example".to_owned()),
            ..TlsConfig::default()
        }))
        .unwrap();
        assert_eq!(tls.scheme(), "https");
        let (mut env, mut files) = (BTreeMap::new(), Vec::new());
        tls.add_to_task(&mut env, &mut files, Path::new("/work/task-1"));
        assert_eq!(env["DET_USE_TLS"], "true");
        assert_eq!(env["DET_MASTER_CERT_NAME"], "master.example");
        assert_eq!(env["DET_MASTER_CERT_FILE"], "/work/task-1/.det-master.crt");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path(), Path::new(TASK_CERT_FILE));
    }

    #[test]
    fn skip_verify_gives_tasks_noverify_and_plain_agents_add_nothing() {
        let tls = MasterTls::from_config(&config(TlsConfig { enabled: true, skip_verify: true, ..TlsConfig::default() })).unwrap();
        let (mut env, mut files) = (BTreeMap::new(), Vec::new());
        tls.add_to_task(&mut env, &mut files, Path::new("/w"));
        assert_eq!(env["DET_MASTER_CERT_FILE"], "noverify");
        assert!(files.is_empty());

        let plain = MasterTls::from_config(&AgentConfig::default()).unwrap();
        assert_eq!(plain.scheme(), "http");
        let (mut env, mut files) = (BTreeMap::new(), Vec::new());
        plain.add_to_task(&mut env, &mut files, Path::new("/w"));
        assert!(env.is_empty() && files.is_empty());
    }

    #[test]
    fn an_unreadable_master_cert_names_the_setting_and_the_file() {
        let err = MasterTls::from_config(&config(TlsConfig {
            enabled: true,
            master_cert: Some(PathBuf::from("/no/such/master.crt")),
            ..TlsConfig::default()
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains("security.tls.master_cert") && err.contains("/no/such/master.crt"), "{err}");
        let disabled = config(TlsConfig { master_cert: Some(PathBuf::from("/c.pem")), ..TlsConfig::default() });
        assert!(disabled.validate().unwrap_err().to_string().contains("security.tls.enabled"));
    }
}
