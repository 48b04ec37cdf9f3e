// /tasks: notebooks, TensorBoards, shells and commands (GET /api/v1/{notebooks,tensorboards,
// shells,commands}) with state, owner and start time; launch JupyterLab (POST /api/v1/notebooks)
// or a TensorBoard for experiment ids (POST /api/v1/tensorboards; the experiments table's
// "TensorBoard" bulk action lands here too); kill; open a notebook or TensorBoard through the
// master's /proxy/{id}/ once its allocation is ready (GET /api/v1/tasks/{id} → isReady). Polls
// while shown.

import { useState } from "preact/hooks";
import { ApiError, clusterApi, type CommandTask, type TaskKind } from "../api";
import { useResource } from "../components/data";
import { DASH, fmtTime } from "../components/format";
import { Card, ErrorBanner, ErrorView, PageHeader, Spinner, StateBadge } from "../components/ui";
import type { Location } from "../router";

const KINDS: { kind: TaskKind; label: string; opens: boolean }[] = [
  { kind: "notebook", label: "JupyterLab", opens: true },
  { kind: "tensorboard", label: "TensorBoard", opens: true },
  { kind: "shell", label: "Shell", opens: false },
  { kind: "command", label: "Command", opens: false },
];

interface Row extends CommandTask { kind: TaskKind; ready: boolean }

async function loadTasks(signal: AbortSignal): Promise<Row[]> {
  const lists = await Promise.all(KINDS.map((k) => clusterApi.tasksOf(k.kind, signal).then((ts) => ts.map((t) => ({ ...t, kind: k.kind, ready: false })))));
  const rows = lists.flat().sort((a, b) => b.startTime.localeCompare(a.startTime));
  // Readiness of what can be opened: its allocation says so once the service answers.
  await Promise.all(
    rows
      .filter((r) => r.state === "STATE_RUNNING" && KINDS.find((k) => k.kind === r.kind)?.opens)
      .map(async (r) => {
        try {
          const t = await clusterApi.task(r.id, signal);
          r.ready = t.allocations.some((a) => a.isReady);
        } catch (e) {
          if (!(e instanceof ApiError && e.kind === "not-found")) throw e;
        }
      }),
  );
  return rows;
}

export function Tasks({ loc }: { loc: Location }) {
  const [refresh, setRefresh] = useState(0);
  // Always polled (conditional GETs: an unchanged list costs a 304): tasks start, become ready
  // and end on their own, and a kill lands a moment after its request.
  const tasks = useResource(loadTasks, [], { intervalMs: 2500, live: () => true, refreshKey: refresh });
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [expIds, setExpIds] = useState(loc.query.get("experiments") ?? "");

  const act = async (f: () => Promise<unknown>) => {
    setBusy(true);
    setActionError(null);
    try {
      await f();
      setRefresh((n) => n + 1);
    } catch (e) {
      setActionError(e instanceof ApiError ? e : new ApiError("server", String(e)));
    } finally {
      setBusy(false);
    }
  };
  const ids = expIds.split(/[\s,]+/).filter(Boolean);
  const badIds = ids.filter((x) => !/^[0-9]{1,9}$/.test(x));

  return (
    <div>
      <PageHeader title="Tasks">
        <button data-testid="launch-notebook" disabled={busy} onClick={() => act(() => clusterApi.launchNotebook())}>Launch JupyterLab</button>
      </PageHeader>
      <div class="toolbar">
        <label>
          TensorBoard for experiments{" "}
          <input data-testid="tensorboard-experiments" placeholder="e.g. 3, 7" value={expIds} onInput={(e) => setExpIds(e.currentTarget.value)} aria-label="Experiment ids" />
        </label>
        <button
          class="secondary"
          data-testid="launch-tensorboard"
          disabled={busy || ids.length === 0 || badIds.length > 0}
          title={badIds.length ? `not an experiment id: ${badIds.join(", ")}` : undefined}
          onClick={() => act(() => clusterApi.launchTensorboard(ids.map(Number)))}
        >
          Launch TensorBoard
        </button>
        {badIds.length > 0 && <span class="muted">Not an experiment id: {badIds.join(", ")}</span>}
      </div>
      {actionError && <ErrorBanner error={actionError} />}
      <Card>
        {tasks.error && <ErrorView error={tasks.error} retry={tasks.reload} />}
        {tasks.data ? <TaskTable rows={tasks.data} kill={(r) => act(() => clusterApi.killTask(r.kind, r.id))} busy={busy} /> : !tasks.error && <Spinner />}
      </Card>
    </div>
  );
}

function TaskTable({ rows, kill, busy }: { rows: Row[]; kill: (r: Row) => void; busy: boolean }) {
  return (
    <table class="table" data-testid="tasks-table">
      <thead>
        <tr><th>Type</th><th>ID</th><th>Description</th><th>State</th><th>Owner</th><th>Started</th><th>Pool</th><th /></tr>
      </thead>
      <tbody>
        {rows.length === 0 && <tr><td colSpan={8} class="empty-row">No notebooks, TensorBoards, shells or commands are running.</td></tr>}
        {rows.map((r) => {
          const label = KINDS.find((k) => k.kind === r.kind)?.label ?? r.kind;
          const ended = r.state === "STATE_TERMINATED";
          return (
            <tr key={r.id} data-task-id={r.id} data-task-kind={r.kind} data-ready={r.ready ? "1" : "0"}>
              <td>{label}</td>
              <td class="mono" title={r.id}>{r.id.slice(0, 8)}</td>
              <td>{r.description || DASH}{r.experimentIds?.length ? <span class="muted"> (experiments {r.experimentIds.join(", ")})</span> : null}</td>
              <td><StateBadge state={r.state} />{ended && r.exitStatus ? <span class="muted"> {r.exitStatus}</span> : null}</td>
              <td>{r.displayName || r.username || DASH}</td>
              <td>{fmtTime(r.startTime)}</td>
              <td>{r.resourcePool || DASH}</td>
              <td class="actions-cell">
                {r.ready && !ended && (
                  <a class="button small" data-testid="open-task" href={`/proxy/${r.id}/`} target="_blank" rel="noopener">Open</a>
                )}
                {!r.ready && !ended && KINDS.find((k) => k.kind === r.kind)?.opens && <span class="muted small">starting…</span>}
                {!ended && (
                  <button
                    class="small danger"
                    data-testid="kill-task"
                    disabled={busy}
                    onClick={() => {
                      if (window.confirm(`Kill ${label} ${r.id.slice(0, 8)}?`)) kill(r);
                    }}
                  >
                    Kill
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
