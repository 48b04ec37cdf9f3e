// Learning curves: one chosen metric for many trials — all of an experiment's, however many —
// from GET /api/v1/trials/time-series/columns with `maxDatapoints` (the master downsamples each
// series, keeping its ends and extremes; columns, not an object per point), in batches of TRIALS_PER_REQUEST trials fetched together, the
// trials sharing one total point budget (`pointsPerSeries`). X axis in
// batches, epochs (when the trials report `epochs`) or wall-clock time; log scale; EMA smoothing;
// hovering a line names its trial and hyperparameters; trials the adaptive searcher stopped
// early are dashed.

import { useMemo, useState } from "preact/hooks";
import { api, type Trial, type TrialSeriesColumns } from "../api";
import { flattenHparams, fmtTick, smooth } from "./hparams";
import { Chart, type Line } from "./Chart";
import { useResource } from "./data";
import { ErrorBanner, Spinner } from "./ui";

/** Points per series: about one per horizontal pixel of the chart. */
export const MAX_DATAPOINTS = 1000;
/** Points of all series together: many trials share the budget (at least MIN_DATAPOINTS each). */
export const MAX_TOTAL_POINTS = 50_000;
/** A series keeps at least its ends and a few extremes (the budget holds up to 2,500 trials). */
export const MIN_DATAPOINTS = 20;
/** Trials per time-series request (the master takes up to 1,000; smaller batches keep URLs short). */
export const TRIALS_PER_REQUEST = 200;

/** Points asked per series when `trials` series are drawn at once. */
export function pointsPerSeries(trials: number): number {
  return Math.max(MIN_DATAPOINTS, Math.min(MAX_DATAPOINTS, Math.floor(MAX_TOTAL_POINTS / Math.max(1, trials))));
}

/** Every trial's downsampled series of `metric`: one request per TRIALS_PER_REQUEST trials, all at once. */
export async function fetchCurves(trialIds: number[], metric: string, signal?: AbortSignal): Promise<TrialSeriesColumns[]> {
  const perSeries = pointsPerSeries(trialIds.length);
  const batches: number[][] = [];
  for (let i = 0; i < trialIds.length; i += TRIALS_PER_REQUEST) batches.push(trialIds.slice(i, i + TRIALS_PER_REQUEST));
  const answers = await Promise.all(batches.map((ids) => api.seriesColumns(ids, [metric], perSeries, signal)));
  performance.mark("curves-data"); // for webui/e2e/bench.mjs's breakdown
  return answers.flat();
}

export function LearningCurves(props: {
  trialIds: number[];
  metrics: string[];
  defaultMetric?: string;
  live: boolean;
  /** A change (the owner's state) fetches the series once more, e.g. the last points after it ends. */
  refreshKey?: unknown;
  labelPrefix?: string;
  /** The trials (for the hover's hyperparameters). */
  trials?: Trial[];
  /** Trial ids the searcher stopped early: drawn dashed. */
  stopped?: Set<number>;
}) {
  const initial = props.defaultMetric && props.metrics.includes(props.defaultMetric) ? props.defaultMetric : props.metrics[0];
  const [metric, setMetric] = useState<string | undefined>(initial);
  const [xAxis, setXAxis] = useState<"batches" | "epochs" | "time">("batches");
  const [smoothing, setSmoothing] = useState(0);
  const [focus, setFocus] = useState<number | null>(null);
  const [log, setLog] = useState(false);
  const chosen = metric && props.metrics.includes(metric) ? metric : initial;
  const ids = props.trialIds.join(",");

  const series = useResource(
    (signal) => (chosen && props.trialIds.length ? fetchCurves(props.trialIds, chosen, signal) : Promise.resolve([])),
    [ids, chosen],
    { intervalMs: 5000, live: () => props.live, refreshKey: props.refreshKey },
  );

  const hasEpochs = useMemo(() => !!series.data?.some((t) => t.metrics.some((m) => m.epochs?.some((e) => typeof e === "number"))), [series.data]);
  const x = xAxis === "epochs" && !hasEpochs ? "batches" : xAxis;
  const shown = useMemo(() => (series.data ?? []).filter((t) => t.metrics.some((m) => m.batches.length)), [series.data]);
  const lines: Line[] = useMemo(() => {
    if (!chosen) return [];
    const name = chosen.slice(chosen.indexOf(".") + 1);
    return shown.map((t) => {
      const xs: number[] = [];
      const ys: number[] = [];
      for (const m of t.metrics) {
        const vs = m.values[name];
        const at = x === "batches" ? m.batches : x === "epochs" ? m.epochs : m.times;
        if (!vs || !at) continue;
        for (let i = 0; i < vs.length; i++) {
          const v = vs[i];
          const xv = at[i];
          if (typeof v !== "number" || typeof xv !== "number") continue;
          xs.push(xv);
          ys.push(v);
        }
      }
      const stopped = props.stopped?.has(t.trialId);
      return {
        label: `${props.labelPrefix ?? "Trial"} ${t.trialId}${stopped ? " (stopped early)" : ""}`,
        xs,
        ys: smooth(ys, smoothing),
        dashed: stopped,
      };
    });
  }, [shown, chosen, x, smoothing, props.stopped]);
  const focusedId = focus !== null ? shown[focus]?.trialId : undefined;
  const focusedTrial = focusedId !== undefined ? props.trials?.find((t) => t.id === focusedId) : undefined;
  const focusedHps = focusedTrial ? flattenHparams(focusedTrial.hparams) : {};

  if (!props.metrics.length) return <p class="muted">No metrics reported yet.</p>;
  return (
    <div>
      <div class="toolbar">
        <label>Metric{" "}
          <select value={chosen} onChange={(e) => setMetric(e.currentTarget.value)} data-testid="metric-select">
            {props.metrics.map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
        <label>X axis{" "}
          <select value={x} onChange={(e) => setXAxis(e.currentTarget.value as "batches" | "epochs" | "time")} data-testid="x-axis-select">
            <option value="batches">Batches</option>
            {hasEpochs && <option value="epochs">Epochs</option>}
            <option value="time">Time</option>
          </select>
        </label>
        <label class="check"><input type="checkbox" checked={log} onChange={(e) => setLog(e.currentTarget.checked)} data-testid="log-scale" /> Log scale</label>
        <label>Smoothing{" "}
          <input type="range" min={0} max={0.99} step={0.01} value={smoothing} onInput={(e) => setSmoothing(Number(e.currentTarget.value))} data-testid="smoothing" />
          <span class="muted small"> {smoothing.toFixed(2)}</span>
        </label>
        <span class="muted small">Drag to zoom, double-click to reset.</span>
      </div>
      {series.error && <ErrorBanner error={series.error} retry={series.reload} />}
      {series.data ? (
        lines.some((l) => l.xs.length) ? (
          <>
            <Chart lines={lines} xLabel={x === "batches" ? "Batches" : x === "epochs" ? "Epochs" : "Time"} yLabel={chosen ?? ""} logScale={log} time={x === "time"} testId="learning-curve" onFocus={setFocus} />
            <div class="muted small hover-line" data-testid="curve-hover">
              {focusedId !== undefined
                ? `Trial ${focusedId}${props.stopped?.has(focusedId) ? " (stopped early)" : ""}: ${Object.entries(focusedHps).map(([k, v]) => `${k}=${typeof v === "number" ? fmtTick(v) : v}`).join(", ") || "no hyperparameters"}`
                : "Hover a line for its trial and hyperparameters."}
            </div>
          </>
        ) : (
          <p class="muted">No {chosen} points yet.</p>
        )
      ) : (
        !series.error && <Spinner />
      )}
    </div>
  );
}
