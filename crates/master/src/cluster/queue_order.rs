//! The job queue's order across master restarts, the loop's side: after every batch the places
//! the schedulers assigned or dropped are stored (`job_queue_positions`); a restarted master
//! hands the stored places to the resource manager before recovery queues anything, so `det job
//! list` shows the same order as before the restart (moved jobs and unmoved ones alike), and then
//! drops the places of jobs that ended while it was down.

use std::collections::HashSet;

use super::orchestrator::{LoopResult, Orchestrator};
use super::rm::QueueOrderChanges;

impl Orchestrator {
    /// Before recovery: the stored order back into the resource manager. Returns the jobs it
    /// named, for [`Orchestrator::forget_ended_jobs`] once recovery knows which still live.
    pub(super) async fn restore_queue_order(&mut self) -> LoopResult<Vec<String>> {
        let positions = self.store.job_queue_positions().await?;
        let jobs = positions.iter().map(|p| p.job_id.clone()).collect();
        self.rm.restore_queue_order(positions);
        Ok(jobs)
    }

    /// After recovery: stored places of jobs no open experiment or task owns are dropped.
    pub(super) fn forget_ended_jobs(&mut self, stored: &[String]) {
        let live: HashSet<&str> =
            self.experiments.values().map(|e| e.job_id.as_str()).chain(self.commands.values().map(|c| c.job_id.as_str())).collect();
        for job in stored.iter().filter(|j| !live.contains(j.as_str())) {
            self.rm.forget_job(job);
        }
    }

    /// Stores what changed in the queues' order since the last batch. A failed write is kept and
    /// tried again with the next batch's changes.
    pub(super) async fn store_queue_order(&mut self) {
        let changes = self.rm.take_queue_order_changes();
        self.unsaved_queue_order.placed.extend(changes.placed);
        self.unsaved_queue_order.forgotten.extend(changes.forgotten);
        if self.unsaved_queue_order.is_empty() {
            return;
        }
        let QueueOrderChanges { placed, forgotten } = std::mem::take(&mut self.unsaved_queue_order);
        if let Err(e) = self.store.save_job_queue_positions(&placed, &forgotten).await {
            tracing::warn!(error = %e, "storing the job queue's order failed; trying again after the next event");
            self.unsaved_queue_order = QueueOrderChanges { placed, forgotten };
        }
    }
}
