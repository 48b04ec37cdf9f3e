//! Picks the folder the web UI's assets are embedded from (`src/http/webui.rs`).
//!
//! `webui/dist` (built by `scripts/webui.sh`: `npm ci && npm run build`) when it holds an
//! `index.html`; otherwise a one-page placeholder, written to `OUT_DIR`, that says how to build the
//! UI — so a fresh clone that never ran npm still `cargo build`s. The folder's path reaches
//! `rust-embed` as `RESOLUTE_WEBUI_DIR`. An empty `webui/dist` is created when missing so that
//! cargo can watch it: building the UI afterwards re-runs this script and re-embeds.

use std::path::PathBuf;
use std::{env, fs};

const PLACEHOLDER: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Resolute — web UI not built</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;color:#222}
code{background:#f2f2f2;padding:.1rem .3rem;border-radius:3px}</style></head>
<body><h1>The web UI was not built into this binary</h1>
<p>The master is running and its REST API answers under <code>/api/v1/</code>. To serve the web UI,
build it (Node.js 18+ and npm) and rebuild the binary:</p>
<p><code>scripts/webui.sh &amp;&amp; cargo build --bins</code></p>
<p>See the README's set-up section.</p></body></html>
"#;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dist = manifest.join("../../webui/dist");
    if !dist.exists() {
        // Best effort: a read-only checkout still builds with the placeholder.
        let _ = fs::create_dir_all(&dist);
    }
    println!("cargo:rerun-if-changed={}", dist.display());
    let folder = if dist.join("index.html").is_file() {
        dist
    } else {
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("webui-placeholder");
        fs::create_dir_all(&out).expect("create the placeholder folder in OUT_DIR");
        fs::write(out.join("index.html"), PLACEHOLDER).expect("write the placeholder page");
        out
    };
    let folder = folder.canonicalize().unwrap_or(folder);
    println!("cargo:rustc-env=RESOLUTE_WEBUI_DIR={}", folder.display());
}
