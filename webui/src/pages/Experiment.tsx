// /experiments/:id: header (state, progress, searcher, best metric, actions), learning curves of
// any metric for all trials, and the trials table. Polls while the experiment is live.

import { useState } from "preact/hooks";
import { api, ApiError, type Experiment as Exp, type Trial } from "../api";
import { useResource } from "../components/data";
import { DASH, fmtDuration, fmtNumber, fmtTime, fmtValue, isLive } from "../components/format";
import { LearningCurves } from "../components/LearningCurves";
import { metricIds, searcherMetricId } from "../components/metrics";
import { Card, ErrorBanner, ErrorView, NotFound, PageHeader, Progress, Spinner, StateBadge } from "../components/ui";
import { Link } from "../router";

const TRIALS_PAGE = 100;

export function Experiment({ id }: { id: number }) {
  const exp = useResource((signal) => api.experiment(id, signal), [id], { intervalMs: 3000, live: (d) => isLive(d.experiment.state) });
  const live = exp.data ? isLive(exp.data.experiment.state) : false;
  const [trialPage, setTrialPage] = useState(0);
  const trials = useResource(
    (signal) => api.trials(id, { offset: trialPage * TRIALS_PAGE, limit: TRIALS_PAGE, sortBy: "SORT_BY_ID", orderBy: "ORDER_BY_ASC" }, signal),
    [id, trialPage],
    { intervalMs: 3000, live: () => live, refreshKey: exp.data?.experiment.state },
  );
  const [actionError, setActionError] = useState<ApiError | null>(null);

  if (!Number.isFinite(id)) return <NotFound what="Experiment not found" />;
  if (exp.error && !exp.data) return <ErrorView error={exp.error} what="Experiment" retry={exp.reload} />;
  if (!exp.data) return <Spinner />;
  const e = exp.data.experiment;
  const trialList = trials.data?.trials ?? [];

  const act = async (action: "pause" | "activate" | "cancel" | "kill") => {
    if (action === "kill" && !window.confirm(`Kill experiment ${e.id}? Running trials stop without a checkpoint.`)) return;
    setActionError(null);
    try {
      await api.experimentAction(e.id, action);
      exp.reload();
      trials.reload();
    } catch (err) {
      setActionError(err instanceof ApiError ? err : new ApiError("server", String(err)));
    }
  };

  return (
    <div>
      <PageHeader
        title={<span>{e.name || `Experiment ${e.id}`} <span class="muted id">#{e.id}</span></span>}
        crumbs={[{ href: "/experiments", label: "Experiments" }]}
      >
        <Actions e={e} act={act} />
      </PageHeader>
      {exp.error && <ErrorBanner error={exp.error} retry={exp.reload} />}
      {actionError && <ErrorBanner error={actionError} />}
      <div class="summary" data-testid="experiment-summary">
        <Field label="State"><StateBadge state={e.state} /></Field>
        <Field label="Progress"><Progress value={e.progress} /></Field>
        <Field label="Searcher">{e.searcherType || DASH}</Field>
        <Field label={`Best ${e.searcherMetric || "metric"}`}>
          {e.bestTrialSearcherMetric != null ? (
            <span data-testid="best-metric">{fmtNumber(e.bestTrialSearcherMetric)}{e.bestTrialId != null && <span class="muted small"> (trial {e.bestTrialId})</span>}</span>
          ) : DASH}
        </Field>
        <Field label="Trials">{fmtNumber(e.numTrials)}</Field>
        <Field label="User">{e.username || DASH}</Field>
        <Field label="Started">{fmtTime(e.startTime)}</Field>
        <Field label="Duration">{fmtDuration(e.startTime, e.endTime)}</Field>
        {e.labels?.length > 0 && <Field label="Labels">{e.labels.map((l) => <span class="label" key={l}>{l}</span>)}</Field>}
      </div>
      {e.description && <p class="description">{e.description}</p>}
      <Card title="Learning curves">
        {trials.data ? (
          <LearningCurves
            trialIds={trialList.map((t) => t.id)}
            metrics={metricIds(trialList)}
            defaultMetric={searcherMetricId(e.searcherMetric)}
            live={live}
            refreshKey={e.state}
          />
        ) : <Spinner />}
      </Card>
      <Card title={`Trials${trials.data ? ` (${trials.data.pagination.total})` : ""}`}>
        {trials.error && <ErrorBanner error={trials.error} retry={trials.reload} />}
        {trials.data ? <TrialsTable experimentId={e.id} trials={trialList} metric={e.searcherMetric} /> : !trials.error && <Spinner />}
        {trials.data && trials.data.pagination.total > TRIALS_PAGE && (
          <div class="pager">
            <button class="small secondary" disabled={trialPage === 0} onClick={() => setTrialPage(trialPage - 1)}>‹ Previous</button>
            <span>Page {trialPage + 1} of {Math.ceil(trials.data.pagination.total / TRIALS_PAGE)}</span>
            <button class="small secondary" disabled={(trialPage + 1) * TRIALS_PAGE >= trials.data.pagination.total} onClick={() => setTrialPage(trialPage + 1)}>Next ›</button>
          </div>
        )}
      </Card>
    </div>
  );
}

function Actions({ e, act }: { e: Exp; act: (a: "pause" | "activate" | "cancel" | "kill") => void }) {
  const running = ["STATE_ACTIVE", "STATE_QUEUED", "STATE_PULLING", "STATE_STARTING", "STATE_RUNNING"].includes(e.state);
  const paused = e.state === "STATE_PAUSED";
  if (!running && !paused) return null;
  return (
    <span class="button-row">
      {running && <button class="secondary" onClick={() => act("pause")}>Pause</button>}
      {paused && <button class="secondary" onClick={() => act("activate")}>Activate</button>}
      <button class="secondary" onClick={() => act("cancel")}>Cancel</button>
      <button class="danger" onClick={() => act("kill")} data-testid="kill">Kill</button>
    </span>
  );
}

function Field({ label, children }: { label: string; children: preact.ComponentChildren }) {
  return <div class="field"><div class="field-label">{label}</div><div class="field-value">{children}</div></div>;
}

function TrialsTable({ experimentId, trials, metric }: { experimentId: number; trials: Trial[]; metric?: string }) {
  const hpNames = Array.from(new Set(trials.flatMap((t) => Object.keys(t.hparams ?? {})))).sort();
  const latest = (t: Trial) => (metric ? t.summaryMetrics?.validation_metrics?.[metric]?.last : undefined);
  return (
    <div class="table-scroll">
      <table class="table" data-testid="trials-table">
        <thead>
          <tr>
            <th>Trial</th><th>State</th><th>Batches</th>
            <th>Best {metric ?? "metric"}</th><th>Latest {metric ?? "metric"}</th>
            {hpNames.map((h) => <th key={h} class="hp">{h}</th>)}
            <th>Restarts</th><th>Started</th><th>Duration</th>
          </tr>
        </thead>
        <tbody>
          {trials.length === 0 && <tr><td colSpan={8 + hpNames.length} class="empty-row">No trials yet.</td></tr>}
          {trials.map((t) => (
            <tr key={t.id} data-trial-id={t.id}>
              <td><Link href={`/experiments/${experimentId}/trials/${t.id}`} class="strong">{t.id}</Link></td>
              <td><StateBadge state={t.state} /></td>
              <td>{fmtNumber(t.totalBatchesProcessed)}</td>
              <td>{fmtNumber(t.searcherMetricValue)}</td>
              <td>{fmtValue(latest(t))}</td>
              {hpNames.map((h) => <td key={h} class="hp">{fmtValue(t.hparams?.[h])}</td>)}
              <td>{fmtNumber(t.restarts)}</td>
              <td>{fmtTime(t.startTime)}</td>
              <td>{fmtDuration(t.startTime, t.endTime)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
