//! The no-op trial of the ASHA benchmark, played by the fake agent: for each `StartTask` it makes
//! the trial runtime calls the upstream harness makes (`core.init`'s `POST /api/v1/runs/start`, the
//! preemption watcher's long poll, a validation report with the `batches` time metric and a
//! progress report at each rung boundary, `ack_preemption` when told to stop), with the task's
//! allocation token, and spends `unit` of wall time per batch in between. It trains until the
//! preemption signal says ASHA stopped it, or to `max_time`.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use resolute_api::agent_protocol::StartTask;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::asha_ideal::loss;

/// The header the harness authenticates runtime calls with (`DET_SESSION_TOKEN`).
const ALLOCATION_TOKEN_HEADER: &str = "Grpc-Metadata-x-allocation-token";
/// The harness's long-poll timeout for the preemption signal.
const LONG_POLL_SECONDS: u64 = 60;

/// What one trial did.
#[derive(Clone, Debug)]
pub struct TrialOutcome {
    pub trial_id: i64,
    /// Batches trained up to the last validation reported.
    pub trained: u64,
    /// The preemption signal ended it (ASHA stopped it) rather than reaching `max_time`.
    pub preempted: bool,
    /// For a stopped trial: its last validation report sent → the preemption signal seen.
    pub stop_latency: Option<Duration>,
    /// `POST /api/v1/runs/start` sent → answered (before the first batch, as in the harness).
    pub start_call: Duration,
    /// The last boundary's reports (validation, then progress) sent → both answered: the time
    /// between the last batch and the exit.
    pub last_reports: Duration,
}

/// What the trial knows from its environment, as the harness would.
struct TrialEnv {
    trial_id: i64,
    trial_run_id: i64,
    allocation_id: String,
    auth: String,
    hparams: Value,
    checkpoint_storage: Value,
}

impl TrialEnv {
    fn from_start(start: &StartTask) -> Result<Self> {
        let env = |key: &str| start.env.get(key).cloned().with_context(|| format!("StartTask has no {key}"));
        let config: Value = serde_json::from_str(&env("DET_EXPERIMENT_CONFIG")?).context("DET_EXPERIMENT_CONFIG is not JSON")?;
        Ok(TrialEnv {
            trial_id: env("DET_TRIAL_ID")?.parse().context("DET_TRIAL_ID is not a number")?,
            trial_run_id: env("DET_TRIAL_RUN_ID")?.parse().context("DET_TRIAL_RUN_ID is not a number")?,
            allocation_id: env("DET_ALLOCATION_ID")?,
            auth: format!("Bearer {}", env("DET_SESSION_TOKEN")?),
            hparams: serde_json::from_str(&env("DET_HPARAMS")?).context("DET_HPARAMS is not JSON")?,
            checkpoint_storage: config.get("checkpoint_storage").cloned().unwrap_or(Value::Null),
        })
    }
}

/// Runs one trial to its end. `boundaries` are the batch counts it validates at (ascending; the
/// last is `max_time`).
pub async fn run_trial(http: &reqwest::Client, base: &str, start: &StartTask, boundaries: &[u64], unit: Duration) -> Result<TrialOutcome> {
    let env = TrialEnv::from_start(start)?;
    let client = Runtime { http, base, auth: &env.auth };
    let start_call = Instant::now();
    client.post("/api/v1/runs/start", json!({"runId": env.trial_id, "checkpointStorage": env.checkpoint_storage})).await?;
    let start_call = start_call.elapsed();
    let mut last_reports = Duration::ZERO;

    // Training starts once `core.init` returned, as in the harness.
    let training = tokio::time::Instant::now();
    let (preempt_tx, mut preempted) = watch::channel(false);
    let watcher = tokio::spawn(watch_preemption(http.clone(), base.to_owned(), env.auth.clone(), env.allocation_id.clone(), preempt_tx));
    let max_time = boundaries.last().copied().unwrap_or(0);
    let mut trained = 0;
    let (mut stopped, mut stop_latency, mut last_report) = (false, None, Instant::now());
    for &batches in boundaries {
        let due = training + unit * u32::try_from(batches).unwrap_or(u32::MAX);
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {}
            // Trains until the next boundary unless told to stop (the harness checks every batch).
            _ = preempted.wait_for(|p| *p) => {
                stopped = true;
                stop_latency = Some(last_report.elapsed());
                break;
            }
        }
        last_report = Instant::now();
        let metrics = json!({
            "trialId": env.trial_id,
            "trialRunId": env.trial_run_id,
            "stepsCompleted": batches,
            "metrics": {"avgMetrics": {"loss": loss(&env.hparams, batches)?, "batches": batches}},
        });
        client.post(&format!("/api/v1/trials/{}/metrics", env.trial_id), json!({"group": "validation", "metrics": metrics})).await?;
        let progress = batches as f64 / max_time.max(1) as f64;
        client.post(&format!("/api/v1/trials/{}/progress", env.trial_id), json!({"progress": progress, "is_raw": true})).await?;
        last_reports = last_report.elapsed();
        trained = batches;
    }
    watcher.abort();
    if stopped {
        // The harness posts no body here.
        client.post(&format!("/api/v1/allocations/{}/signals/ack_preemption", env.allocation_id), Value::Null).await?;
    }
    Ok(TrialOutcome { trial_id: env.trial_id, trained, preempted: stopped, stop_latency, start_call, last_reports })
}

/// The harness's `_PreemptionWatcher`: one immediate check, then long polls until preempted.
async fn watch_preemption(http: reqwest::Client, base: String, auth: String, allocation_id: String, preempted: watch::Sender<bool>) {
    let url = format!("{base}/api/v1/allocations/{allocation_id}/signals/preemption");
    let mut timeout = 0;
    loop {
        let answer = http
            .get(format!("{url}?timeout_seconds={timeout}"))
            .header(ALLOCATION_TOKEN_HEADER, &auth)
            .timeout(Duration::from_secs(LONG_POLL_SECONDS + 10))
            .send()
            .await;
        let preempt = match answer {
            Ok(resp) => resp.json::<Value>().await.ok().and_then(|b| b.get("preempt").and_then(Value::as_bool)),
            Err(_) => None,
        };
        match preempt {
            Some(true) => {
                preempted.send_replace(true);
                return;
            }
            Some(false) => timeout = LONG_POLL_SECONDS,
            // As the harness: retry after a failure (it waits 10 s; the benchmark cannot).
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

struct Runtime<'a> {
    http: &'a reqwest::Client,
    base: &'a str,
    auth: &'a str,
}

impl Runtime<'_> {
    async fn post(&self, path: &str, body: Value) -> Result<()> {
        let mut request = self.http.post(format!("{}{path}", self.base)).header(ALLOCATION_TOKEN_HEADER, self.auth);
        if !body.is_null() {
            request = request.json(&body);
        }
        let resp = request.send().await?;
        let status = resp.status();
        if !status.is_success() {
            let text = resp.text().await.unwrap_or_default();
            bail!("POST {path}: {status} {text}");
        }
        Ok(())
    }
}
