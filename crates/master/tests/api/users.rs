use serde_json::json;

use crate::harness::{TestMaster, assert_error};

pub async fn admin_creates_user_and_sets_password(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // The upstream CLI's create: client-hashed password, isHashed true.
    let hash = resolute_master::auth::password::client_hash("TestPass1");
    let r = m
        .post(
            "/api/v1/users",
            Some(&admin),
            json!({"user": {"username": "testuser1", "admin": false, "active": true, "remote": false}, "password": hash, "isHashed": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let user = &r.body["user"];
    assert_eq!(user["username"], "testuser1");
    assert_eq!(user["displayName"], "");
    assert!(user["modifiedAt"].as_str().unwrap().ends_with('Z'));
    assert!(user.get("lastAuthAt").is_none(), "optional field omitted until the first login");
    let id = user["id"].as_i64().unwrap();
    m.login("testuser1", "TestPass1").await;

    let by_name = m.get("/api/v1/users/testuser1/by-username", Some(&admin)).await;
    assert_eq!(by_name.body["user"]["id"], id);
    let by_id = m.get(&format!("/api/v1/users/{id}"), Some(&admin)).await;
    assert_eq!(by_id.body["user"]["username"], "testuser1");

    // The upstream change-password: PATCH with a client hash.
    let new_hash = resolute_master::auth::password::client_hash("NewPass2");
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"password": new_hash, "isHashed": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    m.login("testuser1", "NewPass2").await;
    let old = m.post("/api/v1/auth/login", None, json!({"username": "testuser1", "password": "TestPass1"})).await;
    assert_eq!(old.status, 401, "the old password is a rejected login");
}

pub async fn seed_000_curl_shapes(m: &TestMaster) {
    // Login with a plain password; the body is one line with "token" first, which the seed's
    // `grep token | awk | cut -d':' -f 2 | cut -d',' -f 1` pipeline relies on.
    let r = m.post_raw("/api/v1/auth/login", None, r#"{ "username": "admin", "password": "" }"#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.starts_with(r#"{"token":""#), "{}", r.text);
    assert!(!r.text.contains('\n'));
    let token = r.text.split(':').nth(1).unwrap().split(',').next().unwrap().trim_matches('"').to_owned();
    // Create without a Content-Type header (curl -d without -H sends form encoding).
    let body = r#"{ "user": { "username": "testuser1", "admin": false, "active": true }, "password": "Init1Pass" }"#;
    let r = m
        .send(
            m.http
                .post(format!("{}/api/v1/users", m.base))
                .bearer_auth(&token)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let list = m.get("/api/v1/users", Some(&token)).await;
    let id = list.body["users"].as_array().unwrap().iter().find(|u| u["username"] == "testuser1").unwrap()["id"].as_i64().unwrap();
    // The password endpoint takes a bare JSON string.
    let r = m.post_raw(&format!("/api/v1/users/{id}/password"), Some(&token), r#""Seed000Pass""#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    m.login("testuser1", "Seed000Pass").await;
}

pub async fn non_admin_permissions(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let alice = m.create_user(&admin, "alice", "Alice123").await;
    let bob = m.create_user(&admin, "bob", "Bob12345").await;
    let tok = m.login("alice", "Alice123").await;

    let create = m.post("/api/v1/users", Some(&tok), json!({"user": {"username": "mallory"}, "password": "x"})).await;
    assert_error(&create, 403, "PermissionDenied");
    let other = m.post_raw(&format!("/api/v1/users/{bob}/password"), Some(&tok), r#""hacked""#).await;
    assert_error(&other, 403, "PermissionDenied");
    let escalate = m.patch(&format!("/api/v1/users/{alice}"), Some(&tok), json!({"admin": true})).await;
    assert_error(&escalate, 403, "PermissionDenied");
    let deactivate = m.patch(&format!("/api/v1/users/{bob}"), Some(&tok), json!({"active": false})).await;
    assert_error(&deactivate, 403, "PermissionDenied");

    // Own display name and password are fine.
    let r = m.patch(&format!("/api/v1/users/{alice}"), Some(&tok), json!({"displayName": "Alice"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = m.post_raw(&format!("/api/v1/users/{alice}/password"), Some(&tok), r#""Alice456""#).await;
    assert_eq!(r.status, 200, "{}", r.text);
    m.login("alice", "Alice456").await;
    // Reading users is open to everyone.
    assert_eq!(m.get("/api/v1/users", Some(&tok)).await.status, 200);
    // And bob was not touched.
    m.login("bob", "Bob12345").await;
}

pub async fn list_paginates_and_filters(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    for i in 0..5 {
        m.create_user(&admin, &format!("user{i}"), "").await;
    }
    let id = m.get("/api/v1/users/user4/by-username", Some(&admin)).await.body["user"]["id"].as_i64().unwrap();
    m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"active": false})).await;

    let all = m.get("/api/v1/users", Some(&admin)).await;
    assert_eq!(all.body["users"].as_array().unwrap().len(), 7);
    assert_eq!(all.body["pagination"], json!({"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 7, "total": 7}));

    let active = m.get("/api/v1/users?active=true", Some(&admin)).await;
    assert_eq!(active.body["pagination"]["total"], 6);

    // The upstream SDK pages with offset=endIndex until endIndex >= total.
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page =
            m.get(&format!("/api/v1/users?offset={offset}&limit=3&sortBy=SORT_BY_USER_NAME&orderBy=ORDER_BY_DESC"), Some(&admin)).await;
        assert_eq!(page.status, 200, "{}", page.text);
        for u in page.body["users"].as_array().unwrap() {
            seen.push(u["username"].as_str().unwrap().to_owned());
        }
        let p = &page.body["pagination"];
        if p["endIndex"].as_i64() >= p["total"].as_i64() {
            break;
        }
        offset = p["endIndex"].as_i64().unwrap();
    }
    assert_eq!(seen, ["user4", "user3", "user2", "user1", "user0", "determined", "admin"]);

    let named = m.get("/api/v1/users?name=USER3", Some(&admin)).await;
    assert_eq!(named.body["users"][0]["username"], "user3");
    let admins = m.get("/api/v1/users?admin=true", Some(&admin)).await;
    assert_eq!(admins.body["pagination"]["total"], 1);
    let tail = m.get("/api/v1/users?offset=-2", Some(&admin)).await;
    assert_eq!(tail.body["users"].as_array().unwrap().len(), 2);
    assert_eq!(tail.body["pagination"]["startIndex"], 5);
}

pub async fn patch_fields_and_rename_conflict(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = m.create_user(&admin, "carl", "Carl1234").await;
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"display_name": "Carl C", "admin": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["displayName"], "Carl C");
    assert_eq!(r.body["user"]["admin"], true);
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"username": "determined"})).await;
    assert_error(&r, 409, "AlreadyExists");
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"username": "carlos"})).await;
    assert_eq!(r.body["user"]["username"], "carlos");
    m.login("carlos", "Carl1234").await;
    let r = m.patch("/api/v1/users/999", Some(&admin), json!({"active": true})).await;
    assert_error(&r, 404, "NotFound");
}

/// `det user link-with-agent-user`: admins link any user (also at creation), the link shows in
/// every user read as upstream's `agentUserGroup`, nobody else may link (not even themselves),
/// and bad values are 400s naming the field.
pub async fn agent_user_group_links(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = m.create_user(&admin, "lena", "Lena1234").await;
    let lena = m.login("lena", "Lena1234").await;
    let group = json!({"agentUid": 20001, "agentGid": 20002, "agentUser": "lena", "agentGroup": "ml"});

    let own = m.patch(&format!("/api/v1/users/{id}"), Some(&lena), json!({"agentUserGroup": group})).await;
    assert_error(&own, 403, "PermissionDenied");
    assert!(own.text.contains("only admins can link users to agent users"), "{}", own.text);
    assert!(m.get("/api/v1/me", Some(&lena)).await.body["user"]["agentUserGroup"].is_null());

    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"agentUserGroup": group})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["agentUserGroup"], group);
    assert_eq!(m.get("/api/v1/me", Some(&lena)).await.body["user"]["agentUserGroup"], group);
    assert_eq!(m.get(&format!("/api/v1/users/{id}"), Some(&lena)).await.body["user"]["agentUserGroup"], group);
    let listed = m.get("/api/v1/users?name=lena", Some(&lena)).await;
    assert_eq!(listed.body["users"][0]["agentUserGroup"], group);
    // Another change leaves the link alone.
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), json!({"displayName": "Lena"})).await;
    assert_eq!(r.body["user"]["agentUserGroup"], group);

    let bad = |field: &str, value: serde_json::Value| {
        let mut g = group.clone();
        match value {
            serde_json::Value::Null => {
                g.as_object_mut().unwrap().remove(field);
            }
            v => g[field] = v,
        }
        json!({"agentUserGroup": g})
    };
    for (body, wanted) in [
        (bad("agentUid", json!(-1)), "agentUserGroup.agentUid must be between 0 and 2147483647, found -1"),
        (bad("agentGid", json!(4294967296_i64)), "agentUserGroup.agentGid must be between 0 and 2147483647, found 4294967296"),
        (bad("agentGroup", serde_json::Value::Null), "agentUserGroup.agentGroup is required"),
        (bad("agentUid", serde_json::Value::Null), "agentUserGroup.agentUid is required"),
        (bad("agentUser", json!("a:b")), "agentUserGroup.agentUser \"a:b\" is invalid"),
        (bad("agentUser", json!("")), "agentUserGroup.agentUser \"\" is invalid: must not be empty"),
    ] {
        let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), body).await;
        assert_error(&r, 400, "InvalidArgument");
        let message = r.body["error"]["error"].as_str().unwrap_or_default();
        assert!(message.contains(wanted), "wanted {wanted:?} in {message}");
    }
    // Refused patches changed nothing.
    assert_eq!(m.get(&format!("/api/v1/users/{id}"), Some(&admin)).await.body["user"]["agentUserGroup"], group);

    let created =
        m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "lars", "agentUserGroup": group}, "password": "Lars1234"})).await;
    assert_eq!(created.status, 200, "{}", created.text);
    assert_eq!(created.body["user"]["agentUserGroup"], group);
    let refused = m
        .post("/api/v1/users", Some(&admin), json!({"user": {"username": "lars2", "agentUserGroup": {"agentUid": 5}}, "password": "x"}))
        .await;
    assert_error(&refused, 400, "InvalidArgument");
    assert!(refused.text.contains("user.agentUserGroup.agentGid is required"), "{}", refused.text);
    assert_eq!(m.get("/api/v1/users/lars2/by-username", Some(&admin)).await.status, 404, "a refused create leaves no user");
}

/// Upstream's display-name rules: trimmed, printable ASCII only, "admin"/"determined" reserved,
/// and never another user's username or display name (ignoring case). Each refusal is a 400
/// naming `displayName`.
pub async fn display_names_follow_upstream_rules(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let id = m.create_user(&admin, "dora", "Dora1234").await;
    m.create_user(&admin, "erin", "Erin1234").await;
    let dora = m.login("dora", "Dora1234").await;
    let patch = |name: &str| json!({"displayName": name});

    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&dora), patch("  Dora the Explorer \t")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["displayName"], "Dora the Explorer", "trimmed");

    for (name, cause) in [
        ("Dörа", "non-ASCII"),
        ("Do\u{200b}ra", "non-ASCII"),
        ("ADMIN", "'admin'"),
        ("Determined", "'determined'"),
        ("ERIN", "similar username"),
    ] {
        let r = m.patch(&format!("/api/v1/users/{id}"), Some(&dora), patch(name)).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains("displayName") && r.text.contains(cause), "{name:?}: {}", r.text);
    }
    // Another user's display name is taken too, ignoring case.
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), patch("Chief")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let erin = m.get("/api/v1/users/erin/by-username", Some(&admin)).await.body["user"]["id"].as_i64().unwrap();
    let r = m.patch(&format!("/api/v1/users/{erin}"), Some(&admin), patch("chief")).await;
    assert_error(&r, 400, "InvalidArgument");
    assert_eq!(m.get("/api/v1/users/dora/by-username", Some(&admin)).await.body["user"]["displayName"], "Chief");
    // Creation applies the character rules; the admin may be called admin.
    let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "fay", "displayName": "Fäy", "active": true}})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.patch("/api/v1/users/1", Some(&admin), patch("Admin")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Empty clears it.
    let r = m.patch(&format!("/api/v1/users/{id}"), Some(&admin), patch("")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["user"]["displayName"], "");
}
