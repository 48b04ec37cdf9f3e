// End-to-end test of the web UI in headless Chromium (playwright-core driving Debian's
// /usr/bin/chromium) against a real master + agent. Driven by tests/compat/test_webui.py, which
// starts them, creates the experiment and passes what to expect in the environment:
//
//   RESOLUTE_UI_URL          the master's base URL
//   RESOLUTE_UI_USER/_PASS   an account to sign in with
//   RESOLUTE_UI_EXPERIMENT   an experiment that is running or about to complete
//   RESOLUTE_UI_KILL_EXPERIMENT  a long, paused experiment of that user: the test activates it,
//                            follows its trial's logs live and kills it
//   RESOLUTE_UI_LABEL        a label of RESOLUTE_UI_EXPERIMENT (not of the other one)
//   RESOLUTE_UI_METRIC       the searcher metric id the curve opens on (validation.NAME)
//   RESOLUTE_UI_POINTS       JSON {metricId: points per trial} the learning curve must draw
//   RESOLUTE_UI_LOG_TEXT     a line the trial's logs contain (also each adaptive trial's)
//   RESOLUTE_UI_SCREENSHOTS  folder for one PNG per page (test artefacts)
//   RESOLUTE_UI_BULK_EXPERIMENTS  two paused experiments of that user, killed together from the
//                            experiments table (after a bulk pause that fails on the completed one)
//   RESOLUTE_UI_ADMIN_USER/_PASS  an admin: creates a user on /admin/users who then signs in
//   RESOLUTE_UI_ADAPTIVE_EXPERIMENT  an adaptive (ASHA) search of N trials, some stopped early;
//                            RESOLUTE_UI_ADAPTIVE_TRIALS is N (the experiment page's tabs)
//   RESOLUTE_UI_MANY_EXPERIMENT  an experiment of RESOLUTE_UI_MANY_TRIALS (> 100) trials, each
//                            with RESOLUTE_UI_MANY_POINTS training `loss` reports: all curves drawn
//   CHROMIUM                 the browser binary (default /usr/bin/chromium)
//
// Exits non-zero with the failed step's message; prints one line per step.

import { chromium } from "playwright-core";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const env = (k, d) => {
  const v = process.env[k] ?? d;
  if (v === undefined) throw new Error(`missing environment variable ${k}`);
  return v;
};
const base = env("RESOLUTE_UI_URL").replace(/\/$/, "");
const user = env("RESOLUTE_UI_USER");
const pass = env("RESOLUTE_UI_PASS", "");
const expId = Number(env("RESOLUTE_UI_EXPERIMENT"));
const killId = Number(env("RESOLUTE_UI_KILL_EXPERIMENT"));
const label = env("RESOLUTE_UI_LABEL");
const metric = env("RESOLUTE_UI_METRIC");
const points = JSON.parse(env("RESOLUTE_UI_POINTS"));
const logText = env("RESOLUTE_UI_LOG_TEXT");
const shots = env("RESOLUTE_UI_SCREENSHOTS");
const adaptiveId = Number(env("RESOLUTE_UI_ADAPTIVE_EXPERIMENT"));
const adaptiveTrials = Number(env("RESOLUTE_UI_ADAPTIVE_TRIALS"));
const completeTimeout = Number(process.env.RESOLUTE_UI_COMPLETE_TIMEOUT_MS ?? 240000);
const bulkIds = env("RESOLUTE_UI_BULK_EXPERIMENTS").split(",").map(Number);
const adminUser = env("RESOLUTE_UI_ADMIN_USER");
const adminPass = env("RESOLUTE_UI_ADMIN_PASS", "");
const manyId = Number(env("RESOLUTE_UI_MANY_EXPERIMENT"));
const manyTrials = Number(env("RESOLUTE_UI_MANY_TRIALS"));
const manyTrialPoints = Number(env("RESOLUTE_UI_MANY_POINTS"));
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({ executablePath: env("CHROMIUM", "/usr/bin/chromium"), headless: true });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const page = await context.newPage();
const consoleErrors = [];
page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
page.on("pageerror", (e) => consoleErrors.push(String(e)));

let step = "start";
const log = (s) => console.log(`ok  ${s}`);
async function shot(name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
/** No page may show a JavaScript placeholder for missing data. */
async function noPlaceholders() {
  const text = await page.locator("body").innerText();
  for (const bad of ["undefined", "NaN", "[object Object]", "null%"]) {
    assert(!text.includes(bad), `page ${page.url()} shows "${bad}":\n${text.slice(0, 2000)}`);
  }
}
const path = () => new URL(page.url()).pathname;

try {
  step = "an unauthenticated visit lands on /login";
  await page.goto(`${base}/dashboard`);
  await page.waitForURL((u) => u.pathname === "/login");
  await page.getByRole("button", { name: "Sign in" }).waitFor();
  assert((await page.getByText("Your session has ended").count()) === 0, "a first visit says the session ended");
  await shot("01-login");
  log(step);

  step = "a wrong password is refused on the page";
  await page.fill("input[name=username]", user);
  await page.fill("input[name=password]", pass + "-wrong");
  await page.click("button[type=submit]");
  await page.getByText("Invalid username or password.").waitFor();
  log(step);

  step = "signing in lands on the dashboard with the experiment listed";
  await page.fill("input[name=password]", pass);
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/dashboard");
  await page.locator(`[data-testid=experiments-table] tr[data-experiment-id="${expId}"]`).waitFor();
  await page.waitForFunction(() => /\d+ \/ \d+/.test(document.querySelector("[data-testid=slots-in-use]")?.textContent ?? ""));
  const cookies = await context.cookies();
  assert(cookies.some((c) => c.name === "auth" && c.httpOnly), "no HttpOnly auth cookie after login");
  await noPlaceholders();
  await shot("02-dashboard");
  log(step);

  step = "the experiment page follows the experiment to COMPLETED without a reload";
  await page.click(`[data-testid=experiments-table] tr[data-experiment-id="${expId}"] a.strong`);
  await page.waitForURL((u) => u.pathname === `/experiments/${expId}`);
  await page.locator('[data-testid=experiment-summary] [data-state="STATE_COMPLETED"]').waitFor({ timeout: completeTimeout });
  // The trials table fetches once more when the experiment ends (its polling stops then).
  await page.locator('[data-testid=trials-table] tbody tr [data-state="STATE_COMPLETED"]').first().waitFor({ timeout: 15000 });
  assert(
    (await page.locator('[data-testid=trials-table] tbody tr [data-state="STATE_RUNNING"]').count()) === 0,
    "a trial of the completed experiment still shows Running",
  );
  log(step);

  for (const [metricId, expected] of Object.entries(points)) {
    step = `the learning curve of ${metricId} draws ${expected} points per trial`;
    if (metricId !== metric) await page.selectOption("[data-testid=metric-select]", metricId);
    assert((await page.inputValue("[data-testid=metric-select]")) === metricId, `metric selector does not show ${metricId}`);
    const chart = page.locator("[data-testid=learning-curve]");
    await page.waitForFunction(
      (n) => {
        const el = document.querySelector("[data-testid=learning-curve]");
        return el && Number(el.dataset.points) === n * Number(el.dataset.series) && el.querySelector("canvas");
      },
      expected,
      { timeout: 15000 },
    ).catch(async () => {
      throw new Error(`chart has ${await chart.getAttribute("data-points")} points in ${await chart.getAttribute("data-series")} series, expected ${expected} per trial`);
    });
    log(step);
  }
  await page.selectOption("[data-testid=metric-select]", metric);
  await page.locator("[data-testid=learning-curve] canvas").waitFor();
  await page.locator("[data-testid=best-metric]").waitFor();
  await noPlaceholders();
  await shot("03-experiment");

  step = "the trials table links to the trial page, with hyperparameters and logs";
  const trialLink = page.locator("[data-testid=trials-table] tbody tr a").first();
  await trialLink.click();
  await page.waitForURL((u) => /^\/experiments\/\d+\/trials\/\d+$/.test(u.pathname));
  await page.locator("[data-testid=hparams] tr").first().waitFor();
  await page.locator("[data-testid=logs]").getByText(logText).first().waitFor({ timeout: 20000 });
  await page.locator("[data-testid=learning-curve] canvas").waitFor();
  await noPlaceholders();
  await shot("04-trial");
  log(step);

  step = "the experiments list filters by name and state";
  await page.click("nav >> text=Experiments").catch(() => page.click("a.nav-link:has-text('Experiments')"));
  await page.waitForURL((u) => u.pathname === "/experiments");
  await page.locator(`tr[data-experiment-id="${expId}"]`).waitFor();
  await page.selectOption("select[aria-label=State]", "STATE_COMPLETED");
  await page.waitForURL((u) => u.searchParams.get("state") === "STATE_COMPLETED");
  await page.locator(`tr[data-experiment-id="${expId}"]`).waitFor();
  await page.fill("input[aria-label=Name]", "no-experiment-has-this-name");
  await page.getByText("No experiments match.").waitFor();
  await page.fill("input[aria-label=Name]", "");
  await page.locator(`tr[data-experiment-id="${expId}"]`).waitFor();
  log(step);

  step = "the experiments list filters by user and label, and sorts by a column";
  const row = (id) => page.locator(`[data-testid=experiments-table] tr[data-experiment-id="${id}"]`);
  await page.selectOption("select[aria-label=State]", "");
  await page.fill("input[aria-label=User]", user);
  await page.waitForURL((u) => u.searchParams.get("user") === user);
  await row(killId).waitFor();
  await row(expId).waitFor({ state: "detached" });
  await page.fill("input[aria-label=User]", "");
  await page.fill("input[aria-label=Label]", label);
  await page.waitForURL((u) => u.searchParams.get("label") === label);
  await row(expId).waitFor();
  await row(killId).waitFor({ state: "detached" });
  await page.fill("input[aria-label=Label]", "");
  await page.waitForURL((u) => !u.searchParams.has("label"));
  await page.click("th:has-text('Name')");
  await page.waitForURL((u) => u.searchParams.get("sort") === "SORT_BY_NAME" && !u.searchParams.has("order"));
  await page.click("th:has-text('Name')");
  await page.waitForURL((u) => u.searchParams.get("sort") === "SORT_BY_NAME" && u.searchParams.get("order") === "asc");
  await page.locator("th:has-text('Name') .sort-arrow").getByText("▲").waitFor();
  await row(expId).waitFor();
  await row(expId).locator(".label", { hasText: label }).waitFor();
  await noPlaceholders();
  await shot("05-experiments");
  log(step);

  step = "a first load asks the master for each thing once (experiments list, completed experiment)";
  for (const [url, ready] of [
    [`${base}/experiments`, `[data-testid=experiments-table] tr[data-experiment-id="${expId}"]`],
    [`${base}/experiments/${expId}`, "[data-testid=trials-table] tbody tr[data-trial-id]"],
  ]) {
    const sent = [];
    const onRequest = (r) => r.url().includes("/api/v1/") && sent.push(r.url().replace(base, ""));
    page.on("request", onRequest);
    await page.goto(url);
    await page.locator(ready).first().waitFor();
    await page.waitForLoadState("networkidle");
    page.off("request", onRequest);
    const lists = sent.filter((u) => new URL(u, base).pathname === "/api/v1/experiments");
    if (url.endsWith("/experiments")) assert(lists.length === 1, `the experiments page asked for the list ${lists.length} times: ${lists.join(", ")}`);
    const twice = sent.filter((u, i) => sent.indexOf(u) !== i);
    assert(twice.length === 0, `${url} sent the same request twice on its first load: ${twice.join(", ")}`);
  }
  log(step);

  step = "an unknown experiment id shows the not-found page";
  await page.goto(`${base}/experiments/987654`);
  await page.locator("[data-testid=not-found]").waitFor();
  await page.getByText("Experiment not found").waitFor();
  await shot("06-not-found");
  log(step);

  step = "an unknown trial and an unknown path show the not-found page";
  await page.goto(`${base}/experiments/${expId}/trials/987654`);
  await page.locator("[data-testid=not-found]").waitFor();
  await page.goto(`${base}/no/such/page`);
  await page.locator("[data-testid=not-found]").waitFor();
  log(step);

  step = "upstream's /det/ links open the same page";
  await page.goto(`${base}/det/experiments/${expId}`);
  await page.waitForURL((u) => u.pathname === `/experiments/${expId}`);
  await page.locator('[data-testid=experiment-summary] [data-state="STATE_COMPLETED"]').waitFor();
  log(step);

  // ---- the experiment page's tabs on an adaptive search (webhp) ------------------------------
  step = "the adaptive search marks the trials it stopped early";
  await page.goto(`${base}/experiments/${adaptiveId}`);
  await page.locator('[data-testid=experiment-summary] [data-state="STATE_COMPLETED"]').waitFor({ timeout: completeTimeout });
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=trials-table] tbody tr[data-trial-id]").length === n, adaptiveTrials, { timeout: 15000 });
  await page.locator('[data-testid=trials-table] tr.stopped [data-decision="stopped_early"]').first().waitFor({ timeout: 15000 });
  const decisions = await page.$$eval("[data-testid=trials-table] tbody tr[data-trial-id]", (rows) => rows.map((r) => r.dataset.decision));
  assert(decisions.every((d) => d === "stopped_early" || d === "completed"), `decisions of a completed search: ${decisions}`);
  assert(decisions.includes("completed"), `no trial trained to the end: ${decisions}`);
  await page.waitForFunction(() => Number(document.querySelector("[data-testid=learning-curve]")?.dataset.series) > 0, null, { timeout: 30000 });
  assert((await page.locator(".u-legend").getByText("(stopped early)").count()) > 0, "the learning curves do not mark the stopped trials");
  await noPlaceholders();
  await shot("10-adaptive");
  log(step);

  step = "the learning curves smooth, switch to a log scale and name the hovered trial";
  await page.locator("[data-testid=smoothing]").fill("0.6");
  await page.locator("[data-testid=log-scale]").check();
  await page.locator("[data-testid=learning-curve] canvas").waitFor();
  // Switching the scale rebuilds the chart: wait until the new plot's overlay has settled.
  let box = null;
  for (let t = 0; t < 50 && !box; t++) {
    await page.locator("[data-testid=learning-curve] .u-over").waitFor();
    box = await page.locator("[data-testid=learning-curve] .u-over").boundingBox();
    if (!box) await page.waitForTimeout(100);
  }
  assert(box, "the learning curve's plot area never appeared");
  // uPlot focuses the line nearest the cursor (within 24 px): sweep the plot until one is.
  sweep: for (let j = 1; j <= 12; j++) {
    for (let i = 1; i <= 12; i++) {
      await page.mouse.move(box.x + (box.width * i) / 13, box.y + (box.height * j) / 13);
      if (/^Trial \d+/.test(await page.locator("[data-testid=curve-hover]").innerText())) break sweep;
    }
  }
  const hoverText = await page.locator("[data-testid=curve-hover]").innerText();
  assert(/^Trial \d+.*learning_rate=/.test(hoverText), `hovering the chart shows "${hoverText}"`);
  log(step);

  step = "the Hyperparameters tab draws every trial and the master's importance";
  await page.click("[data-testid=experiment-tabs] a[data-tab=hyperparameters]");
  await page.waitForURL((u) => u.searchParams.get("tab") === "hyperparameters");
  await page.locator(`[data-testid=hp-views][data-trials="${adaptiveTrials}"]`).waitFor({ timeout: 15000 });
  const lines = Number(await page.locator("[data-testid=parallel-coordinates]").getAttribute("data-lines"));
  assert(lines === adaptiveTrials, `parallel coordinates draw ${lines} lines for ${adaptiveTrials} trials`);
  await page.locator("[data-testid=hp-importance]").waitFor({ timeout: 15000 });
  const used = Number(await page.locator("[data-testid=hp-importance]").getAttribute("data-trial-count"));
  assert(used === adaptiveTrials, `importance used ${used} of ${adaptiveTrials} trials`);
  const bars = await page.$$eval("[data-testid=hp-importance] .importance-row", (rows) => rows.map((r) => [r.dataset.hp, Number(r.dataset.importance)]));
  assert(bars.some(([hp]) => hp === "learning_rate") && bars.every(([, v]) => v >= 0 && v <= 1), `importance bars: ${JSON.stringify(bars)}`);
  // The search's constants (learning_rate_decay, sleep_per_batch) are listed, the others drawn.
  const constants = ((await page.locator("[data-testid=hp-constants]").getAttribute("data-names")) ?? "").split(",");
  assert(constants.includes("sleep_per_batch") && !constants.includes("learning_rate"), `constant hyperparameters: ${constants}`);
  const scattered = await page.$$eval("[data-testid=hp-scatter] svg", (svgs) => svgs.map((s) => s.dataset.hp).sort());
  const expected = bars.map(([hp]) => hp).filter((hp) => !constants.includes(hp)).sort();
  assert(JSON.stringify(scattered) === JSON.stringify(expected), `scatter plots of ${scattered}, expected ${expected}`);
  const logAxis = await page.locator('[data-testid=hp-scatter] svg[data-hp=learning_rate] text.axis-title').textContent();
  assert(logAxis.includes("(log)"), `learning_rate (type: log) is drawn on "${logAxis}"`);
  await page.selectOption("[data-testid=heatmap-x]", "learning_rate");
  await page.selectOption("[data-testid=heatmap-y]", "layer1_dense_size");
  assert(Number(await page.locator("[data-testid=hp-heatmap]").getAttribute("data-cells")) > 0, "the heat map has no cells");
  await noPlaceholders();
  await shot("11-hyperparameters");
  log(step);

  step = "the Checkpoints tab lists checkpoints and one downloads as a tar";
  await page.click("[data-testid=experiment-tabs] a[data-tab=checkpoints]");
  await page.locator("[data-testid=checkpoint-download]").first().waitFor({ timeout: 15000 });
  const href = await page.locator("[data-testid=checkpoint-download]").first().getAttribute("href");
  const download = await page.evaluate(async (h) => {
    const r = await fetch(h);
    const b = new Uint8Array(await r.arrayBuffer());
    return { status: r.status, type: r.headers.get("content-type"), size: b.length, magic: new TextDecoder().decode(b.subarray(257, 262)) };
  }, href);
  assert(download.status === 200 && download.size > 1024 && download.magic === "ustar", `checkpoint download: ${JSON.stringify(download)}`);
  await noPlaceholders();
  await shot("12-checkpoints");
  log(step);

  step = "the Configuration and Model code tabs show the config and the uploaded files";
  await page.click("[data-testid=experiment-tabs] a[data-tab=configuration]");
  await page.locator("[data-testid=experiment-config]").getByText("adaptive_asha").first().waitFor();
  await page.click("[data-testid=experiment-tabs] a[data-tab=code]");
  await page.locator('[data-testid=model-files] a[data-path="model_def.py"]').waitFor({ timeout: 15000 });
  await page.click('[data-testid=model-files] a[data-path="model_def.py"]');
  await page.locator("[data-testid=model-file-text]").getByText("import").first().waitFor();
  // One file at a time through the master's file_tree / file endpoints, never the whole archive.
  const codeRequests = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => /\/(file_tree|file|model_def)$/.test(p)));
  assert(codeRequests.some((p) => p.endsWith("/file_tree")) && codeRequests.some((p) => p.endsWith("/file")) && !codeRequests.some((p) => p.endsWith("/model_def")),
    `the Model code tab's requests: ${codeRequests.join(", ")}`);
  await shot("13-model-code");
  log(step);

  step = "the experiment's Logs tab interleaves its trials' logs, each line naming its trial";
  await page.goto(`${base}/experiments/${adaptiveId}?tab=logs`);
  await page.waitForFunction(() => new Set(Array.from(document.querySelectorAll("[data-testid=logs] .log-line")).map((l) => l.dataset.trialId)).size >= 2, null, { timeout: 30000 });
  await page.locator("[data-testid=log-note]").waitFor();
  const tagged = await page.evaluate(() => Array.from(document.querySelectorAll("[data-testid=logs] .log-line")).every((l) => l.querySelector(".log-trial")?.textContent === `trial ${l.dataset.trialId}`));
  assert(tagged, "a line of the experiment's logs does not name its trial");
  const logsDownload = page.waitForEvent("download");
  await page.click("[data-testid=log-download]");
  const logsFile = await logsDownload;
  assert(logsFile.suggestedFilename() === `experiment-${adaptiveId}-logs.txt`, `the logs download is named ${logsFile.suggestedFilename()}`);
  const text = readFileSync(await logsFile.path(), "utf8");
  assert(/^\[trial \d+\] /.test(text), `the downloaded logs do not name the trials: ${text.slice(0, 120)}`);
  await shot("17-experiment-logs");
  log(step);

  step = "the Logs tab shows one picked trial's logs, searched and filtered by level";
  const firstTrial = await page.locator("[data-testid=log-trial] option:nth-child(2)").getAttribute("value");
  await page.selectOption("[data-testid=log-trial]", firstTrial);
  await page.waitForURL((u) => u.searchParams.get("trial") === firstTrial);
  await page.waitForFunction((t) => {
    const lines = Array.from(document.querySelectorAll("[data-testid=logs] .log-line"));
    return lines.length > 0 && lines.every((l) => l.dataset.trialId === t) && !document.querySelector(".log-trial");
  }, firstTrial, { timeout: 30000 });
  const allOfTrial = await page.locator("[data-testid=logs] .log-line").count();
  await page.fill("[data-testid=log-search]", logText);
  await page.waitForFunction(([t, n]) => {
    const lines = Array.from(document.querySelectorAll("[data-testid=logs] .log-line"));
    return lines.length > 0 && lines.length < n && lines.every((l) => l.textContent.includes(t));
  }, [logText, allOfTrial], { timeout: 30000 });
  await page.fill("[data-testid=log-search]", "");
  await page.selectOption("[data-testid=log-level]", "LOG_LEVEL_ERROR");
  await page.waitForFunction((n) => {
    const lines = Array.from(document.querySelectorAll("[data-testid=logs] .log-line"));
    return lines.length < n && lines.every((l) => /lvl-(error|critical)/.test(l.className));
  }, allOfTrial, { timeout: 30000 });
  log(step);

  step = "a trial page lists its workloads and checkpoints";
  // The const experiment's trial (completed, so it has validations and checkpoints; an adaptive
  // search's first row may be a trial ASHA stopped before either).
  await page.goto(`${base}/experiments/${expId}`);
  await page.locator("[data-testid=trials-table] tbody tr a").first().click();
  await page.waitForURL((u) => /^\/experiments\/\d+\/trials\/\d+$/.test(u.pathname));
  await page.locator('[data-testid=workloads-table] tr[data-kind=validation]').first().waitFor({ timeout: 30000 });
  await page.locator("[data-testid=checkpoints-table] [data-testid=checkpoint-download]").first().waitFor({ timeout: 30000 });
  await noPlaceholders();
  await shot("14-trial-workloads");
  log(step);

  step = "an experiment of more trials than the table's page draws every trial's learning curve";
  // RESOLUTE_UI_MANY_EXPERIMENT: an unmanaged experiment of MANY_TRIALS trials, each with
  // MANY_POINTS training reports of `loss` (seeded through the API by the test).
  await page.goto(`${base}/experiments/${manyId}`);
  await page.waitForFunction((n) => Number(document.querySelector("[data-testid=learning-curve]")?.dataset.series) === n, manyTrials, { timeout: 30000 });
  const manyPoints = Number(await page.locator("[data-testid=learning-curve]").getAttribute("data-points"));
  assert(manyPoints === manyTrials * manyTrialPoints, `the curves draw ${manyPoints} points, expected ${manyTrials} trials × ${manyTrialPoints}`);
  const manyRows = await page.locator("[data-testid=trials-table] tbody tr[data-trial-id]").count();
  assert(manyRows === 100 && manyRows < manyTrials, `the trials table shows ${manyRows} rows on its first page`);
  const seriesRequests = await page.evaluate(() => performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/v1/trials/time-series")).map((e) => e.name));
  assert(seriesRequests.length >= 1 && seriesRequests.length <= Math.ceil(manyTrials / 200) + 1, `${seriesRequests.length} time-series requests for ${manyTrials} trials`);
  for (const url of seriesRequests) {
    const budget = Number(new URL(url).searchParams.get("maxDatapoints"));
    assert(budget > 0 && budget * manyTrials <= 50000, `maxDatapoints=${budget} per series breaks the 50,000-point budget for ${manyTrials} trials`);
  }
  await page.getByText(`Learning curves (${manyTrials} trials)`).waitFor();
  await shot("15-all-trials-curves");
  log(step);

  step = "a paused experiment is activated from its page";
  await page.goto(`${base}/experiments/${killId}`);
  await page.locator('[data-testid=experiment-summary] [data-state="STATE_PAUSED"]').waitFor();
  await page.getByRole("button", { name: "Activate" }).click();
  await page.locator("[data-testid=experiment-summary] [data-state]:not([data-state=STATE_PAUSED])").waitFor();
  log(step);

  step = "the experiment's Logs tab follows its running trial live";
  await page.goto(`${base}/experiments/${killId}?tab=logs`);
  await page.locator("[data-testid=log-status]").getByText("Live").waitFor({ timeout: 30000 });
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=logs] .log-line").length > 0, null, { timeout: completeTimeout });
  const expBefore = await page.locator("[data-testid=logs] .log-line").count();
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=logs] .log-line").length >= n + 3, expBefore, { timeout: 120000 });
  await shot("16-experiment-logs-live");
  log(step);

  step = "its running trial's logs follow live";
  await page.goto(`${base}/experiments/${killId}`);
  await page.locator("[data-testid=trials-table] tbody tr a").first().click();
  await page.waitForURL((u) => /^\/experiments\/\d+\/trials\/\d+$/.test(u.pathname));
  await page.locator("[data-testid=log-status]").getByText("Live").waitFor({ timeout: 30000 });
  await page.waitForFunction(() => document.querySelectorAll("[data-testid=logs] .log-line").length > 0, null, { timeout: completeTimeout });
  const before = await page.locator("[data-testid=logs] .log-line").count();
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=logs] .log-line").length >= n + 5, before, { timeout: 120000 });
  await page.locator("[data-testid=log-status]").getByText("Live").waitFor();
  log(step);

  step = "its chart takes new points in place (same canvas, so a zoom is kept)";
  await page.waitForFunction(() => !!document.querySelector("[data-testid=metric-select] option[value='training.loss']"), null, { timeout: 60000 });
  await page.selectOption("[data-testid=metric-select]", "training.loss");
  await page.waitForFunction(() => Number(document.querySelector("[data-testid=learning-curve]")?.dataset.points) > 0, null, { timeout: 30000 });
  const canvas = await page.locator("[data-testid=learning-curve] canvas").elementHandle();
  const shown = Number(await page.locator("[data-testid=learning-curve]").getAttribute("data-points"));
  await page.waitForFunction((n) => Number(document.querySelector("[data-testid=learning-curve]")?.dataset.points) > n, shown, { timeout: 60000 });
  assert(await canvas.evaluate((c) => c.isConnected), "the live chart was rebuilt for new points (a zoom would be lost)");
  await shot("08-trial-live");
  log(step);

  step = "the running experiment is killed from its page (after confirming)";
  await page.click(`.crumbs a[href="/experiments/${killId}"]`);
  await page.waitForURL((u) => u.pathname === `/experiments/${killId}`);
  page.once("dialog", (d) => d.accept());
  await page.click("[data-testid=kill]");
  await page.locator('[data-testid=experiment-summary] [data-state="STATE_CANCELED"]').waitFor({ timeout: 60000 });
  assert((await page.locator("[data-testid=kill]").count()) === 0, "a canceled experiment still offers Kill");
  await page.locator('[data-testid=trials-table] tbody tr [data-state="STATE_CANCELED"]').first().waitFor({ timeout: 15000 });
  await shot("09-killed");
  log(step);

  // ---- tasks, cluster, bulk actions, API docs (webpages) -------------------------------------
  step = "polling an unchanged page is answered 304 Not Modified (If-None-Match)";
  await page.goto(`${base}/clusters`);
  await page.waitForFunction(() => (window.__resoluteNotModified ?? 0) > 0, null, { timeout: 20000 });
  log(step);

  step = "the cluster page shows the agent and its slots";
  await page.locator("[data-testid=agent]").first().waitFor();
  assert((await page.locator("[data-testid=agent] [data-testid=slots-table] tbody tr[data-slot-id]").count()) >= 1, "the agent shows no slots");
  await page.locator("[data-testid=agent-status]").getByText("Enabled").first().waitFor();
  await page.locator("[data-testid=cluster-usage]").getByText("Slots in use").waitFor();
  await noPlaceholders();
  await shot("20-cluster");
  log(step);

  step = "JupyterLab is launched from the tasks page and opens through the proxy";
  await page.click("a.nav-link:has-text('Tasks')");
  await page.waitForURL((u) => u.pathname === "/tasks");
  await page.locator("[data-testid=tasks-table]").waitFor();
  const before_nb = await page.locator("[data-testid=tasks-table] tr[data-task-kind=notebook]").count();
  await page.click("[data-testid=launch-notebook]");
  await page.waitForFunction((n) => document.querySelectorAll("[data-testid=tasks-table] tr[data-task-kind=notebook]").length > n, before_nb, { timeout: 20000 });
  const nbRow = page.locator("[data-testid=tasks-table] tr[data-task-kind=notebook]").first();
  const nbId = await nbRow.getAttribute("data-task-id");
  await page.locator(`tr[data-task-id="${nbId}"][data-ready="1"] [data-testid=open-task]`).waitFor({ timeout: 180000 });
  await noPlaceholders();
  await shot("21-tasks");
  const nbHref = await page.locator(`tr[data-task-id="${nbId}"] [data-testid=open-task]`).getAttribute("href");
  assert(nbHref === `/proxy/${nbId}/`, `the notebook opens at ${nbHref}`);
  const [lab] = await Promise.all([context.waitForEvent("page"), page.click(`tr[data-task-id="${nbId}"] [data-testid=open-task]`)]);
  await lab.waitForLoadState();
  // JupyterLab's own shell, drawn by its scripts (all fetched through the proxy).
  await lab.locator(".jp-LabShell").first().waitFor({ timeout: 90000 });
  await lab.locator(".jp-Launcher, .jp-DirListing").first().waitFor({ timeout: 60000 });
  await lab.screenshot({ path: join(shots, "22-jupyterlab.png") });
  await lab.close();
  log(step);

  step = "the notebook is killed from the tasks page";
  page.once("dialog", (d) => d.accept());
  await page.click(`tr[data-task-id="${nbId}"] [data-testid=kill-task]`);
  await page.locator(`tr[data-task-id="${nbId}"]`).waitFor({ state: "detached", timeout: 60000 });
  const gone = await page.evaluate(async (id) => (await fetch(`/proxy/${id}/api/status`)).status, nbId);
  assert(gone === 404, `the killed notebook's proxy answered ${gone}`);
  log(step);

  step = "a bulk action shows each experiment that failed; a bulk kill ends two experiments";
  await page.goto(`${base}/experiments`);
  const bulkRow = (id) => page.locator(`[data-testid=experiments-table] tr[data-experiment-id="${id}"]`);
  for (const id of [...bulkIds, expId]) await bulkRow(id).locator("[data-testid=select-row]").check();
  await page.locator("[data-testid=selected-count]").getByText("3 selected").waitFor();
  await page.locator("[data-testid=bulk-bar] button", { hasText: "Pause" }).click();
  await page.locator("[data-testid=bulk-result]").getByText("2 succeeded, 1 failed").waitFor();
  await bulkRow(expId).locator("[data-testid=row-error]").waitFor();
  await shot("23-bulk-failure");
  await page.goto(`${base}/experiments`);
  for (const id of bulkIds) await bulkRow(id).locator("[data-testid=select-row]").check();
  page.once("dialog", (d) => d.accept());
  await page.click("[data-testid=bulk-kill]");
  await page.locator("[data-testid=bulk-result]").getByText("2 succeeded.").waitFor();
  for (const id of bulkIds) await bulkRow(id).locator('[data-state="STATE_CANCELED"]').waitFor({ timeout: 30000 });
  await noPlaceholders();
  await shot("24-bulk-kill");
  log(step);

  step = "the TensorBoard bulk action opens the tasks page for the selected experiments";
  await page.goto(`${base}/experiments`);
  await bulkRow(expId).locator("[data-testid=select-row]").check();
  await page.click("[data-testid=bulk-tensorboard]");
  await page.waitForURL((u) => u.pathname === "/tasks" && u.searchParams.get("experiments") === String(expId));
  assert((await page.inputValue("[data-testid=tensorboard-experiments]")) === String(expId), "the experiment ids are not filled in");
  log(step);

  step = "Swagger UI at /docs/rest-api/ lists the API's operations";
  await page.goto(`${base}/docs/rest-api/`);
  // Every tag of the document, collapsed; opening one lists its operations.
  await page.waitForFunction(() => document.querySelectorAll(".opblock-tag").length >= 10, null, { timeout: 30000 });
  await page.locator(".opblock-tag", { hasText: /^Experiments/ }).first().click();
  await page.waitForFunction(() => document.querySelectorAll(".opblock").length >= 10, null, { timeout: 30000 });
  await page.locator(".opblock-summary-path", { hasText: "/api/v1/experiments/{id}/kill" }).first().waitFor();
  await page.screenshot({ path: join(shots, "25-api-docs.png") });
  log(step);

  step = "a non-admin sees a 403 message on the admin page";
  await page.goto(`${base}/admin/users`);
  await page.locator("[data-testid=forbidden]").getByText("Only administrators manage users.").waitFor();
  assert((await page.locator("a.nav-link:has-text('Admin')").count()) === 0, "a non-admin is offered the Admin page");
  log(step);

  step = "a network error shows a retry banner, and the page recovers";
  await page.route("**/api/v1/experiments?**", (r) => r.abort("connectionrefused"));
  await page.goto(`${base}/experiments`);
  await page.locator("[data-testid=error-banner]").getByText("cannot be reached").waitFor();
  await shot("07-network-error");
  await page.unroute("**/api/v1/experiments?**");
  await page.getByRole("button", { name: "Retry now" }).click();
  await page.locator(`tr[data-experiment-id="${expId}"]`).waitFor();
  log(step);

  step = "a 403 shows a clear message";
  await page.route(`**/api/v1/experiments/${expId}`, (r) =>
    r.fulfill({ status: 403, contentType: "application/json", body: JSON.stringify({ error: { code: 7, reason: "PermissionDenied", error: "access denied to experiment" } }) }),
  );
  await page.goto(`${base}/experiments/${expId}`);
  await page.locator("[data-testid=forbidden]").getByText("access denied to experiment").waitFor();
  await page.unroute(`**/api/v1/experiments/${expId}`);
  log(step);

  step = "an expired session returns to /login, and signing in returns to the page";
  await context.clearCookies();
  await page.goto(`${base}/experiments`);
  await page.waitForURL((u) => u.pathname === "/login");
  await page.fill("input[name=username]", user);
  await page.fill("input[name=password]", pass);
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/experiments");
  log(step);

  step = "a session that ends while the app is open returns to /login";
  await page.goto(`${base}/dashboard`);
  await page.locator("[data-testid=experiments-table]").waitFor();
  await context.clearCookies();
  await page.click("a.nav-link:has-text('Experiments')");
  await page.waitForURL((u) => u.pathname === "/login" && u.searchParams.get("expired") === "1");
  await page.getByText("Your session has ended").waitFor();
  log(step);

  step = "signing out ends the session";
  await page.fill("input[name=username]", user);
  await page.fill("input[name=password]", pass);
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/experiments");
  await page.click("text=Sign out");
  await page.waitForURL((u) => u.pathname === "/login");
  const after = await page.evaluate(async () => (await fetch("/api/v1/me")).status);
  assert(after === 401, `GET /api/v1/me after sign-out answered ${after}, expected 401`);
  log(step);

  step = "an admin creates a user on the admin page, who then signs in";
  await page.fill("input[name=username]", adminUser);
  await page.fill("input[name=password]", adminPass);
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/dashboard");
  await page.click("a.nav-link:has-text('Admin')");
  await page.waitForURL((u) => u.pathname === "/admin/users");
  const newUser = `ui-user-${Date.now() % 100000}`;
  await page.fill("input[name=new-username]", newUser);
  await page.fill("input[name=new-password]", "Ui-User-Pass-1");
  await page.click("[data-testid=create-user] button[type=submit]");
  await page.locator(`[data-testid=users-table] tr[data-username="${newUser}"]`).waitFor();
  await page.locator("[data-testid=admin-notice]").getByText(`Created user ${newUser}.`).waitFor();
  await noPlaceholders();
  await shot("26-admin-users");
  await page.click("text=Sign out");
  await page.waitForURL((u) => u.pathname === "/login");
  await page.fill("input[name=username]", newUser);
  await page.fill("input[name=password]", "Ui-User-Pass-1");
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/dashboard");
  await page.locator("[data-testid=current-user]").getByText(newUser).waitFor();
  log(step);

  step = "a deactivated user can no longer sign in";
  await page.click("text=Sign out");
  await page.waitForURL((u) => u.pathname === "/login");
  await page.fill("input[name=username]", adminUser);
  await page.fill("input[name=password]", adminPass);
  await page.click("button[type=submit]");
  await page.waitForURL((u) => u.pathname === "/dashboard");
  await page.goto(`${base}/admin/users`);
  const userRow = page.locator(`[data-testid=users-table] tr[data-username="${newUser}"]`);
  await userRow.locator("[data-testid=toggle-active]").click();
  await userRow.locator("[data-testid=user-status]").getByText("Deactivated").waitFor();
  const refused = await page.evaluate(async (u) => (await fetch("/api/v1/auth/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ username: u, password: "Ui-User-Pass-1" }) })).status, newUser);
  assert(refused === 403, `a deactivated user's login answered ${refused}, expected 403`);
  log(step);

  const relevant = consoleErrors.filter((e) => !/Failed to load resource|net::ERR_FAILED|ERR_CONNECTION_REFUSED/.test(e));
  step = "no JavaScript errors";
  assert(relevant.length === 0, `console errors:\n${relevant.join("\n")}`);
  log(step);
} catch (e) {
  console.error(`FAILED at step "${step}" (page ${page.url()}, path ${path()}): ${e instanceof Error ? e.message : e}`);
  await shot("failure").catch(() => undefined);
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log("web UI end-to-end: all steps passed");
