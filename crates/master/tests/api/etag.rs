//! `ETag` / `If-None-Match` on the API's JSON reads (`crates/master/src/http/etag.rs`): what the
//! web UI's polling relies on, and what upstream's clients (which never send `If-None-Match`)
//! must not notice.

use reqwest::header::{ETAG, IF_NONE_MATCH};
use serde_json::json;

use crate::experiments::{create, minimal_yaml};
use crate::harness::TestMaster;

struct Got {
    status: u16,
    etag: String,
    body: String,
}

async fn get(m: &TestMaster, path: &str, token: &str, if_none_match: Option<&str>) -> Got {
    let mut req = m.http.get(format!("{}{path}", m.base)).bearer_auth(token);
    if let Some(tag) = if_none_match {
        req = req.header(IF_NONE_MATCH, tag);
    }
    let resp = req.send().await.expect("request reaches the master");
    let status = resp.status().as_u16();
    let etag = resp.headers().get(ETAG).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let body = resp.text().await.expect("body");
    Got { status, etag, body }
}

pub async fn unchanged_reads_answer_304_and_changes_a_new_etag(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = create(m, &admin, &minimal_yaml("etag"), false).await;
    for path in [format!("/api/v1/experiments/{id}"), format!("/api/v1/experiments/{id}/trials"), "/api/v1/experiments?limit=10".to_owned()]
    {
        let first = get(m, &path, &admin, None).await;
        assert_eq!(first.status, 200, "{path}: {}", first.body);
        assert!(first.etag.starts_with('"') && first.etag.len() == 34, "{path}: etag {:?}", first.etag);
        // Same body, same tag; a matching If-None-Match is a 304 without a body.
        let again = get(m, &path, &admin, Some(&first.etag)).await;
        assert_eq!((again.status, again.etag.as_str(), again.body.as_str()), (304, first.etag.as_str(), ""), "{path}");
        // A weak or listed tag matches too; another tag gets the whole body.
        assert_eq!(get(m, &path, &admin, Some(&format!("\"x\", W/{}", first.etag))).await.status, 304, "{path}");
        let other = get(m, &path, &admin, Some("\"0123\"")).await;
        assert_eq!((other.status, other.body.as_str()), (200, first.body.as_str()), "{path}");
    }
    // A change to the experiment changes its tag, so the poller gets the new body.
    let path = format!("/api/v1/experiments/{id}");
    let before = get(m, &path, &admin, None).await;
    let r = m.patch(&path, Some(&admin), json!({"description": "changed"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let after = get(m, &path, &admin, Some(&before.etag)).await;
    assert_eq!(after.status, 200, "a changed experiment answered 304");
    assert_ne!(after.etag, before.etag);
    assert!(after.body.contains("changed"), "{}", after.body);
    // Errors and writes carry no tag; a stale session is still a 401, whatever the tag.
    let missing = get(m, "/api/v1/experiments/987654", &admin, None).await;
    assert_eq!((missing.status, missing.etag.as_str()), (404, ""));
    let unauth = get(m, &path, "not-a-token", Some(&after.etag)).await;
    assert_eq!(unauth.status, 401);
    let post = m.http.post(format!("{}/api/v1/experiments/{id}/archive", m.base)).bearer_auth(&admin).send().await.unwrap();
    assert!(post.headers().get(ETAG).is_none());
}
