//! Who may call the trial runtime endpoints. A task's allocation token is confined to its own
//! trial, task and allocation (a compromised trial cannot touch its neighbours); a user session
//! may read anything and change what the user owns (admins: everything), as upstream's basic
//! authorization does.

use resolute_store::{AllocationRecord, ExperimentRecord, StoreError, TaskRecord, TrialRecord};

use super::auth::Principal;
use super::trial_runtime::TrialRuntimeService;
use crate::auth::allocation_tokens::AllocationPrincipal;
use crate::error::{ApiError, ApiResult};

/// The authenticated caller of a runtime endpoint.
#[derive(Clone, Debug)]
pub enum RuntimeCaller {
    /// Code inside a task, by its allocation token.
    Task(AllocationPrincipal),
    /// A user session (the CLI, the SDK, or `DET_USER_TOKEN` inside a task).
    User(Principal),
}

/// Reading or changing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl RuntimeCaller {
    pub fn task(&self) -> Option<&AllocationPrincipal> {
        match self {
            RuntimeCaller::Task(t) => Some(t),
            RuntimeCaller::User(_) => None,
        }
    }
}

fn confined(what: &str, own: &str) -> ApiError {
    ApiError::forbidden(format!("an allocation token may only access its own {what} ({own}); use a user session for anything else"))
}

impl TrialRuntimeService {
    /// The caller's own trial (task callers only): 403 for tasks that are not trials.
    pub(crate) async fn own_trial(&self, task: &AllocationPrincipal) -> ApiResult<TrialRecord> {
        match self.store.trial_by_task_id(&task.task.task_id).await {
            Ok(trial) => Ok(trial),
            Err(StoreError::NotFound { .. }) => {
                Err(ApiError::forbidden(format!("task {} is not a trial; its allocation token cannot access trials", task.task.task_id)))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The trial, if the caller may read it (a task: only its own).
    pub async fn readable_trial(&self, caller: &RuntimeCaller, trial_id: i32) -> ApiResult<TrialRecord> {
        self.trial_for(caller, trial_id, Access::Read).await
    }

    /// The trial, if the caller may access it this way.
    pub(crate) async fn trial_for(&self, caller: &RuntimeCaller, trial_id: i32, access: Access) -> ApiResult<TrialRecord> {
        match caller {
            RuntimeCaller::Task(task) => {
                let own = self.own_trial(task).await?;
                if own.id != trial_id {
                    return Err(confined("trial", &format!("trial {}", own.id)));
                }
                Ok(own)
            }
            RuntimeCaller::User(user) => {
                let trial = self.store.trial_by_id(trial_id).await?;
                if access == Access::Write {
                    let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
                    ensure_owner(user, &experiment, &format!("change trial {trial_id}"))?;
                }
                Ok(trial)
            }
        }
    }

    /// The experiment, if the caller may read it (a task: only its own trial's).
    pub(crate) async fn experiment_for(&self, caller: &RuntimeCaller, experiment_id: i32) -> ApiResult<ExperimentRecord> {
        if let RuntimeCaller::Task(task) = caller {
            let own = self.own_trial(task).await?;
            if own.experiment_id != experiment_id {
                return Err(confined("experiment", &format!("experiment {}", own.experiment_id)));
            }
        }
        Ok(self.store.experiment_by_id(experiment_id).await?)
    }

    /// The task, if the caller may access it this way.
    pub(crate) async fn task_for(&self, caller: &RuntimeCaller, task_id: &str, access: Access) -> ApiResult<TaskRecord> {
        match caller {
            RuntimeCaller::Task(task) if task.task.task_id == task_id => Ok(task.task.clone()),
            RuntimeCaller::Task(task) => Err(confined("task", &task.task.task_id)),
            RuntimeCaller::User(user) => {
                let task = self.store.task_by_id(task_id).await?.task;
                if access == Access::Write {
                    self.ensure_task_owner(user, &task).await?;
                }
                Ok(task)
            }
        }
    }

    /// The allocation, if the caller may access it this way.
    pub(crate) async fn allocation_for(&self, caller: &RuntimeCaller, allocation_id: &str, access: Access) -> ApiResult<AllocationRecord> {
        match caller {
            RuntimeCaller::Task(task) if task.allocation.allocation_id == allocation_id => Ok(task.allocation.clone()),
            RuntimeCaller::Task(task) => Err(confined("allocation", &task.allocation.allocation_id)),
            RuntimeCaller::User(user) => {
                let allocation = self.store.allocation_by_id(allocation_id).await?;
                if access == Access::Write {
                    let task = self.store.task_by_id(&allocation.task_id).await?.task;
                    self.ensure_task_owner(user, &task).await?;
                }
                Ok(allocation)
            }
        }
    }

    /// A user may change a task they own: its owner, or for a trial its experiment's owner.
    async fn ensure_task_owner(&self, user: &Principal, task: &TaskRecord) -> ApiResult<()> {
        if user.user.admin || task.owner_id == Some(user.user.id) {
            return Ok(());
        }
        match self.store.trial_by_task_id(&task.task_id).await {
            Ok(trial) => {
                let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
                ensure_owner(user, &experiment, &format!("change task {}", task.task_id))
            }
            Err(StoreError::NotFound { .. }) => {
                Err(ApiError::forbidden(format!("only the owner or an admin can change task {}", task.task_id)))
            }
            Err(e) => Err(e.into()),
        }
    }
}

pub(crate) fn ensure_owner(user: &Principal, experiment: &ExperimentRecord, action: &str) -> ApiResult<()> {
    if user.user.admin || user.user.id == experiment.owner_id {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!("only the owner ({}) or an admin can {action}", experiment.owner_username)))
    }
}
