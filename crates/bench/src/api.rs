//! The few REST calls the benchmarks make as a user: log in, create an experiment, read its state.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

/// A one-trial experiment: the `single` searcher, one slot, no restarts (a failure is visible at once).
pub const SINGLE_CONFIG: &str = "name: bench\nentrypoint: python3 train.py\n\
    searcher: {name: single, metric: loss, max_length: {batches: 100}}\n\
    hyperparameters: {lr: 0.1}\nmax_restarts: 0\n";

/// Logs in as `admin` (blank password, as the upstream client sends it) and returns the token.
pub async fn login(http: &reqwest::Client, base: &str) -> Result<String> {
    let resp =
        http.post(format!("{base}/api/v1/auth/login")).json(&json!({"username": "admin", "password": "", "isHashed": true})).send().await?;
    let status = resp.status();
    let body: Value = resp.json().await.context("login response is not JSON")?;
    match body.get("token").and_then(|t| t.as_str()) {
        Some(token) if status.is_success() => Ok(token.to_owned()),
        _ => bail!("login as admin failed: {status} {body}"),
    }
}

/// The body of `POST /api/v1/experiments` with a one-file model definition (`train.py`).
pub fn create_body(config: &str, activate: bool) -> Value {
    let train = BASE64.encode("print('resolute bench')\n");
    json!({
        "config": config,
        "activate": activate,
        "modelDefinition": [{"path": "train.py", "type": 48, "content": train, "mtime": "1700000000", "mode": 0o644, "uid": 0, "gid": 0}],
    })
}

/// `POST /api/v1/experiments`; returns the new experiment's id.
pub async fn create_experiment(http: &reqwest::Client, base: &str, token: &str, body: &Value) -> Result<i64> {
    let resp = http.post(format!("{base}/api/v1/experiments")).bearer_auth(token).json(body).send().await?;
    let status = resp.status();
    let text = resp.text().await?;
    if !status.is_success() {
        bail!("creating an experiment failed: {status} {text}");
    }
    let body: Value = serde_json::from_str(&text).context("create response is not JSON")?;
    body.pointer("/experiment/id").and_then(Value::as_i64).with_context(|| format!("no experiment id in {text}"))
}

pub async fn get_json(http: &reqwest::Client, url: &str, token: &str) -> Result<Value> {
    let resp = http.get(url).bearer_auth(token).send().await?;
    let status = resp.status();
    let text = resp.text().await?;
    if !status.is_success() {
        bail!("GET {url}: {status} {text}");
    }
    serde_json::from_str(&text).with_context(|| format!("GET {url} did not answer JSON"))
}

/// Polls the experiment every `every` until its state is `want`; returns when it was seen.
pub async fn wait_experiment_state(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    id: i64,
    want: &str,
    every: Duration,
) -> Result<Instant> {
    let url = format!("{base}/api/v1/experiments/{id}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = get_json(http, &url, token).await?;
        let state = body.pointer("/experiment/state").and_then(Value::as_str).unwrap_or("");
        if state == want {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("experiment {id} is still {state}, not {want}, after 30 s");
        }
        tokio::time::sleep(every).await;
    }
}

/// Counts the lines of `GET /api/v1/tasks/{task}/logs` (the whole stream, read incrementally).
pub async fn count_task_logs(http: &reqwest::Client, base: &str, token: &str, task_id: &str) -> Result<u64> {
    let mut resp = http
        .get(format!("{base}/api/v1/tasks/{task_id}/logs"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(600))
        .send()
        .await?
        .error_for_status()?;
    let mut lines = 0u64;
    while let Some(chunk) = resp.chunk().await? {
        lines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
    }
    Ok(lines)
}
