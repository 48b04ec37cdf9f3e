//! The allocation usage report (`det resources allocations`, the web UI's "historical usage"
//! CSV): every allocation that overlapped a window, one row each, with slot-hours counted inside
//! the window only.

use chrono::{DateTime, Utc};
use resolute_api::resources::{ALLOCATION_CSV_COLUMNS, AllocationCsvQuery, ResourceAllocationRawEntry};
use resolute_store::{AllocationUsageRecord, Store};

use crate::error::{ApiError, ApiResult};

/// The window a query names: both ends required, RFC 3339, `after` before `before`.
pub fn window(q: &AllocationCsvQuery) -> ApiResult<(DateTime<Utc>, DateTime<Utc>)> {
    let after = required_time("timestamp_after", &q.timestamp_after)?;
    let before = required_time("timestamp_before", &q.timestamp_before)?;
    if before <= after {
        return Err(ApiError::invalid("timestamp_before: must be later than timestamp_after"));
    }
    Ok((after, before))
}

/// The CSV for the query's window, read from the store.
pub async fn allocations_csv(store: &dyn Store, q: &AllocationCsvQuery) -> ApiResult<String> {
    let (after, before) = window(q)?;
    let rows = store.allocation_usage(after, before).await?;
    render_csv(&rows, after, before, Utc::now()).map_err(|e| {
        tracing::error!(error = %e, "writing the allocations CSV");
        ApiError::internal()
    })
}

/// The raw entries (`GET /api/v1/resources/allocation/raw`) for the query's window.
pub async fn raw_entries(store: &dyn Store, q: &AllocationCsvQuery) -> ApiResult<Vec<ResourceAllocationRawEntry>> {
    let (after, before) = window(q)?;
    let now = Utc::now();
    let rows = store.allocation_usage(after, before).await?;
    Ok(rows
        .iter()
        .map(|r| ResourceAllocationRawEntry {
            kind: task_kind(&r.task_type).to_owned(),
            start_time: r.start_time,
            end_time: r.end_time,
            experiment_id: r.experiment_id.unwrap_or(0),
            username: r.username.clone().unwrap_or_default(),
            user_id: r.user_id,
            labels: Vec::new(),
            seconds: counted_seconds(r, after, before, now),
            slots: r.slots,
        })
        .collect())
}

/// Seconds of `r` inside `[after, min(before, now))`.
fn counted_seconds(r: &AllocationUsageRecord, after: DateTime<Utc>, before: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    let from = r.start_time.max(after);
    let to = r.end_time.unwrap_or(now).min(before).min(now.max(from));
    (to - from).num_milliseconds().max(0) as f64 / 1000.0
}

fn task_kind(task_type: &str) -> &str {
    task_type.strip_prefix("TASK_TYPE_").unwrap_or(task_type)
}

/// Renders the rows: times RFC 3339 (an open allocation's end empty), task types without their
/// `TASK_TYPE_` prefix (`TRIAL`, `NOTEBOOK`), `experiment_id` 0 for tasks of no experiment,
/// slot-hours within `[after, min(before, now))`.
pub fn render_csv(rows: &[AllocationUsageRecord], after: DateTime<Utc>, before: DateTime<Utc>, now: DateTime<Utc>) -> csv::Result<String> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(ALLOCATION_CSV_COLUMNS)?;
    for r in rows {
        let seconds = counted_seconds(r, after, before, now);
        let slot_hours = f64::from(r.slots) * seconds / 3600.0;
        out.write_record([
            r.allocation_id.clone(),
            task_kind(&r.task_type).to_owned(),
            r.username.clone().unwrap_or_default(),
            r.workspace_name.clone().unwrap_or_default(),
            r.experiment_id.unwrap_or(0).to_string(),
            r.slots.to_string(),
            rfc3339(r.start_time),
            r.end_time.map(rfc3339).unwrap_or_default(),
            format!("{slot_hours:.6}"),
            r.resource_pool.clone(),
        ])?;
    }
    let bytes = out.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn required_time(field: &str, value: &Option<String>) -> ApiResult<DateTime<Utc>> {
    let text = value
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::invalid(format!("{field}: required, an RFC 3339 time such as 2021-10-26T23:17:12Z")))?;
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| ApiError::invalid(format!("{field}: {text:?} is not an RFC 3339 time such as 2021-10-26T23:17:12Z ({e})")))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn row(id: &str, user: Option<&str>, start: &str, end: Option<&str>) -> AllocationUsageRecord {
        AllocationUsageRecord {
            allocation_id: id.into(),
            task_id: id.into(),
            task_type: "TASK_TYPE_TRIAL".into(),
            username: user.map(Into::into),
            user_id: None,
            workspace_name: Some("team, \"vision\"".into()),
            experiment_id: Some(7),
            slots: 2,
            resource_pool: "default".into(),
            start_time: t(start),
            end_time: end.map(t),
        }
    }

    #[test]
    fn rows_count_slot_hours_inside_the_window_and_quote_text() {
        let rows = [
            row("7.a.1", Some("ann"), "2030-01-01T00:00:00Z", Some("2030-01-01T03:00:00Z")),
            row("7.a.2", None, "2030-01-01T05:00:00Z", None),
        ];
        let csv = render_csv(&rows, t("2030-01-01T01:00:00Z"), t("2030-01-01T10:00:00Z"), t("2030-01-01T06:00:00Z")).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "allocation_id,task_type,username,workspace_name,experiment_id,slots,start_time,end_time,slot_hours,resource_pool"
        );
        // 2 slots × 2 h inside the window; the open one 2 slots × 1 h up to now.
        assert_eq!(lines[1], "7.a.1,TRIAL,ann,\"team, \"\"vision\"\"\",7,2,2030-01-01T00:00:00Z,2030-01-01T03:00:00Z,4.000000,default");
        assert_eq!(lines[2], "7.a.2,TRIAL,,\"team, \"\"vision\"\"\",7,2,2030-01-01T05:00:00Z,,2.000000,default");
    }

    #[test]
    fn window_errors_name_the_parameter() {
        let q = |a: Option<&str>, b: Option<&str>| AllocationCsvQuery {
            timestamp_after: a.map(Into::into),
            timestamp_before: b.map(Into::into),
        };
        assert!(window(&q(None, Some("2030-01-01T00:00:00Z"))).unwrap_err().message.starts_with("timestamp_after: required"));
        assert!(window(&q(Some("2030-01-01T00:00:00Z"), Some("soon"))).unwrap_err().message.starts_with("timestamp_before:"));
        assert!(window(&q(Some("2030-01-02T00:00:00Z"), Some("2030-01-01T00:00:00Z"))).unwrap_err().message.contains("later than"));
        assert!(window(&q(Some("2030-01-01T00:00:00Z"), Some("2030-01-02T00:00:00+02:00"))).is_ok());
    }
}
