//! End-to-end: the `det` binary against a real master (`det master run`) on a free local port,
//! with the token cache in a temp dir via `DET_DEBUG_CONFIG_PATH`.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

mod experiments;
mod fake_endpoints;
mod fake_master;
mod ntsc;
mod preview;
mod tls;
mod tunnel;

const DET: &str = env!("CARGO_BIN_EXE_det");

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

fn answers(url: &str) -> bool {
    let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(2)).build().expect("http client");
    client.get(format!("{url}/info")).send().is_ok_and(|r| r.status().is_success())
}

fn wait_for(url: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !answers(url) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("master exited early with {status}");
        }
        assert!(Instant::now() < deadline, "master at {url} did not answer /info within 30 s");
        sleep(Duration::from_millis(100));
    }
}

/// A `det master run` child, killed on drop so a failing test leaves nothing behind.
struct Master {
    child: Child,
    url: String,
    _data: TempDir,
}

impl Master {
    fn start() -> Master {
        let data = tempfile::tempdir().expect("data dir");
        let port = free_port();
        let log = std::fs::File::create(data.path().join("master.log")).expect("log file");
        let mut child = Command::new(DET)
            .args(["master", "run", "--port", &port.to_string(), "--data-dir"])
            .arg(data.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn det master run");
        let url = format!("http://127.0.0.1:{port}");
        wait_for(&url, &mut child);
        Master { child, url, _data: data }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `det` as a user would from a script: piped stdin, private token cache, no DET_* leaks.
struct Det {
    master: String,
    config: TempDir,
}

impl Det {
    fn new(master: &str) -> Det {
        Det { master: master.to_owned(), config: tempfile::tempdir().expect("config dir") }
    }

    fn run(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(DET);
        cmd.args(args)
            .env("DET_MASTER", &self.master)
            .env("DET_DEBUG_CONFIG_PATH", self.config.path())
            .env_remove("DET_USER")
            .env_remove("DET_PASS")
            .env_remove("DET_USER_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn det");
        if let Some(mut input) = child.stdin.take() {
            let _ = input.write_all(stdin.as_bytes());
        }
        child.wait_with_output().expect("wait for det")
    }

    /// Runs and asserts success, returning stdout.
    fn ok(&self, args: &[&str], stdin: &str) -> String {
        self.ok_env(args, stdin, &[])
    }

    fn ok_env(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> String {
        let out = self.run(args, stdin, env);
        assert!(out.status.success(), "det {args:?} failed:\n{}", describe(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs and asserts failure (exit 1, ending in one `Error:` line), returning stderr.
    fn fails(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> String {
        let out = self.run(args, stdin, env);
        assert_eq!(out.status.code(), Some(1), "det {args:?} should fail:\n{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let error_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error: ")).collect();
        assert_eq!(error_lines.len(), 1, "det {args:?}: {stderr}");
        assert!(stderr.trim_end().lines().last() == error_lines.first().copied(), "det {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "det {args:?} panicked: {stderr}");
        stderr
    }

    fn whoami(&self) -> String {
        self.ok(&["user", "whoami"], "")
    }

    fn auth_json(&self) -> Value {
        let text = std::fs::read_to_string(self.config.path().join("auth.json")).expect("auth.json");
        serde_json::from_str(&text).expect("auth.json is JSON")
    }

    fn master_entry(&self) -> Value {
        self.auth_json()["masters"][&self.master].clone()
    }

    fn users_json(&self, all: bool) -> Vec<Value> {
        let args: &[&str] = if all { &["user", "list", "--all", "--json"] } else { &["--json", "user", "ls"] };
        let out = self.ok(args, "");
        serde_json::from_str::<Vec<Value>>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    fn usernames(&self, all: bool) -> Vec<String> {
        let users = self.users_json(all);
        users.iter().map(|u| u["username"].as_str().unwrap_or_default().to_owned()).collect()
    }
}

fn describe(out: &Output) -> String {
    format!("status {}\nstdout: {}\nstderr: {}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn user<'a>(users: &'a [Value], name: &str) -> &'a Value {
    users.iter().find(|u| u["username"] == name).unwrap_or_else(|| panic!("no {name}: {users:?}"))
}

#[test]
fn user_lifecycle_against_a_real_master() {
    let master = Master::start();
    let det = Det::new(&master.url);

    // Nobody logged in: the blank-password default user is used and cached, but not made active.
    assert_eq!(det.whoami(), "You are logged in as user 'determined'\n");
    let entry = det.master_entry();
    assert!(entry["tokens"]["determined"].is_string(), "{entry}");
    assert!(entry.get("active_user").is_none(), "{entry}");

    // Explicit login with the password on stdin makes admin the active user.
    det.ok(&["user", "login", "admin"], "\n");
    assert_eq!(det.master_entry()["active_user"], "admin");
    assert_eq!(det.whoami(), "You are logged in as user 'admin'\n");

    let table = det.ok(&["user", "list"], "");
    let mut lines = table.lines();
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("   User Id | Username   | Display Name   |"), "{table}");
    assert!(header.ends_with("| Agent User   | Agent Group"), "{table}");
    assert!(lines.next().unwrap_or_default().starts_with("-----------+------------+"), "{table}");
    assert!(table.contains("| admin "), "{table}");
    assert!(table.contains("| determined "), "{table}");

    // Creating users: by flag, and by piped password (+ confirmation, which must match).
    det.ok(&["user", "create", "alice", "--password", "Secret123"], "");
    det.ok(&["user", "create", "bob"], "Pw1\nPw1\n");
    let err = det.fails(&["user", "create", "carol"], "one\ntwo\n", &[]);
    assert!(err.contains("Passwords do not match"), "{err}");
    let users = det.users_json(false);
    assert_eq!(user(&users, "alice")["admin"], false);
    assert!(!det.usernames(true).contains(&"carol".to_owned()));
    let err = det.fails(&["user", "create", "alice", "--password", "x"], "", &[]);
    assert!(!err.trim().is_empty());

    // Wrong password and unknown user: a clear error, nothing cached.
    let err = det.fails(&["user", "login", "alice"], "wrong\n", &[]);
    assert!(err.contains("Invalid username/password"), "{err}");
    det.fails(&["user", "login", "nosuchuser"], "\n", &[]);
    assert_eq!(det.master_entry()["active_user"], "admin");

    // `-u` plus DET_PASS authenticates a second user without changing the active one.
    let alice = [("DET_PASS", "Secret123")];
    assert_eq!(det.ok_env(&["-u", "alice", "user", "whoami"], "", &alice), "You are logged in as user 'alice'\n");
    assert_eq!(det.master_entry()["active_user"], "admin");
    // Non-admins may not create users.
    det.fails(&["-u", "alice", "user", "create", "dave", "--password", "x"], "", &alice);
    assert!(!det.usernames(true).contains(&"dave".to_owned()));
    // DET_USER + DET_PASS select a user for scripts.
    let env = [("DET_USER", "bob"), ("DET_PASS", "Pw1")];
    assert_eq!(det.ok_env(&["user", "whoami"], "", &env), "You are logged in as user 'bob'\n");

    // An admin changes alice's password (one piped line serves as its own confirmation).
    det.ok(&["user", "change-password", "alice"], "NewPass1\n");
    det.fails(&["user", "login", "alice"], "Secret123\n", &[]);
    det.ok(&["user", "login", "alice"], "NewPass1\n");
    assert_eq!(det.whoami(), "You are logged in as user 'alice'\n");
    // Changing one's own password re-logs in with it: no prompt needed afterwards.
    det.ok(&["user", "change-password"], "Other2\nOther2\n");
    assert_eq!(det.whoami(), "You are logged in as user 'alice'\n");
    det.ok(&["user", "logout"], "");
    det.ok(&["user", "login", "alice"], "Other2\n");
    det.ok(&["user", "login", "admin"], "");

    // Deactivation hides a user from the default listing and blocks their login.
    det.ok(&["user", "deactivate", "alice"], "");
    assert!(!det.usernames(false).contains(&"alice".to_owned()));
    assert!(det.usernames(true).contains(&"alice".to_owned()));
    let err = det.fails(&["user", "login", "alice"], "Other2\n", &[]);
    assert!(err.contains("deactivated") && !err.contains("Invalid username/password"), "{err}");
    // A wrong password tells nothing about the account.
    let err = det.fails(&["user", "login", "alice"], "wrong\n", &[]);
    assert!(err.contains("Invalid username/password") && !err.contains("deactivated"), "{err}");
    det.ok(&["user", "activate", "alice"], "");
    assert!(det.usernames(false).contains(&"alice".to_owned()));

    // Edits report what they changed; no field is an error.
    let out = det.ok(&["user", "edit", "alice", "--display-name", "Alice A", "--admin", "true"], "");
    assert_eq!(out, "Changes made to the following fields: Display Name, Admin\n");
    let users = det.users_json(false);
    assert_eq!(user(&users, "alice")["displayName"], "Alice A");
    assert_eq!(user(&users, "alice")["admin"], true);
    let out = det.ok(&["user", "edit", "alice", "--active", "false"], "");
    assert_eq!(out, "Changes made to the following fields: Active\n");
    assert!(!det.usernames(false).contains(&"alice".to_owned()));
    let err = det.fails(&["user", "edit", "alice"], "", &[]);
    assert!(err.contains("No field provided"), "{err}");

    det.ok(&["user", "rename", "bob", "robert"], "");
    let names = det.usernames(true);
    assert!(names.contains(&"robert".to_owned()) && !names.contains(&"bob".to_owned()));
    det.fails(&["user", "activate", "nosuchuser"], "", &[]);
    det.fails(&["user", "change-password", "nosuchuser"], "x\n", &[]);

    // master info: YAML-ish by default, JSON on request.
    let info = det.ok(&["master", "info"], "");
    assert!(info.lines().any(|l| l.starts_with("version: ")), "{info}");
    let info: Value = serde_json::from_str(&det.ok(&["master", "info", "--json"], "")).expect("json");
    assert!(info["clusterId"].is_string(), "{info}");

    // Logout drops the token and the active user; the default user takes over again.
    det.ok(&["user", "logout"], "");
    let entry = det.master_entry();
    assert!(entry["tokens"].get("admin").is_none() && entry.get("active_user").is_none());
    assert_eq!(det.whoami(), "You are logged in as user 'determined'\n");
    det.ok(&["user", "logout", "--all"], "");
    assert_eq!(det.master_entry()["tokens"], serde_json::json!({}));
}

#[test]
fn unreachable_master_is_one_clear_error() {
    let det = Det::new("http://127.0.0.1:1");
    let err = det.fails(&["user", "whoami"], "", &[]);
    assert!(err.contains("cannot reach the master at http://127.0.0.1:1"), "{err}");
    assert!(err.contains("Set DET_MASTER or pass -m"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let err = det.fails(&["-m", "http://user@host", "user", "list"], "", &[]);
    assert!(err.contains("must not contain username"), "{err}");
}

/// Runs `det deploy local` with its data dir under a temp `XDG_DATA_HOME`.
struct Deploy {
    xdg: TempDir,
    port: u16,
}

impl Deploy {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(DET)
            .args(["deploy", "local"])
            .args(args)
            .env("XDG_DATA_HOME", self.xdg.path())
            .stdin(Stdio::null())
            .output()
            .expect("run det deploy local")
    }

    fn data_dir(&self) -> PathBuf {
        self.xdg.path().join("resolute")
    }
}

impl Drop for Deploy {
    fn drop(&mut self) {
        let _ = self.run(&["cluster-down"]);
    }
}

fn has_db(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("resolute.db")))
}

#[test]
fn deploy_local_cluster_up_and_down() {
    let deploy = Deploy { xdg: tempfile::tempdir().expect("xdg"), port: free_port() };
    let port = deploy.port.to_string();
    let up = ["cluster-up", "--master-port", port.as_str()];

    let out = deploy.run(&up);
    assert!(out.status.success(), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("http://localhost:{port}")), "{stdout}");
    assert!(stdout.contains("'admin' (admin) and 'determined'"), "{stdout}");
    assert!(deploy.data_dir().join("master.pid").exists());
    assert!(has_db(&deploy.data_dir()));

    let det = Det::new(&format!("localhost:{port}"));
    assert_eq!(det.whoami(), "You are logged in as user 'determined'\n");

    // The cluster has a join secret only its owner can read, and its agent joined with it.
    let secret = deploy.data_dir().join("agent_secret");
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&secret).expect("agent_secret").permissions().mode() & 0o777, 0o600);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let agents = det.ok(&["agent", "list"], "");
        if agents.lines().count() > 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the cluster's agent never registered: {agents}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // An agent without the secret is refused with the reason, at once and for good.
    let rogue = Command::new(DET)
        .args(["agent", "run", "--master-host", "127.0.0.1", "--master-port", port.as_str(), "--agent-id", "rogue"])
        .args(["--artificial-slots", "1", "--work-root"])
        .arg(deploy.xdg.path().join("rogue"))
        .env_remove("DET_SECURITY_AGENT_SECRET")
        .env_remove("DET_SECURITY_AGENT_SECRET_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("run det agent run");
    assert!(!rogue.status.success(), "{}", describe(&rogue));
    let stderr = String::from_utf8_lossy(&rogue.stderr);
    assert!(stderr.contains("the master refused this agent") && stderr.contains("requires the cluster's agent join secret"), "{stderr}");

    let again = deploy.run(&up);
    assert!(again.status.success(), "{}", describe(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("already running"));
    assert!(stdout.contains("with blank passwords"), "{stdout}");

    // On a kept database whose admin password changed, cluster-up says so instead of claiming
    // blank passwords.
    det.ok(&["user", "login", "admin"], "\n");
    det.ok(&["user", "change-password"], "Changed1x\nChanged1x\n");
    let down = deploy.run(&["cluster-down"]);
    assert!(down.status.success(), "{}", describe(&down));
    let up_again = deploy.run(&up);
    assert!(up_again.status.success(), "{}", describe(&up_again));
    let stdout = String::from_utf8_lossy(&up_again.stdout);
    assert!(!stdout.contains("with blank passwords"), "{stdout}");
    assert!(stdout.contains("'admin' no longer has a blank password"), "{stdout}");

    let down = deploy.run(&["cluster-down", "--delete-db"]);
    assert!(down.status.success(), "{}", describe(&down));
    assert!(String::from_utf8_lossy(&down.stdout).contains("Stopped the master"));
    assert!(!deploy.data_dir().join("master.pid").exists());
    assert!(!has_db(&deploy.data_dir()));
    assert!(!answers(&format!("http://127.0.0.1:{port}")));

    let down = deploy.run(&["cluster-down"]);
    assert!(down.status.success(), "{}", describe(&down));
    assert!(String::from_utf8_lossy(&down.stdout).contains("No master"));
}
