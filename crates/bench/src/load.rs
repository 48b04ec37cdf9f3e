//! Closed-loop HTTP load: N clients, each sending its next request as soon as the last answered.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cpu::{CpuProbe, CpuSample};

/// Latency and throughput of one endpoint under load.
pub struct EndpointStats {
    pub path: String,
    pub ok: u64,
    pub errors: u64,
    pub elapsed: Duration,
    /// Sorted latencies of the successful requests, in microseconds.
    latencies: Latencies,
    /// The first error seen, for the report.
    pub first_error: Option<String>,
    /// Successful requests per client, warm-up included (what the server should have stored).
    pub per_client_ok: Vec<u64>,
    /// CPU time each side spent on the measured phase, when a probe was given.
    pub cpu: Option<CpuSample>,
}

impl EndpointStats {
    pub fn requests_per_sec(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    pub fn percentile_ms(&self, p: f64) -> f64 {
        self.latencies.percentile_ms(p)
    }

    pub fn max_ms(&self) -> f64 {
        self.latencies.max_ms()
    }
}

/// A sorted set of latency samples.
pub struct Latencies(Vec<u32>);

impl Latencies {
    pub fn count(&self) -> usize {
        self.0.len()
    }

    pub fn from_durations(samples: &[Duration]) -> Self {
        Self::from_micros(samples.iter().map(|d| d.as_micros().min(u32::MAX as u128) as u32).collect())
    }

    fn from_micros(mut us: Vec<u32>) -> Self {
        us.sort_unstable();
        Latencies(us)
    }

    /// Nearest-rank percentile, in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1] as f64 / 1000.0
    }

    pub fn mean_ms(&self) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.iter().map(|&us| f64::from(us)).sum::<f64>() / self.0.len() as f64 / 1000.0
    }

    pub fn max_ms(&self) -> f64 {
        self.0.last().map_or(f64::NAN, |&us| us as f64 / 1000.0)
    }
}

/// Hammers `GET base+path` with `clients` concurrent clients: `warmup` unmeasured, then `duration`
/// measured.
pub async fn hammer(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    token: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<EndpointStats> {
    let url = format!("{base}{path}");
    let auth = format!("Bearer {token}");
    let make = move |http: &reqwest::Client, _client: usize, _seq: u64| http.get(&url).header("Authorization", &auth);
    closed_loop(http, path, clients, warmup, duration, make).await
}

/// Runs `clients` closed-loop clients; `make(http, client, seq)` builds each request (`seq` counts
/// the requests of that client, warm-up included). A request counts as successful when it answers
/// 2xx and its whole body arrives.
pub async fn closed_loop<F>(
    http: &reqwest::Client,
    label: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    make: F,
) -> Result<EndpointStats>
where
    F: Fn(&reqwest::Client, usize, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let make = Arc::new(make);
    let run = move |clients: usize, duration: Duration, seqs: Vec<u64>| {
        let (http, make) = (http.clone(), make.clone());
        async move { run_clients(&http, clients, duration, &seqs, make).await }
    };
    measure(label, clients, warmup, duration, None, run).await
}

/// The warm-up and measured phases of a closed loop: `run(clients, duration, next_seqs)` runs
/// every client for `duration` and returns what each did. With a `probe`, the processes' CPU
/// time over the measured phase is recorded too.
pub(crate) async fn measure<R, Fut>(
    label: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    probe: Option<&CpuProbe>,
    run: R,
) -> Result<EndpointStats>
where
    R: Fn(usize, Duration, Vec<u64>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<ClientResult>>>,
{
    let mut seqs = vec![0u64; clients];
    let mut per_client_ok = vec![0u64; clients];
    if !warmup.is_zero() {
        let warm = run(clients, warmup, seqs.clone()).await?;
        seqs = warm.iter().map(|c| c.next_seq).collect();
        per_client_ok = warm.iter().map(|c| c.latencies_us.len() as u64).collect();
    }
    let cpu_before = probe.map(CpuProbe::sample);
    let started = Instant::now();
    let per_client = run(clients, duration, seqs).await?;
    let elapsed = started.elapsed();
    let cpu = probe.zip(cpu_before).map(|(probe, before)| probe.sample().since(&before));

    let mut latencies_us = Vec::new();
    let (mut errors, mut first_error) = (0, None);
    for (i, c) in per_client.into_iter().enumerate() {
        per_client_ok[i] += c.latencies_us.len() as u64;
        latencies_us.extend(c.latencies_us);
        errors += c.errors;
        first_error = first_error.or(c.first_error);
    }
    let latencies = Latencies::from_micros(latencies_us);
    Ok(EndpointStats { path: label.to_owned(), ok: latencies.0.len() as u64, errors, elapsed, latencies, first_error, per_client_ok, cpu })
}

/// What one closed-loop client did in a phase.
pub(crate) struct ClientResult {
    pub latencies_us: Vec<u32>,
    pub errors: u64,
    pub first_error: Option<String>,
    pub next_seq: u64,
}

impl ClientResult {
    pub fn new(next_seq: u64) -> Self {
        ClientResult { latencies_us: Vec::with_capacity(64 * 1024), errors: 0, first_error: None, next_seq }
    }

    /// Records one request sent at `sent`.
    pub fn record(&mut self, sent: Instant, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.latencies_us.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32),
            Err(e) => {
                self.errors += 1;
                self.first_error.get_or_insert(e);
            }
        }
    }
}

async fn run_clients<F>(http: &reqwest::Client, clients: usize, duration: Duration, seqs: &[u64], make: Arc<F>) -> Result<Vec<ClientResult>>
where
    F: Fn(&reqwest::Client, usize, u64) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (http, make, mut seq) = (http.clone(), make.clone(), seqs[client]);
            tokio::spawn(async move {
                let mut r = ClientResult::new(seq);
                while Instant::now() < deadline {
                    let request = make(&http, client, seq);
                    seq += 1;
                    let sent = Instant::now();
                    let outcome = match request.send().await {
                        // Read the whole body so the connection is reused.
                        Ok(resp) => {
                            let status = resp.status();
                            match resp.bytes().await {
                                Ok(_) if status.is_success() => Ok(()),
                                Ok(body) => Err(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]))),
                                Err(e) => Err(e.to_string()),
                            }
                        }
                        Err(e) => Err(e.to_string()),
                    };
                    r.record(sent, outcome);
                }
                r.next_seq = seq;
                r
            })
        })
        .collect();
    let mut out = Vec::with_capacity(clients);
    for task in tasks {
        out.push(task.await?);
    }
    Ok(out)
}

/// Prints measured `GET` queries as a markdown table, each row with the `target` it is held to.
pub fn print_query_table(queries: &[EndpointStats], target: &str) {
    println!("| Query | Requests | Errors | Req/s | p50 ms | p95 ms | p99 ms | max ms | Target |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for q in queries {
        println!(
            "| `GET {}` | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {target} |",
            q.path,
            q.ok,
            q.errors,
            q.requests_per_sec(),
            q.percentile_ms(50.0),
            q.percentile_ms(95.0),
            q.percentile_ms(99.0),
            q.max_ms()
        );
    }
    println!();
}
