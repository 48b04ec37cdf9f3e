//! `GET /api/v1/trials/{trialId}/logs`, `GET /api/v1/tasks/{taskId}/logs` and their
//! `…/logs/fields`: newline-delimited JSON streams of log lines and of the values filters take.

use axum::extract::{Path, State};
use axum::response::Response;
use resolute_api::error::ErrorBody;
use resolute_api::logs::{LogLevel, LogsFieldsQuery, LogsFieldsResponse, LogsQuery, TaskLogsResponse, TrialLogsResponse};
use resolute_store::{LogFields, LogFilter, LogRecord};
use tokio::sync::mpsc;

use super::experiments::{direction, parse_id};
use super::extract::QueryParams;
use super::ndjson;
use crate::error::{ApiError, ApiResult};
use crate::services::{LogStreamRequest, LogSubject, Principal};
use crate::state::AppState;

#[utoipa::path(get, path = "/api/v1/trials/{trialId}/logs", tag = "Trials", params(("trialId" = i32, Path), LogsQuery),
    responses((status = 200, description = "newline-delimited {\"result\": TrialLogsResponse}", body = TrialLogsResponse),
        (status = 404, body = ErrorBody), (status = 501, description = "regular-expression search", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trial_logs(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<LogsQuery>,
) -> ApiResult<Response> {
    let request = stream_request(q)?;
    let subject = state.task_logs.trial_subject(parse_id(&id, "trialId")?).await?;
    let trial_id = subject.trial_id.unwrap_or_default();
    let batches = state.task_logs.stream(subject, request)?;
    Ok(ndjson::stream(batches, move |line| trial_line(trial_id, line)))
}

#[utoipa::path(get, path = "/api/v1/tasks/{taskId}/logs", tag = "Tasks", params(("taskId" = String, Path), LogsQuery),
    responses((status = 200, description = "newline-delimited {\"result\": TaskLogsResponse}", body = TaskLogsResponse),
        (status = 404, body = ErrorBody), (status = 501, description = "regular-expression search", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn task_logs(
    State(state): State<AppState>,
    _caller: Principal,
    Path(task_id): Path<String>,
    QueryParams(q): QueryParams<LogsQuery>,
) -> ApiResult<Response> {
    let request = stream_request(q)?;
    let subject = state.task_logs.task_subject(&task_id).await?;
    let batches = state.task_logs.stream(subject, request)?;
    Ok(ndjson::stream(batches, task_line))
}

#[utoipa::path(get, path = "/api/v1/trials/{trialId}/logs/fields", tag = "Trials", params(("trialId" = i32, Path), LogsFieldsQuery),
    responses((status = 200, description = "newline-delimited {\"result\": fields}", body = LogsFieldsResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn trial_logs_fields(
    State(state): State<AppState>,
    _caller: Principal,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<LogsFieldsQuery>,
) -> ApiResult<Response> {
    let subject = state.task_logs.trial_subject(parse_id(&id, "trialId")?).await?;
    Ok(fields_stream(state, subject, q.follow.unwrap_or(false), false))
}

#[utoipa::path(get, path = "/api/v1/tasks/{taskId}/logs/fields", tag = "Tasks", params(("taskId" = String, Path), LogsFieldsQuery),
    responses((status = 200, description = "newline-delimited {\"result\": fields}", body = LogsFieldsResponse), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn task_logs_fields(
    State(state): State<AppState>,
    _caller: Principal,
    Path(task_id): Path<String>,
    QueryParams(q): QueryParams<LogsFieldsQuery>,
) -> ApiResult<Response> {
    let subject = state.task_logs.task_subject(&task_id).await?;
    Ok(fields_stream(state, subject, q.follow.unwrap_or(false), true))
}

fn stream_request(q: LogsQuery) -> ApiResult<LogStreamRequest> {
    let search_text = q.search_text.filter(|t| !t.is_empty());
    if q.enable_regex == Some(true) && search_text.is_some() {
        return Err(ApiError::unimplemented("enableRegex: regular-expression log search is not supported yet; search for a substring"));
    }
    let limit = q.limit.map(i64::from).filter(|l| *l != 0);
    let filter = LogFilter {
        after_id: None,
        order: direction(q.order_by),
        limit: None,
        levels: q.levels.iter().map(|l| l.name().to_owned()).collect(),
        stdtypes: q.stdtypes,
        sources: q.sources,
        rank_ids: q.rank_ids,
        agent_ids: q.agent_ids,
        container_ids: q.container_ids,
        allocation_ids: q.allocation_ids,
        timestamp_before: q.timestamp_before,
        timestamp_after: q.timestamp_after,
        search_text,
    };
    Ok(LogStreamRequest { filter, limit, follow: q.follow.unwrap_or(false) })
}

/// Stored levels are wire names (`LOG_LEVEL_INFO`); bare names (`INFO`) are read too.
fn level(stored: Option<&str>) -> LogLevel {
    stored
        .and_then(|l| LogLevel::from_name(l).or_else(|| LogLevel::from_name(&format!("LOG_LEVEL_{}", l.to_ascii_uppercase()))))
        .unwrap_or(LogLevel::Info)
}

/// The flat line upstream's CLI prints: `[timestamp] container [rank=N] || LEVEL: log`, the
/// container id cut (or padded) to 8 characters so lines align.
fn flat_message(line: &LogRecord) -> String {
    let mut parts = vec![format!("[{}]", line.timestamp.format("%Y-%m-%dT%H:%M:%S%.6fZ"))];
    match line.container_id.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => parts.push(c.chars().take(8).collect()),
        None => parts.push(" ".repeat(8)),
    }
    if let Some(rank) = line.rank_id {
        parts.push(format!("[rank={rank}]"));
    }
    parts.push("||".to_owned());
    if line.level.is_some() {
        let name = level(line.level.as_deref()).name();
        parts.push(format!("{}:", name.trim_start_matches("LOG_LEVEL_")));
    }
    parts.push(line.log.clone());
    parts.join(" ")
}

fn trial_line(trial_id: i32, line: LogRecord) -> TrialLogsResponse {
    TrialLogsResponse {
        id: line.id.to_string(),
        timestamp: line.timestamp,
        message: flat_message(&line),
        level: level(line.level.as_deref()),
        trial_id,
        agent_id: line.agent_id,
        container_id: line.container_id,
        rank_id: line.rank_id,
        log: Some(line.log),
        source: line.source,
        stdtype: line.stdtype,
    }
}

fn task_line(line: LogRecord) -> TaskLogsResponse {
    TaskLogsResponse {
        id: line.id.to_string(),
        timestamp: line.timestamp,
        message: flat_message(&line),
        level: level(line.level.as_deref()),
        task_id: line.task_id,
        log: line.log,
        allocation_id: line.allocation_id,
        agent_id: line.agent_id,
        container_id: line.container_id,
        rank_id: line.rank_id,
        source: line.source,
        stdtype: line.stdtype,
    }
}

/// One `fields` result now and, when following, another each time the values change, until the
/// task ends.
fn fields_stream(state: AppState, subject: LogSubject, follow: bool, with_allocations: bool) -> Response {
    let (tx, rx) = mpsc::channel::<ApiResult<Vec<LogsFieldsResponse>>>(1);
    tokio::spawn(async move {
        let mut last: Option<LogsFieldsResponse> = None;
        loop {
            let ended = follow && matches!(state.task_logs.has_ended(&subject).await, Ok(true));
            let fields = match state.task_logs.fields(&subject.task_id).await {
                Ok(fields) => fields_response(fields, with_allocations),
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    return;
                }
            };
            if last.as_ref() != Some(&fields) {
                if tx.send(Ok(vec![fields.clone()])).await.is_err() {
                    return;
                }
                last = Some(fields);
            }
            if !follow || ended {
                return;
            }
            tokio::select! {
                _ = tx.closed() => return,
                _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            }
        }
    });
    ndjson::stream(rx, |f| f)
}

fn fields_response(fields: LogFields, with_allocations: bool) -> LogsFieldsResponse {
    LogsFieldsResponse {
        allocation_ids: with_allocations.then_some(fields.allocation_ids),
        agent_ids: fields.agent_ids,
        container_ids: fields.container_ids,
        rank_ids: fields.rank_ids,
        sources: fields.sources,
        stdtypes: fields.stdtypes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_message_matches_upstream_layout() {
        let line = LogRecord {
            id: 1,
            task_id: "t".into(),
            allocation_id: None,
            agent_id: None,
            container_id: Some("0123456789abcdef".into()),
            rank_id: Some(0),
            timestamp: chrono::DateTime::parse_from_rfc3339("2025-03-19T10:01:02.5Z").unwrap().into(),
            level: Some("LOG_LEVEL_INFO".into()),
            log: "epoch 1\n".into(),
            source: None,
            stdtype: None,
        };
        assert_eq!(flat_message(&line), "[2025-03-19T10:01:02.500000Z] 01234567 [rank=0] || INFO: epoch 1\n");
        let bare = LogRecord { container_id: None, rank_id: None, level: None, ..line };
        assert_eq!(flat_message(&bare), "[2025-03-19T10:01:02.500000Z]          || epoch 1\n");
        assert_eq!(level(Some("WARNING")), LogLevel::Warning);
    }
}
