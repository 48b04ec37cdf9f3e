//! Capturing a task's stdout and stderr: splitting bytes into lines and handing them to the event
//! channel under the chosen back-pressure policy ([`LogOverflow`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::sync::oneshot;

use crate::events::{LogLine, RuntimeEvent, StdType};

/// Longest line sent as one [`LogLine`]; longer lines are cut into pieces of at most this size
/// (on a UTF-8 character boundary when possible), so one runaway line cannot hold unbounded memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

const READ_CHUNK: usize = 64 * 1024;

/// What happens when the event channel is full because its consumer is slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogOverflow {
    /// The channel capacity is the buffer; beyond it, lines are dropped and counted, and a
    /// `[resolute-agent] N lines dropped` line on the same stream reports the gap once the
    /// consumer catches up. A task never stalls on a slow or wedged master connection (default).
    #[default]
    Drop,
    /// Wait for room: nothing is lost, but once the channel and the pipe buffer (64 KiB) are full
    /// the task blocks in `write` until the consumer reads.
    Block,
}

/// Splits a byte stream into lines: `\n` ends a line, lines longer than the limit are cut, and
/// bytes that are not UTF-8 become U+FFFD.
#[derive(Debug)]
pub struct LineSplitter {
    pending: Vec<u8>,
    max: usize,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> LineSplitter {
        LineSplitter { pending: Vec::new(), max: max_line_bytes.max(4) }
    }

    /// Appends `chunk`, pushing every line it completes onto `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<String>) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.pending.extend_from_slice(&chunk[..newline]);
            self.cut_long(out);
            out.push(String::from_utf8_lossy(&self.pending).into_owned());
            self.pending.clear();
            chunk = &chunk[newline + 1..];
        }
        self.pending.extend_from_slice(chunk);
        self.cut_long(out);
    }

    /// The unterminated last line, if any.
    pub fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let line = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        Some(line)
    }

    fn cut_long(&mut self, out: &mut Vec<String>) {
        while self.pending.len() > self.max {
            let mut cut = self.max;
            // Step back over at most 3 continuation bytes so a character is not split in two.
            while cut > self.max - 3 && self.pending[cut] & 0xC0 == 0x80 {
                cut -= 1;
            }
            out.push(String::from_utf8_lossy(&self.pending[..cut]).into_owned());
            self.pending.drain(..cut);
        }
    }
}

/// The task a captured stream belongs to.
#[derive(Debug)]
pub(crate) struct LogSource {
    pub task_id: String,
    pub allocation_id: String,
    pub container_id: String,
}

/// How a capture tells its supervisor that it is still making progress and when its stream ended,
/// so the supervisor can give up on a stream held open by a stray process without cutting off a
/// capture that is merely waiting for the consumer.
#[derive(Debug)]
pub(crate) struct CaptureProgress {
    /// Bumped on every chunk read and every line sent.
    pub activity: Arc<AtomicU64>,
    /// Fired when the stream reaches its end (before the last lines are sent).
    pub eof: oneshot::Sender<()>,
}

/// Reads `reader` to its end, sending each line as a [`RuntimeEvent::Log`]. Keeps reading even
/// when the channel is closed, so the task never blocks on a full pipe.
pub(crate) async fn capture<R: AsyncRead + Unpin>(
    mut reader: R,
    stdtype: StdType,
    source: Arc<LogSource>,
    events: mpsc::Sender<RuntimeEvent>,
    overflow: LogOverflow,
    progress: CaptureProgress,
) {
    let activity = progress.activity;
    let mut emitter = Emitter { source, stdtype, events, overflow, dropped: 0, closed: false, activity: activity.clone() };
    let mut splitter = LineSplitter::new(MAX_LINE_BYTES);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut lines = Vec::new();
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("reading {} of container {}: {e}", stdtype.as_str(), emitter.source.container_id);
                break;
            }
        };
        activity.fetch_add(1, Ordering::Relaxed);
        splitter.push(&buf[..n], &mut lines);
        for line in lines.drain(..) {
            emitter.emit(line).await;
        }
    }
    let _ = progress.eof.send(());
    if let Some(last) = splitter.finish() {
        emitter.emit(last).await;
    }
    emitter.finish().await;
}

struct Emitter {
    source: Arc<LogSource>,
    stdtype: StdType,
    events: mpsc::Sender<RuntimeEvent>,
    overflow: LogOverflow,
    dropped: u64,
    closed: bool,
    activity: Arc<AtomicU64>,
}

impl Emitter {
    fn event(&self, log: String) -> RuntimeEvent {
        RuntimeEvent::Log(LogLine {
            task_id: self.source.task_id.clone(),
            allocation_id: self.source.allocation_id.clone(),
            container_id: self.source.container_id.clone(),
            timestamp: Utc::now(),
            stdtype: self.stdtype,
            log,
        })
    }

    fn dropped_notice(&self) -> RuntimeEvent {
        self.event(format!("[resolute-agent] {} lines dropped: the log consumer was too slow", self.dropped))
    }

    async fn emit(&mut self, line: String) {
        if self.closed {
            return;
        }
        if self.overflow == LogOverflow::Block {
            self.closed = self.events.send(self.event(line)).await.is_err();
            self.activity.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.dropped > 0 {
            match self.events.try_send(self.dropped_notice()) {
                Ok(()) => self.dropped = 0,
                Err(TrySendError::Full(_)) => {
                    self.dropped += 1;
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    self.closed = true;
                    return;
                }
            }
        }
        match self.events.try_send(self.event(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped += 1,
            Err(TrySendError::Closed(_)) => self.closed = true,
        }
    }

    /// The stream has ended: report a gap still unreported, waiting for room since nothing more
    /// can be lost.
    async fn finish(&mut self) {
        if self.dropped > 0 && !self.closed {
            let _ = self.events.send(self.dropped_notice()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<String> {
        let mut splitter = LineSplitter::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        out.extend(splitter.finish());
        out
    }

    /// Runs `capture` over `input` with a channel of `capacity` that nobody reads until capture
    /// has read everything, then returns what arrived.
    async fn capture_unread(input: &'static [u8], capacity: usize, overflow: LogOverflow) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel(capacity);
        let source = Arc::new(LogSource { task_id: "t".into(), allocation_id: "a".into(), container_id: "c".into() });
        let (eof, eof_rx) = oneshot::channel();
        let progress = CaptureProgress { activity: Arc::default(), eof };
        let capture = tokio::spawn(capture(input, StdType::Stdout, source, tx, overflow, progress));
        if overflow == LogOverflow::Drop {
            // Drop mode reads to the end without waiting for the consumer.
            eof_rx.await.unwrap();
        }
        let mut lines = Vec::new();
        while let Some(RuntimeEvent::Log(line)) = rx.recv().await {
            lines.push(line.log);
        }
        capture.await.unwrap();
        lines
    }

    #[tokio::test]
    async fn a_slow_consumer_loses_lines_with_a_notice_in_drop_mode() {
        let lines = capture_unread(b"1\n2\n3\n4\n5", 2, LogOverflow::Drop).await;
        assert_eq!(lines, ["1", "2", "[resolute-agent] 3 lines dropped: the log consumer was too slow"]);
    }

    #[tokio::test]
    async fn a_slow_consumer_loses_nothing_in_block_mode() {
        let lines = capture_unread(b"1\n2\n3\n4\n5", 1, LogOverflow::Block).await;
        assert_eq!(lines, ["1", "2", "3", "4", "5"]);
    }

    #[test]
    fn lines_across_chunks_and_unterminated_last_line() {
        assert_eq!(split(&[b"a\nb", b"c\n\nd"], 100), ["a", "bc", "", "d"]);
        assert_eq!(split(&[b"x\n"], 100), ["x"]);
        assert!(split(&[b""], 100).is_empty());
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(split(&[b"ok \xff\xfe end\n"], 100), ["ok \u{fffd}\u{fffd} end"]);
    }

    #[test]
    fn long_lines_are_cut_on_character_boundaries() {
        assert_eq!(split(&[b"abcdefghij\n"], 4), ["abcd", "efgh", "ij"]);
        // "é" is two bytes; a cut after 5 bytes would split the third one.
        let pieces = split(&["ééé".as_bytes(), b"\n"], 5);
        assert_eq!(pieces, ["éé", "é"]);
        assert_eq!(pieces.concat(), "ééé");
    }
}
