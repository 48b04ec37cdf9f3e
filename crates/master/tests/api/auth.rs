use serde_json::json;

use crate::harness::{TestMaster, assert_error};

use resolute_master::auth::password::client_hash;

pub async fn blank_password_login_with_hashed_and_plain(m: &TestMaster) {
    // The upstream client sends a blank password as "" with isHashed.
    let r = m.post("/api/v1/auth/login", None, json!({"username": "determined", "password": "", "isHashed": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let token = r.body["token"].as_str().unwrap();
    assert_eq!(r.body["user"]["username"], "determined");
    assert_eq!(r.body["user"]["admin"], false);
    assert!(r.body["user"]["lastAuthAt"].is_string());
    assert!(r.body["user"]["agentUserGroup"].is_null());
    let me = m.get("/api/v1/me", Some(token)).await;
    assert_eq!(me.body["user"]["username"], "determined");
    let same = m.get("/api/v1/auth/user", Some(token)).await;
    assert_eq!(same.body, me.body);
    // snake_case input works too, and so does the plain form curl users send.
    let r = m.post("/api/v1/auth/login", None, json!({"username": "admin", "password": "", "is_hashed": true})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["user"]["admin"], true);
    m.login("admin", "").await;
}

/// Upstream's master answers a rejected login 401 `Unauthenticated` (the 0.38 SDK raises
/// `UnauthenticatedException`), the same body for an unknown user as for a wrong password.
pub async fn wrong_password_and_unknown_user_are_401(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "pat", "Passw0rd").await;
    let wrong = m.post("/api/v1/auth/login", None, json!({"username": "pat", "password": client_hash("nope"), "isHashed": true})).await;
    assert_error(&wrong, 401, "Unauthenticated");
    assert!(wrong.text.contains("invalid credentials"));
    let blank = m.post("/api/v1/auth/login", None, json!({"username": "pat", "password": ""})).await;
    assert_error(&blank, 401, "Unauthenticated");
    let unknown = m.post("/api/v1/auth/login", None, json!({"username": "ghost", "password": ""})).await;
    assert_error(&unknown, 401, "Unauthenticated");
    assert_eq!(unknown.body["error"]["error"], wrong.body["error"]["error"], "no username probing");
    let ok = m.post("/api/v1/auth/login", None, json!({"username": "pat", "password": client_hash("Passw0rd"), "isHashed": true})).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
}

pub async fn logout_invalidates_token(m: &TestMaster) {
    let token = m.login("admin", "").await;
    let other = m.login("admin", "").await;
    assert_eq!(m.post("/api/v1/auth/logout", Some(&token), json!({})).await.status, 200);
    assert_error(&m.get("/api/v1/me", Some(&token)).await, 401, "Unauthenticated");
    assert_eq!(m.get("/api/v1/me", Some(&other)).await.status, 200, "other sessions live on");
}

pub async fn cookie_is_accepted(m: &TestMaster) {
    let token = m.login("admin", "").await;
    let r = m.send(m.http.get(format!("{}/api/v1/me", m.base)).header("Cookie", format!("theme=dark; auth={token}"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["username"], "admin");
}

pub async fn missing_or_garbage_token_is_401(m: &TestMaster) {
    assert_error(&m.get("/api/v1/me", None).await, 401, "Unauthenticated");
    assert_error(&m.get("/api/v1/users", Some("garbage")).await, 401, "Unauthenticated");
    let r = m.send(m.http.get(format!("{}/api/v1/me", m.base)).header("Authorization", "Basic abc")).await;
    assert_error(&r, 401, "Unauthenticated");
}

pub async fn deactivated_user_cannot_log_in_or_use_sessions(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = m.create_user(&admin, "quinn", "Passw0rd").await;
    let session = m.login("quinn", "Passw0rd").await;
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"active": false})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["active"], false);
    assert_error(&m.get("/api/v1/me", Some(&session)).await, 401, "Unauthenticated");
    let login = m.post("/api/v1/auth/login", None, json!({"username": "quinn", "password": "Passw0rd"})).await;
    assert_error(&login, 403, "PermissionDenied");
    assert!(login.text.contains("not active") && login.text.contains("deactivated"), "{}", login.text);
    // A wrong password for a deactivated account says nothing about the account.
    let wrong = m.post("/api/v1/auth/login", None, json!({"username": "quinn", "password": "nope"})).await;
    assert_error(&wrong, 401, "Unauthenticated");
    assert!(!wrong.text.contains("active"), "{}", wrong.text);
    m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"active": true})).await;
    m.login("quinn", "Passw0rd").await;
}
