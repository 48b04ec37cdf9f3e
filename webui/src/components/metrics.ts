// Metric names a trial reported, from its summary metrics (no extra request): `training.loss`,
// `validation.val_loss`, … (`batches`/`epochs` bookkeeping entries left out).

import type { Trial } from "../api";

export function metricIds(trials: Trial[]): string[] {
  const ids = new Set<string>();
  for (const t of trials) {
    for (const [group, summary] of [["training", t.summaryMetrics?.avg_metrics], ["validation", t.summaryMetrics?.validation_metrics]] as const) {
      for (const [name, s] of Object.entries(summary ?? {})) {
        if (name === "batches" || name === "epochs") continue;
        if (s && s.type && s.type !== "number") continue;
        ids.add(`${group}.${name}`);
      }
    }
  }
  return Array.from(ids).sort((a, b) => (a.startsWith("validation") === b.startsWith("validation") ? a.localeCompare(b) : a.startsWith("validation") ? -1 : 1));
}

/** The experiment's searcher metric as a metric id (validation group), if set. */
export function searcherMetricId(metric: string | undefined): string | undefined {
  return metric ? `validation.${metric}` : undefined;
}
