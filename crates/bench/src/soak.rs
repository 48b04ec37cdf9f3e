//! The soak: many readers and reporting trials at once for minutes, watching the master's memory.
//! `--trials` (20) trials on the fake agent each post a training report (10 scalars) every
//! `--report-ms` (10) and a validation every tenth, with their allocation tokens; `--readers`
//! (50) closed-loop clients cycle through the experiment list (`limit=100`), an experiment's
//! describe (`GET /api/v1/experiments/{id}`) and a trial's workloads (`limit=10`). The master's
//! RSS is sampled every second: before the load, its peak, at the end of the load and
//! `--settle` seconds after it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::load::Latencies;
use crate::master::Master;
use crate::metrics::ALLOCATION_TOKEN_HEADER;
use crate::trials;

pub struct SoakPlan {
    pub trials: usize,
    pub readers: usize,
    pub report_every: Duration,
    pub duration: Duration,
    pub settle: Duration,
}

/// What the readers of one endpoint saw.
pub struct ReadStats {
    pub label: &'static str,
    pub ok: u64,
    pub errors: u64,
    pub latencies: Latencies,
    pub first_error: Option<String>,
}

pub struct SoakReport {
    pub plan_trials: usize,
    pub readers: usize,
    pub seconds: f64,
    pub reads: Vec<ReadStats>,
    pub reports_ok: u64,
    pub report_errors: u64,
    pub first_report_error: Option<String>,
    pub rss_start_kib: u64,
    pub rss_peak_kib: u64,
    pub rss_end_of_load_kib: u64,
    pub rss_settled_kib: u64,
    /// The heap alone (`RssAnon`): peak, and after the load stopped.
    pub anon_peak_kib: u64,
    pub anon_settled_kib: u64,
    pub anon_start_kib: u64,
    /// Threads of the master at the end of the load.
    pub threads: u64,
    /// (seconds since the load started, RSS KiB, RssAnon KiB), one a minute.
    pub timeline: Vec<(u64, u64, u64)>,
}

const READS: [&str; 3] =
    ["GET /api/v1/experiments?limit=100", "GET /api/v1/experiments/{id}", "GET /api/v1/trials/{id}/workloads?limit=10"];

pub async fn run(http: &reqwest::Client, master: &Master, token: &str, plan: SoakPlan) -> Result<SoakReport> {
    let base = master.base.clone();
    let (_agent, running) = trials::start_trials(http, &base, token, plan.trials).await?;
    // Let start-up and trial creation settle before the reference sample.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_start_kib = master.rss_kib()?;
    let anon_start_kib = master.status_kib("RssAnon")?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();

    // Writers: paced, as a harness reports.
    let mut writers = Vec::new();
    for t in running.iter().cloned() {
        let (http, base, stop, every) = (http.clone(), base.clone(), stop.clone(), plan.report_every);
        writers.push(tokio::spawn(async move {
            let (mut ok, mut errors, mut first_error) = (0u64, 0u64, None::<String>);
            let url = format!("{base}/api/v1/trials/{}/metrics", t.trial_id);
            let auth = format!("Bearer {}", t.token);
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut step = 0u64;
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                step += 1;
                let x = step as f64;
                let group = if step.is_multiple_of(10) { "validation" } else { "training" };
                let body = format!(
                    r#"{{"group":"{group}","metrics":{{"trialId":{},"trialRunId":{},"stepsCompleted":{step},"metrics":{{"avgMetrics":{{"loss":{},"accuracy":{},"lr":0.1,"m3":{},"m4":{},"m5":{},"m6":{},"m7":{},"m8":{},"m9":{}}}}}}}}}"#,
                    t.trial_id,
                    t.trial_run_id,
                    1.0 / x,
                    1.0 - 1.0 / x,
                    x + 3.0,
                    x + 4.0,
                    x + 5.0,
                    x + 6.0,
                    x + 7.0,
                    x + 8.0,
                    x + 9.0
                );
                let sent = http
                    .post(&url)
                    .header(ALLOCATION_TOKEN_HEADER, &auth)
                    .header("Content-Type", "application/json")
                    .body(body)
                    .send()
                    .await;
                match outcome(sent).await {
                    Ok(()) => ok += 1,
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
            (ok, errors, first_error)
        }));
    }

    // Readers: closed loop, each cycling through the three reads on its own trial/experiment.
    let experiment_ids: Vec<i64> = {
        let mut ids = Vec::new();
        for t in &running {
            let trial = crate::api::get_json(http, &format!("{base}/api/v1/trials/{}", t.trial_id), token).await?;
            ids.push(trial.pointer("/trial/experimentId").and_then(serde_json::Value::as_i64).unwrap_or(1));
        }
        ids
    };
    let mut readers = Vec::new();
    for r in 0..plan.readers {
        let (http, base, stop) = (http.clone(), base.clone(), stop.clone());
        let auth = format!("Bearer {token}");
        let trial_id = running[r % running.len()].trial_id;
        let experiment_id = experiment_ids[r % experiment_ids.len()];
        let urls = [
            format!("{base}/api/v1/experiments?limit=100"),
            format!("{base}/api/v1/experiments/{experiment_id}"),
            format!("{base}/api/v1/trials/{trial_id}/workloads?limit=10"),
        ];
        readers.push(tokio::spawn(async move {
            let mut out: Vec<(Vec<Duration>, u64, Option<String>)> = vec![(Vec::new(), 0, None); READS.len()];
            let mut i = r;
            while !stop.load(Ordering::Relaxed) {
                let k = i % READS.len();
                i += 1;
                let sent = Instant::now();
                match outcome(http.get(&urls[k]).header("Authorization", &auth).send().await).await {
                    Ok(()) => out[k].0.push(sent.elapsed()),
                    Err(e) => {
                        out[k].1 += 1;
                        out[k].2.get_or_insert(e);
                    }
                }
            }
            out
        }));
    }

    // RSS sampler.
    let peak = Arc::new(AtomicU64::new(rss_start_kib));
    let mut anon_peak_kib = anon_start_kib;
    let mut timeline = Vec::new();
    let mut next_minute = Duration::ZERO;
    while started.elapsed() < plan.duration {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let rss = master.rss_kib()?;
        let anon = master.status_kib("RssAnon")?;
        peak.fetch_max(rss, Ordering::Relaxed);
        anon_peak_kib = anon_peak_kib.max(anon);
        if started.elapsed() >= next_minute {
            timeline.push((started.elapsed().as_secs(), rss, anon));
            next_minute += Duration::from_secs(60);
        }
    }
    let threads = master.status_kib("Threads").unwrap_or(0);
    stop.store(true, Ordering::Relaxed);
    let rss_end_of_load_kib = master.rss_kib()?;
    peak.fetch_max(rss_end_of_load_kib, Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();

    let (mut reports_ok, mut report_errors, mut first_report_error) = (0, 0, None);
    for w in writers {
        let (ok, errors, first) = w.await?;
        reports_ok += ok;
        report_errors += errors;
        first_report_error = first_report_error.or(first);
    }
    let mut merged: Vec<(Vec<Duration>, u64, Option<String>)> = vec![(Vec::new(), 0, None); READS.len()];
    for r in readers {
        for (k, (lat, errors, first)) in r.await?.into_iter().enumerate() {
            merged[k].0.extend(lat);
            merged[k].1 += errors;
            if merged[k].2.is_none() {
                merged[k].2 = first;
            }
        }
    }
    let reads = merged
        .into_iter()
        .zip(READS)
        .map(|((lat, errors, first_error), label)| ReadStats {
            label,
            ok: lat.len() as u64,
            errors,
            latencies: Latencies::from_durations(&lat),
            first_error,
        })
        .collect();
    if reports_ok == 0 {
        bail!("no metric report succeeded: {}", first_report_error.as_deref().unwrap_or("no error recorded"));
    }

    tokio::time::sleep(plan.settle).await;
    let rss_settled_kib = master.rss_kib()?;
    let anon_settled_kib = master.status_kib("RssAnon")?;
    Ok(SoakReport {
        anon_peak_kib,
        anon_settled_kib,
        anon_start_kib,
        threads,
        plan_trials: plan.trials,
        readers: plan.readers,
        seconds,
        reads,
        reports_ok,
        report_errors,
        first_report_error,
        rss_start_kib,
        rss_peak_kib: peak.load(Ordering::Relaxed),
        rss_end_of_load_kib,
        rss_settled_kib,
        timeline,
    })
}

/// 2xx with its whole body read, or what went wrong.
async fn outcome(sent: reqwest::Result<reqwest::Response>) -> Result<(), String> {
    let resp = sent.map_err(|e| e.to_string())?;
    let status = resp.status();
    match resp.bytes().await {
        Ok(_) if status.is_success() => Ok(()),
        Ok(body) => Err(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]))),
        Err(e) => Err(e.to_string()),
    }
}

impl SoakReport {
    pub fn print(&self) {
        let mib = |kib: u64| kib as f64 / 1024.0;
        println!("### Soak ({} readers, {} reporting trials, {:.0} s)\n", self.readers, self.plan_trials, self.seconds);
        println!("| Read | Requests | Errors | p50 ms | p95 ms | p99 ms | max ms |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for r in &self.reads {
            println!(
                "| `{}` | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                r.label,
                r.ok,
                r.errors,
                r.latencies.percentile_ms(50.0),
                r.latencies.percentile_ms(95.0),
                r.latencies.percentile_ms(99.0),
                r.latencies.max_ms()
            );
        }
        println!(
            "\nMetric reports: {} stored ({:.0}/s), {} errors.",
            self.reports_ok,
            self.reports_ok as f64 / self.seconds,
            self.report_errors
        );
        for e in self.reads.iter().filter_map(|r| r.first_error.as_ref()).chain(self.first_report_error.as_ref()) {
            println!("First error: {e}");
        }
        let change = |kib: u64| (kib as f64 / self.rss_start_kib.max(1) as f64 - 1.0) * 100.0;
        println!("\n| Master RSS | MiB | vs start |");
        println!("|---|---:|---:|");
        println!("| Start (trials running, before the load) | {:.1} | |", mib(self.rss_start_kib));
        println!("| Peak | {:.1} | {:+.0} % |", mib(self.rss_peak_kib), change(self.rss_peak_kib));
        println!("| End of the load | {:.1} | {:+.0} % |", mib(self.rss_end_of_load_kib), change(self.rss_end_of_load_kib));
        println!("| After the load stopped | {:.1} | {:+.0} % |", mib(self.rss_settled_kib), change(self.rss_settled_kib));
        println!(
            "| Heap (`RssAnon`): start / peak / after | {:.1} / {:.1} / {:.1} | |",
            mib(self.anon_start_kib),
            mib(self.anon_peak_kib),
            mib(self.anon_settled_kib)
        );
        // The start sample is taken before the first read: one pooled SQLite connection, no
        // statement or page caches filled. The RSS after the first minute of load (every
        // connection open, caches warm) is the other honest baseline; both are printed.
        if let Some((secs, warm_kib, warm_anon)) = self.timeline.iter().find(|(s, _, _)| *s >= 60) {
            println!(
                "| After the load vs the RSS {}s into the load ({:.1} MiB, heap {:.1}) | | {:+.0} % |",
                secs,
                mib(*warm_kib),
                mib(*warm_anon),
                (self.rss_settled_kib as f64 / (*warm_kib).max(1) as f64 - 1.0) * 100.0
            );
        }
        let minutes: Vec<String> =
            self.timeline.iter().map(|(s, kib, anon)| format!("{}s {:.0} ({:.0} heap)", s, mib(*kib), mib(*anon))).collect();
        println!("\nRSS each minute (MiB): {}", minutes.join(", "));
        println!("Master threads at the end of the load: {}", self.threads);
        println!("\nTargets: 0 errors; peak < 300 MB; after the load within 20 % of the start.\n");
    }
}
