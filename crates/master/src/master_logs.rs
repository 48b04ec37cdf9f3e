//! The master's own log, kept for `GET /api/v1/master/logs` (`det master logs [-f]`): a tracing
//! layer copies every event the master's subscriber lets through into a bounded in-memory ring
//! (the oldest lines fall out first), numbered from 0, and wakes followers.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{LazyLock, Mutex};

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines kept; older ones are dropped.
pub const CAPACITY: usize = 10_000;

/// One captured line.
#[derive(Clone, Debug, PartialEq)]
pub struct MasterLogLine {
    /// Position in the master's log since start-up (0-based; never reused).
    pub id: u64,
    pub time: DateTime<Utc>,
    pub level: Level,
    pub message: String,
}

/// The ring and the id of the next line (what followers wait on).
pub struct MasterLogRing {
    lines: Mutex<VecDeque<MasterLogLine>>,
    next_id: watch::Sender<u64>,
}

/// The process's ring: the subscriber (set up by `det master`) writes it, the handler reads it.
pub static MASTER_LOGS: LazyLock<MasterLogRing> = LazyLock::new(MasterLogRing::new);

impl MasterLogRing {
    pub fn new() -> Self {
        MasterLogRing { lines: Mutex::new(VecDeque::new()), next_id: watch::Sender::new(0) }
    }

    pub fn push(&self, level: Level, message: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let id = *self.next_id.borrow();
        if lines.len() == CAPACITY {
            lines.pop_front();
        }
        lines.push_back(MasterLogLine { id, time: Utc::now(), level, message });
        self.next_id.send_replace(id + 1);
    }

    /// Lines with `id >= from`, at most `limit`.
    pub fn since(&self, from: u64, limit: usize) -> Vec<MasterLogLine> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let first = lines.front().map_or(0, |l| l.id);
        let skip = usize::try_from(from.saturating_sub(first)).unwrap_or(usize::MAX);
        lines.iter().skip(skip).take(limit).cloned().collect()
    }

    /// The id the next line will get.
    pub fn next_id(&self) -> u64 {
        *self.next_id.borrow()
    }

    /// The id of the oldest line still kept.
    pub fn first_id(&self) -> u64 {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        lines.front().map_or_else(|| self.next_id(), |l| l.id)
    }

    /// A receiver that changes whenever a line is added.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.next_id.subscribe()
    }
}

impl Default for MasterLogRing {
    fn default() -> Self {
        Self::new()
    }
}

/// The layer that feeds [`MASTER_LOGS`]; add it to the master's subscriber.
pub fn layer<S: Subscriber>() -> impl Layer<S> {
    RingLayer
}

struct RingLayer;

impl<S: Subscriber> Layer<S> for RingLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut line = LineVisitor { message: String::new(), fields: String::new() };
        event.record(&mut line);
        let meta = event.metadata();
        let mut message = format!("{}: {}", meta.target(), line.message);
        message.push_str(&line.fields);
        MASTER_LOGS.push(*meta.level(), message);
    }
}

/// Formats an event as its message followed by ` key=value` for each other field.
struct LineVisitor {
    message: String,
    fields: String,
}

impl Visit for LineVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_lines_numbered_in_order() {
        let ring = MasterLogRing::new();
        for i in 0..CAPACITY + 5 {
            ring.push(Level::INFO, format!("line {i}"));
        }
        assert_eq!((ring.first_id(), ring.next_id()), (5, CAPACITY as u64 + 5));
        let all = ring.since(0, usize::MAX);
        assert_eq!(all.len(), CAPACITY);
        assert_eq!((all[0].id, all[0].message.as_str()), (5, "line 5"));
        let tail = ring.since(ring.next_id() - 2, 10);
        assert_eq!(tail.iter().map(|l| l.id).collect::<Vec<_>>(), [CAPACITY as u64 + 3, CAPACITY as u64 + 4]);
        assert!(ring.since(ring.next_id(), 10).is_empty());
    }

    #[test]
    fn the_layer_captures_messages_and_fields() {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(layer());
        let before = MASTER_LOGS.next_id();
        tracing::subscriber::with_default(subscriber, || tracing::warn!(trial = 7, "trial restarted"));
        let lines = MASTER_LOGS.since(before, 100);
        let line = lines.iter().find(|l| l.message.contains("trial restarted")).expect("captured");
        assert_eq!(line.level, Level::WARN);
        assert!(line.message.ends_with("trial restarted trial=7"), "{}", line.message);
    }
}
