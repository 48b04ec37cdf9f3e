//! A command-like task in the loop: queued when the service created it, started where the
//! scheduler placed it, and ended — with upstream's exit wording in its log and `exitStatus` —
//! when its process exits or a user kills it.

use base64::Engine as _;
use resolute_api::agent_protocol::StartTask;
use resolute_expconf::parse_task_config;
use resolute_store::{CommandTaskFilter, CommandTaskRecord, NewLogLine, db_now};

use super::CommandRun;
use super::command_env::{CommandLaunch, command_start_task};
use crate::auth::allocation_tokens::issue_allocation_token;
use crate::cluster::allocations::{AllocationEnd, AllocationOwner};
use crate::cluster::hooks::ServiceEndpoint;
use crate::cluster::orchestrator::{LoopError, LoopResult, Orchestrator};
use crate::cluster::rm::{Placement, ResourceRequest};
use crate::domain::TaskType;
use crate::domain::task_service::from_extra;

/// Upstream's wording, which users and scripts grep for.
pub const EXITED_SUCCESSFULLY: &str = "allocation stopped after resources exited successfully with a zero exit code";
const FAILED_PREFIX: &str = "allocation stopped early after all resources exited: resources failed with non-zero exit code";
pub const KILLED: &str = "allocation was killed by a user";

impl Orchestrator {
    /// The service stored a new task: queue its allocation.
    pub(in crate::cluster) async fn task_created(&mut self, task_id: &str) -> LoopResult<()> {
        if self.commands.contains_key(task_id) {
            return Ok(());
        }
        let record = self.store.command_task_by_id(task_id).await?;
        if record.end_time.is_some() {
            return Ok(());
        }
        // `<task>.1`, then one more for every unpause.
        let earlier = self.store.task_by_id(task_id).await?.allocations.len();
        let allocation_id = format!("{task_id}.{}", earlier + 1);
        let (run, request) = command_plan(record, allocation_id)?;
        self.commands.insert(task_id.to_owned(), run);
        self.request_allocation(AllocationOwner::Task(task_id.to_owned()), request).await
    }
}

/// What a stored command-like task runs with, and what its allocation `allocation_id` asks the
/// resource manager for.
fn command_plan(record: CommandTaskRecord, allocation_id: String) -> LoopResult<(CommandRun, ResourceRequest)> {
    let task_type =
        TaskType::parse(&record.task_type).ok_or_else(|| LoopError::Other(format!("unknown task type {}", record.task_type)))?;
    let config = parse_task_config(&record.config, 0, &record.description, false)
        .map_err(|errors| LoopError::Other(format!("stored task config no longer validates: {errors:?}")))?;
    let (service, files) = from_extra(&record.extra);
    let request = ResourceRequest {
        excluded_nodes: Vec::new(),
        allocation_id: allocation_id.clone(),
        task_id: record.task_id.clone(),
        job_id: record.job_id.clone(),
        pool: config.resource_pool.clone(),
        slots: config.slots,
        priority: record.priority.and_then(|p| u32::try_from(p).ok()).or(config.priority),
        weight: config.weight,
        max_slots: None,
        // An interactive task cannot checkpoint: the scheduler must not take its slots.
        preemptible: false,
    };
    let run = CommandRun {
        task_type,
        config,
        owner: record.owner_username,
        owner_id: record.owner_id,
        service,
        files,
        service_address: None,
        allocation: Some(allocation_id),
        killed: false,
        pausing: false,
        job_id: record.job_id,
    };
    Ok((run, request))
}

impl Orchestrator {
    /// One process per placement, with the task's environment, context and a fresh token.
    pub(in crate::cluster) async fn command_start_tasks(
        &mut self,
        task_id: &str,
        allocation_id: &str,
        placements: &[Placement],
    ) -> LoopResult<Vec<(Placement, StartTask)>> {
        let context = self.store.command_task_context(task_id).await?;
        let context_b64 = (!context.is_empty()).then(|| base64::engine::general_purpose::STANDARD.encode(&context));
        let token = issue_allocation_token(self.store.as_ref(), allocation_id).await?;
        let run = self.commands.get(task_id).ok_or_else(|| LoopError::Other(format!("unknown task {task_id}")))?;
        let tasks = placements
            .iter()
            .map(|placement| {
                let container_id = uuid::Uuid::new_v4().to_string();
                let start = command_start_task(&CommandLaunch {
                    cluster_id: &self.identity.cluster_id,
                    master_id: &self.identity.master_id,
                    task_type: run.task_type,
                    task_id,
                    allocation_id,
                    container_id: &container_id,
                    session_token: &token,
                    user: &run.owner,
                    config: &run.config,
                    slot_ids: placement.slot_ids.clone(),
                    device_type: &placement.device_type,
                    context_b64: context_b64.clone(),
                    service: &run.service,
                    files: &run.files,
                });
                (placement.clone(), start)
            })
            .collect();
        Ok(tasks)
    }

    /// A user asked to kill the task: a running one is killed, a queued one ends at once.
    pub(in crate::cluster) async fn kill_task(&mut self, task_id: &str) -> LoopResult<()> {
        let Some(run) = self.commands.get_mut(task_id) else { return self.kill_paused_task(task_id).await };
        run.killed = true;
        match run.allocation.clone() {
            Some(a) if self.is_started(&a) => {
                self.kill_allocation(&a);
                Ok(())
            }
            queued => {
                if let Some(a) = &queued {
                    self.drop_queued_allocation(a).await?;
                }
                self.end_command(task_id, queued.as_deref(), "allocation was killed by a user before it started").await
            }
        }
    }

    /// The task's allocation ended: record why, in its log and its `exitStatus`.
    pub(in crate::cluster) async fn command_allocation_ended(&mut self, task_id: &str, end: AllocationEnd) -> LoopResult<()> {
        let Some(run) = self.commands.get(task_id) else { return Ok(()) };
        if run.pausing && !run.killed {
            return self.command_paused(task_id, Some(&end.allocation_id)).await;
        }
        let status = if run.killed {
            KILLED.to_owned()
        } else if end.succeeded {
            EXITED_SUCCESSFULLY.to_owned()
        } else {
            let why = end.failure.clone().unwrap_or_else(|| "the process failed".to_owned());
            match end.exit_code {
                Some(code) => format!("{FAILED_PREFIX}: {why} (exit code {code})"),
                None => format!("{FAILED_PREFIX}: {why}"),
            }
        };
        self.end_command(task_id, Some(&end.allocation_id), &status).await
    }

    pub(in crate::cluster) async fn end_command(&mut self, task_id: &str, allocation_id: Option<&str>, status: &str) -> LoopResult<()> {
        let Some(run) = self.commands.remove(task_id) else { return Ok(()) };
        self.rm.forget_job(&run.job_id);
        if run.service.proxy.is_some() {
            self.hooks.service_gone(task_id);
        }
        self.record_end(task_id, &run.config.description, allocation_id, status).await
    }

    /// The master's log line and the stored end of a task whose process is gone.
    pub(super) async fn record_end(
        &mut self,
        task_id: &str,
        description: &str,
        allocation_id: Option<&str>,
        status: &str,
    ) -> LoopResult<()> {
        self.master_log_line(task_id, allocation_id, &format!("{description} was terminated: {status}")).await?;
        tracing::info!(task = task_id, %status, "task ended");
        self.store.end_command_task(task_id, status, db_now()).await?;
        self.hooks.task_ended(task_id);
        Ok(())
    }

    /// One line from the master in the task's log.
    pub(in crate::cluster) async fn master_log_line(&mut self, task_id: &str, allocation_id: Option<&str>, line: &str) -> LoopResult<()> {
        self.store
            .insert_logs(&[NewLogLine {
                task_id: task_id.to_owned(),
                allocation_id: allocation_id.map(str::to_owned),
                agent_id: None,
                container_id: None,
                rank_id: None,
                timestamp: db_now(),
                level: Some("LOG_LEVEL_INFO".to_owned()),
                log: format!("{line}\n"),
                source: Some("master".to_owned()),
                stdtype: Some("stdout".to_owned()),
            }])
            .await?;
        Ok(())
    }

    /// After a master start: the processes of open tasks belonged to the old master, so the tasks
    /// end (upstream restores them only with container reattachment).
    pub(in crate::cluster) async fn recover_commands(&mut self) -> LoopResult<()> {
        let open = self.store.list_command_tasks(&CommandTaskFilter { open_only: true, ..Default::default() }).await?;
        for record in open {
            let task = self.store.task_by_id(&record.task_id).await?;
            // Its process may still run: wait for it to reattach (`cluster/reattach.rs`).
            let open: Vec<_> = task.allocations.iter().filter(|a| a.end_time.is_none()).collect();
            if let [allocation] = open.as_slice()
                && self.reattach_enabled()
                && crate::cluster::reattach::reattachable(allocation)
            {
                let task_id = record.task_id.clone();
                let (run, request) = command_plan(record, allocation.allocation_id.clone())?;
                self.commands.insert(task_id.clone(), run);
                self.await_reattach(AllocationOwner::Task(task_id), request);
                continue;
            }
            for allocation in task.allocations.iter().filter(|a| a.end_time.is_none()) {
                self.end_abandoned_allocation(&allocation.allocation_id).await?;
            }
            if self.keep_paused_over_restart(&record).await? {
                continue;
            }
            let status = "allocation stopped: the master restarted while the task ran";
            self.store.end_command_task(&record.task_id, status, db_now()).await?;
        }
        Ok(())
    }
}

impl Orchestrator {
    /// The task's process runs: remember where its service listens.
    pub(in crate::cluster) fn command_running(&mut self, task_id: &str, ports: &std::collections::BTreeMap<String, String>) {
        let Some(run) = self.commands.get_mut(task_id) else { return };
        if let Some(address) = run.service.port_env.as_ref().and_then(|name| ports.get(name)) {
            run.service_address = Some(address.clone());
            // A service with no readiness line is ready as soon as it runs.
            if run.service.ready_pattern.is_none() {
                self.command_ready(task_id);
            }
        }
    }

    /// The task's service is up: the proxy may reach it from now on.
    pub(in crate::cluster) fn command_ready(&mut self, task_id: &str) {
        let Some(run) = self.commands.get(task_id) else { return };
        let (Some(kind), Some(address)) = (run.service.proxy.as_deref(), run.service_address.clone()) else { return };
        let endpoint = ServiceEndpoint {
            address,
            owner_id: run.owner_id,
            tcp: kind == "tcp",
            unauthenticated: run.service.unauthenticated,
            task_type: run.task_type,
        };
        tracing::info!(task = task_id, address = %endpoint.address, "task service ready");
        self.hooks.service_ready(task_id, endpoint);
    }
}
