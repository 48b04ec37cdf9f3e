//! Gangs: an allocation placed on several agents runs one process per placement, started
//! together and treated as one.
//!
//! Pure decisions for the loop and the agent resource manager: the rendezvous each process gets
//! (every process's host in placement order, rank 0 the chief, so every rank dials the chief's
//! real address), when the death of one process ends the others (upstream: one container of
//! a multi-container allocation exiting non-zero kills the rest, and the trial restarts), and
//! whether the processes a restarted master re-adopted make the whole gang (a part of one never
//! goes on alone: its peers are gone, so it ends whole and the trial resumes from a checkpoint).

use resolute_api::agent_protocol::{TaskExitInfo, TaskRendezvous};

use super::Placement;

/// The rendezvous of each placement's process, in placement (rank) order; `hosts[i]` is where the
/// other agents reach placement `i`'s agent.
pub fn rendezvous(placements: &[Placement], hosts: &[String]) -> Vec<TaskRendezvous> {
    let counts: Vec<u32> = placements.iter().map(|p| u32::try_from(p.slot_ids.len()).unwrap_or(u32::MAX)).collect();
    (0..placements.len())
        .map(|rank| TaskRendezvous {
            container_addrs: hosts.to_vec(),
            container_rank: u32::try_from(rank).unwrap_or(u32::MAX),
            container_slot_counts: counts.clone(),
        })
        .collect()
}

/// Whether a process's exit ends the rest of its allocation: it failed (not exit 0) while others
/// still run. A process that finished cleanly leaves its peers to finish too.
pub fn exit_ends_gang(exit: &TaskExitInfo, exited: usize, started: usize) -> bool {
    exited < started && exit.exit_code != Some(0)
}

/// Whether the processes re-adopted after a master restart (`adopted`: the slots each holds) are
/// the whole allocation of `requested` slots. A zero-slot (aux) allocation is one process.
pub fn reattached_in_full(requested: u32, adopted: &[u32]) -> bool {
    if requested == 0 {
        return !adopted.is_empty();
    }
    adopted.iter().fold(0u32, |sum, slots| sum.saturating_add(*slots)) >= requested
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(node: &str, slots: &[u32]) -> Placement {
        Placement { node: node.into(), slot_ids: slots.to_vec(), device_type: "cpu".into() }
    }

    #[test]
    fn every_rank_gets_all_addresses_in_placement_order_and_its_own_rank() {
        let placements = [placement("a", &[0, 1]), placement("b", &[2, 3])];
        let hosts = ["10.0.0.1".to_string(), "10.0.0.2".to_string()];
        let r = rendezvous(&placements, &hosts);
        assert_eq!(r.len(), 2);
        for (rank, info) in r.iter().enumerate() {
            assert_eq!(info.container_addrs, hosts, "rank {rank} dials the chief at 10.0.0.1");
            assert_eq!(info.container_rank as usize, rank);
            assert_eq!(info.container_slot_counts, vec![2, 2]);
        }
    }

    #[test]
    fn a_failed_process_ends_its_running_peers_a_clean_one_does_not() {
        let failed = TaskExitInfo { exit_code: Some(1), signal: None, failure: Some("boom".into()) };
        let lost = TaskExitInfo { exit_code: None, signal: None, failure: Some("agent lost".into()) };
        let clean = TaskExitInfo { exit_code: Some(0), signal: None, failure: None };
        assert!(exit_ends_gang(&failed, 1, 2));
        assert!(exit_ends_gang(&lost, 1, 3));
        assert!(!exit_ends_gang(&clean, 1, 2));
        assert!(!exit_ends_gang(&failed, 2, 2), "the last one leaves nobody to stop");
    }

    #[test]
    fn a_gang_is_reattached_in_full_only_when_every_slot_came_back() {
        assert!(reattached_in_full(4, &[2, 2]), "both agents' processes");
        assert!(!reattached_in_full(4, &[2]), "one agent of two came back");
        assert!(!reattached_in_full(4, &[]));
        assert!(reattached_in_full(2, &[2]), "a one-agent allocation with one process");
        assert!(reattached_in_full(0, &[0]), "an aux task's one process");
        assert!(!reattached_in_full(0, &[]));
        assert!(reattached_in_full(u32::MAX, &[u32::MAX, 1]), "no overflow");
    }
}
