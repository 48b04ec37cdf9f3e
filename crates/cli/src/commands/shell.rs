//! `det shell`: start a shell task and ssh into it through the master's proxy (upstream's
//! `cli/shell.py`). ssh's `ProxyCommand` is this binary's `det tunnel`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;
use resolute_api::commands::{GetShellResponse, LaunchShellRequest, LaunchShellResponse, Shell};
use serde_json::Value;

use super::Globals;
use super::ntsc::{self, Kind, ListArgs};
use super::ntsc_launch::{LaunchArgs, print_warnings, wait_ready};
use super::wire::connect;
use crate::client::{Client, path_segment};
use crate::error::CliError;
use crate::log_stream::{LogArgs, green};
use crate::say;

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ShellCommand {
    /// list shells
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// display shell config
    Config {
        /// shell ID
        shell_id: String,
    },
    /// display shell metadata
    Describe {
        /// shell ID
        shell_id: String,
        /// print as CSV
        #[arg(long)]
        csv: bool,
    },
    /// start a new shell
    Start {
        #[command(flatten)]
        launch: LaunchArgs,
        /// show ssh command (e.g. for use in IDE) when starting the shell
        #[arg(long)]
        show_ssh_command: bool,
        /// additional SSH options (and a command) when connecting to the shell
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ssh_opts: Vec<String>,
    },
    /// open an existing shell
    Open {
        /// shell ID
        shell_id: String,
        /// show ssh command (e.g. for use in IDE) when starting the shell
        #[arg(long)]
        show_ssh_command: bool,
        /// additional SSH options (and a command) when connecting to the shell
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ssh_opts: Vec<String>,
    },
    /// print the ssh command
    ShowSshCommand {
        /// shell ID
        shell_id: String,
        /// additional SSH options when connecting to the shell
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ssh_opts: Vec<String>,
    },
    /// fetch shell logs
    Logs {
        /// shell ID
        #[arg(value_name = "SHELL_ID")]
        task_id: String,
        #[command(flatten)]
        logs: LogArgs,
    },
    /// kill a shell
    Kill {
        /// shell ID
        #[arg(required = true)]
        shell_id: Vec<String>,
        /// ignore errors
        #[arg(short, long)]
        force: bool,
    },
    /// set shell attributes
    Set {
        #[command(subcommand)]
        what: super::command::SetCommand,
    },
}

pub fn run(g: &Globals, cmd: Option<ShellCommand>) -> Result<(), CliError> {
    let kind = Kind::Shell;
    match cmd.unwrap_or(ShellCommand::List(ListArgs::default())) {
        ShellCommand::List(args) => ntsc::list(g, kind, &args),
        ShellCommand::Config { shell_id } => ntsc::config(g, kind, &shell_id),
        ShellCommand::Describe { shell_id, csv } => ntsc::describe(g, kind, &shell_id, csv),
        ShellCommand::Start { launch, show_ssh_command, ssh_opts } => start(g, &launch, show_ssh_command, &ssh_opts),
        ShellCommand::Open { shell_id, show_ssh_command, ssh_opts } => {
            let client = connect(g)?;
            let id = ntsc::expand_id(&client, Some(kind), &shell_id)?;
            open(g, &client, &id, &ssh_opts, show_ssh_command, false)
        }
        ShellCommand::ShowSshCommand { shell_id, ssh_opts } => {
            let client = connect(g)?;
            let id = ntsc::expand_id(&client, Some(kind), &shell_id)?;
            open(g, &client, &id, &ssh_opts, true, true)
        }
        ShellCommand::Logs { task_id, logs } => ntsc::logs(g, Some(kind), &task_id, false, &logs),
        ShellCommand::Kill { shell_id, force } => ntsc::kill(g, kind, &shell_id, force),
        ShellCommand::Set { what: super::command::SetCommand::Priority { id, priority } } => ntsc::set_priority(g, kind, &id, priority),
    }
}

fn start(g: &Globals, launch: &LaunchArgs, show_ssh_command: bool, ssh_opts: &[String]) -> Result<(), CliError> {
    let config = launch.build_config(&[])?;
    let client = connect(g)?;
    let files = launch.files()?;
    let req = LaunchShellRequest { config: Some(config), template_name: launch.template.clone(), files, ..Default::default() };
    let resp: LaunchShellResponse = client.post("api/v1/shells", &req)?;
    let id = resp.shell.base.id.clone();
    if launch.detach {
        say!("{id}");
        return Ok(());
    }
    say!("{}", green(&format!("Launched shell (id: {id}, name: {}).", resp.shell.base.description)));
    print_warnings(&resp.warnings);
    open(g, &client, &id, ssh_opts, show_ssh_command, false)
}

/// `_open_shell`: waits for the shell, writes its key to a private file and runs ssh through
/// `det tunnel` (or only prints that command).
fn open(g: &Globals, client: &Client, id: &str, ssh_opts: &[String], print: bool, print_only: bool) -> Result<(), CliError> {
    wait_ready(client, "shell", id, Duration::from_secs(1))?;
    let shell = client.get::<GetShellResponse>(&format!("api/v1/shells/{}", path_segment(id)))?.shell;
    let key = KeyFile::write(&shell, print)?;
    let args = ssh_args(&g.master, &shell, &key.path, ssh_opts)?;
    if print {
        say!("{}", green(&format!("ssh {}", args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "))));
        if print_only {
            key.keep();
            return Ok(());
        }
    }
    let status = std::process::Command::new("ssh")
        .args(&args)
        .status()
        .map_err(|e| CliError::msg(format!("cannot run ssh: {e}. Is an OpenSSH client installed?")))?;
    if print {
        key.keep();
    }
    say!("{}", green(&format!("To reconnect, run: det shell open {id}")));
    if !status.success() {
        return Err(CliError::msg(format!("ssh exited with {status}")));
    }
    Ok(())
}

/// The ssh arguments upstream builds, with this binary as the tunnel.
fn ssh_args(master: &str, shell: &Shell, key: &std::path::Path, ssh_opts: &[String]) -> Result<Vec<String>, CliError> {
    let det = std::env::current_exe().map_err(|e| CliError::msg(format!("cannot locate the det binary for ssh's ProxyCommand: {e}")))?;
    let proxy = format!("ProxyCommand={} tunnel {master} %h", shell_quote(&det.display().to_string()));
    let mut args: Vec<String> =
        ["-o", &proxy, "-o", "StrictHostKeyChecking=no", "-tt", "-o", "IdentitiesOnly=yes", "-i"].iter().map(|s| (*s).to_owned()).collect();
    args.push(key.display().to_string());
    args.push(format!("{}@{}", login_user(shell), shell.base.id));
    args.extend(ssh_opts.iter().cloned());
    Ok(args)
}

/// The agent user the shell runs as (`agentUserGroup.user`), else root.
fn login_user(shell: &Shell) -> String {
    let group = shell.agent_user_group.as_ref();
    ["user", "agentUser"]
        .iter()
        .find_map(|k| group.and_then(|g| g.get(*k)).and_then(Value::as_str).filter(|u| !u.is_empty()))
        .unwrap_or("root")
        .to_owned()
}

/// A POSIX-shell-safe word (ssh runs `ProxyCommand` through the user's shell).
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The shell's private key in a 0600 file, removed on drop unless kept (for a printed command).
struct KeyFile {
    path: PathBuf,
    keep: bool,
}

impl KeyFile {
    fn write(shell: &Shell, retained: bool) -> Result<KeyFile, CliError> {
        let dir = if retained {
            dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("determined").join("shell").join(&shell.base.id)
        } else {
            std::env::temp_dir()
        };
        std::fs::create_dir_all(&dir).map_err(|e| CliError::msg(format!("cannot create {}: {e}", dir.display())))?;
        let path = if retained { dir.join("key") } else { dir.join(format!("det-shell-{}-{}.key", shell.base.id, std::process::id())) };
        let _ = std::fs::remove_file(&path);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| CliError::msg(format!("cannot write the shell's key to {}: {e}", path.display())))?;
        file.write_all(shell.private_key.as_bytes())
            .map_err(|e| CliError::msg(format!("cannot write the shell's key to {}: {e}", path.display())))?;
        Ok(KeyFile { path, keep: false })
    }

    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for KeyFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(shell_quote("/usr/bin/det"), "/usr/bin/det");
        assert_eq!(shell_quote("/a b/det"), "'/a b/det'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn logs_in_as_the_agent_user() {
        let mut shell: Shell = serde_json::from_value(serde_json::json!({"id": "s", "state": "STATE_RUNNING",
            "startTime": "2025-01-01T00:00:00Z", "username": "u"}))
        .unwrap();
        assert_eq!(login_user(&shell), "root");
        shell.agent_user_group = Some(serde_json::json!({"user": "alice"}));
        assert_eq!(login_user(&shell), "alice");
    }
}
