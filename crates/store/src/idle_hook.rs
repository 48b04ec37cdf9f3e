//! What the threads the store runs SQLite on — its metrics writer and WAL checkpointer, and
//! sqlx's pooled connection threads (`sql/sqlite_worker_hook.rs`), none of them async runtime
//! workers — run now and then: the writer and checkpointer when they go idle, a connection
//! thread every few thousand instructions of a statement. The binary sets it once: the master
//! gives the memory such a thread freed back to the OS there (`cli/src/memory.rs`, at most once a
//! second per thread), since an allocator's per-thread heap is only collected by its own thread.
//! Nothing runs when it is not set.

use std::sync::OnceLock;

static HOOK: OnceLock<fn()> = OnceLock::new();

/// Sets the hook; false when one was already set (the first stays).
pub fn set_thread_idle_hook(hook: fn()) -> bool {
    HOOK.set(hook).is_ok()
}

/// Called by a store thread that has nothing to do right now, or by a connection thread
/// between two steps of a statement.
pub(crate) fn thread_idle() {
    if let Some(hook) = HOOK.get() {
        hook();
    }
}
