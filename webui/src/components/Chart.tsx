// A uPlot line chart of several series over one x axis (batches or time). uPlot draws large series
// on a canvas quickly; the master already downsampled each series (time-series maxDatapoints), so
// the browser never receives more points than the chart is wide.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Line {
  label: string;
  xs: number[];
  ys: (number | null)[];
  /** Drawn dashed (e.g. a trial the adaptive searcher stopped early). */
  dashed?: boolean;
}

const PALETTE = ["#355fd6", "#e4572e", "#17a398", "#f3a712", "#8e44ad", "#2e86ab", "#c0392b", "#27ae60", "#d35400", "#7f8c8d"];

/** Past this many lines a chart draws them thin (1 px lines rasterise as hairlines, several times
 *  faster than wider strokes: 500 trials' curves otherwise take most of a second to paint), without
 *  a legend and without one cursor point per line. */
const MANY_LINES = 30;

export function color(i: number): string {
  return PALETTE[i % PALETTE.length]!;
}

/** Joins lines with different x values into uPlot's aligned table (null where a line has no point). */
export function align(lines: Line[]): uPlot.AlignedData {
  const xs = Array.from(new Set(lines.flatMap((l) => l.xs))).sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const cols = lines.map((l) => {
    const col: (number | null)[] = new Array(xs.length).fill(null);
    l.xs.forEach((x, i) => {
      col[index.get(x)!] = l.ys[i] ?? null;
    });
    return col;
  });
  return [xs, ...cols] as uPlot.AlignedData;
}

export function Chart(props: {
  lines: Line[];
  xLabel: string;
  yLabel: string;
  logScale?: boolean;
  time?: boolean;
  height?: number;
  testId?: string;
  /** Told the index of the line under the cursor (null when none). */
  onFocus?: (index: number | null) => void;
}) {
  const onFocus = useRef(props.onFocus);
  onFocus.current = props.onFocus;
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  /** The user zoomed in (drag): live data updates keep that range instead of rescaling. */
  const zoomed = useRef(false);
  /** The lines the chart holds (set by the constructor or setData). */
  const drawn = useRef<Line[] | null>(null);
  // The chart is rebuilt only when its shape changes (series, axes, scale); new points of the same
  // series go through setData, so a live chart keeps its zoom and does not flicker.
  const shape = [props.lines.map((l) => l.label + (l.dashed ? "~" : "")).join("\u0000"), props.logScale, props.time, props.xLabel, props.yLabel, props.height].join("|");

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    zoomed.current = false;
    const many = props.lines.length > MANY_LINES;
    const height = props.height ?? 320;
    const opts: uPlot.Options = {
      width: Math.max(320, el.clientWidth),
      height,
      scales: { x: { time: !!props.time }, y: { distr: props.logScale ? 3 : 1 } },
      axes: [
        { label: props.xLabel, stroke: "#5b6472", grid: { stroke: "#eef0f3" } },
        { label: props.yLabel, stroke: "#5b6472", grid: { stroke: "#eef0f3" }, size: 64 },
      ],
      // Past MANY_LINES lines the legend would push the chart off screen and one cursor point per
      // line would be as many DOM elements; the hover line names the trial, the focus dims the rest.
      legend: { live: true, show: !many },
      cursor: { drag: { x: true, y: false }, focus: { prox: 24 }, points: { show: !many } },
      focus: { alpha: 0.35 },
      series: [
        { label: props.xLabel },
        ...props.lines.map((l, i) => ({ label: l.label, stroke: color(i), width: many ? 1 : 1.6, spanGaps: true, points: many ? { show: false } : { size: 4 }, dash: l.dashed ? [6, 4] : undefined })),
      ],
      hooks: {
        setSelect: [(u) => { if (u.select.width > 0) zoomed.current = true; }],
        setSeries: [(_u, idx) => onFocus.current?.(idx == null || idx < 1 ? null : idx - 1)],
      },
    };
    const u = new uPlot(opts, align(props.lines), el);
    chart.current = u;
    drawn.current = props.lines;
    // uPlot resets the zoom on double-click.
    const unzoom = () => { zoomed.current = false; };
    u.over.addEventListener("dblclick", unzoom);
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(320, el.clientWidth), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.over.removeEventListener("dblclick", unzoom);
      u.destroy();
      chart.current = null;
    };
  }, [shape]);

  useEffect(() => {
    const el = box.current;
    const u = chart.current;
    if (!el || !u) return;
    // A chart just built drew these lines already: drawing them twice doubles the first paint.
    if (drawn.current !== props.lines) u.setData(align(props.lines), !zoomed.current);
    drawn.current = props.lines;
    el.dataset.points = String(props.lines.reduce((n, l) => n + l.xs.length, 0));
    el.dataset.series = String(props.lines.length);
    performance.mark("chart-data-set"); // for webui/e2e/bench.mjs's breakdown
  }, [props.lines, shape]);

  return <div class="chart" ref={box} data-testid={props.testId ?? "chart"} />;
}
