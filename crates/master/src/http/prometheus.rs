//! Upstream's Prometheus endpoints, `/debug/prom/metrics` and `/prom/det-state-metrics`
//! (unauthenticated, for the scraper), and the middleware that times every matched route. With
//! `observability.enable_prometheus` off (the default) both answer 404 and nothing is timed.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ApiResult};
use crate::prometheus::{Prometheus, render_state};
use crate::state::AppState;

/// The exposition format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

fn enabled(state: &AppState) -> ApiResult<&Prometheus> {
    state.prometheus.as_deref().ok_or_else(|| {
        ApiError::not_found("Prometheus metrics are off; set observability.enable_prometheus: true in master.yaml to serve them")
    })
}

fn exposition(text: Result<String, prometheus::Error>) -> ApiResult<Response> {
    let text = text.map_err(|e| {
        tracing::error!(error = %e, "rendering Prometheus metrics");
        ApiError::internal()
    })?;
    Ok(([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response())
}

pub async fn process_metrics(State(state): State<AppState>) -> ApiResult<Response> {
    exposition(enabled(&state)?.render_process())
}

pub async fn state_metrics(State(state): State<AppState>) -> ApiResult<Response> {
    enabled(&state)?;
    let counts = state.store.state_counts().await?;
    exposition(render_state(&state.cluster.view(), &counts))
}

/// Times the request up to its response headers, labelled by the matched route pattern.
pub async fn record_latency(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(prometheus) = state.prometheus.clone() else {
        return next.run(request).await;
    };
    let method = request.method().as_str().to_owned();
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let started = Instant::now();
    let response = next.run(request).await;
    prometheus.observe_request(&method, &route, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}
