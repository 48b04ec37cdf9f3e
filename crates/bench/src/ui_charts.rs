//! Issue 12's chart benchmarks (`--mode ui-charts`): an in-process master (its web UI embedded)
//! with one trial of `--ui-points` (1,000,000) training reports and an experiment of
//! `--ui-trials` (500) trials × `--ui-trial-points` (2,000) reports, seeded through the store.
//! Measured here: the learning-curve data request the UI makes for the big trial
//! (`GET /api/v1/trials/time-series`, `maxDatapoints=1000`, one metric), first read and p50/p95 of
//! `--ts-requests`. Then `webui/e2e/bench.mjs` (playwright-core, Debian's Chromium) measures in the
//! browser: the same request from the page, the trial page until its chart is drawn, and the
//! 500-trial experiment page until its learning curves and trials table are drawn.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use resolute_master::config::DbConfig;
use tokio::sync::oneshot;

use crate::api;
use crate::load::Latencies;
use crate::time_series::start_master;

pub async fn run(db: Option<DbConfig>, points: usize, trials: usize, trial_points: usize, requests: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (base, seed_tx, stop) = start_master(dir.path().to_owned(), db)?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(1).tcp_nodelay(true).timeout(Duration::from_secs(600)).build()?;
    let token = api::login(&http, &base).await?;

    let mut seeded = Vec::new();
    for (what, n, p) in [("one big trial", 1, points), ("many trials", trials, trial_points)] {
        let experiment = api::create_experiment(&http, &base, &token, &api::create_body(api::SINGLE_CONFIG, false)).await?;
        eprintln!("ui-charts: seeding {what}: experiment {experiment}, {n} trial(s) x {p} reports");
        let started = Instant::now();
        let (done_tx, done_rx) = oneshot::channel();
        seed_tx.send((experiment, n, p, done_tx)).map_err(|_| anyhow!("the master thread is gone"))?;
        let ids = done_rx.await.context("seeding stopped")??;
        eprintln!("ui-charts: seeded in {:.1} s", started.elapsed().as_secs_f64());
        seeded.push((experiment, ids));
    }
    let (big_experiment, big_trial) = (seeded[0].0, seeded[0].1[0]);
    let many_experiment = seeded[1].0;

    // The request the trial page's chart makes (LearningCurves: one metric, 1,000 points).
    let url = format!("{base}/api/v1/trials/time-series?trialIds={big_trial}&metricIds=training.loss&maxDatapoints=1000");
    let get = || {
        let (http, token, url) = (http.clone(), token.clone(), url.clone());
        async move {
            let sent = Instant::now();
            let resp = http.get(&url).bearer_auth(&token).send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            if !status.is_success() {
                bail!("GET time-series: {status} {}", String::from_utf8_lossy(&body));
            }
            Ok::<_, anyhow::Error>((sent.elapsed(), body.len()))
        }
    };
    let (cold, bytes) = get().await?;
    let mut warm = Vec::with_capacity(requests);
    for _ in 0..requests {
        warm.push(get().await?.0);
    }
    let warm = Latencies::from_durations(&warm);
    println!("### Chart data request, 1 trial x {points} points (client in process, {bytes} bytes)\n");
    println!("| first read ms | p50 ms | p95 ms | max ms | requests |");
    println!("|---|---|---|---|---|");
    println!(
        "| {:.1} | {:.1} | {:.1} | {:.1} | {} |\n",
        cold.as_secs_f64() * 1000.0,
        warm.percentile_ms(50.0),
        warm.percentile_ms(95.0),
        warm.max_ms(),
        warm.count()
    );

    // The browser's side (the master serves on its own runtime thread: waiting here blocks nothing).
    let webui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../webui");
    let status = std::process::Command::new("node")
        .arg("e2e/bench.mjs")
        .current_dir(&webui)
        .env("RESOLUTE_UI_URL", &base)
        .env("RESOLUTE_UI_USER", "admin")
        .env("RESOLUTE_UI_PASS", "")
        .env("RESOLUTE_BENCH_BIG_EXPERIMENT", big_experiment.to_string())
        .env("RESOLUTE_BENCH_BIG_TRIAL", big_trial.to_string())
        .env("RESOLUTE_BENCH_BIG_POINTS", points.to_string())
        .env("RESOLUTE_BENCH_MANY_EXPERIMENT", many_experiment.to_string())
        .env("RESOLUTE_BENCH_MANY_TRIALS", trials.to_string())
        .status()
        .context("run node webui/e2e/bench.mjs (scripts/webui.sh installs playwright-core)")?;
    let _ = stop.send(());
    if !status.success() {
        bail!("webui/e2e/bench.mjs failed: {status}");
    }
    Ok(())
}
