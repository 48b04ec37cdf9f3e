//! `--mode proxy`: what the master's `/proxy/{task}/` reverse proxy adds over reaching a task
//! service directly.
//!
//! Task services are registered by the cluster loop, in process, so this mode runs the master in
//! process too (`resolute_master::Master`, SQLite in a temporary directory, its own tokio runtime
//! on its own threads, as a separate process would have), registers a local axum service as the
//! target of task `bench`, logs in as `admin` and measures, direct and through the proxy:
//! (a) sequential small `GET`s on one keep-alive connection: p50/p99 and what the proxy adds;
//! (b) one large streamed response: MB/s (10^6 bytes), best of three.

use std::convert::Infallible;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::routing::get;
use resolute_master::services::{ProxyKind, ProxyTarget};
use resolute_master::{Master, MasterConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::load::Latencies;

const SMALL_BODY: &str = "{\"status\":\"ok\",\"kernel\":\"python3\",\"execution_state\":\"idle\"}";
const CHUNK_BYTES: usize = 64 * 1024;
const LARGE_RUNS: usize = 3;

pub struct ProxyReport {
    requests: usize,
    large_mb: u64,
    direct: Latencies,
    proxied: Latencies,
    direct_mb_per_sec: f64,
    proxied_mb_per_sec: f64,
}

/// Runs the benchmark: `requests` small GETs each way (after a tenth as many unmeasured), and a
/// `large_mb` MB response each way.
pub async fn run(requests: usize, large_mb: u64) -> Result<ProxyReport> {
    let dir = tempfile::tempdir()?;
    let (base, proxies, stop) = start_master(dir.path().to_owned())?;
    let service = start_service(large_mb).await?;
    proxies.register(
        "bench",
        ProxyTarget { address: service.clone(), owner_id: 1, kind: ProxyKind::Http, task_type: "NOTEBOOK".into(), unauthenticated: false },
    );
    // One connection per client, reused: the latency is the request's, not a handshake's.
    let http = reqwest::Client::builder().pool_max_idle_per_host(1).tcp_nodelay(true).timeout(Duration::from_secs(300)).build()?;
    let token = crate::api::login(&http, &base).await?;
    let direct_url = format!("http://{service}/proxy/bench/small");
    let proxied_url = format!("{base}/proxy/bench/small");

    eprintln!("proxy: {requests} small GETs each way, interleaved in blocks of 100");
    let warmup = (requests / 10).max(10);
    small_gets(&http, &direct_url, &token, warmup).await?;
    small_gets(&http, &proxied_url, &token, warmup).await?;
    let (mut direct, mut proxied) = (Vec::with_capacity(requests), Vec::with_capacity(requests));
    let mut left = requests;
    while left > 0 {
        let block = left.min(100);
        direct.extend(small_gets(&http, &direct_url, &token, block).await?);
        proxied.extend(small_gets(&http, &proxied_url, &token, block).await?);
        left -= block;
    }

    eprintln!("proxy: {large_mb} MB response each way, best of {LARGE_RUNS}");
    let large_bytes = large_mb * 1_000_000 / CHUNK_BYTES as u64 * CHUNK_BYTES as u64;
    let mut direct_mb_per_sec: f64 = 0.0;
    let mut proxied_mb_per_sec: f64 = 0.0;
    for _ in 0..LARGE_RUNS {
        direct_mb_per_sec =
            direct_mb_per_sec.max(large_get(&http, &format!("http://{service}/proxy/bench/large"), &token, large_bytes).await?);
        proxied_mb_per_sec = proxied_mb_per_sec.max(large_get(&http, &format!("{base}/proxy/bench/large"), &token, large_bytes).await?);
    }
    let _ = stop.send(());
    Ok(ProxyReport {
        requests,
        large_mb,
        direct: Latencies::from_durations(&direct),
        proxied: Latencies::from_durations(&proxied),
        direct_mb_per_sec,
        proxied_mb_per_sec,
    })
}

/// Starts the master on its own runtime; returns its base URL, registry and a stop switch.
fn start_master(data_dir: std::path::PathBuf) -> Result<(String, resolute_master::services::ProxyRegistry, oneshot::Sender<()>)> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = ready_tx.send(Err(anyhow::Error::from(e)));
                return;
            }
        };
        runtime.block_on(async move {
            let config = MasterConfig { port: 0, data_dir: Some(data_dir), ..Default::default() };
            let master = match Master::start(config).await {
                Ok(master) => master,
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow::Error::from(e)));
                    return;
                }
            };
            let base = format!("http://127.0.0.1:{}", master.local_addr().port());
            let _ = ready_tx.send(Ok((base, master.proxies())));
            let _ = master
                .serve(async move {
                    let _ = stop_rx.await;
                })
                .await;
        });
    });
    let (base, proxies) = ready_rx.recv().context("the master thread ended before starting")??;
    Ok((base, proxies, stop_tx))
}

/// The task service: a short JSON answer, and `large_mb` MB streamed in 64 KiB chunks.
async fn start_service(large_mb: u64) -> Result<String> {
    let chunks = (large_mb * 1_000_000 / CHUNK_BYTES as u64) as usize;
    let chunk = Bytes::from(vec![b'x'; CHUNK_BYTES]);
    let app = Router::new().route("/proxy/bench/small", get(|| async { ([("content-type", "application/json")], SMALL_BODY) })).route(
        "/proxy/bench/large",
        get(move || {
            let chunk = chunk.clone();
            async move { Body::from_stream(futures_util::stream::iter((0..chunks).map(move |_| Ok::<_, Infallible>(chunk.clone())))) }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("proxy: the bench service stopped: {e}");
        }
    });
    Ok(address)
}

async fn small_gets(http: &reqwest::Client, url: &str, token: &str, count: usize) -> Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        let resp = http.get(url).bearer_auth(token).send().await?;
        let status = resp.status();
        let body = resp.bytes().await?;
        samples.push(sent.elapsed());
        if !status.is_success() || body.len() != SMALL_BODY.len() {
            bail!("GET {url}: {status}, {} bytes", body.len());
        }
    }
    Ok(samples)
}

/// Reads the whole response, returning MB/s.
async fn large_get(http: &reqwest::Client, url: &str, token: &str, expected: u64) -> Result<f64> {
    let started = Instant::now();
    let mut resp = http.get(url).bearer_auth(token).send().await?;
    if !resp.status().is_success() {
        bail!("GET {url}: {}", resp.status());
    }
    let mut received = 0u64;
    while let Some(chunk) = resp.chunk().await? {
        received += chunk.len() as u64;
    }
    if received != expected {
        bail!("GET {url}: {received} bytes, expected {expected}");
    }
    Ok(received as f64 / 1e6 / started.elapsed().as_secs_f64())
}

impl ProxyReport {
    pub fn print(&self) {
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!("## Resolute master benchmark: task-service proxy\n");
        println!(
            "{cores} CPU cores shared by master, service and client; {} sequential small GETs each way on one keep-alive connection; {} MB response, best of {LARGE_RUNS}.\n",
            self.requests, self.large_mb
        );
        println!("| Measure | Direct | Through `/proxy/` | Added | Target |");
        println!("|---|---:|---:|---:|---|");
        for (label, p, target) in [("p50", 50.0, "≤ 1 ms added"), ("p99", 99.0, "")] {
            let (direct, proxied) = (self.direct.percentile_ms(p), self.proxied.percentile_ms(p));
            println!("| Small GET {label} | {direct:.3} ms | {proxied:.3} ms | {:.3} ms | {target} |", proxied - direct);
        }
        println!(
            "| {} MB response | {:.0} MB/s | {:.0} MB/s | | ≥ 300 MB/s |",
            self.large_mb, self.direct_mb_per_sec, self.proxied_mb_per_sec
        );
    }
}
