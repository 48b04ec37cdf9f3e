//! One trial with a long history: `--reports` (25,000) training reports posted with its
//! allocation token, then `GET /api/v1/trials/{id}/workloads?limit=10` read alone (sequential
//! latency) and by 20 concurrent closed-loop clients (latency, throughput, master RSS). A page
//! should cost the same whatever the history.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::load::{self, EndpointStats, Latencies};
use crate::master::Master;
use crate::metrics::ALLOCATION_TOKEN_HEADER;
use crate::trials;

pub struct WorkloadsReport {
    pub reports: u64,
    pub sequential: Latencies,
    pub concurrent: EndpointStats,
    pub rss_before_kib: u64,
    pub rss_peak_kib: u64,
}

pub async fn run(http: &reqwest::Client, master: &Master, token: &str, reports: u64, seconds: Duration) -> Result<WorkloadsReport> {
    let base = master.base.clone();
    let (_agent, running) = trials::start_trials(http, &base, token, 1).await?;
    let t = running[0].clone();
    let next = Arc::new(AtomicU64::new(1));
    let mut posters = Vec::new();
    for _ in 0..8 {
        let (http, next, url, auth) =
            (http.clone(), next.clone(), format!("{base}/api/v1/trials/{}/metrics", t.trial_id), format!("Bearer {}", t.token));
        let (trial_id, run_id) = (t.trial_id, t.trial_run_id);
        posters.push(tokio::spawn(async move {
            loop {
                let step = next.fetch_add(1, Ordering::Relaxed);
                if step > reports {
                    return Ok::<(), anyhow::Error>(());
                }
                let body = format!(
                    r#"{{"group":"training","metrics":{{"trialId":{trial_id},"trialRunId":{run_id},"stepsCompleted":{step},"metrics":{{"avgMetrics":{{"loss":{},"accuracy":0.5,"lr":0.1}}}}}}}}"#,
                    1.0 / step as f64
                );
                let resp = http.post(&url).header(ALLOCATION_TOKEN_HEADER, &auth).header("Content-Type", "application/json").body(body).send().await?;
                if !resp.status().is_success() {
                    bail!("reporting step {step}: {} {}", resp.status(), resp.text().await.unwrap_or_default());
                }
            }
        }));
    }
    for p in posters {
        p.await??;
    }
    let path = format!("/api/v1/trials/{}/workloads?limit=10", t.trial_id);
    let url = format!("{base}{path}");
    let mut samples = Vec::new();
    for _ in 0..200 {
        let sent = Instant::now();
        let resp = http.get(&url).bearer_auth(token).send().await?;
        let ok = resp.status().is_success();
        resp.bytes().await?;
        if !ok {
            bail!("GET {path} failed");
        }
        samples.push(sent.elapsed());
    }
    let rss_before_kib = master.rss_kib()?;
    let peak = Arc::new(AtomicU64::new(rss_before_kib));
    let sampler = {
        let (peak, pid) = (peak.clone(), master.pid());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    && let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
            }
        })
    };
    let concurrent = load::hammer(http, &base, &path, token, 20, Duration::from_secs(1), seconds).await?;
    sampler.abort();
    peak.fetch_max(master.rss_kib()?, Ordering::Relaxed);
    Ok(WorkloadsReport {
        reports,
        sequential: Latencies::from_durations(&samples),
        concurrent,
        rss_before_kib,
        rss_peak_kib: peak.load(Ordering::Relaxed),
    })
}

impl WorkloadsReport {
    pub fn print(&self) {
        let c = &self.concurrent;
        println!("### `GET /api/v1/trials/{{id}}/workloads?limit=10` on a trial with {} reports\n", self.reports);
        println!("| Measure | Value |");
        println!("|---|---:|");
        println!(
            "| Alone: p50 / p95 ms (200 calls) | {:.2} / {:.2} |",
            self.sequential.percentile_ms(50.0),
            self.sequential.percentile_ms(95.0)
        );
        println!(
            "| 20 concurrent clients: req/s, p50 / p95 ms, errors | {:.0}, {:.2} / {:.2}, {} |",
            c.requests_per_sec(),
            c.percentile_ms(50.0),
            c.percentile_ms(95.0),
            c.errors
        );
        println!(
            "| Master RSS before / peak under the 20 clients | {:.1} / {:.1} MiB |",
            self.rss_before_kib as f64 / 1024.0,
            self.rss_peak_kib as f64 / 1024.0
        );
        println!();
    }
}
