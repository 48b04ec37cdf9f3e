// A trial's workloads (GET /api/v1/trials/:id/workloads, as `det trial describe` reads them):
// its training and validation reports and checkpoints in step order, newest first, paged by the
// master.

import { useState } from "preact/hooks";
import { api, type Workload } from "../api";
import { useResource } from "./data";
import { DASH, fmtNumber, fmtTime, fmtValue } from "./format";
import { ErrorBanner, Pager, Spinner } from "./ui";

const PAGE = 25;

function kind(w: Workload): { label: string; batches: number; time?: string; metrics: Record<string, unknown> } {
  if (w.validation) return { label: "Validation", batches: w.validation.totalBatches, time: w.validation.endTime, metrics: w.validation.metrics?.avgMetrics ?? {} };
  if (w.training) return { label: "Training", batches: w.training.totalBatches, time: w.training.endTime, metrics: w.training.metrics?.avgMetrics ?? {} };
  const c = w.checkpoint!;
  return { label: "Checkpoint", batches: c.totalBatches, time: c.endTime, metrics: { uuid: c.uuid } };
}

export function Workloads({ trialId, live, refreshKey }: { trialId: number; live: boolean; refreshKey?: unknown }) {
  const [page, setPage] = useState(0);
  const res = useResource((signal) => api.workloads(trialId, { offset: page * PAGE, limit: PAGE, orderBy: "ORDER_BY_DESC" }, signal), [trialId, page], {
    intervalMs: 5000,
    live: () => live,
    refreshKey,
  });
  if (res.error && !res.data) return <ErrorBanner error={res.error} retry={res.reload} />;
  if (!res.data) return <Spinner />;
  const { workloads, pagination } = res.data;
  return (
    <div>
      <div class="table-scroll">
        <table class="table" data-testid="workloads-table">
          <thead><tr><th>Kind</th><th>Batches</th><th>Reported</th><th>Metrics</th></tr></thead>
          <tbody>
            {workloads.length === 0 && <tr><td colSpan={4} class="empty-row">No workloads yet.</td></tr>}
            {workloads.map((w, i) => {
              const k = kind(w);
              const metrics = Object.entries(k.metrics).filter(([n]) => n !== "batches" && n !== "epochs");
              return (
                <tr key={i} data-kind={k.label.toLowerCase()}>
                  <td>{k.label}</td>
                  <td>{fmtNumber(k.batches)}</td>
                  <td>{fmtTime(k.time)}</td>
                  <td class="small">{metrics.length ? metrics.map(([n, v]) => `${n}: ${fmtValue(v)}`).join(", ") : DASH}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE} total={pagination.total} onPage={setPage} prev="‹ Newer" next="Older ›" />
    </div>
  );
}
