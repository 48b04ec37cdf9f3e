//! `GET/PUT/DELETE /api/v1/master/cluster_message` and `GET /api/v1/master`'s `clusterMessage`:
//! admins set and clear it, everyone reads it, each bad field is a 400 naming it, and the
//! message survives a master restart.

use serde_json::{Value, json};

use crate::harness::{Reply, TestMaster, assert_error};

const PATH: &str = "/api/v1/master/cluster_message";

async fn put(m: &TestMaster, token: &str, body: Value) -> Reply {
    m.send(m.http.put(format!("{}{PATH}", m.base)).bearer_auth(token).json(&body)).await
}

fn error_text(r: &Reply) -> String {
    r.body["error"]["error"].as_str().unwrap_or_default().to_owned()
}

pub async fn cluster_message_set_get_clear_and_permissions(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "reader", "Reader123").await;
    let reader = m.login("reader", "Reader123").await;

    let r = m.get(PATH, Some(&reader)).await;
    assert_eq!((r.status, &r.body), (200, &json!({"clusterMessage": null})), "{}", r.text);

    // As the 0.38 CLI sends it: a start, nulls for what was not given.
    let start = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let r = put(m, &admin, json!({"message": "maintenance at noon", "startTime": start, "endTime": null, "duration": "2h"})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = m.get(PATH, Some(&reader)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let shown = &r.body["clusterMessage"];
    assert_eq!(shown["message"], "maintenance at noon", "{shown}");
    let starts: chrono::DateTime<chrono::Utc> = shown["startTime"].as_str().unwrap().parse().unwrap();
    let ends: chrono::DateTime<chrono::Utc> = shown["endTime"].as_str().unwrap().parse().unwrap();
    assert_eq!((ends - starts).num_minutes(), 120, "{shown}");
    assert!(shown["createdTime"].as_str().unwrap().ends_with('Z'));
    let master = m.get("/api/v1/master", None).await;
    assert_eq!(master.body["clusterMessage"]["message"], "maintenance at noon", "{}", master.text);

    // Only admins change it.
    let r = put(m, &reader, json!({"message": "mine now"})).await;
    assert_error(&r, 403, "PermissionDenied");
    assert!(error_text(&r).contains("only admins"), "{}", r.text);
    assert_error(&m.delete(PATH, Some(&reader)).await, 403, "PermissionDenied");
    assert_error(&m.get(PATH, None).await, 401, "Unauthenticated");
    assert_eq!(m.get(PATH, Some(&reader)).await.body["clusterMessage"]["message"], "maintenance at noon");

    // Each bad field is a 400 that names it; nothing changes.
    let bad = [
        (json!({"message": ""}), "message:"),
        (json!({"message": "x".repeat(251)}), "at most 250"),
        (json!({"message": "m", "startTime": "tomorrow"}), "startTime:"),
        (json!({"message": "m", "endTime": "2020-01-01T00:00:00Z"}), "endTime:"),
        (json!({"message": "m", "startTime": "2099-01-02T00:00:00Z", "endTime": "2099-01-01T00:00:00Z"}), "is not after startTime"),
        (json!({"message": "m", "duration": "5 days"}), "duration:"),
        (json!({"message": "m", "duration": "-1h"}), "duration:"),
        (json!({"message": "m", "endTime": "2099-01-01T00:00:00Z", "duration": "1h"}), "endTime and duration"),
    ];
    for (body, named) in bad {
        let r = put(m, &admin, body.clone()).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(error_text(&r).contains(named), "{body} should name {named}: {}", r.text);
    }
    assert_eq!(m.get(PATH, Some(&reader)).await.body["clusterMessage"]["message"], "maintenance at noon");

    // A message that starts later is not shown yet; setting replaces the old one.
    let r = put(m, &admin, json!({"message": "next week", "startTime": "2099-01-01T00:00:00Z"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.get(PATH, Some(&reader)).await.body, json!({"clusterMessage": null}));

    let r = put(m, &admin, json!({"message": "until cleared"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let shown = m.get(PATH, Some(&admin)).await.body;
    assert_eq!(shown["clusterMessage"]["message"], "until cleared");
    assert!(shown["clusterMessage"].get("endTime").is_none(), "{shown}");
    let r = m.delete(PATH, Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(m.get(PATH, Some(&reader)).await.body, json!({"clusterMessage": null}));
    assert!(m.get("/api/v1/master", None).await.body.get("clusterMessage").is_none());
}

pub async fn cluster_message_survives_a_restart(m: TestMaster) {
    let admin = m.login("admin", "").await;
    let r = put(&m, &admin, json!({"message": "still here", "duration": "1d"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let m = m.restart().await;
    let admin = m.login("admin", "").await;
    let r = m.get(PATH, Some(&admin)).await;
    assert_eq!(r.body["clusterMessage"]["message"], "still here", "{}", r.text);
    assert_eq!(m.get("/api/v1/master", None).await.body["clusterMessage"]["message"], "still here");
}
