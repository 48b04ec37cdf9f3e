//! Task output on its way to the master: each captured line becomes a [`TaskLogLine`] (with the
//! `[rank=N] ` and `LEVEL: ` prefixes parsed as upstream's `ship_logs.py` does), and lines are
//! batched into `TaskLogs` messages of at most [`MAX_BATCH_LINES`] lines, sent at the latest
//! [`FLUSH_INTERVAL`] after the first line of a batch.

use std::time::Duration;

use resolute_api::agent_protocol::TaskLogLine;
use tokio::time::Instant;

use crate::events::LogLine;

/// A batch is sent as soon as it holds this many lines (upstream's `LOG_BATCH_MAX_SIZE`).
pub const MAX_BATCH_LINES: usize = 1000;

/// A non-empty batch is sent at the latest this long after its first line.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

const LEVELS: [&str; 5] = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"];

/// The parts of one output line: `(rank_id, level, text)`, with the prefixes that gave the rank and
/// level removed from the text. Mirrors `ship_logs.py`: an optional space, `[rank=N]`, an optional
/// space; then an optional space, `LEVEL:`, an optional space.
pub fn parse_line(line: &str) -> (Option<i32>, Option<String>, &str) {
    let mut rest = line;
    let mut rank = None;
    if let Some((rank_id, after)) = strip_rank(rest) {
        rank = Some(rank_id);
        rest = after;
    }
    let mut level = None;
    if let Some((name, after)) = strip_level(rest) {
        level = Some(format!("LOG_LEVEL_{name}"));
        rest = after;
    }
    (rank, level, rest)
}

fn strip_rank(line: &str) -> Option<(i32, &str)> {
    let body = line.strip_prefix(' ').unwrap_or(line).strip_prefix("[rank=")?;
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    let rank = body[..digits].parse::<i32>().ok()?;
    let after = body[digits..].strip_prefix(']')?;
    Some((rank, after.strip_prefix(' ').unwrap_or(after)))
}

fn strip_level(line: &str) -> Option<(&'static str, &str)> {
    let body = line.strip_prefix(' ').unwrap_or(line);
    LEVELS.iter().find_map(|name| {
        let after = body.strip_prefix(name)?.strip_prefix(':')?;
        Some((*name, after.strip_prefix(' ').unwrap_or(after)))
    })
}

/// The wire form of a captured line.
pub fn to_wire(line: LogLine) -> TaskLogLine {
    let (rank_id, level, text) = parse_line(&line.log);
    let mut log = String::with_capacity(text.len() + 1);
    log.push_str(text);
    log.push('\n');
    TaskLogLine {
        container_id: line.container_id,
        allocation_id: line.allocation_id,
        task_id: line.task_id,
        timestamp: line.timestamp,
        stdtype: line.stdtype.as_str().to_string(),
        rank_id,
        level,
        log,
    }
}

/// Lines waiting to be sent, across all tasks (one batch keeps the order between tasks' events).
#[derive(Debug, Default)]
pub struct LogBatch {
    lines: Vec<TaskLogLine>,
    deadline: Option<Instant>,
}

impl LogBatch {
    /// Adds a line; returns true when the batch is full and must be sent now.
    pub fn push(&mut self, line: TaskLogLine) -> bool {
        if self.lines.is_empty() {
            self.deadline = Some(Instant::now() + FLUSH_INTERVAL);
        }
        self.lines.push(line);
        self.lines.len() >= MAX_BATCH_LINES
    }

    /// When the batch must be sent, if it holds anything.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Takes every waiting line, leaving the batch empty.
    pub fn take(&mut self) -> Option<Vec<TaskLogLine>> {
        self.deadline = None;
        if self.lines.is_empty() { None } else { Some(std::mem::take(&mut self.lines)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_and_level_prefixes_are_parsed_and_stripped() {
        assert_eq!(parse_line("[rank=0] INFO: x"), (Some(0), Some("LOG_LEVEL_INFO".into()), "x"));
        assert_eq!(parse_line(" [rank=12]WARNING:y z"), (Some(12), Some("LOG_LEVEL_WARNING".into()), "y z"));
        assert_eq!(parse_line("CRITICAL: boom"), (None, Some("LOG_LEVEL_CRITICAL".into()), "boom"));
        assert_eq!(parse_line("[rank=3] plain"), (Some(3), None, "plain"));
        assert_eq!(parse_line("hello INFO: x"), (None, None, "hello INFO: x"));
        assert_eq!(parse_line("[rank=x] INFO: x"), (None, None, "[rank=x] INFO: x"));
        assert_eq!(parse_line("INFOS: x"), (None, None, "INFOS: x"));
        assert_eq!(parse_line("[rank=99999999999] x"), (None, None, "[rank=99999999999] x"));
    }

    #[test]
    fn wire_lines_end_with_a_newline() {
        let line = LogLine {
            task_id: "t".into(),
            allocation_id: "a".into(),
            container_id: "c".into(),
            timestamp: chrono::Utc::now(),
            stdtype: crate::events::StdType::Stderr,
            log: "[rank=1] ERROR: bad".into(),
        };
        let wire = to_wire(line);
        assert_eq!((wire.rank_id, wire.level.as_deref(), wire.log.as_str()), (Some(1), Some("LOG_LEVEL_ERROR"), "bad\n"));
        assert_eq!(wire.stdtype, "stderr");
    }

    #[tokio::test]
    async fn batch_fills_and_empties() {
        let mut batch = LogBatch::default();
        assert!(batch.deadline().is_none() && batch.take().is_none());
        let line = |i: usize| TaskLogLine {
            container_id: "c".into(),
            allocation_id: "a".into(),
            task_id: "t".into(),
            timestamp: chrono::Utc::now(),
            stdtype: "stdout".into(),
            rank_id: None,
            level: None,
            log: format!("{i}\n"),
        };
        for i in 0..MAX_BATCH_LINES - 1 {
            assert!(!batch.push(line(i)));
        }
        assert!(batch.deadline().is_some());
        assert!(batch.push(line(MAX_BATCH_LINES)));
        assert_eq!(batch.take().map(|l| l.len()), Some(MAX_BATCH_LINES));
        assert!(batch.deadline().is_none());
    }
}
