//! Tasks for `det task list` and readiness polls: open allocations with where they run (from the
//! cluster view), and one task with all its allocations.

use std::sync::Arc;

use resolute_store::{AllocationRecord, Store, StoreError, TaskFilter, TaskRecord, TaskWithAllocations};

use crate::cluster::{ClusterHandle, ContainerView, SlotView};
use crate::domain::TaskType;
use crate::error::ApiResult;

/// Upstream's default job priority under the priority scheduler.
pub const DEFAULT_PRIORITY: i32 = 42;

/// An allocation that has not ended, with what `det task list` shows about it.
#[derive(Clone, Debug)]
pub struct OpenAllocation {
    pub task: TaskRecord,
    pub allocation: AllocationRecord,
    /// `Trial 3 (Experiment 2)`, `Command (<task id>)`, …
    pub name: String,
    pub priority: i32,
    /// Its containers, each with the slots it holds.
    pub containers: Vec<(ContainerView, Vec<SlotView>)>,
}

/// Open tasks per interactive kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActiveTaskCounts {
    pub commands: i32,
    pub notebooks: i32,
    pub shells: i32,
    pub tensorboards: i32,
}

#[derive(Clone)]
pub struct TaskService {
    store: Arc<dyn Store>,
    cluster: ClusterHandle,
}

impl TaskService {
    pub fn new(store: Arc<dyn Store>, cluster: ClusterHandle) -> Self {
        TaskService { store, cluster }
    }

    /// Every allocation without an end time, of tasks without one.
    pub async fn open_allocations(&self) -> ApiResult<Vec<OpenAllocation>> {
        let tasks = self.store.list_tasks(&TaskFilter { task_type: None, open_only: true }).await?;
        let view = self.cluster.view();
        let mut out = Vec::new();
        for TaskWithAllocations { task, allocations } in tasks {
            let (name, priority) = self.describe(&task).await?;
            for allocation in allocations.into_iter().filter(|a| a.end_time.is_none()) {
                let containers = view
                    .containers_of(&allocation.allocation_id)
                    .into_iter()
                    .map(|c| {
                        let slots = view
                            .agents
                            .get(&c.agent_id)
                            .map(|agent| c.slot_ids.iter().filter_map(|id| agent.slots.get(id).cloned()).collect())
                            .unwrap_or_default();
                        (c, slots)
                    })
                    .collect();
                out.push(OpenAllocation { task: task.clone(), allocation, name: name.clone(), priority, containers });
            }
        }
        Ok(out)
    }

    /// 404 for an unknown task.
    pub async fn task(&self, task_id: &str) -> ApiResult<TaskWithAllocations> {
        Ok(self.store.task_by_id(task_id).await?)
    }

    pub async fn active_counts(&self) -> ApiResult<ActiveTaskCounts> {
        let tasks = self.store.list_tasks(&TaskFilter { task_type: None, open_only: true }).await?;
        let mut counts = ActiveTaskCounts::default();
        for t in tasks {
            match TaskType::parse(&t.task.task_type) {
                Some(TaskType::Command) => counts.commands += 1,
                Some(TaskType::Notebook) => counts.notebooks += 1,
                Some(TaskType::Shell) => counts.shells += 1,
                Some(TaskType::Tensorboard) => counts.tensorboards += 1,
                _ => {}
            }
        }
        Ok(counts)
    }

    /// A display name and priority: a trial's come from its experiment.
    async fn describe(&self, task: &TaskRecord) -> ApiResult<(String, i32)> {
        let kind = TaskType::parse(&task.task_type);
        if kind == Some(TaskType::Trial) {
            match self.store.trial_by_task_id(&task.task_id).await {
                Ok(trial) => {
                    let experiment = self.store.experiment_by_id(trial.experiment_id).await?;
                    let priority =
                        experiment.config["resources"]["priority"].as_i64().and_then(|p| i32::try_from(p).ok()).unwrap_or(DEFAULT_PRIORITY);
                    return Ok((format!("Trial {} (Experiment {})", trial.id, trial.experiment_id), priority));
                }
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let fallback = || (format!("{} ({})", kind.map_or("Task", TaskType::display_name), task.task_id), DEFAULT_PRIORITY);
        if kind.is_none_or(|k| k == TaskType::Trial) {
            return Ok(fallback());
        }
        // Upstream names a command-like task's allocation by its description, a generic task's
        // by its id.
        match self.store.command_task_by_id(&task.task_id).await {
            Ok(record) => {
                let name = if kind == Some(TaskType::Generic) { format!("Generic Task {}", task.task_id) } else { record.description };
                let priority = record
                    .priority
                    .or_else(|| record.config["resources"]["priority"].as_i64().and_then(|p| i32::try_from(p).ok()))
                    .unwrap_or(DEFAULT_PRIORITY);
                Ok((name, priority))
            }
            Err(StoreError::NotFound { .. }) => Ok(fallback()),
            Err(e) => Err(e.into()),
        }
    }
}
