//! SQLite's admission path for metric reports (`insert_metrics_if_current`), on a thread of its
//! own with its own rusqlite connection to the database file.
//!
//! Why not sqlx: sqlx-sqlite runs every statement as a round trip to its connection's worker
//! thread, and copies every bound value and every row; a batch of one report per trial paid
//! ~40 µs a report, most of it in those hops and copies. Here the whole transaction runs in
//! one synchronous call on the thread that owns the connection: one hop per batch.
//!
//! The statements and rules are the same as the sqlx path's (`metrics`), and the pure parts
//! (`metric_batch`) are shared; the conformance suite runs against this path (file-backed
//! SQLite) and the sqlx one (PostgreSQL). Writes of other connections are serialised with this
//! one by SQLite's write lock (`BEGIN IMMEDIATE`, busy timeout), as between pool connections.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use chrono::SecondsFormat;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};
use tokio::sync::oneshot;

use super::metric_batch::{LockedTrial, RowWrite, TrialTotals, admit, backfills, body_text, plan_rows, rollbacks};
use super::sqlite_checkpoint::Checkpointer;
use super::sqlite_idle_release::{IdleRelease, RELEASE_AFTER};
use super::summary_cache::SummaryCache;
use crate::error::{StoreError, StoreResult};
use crate::model_metrics::{CurrentMetricReport, MetricAdmission, NewMetricReport};

const LOCK_TRIALS: &str = "SELECT id, run_id, summary_metrics, total_batches, best_validation FROM trials WHERE id IN rarray(?1)";
const LIVE_SESSIONS: &str = "SELECT s.id FROM allocation_sessions s JOIN allocations a ON a.allocation_id = s.allocation_id \
     WHERE a.end_time IS NULL AND s.id IN rarray(?1)";
/// The stored live rows at one `(trial, group, steps)` (`metric_repeats`).
const REPEAT_CANDIDATES: &str = "SELECT trial_id, trial_run_id, metric_group, steps_completed, body FROM metrics \
     WHERE archived = FALSE AND trial_id = ?1 AND metric_group = ?2 AND steps_completed = ?3";
const INSERT: &str =
    "INSERT INTO metrics (trial_id, trial_run_id, metric_group, steps_completed, report_time, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const ARCHIVE: &str = "UPDATE metrics SET archived = TRUE WHERE archived = FALSE AND trial_id = ?1 AND metric_group = ?2 \
     AND trial_run_id < ?3 AND steps_completed > ?4";
const LIVE_METRICS: &str =
    "SELECT metric_group, steps_completed, body FROM metrics WHERE trial_id = ?1 AND archived = FALSE ORDER BY steps_completed, id";
const BACKFILL_CHECKPOINT_METRIC: &str =
    "UPDATE checkpoints SET searcher_metric = ?3 WHERE trial_id = ?1 AND steps_completed = ?2 AND searcher_metric IS NULL";
const SAVE_TRIAL: &str =
    "UPDATE trials SET summary_metrics = ?2, total_batches = ?3, best_validation = ?4, summary_pending = ?5 WHERE id = ?1";
/// Compare-and-set: only if the row still holds the text the cache's entry was made from.
const FLUSH_TRIAL: &str =
    "UPDATE trials SET summary_metrics = ?2, total_batches = ?3, summary_pending = FALSE WHERE id = ?1 AND summary_metrics = ?4";

/// WAL pages before this connection's own commit copies them back into the database file. The
/// checkpoint thread (`sqlite_checkpoint`) normally does it long before; this only bounds the
/// WAL should that thread fall behind. (SQLite's default, 1,000, which the pool's connections
/// keep, made ingestion checkpoint ~60 times a second on this thread.)
const WAL_AUTOCHECKPOINT_PAGES: i64 = 65_536;
const WAL_SIZE_LIMIT_BYTES: i64 = 64 * 1024 * 1024;

enum Job {
    Write { reports: Vec<CurrentMetricReport>, reply: oneshot::Sender<StoreResult<Vec<MetricAdmission>>> },
    Flush { force: bool, reply: oneshot::Sender<StoreResult<u64>> },
}

struct Envelope {
    /// The store's (shared with its readers).
    summaries: Arc<SummaryCache>,
    job: Job,
}

/// The store's handle on the writer thread; the thread ends when this is dropped.
pub(crate) struct SqliteMetricsWriter {
    jobs: mpsc::Sender<Envelope>,
    _checkpointer: Checkpointer,
}

impl SqliteMetricsWriter {
    /// Opens a connection to the (already migrated) database at `path` and starts the thread.
    pub(crate) fn start(path: &Path) -> StoreResult<SqliteMetricsWriter> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
        // A WAL that grew under sustained ingestion is cut back once a checkpoint resets it.
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)?;
        conn.set_prepared_statement_cache_capacity(32);
        rusqlite::vtab::array::load_module(&conn)?;
        let (jobs, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-metrics".into())
            .spawn(move || run(conn, receiver))
            .map_err(|e| StoreError::Io { context: "starting the SQLite metrics writer thread", source: e })?;
        Ok(SqliteMetricsWriter { jobs, _checkpointer: Checkpointer::start(path)? })
    }

    pub(crate) async fn write(&self, summaries: &Arc<SummaryCache>, reports: &[CurrentMetricReport]) -> StoreResult<Vec<MetricAdmission>> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Write { reports: reports.to_vec(), reply };
        self.jobs.send(Envelope { summaries: summaries.clone(), job }).map_err(|_| StoreError::WriterStopped)?;
        answer.await.map_err(|_| StoreError::WriterStopped)?
    }

    pub(crate) async fn flush(&self, summaries: &Arc<SummaryCache>, force: bool) -> StoreResult<u64> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Envelope { summaries: summaries.clone(), job: Job::Flush { force, reply } })
            .map_err(|_| StoreError::WriterStopped)?;
        answer.await.map_err(|_| StoreError::WriterStopped)?
    }
}

/// The next job, waiting for it when there is none; the thread's idle hook runs before it waits.
/// Should the wait outlast `idle`'s limit, `release` gives the connection's caches back
/// (`sqlite_idle_release`) and the hook runs again, to return what that freed.
fn next_job<T>(jobs: &mpsc::Receiver<T>, idle: &mut IdleRelease, release: impl FnOnce()) -> Option<T> {
    match jobs.try_recv() {
        Ok(job) => return Some(job),
        Err(TryRecvError::Disconnected) => return None,
        Err(TryRecvError::Empty) => {}
    }
    crate::idle_hook::thread_idle();
    if let Some(limit) = idle.wait_limit(Instant::now()) {
        match jobs.recv_timeout(limit) {
            Ok(job) => return Some(job),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {
                release();
                idle.released();
                crate::idle_hook::thread_idle();
            }
        }
    }
    jobs.recv().ok()
}

/// The most reports one merged transaction takes (see [`run`]).
const MAX_MERGED_REPORTS: usize = 4096;

/// Runs jobs in order. Write jobs queued while the thread was busy are merged into one
/// transaction: the thread goes straight from one commit to the next without waiting for its
/// caller to send more, and a commit's fixed cost is shared by more reports.
fn run(mut conn: Connection, jobs: mpsc::Receiver<Envelope>) {
    let mut next: Option<Envelope> = None;
    let mut idle = IdleRelease::new(RELEASE_AFTER);
    loop {
        let Some(Envelope { summaries, job }) =
            next.take().or_else(|| next_job(&jobs, &mut idle, || super::sqlite_idle_release::release(&conn)))
        else {
            return;
        };
        // The caller may have gone away; what committed stays committed.
        match job {
            Job::Write { mut reports, reply } => {
                let mut replies = vec![(reply, 0..reports.len())];
                while reports.len() < MAX_MERGED_REPORTS {
                    match jobs.try_recv() {
                        Ok(Envelope { job: Job::Write { reports: more, reply }, .. }) => {
                            replies.push((reply, reports.len()..reports.len() + more.len()));
                            reports.extend(more);
                        }
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                write_merged(&mut conn, &summaries, &reports, replies);
                idle.used();
            }
            Job::Flush { force, reply } => {
                let (written, touched) = flush(&mut conn, &summaries, force);
                if touched {
                    idle.used();
                }
                let _ = reply.send(written);
            }
        }
    }
}

type WriteReply = oneshot::Sender<StoreResult<Vec<MetricAdmission>>>;

/// Writes merged jobs in one transaction and answers each with its share. Should that fail,
/// each job is tried alone, so it gets its own outcome and error.
fn write_merged(
    conn: &mut Connection,
    summaries: &SummaryCache,
    reports: &[CurrentMetricReport],
    replies: Vec<(WriteReply, std::ops::Range<usize>)>,
) {
    if replies.len() > 1
        && let Ok(admissions) = write_batch(conn, summaries, reports)
    {
        // One admission per report, in order (`admit`).
        let mut admissions = admissions.into_iter();
        for (reply, range) in replies {
            let _ = reply.send(Ok(admissions.by_ref().take(range.len()).collect()));
        }
        return;
    }
    for (reply, range) in replies {
        let _ = reply.send(write_batch(conn, summaries, &reports[range]));
    }
}

/// Writes the rows of trials that stopped reporting (see `summary_cache`); says whether it used
/// the connection (most ticks find nothing due).
fn flush(conn: &mut Connection, summaries: &SummaryCache, force: bool) -> (StoreResult<u64>, bool) {
    let due = summaries.due(Instant::now(), force);
    if due.is_empty() {
        return (Ok(0), false);
    }
    let ids: Vec<i32> = due.iter().map(|d| d.trial_id).collect();
    let written = (|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut written = Vec::with_capacity(due.len());
        {
            let mut statement = tx.prepare_cached(FLUSH_TRIAL)?;
            for d in &due {
                written.push(statement.execute(params![d.trial_id, d.summary_text, d.total_batches, d.row_text])? > 0);
            }
        }
        tx.commit()?;
        Ok::<_, StoreError>(written)
    })();
    let result = match written {
        Ok(written) => {
            let now = Instant::now();
            let count = written.iter().filter(|w| **w).count() as u64;
            for (row, written) in due.into_iter().zip(written) {
                summaries.flushed(row, written, now);
            }
            Ok(count)
        }
        Err(e) => {
            summaries.release(ids);
            Err(e)
        }
    };
    (result, true)
}

/// One transaction for the batch, with the sqlx path's rules: lock (read) the trials, check the
/// sessions, insert the admitted reports, archive what a restarted run supersedes, save the
/// trials' totals (or leave rows behind, see `summary_cache`).
fn write_batch(conn: &mut Connection, summaries: &SummaryCache, batch: &[CurrentMetricReport]) -> StoreResult<Vec<MetricAdmission>> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let mut checked_out = summaries.check_outs();
    let now = Instant::now();
    let reports: Vec<&NewMetricReport> = batch.iter().map(|r| &r.report).collect();
    let sessions: Vec<Option<i64>> = batch.iter().map(|r| r.allocation_session_id).collect();
    let trial_ids: BTreeSet<i32> = reports.iter().map(|r| r.trial_id).collect();
    let session_ids: BTreeSet<i64> = sessions.iter().flatten().copied().collect();

    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut trials: BTreeMap<i32, LockedTrial> = BTreeMap::new();
    {
        let ids: Rc<Vec<SqlValue>> = Rc::new(trial_ids.iter().map(|&id| SqlValue::Integer(id.into())).collect());
        let mut statement = tx.prepare_cached(LOCK_TRIALS)?;
        let mut found = statement.query([ids])?;
        while let Some(row) = found.next()? {
            let id: i32 = row.get(0)?;
            let text = row
                .get_ref(2)?
                .as_str()
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, e.into()))?;
            let cached = summaries.check_out(id, text, now);
            if cached.is_some() {
                checked_out.push(id);
            }
            let locked = LockedTrial {
                run_id: row.get(1)?,
                row_text: text.to_owned(),
                total_batches: row.get(3)?,
                best_validation: row.get(4)?,
                cached,
            };
            trials.insert(id, locked);
        }
    }
    let mut live_sessions = BTreeSet::new();
    if !session_ids.is_empty() {
        let ids: Rc<Vec<SqlValue>> = Rc::new(session_ids.iter().map(|&id| SqlValue::Integer(id)).collect());
        let mut statement = tx.prepare_cached(LIVE_SESSIONS)?;
        let mut rows = statement.query([ids])?;
        while let Some(row) = rows.next()? {
            live_sessions.insert(row.get::<_, i64>(0)?);
        }
    }
    let mut admissions = admit(&reports, Some(&sessions), &trials, &live_sessions)?;
    // Exactly once (`metric_repeats`): a retried report is not stored twice.
    let lookups = super::metric_repeats::lookups(&reports, &admissions);
    let mut stored = std::collections::HashSet::new();
    {
        // One cached statement run per triple (direct calls on this thread): a statement text
        // per batch size would churn the connection's statement cache, and with it the heap.
        let mut statement = tx.prepare_cached(REPEAT_CANDIDATES)?;
        for (trial_id, group, steps) in &lookups {
            let mut rows = statement.query(rusqlite::params![trial_id, group, steps])?;
            while let Some(row) = rows.next()? {
                stored.insert((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?));
            }
        }
    }
    super::metric_repeats::mark_repeats(&reports, &mut admissions, stored)?;
    let accepted: Vec<&NewMetricReport> =
        reports.iter().zip(&admissions).filter(|(_, a)| **a == MetricAdmission::Stored).map(|(r, _)| *r).collect();
    if accepted.is_empty() {
        tx.rollback()?;
        return Ok(admissions);
    }

    {
        let mut insert = tx.prepare_cached(INSERT)?;
        for r in &accepted {
            let time = r.report_time.to_rfc3339_opts(SecondsFormat::AutoSi, false);
            insert.execute(params![r.trial_id, r.trial_run_id, r.group, r.steps_completed, time, body_text(r)?])?;
        }
    }
    // After the insert, so a batch that mixes runs also archives its own superseded rows. Runs
    // start at 1, and admitted reports are of their trial's current run: a report of run 1
    // has no earlier run to roll back.
    let mut stale = BTreeSet::new();
    {
        let mut archive = tx.prepare_cached(ARCHIVE)?;
        for ((trial_id, group, run_id), steps) in rollbacks(&accepted) {
            if run_id > 1 && archive.execute(params![trial_id, group, run_id, steps])? > 0 {
                stale.insert(trial_id);
            }
        }
    }
    let (writes, deferred) = plan_rows(&accepted, &trials, &stale, summaries)?;
    let mut written: Vec<(i32, TrialTotals, String)> = Vec::with_capacity(writes.len());
    {
        let mut backfill = tx.prepare_cached(BACKFILL_CHECKPOINT_METRIC)?;
        let mut save = tx.prepare_cached(SAVE_TRIAL)?;
        for RowWrite { id, own, recomputed, totals: mut t } in writes {
            if recomputed {
                let mut live_rows = tx.prepare_cached(LIVE_METRICS)?;
                let live = live_rows
                    .query_map([id], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?, row.get::<_, String>(2)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                t.recompute(live)?;
            }
            t.apply(&own, recomputed);
            for (steps, value) in backfills(&own) {
                backfill.execute(params![id, steps, value])?;
            }
            let text = t.summary.to_string();
            save.execute(params![id, text, t.total_batches, t.best_validation, summaries.defers()])?;
            written.push((id, t, text));
        }
    }
    tx.commit()?;
    checked_out.commit(written, &deferred, now);
    Ok(admissions)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::next_job;
    use crate::sql::sqlite_idle_release::IdleRelease;

    /// The hook's runs on the test's own thread (other tests' store threads run it too).
    static IDLE_CALLS: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        static COUNTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Sends `job` once the thread's idle hook has run `calls` times in all.
    fn send_after_idle(jobs: mpsc::Sender<u32>, calls: usize, job: u32) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while IDLE_CALLS.load(Ordering::SeqCst) < calls && Instant::now() < deadline {
                std::thread::yield_now();
            }
            jobs.send(job).unwrap();
        })
    }

    // One test: the hook and its count are the process's.
    #[test]
    fn the_writer_goes_idle_before_it_waits_and_gives_its_caches_back_after_a_spell() {
        crate::idle_hook::set_thread_idle_hook(|| {
            if COUNTED.get() {
                IDLE_CALLS.fetch_add(1, Ordering::SeqCst);
            }
        });
        COUNTED.set(true);
        let releases = AtomicUsize::new(0);
        let release = || {
            releases.fetch_add(1, Ordering::SeqCst);
        };
        let mut idle = IdleRelease::new(Duration::from_millis(200));
        let (jobs, receiver) = mpsc::channel();
        jobs.send(1).unwrap();
        assert_eq!(next_job(&receiver, &mut idle, release), Some(1));
        assert_eq!(IDLE_CALLS.load(Ordering::SeqCst), 0, "a queued job is taken without going idle");

        let sender = send_after_idle(jobs.clone(), 1, 2);
        assert_eq!(next_job(&receiver, &mut idle, release), Some(2));
        assert_eq!(IDLE_CALLS.load(Ordering::SeqCst), 1, "the hook ran once, before waiting");
        assert_eq!(releases.load(Ordering::SeqCst), 0, "nothing used: nothing to give back");
        sender.join().unwrap();

        // Used, then a job within the limit: no release.
        idle.used();
        let sender = send_after_idle(jobs.clone(), 2, 3);
        assert_eq!(next_job(&receiver, &mut idle, release), Some(3));
        sender.join().unwrap();
        assert_eq!(releases.load(Ordering::SeqCst), 0, "a job came before the limit");

        // Used, then idle past the limit: released once, the hook runs again after it.
        idle.used();
        let sender = send_after_idle(jobs.clone(), 4, 4);
        let started = Instant::now();
        assert_eq!(next_job(&receiver, &mut idle, release), Some(4));
        sender.join().unwrap();
        assert_eq!(releases.load(Ordering::SeqCst), 1, "given back once after the limit");
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(IDLE_CALLS.load(Ordering::SeqCst), 4, "the hook ran before waiting and after the release");

        drop(jobs);
        assert_eq!(next_job(&receiver, &mut idle, release), None, "a closed queue ends the thread");
        assert_eq!(releases.load(Ordering::SeqCst), 1, "released until used again");
    }
}
