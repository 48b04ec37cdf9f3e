//! The agent resource manager's resource pools as master.yaml configures them: one scheduler per
//! pool with that pool's policy, where a request without a pool goes (the default compute pool,
//! or the default aux pool for zero slots) and with what priority (the pool's default), and
//! whether an agent may join the pool it names (upstream refuses an unknown pool).

use std::collections::BTreeMap;

use resolute_scheduler::{AllocationRequest, LogicalTime, Scheduler};

use super::ResourceRequest;
use crate::config::ResourcePools;

/// One scheduler per configured pool, each with its pool's settings.
pub(super) fn schedulers(pools: &ResourcePools) -> BTreeMap<String, Scheduler> {
    pools.pools.iter().map(|p| (p.name.clone(), Scheduler::new(p.name.clone(), p.scheduler))).collect()
}

/// The pool an agent joins: the one it names (the default compute pool when it names none), or
/// why it may not join.
pub(super) fn agent_pool(pools: &ResourcePools, agent_id: &str, named: &str) -> Result<String, String> {
    let pool = pools.resolve(named, 1);
    if pools.get(pool).is_some() {
        return Ok(pool.to_owned());
    }
    Err(format!(
        "agent {agent_id:?} names resource pool {pool:?}, which the master does not have; the resource pools are: {} \
         (set the agent's resource_pool / --resource-pool to one of them)",
        pools.names().join(", ")
    ))
}

/// The scheduler's request for `r`: its pool resolved, and its priority defaulted to the pool's.
pub(super) fn allocation_request(pools: &ResourcePools, r: &ResourceRequest, now: LogicalTime) -> AllocationRequest {
    let pool = pools.resolve(&r.pool, r.slots);
    let priority = r.priority.unwrap_or_else(|| pools.get(pool).map_or(resolute_scheduler::DEFAULT_PRIORITY, |p| p.default_priority));
    AllocationRequest::new(r.allocation_id.as_str(), r.task_id.as_str(), r.job_id.as_str(), pool, r.slots, now)
        .with_priority(priority)
        .with_weight(r.weight)
        .with_max_slots(r.max_slots)
        .with_preemptible(r.preemptible)
        .excluding(r.excluded_nodes.iter().map(|n| resolute_scheduler::AgentId::new(n.as_str())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pools() -> ResourcePools {
        let tree = json!({
            "resource_manager": {"default_compute_resource_pool": "gpu", "default_aux_resource_pool": "cpu"},
            "resource_pools": [
                {"pool_name": "gpu", "scheduler": {"type": "priority", "preemption": true, "default_priority": 60}},
                {"pool_name": "cpu", "scheduler": {"type": "fair_share", "fitting_policy": "worst"}},
            ],
        });
        ResourcePools::from_tree(&tree).unwrap().0
    }

    fn request(pool: &str, slots: u32, priority: Option<u32>) -> ResourceRequest {
        ResourceRequest {
            allocation_id: "t.1".into(),
            task_id: "t".into(),
            job_id: "j".into(),
            pool: pool.into(),
            slots,
            priority,
            weight: 1.0,
            max_slots: Some(3),
            preemptible: true,
            excluded_nodes: vec![],
        }
    }

    #[test]
    fn each_pool_gets_its_own_scheduler_config() {
        let schedulers = schedulers(&pools());
        assert_eq!(schedulers.keys().collect::<Vec<_>>(), ["cpu", "gpu"]);
        assert!(schedulers["gpu"].config().policy.preemption());
        assert_eq!(schedulers["cpu"].config().policy.name(), "fair_share");
        assert_eq!(schedulers["cpu"].config().fitting_policy.to_string(), "worst");
    }

    #[test]
    fn requests_without_a_pool_or_priority_get_the_defaults() {
        let pools = pools();
        let r = allocation_request(&pools, &request("", 2, None), LogicalTime(1));
        assert_eq!((r.resource_pool.as_str(), r.priority), ("gpu", 60), "compute pool and its default priority");
        assert_eq!(r.max_slots, Some(3));
        let r = allocation_request(&pools, &request("", 0, Some(5)), LogicalTime(1));
        assert_eq!((r.resource_pool.as_str(), r.priority), ("cpu", 5), "zero slots go to the aux pool");
        let r = allocation_request(&pools, &request("cpu", 1, None), LogicalTime(1));
        assert_eq!((r.resource_pool.as_str(), r.priority), ("cpu", 42));
    }

    #[test]
    fn agents_naming_an_unknown_pool_are_refused_with_the_pools_that_exist() {
        let pools = pools();
        assert_eq!(agent_pool(&pools, "a", "cpu").unwrap(), "cpu");
        assert_eq!(agent_pool(&pools, "a", "").unwrap(), "gpu");
        let err = agent_pool(&pools, "a", "default").unwrap_err();
        assert!(err.contains("\"default\"") && err.contains("the resource pools are: gpu, cpu"), "{err}");
    }
}
