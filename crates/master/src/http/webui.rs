//! The web UI: its built assets (`webui/dist`, embedded in the binary with `rust-embed`; see
//! `build.rs`) served by the router's fallback, so every API route keeps precedence.
//!
//! - `/` and `/det/…` (the prefix upstream's UI lives under, so users' old links land) serve the
//!   app: a path naming an embedded file serves it, any other path serves `index.html` and the
//!   client-side router draws the page (its own not-found page for unknown URLs). A folder with
//!   its own `index.html` serves that page: `/docs/rest-api/` is the Swagger UI over
//!   `/api/v1/openapi.json` (`swagger-ui-dist` from npm, copied there by `webui/vite.config.ts`).
//! - `/api/…` and `/proxy/…` paths that no route matched, and every non-GET/HEAD request, keep the
//!   master's JSON 404 (`super::not_found`); a missing `/assets/…` file is a plain 404, never the
//!   app's HTML under a script's name.
//! - Cache: Vite's content-hashed `assets/` are `immutable` for a year; everything else
//!   (`index.html`) is `no-cache`, revalidated by an `ETag` (the file's SHA-256). Compression is the
//!   router's `CompressionLayer` on this handler (gzip, when the client accepts it).

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::{EmbeddedFile, RustEmbed};

#[derive(RustEmbed)]
#[folder = "$RESOLUTE_WEBUI_DIR"]
struct Assets;

/// The prefix of upstream's UI URLs (`http://master:8080/det/experiments/1`).
const UPSTREAM_PREFIX: &str = "/det";
/// Vite's output folder for content-hashed files.
const HASHED_DIR: &str = "assets/";
const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const REVALIDATE: &str = "no-cache";

/// The router's fallback: the app for browser paths, the JSON 404 for API paths.
pub async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    if !matches!(method, Method::GET | Method::HEAD) || is_api_path(path) {
        return super::not_found(uri).await.into_response();
    }
    let rel = app_path(path);
    if !rel.is_empty()
        && let Some(file) = Assets::get(rel)
    {
        let cache = if rel.starts_with(HASHED_DIR) { IMMUTABLE } else { REVALIDATE };
        return serve(&file, cache, &headers);
    }
    // A folder with its own page (`docs/rest-api/`, the Swagger UI): its `index.html`, reached
    // with the trailing slash its relative links need.
    if !rel.is_empty() {
        let dir = rel.trim_end_matches('/');
        if let Some(file) = Assets::get(&format!("{dir}/index.html")) {
            if !rel.ends_with('/') {
                let to = format!("{path}/{}", uri.query().map(|q| format!("?{q}")).unwrap_or_default());
                return (StatusCode::PERMANENT_REDIRECT, [(LOCATION, to)]).into_response();
            }
            return serve(&file, REVALIDATE, &headers);
        }
    }
    if rel.starts_with(HASHED_DIR) {
        return (StatusCode::NOT_FOUND, [(CONTENT_TYPE, "text/plain; charset=utf-8")], format!("no such web UI asset: {path}"))
            .into_response();
    }
    match Assets::get("index.html") {
        Some(index) => serve(&index, REVALIDATE, &headers),
        // build.rs always provides an index.html (the app's or the placeholder).
        None => super::not_found(uri).await.into_response(),
    }
}

/// Paths that belong to the API and its neighbours, never to the app.
fn is_api_path(path: &str) -> bool {
    ["/api", "/proxy"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// The asset path relative to the app's root: `/det/x` and `/x` are the same page.
fn app_path(path: &str) -> &str {
    let path = match path.strip_prefix(UPSTREAM_PREFIX) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    path.trim_start_matches('/')
}

fn serve(file: &EmbeddedFile, cache: &'static str, headers: &HeaderMap) -> Response {
    let etag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    let fresh =
        headers.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = Response::new(Body::from(file.data.clone().into_owned()));
        let mime = file.metadata.mimetype();
        let mime =
            if mime.starts_with("text/") || mime == "application/javascript" { format!("{mime}; charset=utf-8") } else { mime.to_owned() };
        if let Ok(v) = HeaderValue::from_str(&mime) {
            r.headers_mut().insert(CONTENT_TYPE, v);
        }
        r
    };
    let h = response.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::{app_path, is_api_path};

    #[test]
    fn upstream_prefix_and_api_paths() {
        assert_eq!(app_path("/det/experiments/3"), "experiments/3");
        assert_eq!(app_path("/det"), "");
        assert_eq!(app_path("/details"), "details");
        assert_eq!(app_path("/assets/index-abc.js"), "assets/index-abc.js");
        assert!(is_api_path("/api/v1/nope"));
        assert!(is_api_path("/proxy/x/"));
        assert!(!is_api_path("/apiary"));
        assert!(!is_api_path("/det/api"));
    }
}
