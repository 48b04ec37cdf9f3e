//! Reading a task's output: its stdout and stderr are files ([`crate::task_files`]) that
//! [`tail`] follows from a byte offset, splitting them into lines that it hands to the event
//! channel, each with the offset just past it, so that after an agent restart the reading
//! resumes where the lines the master received end: none is sent twice, none is skipped. The
//! files are the buffer: a slow consumer delays the reading, never the task.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::{mpsc, watch};

use crate::events::{LogLine, RuntimeEvent, StdType};

/// Longest line sent as one [`LogLine`]; longer lines are cut into pieces of at most this size
/// (on a UTF-8 character boundary when possible), so one runaway line cannot hold unbounded memory.
pub const MAX_LINE_BYTES: usize = 1 << 20;

const READ_CHUNK: usize = 64 * 1024;

/// How often a file at its end is read again while the task runs.
const POLL: Duration = Duration::from_millis(20);

/// Splits a byte stream into lines: `\n` ends a line, lines longer than the limit are cut, and
/// bytes that are not UTF-8 become U+FFFD. Each line comes with the stream offset just past it.
#[derive(Debug)]
pub struct LineSplitter {
    pending: Vec<u8>,
    max: usize,
    /// The stream offset of `pending[0]`.
    start: u64,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> LineSplitter {
        LineSplitter::starting_at(max_line_bytes, 0)
    }

    /// A splitter for a stream read from `offset` on.
    pub fn starting_at(max_line_bytes: usize, offset: u64) -> LineSplitter {
        LineSplitter { pending: Vec::new(), max: max_line_bytes.max(4), start: offset }
    }

    /// Appends `chunk`, pushing every line it completes onto `out` with the offset past its end
    /// (past its `\n`).
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<(String, u64)>) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.pending.extend_from_slice(&chunk[..newline]);
            self.cut_long(out);
            let end = self.start + self.pending.len() as u64 + 1;
            out.push((String::from_utf8_lossy(&self.pending).into_owned(), end));
            self.pending.clear();
            self.start = end;
            chunk = &chunk[newline + 1..];
        }
        self.pending.extend_from_slice(chunk);
        self.cut_long(out);
    }

    /// The unterminated last line, if any, with the offset past it.
    pub fn finish(&mut self) -> Option<(String, u64)> {
        if self.pending.is_empty() {
            return None;
        }
        let end = self.start + self.pending.len() as u64;
        let line = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        self.start = end;
        Some((line, end))
    }

    fn cut_long(&mut self, out: &mut Vec<(String, u64)>) {
        while self.pending.len() > self.max {
            let mut cut = self.max;
            // Step back over at most 3 continuation bytes so a character is not split in two.
            while cut > self.max - 3 && self.pending[cut] & 0xC0 == 0x80 {
                cut -= 1;
            }
            self.start += cut as u64;
            out.push((String::from_utf8_lossy(&self.pending[..cut]).into_owned(), self.start));
            self.pending.drain(..cut);
        }
    }
}

/// The task a followed file belongs to.
#[derive(Debug)]
pub(crate) struct LogSource {
    pub task_id: String,
    pub allocation_id: String,
    pub container_id: String,
}

/// Follows `path` from byte `offset`, sending each line as a [`RuntimeEvent::Log`], until `done`
/// turns true (the task's group is gone): then reads to the end, sends the unterminated last line
/// too, and returns. Stops early only when the channel is closed.
pub(crate) async fn tail(
    path: PathBuf,
    offset: u64,
    stdtype: StdType,
    source: Arc<LogSource>,
    events: mpsc::Sender<RuntimeEvent>,
    mut done: watch::Receiver<bool>,
) {
    let mut file = match tokio::fs::File::open(&path).await {
        Ok(file) => file,
        Err(e) => {
            tracing::warn!("cannot read the {} of container {} ({}): {e}", stdtype.as_str(), source.container_id, path.display());
            return;
        }
    };
    if let Err(e) = file.seek(std::io::SeekFrom::Start(offset)).await {
        tracing::warn!("cannot resume the {} of container {} at byte {offset}: {e}", stdtype.as_str(), source.container_id);
        return;
    }
    let mut splitter = LineSplitter::starting_at(MAX_LINE_BYTES, offset);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut lines = Vec::new();
    let send = |(log, end): (String, u64)| {
        RuntimeEvent::Log(LogLine {
            task_id: source.task_id.clone(),
            allocation_id: source.allocation_id.clone(),
            container_id: source.container_id.clone(),
            timestamp: Utc::now(),
            stdtype,
            log,
            offset: Some(end),
        })
    };
    loop {
        // Whether the group was gone before this read: then an empty read is the real end.
        let finished = *done.borrow_and_update();
        let n = match file.read(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("reading the {} of container {}: {e}", stdtype.as_str(), source.container_id);
                0
            }
        };
        if n > 0 {
            splitter.push(&buf[..n], &mut lines);
            for line in lines.drain(..) {
                if events.send(send(line)).await.is_err() {
                    return;
                }
            }
            continue;
        }
        if finished {
            break;
        }
        tokio::select! {
            _ = done.changed() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
    if let Some(last) = splitter.finish() {
        let _ = events.send(send(last)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_tracked(chunks: &[&[u8]], max: usize, offset: u64) -> Vec<(String, u64)> {
        let mut splitter = LineSplitter::starting_at(max, offset);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        out.extend(splitter.finish());
        out
    }

    fn split(chunks: &[&[u8]], max: usize) -> Vec<String> {
        split_tracked(chunks, max, 0).into_iter().map(|(line, _)| line).collect()
    }

    #[test]
    fn every_line_carries_the_offset_past_its_end() {
        let lines = split_tracked(&[b"ab\ncd", b"\nef"], 100, 10);
        assert_eq!(lines, [("ab".to_string(), 13), ("cd".to_string(), 16), ("ef".to_string(), 18)]);
        // Pieces of a cut line end where the cut is; the newline belongs to the last piece.
        let pieces = split_tracked(&[b"abcdefghij\n"], 4, 0);
        assert_eq!(pieces, [("abcd".to_string(), 4), ("efgh".to_string(), 8), ("ij".to_string(), 11)]);
    }

    /// Tails `path` from `offset` until `until` lines arrived, then lets it finish.
    async fn tail_lines(path: &std::path::Path, offset: u64, append: &[u8], until: usize) -> Vec<(String, u64)> {
        let (tx, mut rx) = mpsc::channel(4);
        let (done_tx, done) = watch::channel(false);
        let source = Arc::new(LogSource { task_id: "t".into(), allocation_id: "a".into(), container_id: "c".into() });
        let tailer = tokio::spawn(tail(path.to_path_buf(), offset, StdType::Stdout, source, tx, done));
        let mut lines = Vec::new();
        let mut appended = false;
        while let Ok(Some(RuntimeEvent::Log(line))) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            lines.push((line.log, line.offset.unwrap()));
            if !appended {
                // Written while the tailer waits at the end of the file.
                let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                std::io::Write::write_all(&mut file, append).unwrap();
                appended = true;
            }
            if lines.len() == until {
                done_tx.send_replace(true);
            }
        }
        tailer.await.unwrap();
        lines
    }

    #[tokio::test]
    async fn the_tailer_follows_a_growing_file_and_resumes_at_an_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout");
        std::fs::write(&path, b"one\ntwo\n").unwrap();
        let lines = tail_lines(&path, 0, b"three\nfour", 3).await;
        // The unterminated last line is sent once the task is done.
        assert_eq!(lines, [("one".into(), 4), ("two".into(), 8), ("three".into(), 14), ("four".into(), 18)]);
        // After a restart, reading resumes past the last line sent: nothing twice, nothing lost.
        let lines = tail_lines(&path, 8, b"\nfive\n", 3).await;
        assert_eq!(lines, [("three".into(), 14), ("four".into(), 19), ("five".into(), 24)]);
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
