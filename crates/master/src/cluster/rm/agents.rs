//! The agent resource manager: agents that connect over `/agents`, one scheduler per resource
//! pool, and the processes (containers) they run. It owns everything agent-shaped: connections,
//! reconnect waits, reattachment, orphan kills, slots, and the view of them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use resolute_api::agent_protocol::{
    AgentConnectQuery, AgentDevice, AgentOptions, AgentStarted, AgentToMaster, AgentUnixUser, MAX_MESSAGE_BYTES, MasterToAgent, StartTask,
    TaskExitInfo, TaskState, archive_chunks,
};
use resolute_scheduler::{AgentSpec, DeviceType, LogicalTime, Scheduler, SchedulerConfig, SlotSpec};
use tokio::sync::mpsc;

use super::node_control::{ControlError, NodeCommand, NodeControlled};
use super::{Assignment, Decisions, Placement, ResourceManager, ResourceRequest, RmError, RmEvent, RmInput};
use crate::cluster::view::{AgentView, ClusterView, ContainerView, SlotView};
use crate::cluster::{ClusterEvent, ClusterHandle};
use crate::domain::AllocationState;
use crate::domain::task_service::SERVICE_HOST_ENV;
use crate::state::Identity;

#[path = "agent_control.rs"]
mod control;
#[path = "agent_reattach.rs"]
mod reattach;

/// What the agents' websocket handler and the loop's timers tell this resource manager.
#[derive(Debug)]
pub enum AgentInput {
    /// An agent's websocket opened; `outbox` reaches it until `Disconnected` with this `conn_id`.
    Connected {
        conn_id: u64,
        query: AgentConnectQuery,
        outbox: mpsc::UnboundedSender<MasterToAgent>,
    },
    /// A message from a connected agent (log batches are stored by the connection itself).
    Message {
        conn_id: u64,
        agent_id: String,
        message: AgentToMaster,
    },
    Disconnected {
        conn_id: u64,
        agent_id: String,
    },
    /// An agent that has not reconnected by now is forgotten and its processes are lost.
    ReconnectExpired {
        agent_id: String,
        conn_id: u64,
    },
}

struct AgentRun {
    id: String,
    conn_id: u64,
    /// `None` while disconnected (waiting for a reconnect).
    outbox: Option<mpsc::UnboundedSender<MasterToAgent>>,
    resource_pool: String,
    hostname: String,
    /// Where other hosts reach the agent's task ports.
    addresses: Vec<String>,
    unix_user: Option<AgentUnixUser>,
    version: String,
    devices: Vec<AgentDevice>,
    registered: DateTime<Utc>,
    /// Registered with the scheduler (after `AgentStarted`).
    started: bool,
    /// `AgentConnectQuery::instance` of its current session.
    instance: String,
}

/// Whether a new connection for an agent id that still has an open session replaces that session
/// (the agent process was started again on the same host and work root, taking over its tasks,
/// while the old connection has not been seen to close yet) rather than being refused as a second
/// agent with the same id.
fn replaces_session(existing_instance: &str, query: &AgentConnectQuery) -> bool {
    !query.reconnect && !query.instance.is_empty() && query.instance == existing_instance
}

/// One process of an allocation on an agent.
struct ContainerRun {
    allocation_id: String,
    task_id: String,
    agent_id: String,
    slot_ids: Vec<u32>,
    running: bool,
    rendezvous: Option<resolute_api::agent_protocol::TaskRendezvous>,
}

pub struct AgentResourceManager {
    handle: ClusterHandle,
    identity: Arc<Identity>,
    agents: BTreeMap<String, AgentRun>,
    pools: BTreeMap<String, Scheduler>,
    /// By container id.
    containers: HashMap<String, ContainerRun>,
    /// Task ids of submitted allocations, for the view.
    task_ids: HashMap<String, String>,
    pool_of: HashMap<String, String>,
    /// Logical time for the schedulers: one tick per submission or pass.
    tick: u64,
    reconnect_wait: Duration,
    /// Admin controls by agent id (`agent_control.rs`), also of agents not connected now.
    controls: BTreeMap<String, resolute_store::AgentControlRecord>,
    /// Allocations a restarted master waits to re-adopt (`agent_reattach.rs`), by id.
    awaiting: HashMap<String, ResourceRequest>,
}

impl AgentResourceManager {
    pub fn new(handle: ClusterHandle, identity: Arc<Identity>, reconnect_wait: Duration) -> Self {
        let pools = super::pools::schedulers(handle.resource_pools());
        AgentResourceManager {
            handle,
            identity,
            agents: BTreeMap::new(),
            pools,
            containers: HashMap::new(),
            task_ids: HashMap::new(),
            pool_of: HashMap::new(),
            tick: 0,
            reconnect_wait,
            controls: BTreeMap::new(),
            awaiting: HashMap::new(),
        }
    }

    fn pool(&mut self, name: &str) -> &mut Scheduler {
        // Only a request stored before its pool left master.yaml names an unconfigured pool: it
        // waits there, under the default scheduler, until an agent of that name could join.
        self.pools.entry(name.to_owned()).or_insert_with(|| Scheduler::new(name.to_owned(), SchedulerConfig::default()))
    }

    fn now(&mut self) -> LogicalTime {
        self.tick += 1;
        LogicalTime(self.tick)
    }

    fn send(&self, agent_id: &str, message: MasterToAgent) -> bool {
        match self.agents.get(agent_id).and_then(|a| a.outbox.as_ref()) {
            Some(outbox) => outbox.send(message).is_ok(),
            None => false,
        }
    }

    fn connected(&mut self, conn_id: u64, mut query: AgentConnectQuery, outbox: mpsc::UnboundedSender<MasterToAgent>) {
        match super::pools::agent_pool(self.handle.resource_pools(), &query.id, &query.resource_pool) {
            Ok(pool) => query.resource_pool = pool,
            Err(err_msg) => {
                tracing::warn!(agent = %query.id, "refusing an agent: {err_msg}");
                let _ = outbox.send(MasterToAgent::AgentShutdown { err_msg });
                return;
            }
        }
        if let Err(err_msg) = self.change_pool(&query.id, &query.resource_pool) {
            tracing::warn!(agent = %query.id, "refusing an agent: {err_msg}");
            let _ = outbox.send(MasterToAgent::AgentShutdown { err_msg });
            return;
        }
        if let Some(existing) = self.agents.get(&query.id)
            && existing.outbox.as_ref().is_some_and(|o| !o.is_closed())
            && replaces_session(&existing.instance, &query)
        {
            // Dropping the old outbox (below) closes the old connection.
            tracing::warn!(agent = %query.id, instance = %query.instance, "the agent started again; its new session replaces the old one");
        } else if let Some(existing) = self.agents.get(&query.id)
            && existing.outbox.as_ref().is_some_and(|o| !o.is_closed())
        {
            tracing::warn!(agent = %query.id, "refusing a second connection for a connected agent id");
            let _ = outbox.send(MasterToAgent::AgentShutdown {
                err_msg: format!("an agent with id {:?} is already connected; give each agent a unique agent_id", query.id),
            });
            return;
        }
        let tasks_to_reattach: Vec<String> =
            self.containers.iter().filter(|(_, c)| c.agent_id == query.id).map(|(id, _)| id.clone()).collect();
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
            addresses: Vec::new(),
            unix_user: None,
            version: query.version.clone(),
            devices: Vec::new(),
            registered: resolute_store::db_now(),
            started: false,
            instance: query.instance.clone(),
        });
        agent.conn_id = conn_id;
        agent.instance = query.instance.clone();
        agent.outbox = Some(outbox);
        tracing::info!(agent = %query.id, reconnect = query.reconnect, "agent connected");
    }

    /// An agent id coming back (within its reconnect window) in another pool: with no tasks
    /// left there it leaves its old pool and registers afresh; with tasks it is refused.
    fn change_pool(&mut self, agent_id: &str, pool: &str) -> Result<(), String> {
        let Some(old) = self.agents.get(agent_id).filter(|a| a.resource_pool != pool) else { return Ok(()) };
        if self.containers.values().any(|c| c.agent_id == agent_id) {
            return Err(format!(
                "agent {agent_id:?} still has tasks in resource pool {:?}; reconnect it to that pool, or wait for them to end",
                old.resource_pool
            ));
        }
        if let Some(old) = self.agents.remove(agent_id)
            && old.started
        {
            let _ = self.pool(&old.resource_pool).remove_agent(&agent_id.into());
        }
        Ok(())
    }

    fn message(&mut self, conn_id: u64, agent_id: &str, message: AgentToMaster) -> Vec<RmEvent> {
        if self.agents.get(agent_id).is_none_or(|a| a.conn_id != conn_id) {
            return Vec::new(); // from a superseded connection
        }
        match message {
            AgentToMaster::AgentStarted(started) => self.agent_started(agent_id, started),
            AgentToMaster::TaskStateChanged(change) => match change.state {
                TaskState::Terminated => {
                    let exit = change.exit.unwrap_or(TaskExitInfo {
                        exit_code: None,
                        signal: None,
                        failure: Some("the agent reported no exit status".to_owned()),
                    });
                    if let Some(event) = self.awaited_exit(&change.container_id, &change.allocation_id, exit.clone()) {
                        return vec![event];
                    }
                    self.exited(&change.container_id, exit).into_iter().collect()
                }
                TaskState::Running => {
                    let Some(c) = self.containers.get_mut(&change.container_id) else { return Vec::new() };
                    c.running = true;
                    let (allocation_id, agent_id) = (c.allocation_id.clone(), c.agent_id.clone());
                    let host =
                        self.agents.get(&agent_id).and_then(|a| a.addresses.first().cloned()).unwrap_or_else(|| "127.0.0.1".to_owned());
                    let ports = change.ports.iter().map(|(name, port)| (name.clone(), format!("{host}:{port}"))).collect();
                    vec![RmEvent::Running { allocation_id, container_id: change.container_id, ports }]
                }
                _ => Vec::new(),
            },
            AgentToMaster::TaskReady { container_id, allocation_id } => {
                if self.containers.get(&container_id).is_none_or(|c| c.allocation_id != allocation_id) {
                    return Vec::new();
                }
                vec![RmEvent::Ready { allocation_id, container_id }]
            }
            // Stored by the connection; nothing for the loop.
            AgentToMaster::TaskLogs { .. } => Vec::new(),
        }
    }

    /// A container ended: it no longer holds its slots here.
    fn exited(&mut self, container_id: &str, exit: TaskExitInfo) -> Option<RmEvent> {
        let c = self.containers.remove(container_id)?;
        Some(RmEvent::Exited { allocation_id: c.allocation_id, container_id: container_id.to_owned(), exit })
    }

    fn agent_started(&mut self, agent_id: &str, started: AgentStarted) -> Vec<RmEvent> {
        let Some(agent) = self.agents.get_mut(agent_id) else { return Vec::new() };
        let was_started = agent.started;
        agent.devices = started.devices.clone();
        agent.addresses = started.addresses.clone();
        agent.unix_user = started.unix_user.clone();
        agent.version = started.version.clone();
        if !started.hostname.is_empty() {
            agent.hostname = started.hostname.clone();
        }
        // The pool it connected with (checked then) stands; `AgentStarted` repeats it.
        agent.started = true;
        let pool = agent.resource_pool.clone();
        if !was_started {
            let spec = AgentSpec {
                id: agent_id.into(),
                resource_pool: pool.clone(),
                label: String::new(),
                slots: started.devices.iter().map(|d| SlotSpec { id: d.id, device: device_type(&d.device_type) }).collect(),
            };
            if let Err(e) = self.pool(&pool).add_agent(spec) {
                tracing::error!(agent = %agent_id, error = %e, "cannot register the agent's slots");
            } else if let Err(e) = self.apply_stored_control(agent_id, &pool) {
                tracing::error!(agent = %agent_id, error = %e, "cannot apply the agent's stored enable/disable state");
            }
            tracing::info!(agent = %agent_id, pool = %pool, slots = started.devices.len(), "agent registered");
        } else {
            // Back within its reconnect window: it takes new work again.
            self.set_connected(agent_id, &pool, true);
        }
        // Processes of allocations a restarted master kept open are adopted again.
        let mut events = self.adopt_reported(agent_id, &started.running_tasks);
        // Processes the agent still runs that no allocation here owns (their allocation ended
        // while the agent was away: a timed-out reconnect or reattach window moved the trial to a
        // new run) are orphans: their tokens are revoked and their reports refused, so they only
        // hold slots. Kill them.
        let orphans: Vec<String> =
            started.tasks_reattached.iter().filter(|c| self.containers.get(*c).is_none_or(|k| k.agent_id != agent_id)).cloned().collect();
        for container_id in orphans {
            tracing::warn!(agent = %agent_id, container = %container_id, "killing a process no allocation owns");
            self.send(agent_id, MasterToAgent::KillTask { container_id });
        }
        // Containers the master expected there that the agent no longer has are lost.
        if !was_started {
            return events;
        }
        let kept = started.tasks_reattached;
        let failure = format!("the process was lost when agent {agent_id} reconnected");
        events.extend(self.lose_containers(agent_id, |c| !kept.contains(c), &failure));
        events
    }

    fn disconnected(&mut self, conn_id: u64, agent_id: &str) {
        let Some(agent) = self.agents.get_mut(agent_id) else { return };
        if agent.conn_id != conn_id {
            return;
        }
        agent.outbox = None;
        tracing::warn!(agent = %agent_id, wait = ?self.reconnect_wait, "agent disconnected; waiting for it to reconnect");
        // Meanwhile nothing new goes there: a start on it would fail, and count as the trial's.
        let pool = agent.resource_pool.clone();
        if agent.started {
            self.set_connected(agent_id, &pool, false);
        }
        self.handle.notify_after(
            self.reconnect_wait,
            ClusterEvent::Rm(RmInput::Agent(AgentInput::ReconnectExpired { agent_id: agent_id.to_owned(), conn_id })),
        );
    }

    fn set_connected(&mut self, agent_id: &str, pool: &str, connected: bool) {
        if let Err(e) = self.pool(pool).set_agent_connected(&agent_id.into(), connected) {
            tracing::error!(agent = %agent_id, error = %e, "cannot mark the agent connected or disconnected in its pool");
        }
    }

    fn reconnect_expired(&mut self, agent_id: &str, conn_id: u64) -> Vec<RmEvent> {
        let Some(agent) = self.agents.get(agent_id) else { return Vec::new() };
        if agent.conn_id != conn_id || agent.outbox.is_some() {
            return Vec::new(); // it came back
        }
        let Some(agent) = self.agents.remove(agent_id) else { return Vec::new() };
        tracing::warn!(agent = %agent_id, "agent did not reconnect; its tasks are lost");
        if agent.started
            && let Err(e) = self.pool(&agent.resource_pool).remove_agent(&agent_id.into())
        {
            tracing::error!(agent = %agent_id, error = %e, "cannot remove the agent from its pool");
        }
        self.lose_containers(agent_id, |_| true, &format!("agent {agent_id} was lost"))
    }

    /// Ends, as failed, the containers on `agent_id` that `lost` selects (by container id).
    fn lose_containers(&mut self, agent_id: &str, lost: impl Fn(&String) -> bool, failure: &str) -> Vec<RmEvent> {
        let doomed: Vec<String> =
            self.containers.iter().filter(|(id, c)| c.agent_id == agent_id && lost(id)).map(|(id, _)| id.clone()).collect();
        doomed
            .into_iter()
            .filter_map(|id| self.exited(&id, TaskExitInfo { exit_code: None, signal: None, failure: Some(failure.to_owned()) }))
            .collect()
    }
}

impl ResourceManager for AgentResourceManager {
    fn submit(&mut self, r: ResourceRequest) -> Result<(), RmError> {
        let now = self.now();
        let request = super::pools::allocation_request(self.handle.resource_pools(), &r, now);
        let pool = request.resource_pool.clone();
        self.pool(&pool).submit(request)?;
        self.task_ids.insert(r.allocation_id.clone(), r.task_id);
        self.pool_of.insert(r.allocation_id, pool);
        Ok(())
    }

    fn release(&mut self, allocation_id: &str) {
        self.stop_awaiting(allocation_id);
        if let Some(pool) = self.pool_of.remove(allocation_id) {
            let _ = self.pool(&pool).release(&allocation_id.into());
        }
        self.task_ids.remove(allocation_id);
    }

    fn schedule(&mut self) -> Decisions {
        let now = self.now();
        let mut out = Decisions::default();
        let mut placed = Vec::new();
        for scheduler in self.pools.values_mut() {
            let decisions = scheduler.schedule(now);
            let pool = scheduler.resource_pool().to_owned();
            placed.extend(decisions.assignments.into_iter().map(|a| (pool.clone(), a)));
            out.preemptions.extend(decisions.preemptions.into_iter().map(|a| a.as_str().to_owned()));
        }
        for (pool, assignment) in placed {
            let placements = assignment
                .placements
                .iter()
                .map(|p| {
                    let node = p.agent_id.as_str().to_owned();
                    let device_type = self
                        .agents
                        .get(&node)
                        .and_then(|a| p.slot_ids.first().and_then(|s| a.devices.iter().find(|d| d.id == *s)))
                        .map_or("cpu", |d| d.device_type.as_str())
                        .to_owned();
                    Placement { node, slot_ids: p.slot_ids.clone(), device_type }
                })
                .collect();
            out.assignments.push(Assignment { allocation_id: assignment.allocation_id.as_str().to_owned(), pool, placements });
        }
        out
    }

    fn start(&mut self, allocation_id: &str, tasks: Vec<(Placement, StartTask)>) -> Result<(), RmError> {
        // Every message is checked before any is sent, so a start is all or nothing.
        let mut prepared = Vec::with_capacity(tasks.len());
        let hosts: Vec<String> = tasks
            .iter()
            .map(|(p, _)| self.agents.get(&p.node).and_then(|a| a.addresses.first().cloned()).unwrap_or_else(|| "127.0.0.1".to_owned()))
            .collect();
        let placements: Vec<Placement> = tasks.iter().map(|(p, _)| p.clone()).collect();
        let rendezvous = super::gang::rendezvous(&placements, &hosts);
        for (((placement, mut task), host), rendezvous) in tasks.into_iter().zip(hosts).zip(rendezvous) {
            // Services bind where the master's proxy reaches this agent.
            task.env.insert(SERVICE_HOST_ENV.to_owned(), host);
            task.rendezvous = Some(rendezvous);
            let chunks = stream_archive(&mut task);
            check_message_size(&task)?;
            prepared.push((placement, task, chunks));
        }
        for (placement, task, chunks) in prepared {
            let container_id = task.container_id.clone();
            let task_id = task.task_id.clone();
            let rendezvous = task.rendezvous.clone();
            if !self.send(&placement.node, MasterToAgent::StartTask(Box::new(task))) {
                return Err(RmError::Unavailable(format!("agent {} is not connected", placement.node)));
            }
            for chunk in chunks {
                self.send(&placement.node, chunk);
            }
            self.containers.insert(
                container_id,
                ContainerRun {
                    allocation_id: allocation_id.to_owned(),
                    task_id,
                    agent_id: placement.node,
                    slot_ids: placement.slot_ids,
                    running: false,
                    rendezvous,
                },
            );
        }
        Ok(())
    }

    fn await_reattach(&mut self, request: ResourceRequest) {
        self.await_allocation(request);
    }

    fn give_up_reattach(&mut self, allocation_id: &str) {
        self.stop_awaiting(allocation_id);
    }

    fn kill(&mut self, allocation_id: &str) {
        let targets: Vec<(String, String)> = self
            .containers
            .iter()
            .filter(|(_, c)| c.allocation_id == allocation_id)
            .map(|(id, c)| (c.agent_id.clone(), id.clone()))
            .collect();
        for (agent_id, container_id) in targets {
            self.send(&agent_id, MasterToAgent::KillTask { container_id });
        }
    }

    fn handle(&mut self, input: RmInput) -> Vec<RmEvent> {
        let RmInput::Agent(input) = input;
        match input {
            AgentInput::Connected { conn_id, query, outbox } => {
                self.connected(conn_id, query, outbox);
                Vec::new()
            }
            AgentInput::Message { conn_id, agent_id, message } => self.message(conn_id, &agent_id, message),
            AgentInput::Disconnected { conn_id, agent_id } => {
                self.disconnected(conn_id, &agent_id);
                Vec::new()
            }
            AgentInput::ReconnectExpired { agent_id, conn_id } => self.reconnect_expired(&agent_id, conn_id),
        }
    }

    fn control(&mut self, command: &NodeCommand) -> Result<NodeControlled, ControlError> {
        self.control_node(command)
    }

    fn restore_controls(&mut self, controls: Vec<resolute_store::AgentControlRecord>) {
        self.restore_node_controls(controls);
    }

    fn job_queue(&self) -> Vec<super::JobQueueView> {
        super::job_queue::queue_of(&self.pools)
    }

    fn update_job(&mut self, job_id: &str, update: &super::JobUpdate) -> Result<(), RmError> {
        super::job_queue::update(&mut self.pools, job_id, update)
    }

    fn forget_job(&mut self, job_id: &str) {
        super::job_queue::forget(&mut self.pools, job_id);
    }

    fn restore_queue_order(&mut self, positions: Vec<resolute_store::JobQueuePositionRecord>) {
        for (pool, restored) in super::job_queue::restored_orders(positions) {
            // The clock goes on above every stored place, so later jobs queue behind them.
            self.tick = self.tick.max(restored.clock_floor.0);
            self.pool(&pool).restore_positions(restored);
        }
    }

    fn take_queue_order_changes(&mut self) -> super::QueueOrderChanges {
        super::job_queue::take_changes(&mut self.pools)
    }

    fn view(&self) -> ClusterView {
        let pools = self.pools.iter().map(|(name, scheduler)| (name.clone(), scheduler.stats())).collect();
        let mut view = ClusterView { pools, ..ClusterView::default() };
        for agent in self.agents.values().filter(|a| a.started) {
            let status = self.status_of(&agent.id, &agent.resource_pool);
            let slots = agent
                .devices
                .iter()
                .map(|d| {
                    let slot = SlotView {
                        id: d.id,
                        brand: d.brand.clone(),
                        uuid: d.uuid.clone(),
                        device_type: d.device_type.clone(),
                        enabled: !status.disabled_slots.contains(&d.id),
                        container: None,
                    };
                    (d.id, slot)
                })
                .collect();
            view.agents.insert(
                agent.id.clone(),
                AgentView {
                    id: agent.id.clone(),
                    registered_time: agent.registered,
                    resource_pool: agent.resource_pool.clone(),
                    hostname: agent.hostname.clone(),
                    addresses: agent.addresses.clone(),
                    unix_user: agent.unix_user.clone(),
                    version: agent.version.clone(),
                    enabled: status.mode == resolute_scheduler::AgentMode::Enabled,
                    draining: status.mode == resolute_scheduler::AgentMode::Draining,
                    slots,
                },
            );
        }
        for (container_id, c) in &self.containers {
            let Some(agent) = view.agents.get_mut(&c.agent_id) else { continue };
            let state = if c.running { AllocationState::Running } else { AllocationState::Starting };
            let container = ContainerView {
                id: container_id.clone(),
                allocation_id: c.allocation_id.clone(),
                task_id: c.task_id.clone(),
                state: state.as_str().to_owned(),
                agent_id: c.agent_id.clone(),
                slot_ids: c.slot_ids.clone(),
                rendezvous: c.rendezvous.clone(),
            };
            for slot in &c.slot_ids {
                if let Some(s) = agent.slots.get_mut(slot) {
                    s.container = Some(container.clone());
                }
            }
        }
        view
    }
}

/// Moves the task's work-dir archive out of its `StartTask` into the chunk messages that follow
/// it, so that no message grows with the model definition.
fn stream_archive(task: &mut StartTask) -> Vec<MasterToAgent> {
    let Some(archive) = task.work_dir_archive_b64.take() else { return Vec::new() };
    let (stream, chunks) = archive_chunks(&task.container_id, &archive);
    task.work_dir_archive_stream = Some(stream);
    chunks
}

/// What is left of a `StartTask` (environment, files, harness info) must fit one agent message.
fn check_message_size(task: &StartTask) -> Result<(), RmError> {
    let size = serde_json::to_vec(&MasterToAgent::StartTask(Box::new(task.clone()))).map_or(0, |v| v.len());
    if size > MAX_MESSAGE_BYTES {
        return Err(RmError::Unavailable(format!(
            "its start message is {size} bytes (environment variables, task files and harness info), over the agent's \
             {MAX_MESSAGE_BYTES}-byte message limit; make environment_variables or the hyperparameters smaller"
        )));
    }
    Ok(())
}

fn device_type(name: &str) -> DeviceType {
    match name {
        "cuda" | "gpu" => DeviceType::Cuda,
        "rocm" => DeviceType::Rocm,
        _ => DeviceType::Cpu,
    }
}

#[cfg(test)]
mod tests {
    use resolute_api::agent_protocol::TaskEntrypoint;

    use super::*;

    #[test]
    fn only_the_same_installation_started_again_replaces_an_open_session() {
        let query = |instance: &str, reconnect: bool| AgentConnectQuery {
            id: "a".into(),
            version: String::new(),
            resource_pool: "default".into(),
            hostname: "h".into(),
            reconnect,
            instance: instance.into(),
        };
        assert!(replaces_session("h:/w", &query("h:/w", false)));
        // Another agent with the same id (elsewhere, or another work root) is refused as before.
        assert!(!replaces_session("h:/w", &query("h:/other", false)));
        assert!(!replaces_session("", &query("", false)));
        // A reconnecting session is the old one's process: it cannot be a restarted agent.
        assert!(!replaces_session("h:/w", &query("h:/w", true)));
    }

    fn start(archive_b64: Option<String>) -> StartTask {
        StartTask {
            container_id: "c".into(),
            task_id: "t".into(),
            allocation_id: "t.1".into(),
            task_type: "TRIAL".into(),
            description: String::new(),
            slot_ids: vec![0],
            entrypoint: TaskEntrypoint::Shell("true".into()),
            env: Default::default(),
            work_dir_archive_b64: archive_b64,
            work_dir_archive_stream: None,
            python: None,
            port_env: vec![],
            ready_pattern: None,
            files: vec![],
            harness_info: Default::default(),
            run_as: None,
            task_dirs: vec![],
            rendezvous: None,
        }
    }

    #[test]
    fn archives_leave_the_start_message_for_pieces() {
        // 40 MiB of base64: far over one message, yet every message stays small.
        let mut task = start(Some("QUJD".repeat(10 * 1024 * 1024)));
        let chunks = stream_archive(&mut task);
        assert_eq!(task.work_dir_archive_b64, None);
        assert_eq!(task.work_dir_archive_stream.as_ref().map(|s| (s.bytes, s.chunks as usize)), Some((30 * 1024 * 1024, chunks.len())));
        assert!(chunks.iter().all(|c| serde_json::to_vec(c).unwrap().len() < 1024 * 1024 + 200));
        assert!(check_message_size(&task).is_ok());
        let mut plain = start(None);
        assert!(stream_archive(&mut plain).is_empty() && plain.work_dir_archive_stream.is_none());
    }

    #[test]
    fn a_start_too_large_for_one_message_is_refused_with_its_size() {
        let mut task = start(None);
        task.env.insert("HUGE".into(), "x".repeat(MAX_MESSAGE_BYTES));
        let err = check_message_size(&task).unwrap_err().to_string();
        assert!(err.contains("start message is") && err.contains("message limit") && err.contains("environment_variables"), "{err}");
    }
}
