//! Agents joining, reporting and leaving, and the view of them the HTTP layer reads.

use resolute_api::agent_protocol::{AgentConnectQuery, AgentOptions, AgentStarted, AgentToMaster, MasterToAgent, TaskExitInfo, TaskState};
use resolute_scheduler::{AgentSpec, DeviceType, SlotSpec};
use tokio::sync::mpsc;

use super::orchestrator::{LoopResult, Orchestrator};
use super::runs::AgentRun;
use super::view::{AgentView, ClusterView, ContainerView, SlotView};
use super::{ClusterEvent, Timer};

impl Orchestrator {
    pub(super) async fn agent_connected(
        &mut self,
        conn_id: u64,
        query: AgentConnectQuery,
        outbox: mpsc::UnboundedSender<MasterToAgent>,
    ) -> LoopResult<()> {
        if let Some(existing) = self.agents.get(&query.id)
            && existing.outbox.as_ref().is_some_and(|o| !o.is_closed())
        {
            tracing::warn!(agent = %query.id, "refusing a second connection for a connected agent id");
            let _ = outbox.send(MasterToAgent::AgentShutdown {
                err_msg: format!("an agent with id {:?} is already connected; give each agent a unique agent_id", query.id),
            });
            return Ok(());
        }
        let tasks_to_reattach: Vec<String> = self
            .allocations
            .values()
            .flat_map(|a| a.containers.iter())
            .filter(|c| c.agent_id == query.id)
            .map(|c| c.container_id.clone())
            .collect();
        let _ = outbox.send(MasterToAgent::MasterSetAgentOptions(AgentOptions {
            master_id: self.identity.master_id.clone(),
            cluster_id: self.identity.cluster_id.clone(),
            cluster_name: self.identity.cluster_name.clone(),
            version: resolute_api::DETERMINED_VERSION.to_owned(),
            tasks_to_reattach,
        }));
        let agent = self.agents.entry(query.id.clone()).or_insert_with(|| AgentRun {
            id: query.id.clone(),
            conn_id,
            outbox: None,
            resource_pool: query.resource_pool.clone(),
            hostname: query.hostname.clone(),
            version: query.version.clone(),
            devices: Vec::new(),
            registered: resolute_store::db_now(),
            started: false,
        });
        agent.conn_id = conn_id;
        agent.outbox = Some(outbox);
        tracing::info!(agent = %query.id, reconnect = query.reconnect, "agent connected");
        Ok(())
    }

    pub(super) async fn agent_message(&mut self, conn_id: u64, agent_id: &str, message: AgentToMaster) -> LoopResult<()> {
        if self.agents.get(agent_id).is_none_or(|a| a.conn_id != conn_id) {
            return Ok(()); // from a superseded connection
        }
        match message {
            AgentToMaster::AgentStarted(started) => self.agent_started(agent_id, started).await,
            AgentToMaster::TaskStateChanged(change) => match change.state {
                TaskState::Terminated => {
                    let exit = change.exit.unwrap_or(TaskExitInfo {
                        exit_code: None,
                        signal: None,
                        failure: Some("the agent reported no exit status".to_owned()),
                    });
                    self.container_exited(&change.allocation_id, &change.container_id, exit).await
                }
                TaskState::Running => self.container_running(&change.allocation_id, &change.container_id).await,
                _ => Ok(()),
            },
            // Stored by the connection; nothing for the loop.
            AgentToMaster::TaskLogs { .. } => Ok(()),
            // Trials set no ready_pattern; nothing acts on readiness yet.
            AgentToMaster::TaskReady { .. } => Ok(()),
        }
    }

    async fn agent_started(&mut self, agent_id: &str, started: AgentStarted) -> LoopResult<()> {
        let Some(agent) = self.agents.get_mut(agent_id) else { return Ok(()) };
        let was_started = agent.started;
        agent.devices = started.devices.clone();
        agent.version = started.version.clone();
        if !started.hostname.is_empty() {
            agent.hostname = started.hostname.clone();
        }
        agent.resource_pool = started.resource_pool.clone();
        agent.started = true;
        let pool = agent.resource_pool.clone();
        if !was_started {
            let spec = AgentSpec {
                id: agent_id.into(),
                resource_pool: pool.clone(),
                label: String::new(),
                slots: started.devices.iter().map(|d| SlotSpec { id: d.id, device: device_type(&d.device_type) }).collect(),
            };
            self.pool(&pool).add_agent(spec)?;
            tracing::info!(agent = %agent_id, pool = %pool, slots = started.devices.len(), "agent registered");
        }
        // Processes the agent still runs that no allocation here owns (a restarted master ended
        // their allocations; a timed-out reconnect failed them) are orphans: their tokens are
        // revoked and their reports refused, so they only hold slots. Kill them.
        let orphans: Vec<String> = started
            .tasks_reattached
            .iter()
            .filter(|c| !self.allocations.values().any(|a| a.containers.iter().any(|k| k.agent_id == agent_id && k.container_id == **c)))
            .cloned()
            .collect();
        for container_id in orphans {
            tracing::warn!(agent = %agent_id, container = %container_id, "killing a process no allocation owns");
            self.send_to_agent(agent_id, MasterToAgent::KillTask { container_id });
        }
        // Containers the master expected there that the agent no longer has are lost.
        if was_started {
            let kept = started.tasks_reattached;
            let failure = format!("the process was lost when agent {agent_id} reconnected");
            self.fail_containers(agent_id, |c| !kept.contains(c), &failure).await?;
        }
        Ok(())
    }

    pub(super) fn agent_disconnected(&mut self, conn_id: u64, agent_id: &str) {
        let Some(agent) = self.agents.get_mut(agent_id) else { return };
        if agent.conn_id != conn_id {
            return;
        }
        agent.outbox = None;
        tracing::warn!(agent = %agent_id, wait = ?self.timing.agent_reconnect_wait, "agent disconnected; waiting for it to reconnect");
        self.handle.notify_after(
            self.timing.agent_reconnect_wait,
            ClusterEvent::Timer(Timer::ReconnectExpired { agent_id: agent_id.to_owned(), conn_id }),
        );
    }

    pub(super) async fn reconnect_expired(&mut self, agent_id: &str, conn_id: u64) -> LoopResult<()> {
        let Some(agent) = self.agents.get(agent_id) else { return Ok(()) };
        if agent.conn_id != conn_id || agent.outbox.is_some() {
            return Ok(()); // it came back
        }
        let agent = self.agents.remove(agent_id).expect("checked above");
        tracing::warn!(agent = %agent_id, "agent did not reconnect; its tasks are lost");
        if agent.started {
            self.pool(&agent.resource_pool).remove_agent(&agent_id.into())?;
        }
        self.fail_containers(agent_id, |_| true, &format!("agent {agent_id} was lost")).await?;
        Ok(())
    }

    /// Ends, as failed runs, the containers on `agent_id` that `lost` selects (by container id).
    async fn fail_containers(&mut self, agent_id: &str, lost: impl Fn(&String) -> bool, failure: &str) -> LoopResult<()> {
        let doomed: Vec<(String, String)> = self
            .allocations
            .values()
            .flat_map(|a| a.containers.iter().map(move |c| (a.id.clone(), c)))
            .filter(|(_, c)| c.agent_id == agent_id && lost(&c.container_id))
            .map(|(a, c)| (a, c.container_id.clone()))
            .collect();
        for (allocation_id, container_id) in doomed {
            let exit = TaskExitInfo { exit_code: None, signal: None, failure: Some(failure.to_owned()) };
            self.container_exited(&allocation_id, &container_id, exit).await?;
        }
        Ok(())
    }

    pub(super) fn publish_view(&self) {
        let mut view = ClusterView::default();
        for agent in self.agents.values().filter(|a| a.started) {
            let mut slots = std::collections::BTreeMap::new();
            for d in &agent.devices {
                slots.insert(
                    d.id,
                    SlotView {
                        id: d.id,
                        brand: d.brand.clone(),
                        uuid: d.uuid.clone(),
                        device_type: d.device_type.clone(),
                        enabled: true,
                        container: None,
                    },
                );
            }
            view.agents.insert(
                agent.id.clone(),
                AgentView {
                    id: agent.id.clone(),
                    registered_time: agent.registered,
                    resource_pool: agent.resource_pool.clone(),
                    hostname: agent.hostname.clone(),
                    version: agent.version.clone(),
                    enabled: true,
                    draining: false,
                    slots,
                },
            );
        }
        for allocation in self.allocations.values() {
            let task_id = self.trials.get(&allocation.trial_id).map(|t| t.task_id.clone()).unwrap_or_default();
            for c in &allocation.containers {
                let Some(agent) = view.agents.get_mut(&c.agent_id) else { continue };
                let container = ContainerView {
                    id: c.container_id.clone(),
                    allocation_id: allocation.id.clone(),
                    task_id: task_id.clone(),
                    state: if c.running { "STATE_RUNNING" } else { "STATE_STARTING" }.to_owned(),
                    agent_id: c.agent_id.clone(),
                    slot_ids: c.slot_ids.clone(),
                };
                for slot in &c.slot_ids {
                    if let Some(s) = agent.slots.get_mut(slot) {
                        s.container = Some(container.clone());
                    }
                }
            }
        }
        self.handle.publish(view);
    }
}

fn device_type(name: &str) -> DeviceType {
    match name {
        "cuda" | "gpu" => DeviceType::Cuda,
        "rocm" => DeviceType::Rocm,
        _ => DeviceType::Cpu,
    }
}
