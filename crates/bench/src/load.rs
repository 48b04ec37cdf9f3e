//! Closed-loop HTTP load: N clients, each sending its next request as soon as the last answered.

use std::time::{Duration, Instant};

use anyhow::Result;

/// Latency and throughput of one endpoint under load.
pub struct EndpointStats {
    pub path: String,
    pub ok: u64,
    pub errors: u64,
    pub elapsed: Duration,
    /// Sorted latencies of the successful requests, in microseconds.
    latencies_us: Vec<u32>,
}

impl EndpointStats {
    pub fn requests_per_sec(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    /// Nearest-rank percentile, in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.latencies_us.len() as f64).ceil() as usize;
        self.latencies_us[rank.clamp(1, self.latencies_us.len()) - 1] as f64 / 1000.0
    }

    pub fn max_ms(&self) -> f64 {
        self.latencies_us.last().map_or(f64::NAN, |&us| us as f64 / 1000.0)
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
    run_clients(http, &url, &auth, clients, warmup).await?;

    let started = Instant::now();
    let per_client = run_clients(http, &url, &auth, clients, duration).await?;
    let elapsed = started.elapsed();

    let mut latencies_us = Vec::new();
    let mut errors = 0;
    for (lat, err) in per_client {
        latencies_us.extend(lat);
        errors += err;
    }
    latencies_us.sort_unstable();
    Ok(EndpointStats { path: path.to_owned(), ok: latencies_us.len() as u64, errors, elapsed, latencies_us })
}

async fn run_clients(http: &reqwest::Client, url: &str, auth: &str, clients: usize, duration: Duration) -> Result<Vec<(Vec<u32>, u64)>> {
    let deadline = Instant::now() + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (http, url, auth) = (http.clone(), url.to_owned(), auth.to_owned());
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(64 * 1024);
                let mut errors = 0u64;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let ok = match http.get(&url).header("Authorization", &auth).send().await {
                        // Read the whole body so the connection is reused.
                        Ok(resp) => resp.status().is_success() && resp.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if ok {
                        latencies.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
                    } else {
                        errors += 1;
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut out = Vec::with_capacity(clients);
    for task in tasks {
        out.push(task.await?);
    }
    Ok(out)
}
