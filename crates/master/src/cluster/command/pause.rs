//! Pausing generic tasks, as upstream's master does: a pause stops the task's process but leaves
//! the task open (`STOPPING_PAUSED`, then `PAUSED` once the process is gone); an unpause queues a
//! new allocation (`<task>.<n+1>`) with the same config and context. A kill ends a paused task at
//! once; a master restart keeps it paused.

use resolute_store::CommandTaskRecord;

use crate::cluster::orchestrator::{LoopResult, Orchestrator};
use crate::domain::generic_task::{GenericTaskState, set_state};

const PAUSED_LINE: &str = "allocation was paused by a user";

impl Orchestrator {
    /// A user paused the task: a running process is stopped, a queued request withdrawn.
    pub(in crate::cluster) async fn pause_task(&mut self, task_id: &str) -> LoopResult<()> {
        let Some(run) = self.commands.get_mut(task_id) else { return Ok(()) };
        if run.killed || run.pausing {
            return Ok(());
        }
        run.pausing = true;
        let allocation = run.allocation.clone();
        self.store_pause_state(task_id, GenericTaskState::StoppingPaused).await?;
        match allocation {
            Some(a) if self.is_started(&a) => {
                self.kill_allocation(&a);
                Ok(())
            }
            queued => {
                if let Some(a) = &queued {
                    self.drop_queued_allocation(a).await?;
                }
                self.command_paused(task_id, queued.as_deref()).await
            }
        }
    }

    /// The paused task's process is gone: it stays open, paused.
    pub(super) async fn command_paused(&mut self, task_id: &str, allocation_id: Option<&str>) -> LoopResult<()> {
        let Some(run) = self.commands.remove(task_id) else { return Ok(()) };
        if run.service.proxy.is_some() {
            self.hooks.service_gone(task_id);
        }
        let line = format!("{} was paused: {PAUSED_LINE}", run.config.description);
        self.master_log_line(task_id, allocation_id, &line).await?;
        tracing::info!(task = task_id, "task paused");
        self.store_pause_state(task_id, GenericTaskState::Paused).await
    }

    /// A user unpaused the task: it runs again from its stored config and context.
    pub(in crate::cluster) async fn unpause_task(&mut self, task_id: &str) -> LoopResult<()> {
        if self.commands.contains_key(task_id) {
            return Ok(());
        }
        let record = self.store.command_task_by_id(task_id).await?;
        if record.end_time.is_some() || GenericTaskState::of(&record.extra, None) != GenericTaskState::Paused {
            return Ok(());
        }
        self.store_pause_state(task_id, GenericTaskState::Active).await?;
        tracing::info!(task = task_id, "task unpaused");
        self.task_created(task_id).await
    }

    /// A kill for a task with no process: a paused one ends now.
    pub(super) async fn kill_paused_task(&mut self, task_id: &str) -> LoopResult<()> {
        let record = match self.store.command_task_by_id(task_id).await {
            Ok(r) => r,
            Err(resolute_store::StoreError::NotFound { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if record.end_time.is_some() || GenericTaskState::of(&record.extra, None) == GenericTaskState::Active {
            return Ok(());
        }
        self.record_end(task_id, &record.description, None, super::KILLED).await
    }

    /// After a master restart (its allocations already ended): a task that was paused, or
    /// pausing, stays paused rather than ending.
    pub(super) async fn keep_paused_over_restart(&mut self, record: &CommandTaskRecord) -> LoopResult<bool> {
        match GenericTaskState::of(&record.extra, None) {
            GenericTaskState::Paused => Ok(true),
            GenericTaskState::StoppingPaused => {
                self.store_pause_state(&record.task_id, GenericTaskState::Paused).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn store_pause_state(&mut self, task_id: &str, state: GenericTaskState) -> LoopResult<()> {
        let mut extra = self.store.command_task_by_id(task_id).await?.extra;
        set_state(&mut extra, state);
        self.store.set_command_task_extra(task_id, &extra).await?;
        Ok(())
    }
}
