use std::io::Write;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn defaults_match_upstream() {
    let c = MasterConfig::load_with_env(None, &[], &[]).unwrap();
    assert_eq!(c.port, 8080);
    assert_eq!(c.db.port, 5432);
    assert_eq!(c.db.user, "postgres");
    assert_eq!(c.db.name, "determined");
    assert!(!c.uses_postgres());
    assert_eq!(c.security.token.default_lifespan_days, 7);
    assert_eq!(c.tensorboard_timeout, 300);
}

#[test]
fn tensorboard_timeout_comes_from_the_file_env_or_flag() {
    let c = MasterConfig::from_tree(serde_json::json!({"tensorboard_timeout": 60})).unwrap();
    assert_eq!(c.tensorboard_timeout, 60);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = MasterConfig::load_with_env(None, &env(&[("DET_TENSORBOARD_TIMEOUT", "5")]), &[]).unwrap();
    assert_eq!(c.tensorboard_timeout, 5);
    let c = MasterConfig::load_with_env(None, &[], &[("tensorboard_timeout", "0".to_owned())]).unwrap();
    assert_eq!(c.tensorboard_timeout, 0);
    let err = MasterConfig::load_with_env(None, &env(&[("DET_TENSORBOARD_TIMEOUT", "soon")]), &[]).unwrap_err();
    assert!(err.to_string().contains("DET_TENSORBOARD_TIMEOUT"), "{err}");
}

#[test]
fn file_then_env_then_flags() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "port: 9000\ndb:\n  host: filehost\n  password: secret\ncluster_name: from-file").unwrap();
    let e = env(&[("DET_DB_HOST", "envhost"), ("DET_PORT", "9100"), ("DET_MASTER", "ignored:8080")]);
    let flags = [("port", "9200".to_owned()), ("security.initial_user_password", "1234".to_owned())];
    let c = MasterConfig::load_with_env(Some(file.path()), &e, &flags).unwrap();
    assert_eq!(c.port, 9200, "flags win");
    assert_eq!(c.db.host, "envhost", "env beats the file");
    assert_eq!(c.db.password, "secret");
    assert_eq!(c.cluster_name, "from-file");
    assert_eq!(c.security.initial_user_password.as_deref(), Some("1234"), "numeric-looking passwords stay text");
}

#[test]
fn setting_names_follow_upstream() {
    let s = SETTINGS.iter().find(|s| s.path == "db.ssl_mode").unwrap();
    assert_eq!(s.env_var(), "DET_DB_SSL_MODE");
    assert_eq!(s.flag(), "db-ssl-mode");
}

#[test]
fn bad_values_name_the_field() {
    let err = MasterConfig::load_with_env(None, &env(&[("DET_PORT", "eighty")]), &[]).unwrap_err();
    assert!(err.to_string().contains("DET_PORT") && err.to_string().contains("port number"), "{err}");

    let tree = serde_json::json!({"db": {"ssl_mode": "sometimes"}});
    let err = MasterConfig::from_tree(tree).unwrap_err();
    assert!(err.to_string().contains("db.ssl_mode"), "{err}");

    let tree = serde_json::json!({"port": "x"});
    assert!(MasterConfig::from_tree(tree).is_err());
}

#[test]
fn unknown_and_upstream_only_keys_warn() {
    let tree = serde_json::json!({"resource_manager": {"type": "agent", "require_authentication": true}, "telemetry": {},
        "resource_pools": [{"pool_name": "default", "scheduler": {"type": "priority", "preemption": true}}],
        "db": {"hots": "x"}, "bogus": 1});
    let c = MasterConfig::from_tree(tree).unwrap();
    let all = c.warnings.join("\n");
    assert!(all.contains("`resource_manager.require_authentication` is not supported"), "{all}");
    assert!(all.contains("`telemetry` is not supported"), "{all}");
    // What we honour is not warned about.
    assert!(!all.contains("resource_pools") && !all.contains("`resource_manager` "), "{all}");
    assert_eq!(c.resource_pools.get("default").map(|p| p.scheduler.policy.preemption()), Some(true));
    assert!(all.contains("db.hots"), "{all}");
    assert!(all.contains("bogus"), "{all}");
}

#[test]
fn unreadable_and_malformed_files_are_errors() {
    let err = MasterConfig::load_with_env(Some(Path::new("/nonexistent/master.yaml")), &[], &[]).unwrap_err();
    assert!(matches!(err, ConfigError::Read { .. }));
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "port: [unclosed").unwrap();
    let err = MasterConfig::load_with_env(Some(file.path()), &[], &[]).unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
}

#[test]
fn default_task_user_is_unprivileged_unless_configured() {
    let c = MasterConfig::load_with_env(None, &[], &[]).unwrap();
    assert_eq!(c.security.default_task_user, DefaultTaskUser { uid: 65534, gid: 65534, user: "nobody".into(), group: "nogroup".into() });
    let c = MasterConfig::from_tree(
        serde_json::json!({"security": {"default_task_user": {"uid": 1000, "gid": 100, "user": "ml", "group": "users"}}}),
    )
    .unwrap();
    assert_eq!(c.security.default_task_user, DefaultTaskUser { uid: 1000, gid: 100, user: "ml".into(), group: "users".into() });
    let vars = env(&[("DET_SECURITY_DEFAULT_TASK_USER_UID", "0"), ("DET_SECURITY_DEFAULT_TASK_USER_USER", "root")]);
    let c = MasterConfig::load_with_env(None, &vars, &[]).unwrap();
    assert_eq!((c.security.default_task_user.uid, c.security.default_task_user.user.as_str()), (0, "root"));
    let err = MasterConfig::load_with_env(None, &env(&[("DET_SECURITY_DEFAULT_TASK_USER_UID", "-1")]), &[]).unwrap_err();
    assert!(err.to_string().contains("security.default_task_user.uid"), "{err}");
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"default_task_user": {"group": ""}}})).unwrap_err();
    assert!(err.to_string().contains("security.default_task_user.group"), "{err}");
}

#[test]
fn agent_secret_comes_from_the_file_env_flag_or_a_secret_file() {
    assert_eq!(MasterConfig::load_with_env(None, &[], &[]).unwrap().agent_secret, None);
    let c = MasterConfig::from_tree(serde_json::json!({"security": {"agent_secret": "s3cret"}})).unwrap();
    assert_eq!(c.agent_secret.as_deref(), Some("s3cret"));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c = MasterConfig::load_with_env(None, &env(&[("DET_SECURITY_AGENT_SECRET", "from-env")]), &[]).unwrap();
    assert_eq!(c.agent_secret.as_deref(), Some("from-env"));
    let c = MasterConfig::load_with_env(None, &[], &[("security.agent_secret", "from-flag".to_owned())]).unwrap();
    assert_eq!(c.agent_secret.as_deref(), Some("from-flag"));
    assert_eq!(SETTINGS.iter().find(|s| s.path == "security.agent_secret").unwrap().flag(), "security-agent-secret");

    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "  from-file  ").unwrap();
    let path = file.path().display().to_string();
    let c = MasterConfig::load_with_env(None, &env(&[("DET_SECURITY_AGENT_SECRET_FILE", &path)]), &[]).unwrap();
    assert_eq!(c.agent_secret.as_deref(), Some("from-file"));
    // The secret never appears in a serialized configuration.
    assert!(!serde_json::to_string(&c).unwrap().contains("from-file"));
    let c = MasterConfig::from_tree(serde_json::json!({"security": {"agent_secret": "hidden"}})).unwrap();
    assert!(!serde_json::to_string(&c).unwrap().contains("hidden"));

    let err = MasterConfig::from_tree(serde_json::json!({"security": {"agent_secret": "a", "agent_secret_file": path}})).unwrap_err();
    assert!(err.to_string().contains("not both"), "{err}");
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"agent_secret": "  "}})).unwrap_err();
    assert!(err.to_string().contains("security.agent_secret") && err.to_string().contains("empty"), "{err}");
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"agent_secret_file": "/no/such/secret"}})).unwrap_err();
    assert!(err.to_string().contains("security.agent_secret_file") && err.to_string().contains("/no/such/secret"), "{err}");
}

#[test]
fn tls_keys_come_from_the_file_env_or_flags_and_move_the_default_port() {
    let c = MasterConfig::from_tree(serde_json::json!({"security": {"tls": {"cert": "/c.pem", "key": "/k.pem"}}})).unwrap();
    assert!(c.warnings.is_empty(), "security.tls is not ignored any more: {:?}", c.warnings);
    assert!(c.tls_enabled());
    assert_eq!(c.security.tls.cert.as_deref(), Some(Path::new("/c.pem")));
    assert_eq!(c.port, 8443, "upstream's default port with TLS");
    let c = MasterConfig::from_tree(serde_json::json!({"port": 9000, "security": {"tls": {"cert": "/c.pem", "key": "/k.pem"}}})).unwrap();
    assert_eq!(c.port, 9000);
    let e = env(&[("DET_SECURITY_TLS_CERT", "/e.pem"), ("DET_SECURITY_TLS_KEY", "/ek.pem")]);
    let c = MasterConfig::load_with_env(None, &e, &[("security.tls.key", "/flag.pem".to_owned())]).unwrap();
    assert_eq!(c.security.tls.cert.as_deref(), Some(Path::new("/e.pem")));
    assert_eq!(c.security.tls.key.as_deref(), Some(Path::new("/flag.pem")));
    assert!(!MasterConfig::load_with_env(None, &[], &[]).unwrap().tls_enabled());
}

#[test]
fn a_cert_without_its_key_is_refused_naming_the_missing_key() {
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"tls": {"cert": "/c.pem"}}})).unwrap_err().to_string();
    assert!(err.contains("security.tls.key"), "{err}");
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"tls": {"key": "/k.pem"}}})).unwrap_err().to_string();
    assert!(err.contains("security.tls.cert"), "{err}");
    let err = MasterConfig::from_tree(serde_json::json!({"security": {"tls": {"cert": "", "key": "/k.pem"}}})).unwrap_err().to_string();
    assert!(err.contains("security.tls.cert") && err.contains("empty"), "{err}");
}

#[test]
fn listen_address_defaults_to_every_interface_and_must_be_an_ip() {
    let c = MasterConfig::load_with_env(None, &[], &[]).unwrap();
    assert_eq!(c.listen_addr().to_string(), "0.0.0.0:8080");
    let c = MasterConfig::load_with_env(None, &env(&[("DET_LISTEN_ADDRESS", "127.0.0.1")]), &[]).unwrap();
    assert_eq!(c.listen_addr().to_string(), "127.0.0.1:8080");
    let c = MasterConfig::load_with_env(None, &[], &[("listen_address", "::1".to_owned())]).unwrap();
    assert_eq!(c.listen_addr().to_string(), "[::1]:8080");
    let err = MasterConfig::load_with_env(None, &[], &[("listen_address", "localhost:80".to_owned())]).unwrap_err().to_string();
    assert!(err.contains("listen_address") && err.contains("not an IP address"), "{err}");
}

#[test]
fn enable_prometheus_comes_from_the_file_env_or_flag() {
    assert!(!MasterConfig::load_with_env(None, &[], &[]).unwrap().observability.enable_prometheus, "off by default");
    let c = MasterConfig::from_tree(serde_json::json!({"observability": {"enable_prometheus": true}})).unwrap();
    assert!(c.observability.enable_prometheus && c.warnings.is_empty(), "{:?}", c.warnings);
    let c = MasterConfig::load_with_env(None, &env(&[("DET_OBSERVABILITY_ENABLE_PROMETHEUS", "true")]), &[]).unwrap();
    assert!(c.observability.enable_prometheus);
    let c = MasterConfig::load_with_env(None, &[], &[("observability.enable_prometheus", "false".to_owned())]).unwrap();
    assert!(!c.observability.enable_prometheus);
    let err = MasterConfig::load_with_env(None, &env(&[("DET_OBSERVABILITY_ENABLE_PROMETHEUS", "sure")]), &[]).unwrap_err();
    assert!(err.to_string().contains("DET_OBSERVABILITY_ENABLE_PROMETHEUS") && err.to_string().contains("true or false"), "{err}");
}

#[test]
fn agent_reconnect_and_reattach_waits_come_from_the_file_env_or_flag() {
    let c = MasterConfig::default();
    assert_eq!((c.agent_reconnect_wait, c.agent_reattach_wait), (25, 60));
    let c = MasterConfig::from_tree(serde_json::json!({"agent_reconnect_wait": 5, "agent_reattach_wait": 0})).unwrap();
    assert_eq!((c.agent_reconnect_wait, c.agent_reattach_wait), (5, 0));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let c =
        MasterConfig::load_with_env(None, &env(&[("DET_AGENT_RECONNECT_WAIT", "3")]), &[("agent_reattach_wait", "7".to_owned())]).unwrap();
    assert_eq!((c.agent_reconnect_wait, c.agent_reattach_wait), (3, 7));
    let err = MasterConfig::load_with_env(None, &env(&[("DET_AGENT_REATTACH_WAIT", "-1")]), &[]).unwrap_err();
    assert!(err.to_string().contains("DET_AGENT_REATTACH_WAIT"), "{err}");
}
