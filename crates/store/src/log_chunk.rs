//! Log chunks: a task's lines are stored a batch per row, not a row per line. A chunk holds
//! consecutive lines that share their task, allocation, agent, container and source (stored once,
//! as columns a query can filter on); what varies per line (timestamp, rank, level, stream, text)
//! is packed into a compact binary body that readers decode and filter. Lines get consecutive
//! sequence numbers per task (`first_seq..=last_seq`), the cursor followers page with.
//!
//! Body format (version 1): one version byte, then per line
//! `varint(zigzag(timestamp_µs - previous_timestamp_µs))`, `varint(rank)` (0 = none, else
//! `zigzag(rank) + 1`), the level and the stream as one code byte each (0 = none, 1.. = a known
//! name, 255 = a length-prefixed string follows), and the length-prefixed UTF-8 text.

use chrono::{DateTime, Utc};

const FORMAT_V1: u8 = 1;

/// `v1LogLevel` names. Known values get one-byte codes (index + 1); anything else is spelled out.
pub const LOG_LEVELS: [&str; 7] = [
    "LOG_LEVEL_UNSPECIFIED",
    "LOG_LEVEL_TRACE",
    "LOG_LEVEL_DEBUG",
    "LOG_LEVEL_INFO",
    "LOG_LEVEL_WARNING",
    "LOG_LEVEL_ERROR",
    "LOG_LEVEL_CRITICAL",
];
const STDTYPES: [&str; 2] = ["stdout", "stderr"];
const CODE_NONE: u8 = 0;
const CODE_SPELLED: u8 = 255;

/// The lines of one chunk being built, in order. Build one per run of lines that share the
/// columns below; the store numbers the lines when it appends the chunk.
#[derive(Clone, Debug)]
pub struct NewLogChunk {
    pub task_id: String,
    pub allocation_id: Option<String>,
    pub agent_id: Option<String>,
    pub container_id: Option<String>,
    pub source: Option<String>,
    body: Vec<u8>,
    lines: i64,
    min_ts: i64,
    max_ts: i64,
    prev_ts: i64,
    rank_ids: Vec<i32>,
    stdtypes: Vec<String>,
}

impl NewLogChunk {
    pub fn new(
        task_id: String,
        allocation_id: Option<String>,
        agent_id: Option<String>,
        container_id: Option<String>,
        source: Option<String>,
    ) -> Self {
        NewLogChunk {
            task_id,
            allocation_id,
            agent_id,
            container_id,
            source,
            body: vec![FORMAT_V1],
            lines: 0,
            min_ts: i64::MAX,
            max_ts: i64::MIN,
            prev_ts: 0,
            rank_ids: Vec::new(),
            stdtypes: Vec::new(),
        }
    }

    /// Reserves room for about `bytes` more of encoded lines.
    pub fn reserve(&mut self, bytes: usize) {
        self.body.reserve(bytes);
    }

    /// Appends a line; `level` is a wire name (`LOG_LEVEL_INFO`), `stdtype` `stdout`/`stderr`.
    pub fn push(&mut self, timestamp: DateTime<Utc>, rank_id: Option<i32>, level: Option<&str>, stdtype: Option<&str>, log: &str) {
        let ts = timestamp.timestamp_micros();
        put_varint(&mut self.body, zigzag(ts.wrapping_sub(self.prev_ts)));
        self.prev_ts = ts;
        self.min_ts = self.min_ts.min(ts);
        self.max_ts = self.max_ts.max(ts);
        put_varint(&mut self.body, rank_id.map_or(0, |r| zigzag(i64::from(r)) + 1));
        put_coded(&mut self.body, &LOG_LEVELS, level);
        put_coded(&mut self.body, &STDTYPES, stdtype);
        put_varint(&mut self.body, log.len() as u64);
        self.body.extend_from_slice(log.as_bytes());
        self.lines += 1;
        if let Some(rank) = rank_id
            && !self.rank_ids.contains(&rank)
        {
            self.rank_ids.push(rank);
        }
        if let Some(stdtype) = stdtype
            && !self.stdtypes.iter().any(|s| s == stdtype)
        {
            self.stdtypes.push(stdtype.to_owned());
        }
    }

    pub fn len(&self) -> usize {
        self.lines as usize
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    pub(crate) fn line_count(&self) -> i64 {
        self.lines
    }

    pub(crate) fn body(&self) -> &[u8] {
        &self.body
    }

    /// Oldest and newest timestamp (µs since the epoch); only meaningful when not empty.
    pub(crate) fn time_range(&self) -> (i64, i64) {
        (self.min_ts, self.max_ts)
    }

    /// The distinct ranks, as a JSON array (for `logs/fields`).
    pub(crate) fn rank_ids_json(&self) -> String {
        serde_json::Value::from(self.rank_ids.clone()).to_string()
    }

    /// The distinct streams, as a JSON array (for `logs/fields`).
    pub(crate) fn stdtypes_json(&self) -> String {
        serde_json::Value::from(self.stdtypes.clone()).to_string()
    }
}

/// One decoded line, borrowing its strings from the body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LineView<'a> {
    pub timestamp_us: i64,
    pub rank_id: Option<i32>,
    pub level: Option<&'a str>,
    pub stdtype: Option<&'a str>,
    pub log: &'a str,
}

/// A body that does not decode: a backend fault, not the caller's.
#[derive(Debug, thiserror::Error)]
#[error("log chunk body is corrupt: {0}")]
pub(crate) struct CorruptChunk(pub(crate) &'static str);

/// Every line of a body, in order.
pub(crate) fn decode(body: &[u8]) -> Result<Vec<LineView<'_>>, CorruptChunk> {
    let Some((&version, mut rest)) = body.split_first() else { return Err(CorruptChunk("empty")) };
    if version != FORMAT_V1 {
        return Err(CorruptChunk("unknown format version"));
    }
    let mut lines = Vec::new();
    let mut ts = 0i64;
    while !rest.is_empty() {
        ts = ts.wrapping_add(unzigzag(take_varint(&mut rest)?));
        let rank_id = match take_varint(&mut rest)? {
            0 => None,
            r => Some(i32::try_from(unzigzag(r - 1)).map_err(|_| CorruptChunk("rank out of range"))?),
        };
        let level = take_coded(&mut rest, &LOG_LEVELS)?;
        let stdtype = take_coded(&mut rest, &STDTYPES)?;
        let log = take_str(&mut rest)?;
        lines.push(LineView { timestamp_us: ts, rank_id, level, stdtype, log });
    }
    Ok(lines)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take_varint(input: &mut &[u8]) -> Result<u64, CorruptChunk> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some((&byte, rest)) = input.split_first() else { return Err(CorruptChunk("truncated number")) };
        *input = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(CorruptChunk("number too long"))
}

fn put_coded(out: &mut Vec<u8>, known: &[&str], value: Option<&str>) {
    match value {
        None => out.push(CODE_NONE),
        Some(v) => match known.iter().position(|k| *k == v) {
            Some(i) => out.push(i as u8 + 1),
            None => {
                out.push(CODE_SPELLED);
                put_varint(out, v.len() as u64);
                out.extend_from_slice(v.as_bytes());
            }
        },
    }
}

fn take_coded<'a>(input: &mut &'a [u8], known: &[&'static str]) -> Result<Option<&'a str>, CorruptChunk> {
    let Some((&code, rest)) = input.split_first() else { return Err(CorruptChunk("truncated code")) };
    *input = rest;
    match code {
        CODE_NONE => Ok(None),
        CODE_SPELLED => take_str(input).map(Some),
        c => known.get(usize::from(c) - 1).copied().map(Some).ok_or(CorruptChunk("unknown code")),
    }
}

fn take_str<'a>(input: &mut &'a [u8]) -> Result<&'a str, CorruptChunk> {
    let len = usize::try_from(take_varint(input)?).map_err(|_| CorruptChunk("length out of range"))?;
    if input.len() < len {
        return Err(CorruptChunk("truncated text"));
    }
    let (text, rest) = input.split_at(len);
    *input = rest;
    std::str::from_utf8(text).map_err(|_| CorruptChunk("text is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_with_known_and_spelled_values() {
        let t0 = DateTime::from_timestamp(1_700_000_000, 123_456_000).unwrap();
        let mut chunk = NewLogChunk::new("t".into(), None, None, None, None);
        chunk.push(t0, Some(0), Some("LOG_LEVEL_INFO"), Some("stdout"), "a\n");
        chunk.push(t0 - chrono::TimeDelta::seconds(5), None, None, None, "");
        chunk.push(t0, Some(-3), Some("NOTICE"), Some("custom"), "ü \"x\"\n");
        chunk.push(
            DateTime::from_timestamp(-62_135_596_800, 0).unwrap(),
            Some(i32::MAX),
            Some("LOG_LEVEL_CRITICAL"),
            Some("stderr"),
            "old",
        );
        let lines = decode(chunk.body()).unwrap();
        let ts = |t: DateTime<Utc>| t.timestamp_micros();
        assert_eq!(
            lines,
            [
                LineView { timestamp_us: ts(t0), rank_id: Some(0), level: Some("LOG_LEVEL_INFO"), stdtype: Some("stdout"), log: "a\n" },
                LineView { timestamp_us: ts(t0) - 5_000_000, rank_id: None, level: None, stdtype: None, log: "" },
                LineView { timestamp_us: ts(t0), rank_id: Some(-3), level: Some("NOTICE"), stdtype: Some("custom"), log: "ü \"x\"\n" },
                LineView {
                    timestamp_us: -62_135_596_800_000_000,
                    rank_id: Some(i32::MAX),
                    level: Some("LOG_LEVEL_CRITICAL"),
                    stdtype: Some("stderr"),
                    log: "old"
                },
            ]
        );
        assert_eq!(chunk.len(), 4);
        assert_eq!(chunk.time_range(), (-62_135_596_800_000_000, ts(t0)));
        assert_eq!(chunk.rank_ids_json(), "[0,-3,2147483647]");
        assert_eq!(chunk.stdtypes_json(), r#"["stdout","custom","stderr"]"#);
    }

    #[test]
    fn truncated_or_foreign_bodies_are_errors() {
        let mut chunk = NewLogChunk::new("t".into(), None, None, None, None);
        chunk.push(Utc::now(), None, None, None, "hello");
        let body = chunk.body();
        assert!(decode(&body[..body.len() - 1]).is_err());
        assert!(decode(&[]).is_err());
        assert!(decode(&[2]).is_err());
        assert_eq!(decode(&[FORMAT_V1]).unwrap(), []);
    }
}
