// Diagnostic (not a test): where the experiments page's first-rows time goes, per load.
import { chromium } from "playwright-core";
const base = process.argv[2].replace(/\/$/, "");
const runs = Number(process.argv[3] ?? 10);
const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ username: "admin", password: "" }) });
const { token } = await login.json();
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true });
const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
await context.addCookies([{ name: "auth", value: token, domain: new URL(base).hostname, path: "/", httpOnly: true, sameSite: "Lax" }]);
const rows = [];
for (let i = 0; i < runs + 1; i++) {
  const page = await context.newPage();
  await page.goto(`${base}/experiments`, { waitUntil: "commit" });
  const h = await page.waitForFunction(() => (document.querySelector("tr[data-experiment-id]") ? performance.now() : 0), null, { polling: "raf", timeout: 30000 });
  const first = await h.jsonValue();
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const res = performance.getEntriesByType("resource").map((e) => [e.name.replace(location.origin, "").slice(0, 40), Math.round(e.startTime), Math.round(e.responseEnd), e.transferSize]);
    return { docReq: Math.round(nav.requestStart), docEnd: Math.round(nav.responseEnd), dcl: Math.round(nav.domContentLoadedEventEnd), res };
  });
  await page.close();
  if (i > 0) rows.push({ first: Math.round(first), ...t });
}
for (const r of rows) console.log(JSON.stringify(r));
await browser.close();
