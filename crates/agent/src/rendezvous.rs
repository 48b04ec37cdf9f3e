//! A task's `rendezvous.json`: where the processes of its allocation meet.
//!
//! The upstream harness reads it (`determined._info.RendezvousInfo`) for `container_addrs` (every
//! process's host, rank order), `container_rank` and `container_slot_counts`; the
//! `torch_distributed` launcher passes `container_addrs[0]` to `torch.distributed.run` as
//! `--master_addr` when there is more than one process, so that address must be one the other
//! agents reach. The master sends it in `StartTask::rendezvous` (it alone knows every placement);
//! without it (an older master) the task is alone on loopback. A gang's processes also get
//! `GLOO_SOCKET_IFNAME`/`NCCL_SOCKET_IFNAME` naming the interface of their own address, so the
//! collectives' sockets use it too.

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

/// The variables that make gloo and NCCL open their sockets on the interface that holds this
/// process's rendezvous address. Without them gloo binds to what the host name resolves to —
/// often loopback — and tells its peers on other hosts to dial that. Only for a gang (more than
/// one process) and only what the task's environment does not already set; empty when no local
/// interface has the address.
pub fn socket_interface_env(
    rendezvous: Option<&TaskRendezvous>,
    env: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let Some(r) = rendezvous.filter(|r| r.container_addrs.len() > 1) else { return Vec::new() };
    let Some(own) = usize::try_from(r.container_rank).ok().and_then(|rank| r.container_addrs.get(rank)) else { return Vec::new() };
    let Some(interface) = interface_of(own) else { return Vec::new() };
    ["GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"]
        .into_iter()
        .filter(|name| !env.contains_key(*name))
        .map(|name| (name.to_owned(), interface.clone()))
        .collect()
}

/// The name of the local interface that has `address`.
fn interface_of(address: &str) -> Option<String> {
    let wanted: std::net::IpAddr = address.parse().ok()?;
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        let sockaddr = ifa.address?;
        let ip = match (sockaddr.as_sockaddr_in(), sockaddr.as_sockaddr_in6()) {
            (Some(v4), _) => std::net::IpAddr::V4(v4.ip()),
            (None, Some(v6)) => std::net::IpAddr::V6(v6.ip()),
            _ => return None,
        };
        (ip == wanted).then_some(ifa.interface_name)
    })
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
    fn gang_processes_talk_on_the_interface_of_their_rendezvous_address() {
        let mut r = gang(0);
        r.container_addrs = vec!["127.0.0.1".into(), "10.0.0.2".into()];
        let env = rendezvous_env(&r, &[]);
        let lo = env.iter().find(|(k, _)| k == "GLOO_SOCKET_IFNAME").map(|(_, v)| v.clone()).expect("loopback has an interface");
        assert_eq!(env, vec![("GLOO_SOCKET_IFNAME".to_string(), lo.clone()), ("NCCL_SOCKET_IFNAME".to_string(), lo)]);
        // The user's own choice stands; a lone process and an address no interface has get nothing.
        assert_eq!(rendezvous_env(&r, &[("GLOO_SOCKET_IFNAME", "eth9")]).len(), 1);
        assert!(socket_interface_env(None, &Default::default()).is_empty());
        r.container_addrs = vec!["192.0.2.254".into(), "127.0.0.1".into()];
        assert!(rendezvous_env(&r, &[]).is_empty());
    }

    fn rendezvous_env(r: &TaskRendezvous, env: &[(&str, &str)]) -> Vec<(String, String)> {
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        socket_interface_env(Some(r), &env)
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
