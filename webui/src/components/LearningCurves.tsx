// Learning curves: one chosen metric for many trials, from GET /api/v1/trials/time-series with
// `maxDatapoints` (the master downsamples each series, keeping its ends and extremes). X axis in
// batches or wall-clock time, optional log scale.

import { useMemo, useState } from "preact/hooks";
import { api } from "../api";
import { Chart, type Line } from "./Chart";
import { useResource } from "./data";
import { ErrorBanner, Spinner } from "./ui";

/** Points per series: about one per horizontal pixel of the chart. */
export const MAX_DATAPOINTS = 1000;

export function LearningCurves(props: {
  trialIds: number[];
  metrics: string[];
  defaultMetric?: string;
  live: boolean;
  /** A change (the owner's state) fetches the series once more, e.g. the last points after it ends. */
  refreshKey?: unknown;
  labelPrefix?: string;
}) {
  const initial = props.defaultMetric && props.metrics.includes(props.defaultMetric) ? props.defaultMetric : props.metrics[0];
  const [metric, setMetric] = useState<string | undefined>(initial);
  const [xAxis, setXAxis] = useState<"batches" | "time">("batches");
  const [log, setLog] = useState(false);
  const chosen = metric && props.metrics.includes(metric) ? metric : initial;
  const ids = props.trialIds.join(",");

  const series = useResource(
    (signal) => (chosen && props.trialIds.length ? api.timeSeries(props.trialIds, [chosen], MAX_DATAPOINTS, signal) : Promise.resolve([])),
    [ids, chosen],
    { intervalMs: 5000, live: () => props.live, refreshKey: props.refreshKey },
  );

  const lines: Line[] = useMemo(() => {
    if (!series.data || !chosen) return [];
    const name = chosen.slice(chosen.indexOf(".") + 1);
    return series.data.map((t) => {
      const points = t.metrics.flatMap((m) => m.data).filter((p) => typeof p.values[name] === "number");
      return {
        label: `${props.labelPrefix ?? "Trial"} ${t.trial.id}`,
        xs: points.map((p) => (xAxis === "batches" ? p.batches : new Date(p.time).getTime() / 1000)),
        ys: points.map((p) => p.values[name] as number),
      };
    });
  }, [series.data, chosen, xAxis]);

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
          <select value={xAxis} onChange={(e) => setXAxis(e.currentTarget.value as "batches" | "time")}>
            <option value="batches">Batches</option>
            <option value="time">Time</option>
          </select>
        </label>
        <label class="check"><input type="checkbox" checked={log} onChange={(e) => setLog(e.currentTarget.checked)} /> Log scale</label>
        <span class="muted small">Drag to zoom, double-click to reset.</span>
      </div>
      {series.error && <ErrorBanner error={series.error} retry={series.reload} />}
      {series.data ? (
        lines.some((l) => l.xs.length) ? (
          <Chart lines={lines} xLabel={xAxis === "batches" ? "Batches" : "Time"} yLabel={chosen ?? ""} logScale={log} time={xAxis === "time"} testId="learning-curve" />
        ) : (
          <p class="muted">No {chosen} points yet.</p>
        )
      ) : (
        !series.error && <Spinner />
      )}
    </div>
  );
}
