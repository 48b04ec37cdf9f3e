// Hyperparameters as the experiment page's views read them: flattened names (`optimizer.lr`, as
// the master's importance names them), each one's axis (numeric, log-scale or categorical), and a
// trial's value of a chosen metric. Pure functions, no requests.

import type { Trial } from "../api";

export type HpValue = number | string;

/** `{optimizer: {lr: 0.1}}` → `{"optimizer.lr": 0.1}`; non-numbers become their JSON text. */
export function flattenHparams(h: Record<string, unknown> | undefined, prefix = "", out: Record<string, HpValue> = {}): Record<string, HpValue> {
  for (const [k, v] of Object.entries(h ?? {})) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object" && !Array.isArray(v)) flattenHparams(v as Record<string, unknown>, key, out);
    else if (typeof v === "number" && Number.isFinite(v)) out[key] = v;
    else out[key] = typeof v === "string" ? v : JSON.stringify(v);
  }
  return out;
}

/** One hyperparameter's axis: where a value sits, 0–1, on a linear, log or categorical scale. */
export interface Axis {
  name: string;
  kind: "linear" | "log" | "categorical";
  min: number;
  max: number;
  categories: string[];
  pos: (v: HpValue | undefined) => number | null;
  /** Tick labels with their positions. */
  ticks: { at: number; label: string }[];
}

/** The config's `type: log` for a (possibly nested) hyperparameter. */
function configType(config: Record<string, unknown> | undefined, name: string): string | undefined {
  let node: unknown = config?.hyperparameters;
  for (const part of name.split(".")) {
    if (!node || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  const t = node && typeof node === "object" ? (node as Record<string, unknown>).type : undefined;
  return typeof t === "string" ? t : undefined;
}

export function fmtTick(x: number): string {
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e4 || a < 1e-3) return x.toExponential(1);
  return String(Number(x.toPrecision(3)));
}

export function makeAxis(name: string, values: (HpValue | undefined)[], hpType?: string): Axis {
  const present = values.filter((v): v is HpValue => v !== undefined);
  const numeric = present.length > 0 && present.every((v) => typeof v === "number") && hpType !== "categorical";
  if (!numeric) {
    const categories = Array.from(new Set(present.map(String))).sort();
    const at = (i: number) => (categories.length <= 1 ? 0.5 : i / (categories.length - 1));
    const index = new Map(categories.map((c, i) => [c, i]));
    return {
      name, kind: "categorical", min: 0, max: Math.max(0, categories.length - 1), categories,
      pos: (v) => (v === undefined ? null : at(index.get(String(v)) ?? 0)),
      ticks: categories.map((c, i) => ({ at: at(i), label: c })),
    };
  }
  const xs = present as number[];
  let min = Math.min(...xs);
  let max = Math.max(...xs);
  const log = (hpType === "log" || (min > 0 && max / min >= 1000)) && min > 0;
  const f = log ? Math.log10 : (x: number) => x;
  if (min === max) {
    min -= min === 0 ? 1 : Math.abs(min) * 0.5;
    max += max === 0 ? 1 : Math.abs(max) * 0.5;
  }
  const lo = f(min > 0 || !log ? min : 1e-12);
  const hi = f(max);
  const pos = (v: HpValue | undefined) => (typeof v === "number" && (!log || v > 0) ? (f(v) - lo) / (hi - lo || 1) : null);
  const ticks = [0, 0.5, 1].map((t) => ({ at: t, label: fmtTick(log ? 10 ** (lo + t * (hi - lo)) : lo + t * (hi - lo)) }));
  return { name, kind: log ? "log" : "linear", min, max, categories: [], pos, ticks };
}

export interface HpTable {
  axes: Axis[];
  rows: { trial: Trial; hps: Record<string, HpValue>; metric: number | null }[];
}

/** A trial's value of `metricId` (`validation.loss`): the searcher metric's best, else the latest. */
export function metricValue(t: Trial, metricId: string, searcherMetric: string | undefined): number | null {
  const dot = metricId.indexOf(".");
  const group = metricId.slice(0, dot);
  const name = metricId.slice(dot + 1);
  if (group === "validation" && name === searcherMetric && typeof t.searcherMetricValue === "number") return t.searcherMetricValue;
  const summary = group === "validation" ? t.summaryMetrics?.validation_metrics : t.summaryMetrics?.avg_metrics;
  const last = summary?.[name]?.last;
  return typeof last === "number" && Number.isFinite(last) ? last : null;
}

export function hpTable(trials: Trial[], config: Record<string, unknown> | undefined, metricId: string, searcherMetric: string | undefined): HpTable {
  const rows = trials.map((trial) => ({ trial, hps: flattenHparams(trial.hparams), metric: metricValue(trial, metricId, searcherMetric) }));
  const names = Array.from(new Set(rows.flatMap((r) => Object.keys(r.hps)))).sort();
  const axes = names.map((n) => makeAxis(n, rows.map((r) => r.hps[n]), configType(config, n)));
  return { axes, rows };
}

/** Good (blue) → bad (orange) for a value at `t` in 0–1 of the metric's range. */
export function metricColor(t: number): string {
  const c = Math.max(0, Math.min(1, t));
  const a = [53, 95, 214];
  const b = [228, 87, 46];
  const mix = a.map((x, i) => Math.round(x + (b[i]! - x) * c));
  return `rgb(${mix.join(",")})`;
}

/** Where a metric value sits between the best (0) and worst (1) of `values`. */
export function metricScale(values: (number | null)[], smallerIsBetter: boolean): (v: number | null) => number {
  const xs = values.filter((v): v is number => v !== null);
  const min = Math.min(...xs);
  const max = Math.max(...xs);
  return (v) => {
    if (v === null || !xs.length || max === min) return 0.5;
    const t = (v - min) / (max - min);
    return smallerIsBetter ? t : 1 - t;
  };
}

/** Exponential moving average as TensorBoard draws it (debiased), `weight` in [0, 1). */
export function smooth(ys: (number | null)[], weight: number): (number | null)[] {
  if (weight <= 0) return ys;
  let last = 0;
  let n = 0;
  return ys.map((y) => {
    if (y === null || !Number.isFinite(y)) return y;
    last = last * weight + (1 - weight) * y;
    n += 1;
    return last / (1 - weight ** n);
  });
}
