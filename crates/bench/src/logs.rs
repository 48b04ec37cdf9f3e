//! Log ingestion, by the two paths task output reaches the master:
//! 1. the agent websocket: the fake agent sends `TaskLogs` batches back to back; the master
//!    stores them in arrival order (off the socket loop, with back-pressure when its queue is
//!    full), so the time until the last batch is readable (`GET /api/v1/tasks/{id}/logs` tail)
//!    over the bytes sent is the stored rate;
//! 2. `POST /api/v1/task/logs` with the task's allocation token, from several closed-loop clients
//!    (as upstream's log shipper inside a task).
//!
//! Each path logs to its own trial; afterwards the stored lines are counted and compared.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::api;
use crate::fake_agent::{self, FakeAgent};
use crate::load::{self, EndpointStats};
use crate::metrics::ALLOCATION_TOKEN_HEADER;
use crate::trials::{self, RunningTrial};

/// Lines per batch (the agent's and the shipper's batches).
pub const BATCH_LINES: usize = 1000;

/// A log line of 100 bytes with its newline, like a training loop's progress line.
fn line_text(marker: &str) -> String {
    let mut text = format!("{marker} INFO: [rank=0] step 1234 loss=0.0123 accuracy=0.9876 lr=0.001 throughput=1234.5 samples/s ");
    text.truncate(99);
    while text.len() < 99 {
        text.push('.');
    }
    text
}

pub struct PathResult {
    pub lines: u64,
    /// Bytes of log text stored (each line with its newline).
    pub text_bytes: u64,
    /// Bytes of the messages on the wire (JSON).
    pub wire_bytes: u64,
    pub elapsed: Duration,
    /// Lines the master lists for the task afterwards.
    pub stored_lines: u64,
    pub http: Option<EndpointStats>,
}

impl PathResult {
    pub fn mb_per_sec(&self, bytes: u64) -> f64 {
        bytes as f64 / 1e6 / self.elapsed.as_secs_f64()
    }
}

pub struct LogsReport {
    pub websocket: PathResult,
    pub rest: PathResult,
    pub rest_clients: usize,
}

pub async fn run(http: &reqwest::Client, base: &str, token: &str, seconds: Duration, rest_clients: usize) -> Result<LogsReport> {
    let (mut agent, trials) = trials::start_trials(http, base, token, 2).await?;
    let websocket = over_websocket(http, base, token, &mut agent, &trials[0], seconds).await?;
    let rest = over_rest(http, base, token, &trials[1], seconds, rest_clients).await?;
    Ok(LogsReport { websocket, rest, rest_clients })
}

async fn over_websocket(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    agent: &mut FakeAgent,
    trial: &RunningTrial,
    seconds: Duration,
) -> Result<PathResult> {
    let batch = serde_json::to_string(&fake_agent::log_batch(&trial.start, BATCH_LINES, &line_text("ws")))?;
    let marker = format!("end-of-benchmark-{}", trial.trial_id);
    let last = serde_json::to_string(&fake_agent::log_batch(&trial.start, BATCH_LINES, &line_text(&marker)))?;

    let started = Instant::now();
    let mut batches = 0u64;
    let mut wire_bytes = 0u64;
    while started.elapsed() < seconds {
        wire_bytes += batch.len() as u64;
        agent.send_text(batch.clone()).await?;
        batches += 1;
    }
    wire_bytes += last.len() as u64;
    agent.send_text(last).await?;
    batches += 1;
    // Everything is sent; the master may still be storing what the socket buffers hold.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(tail) = tail_line(http, base, token, &trial.start.task_id).await?
            && tail.contains(&marker)
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("the last log batch was not stored within 300 s of being sent");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    let lines = batches * BATCH_LINES as u64;
    let stored_lines = api::count_task_logs(http, base, token, &trial.start.task_id).await?;
    Ok(PathResult { lines, text_bytes: lines * 100, wire_bytes, elapsed, stored_lines, http: None })
}

/// The `log` of the task's newest line, if any.
async fn tail_line(http: &reqwest::Client, base: &str, token: &str, task_id: &str) -> Result<Option<String>> {
    let url = format!("{base}/api/v1/tasks/{task_id}/logs?limit=1&orderBy=ORDER_BY_DESC");
    let text = http.get(&url).bearer_auth(token).send().await?.error_for_status()?.text().await?;
    let Some(first) = text.lines().next() else { return Ok(None) };
    let line: Value = serde_json::from_str(first).context("log stream line is not JSON")?;
    Ok(line.pointer("/result/log").and_then(Value::as_str).map(str::to_owned))
}

async fn over_rest(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    trial: &RunningTrial,
    seconds: Duration,
    clients: usize,
) -> Result<PathResult> {
    let s = &trial.start;
    let timestamp = chrono::Utc::now().to_rfc3339();
    let line = json!({
        "task_id": s.task_id, "allocation_id": s.allocation_id, "agent_id": "bench-agent", "container_id": s.container_id,
        "rank_id": 0, "timestamp": timestamp, "level": "LOG_LEVEL_INFO", "log": format!("{}\n", line_text("rest")),
        "source": "task", "stdtype": "stdout",
    });
    // Leaked once so every request borrows it without a copy.
    let body: &'static [u8] = serde_json::to_vec(&json!({ "logs": vec![line; BATCH_LINES] }))?.leak();
    let wire_per_request = body.len() as u64;
    let (url, auth) = (format!("{base}/api/v1/task/logs"), format!("Bearer {}", trial.token));
    let make = move |http: &reqwest::Client, _client: usize, _seq: u64| {
        http.post(&url).header(ALLOCATION_TOKEN_HEADER, &auth).header("Content-Type", "application/json").body(body)
    };
    let stats = load::closed_loop(http, base, clients, Duration::ZERO, seconds, make).await?;
    if stats.ok == 0 {
        bail!("no log post succeeded: {}", stats.first_error.as_deref().unwrap_or("no error recorded"));
    }
    let lines = stats.ok * BATCH_LINES as u64;
    let stored_lines = api::count_task_logs(http, base, token, &s.task_id).await?;
    Ok(PathResult {
        lines,
        text_bytes: lines * 100,
        wire_bytes: stats.ok * wire_per_request,
        elapsed: stats.elapsed,
        stored_lines,
        http: Some(stats),
    })
}

impl LogsReport {
    pub fn print(&self) {
        println!("### Log ingestion ({BATCH_LINES} lines of 100 bytes per batch)\n");
        println!("| Path | Lines | Log MB/s | Wire MB/s | Lines/s | Stored lines | Target |");
        println!("|---|---:|---:|---:|---:|---:|---|");
        let row = |name: String, r: &PathResult| {
            println!(
                "| {name} | {} | {:.1} | {:.1} | {:.0} | {} | ≥ 100 MB/s |",
                r.lines,
                r.mb_per_sec(r.text_bytes),
                r.mb_per_sec(r.wire_bytes),
                r.lines as f64 / r.elapsed.as_secs_f64(),
                r.stored_lines
            );
        };
        row("agent websocket `TaskLogs` (1 agent)".to_owned(), &self.websocket);
        row(format!("`POST /api/v1/task/logs` ({} clients)", self.rest_clients), &self.rest);
        if let Some(s) = &self.rest.http {
            println!(
                "\n`POST /api/v1/task/logs`: {} requests, {} errors, p50 {:.1} ms, p95 {:.1} ms per {BATCH_LINES}-line batch.",
                s.ok,
                s.errors,
                s.percentile_ms(50.0),
                s.percentile_ms(95.0)
            );
            if let Some(e) = &s.first_error {
                println!("First error: {e}");
            }
        }
        println!("\nLog MB/s counts the log text (100 bytes a line); wire MB/s the JSON messages that carried it.\n");
    }
}
