// Vite build of the web UI. Output: dist/ (index.html + content-hashed assets/), embedded into the
// `det` binary by crates/master/build.rs. `npm run dev` proxies the API to a master on :8080
// (RESOLUTE_MASTER overrides), so the UI can be developed with hot reload.
import { defineConfig } from "vite";
import preact from "@preact/preset-vite";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Plugin } from "vite";

/** The REST API's Swagger UI at /docs/rest-api/ (see swagger/index.html): swagger-ui-dist's
 *  bundle and stylesheet from node_modules plus our page, emitted as plain (unhashed) files. */
function swaggerUi(): Plugin {
  const dist = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const files: [string, string][] = [
    ["index.html", join(__dirname, "swagger", "index.html")],
    ["init.js", join(__dirname, "swagger", "init.js")],
    ["swagger-ui-bundle.js", join(dist, "swagger-ui-bundle.js")],
    ["swagger-ui.css", join(dist, "swagger-ui.css")],
  ];
  return {
    name: "resolute-swagger-ui",
    apply: "build",
    generateBundle() {
      for (const [name, from] of files) this.emitFile({ type: "asset", fileName: `docs/rest-api/${name}`, source: readFileSync(from) });
    },
  };
}

const master = process.env.RESOLUTE_MASTER ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [preact(), swaggerUi()],
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 400 },
  // Keep the browser's Host: the master refuses cookie-authenticated POSTs whose Origin is not its
  // own host (CSRF, crates/master/src/http/csrf.rs).
  server: {
    proxy: Object.fromEntries(["/api", "/info", "/proxy"].map((p) => [p, { target: master, changeOrigin: false }])),
  },
});
