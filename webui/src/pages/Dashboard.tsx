// /dashboard: recent experiments (state and progress), cluster usage from /api/v1/agents, and the
// cluster message when the master has one. Polls while any experiment shown is running.

import { api, type Agent } from "../api";
import { useResource } from "../components/data";
import { ExperimentTable } from "../components/ExperimentTable";
import { isLive } from "../components/format";
import { Card, ErrorBanner, PageHeader, Spinner } from "../components/ui";
import { Link } from "../router";

interface Usage { agents: number; slots: number; busy: number; disabled: number }

function usage(agents: Agent[]): Usage {
  let slots = 0, busy = 0, disabled = 0;
  for (const a of agents) {
    for (const s of Object.values(a.slots ?? {})) {
      slots++;
      if (s.container) busy++;
      if (s.enabled === false || !a.enabled) disabled++;
    }
  }
  return { agents: agents.length, slots, busy, disabled };
}

export function Dashboard() {
  const recent = useResource(
    (signal) => api.experiments({ sortBy: "SORT_BY_START_TIME", orderBy: "ORDER_BY_DESC", limit: 10 }, signal),
    [],
    { intervalMs: 5000, live: (r) => r.experiments.some((e) => isLive(e.state)) },
  );
  const cluster = useResource(() => api.agents().then(usage), [], { intervalMs: 10000, live: () => true });
  const message = useResource(() => api.clusterMessage(), []);

  return (
    <div>
      <PageHeader title="Dashboard" />
      {message.data && <div class="banner info" data-testid="cluster-message">{message.data}</div>}
      <div class="stats">
        <Stat label="Agents" value={cluster.data?.agents} />
        <Stat label="Slots in use" value={cluster.data ? `${cluster.data.busy} / ${cluster.data.slots}` : undefined} testId="slots-in-use" />
        <Stat label="Slots free" value={cluster.data ? cluster.data.slots - cluster.data.busy - cluster.data.disabled : undefined} />
        <Stat label="Experiments" value={recent.data?.pagination.total} />
      </div>
      {cluster.data && cluster.data.slots > 0 && (
        <div class="usage-bar" title={`${cluster.data.busy} of ${cluster.data.slots} slots in use`}>
          <span style={{ width: `${(100 * cluster.data.busy) / cluster.data.slots}%` }} />
        </div>
      )}
      {cluster.error && <ErrorBanner error={cluster.error} retry={cluster.reload} />}
      <Card title="Recent experiments" extra={<Link href="/experiments">All experiments →</Link>}>
        {recent.error && <ErrorBanner error={recent.error} retry={recent.reload} />}
        {recent.data ? <ExperimentTable experiments={recent.data.experiments} compact /> : !recent.error && <Spinner />}
      </Card>
    </div>
  );
}

function Stat({ label, value, testId }: { label: string; value: string | number | undefined; testId?: string }) {
  return (
    <div class="stat" data-testid={testId}>
      <div class="stat-value">{value ?? "—"}</div>
      <div class="stat-label">{label}</div>
    </div>
  );
}
