// Checkpoints of an experiment or a trial, paged by the master, each with a download link: the
// master's `GET /checkpoints/{uuid}` streams the checkpoint's files as a tar (the route
// `det checkpoint download` uses), with the same session cookie.

import { useState } from "preact/hooks";
import { api } from "../api";
import { useResource } from "./data";
import { DASH, fmtNumber, fmtTime, fmtValue } from "./format";
import { Link } from "../router";
import { ErrorBanner, Pager, Spinner, StateBadge } from "./ui";

const PAGE = 50;
const LIVE_STATES = ["STATE_ACTIVE", "STATE_COMPLETED", "STATE_ERROR", "STATE_PARTIALLY_DELETED"];

export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return DASH;
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i += 1;
  }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function Checkpoints(props: { experimentId?: number; trialId?: number; metric?: string; live: boolean; refreshKey?: unknown }) {
  const [page, setPage] = useState(0);
  const [showDeleted, setShowDeleted] = useState(false);
  const res = useResource(
    (signal) => {
      // Newest first; deleted checkpoints (garbage-collected, nothing to download) only on request.
      const q = { offset: page * PAGE, limit: PAGE, sortByAttr: "SORT_BY_END_TIME", orderBy: "ORDER_BY_DESC", states: showDeleted ? undefined : LIVE_STATES };
      return props.trialId !== undefined ? api.trialCheckpoints(props.trialId, q, signal) : api.experimentCheckpoints(props.experimentId!, q, signal);
    },
    [props.experimentId, props.trialId, page, showDeleted],
    { intervalMs: 5000, live: () => props.live, refreshKey: props.refreshKey },
  );
  if (res.error && !res.data) return <ErrorBanner error={res.error} retry={res.reload} />;
  if (!res.data) return <Spinner />;
  const { checkpoints, pagination } = res.data;
  return (
    <div>
      <div class="toolbar">
        <label class="check">
          <input type="checkbox" checked={showDeleted} onChange={(e) => { setShowDeleted(e.currentTarget.checked); setPage(0); }} data-testid="show-deleted" /> Show deleted
        </label>
        <span class="muted small">{pagination.total} checkpoint(s), newest first</span>
      </div>
      <div class="table-scroll">
        <table class="table" data-testid="checkpoints-table">
          <thead>
            <tr><th>UUID</th>{props.trialId === undefined && <th>Trial</th>}<th>Batches</th><th>State</th><th>{props.metric ?? "Searcher metric"}</th><th>Size</th><th>Reported</th><th /></tr>
          </thead>
          <tbody>
            {checkpoints.length === 0 && <tr><td colSpan={8} class="empty-row">No checkpoints yet.</td></tr>}
            {checkpoints.map((c) => {
              const size = Object.values(c.resources ?? {}).reduce((n, s) => n + Number(s || 0), 0);
              const steps = c.metadata?.steps_completed;
              const metric = props.metric ? c.training?.validationMetrics?.avgMetrics?.[props.metric] : c.training?.searcherMetric;
              return (
                <tr key={c.uuid} data-uuid={c.uuid}>
                  <td class="mono small">{c.uuid}</td>
                  {props.trialId === undefined && (
                    <td>{c.training?.trialId != null ? <Link href={`/experiments/${c.training.experimentId ?? props.experimentId}/trials/${c.training.trialId}`}>{c.training.trialId}</Link> : DASH}</td>
                  )}
                  <td>{typeof steps === "number" ? fmtNumber(steps) : DASH}</td>
                  <td><StateBadge state={c.state} /></td>
                  <td>{fmtValue(metric)}</td>
                  <td>{fmtBytes(size)}</td>
                  <td>{fmtTime(c.reportTime)}</td>
                  <td>{c.state === "STATE_COMPLETED" ? <a class="button small secondary" href={api.checkpointDownloadUrl(c.uuid)} download={`${c.uuid}.tar`} data-testid="checkpoint-download">Download</a> : null}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE} total={pagination.total} onPage={setPage} />
    </div>
  );
}
