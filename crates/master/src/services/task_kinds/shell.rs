//! Shells: an sshd of the task's own, on the port the agent picks, reached through the master's
//! `/proxy/<id>/` TCP tunnel (upstream's `det shell open` runs ssh with `det tunnel` as its
//! `ProxyCommand`). The master makes a fresh key pair per shell: the public half is the only
//! authorized key, the private half is what `GET /api/v1/shells/{id}` hands the CLI, so the proxy
//! lets anyone open the tunnel (as upstream) and sshd decides who gets in.

use base64::Engine;
use serde_json::{Value, json};
use ssh_key::rand_core::OsRng;
use ssh_key::{Algorithm, LineEnding, PrivateKey};

use super::{KindLaunch, default_key};
use crate::domain::task_service::{LaunchFile, SERVICE_PORT_ENV, ServiceSpec};
use crate::error::{ApiError, ApiResult};

/// sshd's line (with `-e`) once it listens.
pub const READY_PATTERN: &str = r"Server listening on";

/// Where the shell's files live, relative to the task's work dir.
const SSH_DIR: &str = ".det/ssh";

/// Starts sshd with a config of its own: this shell's host key and authorized key, no PAM (the
/// agent's user need not have a password), and every session through `session.sh`.
const SSHD_SCRIPT: &str = r#"# The sshd of a det shell (written by the master; see services/task_kinds/shell.rs).
set -e
dir="$PWD/.det/ssh"
sshd_bin=$(command -v sshd 2>/dev/null || true)
[ -n "$sshd_bin" ] || sshd_bin=/usr/sbin/sshd
if [ ! -x "$sshd_bin" ]; then
    echo "det shell: sshd not found; install OpenSSH's server (openssh-server) on the agent" >&2
    exit 127
fi
# Privilege separation needs this directory when sshd runs as root.
mkdir -p /run/sshd 2>/dev/null || true
# The task's environment for every session (sshd starts sessions with a clean one); the
# login's own variables are sshd's to set.
(unset HOME USER LOGNAME SHELL PWD OLDPWD SHLVL TERM MAIL _ SSH_CLIENT SSH_CONNECTION SSH_TTY \
    SSH_AUTH_SOCK SSH_ORIGINAL_COMMAND; export -p) > "$dir/environment"
cat > "$dir/sshd_config" <<EOF
HostKey "$dir/host_key"
AuthorizedKeysFile "$dir/authorized_keys"
PidFile none
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
ForceCommand /bin/sh "$dir/session.sh"
EOF
exec "$sshd_bin" -D -e -f "$dir/sshd_config" -p "$DET_SERVICE_PORT" -o ListenAddress="${DET_SERVICE_HOST:-0.0.0.0}"
"#;

/// One ssh session: the task's environment and work dir, then the client's command (as sshd
/// would run it) or a login shell.
const SESSION_SCRIPT: &str = r#"# One session of a det shell (written by the master; see services/task_kinds/shell.rs).
dir=$(dirname "$0")
. "$dir/environment"
cd "$dir/../.." 2>/dev/null || true
if [ -n "$SSH_ORIGINAL_COMMAND" ]; then
    exec "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"
fi
exec "${SHELL:-/bin/sh}" -l
"#;

/// The shell's key pair, OpenSSH encodings.
struct KeyPair {
    private_openssh: String,
    public_openssh: String,
}

fn generate_key(comment: &str) -> ApiResult<KeyPair> {
    let mut key = PrivateKey::random(&mut OsRng, Algorithm::Ed25519).map_err(|e| {
        tracing::error!(error = %e, "generating a shell key");
        ApiError::internal()
    })?;
    key.set_comment(comment);
    let private_openssh = key.to_openssh(LineEnding::LF).map_err(|e| {
        tracing::error!(error = %e, "encoding a shell key");
        ApiError::internal()
    })?;
    let public_openssh = key.public_key().to_openssh().map_err(|e| {
        tracing::error!(error = %e, "encoding a shell's public key");
        ApiError::internal()
    })?;
    Ok(KeyPair { private_openssh: private_openssh.to_string(), public_openssh })
}

fn file(name: &str, content: &str, mode: u32) -> LaunchFile {
    LaunchFile {
        path: format!("{SSH_DIR}/{name}"),
        content_b64: base64::engine::general_purpose::STANDARD.encode(content.as_bytes()),
        mode,
    }
}

pub fn prepare(task_id: &str, mut config: Value, mut extra: Value) -> ApiResult<KindLaunch> {
    let user_key = generate_key(&format!("det-shell-{task_id}"))?;
    let host_key = generate_key(&format!("det-shell-host-{task_id}"))?;
    default_key(&mut config, "entrypoint", Value::String(format!("exec /bin/sh {SSH_DIR}/sshd.sh")));
    let service = ServiceSpec {
        port_env: Some(SERVICE_PORT_ENV.to_owned()),
        ready_pattern: Some(READY_PATTERN.to_owned()),
        proxy: Some("tcp".to_owned()),
        // Anyone may open the tunnel; sshd admits only the holder of this shell's key.
        unauthenticated: true,
    };
    extra["service"] = json!(service);
    extra["files"] = json!([
        file("host_key", &host_key.private_openssh, 0o600),
        file("authorized_keys", &format!("{}\n", user_key.public_openssh), 0o600),
        file("sshd.sh", SSHD_SCRIPT, 0o755),
        file("session.sh", SESSION_SCRIPT, 0o755),
    ]);
    extra["privateKey"] = Value::String(user_key.private_openssh);
    extra["publicKey"] = Value::String(user_key.public_openssh);
    Ok(KindLaunch { config, extra })
}

#[cfg(test)]
mod tests {
    use ssh_key::PublicKey;

    use super::*;
    use crate::domain::task_service::from_extra;

    fn file_text(extra: &Value, name: &str) -> (String, u32) {
        let (_, files) = from_extra(extra);
        let f = files.iter().find(|f| f.path == format!("{SSH_DIR}/{name}")).unwrap_or_else(|| panic!("no {name} in {files:?}"));
        let bytes = base64::engine::general_purpose::STANDARD.decode(&f.content_b64).unwrap();
        (String::from_utf8(bytes).unwrap(), f.mode)
    }

    #[test]
    fn a_shell_gets_its_own_key_pair_and_sshd() {
        let launch = prepare("abc-1", json!({}), json!({})).unwrap();
        let extra = &launch.extra;
        let private = PrivateKey::from_openssh(extra["privateKey"].as_str().unwrap()).unwrap();
        let public = PublicKey::from_openssh(extra["publicKey"].as_str().unwrap()).unwrap();
        assert_eq!(private.public_key().key_data(), public.key_data(), "the two halves belong together");

        let (authorized, mode) = file_text(extra, "authorized_keys");
        assert_eq!(PublicKey::from_openssh(authorized.trim()).unwrap().key_data(), public.key_data());
        assert_eq!(mode, 0o600);
        let (host_key, mode) = file_text(extra, "host_key");
        let host = PrivateKey::from_openssh(&host_key).unwrap();
        assert_ne!(host.public_key().key_data(), public.key_data(), "the host key is not the user's");
        assert_eq!(mode, 0o600, "sshd refuses a readable host key");
        assert!(file_text(extra, "sshd.sh").0.contains("exec \"$sshd_bin\" -D -e"));
        assert!(file_text(extra, "session.sh").0.contains("SSH_ORIGINAL_COMMAND"));

        let (spec, _) = from_extra(extra);
        assert_eq!(spec.proxy.as_deref(), Some("tcp"));
        assert!(spec.unauthenticated);
        assert_eq!(spec.port_env.as_deref(), Some(SERVICE_PORT_ENV));
        assert!(regex::Regex::new(READY_PATTERN).unwrap().is_match("Server listening on 127.0.0.1 port 40211."));
        assert_eq!(launch.config["entrypoint"], "exec /bin/sh .det/ssh/sshd.sh");

        let other = prepare("abc-2", json!({"entrypoint": "my-sshd"}), json!({})).unwrap();
        assert_ne!(other.extra["privateKey"], extra["privateKey"], "every shell has its own key");
        assert_eq!(other.config["entrypoint"], "my-sshd", "the user's entrypoint wins");
    }
}
