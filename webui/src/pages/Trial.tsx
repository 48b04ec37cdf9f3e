// /experiments/:e/trials/:t: the trial's metric chart, hyperparameters, workloads, checkpoints (with
// download) and logs (live follow, level filter, search, download).

import { api } from "../api";
import { useResource } from "../components/data";
import { DASH, fmtDuration, fmtNumber, fmtTime, fmtValue, isLive } from "../components/format";
import { LearningCurves } from "../components/LearningCurves";
import { Checkpoints } from "../components/Checkpoints";
import { Logs } from "../components/Logs";
import { Workloads } from "../components/Workloads";
import { metricIds, searcherMetricId } from "../components/metrics";
import { Card, ErrorBanner, ErrorView, NotFound, PageHeader, Spinner, StateBadge } from "../components/ui";

export function Trial({ experimentId, trialId }: { experimentId: number; trialId: number }) {
  const trial = useResource((signal) => api.trial(trialId, signal), [trialId], { intervalMs: 3000, live: (t) => isLive(t.state) });
  const exp = useResource((signal) => api.experiment(experimentId, signal), [experimentId]);

  if (!Number.isFinite(trialId) || !Number.isFinite(experimentId)) return <NotFound what="Trial not found" />;
  if (trial.error && !trial.data) return <ErrorView error={trial.error} what="Trial" retry={trial.reload} />;
  if (!trial.data) return <Spinner />;
  const t = trial.data;
  if (t.experimentId !== experimentId) return <NotFound what={`Trial ${trialId} is not in experiment ${experimentId}`} />;
  const e = exp.data?.experiment;
  const live = isLive(t.state);
  const hps = Object.entries(t.hparams ?? {});
  const validation = Object.entries(t.summaryMetrics?.validation_metrics ?? {}).filter(([k]) => k !== "batches" && k !== "epochs");

  return (
    <div>
      <PageHeader
        title={<span>Trial {t.id} <span class="muted id">of {e?.name || `experiment ${experimentId}`}</span></span>}
        crumbs={[{ href: "/experiments", label: "Experiments" }, { href: `/experiments/${experimentId}`, label: e?.name || `Experiment ${experimentId}` }]}
      />
      {trial.error && <ErrorBanner error={trial.error} retry={trial.reload} />}
      <div class="summary" data-testid="trial-summary">
        <div class="field"><div class="field-label">State</div><div class="field-value"><StateBadge state={t.state} /></div></div>
        <div class="field"><div class="field-label">Batches</div><div class="field-value">{fmtNumber(t.totalBatchesProcessed)}</div></div>
        <div class="field"><div class="field-label">Best {e?.searcherMetric ?? "metric"}</div><div class="field-value">{fmtNumber(t.searcherMetricValue)}</div></div>
        <div class="field"><div class="field-label">Restarts</div><div class="field-value">{fmtNumber(t.restarts)}</div></div>
        <div class="field"><div class="field-label">Started</div><div class="field-value">{fmtTime(t.startTime)}</div></div>
        <div class="field"><div class="field-label">Duration</div><div class="field-value">{fmtDuration(t.startTime, t.endTime)}</div></div>
      </div>
      <div class="two-col">
        <Card title="Metrics">
          <LearningCurves trialIds={[t.id]} metrics={metricIds([t])} defaultMetric={searcherMetricId(e?.searcherMetric)} live={live} refreshKey={t.state} trials={[t]} />
        </Card>
        <div>
          <Card title="Hyperparameters">
            <table class="table kv" data-testid="hparams">
              <tbody>
                {hps.length === 0 && <tr><td class="empty-row">No hyperparameters.</td></tr>}
                {hps.map(([k, v]) => <tr key={k}><th>{k}</th><td>{fmtValue(v)}</td></tr>)}
              </tbody>
            </table>
          </Card>
          <Card title="Latest validation">
            <table class="table kv">
              <tbody>
                {validation.length === 0 && <tr><td class="empty-row">{DASH}</td></tr>}
                {validation.map(([k, s]) => <tr key={k}><th>{k}</th><td>{fmtValue(s?.last)}</td></tr>)}
              </tbody>
            </table>
          </Card>
        </div>
      </div>
      <Card title="Workloads">
        <Workloads trialId={t.id} live={live} refreshKey={t.state} />
      </Card>
      <Card title="Checkpoints">
        <Checkpoints trialId={t.id} metric={e?.searcherMetric} live={live} refreshKey={t.state} />
      </Card>
      <Card title="Logs">
        <Logs trialId={t.id} live={live} />
      </Card>
    </div>
  );
}
