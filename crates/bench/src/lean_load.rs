//! A lean closed-loop load generator: one HTTP/1.1 connection per client driven directly with
//! hyper's connection API (no pool, no URL parsing, request bodies formatted into reused
//! buffers). The load generator shares the machine's cores with the master; reqwest spends
//! about 20 µs of CPU a request, which on 2 cores is a large share of what is measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::cpu::CpuProbe;
use crate::load::{self, ClientResult, EndpointStats};

/// Builds client `client`'s request number `seq`: (path and query, headers, body).
pub type MakeRequest = dyn Fn(usize, u64) -> (String, Vec<(&'static str, String)>, Bytes) + Send + Sync;

/// Runs `clients` closed-loop clients posting to `host` (`127.0.0.1:port`): `warmup`
/// unmeasured, then `duration` measured. A request succeeds when it answers 2xx and its whole
/// body arrives.
pub async fn post_closed_loop(
    host: &str,
    label: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    probe: Option<&CpuProbe>,
    make: Arc<MakeRequest>,
) -> Result<EndpointStats> {
    let host = host.to_owned();
    let run = move |clients: usize, duration: Duration, seqs: Vec<u64>| {
        let (host, make) = (host.clone(), make.clone());
        async move {
            let deadline = Instant::now() + duration;
            let mut tasks = Vec::with_capacity(clients);
            for (client, seq) in seqs.into_iter().enumerate() {
                let (host, make) = (host.clone(), make.clone());
                tasks.push(tokio::spawn(async move { run_client(&host, client, seq, deadline, make.as_ref()).await }));
            }
            let mut out = Vec::with_capacity(clients);
            for task in tasks {
                out.push(task.await??);
            }
            Ok(out)
        }
    };
    load::measure(label, clients, warmup, duration, probe, run).await
}

async fn run_client(host: &str, client: usize, mut seq: u64, deadline: Instant, make: &MakeRequest) -> Result<ClientResult> {
    let stream = TcpStream::connect(host).await.with_context(|| format!("connecting to {host}"))?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    let driver = tokio::spawn(connection);
    let mut result = ClientResult::new(seq);
    while Instant::now() < deadline {
        let (path, headers, body) = make(client, seq);
        seq += 1;
        let mut request = Request::post(path).header("Host", host).header("Content-Type", "application/json");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(body))?;
        let sent = Instant::now();
        let outcome = match sender.send_request(request).await {
            Ok(response) => {
                let status = response.status();
                match response.into_body().collect().await {
                    Ok(_) if status.is_success() => Ok(()),
                    Ok(body) => {
                        let body = body.to_bytes();
                        Err(format!("{status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])))
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let failed = outcome.is_err();
        result.record(sent, outcome);
        if failed && sender.ready().await.is_err() {
            break;
        }
    }
    result.next_seq = seq;
    drop(sender);
    driver.abort();
    Ok(result)
}
