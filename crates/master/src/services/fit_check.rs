//! "Request unfulfillable": a request for more slots than its resource pool's agents have in all
//! is refused when it is made, instead of waiting forever (with no agent yet, it waits for one).
//! So is a request naming a resource pool master.yaml does not configure (400, with the pools).

use resolute_api::error::ErrorCode;

use crate::cluster::ClusterView;
use crate::config::ResourcePools;
use crate::error::{ApiError, ApiResult};

/// `what` names the request ("the task", "each trial").
pub fn check_fits(view: &ClusterView, pools: &ResourcePools, pool: &str, slots: u32, what: &str) -> ApiResult<()> {
    pools.check_exists("resources.resource_pool", pool).map_err(ApiError::invalid)?;
    if slots == 0 {
        return Ok(());
    }
    let pool = pools.resolve(pool, slots);
    let sizes: Vec<usize> = view.agents.values().filter(|a| a.resource_pool == pool).map(|a| a.slots.len()).collect();
    let Some(largest) = sizes.iter().max().copied() else { return Ok(()) };
    let total: usize = sizes.iter().sum();
    let wanted = slots as usize;
    if wanted <= total {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::FailedPrecondition,
        format!(
            "request unfulfillable: {what} needs {wanted} slots but resource pool {pool:?} has {total} in all across {} agent(s) (the largest has {largest})",
            sizes.len()
        ),
    ))
}
