use serde_json::json;

use crate::harness::{TestMaster, assert_error};

pub async fn malformed_bodies_are_400_naming_the_field(m: &TestMaster) {
    let r = m.post_raw("/api/v1/auth/login", None, "{not json").await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/auth/login", None, json!({"password": ""})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("username"), "{}", r.text);
    let r = m.post("/api/v1/auth/login", None, json!({"username": 5})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("username"), "{}", r.text);

    let admin = m.login("admin", "").await;
    let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "x", "admin": "yes"}})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("user.admin"), "{}", r.text);
    let r = m.post("/api/v1/users", Some(&admin), json!({"password": "x"})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("user"), "{}", r.text);
    let r = m.post_raw("/api/v1/users/1/password", Some(&admin), r#"{"password": "x"}"#).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post_raw("/api/v1/users/1/password", Some(&admin), "").await;
    assert_error(&r, 400, "InvalidArgument");
}

pub async fn duplicate_and_invalid_usernames(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "dup", "").await;
    let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "dup"}})).await;
    assert_error(&r, 409, "AlreadyExists");
    for bad in ["", "has space", "a/b", "tab\tname", &"x".repeat(200)] {
        let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": bad}})).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains("username"), "{}", r.text);
    }
    let r = m.get("/api/v1/users?limit=0", Some(&admin)).await;
    assert_eq!(r.body["pagination"]["total"], 3, "nothing half-written: {}", r.text);
}

pub async fn oversized_body_is_413(m: &TestMaster) {
    let huge = format!(r#"{{"username": "{}"}}"#, "a".repeat(97 * 1024 * 1024));
    let r = m.post_raw("/api/v1/auth/login", None, &huge).await;
    assert_eq!(r.status, 413, "{}", &r.text[..r.text.len().min(200)]);
    assert!(r.body["error"]["error"].is_string());
}

pub async fn bad_path_and_query_values(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    assert_error(&m.get("/api/v1/users/abc", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/users/99999", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/users/nobody/by-username", Some(&admin)).await, 404, "NotFound");
    let r = m.get("/api/v1/users?limit=ten", Some(&admin)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("limit") || r.text.contains("invalid digit"), "{}", r.text);
    assert_error(&m.get("/api/v1/users?sortBy=SORT_BY_SHOE_SIZE", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/users?active=maybe", Some(&admin)).await, 400, "InvalidArgument");
}
