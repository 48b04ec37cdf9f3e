// /clusters: the agents (addresses, enabled/draining, each slot with what runs on it: the
// allocation and its task, from GET /api/v1/agents and GET /api/v1/tasks), cluster usage, the
// resource pools (GET /api/v1/resource-pools) and the job queue (GET /api/v1/job-queues). A
// master without the pools or queue endpoints gets "not available" for that card, not an error.

import { clusterApi, type AgentDetail, type AllocationSummary, type Job, type ResourcePool } from "../api";
import { useResource } from "../components/data";
import { DASH, fmtTime } from "../components/format";
import { Card, ErrorView, PageHeader, Spinner } from "../components/ui";

interface ClusterView {
  agents: AgentDetail[];
  /** Allocations by the container id their resources run in, and by allocation id. */
  byContainer: Map<string, AllocationSummary>;
  pools: ResourcePool[] | null;
  jobs: Job[] | null;
}

async function load(signal: AbortSignal): Promise<ClusterView> {
  const [agents, allocations, pools, jobs] = await Promise.all([
    clusterApi.agents(signal),
    clusterApi.allocations(signal),
    clusterApi.resourcePools(signal),
    clusterApi.jobQueue(signal),
  ]);
  const byContainer = new Map<string, AllocationSummary>();
  for (const a of Object.values(allocations)) {
    byContainer.set(a.allocationId, a);
    for (const r of a.resources ?? []) {
      if (r.containerId) byContainer.set(r.containerId, a);
      if (r.resourcesId) byContainer.set(r.resourcesId, a);
    }
  }
  return { agents, byContainer, pools, jobs };
}

export function Cluster() {
  const view = useResource(load, [], { intervalMs: 5000, live: () => true });
  if (view.error && !view.data) return <div><PageHeader title="Cluster" /><ErrorView error={view.error} retry={view.reload} /></div>;
  if (!view.data) return <div><PageHeader title="Cluster" /><Spinner /></div>;
  const { agents, byContainer, pools, jobs } = view.data;
  const slots = agents.flatMap((a) => Object.values(a.slots ?? {}));
  const busy = slots.filter((s) => s.container).length;
  const off = slots.filter((s) => s.enabled === false).length + agents.filter((a) => !a.enabled).reduce((n, a) => n + Object.keys(a.slots ?? {}).length, 0);
  return (
    <div>
      <PageHeader title="Cluster" />
      {view.error && <ErrorView error={view.error} retry={view.reload} />}
      <div class="stats" data-testid="cluster-usage">
        <Stat label="Agents" value={agents.length} />
        <Stat label="Slots" value={slots.length} />
        <Stat label="Slots in use" value={`${busy} / ${slots.length}`} />
        <Stat label="Slots disabled" value={off} />
      </div>
      {slots.length > 0 && (
        <div class="usage-bar" title={`${busy} of ${slots.length} slots in use`}><span style={{ width: `${(100 * busy) / slots.length}%` }} /></div>
      )}
      <Card title="Agents">
        {agents.length === 0 ? <p class="muted">No agent is connected.</p> : agents.map((a) => <AgentCard key={a.id} agent={a} byContainer={byContainer} />)}
      </Card>
      <Card title="Resource pools">
        {pools === null ? <NotAvailable what="Resource pools" path="/api/v1/resource-pools" /> : <Pools pools={pools} />}
      </Card>
      <Card title="Job queue">
        {jobs === null ? <NotAvailable what="The job queue" path="/api/v1/job-queues" /> : <Jobs jobs={jobs} />}
      </Card>
    </div>
  );
}

function NotAvailable({ what, path }: { what: string; path: string }) {
  return <p class="muted" data-testid="not-available">{what}: not available on this master ({path} is not served).</p>;
}

function AgentCard({ agent, byContainer }: { agent: AgentDetail; byContainer: Map<string, AllocationSummary> }) {
  const slots = Object.entries(agent.slots ?? {}).sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }));
  return (
    <div class="agent" data-testid="agent" data-agent-id={agent.id}>
      <div class="agent-head">
        <strong>{agent.id}</strong>
        <span class="muted">{agent.addresses?.length ? agent.addresses.join(", ") : DASH}</span>
        <span class={`badge tone-${agent.enabled ? (agent.draining ? "warn" : "ok") : "bad"}`} data-testid="agent-status">
          {agent.enabled ? (agent.draining ? "Draining" : "Enabled") : "Disabled"}
        </span>
        <span class="muted">pool {agent.resourcePools?.join(", ") || DASH}</span>
        <span class="muted">since {fmtTime(agent.registeredTime)}</span>
        {agent.version && <span class="muted">v{agent.version}</span>}
      </div>
      <table class="table" data-testid="slots-table">
        <thead><tr><th>Slot</th><th>Device</th><th>State</th><th>Task</th><th>Allocation</th></tr></thead>
        <tbody>
          {slots.length === 0 && <tr><td colSpan={5} class="empty-row">This agent has no slots.</td></tr>}
          {slots.map(([key, s]) => {
            const alloc = s.container ? byContainer.get(s.container.id) : undefined;
            return (
              <tr key={key} data-slot-id={s.id ?? key}>
                <td>{s.id ?? key}</td>
                <td>{[s.device?.type?.replace("TYPE_", "").toLowerCase(), s.device?.brand].filter(Boolean).join(" · ") || DASH}</td>
                <td>{s.enabled === false ? "Disabled" : s.container ? `In use (${(s.container.state ?? "").replace("STATE_", "").toLowerCase() || "running"})` : "Free"}</td>
                <td>{alloc ? alloc.name || alloc.taskId : s.container ? s.container.id : DASH}</td>
                <td class="mono">{alloc ? alloc.allocationId : DASH}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function Pools({ pools }: { pools: ResourcePool[] }) {
  return (
    <table class="table" data-testid="pools-table">
      <thead><tr><th>Name</th><th>Type</th><th>Agents</th><th>Slots used</th><th>Scheduler</th><th>Default</th></tr></thead>
      <tbody>
        {pools.length === 0 && <tr><td colSpan={6} class="empty-row">No resource pools.</td></tr>}
        {pools.map((p) => (
          <tr key={p.name}>
            <td><strong>{p.name}</strong>{p.description ? <span class="muted"> {p.description}</span> : null}</td>
            <td>{p.type?.replace("RESOURCE_POOL_TYPE_", "").toLowerCase() || DASH}</td>
            <td>{p.numAgents ?? DASH}</td>
            <td>{p.slotsUsed ?? 0} / {p.slotsAvailable ?? 0}</td>
            <td>{p.schedulerType?.replace("SCHEDULER_TYPE_", "").toLowerCase() || DASH}</td>
            <td>{[p.defaultComputePool && "compute", p.defaultAuxPool && "aux"].filter(Boolean).join(", ") || DASH}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Jobs({ jobs }: { jobs: Job[] }) {
  return (
    <table class="table" data-testid="jobs-table">
      <thead><tr><th>#</th><th>Job</th><th>Type</th><th>State</th><th>User</th><th>Pool</th><th>Slots</th><th>Priority</th><th>Submitted</th></tr></thead>
      <tbody>
        {jobs.length === 0 && <tr><td colSpan={9} class="empty-row">The queue is empty.</td></tr>}
        {jobs.map((j, i) => {
          const job = j.full ?? j;
          return (
            <tr key={job.jobId}>
              <td>{i + 1}</td>
              <td>{job.name || job.entityId}</td>
              <td>{job.type.replace("TYPE_", "").toLowerCase()}</td>
              <td>{job.summary?.state?.replace("STATE_", "").toLowerCase() || DASH}</td>
              <td>{job.username || DASH}</td>
              <td>{job.resourcePool || DASH}</td>
              <td>{job.allocatedSlots ?? 0} / {job.requestedSlots ?? 0}</td>
              <td>{job.priority ?? DASH}</td>
              <td>{fmtTime(job.submissionTime)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function Stat({ label, value }: { label: string; value: string | number }) {
  return <div class="stat"><div class="stat-value">{value}</div><div class="stat-label">{label}</div></div>;
}
