//! Giving the master's freed memory back to the OS, so its resident size follows its load.
//!
//! Why: under the soak (`bench/README.md`) the live heap stayed at 15–35 MB while the process's
//! anonymous memory grew steadily to 140 MB and stayed there after the load: the allocators
//! kept what had been freed. Two did. glibc's malloc, which SQLite allocates its page caches
//! from, gives an arena's free memory back only from its top (a `malloc_trim` dropped 37 MB).
//! mimalloc keeps a page whose blocks another thread freed (tokio moves tasks between workers)
//! until the page's own thread collects its heap, which an idle thread never does. So:
//! - mimalloc also serves `malloc` (its `override` feature): SQLite's memory is purged like the
//!   rest;
//! - each runtime worker collects its heap when it goes idle ([`collect_when_idle`], as the
//!   runtime's `on_thread_park`), at most once per [`COLLECT_INTERVAL`], so under load the cost
//!   is a collection a second per worker;
//! - so do the threads the store runs SQLite on (the metrics writer, the WAL checkpointer and
//!   sqlx's pooled connection threads), which are not runtime workers, through the store's thread
//!   hook (`resolute_store::set_thread_idle_hook`);
//! - the master runs without transparent huge pages ([`disable_transparent_huge_pages`]):
//!   mimalloc asks for them on its arenas (`MADV_HUGEPAGE`), so one live block kept a whole
//!   2 MiB page resident, and the kernel's khugepaged kept folding sparsely used 4 KiB pages
//!   back into 2 MiB ones (about 20 MiB of the idle master's heap was such padding).

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The shortest time between two collections of one thread's heap.
pub const COLLECT_INTERVAL: Duration = Duration::from_secs(1);

thread_local! {
    static LAST_COLLECTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Returns the calling thread's freed memory to the OS, unless it did so less than
/// [`COLLECT_INTERVAL`] ago. Returns whether it collected.
pub fn collect_when_idle() -> bool {
    let now = Instant::now();
    let due = LAST_COLLECTED.with(|last| {
        let due = last.get().is_none_or(|at| now.duration_since(at) >= COLLECT_INTERVAL);
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        collect();
    }
    due
}

/// Frees the calling thread's empty pages (including those other threads emptied) and purges
/// them from the process.
pub fn collect() {
    // SAFETY: `mi_collect` takes no pointers and only touches the calling thread's heap and
    // mimalloc's own (synchronised) arenas.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Turns transparent huge pages off for this process (`PR_SET_THP_DISABLE`: no huge page is
/// faulted in or assembled by khugepaged for any of its mappings from now on). Children inherit
/// the setting; the master starts none. Returns whether the kernel took it.
pub fn disable_transparent_huge_pages() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_thp_disable(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
