//! A task's `rendezvous.json`: where the processes of its allocation meet.
//!
//! The upstream harness reads it (`determined._info.RendezvousInfo`) for `container_addrs` (every
//! process's host, rank order), `container_rank` and `container_slot_counts`; the
//! `torch_distributed` launcher passes `container_addrs[0]` to `torch.distributed.run` as
//! `--master_addr` when there is more than one process, so that address must be one the other
//! agents reach. The master sends it in `StartTask::rendezvous` (it alone knows every placement);
//! without it (an older master) the task is alone on loopback.

use resolute_api::agent_protocol::TaskRendezvous;
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RendezvousError {
    #[error("rendezvous.container_rank {rank} is not an index of container_addrs ({count} addresses)")]
    Rank { rank: u32, count: usize },
    #[error("rendezvous.container_slot_counts has {counts} entries for {count} container_addrs")]
    Counts { counts: usize, count: usize },
    #[error("rendezvous.container_slot_counts gives this process {said} slots, but it was assigned {assigned}")]
    Slots { said: u32, assigned: usize },
    #[error("rendezvous.container_addrs[{index}] is empty")]
    EmptyAddress { index: usize },
}

/// The `rendezvous.json` content for a process holding `slots` slots.
pub fn rendezvous_info(rendezvous: Option<&TaskRendezvous>, slots: usize) -> Result<Value, RendezvousError> {
    let Some(r) = rendezvous else {
        return Ok(json!({ "container_addrs": ["127.0.0.1"], "container_rank": 0, "container_slot_counts": [slots] }));
    };
    let count = r.container_addrs.len();
    let rank = usize::try_from(r.container_rank).unwrap_or(usize::MAX);
    if rank >= count {
        return Err(RendezvousError::Rank { rank: r.container_rank, count });
    }
    if r.container_slot_counts.len() != count {
        return Err(RendezvousError::Counts { counts: r.container_slot_counts.len(), count });
    }
    if let Some(index) = r.container_addrs.iter().position(|a| a.trim().is_empty()) {
        return Err(RendezvousError::EmptyAddress { index });
    }
    let said = r.container_slot_counts[rank];
    if usize::try_from(said).ok() != Some(slots) {
        return Err(RendezvousError::Slots { said, assigned: slots });
    }
    Ok(json!({
        "container_addrs": r.container_addrs,
        "container_rank": r.container_rank,
        "container_slot_counts": r.container_slot_counts,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gang(rank: u32) -> TaskRendezvous {
        TaskRendezvous {
            container_addrs: vec!["10.0.0.1".into(), "10.0.0.2".into()],
            container_rank: rank,
            container_slot_counts: vec![2, 2],
        }
    }

    #[test]
    fn a_lone_process_meets_itself_on_loopback() {
        assert_eq!(
            rendezvous_info(None, 3).unwrap(),
            json!({"container_addrs": ["127.0.0.1"], "container_rank": 0, "container_slot_counts": [3]})
        );
    }

    #[test]
    fn every_process_of_a_gang_gets_the_chiefs_address_first_and_its_own_rank() {
        let info = rendezvous_info(Some(&gang(1)), 2).unwrap();
        assert_eq!(info["container_addrs"], json!(["10.0.0.1", "10.0.0.2"]));
        assert_eq!(info["container_rank"], 1);
        assert_eq!(info["container_slot_counts"], json!([2, 2]));
    }

    #[test]
    fn an_inconsistent_rendezvous_is_refused_naming_the_field() {
        assert!(rendezvous_info(Some(&gang(2)), 2).unwrap_err().to_string().contains("container_rank 2"));
        assert!(rendezvous_info(Some(&gang(0)), 4).unwrap_err().to_string().contains("assigned 4"));
        let mut short = gang(0);
        short.container_slot_counts.pop();
        assert!(rendezvous_info(Some(&short), 2).unwrap_err().to_string().contains("container_slot_counts has 1"));
        let mut blank = gang(0);
        blank.container_addrs[1] = " ".into();
        assert!(rendezvous_info(Some(&blank), 2).unwrap_err().to_string().contains("container_addrs[1]"));
    }
}
