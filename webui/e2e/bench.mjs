// Issue 12's chart benchmarks in headless Chromium (playwright-core driving Debian's chromium),
// run by `resolute-bench --mode ui-charts` (crates/bench/src/ui_charts.rs), which seeds the
// master and passes:
//
//   RESOLUTE_UI_URL, RESOLUTE_UI_USER, RESOLUTE_UI_PASS   the master and an account
//   RESOLUTE_BENCH_BIG_EXPERIMENT / _BIG_TRIAL / _BIG_POINTS  a trial with ~1,000,000 training points
//   RESOLUTE_BENCH_MANY_EXPERIMENT / _MANY_TRIALS          an experiment of 500 trials × 2,000 points
//   RESOLUTE_BENCH_RUNS   page loads measured per page (default 7)
//
// Measured (ms, printed as markdown tables):
//   1. the chart's data request as the trial page makes it, fetched from the page (p50/p95);
// Times are the page's own `performance.now()` when the condition first held, checked every
// animation frame (as bench-experiments.mjs), not when the driver next looks.
//   2. the trial page: navigation start → the learning curve drawn (its canvas holds the points),
//      and the data's arrival (the request's responseEnd) → drawn;
//   3. the many-trial experiment page: navigation start → every trial's learning curve drawn and
//      the trials table rendered ("usable"), and where that time goes: the first and last
//      time-series request's start and end (resource timing), the series parsed (the page's
//      `curves-data` mark) and handed to the chart (`chart-data-set`).

import { chromium } from "playwright-core";

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined) throw new Error(`missing environment variable ${k}`);
  return v;
};
const base = env("RESOLUTE_UI_URL").replace(/\/$/, "");
const bigExp = Number(env("RESOLUTE_BENCH_BIG_EXPERIMENT"));
const bigTrial = Number(env("RESOLUTE_BENCH_BIG_TRIAL"));
const bigPoints = Number(env("RESOLUTE_BENCH_BIG_POINTS"));
const manyExp = Number(env("RESOLUTE_BENCH_MANY_EXPERIMENT"));
const manyTrials = Number(env("RESOLUTE_BENCH_MANY_TRIALS"));
const runs = Number(env("RESOLUTE_BENCH_RUNS", "7"));

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const f = (x) => x.toFixed(1);

const browser = await chromium.launch({ executablePath: env("CHROMIUM", "/usr/bin/chromium"), headless: true });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await context.newPage();
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));

try {
  const login = await context.request.post(`${base}/api/v1/auth/login`, {
    data: { username: env("RESOLUTE_UI_USER"), password: env("RESOLUTE_UI_PASS", ""), isHashed: false },
  });
  if (!login.ok()) throw new Error(`login: ${login.status()} ${await login.text()}`);

  // 2. The trial page, `runs` loads (the first is the master's first read of the series).
  const pageTimes = [];
  const renderTimes = [];
  let dataUrl = "";
  for (let i = 0; i < runs; i++) {
    await page.goto(`${base}/experiments/${bigExp}/trials/${bigTrial}`);
    const drawn = await page.waitForFunction(() => (Number(document.querySelector("[data-testid=learning-curve]")?.dataset.points) > 0 ? performance.now() : 0), null, { polling: "raf", timeout: 60000 });
    const now = await drawn.jsonValue();
    const t = await page.evaluate(() => {
      const entry = performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/v1/trials/time-series")).pop();
      return { responseEnd: entry?.responseEnd ?? NaN, url: entry?.name ?? "", points: Number(document.querySelector("[data-testid=learning-curve]")?.dataset.points) };
    });
    if (t.points < 900) throw new Error(`the big trial's chart drew ${t.points} points`);
    pageTimes.push(now);
    renderTimes.push(now - t.responseEnd);
    dataUrl = t.url;
  }

  // 1. The chart's data request from the page, 50 times.
  const reqTimes = await page.evaluate(async (url) => {
    const out = [];
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      const r = await fetch(url);
      await r.json();
      out.push(performance.now() - t0);
    }
    return out;
  }, dataUrl);

  // 3. The experiment of many trials: learning curves drawn and the trials table rendered.
  const manyTimes = [];
  const seenTimes = [];
  const phases = { seriesStart: [], seriesEnd: [], parsed: [], chartSet: [] };
  let series = 0;
  for (let i = 0; i < runs; i++) {
    await page.goto(`${base}/experiments/${manyExp}`);
    // Every trial's curve (the page draws all of them, not the table's page) and the table.
    const usable = await page.waitForFunction(
      (n) =>
        Number(document.querySelector("[data-testid=learning-curve]")?.dataset.series) === n && document.querySelectorAll("[data-testid=trials-table] tbody tr[data-trial-id]").length > 0
          ? performance.now()
          : 0,
      manyTrials,
      { polling: "raf", timeout: 60000 },
    );
    const now = await usable.jsonValue();
    const t = await page.evaluate(() => {
      const ts = performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/v1/trials/time-series"));
      const mark = (name) => performance.getEntriesByName(name, "mark").pop()?.startTime ?? NaN;
      return {
        seen: performance.now(),
        series: Number(document.querySelector("[data-testid=learning-curve]")?.dataset.series),
        seriesStart: Math.min(...ts.map((e) => e.startTime)),
        seriesEnd: Math.max(...ts.map((e) => e.responseEnd)),
        parsed: mark("curves-data"),
        chartSet: mark("chart-data-set"),
      };
    });
    manyTimes.push(now);
    seenTimes.push(t.seen);
    for (const k of Object.keys(phases)) phases[k].push(t[k]);
    series = t.series;
  }
  await page.screenshot({ path: "/tmp/resolute-bench-many.png" });

  console.log(`### Browser (Chromium, playwright-core), ${runs} page loads each\n`);
  console.log("| measure | first | p50 | p95 | max |");
  console.log("|---|---|---|---|---|");
  console.log(`| chart data request from the page, 1 trial x ${bigPoints} points (50 requests) | ${f(reqTimes[0])} | ${f(pct(reqTimes, 50))} | ${f(pct(reqTimes, 95))} | ${f(Math.max(...reqTimes))} |`);
  console.log(`| trial page: navigation → chart drawn | ${f(pageTimes[0])} | ${f(pct(pageTimes, 50))} | ${f(pct(pageTimes, 95))} | ${f(Math.max(...pageTimes))} |`);
  console.log(`| trial page: data arrived → chart drawn | ${f(renderTimes[0])} | ${f(pct(renderTimes, 50))} | ${f(pct(renderTimes, 95))} | ${f(Math.max(...renderTimes))} |`);
  console.log(`| experiment of ${manyTrials} trials: navigation → curves (${series} trials) + table drawn | ${f(manyTimes[0])} | ${f(pct(manyTimes, 50))} | ${f(pct(manyTimes, 95))} | ${f(Math.max(...manyTimes))} |`);
  console.log(`\nWhere the ${manyTrials}-trial page's time goes (ms since navigation start, p50 of ${runs} loads): ` +
    `first time-series request sent ${f(pct(phases.seriesStart, 50))}, last answered ${f(pct(phases.seriesEnd, 50))}, ` +
    `series parsed ${f(pct(phases.parsed, 50))}, handed to the chart ${f(pct(phases.chartSet, 50))}, usable ${f(pct(manyTimes, 50))} ` +
    `(the driver's own next look at the page, after the CDP round trip: p50 ${f(pct(seenTimes, 50))}, p95 ${f(pct(seenTimes, 95))})`);
  if (errors.length) throw new Error(`page errors:\n${errors.join("\n")}`);
} catch (e) {
  console.error(`ui-charts benchmark failed: ${e instanceof Error ? e.message : e}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
