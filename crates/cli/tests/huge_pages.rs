//! The master turns transparent huge pages off for itself (`src/memory.rs`). A test binary of its
//! own: the setting is process-wide, and `memory.rs`'s test reads this process's resident size.
#![cfg(target_os = "linux")]

use resolute_cli::memory;

#[test]
fn the_master_can_run_without_transparent_huge_pages() {
    // mimalloc asks for huge pages on its arenas; with them, one live block kept 2 MiB resident
    // and khugepaged refilled what the allocator had given back (bench/README.md, Soak).
    assert!(memory::disable_transparent_huge_pages(), "the kernel refused PR_SET_THP_DISABLE");
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    // `THP_enabled` is in /proc/PID/status since Linux 5.0.
    if let Some(enabled) = status.lines().find_map(|l| l.strip_prefix("THP_enabled:")) {
        assert_eq!(enabled.trim(), "0", "huge pages are still allowed for this process");
    }
}
