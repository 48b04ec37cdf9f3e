// /experiments/:id: header (state, progress, searcher, best metric, actions) and tabs (`?tab=`):
// Overview (learning curves of any metric for all trials — every one, not the table's page — and
// the trials table, paged, with each trial's ASHA rung and searcher decision), Hyperparameters (importance, parallel coordinates, scatter,
// heat map), Checkpoints, Configuration, Model code and Logs (all trials interleaved, or one).
// Polls while the experiment is live.

import { useMemo, useState } from "preact/hooks";
import { api, ApiError, type Experiment as Exp, type SearcherTrial, type Trial } from "../api";
import { Checkpoints } from "../components/Checkpoints";
import { HpViews } from "../components/HpViews";
import { LogView } from "../components/Logs";
import { ModelCode } from "../components/ModelCode";
import { toYaml } from "../components/yaml";
import { useResource } from "../components/data";
import { DASH, fmtDuration, fmtNumber, fmtTime, fmtValue, isLive } from "../components/format";
import { LearningCurves } from "../components/LearningCurves";
import { metricIds, searcherMetricId } from "../components/metrics";
import { Card, ErrorBanner, ErrorView, NotFound, PageHeader, Pager, Progress, Spinner, StateBadge } from "../components/ui";
import { Link, setQuery, useLocation } from "../router";

const TRIALS_PAGE = 100;
/** Trials the Hyperparameters tab reads (one request; the master's importance reads up to 2000). */
const HP_TRIALS = 1000;

const TABS = [
  ["overview", "Overview"],
  ["hyperparameters", "Hyperparameters"],
  ["checkpoints", "Checkpoints"],
  ["configuration", "Configuration"],
  ["code", "Model code"],
  ["logs", "Logs"],
] as const;
type Tab = (typeof TABS)[number][0];

export function Experiment({ id }: { id: number }) {
  const exp = useResource((signal) => api.experiment(id, signal), [id], { intervalMs: 3000, live: (d) => isLive(d.experiment.state) });
  const live = exp.data ? isLive(exp.data.experiment.state) : false;
  const [trialPage, setTrialPage] = useState(0);
  const trials = useResource(
    (signal) => api.trials(id, { offset: trialPage * TRIALS_PAGE, limit: TRIALS_PAGE, sortBy: "SORT_BY_ID", orderBy: "ORDER_BY_ASC" }, signal),
    [id, trialPage],
    { intervalMs: 3000, live: () => live, refreshKey: exp.data?.experiment.state },
  );
  // The learning curves draw every trial, not the table's page: all ids (and hyperparameters, for
  // the hover), then the series in batches (components/LearningCurves.tsx).
  const curveTrials = useResource(
    (signal) => api.allTrials(id, signal),
    [id],
    { intervalMs: 5000, live: () => live, refreshKey: exp.data?.experiment.state },
  );
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const loc = useLocation();
  const tab: Tab = (TABS.find(([t]) => t === loc.query.get("tab"))?.[0]) ?? "overview";
  // The searcher's view of each trial (rung, decision); an unmanaged experiment has none.
  const searcher = useResource(
    (signal) => api.searcherState(id, signal).catch((err) => (err instanceof ApiError && err.kind === "bad-request" ? null : Promise.reject(err))),
    [id],
    { intervalMs: 5000, live: () => live, refreshKey: exp.data?.experiment.state },
  );
  const searcherByTrial = useMemo(() => new Map((searcher.data?.trials ?? []).filter((t) => t.trialId != null).map((t) => [t.trialId!, t])), [searcher.data]);
  const stopped = useMemo(() => new Set(Array.from(searcherByTrial.values()).filter((t) => t.decision === "stopped_early").map((t) => t.trialId!)), [searcherByTrial]);

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
      <nav class="tabs" data-testid="experiment-tabs">
        {TABS.map(([t, label]) => (
          <a key={t} href={`?tab=${t}`} class={t === tab ? "active" : ""} data-tab={t}
            onClick={(ev) => { ev.preventDefault(); setQuery({ tab: t === "overview" ? undefined : t }); }}>{label}</a>
        ))}
      </nav>
      {tab === "overview" && (
        <>
          <Card title={`Learning curves${curveTrials.data ? ` (${fmtNumber(curveTrials.data.length)} trials)` : ""}`}>
            {curveTrials.error && !curveTrials.data && <ErrorBanner error={curveTrials.error} retry={curveTrials.reload} />}
            {curveTrials.data ? (
              <LearningCurves
                trialIds={curveTrials.data.map((t) => t.id)}
                metrics={metricIds(curveTrials.data)}
                defaultMetric={searcherMetricId(e.searcherMetric)}
                live={live}
                refreshKey={e.state}
                trials={curveTrials.data}
                stopped={stopped}
              />
            ) : !curveTrials.error && <Spinner />}
          </Card>
          <Card title={`Trials${trials.data ? ` (${trials.data.pagination.total})` : ""}`}>
            {trials.error && <ErrorBanner error={trials.error} retry={trials.reload} />}
            {trials.data ? <TrialsTable experimentId={e.id} trials={trialList} metric={e.searcherMetric} searcher={searcherByTrial} /> : !trials.error && <Spinner />}
            {trials.data && <Pager page={trialPage} pageSize={TRIALS_PAGE} total={trials.data.pagination.total} onPage={setTrialPage} />}
          </Card>
        </>
      )}
      {tab === "hyperparameters" && <HyperparametersTab e={e} config={exp.data.config} live={live} />}
      {tab === "checkpoints" && (
        <Card title="Checkpoints"><Checkpoints experimentId={e.id} live={live} refreshKey={e.state} /></Card>
      )}
      {tab === "configuration" && <ConfigurationTab e={e} config={exp.data.config} />}
      {tab === "code" && <Card title="Model definition"><ModelCode experimentId={e.id} /></Card>}
      {tab === "logs" && <ExperimentLogs experimentId={e.id} trials={curveTrials.data} />}
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

function HyperparametersTab({ e, config, live }: { e: Exp; config: Record<string, unknown>; live: boolean }) {
  const all = useResource(
    (signal) => api.trials(e.id, { offset: 0, limit: HP_TRIALS, sortBy: "SORT_BY_ID", orderBy: "ORDER_BY_ASC" }, signal),
    [e.id],
    { intervalMs: 10000, live: () => live, refreshKey: e.state },
  );
  const searcher = (config?.searcher ?? {}) as Record<string, unknown>;
  if (all.error && !all.data) return <ErrorBanner error={all.error} retry={all.reload} />;
  if (!all.data) return <Spinner />;
  const list = all.data.trials;
  return (
    <Card title={`Hyperparameters (${list.length}${all.data.pagination.total > list.length ? ` of ${all.data.pagination.total}` : ""} trials)`}>
      <HpViews
        experimentId={e.id}
        trials={list}
        config={config}
        metrics={metricIds(list)}
        defaultMetric={searcherMetricId(e.searcherMetric)}
        searcherMetric={e.searcherMetric}
        smallerIsBetter={searcher.smaller_is_better !== false}
      />
    </Card>
  );
}

/** The Logs tab: every trial's logs by time (each line naming its trial), or one trial's (`?trial=`). */
function ExperimentLogs({ experimentId, trials }: { experimentId: number; trials: Trial[] | undefined }) {
  const loc = useLocation();
  if (!trials) return <Spinner />;
  if (!trials.length) return <Card title="Logs"><p class="muted">No trials yet.</p></Card>;
  const picked = trials.find((t) => String(t.id) === loc.query.get("trial"));
  const sources = (picked ? [picked] : trials).map((t) => ({ id: t.id, live: isLive(t.state) }));
  return (
    <Card title="Logs">
      <div class="toolbar">
        <label>Trial{" "}
          <select value={picked ? String(picked.id) : ""} onChange={(ev) => setQuery({ trial: ev.currentTarget.value || undefined })} data-testid="log-trial">
            <option value="">All trials ({trials.length})</option>
            {trials.map((t) => <option key={t.id} value={String(t.id)}>Trial {t.id}</option>)}
          </select>
        </label>
      </div>
      <LogView sources={sources} fileName={picked ? `trial-${picked.id}-logs.txt` : `experiment-${experimentId}-logs.txt`} />
    </Card>
  );
}

function ConfigurationTab({ e, config }: { e: Exp; config: Record<string, unknown> }) {
  const [view, setView] = useState<"expanded" | "submitted">("expanded");
  const text = view === "submitted" && e.originalConfig ? e.originalConfig : toYaml(config);
  return (
    <Card title="Configuration">
      <div class="toolbar">
        <label class="check"><input type="radio" checked={view === "expanded"} onChange={() => setView("expanded")} /> With the master's defaults</label>
        {e.originalConfig && <label class="check"><input type="radio" checked={view === "submitted"} onChange={() => setView("submitted")} /> As submitted</label>}
      </div>
      <pre class="code" data-testid="experiment-config">{text}</pre>
    </Card>
  );
}

const DECISIONS: Record<string, string> = {
  training: "training", stopped_early: "stopped early", completed: "completed", invalid_hp: "invalid hyperparameters",
  errored: "errored", user_canceled: "canceled",
};

function Decision({ s }: { s: SearcherTrial | undefined }) {
  if (!s) return <>{DASH}</>;
  const tone = s.decision === "stopped_early" ? "warn" : s.decision === "completed" ? "ok" : s.decision === "training" ? "run" : "bad";
  return <span class={`badge tone-${tone}`} data-decision={s.decision}>{DECISIONS[s.decision] ?? s.decision}</span>;
}

function TrialsTable({ experimentId, trials, metric, searcher }: { experimentId: number; trials: Trial[]; metric?: string; searcher: Map<number, SearcherTrial> }) {
  const hpNames = Array.from(new Set(trials.flatMap((t) => Object.keys(t.hparams ?? {})))).sort();
  const latest = (t: Trial) => (metric ? t.summaryMetrics?.validation_metrics?.[metric]?.last : undefined);
  return (
    <div class="table-scroll">
      <table class="table" data-testid="trials-table">
        <thead>
          <tr>
            <th>Trial</th><th>State</th><th title="The adaptive searcher's rung (bracket/rung)">Rung</th><th>Searcher decision</th><th>Batches</th>
            <th>Best {metric ?? "metric"}</th><th>Latest {metric ?? "metric"}</th>
            {hpNames.map((h) => <th key={h} class="hp">{h}</th>)}
            <th>Restarts</th><th>Started</th><th>Duration</th>
          </tr>
        </thead>
        <tbody>
          {trials.length === 0 && <tr><td colSpan={10 + hpNames.length} class="empty-row">No trials yet.</td></tr>}
          {trials.map((t) => (
            <tr key={t.id} data-trial-id={t.id} data-decision={searcher.get(t.id)?.decision ?? ""} class={searcher.get(t.id)?.decision === "stopped_early" ? "stopped" : ""}>
              <td><Link href={`/experiments/${experimentId}/trials/${t.id}`} class="strong">{t.id}</Link></td>
              <td><StateBadge state={t.state} /></td>
              <td>{searcher.get(t.id)?.rung != null ? `${searcher.get(t.id)!.bracket ?? 0}/${searcher.get(t.id)!.rung}` : DASH}</td>
              <td><Decision s={searcher.get(t.id)} /></td>
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
