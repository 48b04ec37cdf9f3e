//! The web UI's static serving (`crates/master/src/http/webui.rs`): the app at `/` and under
//! upstream's `/det/` prefix, client-side routes falling back to `index.html`, content types and
//! cache headers, gzip, and the API's JSON 404 unchanged. Works with the built UI (`scripts/
//! webui.sh` before `cargo build`, as scripts/test.sh does) and with the placeholder page a fresh
//! clone embeds.

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH};

use crate::harness::{TestMaster, assert_error};

struct Page {
    status: u16,
    content_type: String,
    cache: String,
    etag: String,
    encoding: String,
    body: String,
}

async fn fetch(m: &TestMaster, path: &str, headers: &[(reqwest::header::HeaderName, &str)]) -> Page {
    let mut req = m.http.get(format!("{}{path}", m.base));
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let resp = req.send().await.expect("request reaches the master");
    let h = |name| resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let (content_type, cache, etag, encoding) = (h(CONTENT_TYPE), h(CACHE_CONTROL), h(ETAG), h(CONTENT_ENCODING));
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.expect("body");
    Page { status, content_type, cache, etag, encoding, body: String::from_utf8_lossy(&bytes).into_owned() }
}

/// `/assets/...` files `index.html` references (none in the placeholder page).
fn asset_refs(index: &str) -> Vec<String> {
    index.split(['"', '\'']).filter(|s| s.starts_with("/assets/")).map(str::to_owned).collect()
}

pub async fn app_is_served_at_root_and_under_det(m: &TestMaster) {
    let root = fetch(m, "/", &[]).await;
    assert_eq!(root.status, 200, "{}", root.body);
    assert_eq!(root.content_type, "text/html; charset=utf-8");
    assert_eq!(root.cache, "no-cache", "index.html must be revalidated so a new build is picked up");
    assert!(root.etag.starts_with('"') && root.etag.len() == 66, "etag {:?}", root.etag);
    if asset_refs(&root.body).is_empty() {
        // A binary built before the UI: the page says how to build it.
        assert!(root.body.contains("scripts/webui.sh"), "{}", root.body);
    } else {
        assert!(root.body.contains(r#"<div id="app">"#), "{}", root.body);
    }
    // Client-side routes, with and without upstream's prefix, are the same page.
    for path in [
        "/dashboard",
        "/det/dashboard",
        "/det/experiments/12/trials/3/logs",
        "/experiments/999999",
        "/det",
        "/det/",
        "/login?next=%2Fexperiments",
    ] {
        let p = fetch(m, path, &[]).await;
        assert_eq!((p.status, p.content_type.as_str()), (200, "text/html; charset=utf-8"), "{path}");
        assert_eq!(p.body, root.body, "{path} is not the app's index.html");
        assert_eq!(p.cache, "no-cache", "{path}");
    }
    // Revalidation: an unchanged index.html is a 304.
    let again = m.http.get(format!("{}/experiments", m.base)).header(IF_NONE_MATCH, &root.etag).send().await.unwrap();
    assert_eq!(again.status().as_u16(), 304);
}

pub async fn hashed_assets_have_types_and_are_immutable(m: &TestMaster) {
    let index = fetch(m, "/", &[]).await;
    for asset in asset_refs(&index.body) {
        let expected = if asset.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else if asset.ends_with(".css") {
            "text/css; charset=utf-8"
        } else {
            continue;
        };
        for path in [asset.clone(), format!("/det{asset}")] {
            let p = fetch(m, &path, &[]).await;
            assert_eq!(p.status, 200, "{path}");
            assert!(
                p.content_type == expected || p.content_type == expected.replace("text/javascript", "application/javascript"),
                "{path}: {}",
                p.content_type
            );
            assert_eq!(p.cache, "public, max-age=31536000, immutable", "{path}");
            assert!(!p.body.starts_with("<!doctype"), "{path} answered HTML");
        }
        let gz = fetch(m, &asset, &[(ACCEPT_ENCODING, "gzip")]).await;
        assert_eq!(gz.encoding, "gzip", "{asset} is not compressed for a client that accepts gzip");
    }
    // A missing hashed asset is a 404, never index.html under a script's name.
    let missing = fetch(m, "/assets/index-00000000.js", &[]).await;
    assert_eq!(missing.status, 404);
    assert!(!missing.body.contains("<html"), "{}", missing.body);
    let gz = fetch(m, "/experiments", &[(ACCEPT_ENCODING, "gzip")]).await;
    assert_eq!(gz.encoding, "gzip", "index.html is not compressed for a client that accepts gzip");
}

pub async fn api_paths_keep_the_json_404(m: &TestMaster) {
    for path in ["/api/v1/nope", "/api/v2/experiments", "/api", "/proxy"] {
        let r = m.send(m.http.get(format!("{}{path}", m.base)).header(ACCEPT, "text/html")).await;
        assert_error(&r, 404, "NotFound");
        assert!(r.text.contains(&format!("no such endpoint: {path}")), "{path}: {}", r.text);
    }
    // Only GET/HEAD reach the app; any other method on a browser path is the API's 404.
    let r = m.send(m.http.post(format!("{}/dashboard", m.base)).json(&serde_json::json!({}))).await;
    assert_error(&r, 404, "NotFound");
    // Existing routes are untouched.
    let info = m.get("/info", None).await;
    assert_eq!(info.status, 200);
    assert_eq!(info.body["version"], "0.38.1");
    let unauth = m.get("/api/v1/experiments", None).await;
    assert_eq!(unauth.status, 401, "{}", unauth.text);
}

/// The REST API's Swagger UI at `/docs/rest-api/` (webui/swagger, swagger-ui-dist from npm,
/// served from the binary: no CDN) over the master's own OpenAPI document.
pub async fn swagger_ui_is_served_at_docs_rest_api(m: &TestMaster) {
    let doc = m.get("/api/v1/openapi.json", None).await;
    assert_eq!(doc.status, 200, "the document Swagger UI reads is public: {}", doc.text);
    assert!(doc.body["paths"]["/api/v1/experiments"].is_object(), "{}", doc.text);
    let index = fetch(m, "/", &[]).await;
    let page = fetch(m, "/docs/rest-api/", &[]).await;
    assert_eq!((page.status, page.content_type.as_str()), (200, "text/html; charset=utf-8"));
    if asset_refs(&index.body).is_empty() {
        // A binary built before the UI serves the placeholder that says how to build it.
        assert!(page.body.contains("scripts/webui.sh"), "{}", page.body);
        return;
    }
    assert!(page.body.contains("./swagger-ui-bundle.js") && page.body.contains("./init.js"), "{}", page.body);
    assert_eq!(page.cache, "no-cache");
    // Without the slash, a redirect to it (the page's links are relative).
    let bare = m.http.get(format!("{}/det/docs/rest-api?x=1", m.base)).send().await.unwrap();
    assert_eq!(bare.url().path(), "/det/docs/rest-api/", "followed the redirect to the folder");
    assert_eq!(bare.url().query(), Some("x=1"));
    let init = fetch(m, "/docs/rest-api/init.js", &[]).await;
    assert_eq!(init.status, 200);
    assert!(init.body.contains("\"/api/v1/openapi.json\""), "{}", init.body);
    let bundle = fetch(m, "/docs/rest-api/swagger-ui-bundle.js", &[(ACCEPT_ENCODING, "gzip")]).await;
    assert_eq!((bundle.status, bundle.encoding.as_str()), (200, "gzip"));
    assert!(bundle.content_type.contains("javascript"), "{}", bundle.content_type);
    let css = fetch(m, "/docs/rest-api/swagger-ui.css", &[]).await;
    assert_eq!((css.status, css.content_type.as_str()), (200, "text/css; charset=utf-8"));
}
