//! `GET /api/v1/trials/time-series` (CompareTrials) over long histories: an in-process master
//! (SQLite in a temporary directory or, with `--db postgres`, a fresh PostgreSQL database; its own runtime) with `trials` trials of `points` training
//! reports each (seeded through the store: the HTTP ingest path is measured by `metrics`), then
//! sequential requests downsampled to 1,000 points per trial — one trial per request and all trials
//! in one request — plus the cost of the downsampling itself.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use resolute_master::config::DbConfig;
use resolute_master::services::downsample::keep_indices;
use resolute_master::{Master, MasterConfig};
use resolute_store::{NewMetricReport, NewTrial, db_now};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use crate::api;
use crate::load::Latencies;

/// Points per series after downsampling.
const BUDGET: usize = 1000;
/// Reports per store insert while seeding.
const SEED_BATCH: usize = 2000;

pub struct TimeSeriesReport {
    pub trials: usize,
    pub points: usize,
    pub seed_elapsed: Duration,
    /// Each trial's first request after seeding.
    pub first_read: Latencies,
    pub one_trial: Latencies,
    pub all_trials: Latencies,
    pub all_trials_bytes: usize,
    pub downsample_only: Latencies,
}

/// Seeds, then measures `requests` one-trial requests and `all_requests` all-trial requests.
pub async fn run(db: Option<DbConfig>, trials: usize, points: usize, requests: usize, all_requests: usize) -> Result<TimeSeriesReport> {
    let dir = tempfile::tempdir()?;
    let (base, seed_tx, stop) = start_master(dir.path().to_owned(), db)?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(1).tcp_nodelay(true).timeout(Duration::from_secs(600)).build()?;
    let token = api::login(&http, &base).await?;
    let experiment = api::create_experiment(&http, &base, &token, &api::create_body(api::SINGLE_CONFIG, false)).await?;
    eprintln!("time-series: seeding {trials} trials x {points} reports");
    let started = Instant::now();
    let (done_tx, done_rx) = oneshot::channel();
    seed_tx.send((experiment, trials, points, done_tx)).map_err(|_| anyhow!("the master thread is gone"))?;
    let trial_ids = done_rx.await.context("seeding stopped")??;
    let seed_elapsed = started.elapsed();

    let url = |ids: &[i32]| {
        let ids: String = ids.iter().map(|id| format!("trialIds={id}&")).collect();
        format!(
            "{base}/api/v1/trials/time-series?{ids}maxDatapoints={BUDGET}&metricNames=loss&metricNames=accuracy&metricType=METRIC_TYPE_TRAINING"
        )
    };
    let get = |url: String| {
        let (http, token) = (http.clone(), token.clone());
        async move {
            let sent = Instant::now();
            let resp = http.get(&url).bearer_auth(&token).send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            if !status.is_success() {
                bail!("GET time-series: {status} {}", String::from_utf8_lossy(&body));
            }
            Ok::<_, anyhow::Error>((sent.elapsed(), body))
        }
    };
    // Each trial's first read (the master has not read its series since it was written).
    eprintln!("time-series: {} first (cold) one-trial requests", trial_ids.len());
    let mut cold = Vec::with_capacity(trial_ids.len());
    for id in &trial_ids {
        cold.push(get(url(std::slice::from_ref(id))).await?.0);
    }
    // Check the answer once: every trial, at most BUDGET points each, both ends kept.
    let (_, body) = get(url(&trial_ids)).await?;
    let all_trials_bytes = body.len();
    let parsed: Value = serde_json::from_slice(&body)?;
    for t in parsed["trials"].as_array().context("no trials")? {
        let data = t.pointer("/metrics/0/data").and_then(Value::as_array).context("no series")?;
        let first_last = (data.first().map(|p| p["batches"].clone()), data.last().map(|p| p["batches"].clone()));
        if data.len() > BUDGET || first_last != (Some(json!(1)), Some(json!(points))) {
            bail!("a series of {} points from {:?}: not downsampled as expected", data.len(), first_last);
        }
    }

    eprintln!("time-series: {requests} one-trial requests, {all_requests} all-trial requests");
    let mut one = Vec::with_capacity(requests);
    for i in 0..requests {
        one.push(get(url(&trial_ids[i % trial_ids.len()..][..1])).await?.0);
    }
    let mut all = Vec::with_capacity(all_requests);
    for _ in 0..all_requests {
        all.push(get(url(&trial_ids)).await?.0);
    }
    let _ = stop.send(());

    // The downsampling alone, on the same shape (two metrics per report).
    let loss: Vec<Option<f64>> = (0..points).map(|i| Some(1.0 / (i + 1) as f64 + ((i * 7919) % 13) as f64 / 100.0)).collect();
    let accuracy: Vec<Option<f64>> = (0..points).map(|i| Some((i % 100) as f64 / 100.0)).collect();
    let columns = [loss, accuracy];
    let mut only = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        for _ in 0..trials {
            std::hint::black_box(keep_indices(points, &columns, BUDGET));
        }
        only.push(started.elapsed());
    }
    Ok(TimeSeriesReport {
        trials,
        points,
        seed_elapsed,
        first_read: Latencies::from_durations(&cold),
        one_trial: Latencies::from_durations(&one),
        all_trials: Latencies::from_durations(&all),
        all_trials_bytes,
        downsample_only: Latencies::from_durations(&only),
    })
}

impl TimeSeriesReport {
    pub fn print(&self, backend: &str) {
        println!("### Trial time series (`GET /api/v1/trials/time-series`, in-process master, {backend})\n");
        println!(
            "{} trials x {} training reports (2 metrics each), seeded through the store in {:.1} s; {BUDGET} points per trial after downsampling.\n",
            self.trials,
            self.points,
            self.seed_elapsed.as_secs_f64()
        );
        println!("| what | samples | p50 ms | p95 ms | max ms |");
        println!("|---|---|---|---|---|");
        for (what, l) in [
            ("one trial per request, each trial's first read", &self.first_read),
            ("one trial per request", &self.one_trial),
            ("all trials in one request", &self.all_trials),
            ("downsampling alone, all trials (no I/O)", &self.downsample_only),
        ] {
            println!("| {what} | {} | {:.1} | {:.1} | {:.1} |", l.count(), l.percentile_ms(50.0), l.percentile_ms(95.0), l.max_ms());
        }
        println!("\nAll-trial response: {:.1} MB of JSON.\n", self.all_trials_bytes as f64 / 1e6);
    }
}

pub(crate) type SeedJob = (i64, usize, usize, oneshot::Sender<Result<Vec<i32>>>);

/// The master on its own runtime thread; seeding runs there too, on the master's store.
pub(crate) fn start_master(
    data_dir: std::path::PathBuf,
    db: Option<DbConfig>,
) -> Result<(String, tokio::sync::mpsc::UnboundedSender<SeedJob>, oneshot::Sender<()>)> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (seed_tx, mut seed_rx) = tokio::sync::mpsc::unbounded_channel::<SeedJob>();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = ready_tx.send(Err(anyhow::Error::from(e)));
                return;
            }
        };
        runtime.block_on(async move {
            let config = MasterConfig { port: 0, data_dir: Some(data_dir), db: db.unwrap_or_default(), ..Default::default() };
            let master = match Master::start(config).await {
                Ok(master) => master,
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow::Error::from(e)));
                    return;
                }
            };
            let store = master.store();
            tokio::spawn(async move {
                while let Some((experiment, trials, points, done)) = seed_rx.recv().await {
                    let _ = done.send(seed(store.as_ref(), experiment, trials, points).await);
                }
            });
            let _ = ready_tx.send(Ok(format!("http://127.0.0.1:{}", master.local_addr().port())));
            let _ = master
                .serve(async move {
                    let _ = stop_rx.await;
                })
                .await;
        });
    });
    let base = ready_rx.recv().map_err(|_| anyhow!("the master thread stopped before it was ready"))??;
    Ok((base, seed_tx, stop_tx))
}

async fn seed(store: &dyn resolute_store::Store, experiment: i64, trials: usize, points: usize) -> Result<Vec<i32>> {
    let experiment_id = i32::try_from(experiment)?;
    let mut ids = Vec::with_capacity(trials);
    for n in 0..trials {
        let trial = store
            .create_trial(NewTrial {
                experiment_id,
                request_id: format!("bench-{n}"),
                task_id: format!("{experiment_id}.bench-{n}"),
                state: "STATE_COMPLETED".to_owned(),
                // Varied, so the experiment page's hyperparameter views have something to show.
                hparams: json!({"lr": 10f64.powf(-4.0 + 3.0 * (n % 50) as f64 / 50.0), "layers": 1 + n % 4}),
                seed: 1,
                start_time: db_now(),
            })
            .await?;
        let mut step = 1;
        while step <= points {
            let batch: Vec<NewMetricReport> = (step..=(step + SEED_BATCH - 1).min(points))
                .map(|s| {
                    let mut avg = Map::new();
                    avg.insert("loss".into(), json!(1.0 / s as f64 + ((s * 7919) % 13) as f64 / 100.0));
                    avg.insert("accuracy".into(), json!((s % 100) as f64 / 100.0));
                    NewMetricReport {
                        trial_id: trial.id,
                        trial_run_id: 1,
                        group: "training".into(),
                        steps_completed: s as i64,
                        report_time: db_now(),
                        avg_metrics: avg,
                        batch_metrics: Vec::new(),
                        searcher_metric: None,
                    }
                })
                .collect();
            step += batch.len();
            store.insert_metrics(&batch).await?;
        }
        ids.push(trial.id);
    }
    Ok(ids)
}
