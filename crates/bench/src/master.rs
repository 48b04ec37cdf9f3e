//! Starting and stopping the master under test, on SQLite or on a fresh PostgreSQL database.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use reqwest::Url;
use sqlx::{AssertSqlSafe, Connection, PgConnection};

const DB_VARS: [&str; 6] = ["DET_DB_HOST", "DET_DB_PORT", "DET_DB_USER", "DET_DB_PASSWORD", "DET_DB_NAME", "DET_DB_SSL_MODE"];

/// Where the master keeps its data.
pub enum Db {
    Sqlite,
    /// A database created for this run on the server at `admin_url`, dropped afterwards.
    Postgres {
        admin_url: String,
        name: String,
    },
}

impl Db {
    pub async fn postgres(admin_url: &str) -> Result<Self> {
        let name = format!("resolute_bench_{}_{}", std::process::id(), unix_millis());
        let mut conn = PgConnection::connect(admin_url).await.with_context(|| format!("connecting to {admin_url}"))?;
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut conn).await?;
        conn.close().await?;
        Ok(Db::Postgres { admin_url: admin_url.to_owned(), name })
    }

    pub fn label(&self) -> &'static str {
        match self {
            Db::Sqlite => "sqlite",
            Db::Postgres { .. } => "postgres",
        }
    }

    /// `DET_DB_*` variables pointing the master at this database.
    fn env(&self) -> Result<Vec<(&'static str, String)>> {
        let Db::Postgres { admin_url, name } = self else {
            return Ok(Vec::new());
        };
        let url = Url::parse(admin_url).with_context(|| format!("parsing {admin_url}"))?;
        Ok(vec![
            ("DET_DB_HOST", url.host_str().unwrap_or("127.0.0.1").to_owned()),
            ("DET_DB_PORT", url.port().unwrap_or(5432).to_string()),
            ("DET_DB_USER", if url.username().is_empty() { "postgres" } else { url.username() }.to_owned()),
            ("DET_DB_PASSWORD", url.password().unwrap_or("").to_owned()),
            ("DET_DB_NAME", name.clone()),
            ("DET_DB_SSL_MODE", "disable".to_owned()),
        ])
    }

    /// The master's `db` settings for this database (`None` on SQLite), for in-process masters.
    pub fn db_config(&self) -> Result<Option<resolute_master::config::DbConfig>> {
        let env = self.env()?;
        if env.is_empty() {
            return Ok(None);
        }
        let get = |key: &str| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()).unwrap_or_default();
        Ok(Some(resolute_master::config::DbConfig {
            host: get("DET_DB_HOST"),
            port: get("DET_DB_PORT").parse().context("DET_DB_PORT")?,
            user: get("DET_DB_USER"),
            password: get("DET_DB_PASSWORD"),
            name: get("DET_DB_NAME"),
            ssl_mode: get("DET_DB_SSL_MODE"),
        }))
    }

    pub async fn drop_database(&self) -> Result<()> {
        if let Db::Postgres { admin_url, name } = self {
            let mut conn = PgConnection::connect(admin_url).await?;
            sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).execute(&mut conn).await?;
            conn.close().await?;
        }
        Ok(())
    }
}

/// A running `det master run` child process.
pub struct Master {
    child: Child,
    pub base: String,
    pub log: PathBuf,
    /// Time from spawn to the first successful `GET /info`.
    pub start_to_first_answer: Duration,
    _data_dir: tempfile::TempDir,
}

impl Master {
    pub async fn start(det: &Path, db: &Db, http: &reqwest::Client) -> Result<Self> {
        let data_dir = tempfile::Builder::new().prefix("resolute-bench-").tempdir()?;
        let log = data_dir.path().join("master.log");
        let port = free_port()?;
        let base = format!("http://127.0.0.1:{port}");
        let log_file = File::create(&log)?;
        let mut cmd = Command::new(det);
        cmd.args(["master", "run", "--port", &port.to_string(), "--data-dir"])
            .arg(data_dir.path().join("data"))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        // Only the database chosen here, whatever the caller's environment says.
        for var in DB_VARS {
            cmd.env_remove(var);
        }
        cmd.envs(db.env()?);

        let started = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("spawning {}", det.display()))?;
        let info = format!("{base}/info");
        loop {
            if let Ok(resp) = http.get(&info).send().await
                && resp.status().is_success()
            {
                break;
            }
            if let Some(status) = child.try_wait()? {
                bail!("master exited with {status} before answering; log:\n{}", tail(&log));
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                bail!("master did not answer GET /info within 30 s; log:\n{}", tail(&log));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let start_to_first_answer = started.elapsed();
        Ok(Master { child, base, log, start_to_first_answer, _data_dir: data_dir })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident set size of the master process, in KiB (`VmRSS` from /proc).
    pub fn rss_kib(&self) -> Result<u64> {
        self.status_kib("VmRSS")
    }

    /// A size line of `/proc/<pid>/status` (`VmRSS`, `RssAnon`: the heap; `RssFile`: mapped
    /// files, such as SQLite's memory-mapped database pages), in KiB.
    pub fn status_kib(&self, key: &str) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {key} in /proc/<pid>/status"))
    }

    /// SIGTERM, then wait up to 10 s (SIGKILL after that). Returns how long the shutdown took.
    pub async fn stop(mut self) -> Result<Duration> {
        let started = Instant::now();
        kill(Pid::from_raw(self.pid() as i32), Signal::SIGTERM)?;
        while started.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait()?.is_some() {
                return Ok(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!("master ignored SIGTERM for 10 s; killed")
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn unix_millis() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// The last lines of the master's log, for error messages.
pub fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
