// A uPlot line chart of several series over one x axis (batches or time). uPlot draws large series
// on a canvas quickly; the master already downsampled each series (time-series maxDatapoints), so
// the browser never receives more points than the chart is wide.

import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface Line { label: string; xs: number[]; ys: (number | null)[] }

const PALETTE = ["#355fd6", "#e4572e", "#17a398", "#f3a712", "#8e44ad", "#2e86ab", "#c0392b", "#27ae60", "#d35400", "#7f8c8d"];

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

export function Chart(props: { lines: Line[]; xLabel: string; yLabel: string; logScale?: boolean; time?: boolean; height?: number; testId?: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(320, el.clientWidth);
    const opts: uPlot.Options = {
      width,
      height: props.height ?? 320,
      scales: { x: { time: !!props.time }, y: { distr: props.logScale ? 3 : 1 } },
      axes: [
        { label: props.xLabel, stroke: "#5b6472", grid: { stroke: "#eef0f3" } },
        { label: props.yLabel, stroke: "#5b6472", grid: { stroke: "#eef0f3" }, size: 64 },
      ],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: props.xLabel },
        ...props.lines.map((l, i) => ({ label: l.label, stroke: color(i), width: 1.6, spanGaps: true, points: { size: 4 } })),
      ],
    };
    const chart = new uPlot(opts, align(props.lines), el);
    el.dataset.points = String(props.lines.reduce((n, l) => n + l.xs.length, 0));
    el.dataset.series = String(props.lines.length);
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(320, el.clientWidth), height: props.height ?? 320 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [props.lines, props.logScale, props.time, props.xLabel, props.yLabel]);
  return <div class="chart" ref={box} data-testid={props.testId ?? "chart"} />;
}
