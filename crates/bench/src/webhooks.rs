//! Webhook delivery latency: a receiver on loopback, a webhook on `STATE_PAUSED`, and N
//! experiments paused one after the other. Measured per event: the `POST …/pause` request sent →
//! the receiver holding the webhook's request (the state change is recorded, with its event,
//! inside that request), and the pause's answer → the delivery.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api;
use crate::load::Latencies;

pub struct WebhookReport {
    pub events: usize,
    /// Pause request sent → webhook request received.
    pub from_request: Latencies,
    /// Pause answered → webhook request received (negative samples count as 0).
    pub from_answer: Latencies,
    pub pause_call: Latencies,
}

impl WebhookReport {
    pub fn print(&self) {
        println!("### Webhook delivery latency ({} events, one at a time)\n", self.events);
        println!("| measured | p50 ms | p95 ms | max ms |");
        println!("|---|---:|---:|---:|");
        for (name, l) in [
            ("state change request sent → receiver has the POST", &self.from_request),
            ("state change answered → receiver has the POST", &self.from_answer),
            ("`POST /experiments/{id}/pause` itself", &self.pause_call),
        ] {
            println!("| {name} | {:.2} | {:.2} | {:.2} |", l.percentile_ms(50.0), l.percentile_ms(95.0), l.max_ms());
        }
        println!();
    }
}

async fn receiver() -> Result<(String, mpsc::UnboundedReceiver<(Instant, Value)>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let tx = tx.clone();
        async move {
            let at = Instant::now();
            let _ = tx.send((at, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, rx))
}

async fn post(http: &reqwest::Client, url: &str, token: &str, body: &Value) -> Result<()> {
    let resp = http.post(url).bearer_auth(token).json(body).send().await?;
    let status = resp.status();
    if !status.is_success() {
        bail!("POST {url}: {status} {}", resp.text().await.unwrap_or_default());
    }
    Ok(())
}

pub async fn run(http: &reqwest::Client, base: &str, token: &str, events: usize) -> Result<WebhookReport> {
    let (url, mut got) = receiver().await?;
    let hook = json!({"name": "bench", "url": url, "webhookType": "WEBHOOK_TYPE_DEFAULT", "mode": "WEBHOOK_MODE_WORKSPACE",
        "triggers": [{"triggerType": "TRIGGER_TYPE_EXPERIMENT_STATE_CHANGE", "condition": {"state": "PAUSED"}}]});
    post(http, &format!("{base}/api/v1/webhooks"), token, &hook).await.context("creating the webhook")?;
    // No agent: the experiments wait for resources, so pausing them is a pure state change.
    let body = api::create_body(api::SINGLE_CONFIG, true);
    let mut ids = Vec::with_capacity(events);
    for _ in 0..events {
        ids.push(api::create_experiment(http, base, token, &body).await?);
    }
    let (mut from_request, mut from_answer, mut call) = (Vec::new(), Vec::new(), Vec::new());
    for id in ids {
        let sent = Instant::now();
        post(http, &format!("{base}/api/v1/experiments/{id}/pause"), token, &json!({})).await?;
        let answered = Instant::now();
        let (at, payload) = tokio::time::timeout(Duration::from_secs(30), got.recv())
            .await
            .with_context(|| format!("no webhook request within 30 s of pausing experiment {id}"))?
            .context("the receiver stopped")?;
        let seen = payload.pointer("/event_data/experiment/id").and_then(Value::as_i64);
        if seen != Some(id) {
            bail!("expected the event of experiment {id}, got {payload}");
        }
        from_request.push(at.duration_since(sent));
        from_answer.push(at.saturating_duration_since(answered));
        call.push(answered.duration_since(sent));
    }
    Ok(WebhookReport {
        events,
        from_request: Latencies::from_durations(&from_request),
        from_answer: Latencies::from_durations(&from_answer),
        pause_call: Latencies::from_durations(&call),
    })
}
