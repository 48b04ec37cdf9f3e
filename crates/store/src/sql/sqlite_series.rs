//! `Store::metric_series`'s read on a SQLite file: the live reports of a trial's group stepped
//! directly on a rusqlite connection on a blocking thread, each body borrowed from the row and
//! streamed into the columns (`series_body`). sqlx-sqlite steps a statement on its connection's
//! worker thread and copies every row's values into a message to the task (~1.5 µs a row); a
//! 500-trial chart's first read is a million rows. The connection is opened read-only for the
//! one read and closed after it (no page cache or statement cache kept between reads; opening
//! costs well under a millisecond against the milliseconds of a series worth reading).
//! Timestamps are read in every form sqlx-sqlite writes or reads (`report_time`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::metric_series::LIVE_SERIES;
use super::series_body::push_body;
use crate::error::{StoreError, StoreResult};
use crate::model_series::{MetricSeries, MetricSeriesBuilder};

/// Reads series from the database file at `path`.
pub(crate) struct SqliteSeriesReader {
    path: PathBuf,
}

impl SqliteSeriesReader {
    pub(crate) fn new(path: &Path) -> SqliteSeriesReader {
        SqliteSeriesReader { path: path.to_owned() }
    }

    /// The series and the number of reports decoded.
    pub(crate) async fn read(&self, trial_id: i32, group: &str) -> StoreResult<(MetricSeries, u64)> {
        let (path, group) = (self.path.clone(), group.to_owned());
        tokio::task::spawn_blocking(move || read(&path, trial_id, &group))
            .await
            .map_err(|e| StoreError::Io { context: "reading a metric series", source: std::io::Error::other(e.to_string()) })?
    }
}

fn read(path: &Path, trial_id: i32, group: &str) -> StoreResult<(MetricSeries, u64)> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let mut statement = conn.prepare(LIVE_SERIES)?;
    let mut rows = statement.query(rusqlite::params![trial_id, group])?;
    let mut builder = MetricSeriesBuilder::default();
    let mut decoded = 0u64;
    while let Some(row) = rows.next()? {
        let steps: i64 = row.get(0)?;
        let time = report_time(row.get_ref(1)?)?;
        let body = row.get_ref(2)?.as_str().map_err(|e| StoreError::corrupt_value("body", e))?;
        push_body(&mut builder, steps, time, body).map_err(|e| StoreError::corrupt("body", e))?;
        decoded += 1;
    }
    Ok((builder.finish(), decoded))
}

/// A stored `report_time` in microseconds since the epoch: RFC 3339 text (what both writers
/// store), the other text forms sqlx-sqlite reads, or a number (integer: Unix seconds; real:
/// a Julian day), as sqlx-sqlite decodes them.
fn report_time(value: ValueRef<'_>) -> StoreResult<i64> {
    let bad = |what: &str| StoreError::corrupt_value("report_time", what);
    match value {
        ValueRef::Text(bytes) => {
            let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
            parse_time(text).map(|t| t.timestamp_micros()).ok_or_else(|| bad(text))
        }
        ValueRef::Integer(seconds) => DateTime::from_timestamp(seconds, 0).map(|t| t.timestamp_micros()).ok_or_else(|| bad("out of range")),
        ValueRef::Real(julian_day) => {
            let micros = (julian_day - 2_440_587.5) * 86_400_000_000.0;
            if micros.is_finite() { Ok(micros.round() as i64) } else { Err(bad("not a finite Julian day")) }
        }
        _ => Err(bad("neither text nor a number")),
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.f%#z"] {
        if let Ok(t) = DateTime::parse_from_str(text, format) {
            return Some(t.with_timezone(&Utc));
        }
    }
    for format in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Some(t.and_utc());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_times_read_in_every_stored_form() {
        let expect = DateTime::parse_from_rfc3339("2026-11-27T10:00:01.250000Z").unwrap().timestamp_micros();
        for text in [
            "2026-11-27T10:00:01.25+00:00",
            "2026-11-27T10:00:01.250Z",
            "2026-11-27T11:00:01.25+01:00",
            "2026-11-27 10:00:01.25+00:00",
            "2026-11-27 10:00:01.250",
            "2026-11-27T10:00:01.25",
        ] {
            assert_eq!(report_time(ValueRef::Text(text.as_bytes())).unwrap(), expect, "{text}");
        }
        assert_eq!(report_time(ValueRef::Integer(1)).unwrap(), 1_000_000);
        assert_eq!(report_time(ValueRef::Real(2_440_588.5)).unwrap(), 86_400_000_000);
        assert!(report_time(ValueRef::Text(b"yesterday")).is_err());
        assert!(report_time(ValueRef::Null).is_err());
    }
}
