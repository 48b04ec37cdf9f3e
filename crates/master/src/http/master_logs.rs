//! `GET /api/v1/master/logs` (`det master logs [-f] [--tail N]`): the master's recent log lines
//! from `crate::master_logs`, as newline-delimited `{"result": {"id", "logEntry"}}`; with
//! `follow` the stream stays open and sends new lines as they are logged.

use axum::response::Response;
use resolute_api::error::ErrorBody;
use resolute_api::logs::LogLevel;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::Level;

use super::extract::QueryParams;
use super::ndjson;
use crate::error::{ApiError, ApiResult};
use crate::master_logs::{MASTER_LOGS, MasterLogLine};
use crate::services::Principal;

/// Lines per streamed batch.
const BATCH: usize = 500;

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MasterLogsQuery {
    /// Keep the stream open and send new lines as they come.
    #[serde(default)]
    follow: Option<bool>,
    /// Lines to skip from the oldest kept; negative: start that many lines before the newest.
    #[serde(default)]
    offset: Option<i32>,
    /// Lines at most (0 or absent: no limit).
    #[serde(default)]
    limit: Option<i32>,
}

/// One line of the stream, as the document describes it.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct MasterLogsLine {
    /// `{"id": int, "logEntry": {"id", "message", "timestamp", "level"}}`.
    #[schema(value_type = Object)]
    result: Value,
}

#[utoipa::path(get, path = "/api/v1/master/logs", tag = "Cluster", params(MasterLogsQuery),
    responses((status = 200, description = "newline-delimited `{\"result\": v1MasterLogsResponse}`", body = MasterLogsLine),
        (status = 400, description = "a negative limit", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn master_logs(_caller: Principal, QueryParams(q): QueryParams<MasterLogsQuery>) -> ApiResult<Response> {
    let mut remaining = match q.limit {
        None | Some(0) => usize::MAX,
        Some(n) if n < 0 => return Err(ApiError::invalid(format!("limit must not be negative, got {n}"))),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let ring = &*MASTER_LOGS;
    // Subscribe before reading, so a line logged in between is not missed by a follower.
    let mut changes = ring.subscribe();
    let mut next = match q.offset.unwrap_or(0) {
        n if n < 0 => ring.next_id().saturating_sub(u64::from(n.unsigned_abs())).max(ring.first_id()),
        n => ring.first_id() + u64::from(n.unsigned_abs()),
    };
    let follow = q.follow.unwrap_or(false);
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        loop {
            while remaining > 0 {
                let lines = ring.since(next, BATCH.min(remaining));
                let Some(last) = lines.last() else { break };
                next = last.id + 1;
                remaining -= lines.len();
                if tx.send(Ok(lines)).await.is_err() {
                    return;
                }
            }
            if !follow || remaining == 0 {
                return;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tx.closed() => return,
            }
        }
    });
    Ok(ndjson::stream(rx, |line: MasterLogLine| wire(&line)))
}

fn wire(line: &MasterLogLine) -> Value {
    let level = match line.level {
        Level::TRACE => LogLevel::Trace,
        Level::DEBUG => LogLevel::Debug,
        Level::INFO => LogLevel::Info,
        Level::WARN => LogLevel::Warning,
        Level::ERROR => LogLevel::Error,
    };
    let id = i32::try_from(line.id).unwrap_or(i32::MAX);
    json!({"id": id, "logEntry": {
        "id": id,
        "message": line.message,
        "timestamp": line.time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "level": level,
    }})
}
