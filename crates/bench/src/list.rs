//! Listing many experiments: seeds N paused experiments (`activate: false`, so no trials) through
//! the API from parallel clients, then measures `GET /api/v1/experiments` pages under a few
//! concurrent clients.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::Value;

use crate::api;
use crate::load::{self, EndpointStats};

/// The pages measured: first page, a deep offset, and sorted pages.
const QUERIES: [&str; 4] = [
    "/api/v1/experiments?limit=100",
    "/api/v1/experiments?limit=10&offset=5000",
    "/api/v1/experiments?limit=100&sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC",
    "/api/v1/experiments?limit=100&sortBy=SORT_BY_START_TIME&orderBy=ORDER_BY_DESC",
];

const SEED_CLIENTS: usize = 16;

pub struct ListReport {
    pub experiments: usize,
    pub seed_elapsed: Duration,
    /// `pagination.total` of the first page.
    pub listed_total: u64,
    pub clients: usize,
    pub queries: Vec<EndpointStats>,
}

pub async fn run(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    experiments: usize,
    clients: usize,
    warmup: Duration,
    seconds: Duration,
) -> Result<ListReport> {
    let seed_elapsed = seed(http, base, token, experiments).await?;
    let first = api::get_json(http, &format!("{base}{}", QUERIES[0]), token).await?;
    let listed_total = first.pointer("/pagination/total").and_then(Value::as_u64).unwrap_or(0);
    if listed_total < experiments as u64 {
        bail!("seeded {experiments} experiments but the list's total is {listed_total}");
    }
    let mut queries = Vec::new();
    for path in QUERIES {
        eprintln!("hammering GET {path}: {clients} clients, {warmup:?} warm-up + {seconds:?}");
        queries.push(load::hammer(http, base, path, token, clients, warmup, seconds).await?);
    }
    Ok(ListReport { experiments, seed_elapsed, listed_total, clients, queries })
}

/// Creates `count` paused experiments with [`SEED_CLIENTS`] parallel clients; returns the time taken.
async fn seed(http: &reqwest::Client, base: &str, token: &str, count: usize) -> Result<Duration> {
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
                    // Distinct names so sorting by name has work to do.
                    let config = api::SINGLE_CONFIG.replacen("name: bench", &format!("name: bench-{:05}", (i * 7919) % 100_000), 1);
                    api::create_experiment(&http, &base, &token, &api::create_body(&config, false)).await?;
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

impl ListReport {
    pub fn print(&self) {
        println!(
            "### Listing experiments ({} seeded paused experiments, list total {}; {} concurrent clients)\n",
            self.experiments, self.listed_total, self.clients
        );
        println!(
            "Seeding through `POST /api/v1/experiments` ({SEED_CLIENTS} clients): {:.1} s, {:.0} experiments/s.\n",
            self.seed_elapsed.as_secs_f64(),
            self.experiments as f64 / self.seed_elapsed.as_secs_f64()
        );
        load::print_query_table(&self.queries, "p95 < 20 ms");
    }
}
