//! Memory that other threads freed goes back to the OS once the thread that allocated it
//! collects (`src/memory.rs`): what lets the master's resident size fall back after a load,
//! where tokio frees on one worker what another allocated. A test binary of its own, so no
//! other test allocates while it reads the process's resident size.
#![cfg(target_os = "linux")]

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use resolute_cli::memory;

/// `RssAnon` of this process (its heap), in KiB.
fn heap_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("RssAnon in /proc/self/status")
}

const BLOCKS: usize = 256 * 1024;
const BLOCK_BYTES: usize = 256;
const ALLOCATED_KIB: u64 = (BLOCKS * BLOCK_BYTES / 1024) as u64;

#[test]
fn memory_freed_by_another_thread_is_returned_when_its_owner_collects() {
    let before = heap_kib();
    let (blocks_out, blocks_in) = mpsc::channel::<Vec<Box<[u8]>>>();
    let (collect_out, collect_in) = mpsc::channel::<()>();
    let (collected_out, collected_in) = mpsc::channel::<()>();
    let owner = thread::spawn(move || {
        let blocks: Vec<Box<[u8]>> = (0..BLOCKS).map(|i| vec![i as u8; BLOCK_BYTES].into_boxed_slice()).collect();
        blocks_out.send(blocks).expect("the test thread is waiting");
        // Idle, as a runtime worker between requests, until told to collect.
        collect_in.recv().expect("the test thread asks");
        memory::collect();
        collected_out.send(()).expect("the test thread is waiting");
        // Stays alive until the test has measured: a thread's exit frees its heap anyway.
        let _ = collect_in.recv();
    });
    let blocks = blocks_in.recv_timeout(Duration::from_secs(60)).expect("the owner allocated");
    let loaded = heap_kib();
    assert!(
        loaded >= before + ALLOCATED_KIB / 2,
        "the {ALLOCATED_KIB} KiB allocated should be resident: {before} KiB before, {loaded} KiB after"
    );
    // Freed here, on another thread than the one that allocated them.
    drop(blocks);
    collect_out.send(()).expect("the owner is waiting");
    collected_in.recv_timeout(Duration::from_secs(60)).expect("the owner collected");
    let after = heap_kib();
    drop(collect_out);
    owner.join().expect("the owner thread");
    assert!(
        after <= before + ALLOCATED_KIB / 4,
        "after the owner collected, the heap should be back near its start: {before} KiB before, {loaded} KiB loaded, {after} KiB after"
    );
}

#[test]
fn an_idle_thread_collects_at_most_once_per_interval() {
    let collected = thread::spawn(|| (memory::collect_when_idle(), memory::collect_when_idle())).join().expect("the thread");
    assert_eq!(collected, (true, false), "the second park within {:?} must not collect again", memory::COLLECT_INTERVAL);
}
