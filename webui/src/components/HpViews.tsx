// The experiment's Hyperparameters tab: importance computed by the master (bars), parallel
// coordinates, the metric against each hyperparameter (scatter) and a heat map of two
// hyperparameters. Small hand-drawn SVG (hundreds of trials at most per page of trials).
// Log-scale hyperparameters (config `type: log`, or a range over 3 decades) get log axes;
// categorical ones an axis of their values.

import { useMemo, useState } from "preact/hooks";
import { api, type Trial } from "../api";
import { useResource } from "./data";
import { fmtNumber } from "./format";
import { type Axis, type HpTable, fmtTick, hpTable, metricColor, metricScale } from "./hparams";
import { navigate } from "../router";
import { ErrorBanner, Spinner } from "./ui";

export function HpViews(props: {
  experimentId: number;
  trials: Trial[];
  config: Record<string, unknown> | undefined;
  metrics: string[];
  defaultMetric?: string;
  searcherMetric?: string;
  smallerIsBetter: boolean;
}) {
  const initial = props.defaultMetric && props.metrics.includes(props.defaultMetric) ? props.defaultMetric : props.metrics[0];
  const [metric, setMetric] = useState<string | undefined>(initial);
  const chosen = metric && props.metrics.includes(metric) ? metric : initial;
  const table = useMemo(() => (chosen ? hpTable(props.trials, props.config, chosen, props.searcherMetric) : undefined), [props.trials, chosen]);
  // For a metric other than the searcher's, smaller is better only for names that read like a loss.
  const smaller = chosen?.endsWith(`.${props.searcherMetric}`) ? props.smallerIsBetter : /loss|error/i.test(chosen ?? "");
  const [hx, setHx] = useState<string | undefined>(undefined);
  const [hy, setHy] = useState<string | undefined>(undefined);

  if (!chosen || !table) return <p class="muted">No metrics reported yet.</p>;
  if (!table.axes.length) return <p class="muted">This experiment has no hyperparameters.</p>;
  // A hyperparameter with one value in every trial is listed, not drawn.
  const isConstant = (a: Axis) => new Set(table.rows.map((r) => String(r.hps[a.name]))).size <= 1;
  const varying = table.axes.filter((a) => !isConstant(a));
  const constants = table.axes.filter(isConstant);
  const drawn: HpTable = { axes: varying, rows: table.rows };
  const xAxis = varying.find((a) => a.name === hx) ?? varying[0] ?? table.axes[0]!;
  const yAxis = varying.find((a) => a.name === hy) ?? varying.find((a) => a !== xAxis) ?? xAxis;
  const withMetric = table.rows.filter((r) => r.metric !== null).length;

  return (
    <div data-testid="hp-views" data-trials={table.rows.length}>
      <div class="toolbar">
        <label>Metric{" "}
          <select value={chosen} onChange={(e) => setMetric(e.currentTarget.value)} data-testid="hp-metric-select">
            {props.metrics.map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
        <span class="muted small">{table.rows.length} trials, {withMetric} with {chosen}; {smaller ? "smaller" : "larger"} is better (blue).</span>
      </div>
      <h3>Importance</h3>
      <Importance experimentId={props.experimentId} metricId={chosen} />
      <h3>Parallel coordinates</h3>
      {constants.length > 0 && (
        <p class="muted small" data-testid="hp-constants" data-names={constants.map((a) => a.name).join(",")}>
          The same in every trial (not drawn): {constants.map((a) => `${a.name}=${table.rows[0]?.hps[a.name] ?? ""}`).join(", ")}
        </p>
      )}
      {varying.length === 0 ? <p class="muted">No hyperparameter varies across the trials.</p> : <ParallelCoordinates table={drawn} metricName={chosen} smaller={smaller} />}
      <h3>{chosen} against each hyperparameter</h3>
      <div class="scatter-grid" data-testid="hp-scatter">
        {varying.map((a) => <Scatter key={a.name} table={table} axis={a} metricName={chosen} smaller={smaller} />)}
      </div>
      <h3>Heat map</h3>
      <div class="toolbar">
        <label>X <select value={xAxis.name} onChange={(e) => setHx(e.currentTarget.value)} data-testid="heatmap-x">
          {varying.map((a) => <option key={a.name} value={a.name}>{a.name}</option>)}
        </select></label>
        <label>Y <select value={yAxis.name} onChange={(e) => setHy(e.currentTarget.value)} data-testid="heatmap-y">
          {varying.map((a) => <option key={a.name} value={a.name}>{a.name}</option>)}
        </select></label>
      </div>
      {varying.length > 0 && <HeatMap table={table} x={xAxis} y={yAxis} metricName={chosen} smaller={smaller} />}
    </div>
  );
}

function Importance({ experimentId, metricId }: { experimentId: number; metricId: string }) {
  const dot = metricId.indexOf(".");
  const group = metricId.slice(0, dot);
  const name = metricId.slice(dot + 1);
  const metricType = group === "training" ? "METRIC_TYPE_TRAINING" : "METRIC_TYPE_VALIDATION";
  const res = useResource((signal) => api.hpImportance(experimentId, { metricName: name, metricType }, signal), [experimentId, metricId]);
  if (res.error) return <ErrorBanner error={res.error} retry={res.reload} />;
  if (!res.data) return <Spinner />;
  const m = (group === "training" ? res.data.trainingMetrics : res.data.validationMetrics)[name];
  if (!m || m.error) return <p class="muted" data-testid="hp-importance-empty">{m?.error || "No importance yet."}</p>;
  const bars = Object.entries(m.hpImportance).sort((a, b) => b[1] - a[1]);
  return (
    <div class="importance" data-testid="hp-importance" data-trial-count={m.trialCount}>
      <p class="muted small">Share of {name}'s variance across {m.trialCount} trials each hyperparameter explains on its own (computed by the master).</p>
      {bars.map(([hp, v]) => (
        <div class="importance-row" key={hp} data-hp={hp} data-importance={v}>
          <span class="importance-name">{hp}</span>
          <span class="importance-bar"><span style={{ width: `${Math.max(0.5, v * 100)}%` }} /></span>
          <span class="importance-value">{v.toFixed(2)}</span>
        </div>
      ))}
    </div>
  );
}

function hpText(hps: Record<string, unknown>): string {
  return Object.entries(hps).map(([k, v]) => `${k}=${typeof v === "number" ? fmtTick(v) : v}`).join(", ");
}

function ParallelCoordinates({ table, metricName, smaller }: { table: HpTable; metricName: string; smaller: boolean }) {
  const [hover, setHover] = useState<number | null>(null);
  const metrics = table.rows.map((r) => r.metric);
  const scale = metricScale(metrics, smaller);
  const present = metrics.filter((m): m is number => m !== null);
  const mMin = Math.min(...present);
  const mMax = Math.max(...present);
  const metricPos = (v: number | null) => (v === null ? null : mMax === mMin ? 0.5 : (v - mMin) / (mMax - mMin));
  const cols = table.axes.length + 1;
  const W = Math.max(560, cols * 150);
  const colWidth = (W - 120) / Math.max(1, cols - 1);
  const fit = (text: string) => (text.length * 7 > colWidth - 8 ? text.slice(0, Math.max(4, Math.floor((colWidth - 8) / 7) - 1)) + "…" : text);
  const H = 300;
  const top = 24;
  const bottom = 40;
  const x = (i: number) => 60 + (i * (W - 120)) / Math.max(1, cols - 1);
  const y = (p: number) => top + (1 - p) * (H - top - bottom);
  const rows = [...table.rows].sort((a, b) => scale(b.metric) - scale(a.metric));
  const hovered = table.rows.find((r) => r.trial.id === hover);
  return (
    <div class="chart-svg">
      <svg width={W} height={H} data-testid="parallel-coordinates" data-lines={rows.length} onMouseLeave={() => setHover(null)}>
        {rows.map((r) => {
          const pts = table.axes.map((a, i) => [x(i), a.pos(r.hps[a.name])] as const).concat([[x(cols - 1), metricPos(r.metric)]]);
          if (pts.some(([, p]) => p === null)) return null;
          const d = pts.map(([px, p], i) => `${i ? "L" : "M"}${px.toFixed(1)},${y(p!).toFixed(1)}`).join("");
          return (
            <path key={r.trial.id} d={d} fill="none" stroke={metricColor(scale(r.metric))} stroke-width={hover === r.trial.id ? 3 : 1.3}
              opacity={hover === null || hover === r.trial.id ? 0.85 : 0.15} data-trial-id={r.trial.id}
              onMouseEnter={() => setHover(r.trial.id)} onClick={() => navigate(`/experiments/${r.trial.experimentId}/trials/${r.trial.id}`)} style={{ cursor: "pointer" }}>
              <title>Trial {r.trial.id}: {metricName} {fmtNumber(r.metric)}; {hpText(r.hps)}</title>
            </path>
          );
        })}
        {[...table.axes, null].map((a, i) => (
          <g key={a?.name ?? "metric"}>
            <line x1={x(i)} x2={x(i)} y1={top} y2={H - bottom} stroke="#5b6472" />
            <text x={x(i)} y={H - bottom + 16} text-anchor="middle" class="axis-title">
              {fit(a ? a.name + (a.kind === "log" ? " (log)" : "") : metricName)}
              <title>{a ? a.name : metricName}</title>
            </text>
            {(a ? a.ticks : [0, 0.5, 1].map((t) => ({ at: t, label: fmtTick(mMin + t * (mMax - mMin)) }))).map((t) => (
              <text key={t.at} x={x(i) + 4} y={y(t.at) + 4} class="tick">{t.label}</text>
            ))}
          </g>
        ))}
      </svg>
      <div class="muted small hover-line" data-testid="pc-hover">
        {hovered ? `Trial ${hovered.trial.id}: ${metricName} ${fmtNumber(hovered.metric)}; ${hpText(hovered.hps)}` : "Hover a line for its trial; click to open it."}
      </div>
    </div>
  );
}

function Scatter({ table, axis, metricName, smaller }: { table: HpTable; axis: Axis; metricName: string; smaller: boolean }) {
  const W = 260;
  const H = 190;
  const pad = { l: 52, r: 10, t: 10, b: 34 };
  const pts = table.rows.filter((r) => r.metric !== null && axis.pos(r.hps[axis.name]) !== null);
  const ms = pts.map((r) => r.metric as number);
  const lo = Math.min(...ms);
  const hi = Math.max(...ms);
  const scale = metricScale(ms, smaller);
  const px = (p: number) => pad.l + p * (W - pad.l - pad.r);
  const py = (m: number) => pad.t + (1 - (hi === lo ? 0.5 : (m - lo) / (hi - lo))) * (H - pad.t - pad.b);
  return (
    <svg width={W} height={H} class="scatter" data-hp={axis.name} data-points={pts.length}>
      <rect x={pad.l} y={pad.t} width={W - pad.l - pad.r} height={H - pad.t - pad.b} fill="none" stroke="#d5d9e0" />
      {axis.ticks.map((t) => <text key={t.at} x={px(t.at)} y={H - pad.b + 13} text-anchor="middle" class="tick">{t.label}</text>)}
      {pts.length > 0 && [lo, hi].map((m) => <text key={m} x={pad.l - 4} y={py(m) + 4} text-anchor="end" class="tick">{fmtTick(m)}</text>)}
      <text x={(W + pad.l) / 2} y={H - 4} text-anchor="middle" class="axis-title">{axis.name}{axis.kind === "log" ? " (log)" : ""}</text>
      {pts.map((r) => (
        <circle key={r.trial.id} cx={px(axis.pos(r.hps[axis.name])!)} cy={py(r.metric!)} r={3.5} fill={metricColor(scale(r.metric))} opacity={0.85}>
          <title>Trial {r.trial.id}: {metricName} {fmtNumber(r.metric)}; {axis.name}={String(r.hps[axis.name])}</title>
        </circle>
      ))}
    </svg>
  );
}

/** Cells of one axis: a categorical's values, or up to 8 equal-width bins (log bins for log). */
function cells(a: Axis): number {
  return a.kind === "categorical" ? Math.max(1, a.categories.length) : 8;
}
function cellOf(a: Axis, v: unknown): number | null {
  const p = a.pos(v as string | number | undefined);
  if (p === null) return null;
  if (a.kind === "categorical") return a.categories.indexOf(String(v));
  return Math.min(cells(a) - 1, Math.floor(p * cells(a)));
}

function HeatMap({ table, x, y, metricName, smaller }: { table: HpTable; x: Axis; y: Axis; metricName: string; smaller: boolean }) {
  const nx = cells(x);
  const ny = cells(y);
  const sums = new Map<string, { sum: number; n: number }>();
  for (const r of table.rows) {
    if (r.metric === null) continue;
    const cx = cellOf(x, r.hps[x.name]);
    const cy = cellOf(y, r.hps[y.name]);
    if (cx === null || cy === null) continue;
    const k = `${cx},${cy}`;
    const s = sums.get(k) ?? { sum: 0, n: 0 };
    s.sum += r.metric;
    s.n += 1;
    sums.set(k, s);
  }
  const means = Array.from(sums.values()).map((s) => s.sum / s.n);
  const scale = metricScale(means, smaller);
  const cw = Math.max(24, Math.min(60, 480 / nx));
  const ch = Math.max(20, Math.min(40, 320 / ny));
  const left = 90;
  const W = left + nx * cw + 10;
  const H = ny * ch + 50;
  const label = (a: Axis, i: number, n: number) =>
    a.kind === "categorical" ? a.categories[i] ?? "" : fmtTick(a.kind === "log" ? 10 ** (Math.log10(a.min) + ((i + 0.5) / n) * (Math.log10(a.max) - Math.log10(a.min))) : a.min + ((i + 0.5) / n) * (a.max - a.min));
  return (
    <svg width={W} height={H} data-testid="hp-heatmap" data-cells={sums.size}>
      {Array.from(sums.entries()).map(([k, s]) => {
        const [cx, cy] = k.split(",").map(Number) as [number, number];
        const mean = s.sum / s.n;
        return (
          <rect key={k} x={left + cx * cw} y={(ny - 1 - cy) * ch + 4} width={cw - 2} height={ch - 2} fill={metricColor(scale(mean))}>
            <title>{x.name} ≈ {label(x, cx, nx)}, {y.name} ≈ {label(y, cy, ny)}: mean {metricName} {fmtNumber(mean)} over {s.n} trial(s)</title>
          </rect>
        );
      })}
      {Array.from({ length: nx }, (_, i) => (i % Math.ceil(nx / 8) === 0 ? <text key={i} x={left + i * cw + cw / 2} y={ny * ch + 18} text-anchor="middle" class="tick">{label(x, i, nx)}</text> : null))}
      {Array.from({ length: ny }, (_, i) => <text key={i} x={left - 6} y={(ny - 1 - i) * ch + 4 + ch / 2 + 4} text-anchor="end" class="tick">{label(y, i, ny)}</text>)}
      <text x={left + (nx * cw) / 2} y={H - 6} text-anchor="middle" class="axis-title">{x.name}</text>
      <text x={12} y={12} class="axis-title">{y.name}</text>
    </svg>
  );
}
