//! `resolute-bench`: start-up time, idle memory and HTTP latency/throughput of the master.
//!
//! Starts `det master run` on a free loopback port (SQLite in a temporary data directory, or a
//! fresh PostgreSQL database), then measures, in order:
//! 1. time from spawn to the first successful `GET /info`;
//! 2. idle RSS (`VmRSS`) shortly after start;
//! 3. `GET /api/v1/me` and `GET /api/v1/users` under closed-loop load from concurrent clients,
//!    logged in as `admin`: p50/p95/p99 latency and requests per second.
//!
//! `--mode` picks other benchmarks (each on its own fresh master and database): `create`
//! (experiment → `StartTask` latency), `metrics` (metric report ingestion), `logs` (log ingestion
//! MB/s), `list` (listing 10,000 experiments), `project-list` (a project's experiments, filtered), `asha` (a 1,000-trial ASHA search's bookkeeping
//! overhead over its ideal makespan) and `proxy` (what `/proxy/{task}/` adds over reaching a task
//! service directly; an in-process master); see `bench/README.md`.
//!
//! The result is printed as a markdown table, with the targets of the performance issue.

mod api;
mod asha;
mod asha_ideal;
mod asha_trial;
mod cpu;
mod experiments;
mod fake_agent;
mod lean_load;
mod list;
mod load;
mod logs;
mod master;
mod metrics;
mod project_list;
mod proxy;
mod soak;
mod time_series;
mod trials;
mod ui_charts;
mod webhooks;
mod workloads;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};

use crate::load::EndpointStats;
use crate::master::{Db, Master};

const ENDPOINTS: [&str; 2] = ["/api/v1/me", "/api/v1/users"];

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    Sqlite,
    Postgres,
}

/// What to measure; each mode runs against its own fresh master and database.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Start-up, idle RSS, `GET /api/v1/me` and `GET /api/v1/users` under load.
    Http,
    /// `POST /api/v1/experiments` → the fake agent receives the trial's `StartTask`.
    Create,
    /// `POST /api/v1/trials/{id}/metrics` from many running trials.
    Metrics,
    /// Task log ingestion over the agent websocket and `POST /api/v1/task/logs`.
    Logs,
    /// `GET /api/v1/experiments` pages over many seeded experiments.
    List,
    /// A project's experiment list (with filters) and project counts over many experiments.
    ProjectList,
    /// An `adaptive_asha` search of no-op trials: makespan against the zero-overhead ideal.
    Asha,
    /// `/proxy/{task}/` to a local HTTP service: added latency and streaming throughput.
    Proxy,
    /// Readers and reporting trials for minutes; the master's RSS over time (not in `all`).
    Soak,
    /// `GET …/workloads?limit=10` on a trial with `--reports` reports (not in `all`).
    Workloads,
    /// `GET /api/v1/trials/time-series` over `--ts-trials` trials of `--ts-points` reports, in process (not in `all`).
    TimeSeries,
    /// Issue 12's chart benchmarks: time-series data and the browser's trial / experiment pages (not in `all`).
    UiCharts,
    /// Webhook delivery latency from an experiment's state change, `--iterations` events (not in `all`).
    Webhooks,
    /// All of the above but `soak`, in order.
    All,
}

#[derive(Parser)]
#[command(version, about = "Benchmark the Resolute master: start-up, idle RSS, request latency and throughput")]
struct Args {
    /// The `det` binary whose `det master run` is measured.
    #[arg(default_value = "target/release/det")]
    det: PathBuf,
    /// Database backend of the master.
    #[arg(long, value_enum, default_value = "sqlite")]
    db: Backend,
    /// PostgreSQL server URL (superuser) on which a fresh database is created for `--db postgres`.
    #[arg(long, env = "RESOLUTE_TEST_POSTGRES_URL")]
    pg_url: Option<String>,
    /// Measured seconds of load per endpoint.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    seconds: u64,
    /// Unmeasured warm-up seconds before each endpoint's measurement.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=60))]
    warmup: u64,
    /// Concurrent clients of the `http` mode.
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..=1000))]
    clients: u64,
    /// Benchmarks to run (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "http")]
    mode: Vec<Mode>,
    /// `create`: sequential experiments measured.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    iterations: u64,
    /// `create`: artificial slots of the fake agent.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    slots: u32,
    /// `metrics`: concurrently running trials, one client each.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    trials: u64,
    /// `logs`: concurrent `POST /api/v1/task/logs` clients.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    log_clients: u64,
    /// `list`: experiments seeded before listing.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    experiments: u64,
    /// `list`: concurrent listing clients.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1000))]
    list_clients: u64,
    /// `asha`: the search's `max_trials`.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    asha_trials: u64,
    /// `asha`: artificial slots of the fake agent, and the search's `max_concurrent_trials`.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    asha_slots: u32,
    /// `asha`: simulated training time of one batch, in milliseconds (100: a trial averages ~0.7 s).
    #[arg(long, default_value_t = 100.0)]
    batch_ms: f64,
    /// `asha`: `max_time` in batches (the top rung); rungs are `max_time / 4^k`.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_time: u64,
    /// `asha`: `max_rungs`. 1 stops no trial early: every trial trains `max_time` batches, which
    /// makes the run issue 13's makespan benchmark (N equal no-op trials on S slots).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=16))]
    max_rungs: u64,
    /// `asha`: `reproducibility.experiment_seed`.
    #[arg(long, default_value_t = 1)]
    asha_seed: u32,
    /// `proxy`: sequential small GETs measured each way (direct and proxied).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(10..=1_000_000))]
    proxy_requests: u64,
    /// `workloads`: the trial's reports.
    #[arg(long, default_value_t = 25_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    reports: u64,
    /// `soak`: seconds of load.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    soak_seconds: u64,
    /// `soak`: concurrent readers (experiment list, experiment describe, trial workloads).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1000))]
    readers: u64,
    /// `soak`: reporting trials.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=1024))]
    soak_trials: u64,
    /// `soak`: milliseconds between one trial's metric reports.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    report_ms: u64,
    /// `soak`: seconds after the load before the last RSS sample (the SQLite pool closes idle
    /// connections after 30 s, checked every 30 s).
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u64).range(0..=600))]
    settle: u64,
    /// `time-series`: trials seeded.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1000))]
    ts_trials: u64,
    /// `time-series`: training reports per trial.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    ts_points: u64,
    /// `time-series`: one-trial requests measured (a tenth as many all-trial requests).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..=100_000))]
    ts_requests: u64,
    /// `ui-charts`: training reports of the one big trial.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(2..=10_000_000))]
    ui_points: u64,
    /// `ui-charts`: trials of the many-trial experiment.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    ui_trials: u64,
    /// `ui-charts`: training reports per trial of the many-trial experiment.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
    ui_trial_points: u64,
    /// `proxy`: size of the large streamed response, in MB.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    proxy_mb: u64,
}

struct Report {
    backend: &'static str,
    start_ms: f64,
    idle_rss_kib: u64,
    loaded_rss_kib: u64,
    shutdown_ms: f64,
    endpoints: Vec<EndpointStats>,
}

/// The load generator shares the cores with the master: keep its allocations cheap too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut modes = Vec::new();
    for mode in &args.mode {
        match mode {
            Mode::All => {
                modes.extend([Mode::Http, Mode::Create, Mode::Metrics, Mode::Logs, Mode::List, Mode::ProjectList, Mode::Asha, Mode::Proxy])
            }
            m if !modes.contains(m) => modes.push(*m),
            _ => {}
        }
    }
    // The proxy mode runs its master in process; the others measure `det master run`.
    if modes.iter().any(|m| *m != Mode::Proxy && *m != Mode::TimeSeries && *m != Mode::UiCharts) && !args.det.exists() {
        bail!("{} not found; build it with `cargo build --release -p resolute-cli -p resolute-bench`", args.det.display());
    }
    for mode in modes {
        if mode == Mode::Proxy {
            proxy::run(args.proxy_requests as usize, args.proxy_mb).await?.print();
            continue;
        }
        let db = match args.db {
            Backend::Sqlite => Db::Sqlite,
            Backend::Postgres => {
                let url = args.pg_url.as_deref().context("--db postgres needs --pg-url (or RESOLUTE_TEST_POSTGRES_URL)")?;
                Db::postgres(url).await?
            }
        };
        let result = match mode {
            Mode::TimeSeries => async {
                let (trials, points, requests) = (args.ts_trials as usize, args.ts_points as usize, args.ts_requests as usize);
                time_series::run(db.db_config()?, trials, points, requests, requests / 10).await
            }
            .await
            .map(|r| r.print(db.label())),
            Mode::UiCharts => {
                let (points, trials, per) = (args.ui_points as usize, args.ui_trials as usize, args.ui_trial_points as usize);
                ui_charts::run(db.db_config()?, points, trials, per, args.ts_requests as usize).await
            }
            Mode::Http => run(&args, &db).await.map(|r| print_report(&args, &r)),
            other => run_mode(&args, &db, other).await,
        };
        if let Err(e) = db.drop_database().await {
            eprintln!("warning: could not drop the benchmark database: {e:#}");
        }
        result?;
    }
    Ok(())
}

fn http_client(pool: usize) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder().pool_max_idle_per_host(pool).tcp_nodelay(true).timeout(Duration::from_secs(30)).build()?)
}

/// The experiment benchmarks: a fresh master, logged in as `admin`; the report printed.
async fn run_mode(args: &Args, db: &Db, mode: Mode) -> Result<()> {
    let http = http_client(1024)?;
    let master = Master::start(&args.det, db, &http).await?;
    eprintln!("master pid {} on {} (log: {})", master.pid(), db.label(), master.log.display());
    let token = api::login(&http, &master.base).await.with_context(|| format!("log:\n{}", master::tail(&master.log)))?;
    let (base, warmup, seconds) = (&master.base, Duration::from_secs(args.warmup), Duration::from_secs(args.seconds));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("## Resolute master benchmark: {} backend\n", db.label());
    println!("{cores} CPU cores shared by master and load generator.\n");
    let outcome = match mode {
        Mode::Create => experiments::run(&http, base, &token, args.iterations as usize, args.slots).await.map(|r| r.print()),
        Mode::Metrics => {
            let probe = cpu::CpuProbe { master: master.pid(), postgres: matches!(db, Db::Postgres { .. }) };
            metrics::run(&http, base, &token, args.trials as usize, warmup, seconds, &probe).await.map(|r| r.print())
        }
        Mode::Logs => logs::run(&http, base, &token, seconds, args.log_clients as usize).await.map(|r| r.print()),
        Mode::List => {
            let clients = args.list_clients as usize;
            list::run(&http, base, &token, args.experiments as usize, clients, warmup, seconds).await.map(|r| r.print())
        }
        Mode::ProjectList => {
            let clients = args.list_clients as usize;
            project_list::run(&http, base, &token, args.experiments as usize, clients, warmup, seconds).await.map(|r| r.print())
        }
        Mode::Asha => asha::run(&http, base, &token, master.pid(), asha_plan(args)?).await.map(|r| r.print()),
        Mode::Soak => {
            let plan = soak::SoakPlan {
                trials: args.soak_trials as usize,
                readers: args.readers as usize,
                report_every: Duration::from_millis(args.report_ms),
                duration: Duration::from_secs(args.soak_seconds),
                settle: Duration::from_secs(args.settle),
            };
            soak::run(&http, &master, &token, plan).await.map(|r| r.print())
        }
        Mode::Workloads => workloads::run(&http, &master, &token, args.reports, seconds).await.map(|r| r.print()),
        Mode::Webhooks => webhooks::run(&http, base, &token, args.iterations as usize).await.map(|r| r.print()),
        Mode::Http | Mode::Proxy | Mode::TimeSeries | Mode::UiCharts | Mode::All => Ok(()),
    };
    let outcome = outcome.with_context(|| format!("master log:\n{}", master::tail(&master.log)));
    eprintln!("master RSS at the end: {:.1} MiB", master.rss_kib().unwrap_or(0) as f64 / 1024.0);
    master.stop().await?;
    outcome
}

fn asha_plan(args: &Args) -> Result<asha_ideal::AshaPlan> {
    if !(args.batch_ms.is_finite() && args.batch_ms > 0.0 && args.batch_ms <= 60_000.0) {
        bail!("--batch-ms must be a positive number of milliseconds (at most 60000), got {}", args.batch_ms);
    }
    Ok(asha_ideal::AshaPlan {
        max_trials: args.asha_trials as usize,
        slots: args.asha_slots,
        max_time: args.max_time,
        divisor: 4.0,
        max_rungs: args.max_rungs as usize,
        unit: Duration::from_secs_f64(args.batch_ms / 1000.0),
        seed: args.asha_seed,
    })
}

async fn run(args: &Args, db: &Db) -> Result<Report> {
    let http = http_client(args.clients as usize)?;

    let master = Master::start(&args.det, db, &http).await?;
    let start_ms = master.start_to_first_answer.as_secs_f64() * 1000.0;
    eprintln!("master pid {} answered GET /info after {start_ms:.1} ms (log: {})", master.pid(), master.log.display());

    // Let start-up work (migrations, background tasks) settle before sampling idle memory.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss_kib = master.rss_kib()?;

    let token = api::login(&http, &master.base).await.with_context(|| format!("log:\n{}", master::tail(&master.log)))?;
    let mut endpoints = Vec::new();
    for path in ENDPOINTS {
        eprintln!("hammering GET {path}: {} clients, {} s warm-up + {} s", args.clients, args.warmup, args.seconds);
        let stats = load::hammer(
            &http,
            &master.base,
            path,
            &token,
            args.clients as usize,
            Duration::from_secs(args.warmup),
            Duration::from_secs(args.seconds),
        )
        .await?;
        endpoints.push(stats);
    }
    let loaded_rss_kib = master.rss_kib()?;
    let shutdown_ms = master.stop().await?.as_secs_f64() * 1000.0;
    Ok(Report { backend: db.label(), start_ms, idle_rss_kib, loaded_rss_kib, shutdown_ms, endpoints })
}

fn print_report(args: &Args, r: &Report) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("## Resolute master benchmark: {} backend\n", r.backend);
    println!(
        "{cores} CPU cores shared by master and load generator; {} clients on loopback; {} s per endpoint after {} s warm-up.\n",
        args.clients, args.seconds, args.warmup
    );
    println!("| Measure | Value | Target |");
    println!("|---|---:|---|");
    println!("| Spawn to first `GET /info` | {:.1} ms | < 200 ms |", r.start_ms);
    println!("| Idle RSS (1 s after start) | {:.1} MiB | < 30 MB |", mib(r.idle_rss_kib));
    println!("| RSS after load | {:.1} MiB | |", mib(r.loaded_rss_kib));
    println!("| SIGTERM to exit | {:.1} ms | |", r.shutdown_ms);
    println!();
    println!("| Endpoint | Requests | Errors | Req/s | p50 ms | p95 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for e in &r.endpoints {
        println!(
            "| `GET {}` | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |",
            e.path,
            e.ok,
            e.errors,
            e.requests_per_sec(),
            e.percentile_ms(50.0),
            e.percentile_ms(95.0),
            e.percentile_ms(99.0),
            e.max_ms()
        );
    }
    println!("\nTargets: p95 < 5 ms and >= 5,000 req/s per endpoint.");
}
