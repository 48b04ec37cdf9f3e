//! The daemon's side of surviving its own restart: taking over the tasks an earlier agent
//! process recorded in the [`state_file`], moving each task's sent-output offsets forward as the
//! outbox writes them, and rewriting the state file when the running tasks change.

use super::*;

impl Daemon {
    /// Takes over the tasks an earlier agent process recorded in the state file.
    pub(super) fn adopt_recorded(&mut self) {
        let state = match state_file::load(&self.state_path) {
            Ok(state) => state,
            Err(e) => {
                tracing::error!("{e}");
                return;
            }
        };
        let work_root = self.runtime.options().work_root.clone();
        for record in state.tasks {
            let container_id = record.container_id.clone();
            let adopted = record
                .task_info(&work_root)
                .map_err(|e| e.to_string())
                .and_then(|(info, offsets)| self.runtime.adopt(info, offsets).map(|_| offsets).map_err(|e| e.to_string()));
            let offsets = match adopted {
                Ok(offsets) => offsets,
                Err(e) => {
                    tracing::warn!("cannot take over container {container_id} of the state file: {e}");
                    continue;
                }
            };
            tracing::info!("took over container {container_id} of task {} (pid {}) from the agent's last run", record.task_id, record.pid);
            let readiness = match (record.ready, Readiness::watch(record.ready_pattern.as_deref())) {
                (false, Ok(readiness)) => readiness,
                _ => Readiness::Unwatched,
            };
            self.tasks.insert(
                container_id,
                TaskEntry {
                    allocation_id: record.allocation_id,
                    shim: ShimDir::for_work_dir(&record.work_dir),
                    running: true,
                    pending_exit: None,
                    pending_stop: None,
                    readiness,
                    task_id: record.task_id,
                    slot_ids: record.slot_ids,
                    ports: record.ports,
                    ready: record.ready,
                    ready_pattern: record.ready_pattern,
                    shipped: offsets,
                },
            );
        }
        self.persist();
    }

    /// Moves each task's sent-output offsets forward to what the outbox has written.
    pub(super) fn note_shipped(&mut self) {
        let shipped = self.outbox.take_shipped();
        if shipped.is_empty() {
            return;
        }
        for Shipped { container_id, stdtype, offset } in shipped {
            let Some(entry) = self.tasks.get_mut(&container_id) else { continue };
            let field = match stdtype {
                crate::events::StdType::Stdout => &mut entry.shipped.stdout,
                crate::events::StdType::Stderr => &mut entry.shipped.stderr,
            };
            *field = (*field).max(offset);
        }
        self.persist();
    }

    /// Writes the running tasks to the state file, when they changed since the last write.
    pub(super) fn persist(&mut self) {
        let mut tasks: Vec<TaskRecord> = self
            .tasks
            .iter()
            .filter(|(_, e)| e.running)
            .filter_map(|(id, e)| {
                let handle = self.runtime.task(id).ok()?;
                let info = handle.info();
                Some(TaskRecord {
                    container_id: id.clone(),
                    task_id: e.task_id.clone(),
                    allocation_id: e.allocation_id.clone(),
                    slot_ids: e.slot_ids.clone(),
                    ports: e.ports.clone(),
                    pid: info.pid,
                    start_ticks: info.start_ticks,
                    started_at_ms: state_file::epoch_ms(info.started_at),
                    work_dir: info.work_dir.clone(),
                    ready: e.ready,
                    ready_pattern: e.ready_pattern.clone(),
                    stdout_offset: e.shipped.stdout,
                    stderr_offset: e.shipped.stderr,
                })
            })
            .collect();
        tasks.sort_by(|a, b| a.container_id.cmp(&b.container_id));
        let state = AgentState { tasks };
        if self.saved_state.as_ref() == Some(&state) {
            return;
        }
        match state_file::save(&self.state_path, &state) {
            Ok(()) => self.saved_state = Some(state),
            Err(e) => tracing::warn!("{e}; a restarted agent could not take over its tasks"),
        }
    }
}
