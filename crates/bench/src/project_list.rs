//! A project's experiment list: creates a workspace with two projects, seeds N paused
//! experiments (`activate: false`, so no trials) into the first (every tenth into the second)
//! through `POST /api/v1/experiments` with `projectId`, then measures the calls `det project
//! list-experiments`, `describe` and the SDK's `Project.list_experiments` make, with filters,
//! under a few concurrent clients.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::api;
use crate::load::{self, EndpointStats};

const SEED_CLIENTS: usize = 16;

pub struct ProjectListReport {
    pub experiments: usize,
    pub in_project: u64,
    pub seed_elapsed: Duration,
    pub clients: usize,
    pub queries: Vec<EndpointStats>,
}

async fn post(http: &reqwest::Client, url: &str, token: &str, body: Value) -> Result<Value> {
    let resp = http.post(url).bearer_auth(token).json(&body).send().await?;
    let status = resp.status();
    let text = resp.text().await?;
    if !status.is_success() {
        bail!("POST {url}: {status} {text}");
    }
    Ok(serde_json::from_str(&text)?)
}

pub async fn run(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    experiments: usize,
    clients: usize,
    warmup: Duration,
    seconds: Duration,
) -> Result<ProjectListReport> {
    let ws = post(http, &format!("{base}/api/v1/workspaces"), token, json!({"name": "bench"})).await?;
    let ws_id = ws.pointer("/workspace/id").and_then(Value::as_i64).context("workspace id")?;
    let mut projects = Vec::new();
    for name in ["main", "other"] {
        let p = post(http, &format!("{base}/api/v1/workspaces/{ws_id}/projects"), token, json!({"name": name})).await?;
        projects.push(p.pointer("/project/id").and_then(Value::as_i64).context("project id")?);
    }
    let (main, other) = (projects[0], projects[1]);
    let seed_elapsed = seed(http, base, token, experiments, main, other).await?;
    let first = api::get_json(http, &format!("{base}/api/v1/experiments?projectId={main}&limit=1"), token).await?;
    let in_project = first.pointer("/pagination/total").and_then(Value::as_u64).unwrap_or(0);
    let expected = experiments - experiments.div_ceil(10);
    if in_project != expected as u64 {
        bail!("seeded {expected} experiments into project {main} but its list's total is {in_project}");
    }
    let queries = [
        // `det project list-experiments W P` (its defaults: the caller's, unarchived, by id).
        format!("/api/v1/experiments?projectId={main}&users=admin&archived=false&sortBy=SORT_BY_ID&orderBy=ORDER_BY_ASC&limit=200"),
        // A deep page, as the CLI's loop reads on.
        format!("/api/v1/experiments?projectId={main}&archived=false&limit=200&offset=8000"),
        // Filtered by state and name, newest first.
        format!(
            "/api/v1/experiments?projectId={main}&states=STATE_PAUSED&name=bench-1&sortBy=SORT_BY_START_TIME&orderBy=ORDER_BY_DESC&limit=100"
        ),
        // `det project describe` / the SDK's `Project.reload`: the counts over the project.
        format!("/api/v1/projects/{main}"),
        // `det project list W`: every project with its counts.
        format!("/api/v1/workspaces/{ws_id}/projects"),
    ];
    let mut stats = Vec::new();
    for path in &queries {
        eprintln!("hammering GET {path}: {clients} clients, {warmup:?} warm-up + {seconds:?}");
        stats.push(load::hammer(http, base, path, token, clients, warmup, seconds).await?);
    }
    Ok(ProjectListReport { experiments, in_project, seed_elapsed, clients, queries: stats })
}

/// Creates `count` paused experiments, nine in ten into `main`, the rest into `other`.
async fn seed(http: &reqwest::Client, base: &str, token: &str, count: usize, main: i64, other: i64) -> Result<Duration> {
    eprintln!("seeding {count} paused experiments with {SEED_CLIENTS} clients");
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..SEED_CLIENTS)
        .map(|_| {
            let (http, base, token, next) = (http.clone(), base.to_owned(), token.to_owned(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let config = api::SINGLE_CONFIG.replacen("name: bench", &format!("name: bench-{:05}", (i * 7919) % 100_000), 1);
                    let mut body = api::create_body(&config, false);
                    body["projectId"] = json!(if i % 10 == 0 { other } else { main });
                    api::create_experiment(&http, &base, &token, &body).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(started.elapsed())
}

impl ProjectListReport {
    pub fn print(&self) {
        println!(
            "### A project's experiments ({} seeded paused experiments, {} in the project; {} concurrent clients)\n",
            self.experiments, self.in_project, self.clients
        );
        println!(
            "Seeding through `POST /api/v1/experiments` with `projectId` ({SEED_CLIENTS} clients): {:.1} s.\n",
            self.seed_elapsed.as_secs_f64()
        );
        load::print_query_table(&self.queries, "p95 < 20 ms");
    }
}
