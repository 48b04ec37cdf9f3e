//! Task output on its way to the master: each captured line becomes a [`TaskLogLine`] (with the
//! `[rank=N] ` and `LEVEL: ` prefixes parsed as upstream's `ship_logs.py` does), and lines are
//! batched into `TaskLogs` messages of at most [`MAX_BATCH_LINES`] lines, sent at the latest
//! [`FLUSH_INTERVAL`] after the first line of a batch. Within a message, consecutive lines of one
//! task share a [`TaskLogBatch`], so the task's ids are sent once.

use std::time::Duration;

use std::collections::HashMap;

use resolute_api::agent_protocol::{LineLevel, StdType, TaskLogBatch, TaskLogLine};
use tokio::time::Instant;

use crate::events::LogLine;

/// A batch is sent as soon as it holds this many lines (upstream's `LOG_BATCH_MAX_SIZE`).
pub const MAX_BATCH_LINES: usize = 1000;

/// A non-empty batch is sent at the latest this long after its first line.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// The parts of one output line: `(rank_id, level, text)`, with the prefixes that gave the rank and
/// level removed from the text. Mirrors `ship_logs.py`: an optional space, `[rank=N]`, an optional
/// space; then an optional space, `LEVEL:`, an optional space.
pub fn parse_line(line: &str) -> (Option<i32>, Option<LineLevel>, &str) {
    let mut rest = line;
    let mut rank = None;
    if let Some((rank_id, after)) = strip_rank(rest) {
        rank = Some(rank_id);
        rest = after;
    }
    let mut level = None;
    if let Some((name, after)) = strip_level(rest) {
        level = Some(name);
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

fn strip_level(line: &str) -> Option<(LineLevel, &str)> {
    let body = line.strip_prefix(' ').unwrap_or(line);
    LineLevel::ALL.iter().find_map(|level| {
        let after = body.strip_prefix(level.name())?.strip_prefix(':')?;
        Some((*level, after.strip_prefix(' ').unwrap_or(after)))
    })
}

/// The wire form of a captured line.
pub fn to_wire(line: &LogLine) -> TaskLogLine {
    let (rank_id, level, text) = parse_line(&line.log);
    let mut log = String::with_capacity(text.len() + 1);
    log.push_str(text);
    log.push('\n');
    TaskLogLine { timestamp: line.timestamp, stdtype: line.stdtype, rank_id, level, log }
}

/// How far a task's output file has been read into a message: once the message is written to
/// the master, where a restarted agent resumes reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    pub container_id: String,
    pub stdtype: StdType,
    pub offset: u64,
}

/// Lines waiting to be sent, across all tasks (one message keeps the order between tasks' events).
#[derive(Debug, Default)]
pub struct LogBatch {
    batches: Vec<TaskLogBatch>,
    lines: usize,
    deadline: Option<Instant>,
    /// The offset past the last line of each (container, stream) in the batch.
    offsets: HashMap<(String, StdType), u64>,
}

impl LogBatch {
    /// Adds a captured line; returns true when the batch is full and must be sent now.
    pub fn push(&mut self, line: LogLine) -> bool {
        if self.lines == 0 {
            self.deadline = Some(Instant::now() + FLUSH_INTERVAL);
        }
        let wire = to_wire(&line);
        if let Some(offset) = line.offset {
            self.offsets.insert((line.container_id.clone(), line.stdtype), offset);
        }
        match self.batches.last_mut() {
            Some(last) if last.container_id == line.container_id && last.task_id == line.task_id => last.lines.push(wire),
            _ => self.batches.push(TaskLogBatch {
                container_id: line.container_id,
                allocation_id: line.allocation_id,
                task_id: line.task_id,
                lines: vec![wire],
            }),
        }
        self.lines += 1;
        self.lines >= MAX_BATCH_LINES
    }

    /// When the batch must be sent, if it holds anything.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Takes every waiting line, leaving the batch empty, with how far each output file it
    /// holds lines of has been read.
    pub fn take(&mut self) -> Option<(Vec<TaskLogBatch>, Vec<Shipped>)> {
        self.deadline = None;
        self.lines = 0;
        let shipped = self.offsets.drain().map(|((container_id, stdtype), offset)| Shipped { container_id, stdtype, offset }).collect();
        if self.batches.is_empty() { None } else { Some((std::mem::take(&mut self.batches), shipped)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::StdType;

    #[test]
    fn rank_and_level_prefixes_are_parsed_and_stripped() {
        assert_eq!(parse_line("[rank=0] INFO: x"), (Some(0), Some(LineLevel::Info), "x"));
        assert_eq!(parse_line(" [rank=12]WARNING:y z"), (Some(12), Some(LineLevel::Warning), "y z"));
        assert_eq!(parse_line("CRITICAL: boom"), (None, Some(LineLevel::Critical), "boom"));
        assert_eq!(parse_line("[rank=3] plain"), (Some(3), None, "plain"));
        assert_eq!(parse_line("hello INFO: x"), (None, None, "hello INFO: x"));
        assert_eq!(parse_line("[rank=x] INFO: x"), (None, None, "[rank=x] INFO: x"));
        assert_eq!(parse_line("INFOS: x"), (None, None, "INFOS: x"));
        assert_eq!(parse_line("[rank=99999999999] x"), (None, None, "[rank=99999999999] x"));
    }

    fn captured(container_id: &str, log: &str) -> LogLine {
        LogLine {
            task_id: format!("task-{container_id}"),
            allocation_id: "a".into(),
            container_id: container_id.into(),
            timestamp: chrono::Utc::now(),
            stdtype: StdType::Stderr,
            log: log.into(),
            offset: None,
        }
    }

    #[test]
    fn wire_lines_end_with_a_newline() {
        let wire = to_wire(&captured("c", "[rank=1] ERROR: bad"));
        assert_eq!((wire.rank_id, wire.level, wire.log.as_str()), (Some(1), Some(LineLevel::Error), "bad\n"));
        assert_eq!(wire.stdtype, StdType::Stderr);
    }

    #[test]
    fn a_batch_carries_the_last_offset_of_each_stream() {
        let mut batch = LogBatch::default();
        for (container, stdtype, offset) in
            [("c1", StdType::Stdout, 4), ("c1", StdType::Stdout, 9), ("c1", StdType::Stderr, 3), ("c2", StdType::Stdout, 7)]
        {
            batch.push(LogLine { stdtype, offset: Some(offset), ..captured(container, "x") });
        }
        let (_, mut shipped) = batch.take().unwrap();
        shipped.sort_by_key(|s| (s.container_id.clone(), s.stdtype == StdType::Stderr));
        let got: Vec<(&str, StdType, u64)> = shipped.iter().map(|s| (s.container_id.as_str(), s.stdtype, s.offset)).collect();
        assert_eq!(got, [("c1", StdType::Stdout, 9), ("c1", StdType::Stderr, 3), ("c2", StdType::Stdout, 7)]);
        assert!(batch.take().is_none());
    }

    #[tokio::test]
    async fn batch_fills_and_empties_grouping_consecutive_lines_per_task() {
        let mut batch = LogBatch::default();
        assert!(batch.deadline().is_none() && batch.take().is_none());
        let containers = ["c1", "c1", "c2", "c1"];
        for i in 0..MAX_BATCH_LINES - 1 {
            assert!(!batch.push(captured(containers[i % 4], &i.to_string())));
        }
        assert!(batch.deadline().is_some());
        assert!(batch.push(captured("c1", "last")));
        let (batches, shipped) = batch.take().unwrap();
        assert!(shipped.is_empty(), "lines the agent wrote itself move no offset");
        assert_eq!(batches.iter().map(|b| b.lines.len()).sum::<usize>(), MAX_BATCH_LINES);
        // c1 c1 | c2 | c1 c1 c1 | c2 | ... | c2 | c1 ("last"): 250 c2 lines between 251 runs of c1.
        assert_eq!(batches.len(), 250 + 251);
        assert_eq!((batches[0].container_id.as_str(), batches[0].task_id.as_str(), batches[0].lines.len()), ("c1", "task-c1", 2));
        assert_eq!(batches.last().map(|b| b.lines.last().map(|l| l.log.as_str())), Some(Some("last\n")));
        assert!(batch.deadline().is_none() && batch.take().is_none());
    }
}
