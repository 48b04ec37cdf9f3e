//! A work-dir archive arriving in pieces: the `StartTask` that announced it waits here while its
//! `TaskArchiveChunk`s come in, checked for order and size, until the last one completes it.

use base64::Engine as _;
use resolute_api::agent_protocol::{ArchiveStream, StartTask, TaskArchiveChunk};

/// A start waiting for its archive.
#[derive(Debug)]
pub(crate) struct PendingArchive {
    pub start: StartTask,
    stream: ArchiveStream,
    next_seq: u32,
    data: Vec<u8>,
}

/// What a chunk did to its archive.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    Incomplete,
    Complete,
}

impl PendingArchive {
    pub fn new(start: StartTask, stream: ArchiveStream) -> PendingArchive {
        PendingArchive { start, stream, next_seq: 0, data: Vec::new() }
    }

    /// Adds the next piece; `Err` is why the start fails (the message the master sees).
    pub fn accept(&mut self, chunk: TaskArchiveChunk) -> Result<Progress, String> {
        if chunk.seq != self.next_seq {
            return Err(format!("work dir archive piece {} arrived where piece {} was expected", chunk.seq, self.next_seq));
        }
        let piece = base64::engine::general_purpose::STANDARD
            .decode(chunk.data_b64.trim())
            .map_err(|e| format!("work dir archive piece {} is not valid base64: {e}", chunk.seq))?;
        if self.data.len() as u64 + piece.len() as u64 > self.stream.bytes {
            return Err(format!("the work dir archive is larger than the {} bytes announced", self.stream.bytes));
        }
        self.data.extend_from_slice(&piece);
        self.next_seq += 1;
        if !chunk.last {
            return Ok(Progress::Incomplete);
        }
        if self.next_seq != self.stream.chunks || self.data.len() as u64 != self.stream.bytes {
            return Err(format!(
                "the work dir archive ended after {} piece(s) and {} bytes; {} piece(s) and {} bytes were announced",
                self.next_seq,
                self.data.len(),
                self.stream.chunks,
                self.stream.bytes
            ));
        }
        Ok(Progress::Complete)
    }

    /// The complete archive.
    pub fn into_parts(self) -> (StartTask, Vec<u8>) {
        (self.start, self.data)
    }

    /// Why this start fails when the connection carrying its archive is lost.
    pub fn interrupted(&self, why: &str) -> String {
        format!("{why} while its work dir archive was arriving ({} of {} bytes received)", self.data.len(), self.stream.bytes)
    }
}

#[cfg(test)]
mod tests {
    use resolute_api::agent_protocol::{MasterToAgent, TaskEntrypoint, archive_chunks};

    use super::*;

    fn start() -> StartTask {
        StartTask {
            container_id: "c".into(),
            task_id: "t".into(),
            allocation_id: "t.1".into(),
            task_type: "COMMAND".into(),
            description: String::new(),
            slot_ids: vec![],
            entrypoint: TaskEntrypoint::Shell("true".into()),
            env: Default::default(),
            work_dir_archive_b64: None,
            work_dir_archive_stream: None,
            python: None,
            port_env: vec![],
            ready_pattern: None,
            files: vec![],
            harness_info: Default::default(),
            run_as: None,
            task_dirs: vec![],
            rendezvous: None,
        }
    }

    fn pieces(archive: &[u8]) -> (ArchiveStream, Vec<TaskArchiveChunk>) {
        let (stream, messages) = archive_chunks("c", &base64::engine::general_purpose::STANDARD.encode(archive));
        let chunks = messages
            .into_iter()
            .map(|m| match m {
                MasterToAgent::TaskArchiveChunk(c) => c,
                other => panic!("{other:?}"),
            })
            .collect();
        (stream, chunks)
    }

    #[test]
    fn pieces_in_order_rebuild_the_archive() {
        let archive: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
        let (stream, chunks) = pieces(&archive);
        assert!(chunks.len() >= 3);
        let mut pending = PendingArchive::new(start(), stream);
        let count = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let want = if i + 1 == count { Progress::Complete } else { Progress::Incomplete };
            assert_eq!(pending.accept(chunk).unwrap(), want);
        }
        assert_eq!(pending.into_parts().1, archive);
    }

    #[test]
    fn gaps_overruns_and_short_archives_fail_the_start() {
        let archive = vec![7u8; 1_000_000];
        let (stream, chunks) = pieces(&archive);
        let mut pending = PendingArchive::new(start(), stream.clone());
        let err = pending.accept(chunks[1].clone()).unwrap_err();
        assert!(err.contains("piece 1 arrived where piece 0 was expected"), "{err}");

        let mut pending = PendingArchive::new(start(), ArchiveStream { bytes: 10, chunks: 1 });
        assert!(pending.accept(chunks[0].clone()).unwrap_err().contains("larger than the 10 bytes announced"));

        let mut pending = PendingArchive::new(start(), stream);
        let mut first = chunks[0].clone();
        first.last = true;
        let err = pending.accept(first).unwrap_err();
        assert!(err.contains("ended after 1 piece(s)"), "{err}");
        assert!(pending.interrupted("the connection was lost").contains("of 1000000 bytes received"));
    }
}
