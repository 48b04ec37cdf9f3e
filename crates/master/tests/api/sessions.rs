//! Session safety: CSRF on cookie-authenticated mutations, login throttling, equal work for
//! unknown users, revocation on password change or deactivation, the last active admin.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::experiments::{create, minimal_yaml};
use crate::harness::{Reply, TestMaster, assert_error};
use resolute_master::auth::password::client_hash;

async fn cookie_patch(m: &TestMaster, token: &str, id: i64, name: &str, origin: Option<&str>) -> Reply {
    // What a foreign page's `fetch(..., {method: "PATCH", credentials: "include", body})` or a
    // form with `enctype=text/plain` sends: the cookie, a text/plain body, the page's Origin.
    let mut req = m
        .http
        .patch(format!("{}/api/v1/experiments/{id}", m.base))
        .header("Cookie", format!("auth={token}"))
        .header("Content-Type", "text/plain")
        .body(json!({"name": name}).to_string());
    if let Some(origin) = origin {
        req = req.header("Origin", origin);
    }
    m.send(req).await
}

async fn experiment_name(m: &TestMaster, token: &str, id: i64) -> String {
    let r = m.get(&format!("/api/v1/experiments/{id}"), Some(token)).await;
    r.body["experiment"]["name"].as_str().unwrap().to_owned()
}

pub async fn cross_origin_cookie_mutation_is_refused(m: &TestMaster) {
    let login = m
        .send(m.http.post(format!("{}/api/v1/auth/login", m.base)).json(&json!({"username": "admin", "password": "", "isHashed": true})))
        .await;
    assert_eq!(login.status, 200, "{}", login.text);
    let admin = login.body["token"].as_str().unwrap().to_owned();
    let id = create(m, &admin, &minimal_yaml("csrf-target"), false).await;

    let forged = cookie_patch(m, &admin, id, "pwned", Some("http://evil.example")).await;
    assert_error(&forged, 403, "PermissionDenied");
    assert!(forged.text.contains("cross-site request refused") && forged.text.contains("evil.example"), "{}", forged.text);
    assert_eq!(experiment_name(m, &admin, id).await, "csrf-target", "the forged request changed nothing");
    let null_origin = cookie_patch(m, &admin, id, "pwned", Some("null")).await;
    assert_error(&null_origin, 403, "PermissionDenied");
    let referer = m
        .send(
            m.http
                .post(format!("{}/api/v1/experiments/{id}/archive", m.base))
                .header("Cookie", format!("auth={admin}"))
                .header("Referer", "http://evil.example/page"),
        )
        .await;
    assert_error(&referer, 403, "PermissionDenied");

    // The master's own pages, and any Bearer client, still change it.
    let same_origin = cookie_patch(m, &admin, id, "renamed-by-ui", Some(&m.base)).await;
    assert_eq!(same_origin.status, 200, "{}", same_origin.text);
    assert_eq!(experiment_name(m, &admin, id).await, "renamed-by-ui");
    let bearer = m
        .send(
            m.http
                .patch(format!("{}/api/v1/experiments/{id}", m.base))
                .bearer_auth(&admin)
                .header("Origin", "http://evil.example")
                .json(&json!({"name": "renamed-by-cli"})),
        )
        .await;
    assert_eq!(bearer.status, 200, "{}", bearer.text);
    assert_eq!(experiment_name(m, &admin, id).await, "renamed-by-cli");
    // Reads with the cookie work from anywhere (a link to the master).
    let read = m
        .send(m.http.get(format!("{}/api/v1/me", m.base)).header("Cookie", format!("auth={admin}")).header("Origin", "http://evil.example"))
        .await;
    assert_eq!(read.status, 200, "{}", read.text);
}

pub async fn login_sets_a_same_site_http_only_cookie(m: &TestMaster) {
    let resp = m
        .http
        .post(format!("{}/api/v1/auth/login", m.base))
        .json(&json!({"username": "admin", "password": "", "isHashed": true}))
        .send()
        .await
        .unwrap();
    let cookie = resp.headers().get("set-cookie").expect("login sets the auth cookie").to_str().unwrap().to_owned();
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(cookie.starts_with(&format!("auth={};", body["token"].as_str().unwrap())), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: a Secure cookie would never be sent back");
    let logout = m.http.post(format!("{}/api/v1/auth/logout", m.base)).bearer_auth(body["token"].as_str().unwrap()).send().await.unwrap();
    let cleared = logout.headers().get("set-cookie").expect("logout clears the cookie").to_str().unwrap();
    assert!(cleared.starts_with("auth=;") && cleared.contains("Max-Age=0"), "{cleared}");
}

async fn login_as(m: &TestMaster, username: &str, password: &str) -> Reply {
    m.post("/api/v1/auth/login", None, json!({"username": username, "password": client_hash(password), "isHashed": true})).await
}

pub async fn the_101st_wrong_password_is_throttled(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "victim", "correct horse").await;
    m.create_user(&admin, "neighbour", "battery staple").await;
    let started = Instant::now();
    let mut statuses = std::collections::BTreeMap::<u16, u32>::new();
    for i in 0..100 {
        *statuses.entry(login_as(m, "victim", &format!("guess{i}")).await.status).or_default() += 1;
    }
    assert_eq!(statuses.get(&401), Some(&10), "ten guesses are checked, the rest refused: {statuses:?}");
    assert_eq!(statuses.get(&429), Some(&90), "{statuses:?}");
    // Refused guesses cost no Argon2 work: 90 of them take far less than 90 verifications.
    eprintln!("100 wrong logins took {:?}", started.elapsed());

    let r101 = login_as(m, "victim", "guess100").await;
    assert_error(&r101, 429, "ResourceExhausted");
    assert!(r101.text.contains("too many failed logins") && r101.text.contains("try again in"), "{}", r101.text);
    let right = login_as(m, "victim", "correct horse").await;
    assert_error(&right, 429, "ResourceExhausted");
    // The address has used up its failures too: another account from it waits as well.
    let other = login_as(m, "neighbour", "battery staple").await;
    assert_error(&other, 429, "ResourceExhausted");
    let resp = m
        .http
        .post(format!("{}/api/v1/auth/login", m.base))
        .json(&json!({"username": "victim", "password": client_hash("correct horse"), "isHashed": true}))
        .send()
        .await
        .unwrap();
    let retry_after: u64 = resp.headers().get("retry-after").expect("Retry-After").to_str().unwrap().parse().unwrap();
    assert!((1..=300).contains(&retry_after), "{retry_after}");
    // Sessions already open are untouched.
    assert_eq!(m.get("/api/v1/me", Some(&admin)).await.status, 200);
}

pub async fn a_few_typos_do_not_lock_a_user_out(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "typist", "s3cret").await;
    for round in 0..3 {
        for _ in 0..5 {
            assert_error(&login_as(m, "typist", "s3crte").await, 401, "Unauthenticated");
        }
        let ok = login_as(m, "typist", "s3cret").await;
        assert_eq!(ok.status, 200, "round {round}: {}", ok.text);
    }
}

/// Median of five logins' durations.
async fn median_login(m: &TestMaster, username: &str, password: &str) -> Duration {
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        assert_error(&login_as(m, username, password).await, 401, "Unauthenticated");
        times.push(t.elapsed());
    }
    times.sort();
    times[2]
}

pub async fn unknown_users_cost_what_known_users_do(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    m.create_user(&admin, "known", "p4ssword").await;
    let unknown = median_login(m, "nobody-here", "p4ssword").await;
    let wrong = median_login(m, "known", "wrong").await;
    // Loose on purpose (a shared CI machine): before, the unknown user answered ~20x faster.
    assert!(unknown * 4 >= wrong, "unknown user {unknown:?} vs wrong password {wrong:?}");
}

pub async fn password_change_and_deactivation_end_other_sessions(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = m.create_user(&admin, "rotating", "old-pass").await;
    let laptop = login_as(m, "rotating", "old-pass").await.body["token"].as_str().unwrap().to_owned();
    let desktop = login_as(m, "rotating", "old-pass").await.body["token"].as_str().unwrap().to_owned();
    assert_eq!(m.get("/api/v1/me", Some(&desktop)).await.status, 200, "cached");

    // Own change: the session that made it stays, the others end.
    let r = m.post(&format!("/api/v1/users/{id}/password"), Some(&laptop), json!("new-pass")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_error(&m.get("/api/v1/me", Some(&desktop)).await, 401, "Unauthenticated");
    assert_eq!(m.get("/api/v1/me", Some(&laptop)).await.status, 200);

    // An admin's change ends them all.
    let phone = login_as(m, "rotating", "new-pass").await.body["token"].as_str().unwrap().to_owned();
    let r = m.post(&format!("/api/v1/users/{id}/password"), Some(&admin), json!("newer-pass")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_error(&m.get("/api/v1/me", Some(&laptop)).await, 401, "Unauthenticated");
    assert_error(&m.get("/api/v1/me", Some(&phone)).await, 401, "Unauthenticated");
    assert_eq!(m.get("/api/v1/me", Some(&admin)).await.status, 200, "the admin's own session is untouched");

    // Deactivating ends them; reactivating does not bring them back.
    let fresh = login_as(m, "rotating", "newer-pass").await.body["token"].as_str().unwrap().to_owned();
    assert_eq!(m.get("/api/v1/me", Some(&fresh)).await.status, 200);
    assert_eq!(m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"active": false})).await.status, 200);
    assert_eq!(m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"active": true})).await.status, 200);
    assert_error(&m.get("/api/v1/me", Some(&fresh)).await, 401, "Unauthenticated");
}

pub async fn the_last_active_admin_stays_admin(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    for change in [json!({"admin": false}), json!({"active": false}), json!({"admin": false, "active": false})] {
        let r = m.patch("/api/v1/users/1", Some(&admin), change.clone()).await;
        assert_error(&r, 400, "FailedPrecondition");
        assert!(r.text.contains("last active admin"), "{change}: {}", r.text);
    }
    let me = m.get("/api/v1/me", Some(&admin)).await;
    assert_eq!((me.body["user"]["admin"].as_bool(), me.body["user"]["active"].as_bool()), (Some(true), Some(true)));

    // With a second active admin, either may step down, but not both.
    let second = m.create_user(&admin, "second-admin", "pw").await;
    assert_eq!(m.patch(&format!("/api/v1/users/{second}"), Some(&admin), json!({"admin": true})).await.status, 200);
    assert_eq!(m.patch("/api/v1/users/1", Some(&admin), json!({"admin": false})).await.status, 200);
    let token2 = login_as(m, "second-admin", "pw").await.body["token"].as_str().unwrap().to_owned();
    assert_error(&m.patch(&format!("/api/v1/users/{second}"), Some(&token2), json!({"active": false})).await, 400, "FailedPrecondition");
    // An inactive admin does not count: deactivate admin (id 1) after re-promoting it inactive.
    assert_eq!(m.patch("/api/v1/users/1", Some(&token2), json!({"admin": true, "active": false})).await.status, 200);
    assert_error(&m.patch(&format!("/api/v1/users/{second}"), Some(&token2), json!({"admin": false})).await, 400, "FailedPrecondition");
}
