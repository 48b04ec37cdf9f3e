// Vite build of the web UI. Output: dist/ (index.html + content-hashed assets/), embedded into the
// `det` binary by crates/master/build.rs. `npm run dev` proxies the API to a master on :8080
// (RESOLUTE_MASTER overrides), so the UI can be developed with hot reload.
import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

const master = process.env.RESOLUTE_MASTER ?? "http://127.0.0.1:8080";

export default defineConfig({
  plugins: [preact()],
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 400 },
  // Keep the browser's Host: the master refuses cookie-authenticated POSTs whose Origin is not its
  // own host (CSRF, crates/master/src/http/csrf.rs).
  server: {
    proxy: Object.fromEntries(["/api", "/info", "/proxy"].map((p) => [p, { target: master, changeOrigin: false }])),
  },
});
