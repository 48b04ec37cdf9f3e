//! Metric ingestion: M trials running on the fake agent, one closed-loop client per trial posting
//! `POST /api/v1/trials/{id}/metrics` (group `training`, 10 scalars, increasing `stepsCompleted`)
//! with the trial's allocation token, as the harness does. The clients are [`lean_load`]'s.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use bytes::Bytes;
use serde_json::Value;

use crate::api;
use crate::cpu::CpuProbe;
use crate::lean_load;
use crate::load::EndpointStats;
use crate::trials;

/// The header the harness authenticates runtime calls with.
pub const ALLOCATION_TOKEN_HEADER: &str = "Grpc-Metadata-x-allocation-token";

pub struct MetricsReport {
    pub trials: usize,
    pub stats: EndpointStats,
    /// Training reports the master lists for the first trial afterwards, and how many it was sent.
    pub stored_first_trial: u64,
    pub sent_first_trial: u64,
}

pub async fn run(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    trial_count: usize,
    warmup: Duration,
    seconds: Duration,
    probe: &CpuProbe,
) -> Result<MetricsReport> {
    let (_agent, trials) = trials::start_trials(http, base, token, trial_count).await?;
    let targets: Vec<(String, String, i64, i64)> = trials
        .iter()
        .map(|t| (format!("/api/v1/trials/{}/metrics", t.trial_id), format!("Bearer {}", t.token), t.trial_id, t.trial_run_id))
        .collect();
    let make = move |client: usize, seq: u64| {
        let (path, auth, trial_id, run_id) = &targets[client];
        let step = seq + 1;
        let x = step as f64;
        let body = format!(
            r#"{{"group":"training","metrics":{{"trialId":{trial_id},"trialRunId":{run_id},"stepsCompleted":{step},"metrics":{{"avgMetrics":{{"loss":{},"accuracy":{},"lr":0.1,"grad_norm":{},"m4":{},"m5":{},"m6":{},"m7":{},"m8":{},"m9":{}}}}}}}}}"#,
            1.0 / x,
            1.0 - 1.0 / x,
            x * 0.5,
            x + 4.0,
            x + 5.0,
            x + 6.0,
            x + 7.0,
            x + 8.0,
            x + 9.0
        );
        (path.clone(), vec![(ALLOCATION_TOKEN_HEADER, auth.clone())], Bytes::from(body))
    };
    let host = base.trim_start_matches("http://");
    let stats =
        lean_load::post_closed_loop(host, "/api/v1/trials/{id}/metrics", trials.len(), warmup, seconds, Some(probe), Arc::new(make))
            .await?;
    if stats.ok == 0 {
        bail!("no metric report succeeded: {}", stats.first_error.as_deref().unwrap_or("no error recorded"));
    }

    // Check that what was acknowledged was stored, on the first trial.
    let first = &trials[0];
    let url = format!("{base}/api/v1/trials/{}/workloads?group=training&limit=1", first.trial_id);
    let body = api::get_json(http, &url, token).await?;
    let stored_first_trial = body.pointer("/pagination/total").and_then(Value::as_u64).unwrap_or(0);
    let sent_first_trial = stats.per_client_ok[0];
    Ok(MetricsReport { trials: trials.len(), stats, stored_first_trial, sent_first_trial })
}

impl MetricsReport {
    pub fn print(&self) {
        let s = &self.stats;
        println!("### Metric ingestion ({} running trials, one closed-loop client each, 10 scalars per report)\n", self.trials);
        println!("| Reports | Errors | Reports/s | p50 ms | p95 ms | p99 ms | max ms | Target |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---|");
        println!(
            "| {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | ≥ 50,000 reports/s |",
            s.ok,
            s.errors,
            s.requests_per_sec(),
            s.percentile_ms(50.0),
            s.percentile_ms(95.0),
            s.percentile_ms(99.0),
            s.max_ms()
        );
        if let Some(e) = &s.first_error {
            println!("\nFirst error: {e}");
        }
        if let Some(cpu) = s.cpu.filter(|_| s.ok > 0) {
            let per_report = |d: std::time::Duration| d.as_secs_f64() * 1e6 / s.ok as f64;
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            let (master, generator, database) = (per_report(cpu.master), per_report(cpu.generator), per_report(cpu.database));
            let used = (master + generator + database) * s.requests_per_sec() / 1e6;
            println!(
                "\nCPU per report over the measured phase: master {master:.1} µs, load generator {generator:.1} µs{}; \
                 {used:.2} of {cores:.0} cores busy. The master (and its database) alone on these cores: \
                 ≤ {:.0} reports/s.",
                if database > 0.0 { format!(", PostgreSQL server {database:.1} µs") } else { String::new() },
                cores * 1e6 / (master + database)
            );
        }
        println!(
            "\nStored check: the first trial lists {} training reports; {} were acknowledged (warm-up included).",
            self.stored_first_trial, self.sent_first_trial
        );
        println!();
    }
}
