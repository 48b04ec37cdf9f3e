//! Allocation tokens: the credential a task's code uses to call the master
//! (`Grpc-Metadata-x-allocation-token: Bearer <token>`, env `DET_SESSION_TOKEN`). One is issued
//! when an allocation is created; it authenticates that allocation only, and stops working when
//! the allocation ends or its sessions are deleted.

use resolute_store::{AllocationRecord, NewAllocationSession, Store, StoreResult, TaskRecord, db_now};

use crate::auth::token;
use crate::error::{ApiError, ApiResult};

/// The allocation (and its task) behind a valid allocation token.
#[derive(Clone, Debug)]
pub struct AllocationPrincipal {
    pub session_id: i64,
    pub allocation: AllocationRecord,
    pub task: TaskRecord,
}

/// Creates a token for the allocation; only its hash is stored. The caller hands the token to the
/// task (as `DET_SESSION_TOKEN`) and never keeps it.
pub async fn issue_allocation_token(store: &dyn Store, allocation_id: &str) -> StoreResult<String> {
    let (token, token_hash) = token::new_token();
    store
        .create_allocation_session(NewAllocationSession { allocation_id: allocation_id.to_owned(), token_hash, created_at: db_now() })
        .await?;
    Ok(token)
}

/// The allocation a token belongs to, or 401.
pub async fn authenticate_allocation_token(store: &dyn Store, bearer: &str) -> ApiResult<AllocationPrincipal> {
    let found = store
        .allocation_session_by_token_hash(&token::token_hash(bearer))
        .await?
        .ok_or_else(|| ApiError::unauthenticated("invalid allocation token: it belongs to no running allocation"))?;
    if found.allocation.end_time.is_some() {
        return Err(ApiError::unauthenticated(format!(
            "allocation {} has ended; its token is no longer valid",
            found.allocation.allocation_id
        )));
    }
    Ok(AllocationPrincipal { session_id: found.session_id, allocation: found.allocation, task: found.task })
}
