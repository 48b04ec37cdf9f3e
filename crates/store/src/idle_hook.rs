//! What the store's own threads — SQLite's metrics writer and WAL checkpointer, which are not
//! async runtime workers — run when they go idle. The binary sets it once: the master gives the
//! memory such a thread freed back to the OS there (`cli/src/memory.rs`), since an allocator's
//! per-thread heap is only collected by its own thread. Nothing runs when it is not set.

use std::sync::OnceLock;

static HOOK: OnceLock<fn()> = OnceLock::new();

/// Sets the hook; false when one was already set (the first stays).
pub fn set_thread_idle_hook(hook: fn()) -> bool {
    HOOK.set(hook).is_ok()
}

/// Called by a store thread that has nothing to do right now.
pub(crate) fn thread_idle() {
    if let Some(hook) = HOOK.get() {
        hook();
    }
}
