// Benchmark (issue 12): the experiments page's first rows with 10,000 experiments, timed in
// headless Chromium (playwright-core + Debian's /usr/bin/chromium) against a running master.
//
//   node e2e/bench-experiments.mjs URL [--experiments 10000] [--runs 20] [--user admin --pass ""]
//
// Seeds paused experiments (no trials: `activate: false`) through POST /api/v1/experiments from 16
// parallel clients until the cluster has `--experiments`, then, per view (the default list, sorted
// by name, page 250), loads the page `--runs` times in a fresh tab with the session cookie and
// records the time from navigation start to the first experiment row in the DOM (the page's own
// performance.now(), checked every animation frame). Prints p50/p95/max per view as JSON.

import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const base = (args[0] ?? "").replace(/\/$/, "");
if (!base) throw new Error("usage: bench-experiments.mjs URL [--experiments N] [--runs N] [--user U --pass P]");
const opt = (name, d) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : d;
};
const want = Number(opt("experiments", "10000"));
const runs = Number(opt("runs", "20"));
const user = opt("user", "admin");
const pass = opt("pass", "");

const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ username: user, password: pass }) });
if (!login.ok) throw new Error(`login: ${login.status} ${await login.text()}`);
const { token } = await login.json();
const auth = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

const count = async () => (await (await fetch(`${base}/api/v1/experiments?limit=1`, { headers: auth })).json()).pagination.total;
let have = await count();
const seedStart = Date.now();
let next = have;
async function seeder() {
  while (next < want) {
    const n = next++;
    const config = `name: bench-${n}\nentrypoint: python3 train.py\nlabels: [l${n % 10}]\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n`;
    const r = await fetch(`${base}/api/v1/experiments`, { method: "POST", headers: auth, body: JSON.stringify({ config, modelDefinition: [], activate: false }) });
    if (!r.ok) throw new Error(`create: ${r.status} ${await r.text()}`);
  }
}
if (have < want) {
  await Promise.all(Array.from({ length: 16 }, seeder));
  have = await count();
}
const seedSeconds = (Date.now() - seedStart) / 1000;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
const host = new URL(base).hostname;
await context.addCookies([{ name: "auth", value: token, domain: host, path: "/", httpOnly: true, sameSite: "Lax" }]);

const views = { "default list": "/experiments", "sorted by name": "/experiments?sort=SORT_BY_NAME&order=asc", "page 250": "/experiments?page=250" };
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)];
const results = {};
for (const [name, path] of Object.entries(views)) {
  const times = [];
  for (let i = 0; i < runs + 1; i++) {
    const page = await context.newPage();
    await page.goto(`${base}${path}`, { waitUntil: "commit" });
    const handle = await page.waitForFunction(() => (document.querySelector("tr[data-experiment-id]") ? performance.now() : 0), null, { polling: "raf", timeout: 30000 });
    const ms = await handle.jsonValue();
    await page.close();
    if (i > 0) times.push(ms); // the first load warms the browser's cache of the app's assets
  }
  times.sort((a, b) => a - b);
  results[name] = { runs: times.length, p50_ms: +pct(times, 50).toFixed(1), p95_ms: +pct(times, 95).toFixed(1), max_ms: +times[times.length - 1].toFixed(1) };
}
await browser.close();
console.log(JSON.stringify({ experiments: have, seed_seconds: seedSeconds, first_rows: results }, null, 2));
