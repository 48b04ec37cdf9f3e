//! `det deploy local cluster-up|cluster-down`: a master and its agents on this machine, run as
//! detached `det master run` and `det agent run` processes instead of upstream's Docker containers.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};

use super::local_agents;
use crate::client::Client;
use crate::error::CliError;
use crate::local_process::{self, Paths};
use crate::say;
use crate::session;
use crate::setting_flags::flag_for;

const START_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Args)]
#[allow(dead_code)] // the hidden flags exist only to be accepted
pub struct DeployArgs {
    /// Accepted for compatibility; there are no preflight checks without Docker.
    #[arg(long, hide = true)]
    no_preflight_checks: bool,
    /// Accepted for compatibility; ignored.
    #[arg(long, hide = true)]
    no_wait_for_master: bool,
    /// Accepted for compatibility; no images are used.
    #[arg(long, hide = true, value_name = "PREFIX")]
    image_repo_prefix: Option<String>,
    #[command(subcommand)]
    pub command: DeployCommand,
}

#[derive(Debug, Subcommand)]
pub enum DeployCommand {
    /// deploy a cluster on this machine
    Local {
        #[command(subcommand)]
        command: LocalCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum LocalCommand {
    /// Create a Determined cluster
    ClusterUp(ClusterUpArgs),
    /// Stop a Determined cluster
    ClusterDown(ClusterDownArgs),
}

#[derive(Debug, Args)]
pub struct ClusterUpArgs {
    /// path to master configuration
    #[arg(long, value_name = "MASTER_CONFIG_PATH")]
    master_config_path: Option<PathBuf>,
    /// Storage location for cluster data (e.g. checkpoints)
    #[arg(long, value_name = "STORAGE_HOST_PATH")]
    storage_host_path: Option<PathBuf>,
    /// Initial password for admin/determined users
    #[arg(long, value_name = "INITIAL_USER_PASSWORD")]
    initial_user_password: Option<String>,
    /// port to expose master on
    #[arg(long, default_value_t = 8080)]
    master_port: u16,
    /// address the master listens on (default 127.0.0.1, this host only, unless the master config
    /// or DET_LISTEN_ADDRESS says otherwise; 0.0.0.0 accepts other hosts)
    #[arg(long, value_name = "ADDRESS")]
    listen_address: Option<String>,
    /// name for the cluster (sets the master's cluster_name)
    #[arg(long)]
    cluster_name: Option<String>,
    /// remove current master database
    #[arg(long)]
    delete_db: bool,
    /// enable GPU support for agent
    #[arg(long, overrides_with = "no_gpu")]
    gpu: bool,
    /// disable GPU support for agent
    #[arg(long, overrides_with = "gpu")]
    no_gpu: bool,
    /// number of agents to start (on this machine)
    #[arg(long, default_value_t = 1)]
    agents: u32,
    /// give each agent this many fake CPU slots instead of its devices
    #[arg(long, value_name = "N")]
    artificial_slots: Option<u32>,
    #[command(flatten)]
    _docker: DockerOnlyArgs,
}

/// Upstream's Docker-only knobs, accepted (and ignored) so existing scripts keep working.
#[derive(Debug, Args)]
#[allow(dead_code)]
struct DockerOnlyArgs {
    #[arg(long, hide = true)]
    det_version: Option<String>,
    #[arg(long, hide = true)]
    db_password: Option<String>,
    #[arg(long, hide = true)]
    no_autorestart: bool,
    #[arg(long, hide = true)]
    auto_work_dir: Option<PathBuf>,
    #[arg(long, hide = true)]
    enterprise_edition: bool,
}

#[derive(Debug, Args)]
pub struct ClusterDownArgs {
    /// name for the cluster resources (accepted for compatibility)
    #[arg(long, hide = true)]
    #[allow(dead_code)]
    cluster_name: Option<String>,
    /// remove current master database
    #[arg(long)]
    delete_db: bool,
}

pub fn run(args: DeployArgs) -> Result<(), CliError> {
    let DeployCommand::Local { command } = args.command;
    let paths = Paths::resolve()?;
    match command {
        LocalCommand::ClusterUp(up) => cluster_up(&paths, &up),
        LocalCommand::ClusterDown(down) => cluster_down(&paths, &down),
    }
}

fn cluster_up(paths: &Paths, args: &ClusterUpArgs) -> Result<(), CliError> {
    fs::create_dir_all(&paths.data_dir).map_err(|e| io_msg(&paths.data_dir, e))?;
    let url = format!("http://localhost:{}", args.master_port);

    if let Some(pid) = local_process::running_pid(paths) {
        if local_process::answers(args.master_port) {
            say!("The master is already running at {url} (pid {pid}).");
            return local_agents::start(paths, args.master_port, &agent_options(args));
        }
        return Err(CliError::msg(format!(
            "a master started by 'det deploy local' is already running (pid {pid}) but does not \
             answer on port {}; see {} or stop it with 'det deploy local cluster-down'",
            args.master_port,
            paths.log_file.display()
        )));
    }
    if local_process::answers(args.master_port) {
        say!("A master not started by 'det deploy local' already answers at {url}.");
        return Ok(());
    }

    if args.delete_db {
        delete_db(paths)?;
    }
    let master_args = master_args(paths, args)?;
    let pid = spawn_master(paths, &master_args)?;
    wait_until_up(paths, pid, args.master_port)?;

    say!("The master is up at {url} (pid {pid}).");
    say!("  data directory: {}", paths.data_dir.display());
    say!("  log file:       {}", paths.log_file.display());
    local_agents::start(paths, args.master_port, &agent_options(args))?;
    say!("{}", default_users_note(&url, args.initial_user_password.as_deref()));
    if args.master_port != 8080 {
        say!("Point the CLI at it with: export DET_MASTER={url}");
    }
    Ok(())
}

/// What to tell the user about the default users' passwords. The initial password applies only
/// to a fresh database; one kept from an earlier run may hold changed passwords, so each user is
/// checked by logging in (and out again) with the password the user would expect.
fn default_users_note(url: &str, initial_password: Option<&str>) -> String {
    let (expected, described) = match initial_password {
        Some(p) => (p, "the password given by --initial-user-password"),
        None => ("", "blank passwords"),
    };
    let changed: Vec<&str> = ["admin", "determined"]
        .into_iter()
        .filter(|user| match session::login(url, user, expected) {
            Ok(resp) => {
                // A courtesy: the session only proved the password; failing to end it is harmless.
                let _ = Client::new(url)
                    .map(|c| c.with_token(resp.token).post::<_, serde_json::Value>("api/v1/auth/logout", &serde_json::json!({})));
                false
            }
            Err(_) => true,
        })
        .collect();
    match changed.as_slice() {
        [] => format!("Default users: 'admin' (admin) and 'determined', with {described}."),
        users => {
            let names = users.iter().map(|u| format!("'{u}'")).collect::<Vec<_>>().join(" and ");
            format!(
                "Default users: 'admin' (admin) and 'determined'. This database is kept from an earlier run: {names} no longer \
                 {verb} {described}; log in with the current password (or start afresh with --delete-db).",
                verb = if users.len() == 1 { "has" } else { "have" },
                described = if initial_password.is_some() { "the password given by --initial-user-password" } else { "a blank password" },
            )
        }
    }
}

fn agent_options(args: &ClusterUpArgs) -> local_agents::AgentOptions {
    local_agents::AgentOptions { count: args.agents, no_gpu: args.no_gpu, artificial_slots: args.artificial_slots }
}

fn cluster_down(paths: &Paths, args: &ClusterDownArgs) -> Result<(), CliError> {
    local_agents::stop_all(paths)?;
    match local_process::running_pid(paths) {
        None => say!("No master started by 'det deploy local' is running."),
        Some(pid) => {
            local_process::stop(pid)?;
            say!("Stopped the master (pid {pid}).");
        }
    }
    local_process::remove_pid_file(paths)?;
    if args.delete_db {
        delete_db(paths)?;
    }
    Ok(())
}

/// `det master run` arguments for this deployment, named through the master's settings table.
fn master_args(paths: &Paths, args: &ClusterUpArgs) -> Result<Vec<String>, CliError> {
    let mut out = vec!["master".to_owned(), "run".to_owned()];
    if let Some(config) = &args.master_config_path {
        if !config.is_file() {
            return Err(CliError::msg(format!("no such master config file: {}", config.display())));
        }
        out.extend(["--config-file".to_owned(), absolute(config)?.display().to_string()]);
    }
    let mut set = |path: &str, value: String| -> Result<(), CliError> {
        let flag = flag_for(path).ok_or_else(|| CliError::msg(format!("this master has no '{path}' setting to deploy with")))?;
        out.extend([flag, value]);
        Ok(())
    };
    set("port", args.master_port.to_string())?;
    let file: Option<serde_json::Value> =
        args.master_config_path.as_deref().and_then(|p| serde_norway::from_str(&fs::read_to_string(p).unwrap_or_default()).ok());
    // The probes and the agents started here speak plain HTTP; say so instead of timing out.
    let tls_in_file = file.as_ref().is_some_and(|v| v.pointer("/security/tls/cert").is_some_and(|c| !c.is_null()));
    if tls_in_file || std::env::var_os("DET_SECURITY_TLS_CERT").is_some() {
        return Err(CliError::msg(
            "det deploy local cluster-up does not set up TLS (security.tls.cert is set); run 'det master run' with \
             security.tls and 'det agent run --security-tls-enabled --security-tls-master-cert FILE' instead (README, TLS)",
        ));
    }
    // A local cluster is reachable from this host only unless someone asked for more.
    let configured = std::env::var_os("DET_LISTEN_ADDRESS").is_some() || file.as_ref().is_some_and(|v| v.get("listen_address").is_some());
    match &args.listen_address {
        Some(address) => set("listen_address", address.clone())?,
        None if !configured => set("listen_address", "127.0.0.1".to_owned())?,
        None => {}
    }
    set("data_dir", paths.data_dir.display().to_string())?;
    // Its agents (and only they) join with the cluster's generated secret.
    set("security.agent_secret_file", local_agents::ensure_agent_secret(paths)?.display().to_string())?;
    if let Some(password) = &args.initial_user_password {
        set("security.initial_user_password", password.clone())?;
    }
    if let Some(name) = &args.cluster_name {
        set("cluster_name", name.clone())?;
    }
    // A local deployment is one person's: its tasks run as whoever deployed it (the agents run
    // as that account too). A master.yaml given with --master-config-path decides instead.
    if args.master_config_path.is_none() {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        let user = nix::unistd::User::from_uid(uid).ok().flatten().map_or_else(|| uid.to_string(), |u| u.name);
        let group = nix::unistd::Group::from_gid(gid).ok().flatten().map_or_else(|| gid.to_string(), |g| g.name);
        set("security.default_task_user.uid", uid.to_string())?;
        set("security.default_task_user.gid", gid.to_string())?;
        set("security.default_task_user.user", user)?;
        set("security.default_task_user.group", group)?;
    }
    if let Some(dir) = &args.storage_host_path {
        fs::create_dir_all(dir).map_err(|e| io_msg(dir, e))?;
        set("checkpoint_storage.type", "shared_fs".to_owned())?;
        set("checkpoint_storage.host_path", absolute(dir)?.display().to_string())?;
    }
    Ok(out)
}

/// Starts `det master run` in its own process group, so it outlives this command and is not
/// hit by the terminal's Ctrl-C. It inherits the environment, so `DET_*` settings apply.
fn spawn_master(paths: &Paths, args: &[String]) -> Result<u32, CliError> {
    use std::os::unix::process::CommandExt;

    let exe = std::env::current_exe().map_err(|e| CliError::msg(format!("cannot find the det executable: {e}")))?;
    let log = fs::OpenOptions::new().create(true).append(true).open(&paths.log_file).map_err(|e| io_msg(&paths.log_file, e))?;
    let log_err = log.try_clone().map_err(|e| io_msg(&paths.log_file, e))?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| CliError::msg(format!("cannot start the master: {e}")))?;
    let pid = child.id();
    local_process::write_pid_file(paths, pid)?;
    Ok(pid)
}

fn wait_until_up(paths: &Paths, pid: u32, port: u16) -> Result<(), CliError> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if !local_process::is_alive(pid) {
            local_process::remove_pid_file(paths)?;
            return Err(CliError::msg(format!(
                "the master exited during startup; last lines of {}:\n{}",
                paths.log_file.display(),
                local_process::log_tail(&paths.log_file, 20)
            )));
        }
        if local_process::answers(port) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CliError::msg(format!(
                "the master (pid {pid}) did not answer on port {port} within {} s; it may still \
                 be starting: see {} or stop it with 'det deploy local cluster-down'",
                START_TIMEOUT.as_secs(),
                paths.log_file.display()
            )));
        }
        sleep(Duration::from_millis(200));
    }
}

/// Removes the SQLite database and its WAL/SHM companions (`resolute.db*`).
fn delete_db(paths: &Paths) -> Result<(), CliError> {
    let entries = match fs::read_dir(&paths.data_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_msg(&paths.data_dir, e)),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("resolute.db") {
            fs::remove_file(entry.path()).map_err(|e| io_msg(&entry.path(), e))?;
            removed += 1;
        }
    }
    if removed > 0 {
        say!("Deleted the master database in {}.", paths.data_dir.display());
    }
    Ok(())
}

fn absolute(path: &Path) -> Result<PathBuf, CliError> {
    std::path::absolute(path).map_err(|e| io_msg(path, e))
}

fn io_msg(path: &Path, e: std::io::Error) -> CliError {
    CliError::msg(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        up: ClusterUpArgs,
    }

    fn args_for(flags: &[&str]) -> Vec<String> {
        let cli = Cli::try_parse_from(std::iter::once("cluster-up").chain(flags.iter().copied())).unwrap();
        // `master_args` writes the cluster's agent secret into the data dir.
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths { data_dir: dir.path().to_path_buf(), pid_file: dir.path().join("pid"), log_file: dir.path().join("log") };
        master_args(&paths, &cli.up).unwrap()
    }

    fn listen_address(args: &[String]) -> Option<&str> {
        args.iter().position(|a| a == "--listen-address").map(|i| args[i + 1].as_str())
    }

    #[test]
    fn a_local_cluster_listens_on_loopback_unless_told_otherwise() {
        if std::env::var_os("DET_LISTEN_ADDRESS").is_some() {
            return; // the variable is what decides then
        }
        assert_eq!(listen_address(&args_for(&[])), Some("127.0.0.1"));
        assert_eq!(listen_address(&args_for(&["--listen-address", "0.0.0.0"])), Some("0.0.0.0"));
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("master.yaml");
        std::fs::write(&config, "listen_address: 10.0.0.5\n").unwrap();
        let from_file = args_for(&["--master-config-path", config.to_str().unwrap()]);
        assert_eq!(listen_address(&from_file), None, "the file's listen_address stands: {from_file:?}");
    }

    #[test]
    fn a_tls_master_config_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("master.yaml");
        std::fs::write(&config, "security:\n  tls:\n    cert: /c.pem\n    key: /k.pem\n").unwrap();
        let cli = Cli::try_parse_from(["cluster-up", "--master-config-path", config.to_str().unwrap()]).unwrap();
        let paths = Paths { data_dir: dir.path().join("data"), pid_file: dir.path().join("pid"), log_file: dir.path().join("log") };
        let err = master_args(&paths, &cli.up).unwrap_err().to_string();
        assert!(err.contains("does not set up TLS") && err.contains("security.tls"), "{err}");
    }
}
