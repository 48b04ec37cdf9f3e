//! Task and trial log streams (`GET /api/v1/trials/{id}/logs`, `GET /api/v1/tasks/{id}/logs` and
//! their `…/logs/fields`). Streams are newline-delimited JSON, one [`StreamLine`] per line, as
//! grpc-gateway writes server-streaming RPCs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `v1LogLevel`.
    pub enum LogLevel {
        Unspecified = "LOG_LEVEL_UNSPECIFIED",
        Trace = "LOG_LEVEL_TRACE",
        Debug = "LOG_LEVEL_DEBUG",
        Info = "LOG_LEVEL_INFO",
        Warning = "LOG_LEVEL_WARNING",
        Error = "LOG_LEVEL_ERROR",
        Critical = "LOG_LEVEL_CRITICAL",
    }
}

/// One line of a stream: `{"result": …}` or, when the stream fails midway, `{"error": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamLine<T> {
    Result(T),
    Error(StreamError),
}

/// `runtimeStreamError`: what a stream reports in place of a result when it fails midway.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamError {
    pub grpc_code: i32,
    pub http_code: i32,
    pub message: String,
    pub http_status: String,
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub details: Vec<serde_json::Value>,
}

/// Query parameters shared by the trial and task log streams.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    /// 0 or absent: no limit.
    #[serde(default)]
    pub limit: Option<i32>,
    /// Keep streaming new lines until the task ends.
    #[serde(default)]
    pub follow: Option<bool>,
    /// `ORDER_BY_DESC` with a limit is a tail.
    #[serde(default, alias = "order_by")]
    pub order_by: Option<OrderBy>,
    #[serde(default, alias = "agent_ids")]
    pub agent_ids: Vec<String>,
    #[serde(default, alias = "container_ids")]
    pub container_ids: Vec<String>,
    #[serde(default, alias = "rank_ids")]
    pub rank_ids: Vec<i32>,
    #[serde(default)]
    pub levels: Vec<LogLevel>,
    #[serde(default)]
    pub stdtypes: Vec<String>,
    #[serde(default)]
    pub sources: Vec<String>,
    /// Task logs only: limit to these allocations.
    #[serde(default, alias = "allocation_ids")]
    pub allocation_ids: Vec<String>,
    #[serde(default, alias = "timestamp_before")]
    pub timestamp_before: Option<DateTime<Utc>>,
    #[serde(default, alias = "timestamp_after")]
    pub timestamp_after: Option<DateTime<Utc>>,
    /// Case-sensitive substring.
    #[serde(default, alias = "search_text")]
    pub search_text: Option<String>,
    /// Regular-expression search is not supported; `true` with a search text is a 501.
    #[serde(default, alias = "enable_regex")]
    pub enable_regex: Option<bool>,
}

/// `v1TrialLogsResponse`: one line of a trial's logs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrialLogsResponse {
    /// The line's id (int64 as a string): increases with arrival.
    pub id: String,
    pub timestamp: DateTime<Utc>,
    /// The line as the CLI prints it: `[timestamp] container [rank=N] || LEVEL: log`.
    pub message: String,
    pub level: LogLevel,
    pub trial_id: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdtype: Option<String>,
}

/// `v1TaskLogsResponse`: one line of a task's logs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskLogsResponse {
    pub id: String,
    pub timestamp: DateTime<Utc>,
    pub message: String,
    pub level: LogLevel,
    pub task_id: String,
    pub log: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_id: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdtype: Option<String>,
}

/// Query of `…/logs/fields`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsFieldsQuery {
    /// Keep streaming updated values until the task ends.
    #[serde(default)]
    pub follow: Option<bool>,
}

/// `v1TaskLogsFieldsResponse` (and, without `allocationIds`, `v1TrialLogsFieldsResponse`): the
/// distinct values a log filter can take.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogsFieldsResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_ids: Option<Vec<String>>,
    #[serde(default)]
    pub agent_ids: Vec<String>,
    #[serde(default)]
    pub container_ids: Vec<String>,
    #[serde(default)]
    pub rank_ids: Vec<i32>,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub stdtypes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_lines_wrap_results_and_errors() {
        let line: StreamLine<LogsFieldsResponse> = StreamLine::Result(LogsFieldsResponse::default());
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.starts_with(r#"{"result":{"#), "{text}");
        let err: StreamLine<LogsFieldsResponse> = StreamLine::Error(StreamError {
            grpc_code: 13,
            http_code: 500,
            message: "boom".into(),
            http_status: "Internal Server Error".into(),
            details: vec![],
        });
        assert!(serde_json::to_string(&err).unwrap().starts_with(r#"{"error":{"grpcCode":13"#));
    }
}
