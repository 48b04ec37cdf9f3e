use chrono::TimeDelta;
use resolute_store::{AgentUserGroup, NewUser, OrderDirection, Store, StoreError, UserFilter, UserPatch, UserSort, db_now};

pub fn new_user(name: &str) -> NewUser {
    NewUser {
        username: name.to_owned(),
        display_name: String::new(),
        admin: false,
        active: true,
        remote: false,
        password_hash: None,
        now: db_now(),
    }
}

pub async fn create_and_fetch(store: &dyn Store) {
    let mut user = new_user("alice");
    user.display_name = "Alice A.".to_owned();
    user.admin = true;
    user.password_hash = Some("$argon2id$v=19$stub".to_owned());
    let now = user.now;
    let created = store.create_user(user).await.unwrap();
    assert!(created.id > 0);
    assert_eq!(created.username, "alice");
    assert_eq!(created.display_name, "Alice A.");
    assert!(created.admin && created.active && !created.remote);
    assert_eq!(created.password_hash.as_deref(), Some("$argon2id$v=19$stub"));
    assert_eq!(created.modified_at, now);
    assert_eq!(created.last_auth_at, None);

    assert_eq!(store.user_by_id(created.id).await.unwrap(), created);
    assert_eq!(store.user_by_name("alice").await.unwrap(), created);
}

pub async fn duplicate_username_conflicts(store: &dyn Store) {
    store.create_user(new_user("bob")).await.unwrap();
    let err = store.create_user(new_user("bob")).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { entity: "user", .. }), "{err:?}");
    // Nothing half-written: still exactly one bob.
    let page = store.list_users(&UserFilter { name: Some("bob".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.total, 1);
}

pub async fn create_if_absent_is_idempotent(store: &dyn Store) {
    assert!(store.create_user_if_absent(new_user("admin")).await.unwrap());
    let mut again = new_user("admin");
    again.admin = true;
    assert!(!store.create_user_if_absent(again).await.unwrap());
    assert!(!store.user_by_name("admin").await.unwrap().admin, "the existing row is kept");
}

pub async fn update_changes_only_given_fields(store: &dyn Store) {
    let created = store.create_user(new_user("carol")).await.unwrap();
    let later = created.modified_at + TimeDelta::seconds(5);
    let patch = UserPatch { display_name: Some("Carol".into()), active: Some(false), now: Some(later), ..Default::default() };
    let updated = store.update_user(created.id, &patch).await.unwrap();
    assert_eq!(updated.display_name, "Carol");
    assert!(!updated.active);
    assert_eq!(updated.username, "carol");
    assert_eq!(updated.admin, created.admin);
    assert_eq!(updated.password_hash, created.password_hash);
    assert_eq!(updated.modified_at, later);

    let patch = UserPatch { admin: Some(true), username: Some("caroline".into()), ..Default::default() };
    let updated = store.update_user(created.id, &patch).await.unwrap();
    assert!(updated.admin);
    assert_eq!(updated.username, "caroline");
    assert_eq!(updated.display_name, "Carol");
    assert!(matches!(store.user_by_name("carol").await, Err(StoreError::NotFound { .. })));
}

pub async fn password_can_be_set_and_cleared(store: &dyn Store) {
    let created = store.create_user(new_user("dave")).await.unwrap();
    let set = UserPatch { password_hash: Some(Some("h1".into())), ..Default::default() };
    assert_eq!(store.update_user(created.id, &set).await.unwrap().password_hash.as_deref(), Some("h1"));
    let untouched = UserPatch { display_name: Some("D".into()), ..Default::default() };
    assert_eq!(store.update_user(created.id, &untouched).await.unwrap().password_hash.as_deref(), Some("h1"));
    let clear = UserPatch { password_hash: Some(None), ..Default::default() };
    assert_eq!(store.update_user(created.id, &clear).await.unwrap().password_hash, None);
}

pub async fn rename_to_taken_name_conflicts(store: &dyn Store) {
    store.create_user(new_user("erin")).await.unwrap();
    let frank = store.create_user(new_user("frank")).await.unwrap();
    let patch = UserPatch { username: Some("erin".into()), display_name: Some("x".into()), ..Default::default() };
    let err = store.update_user(frank.id, &patch).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
    assert_eq!(store.user_by_id(frank.id).await.unwrap(), frank, "the failed update wrote nothing");
}

pub async fn unknown_user_is_not_found(store: &dyn Store) {
    assert!(matches!(store.user_by_id(4242).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.user_by_name("nobody").await, Err(StoreError::NotFound { .. })));
    let patch = UserPatch { active: Some(true), ..Default::default() };
    assert!(matches!(store.update_user(4242, &patch).await, Err(StoreError::NotFound { .. })));
}

pub async fn list_filters_sorts_and_pages(store: &dyn Store) {
    for (name, admin, active, display) in
        [("u3", false, true, "Zed"), ("u1", true, true, ""), ("u2", false, false, "Amy"), ("u4", false, true, "")]
    {
        let mut u = new_user(name);
        u.admin = admin;
        u.active = active;
        u.display_name = display.into();
        store.create_user(u).await.unwrap();
    }
    let names = |page: resolute_store::UserPage| page.users.into_iter().map(|u| u.username).collect::<Vec<_>>();

    let all = store.list_users(&UserFilter::default()).await.unwrap();
    assert_eq!(all.total, 4);
    assert_eq!(names(all), ["u3", "u1", "u2", "u4"], "default order is by id");

    let active = store.list_users(&UserFilter { active: Some(true), ..Default::default() }).await.unwrap();
    assert_eq!(active.total, 3);
    let admins = store.list_users(&UserFilter { admin: Some(true), ..Default::default() }).await.unwrap();
    assert_eq!(names(admins), ["u1"]);
    let by_display = store.list_users(&UserFilter { name: Some("AM".into()), ..Default::default() }).await.unwrap();
    assert_eq!(names(by_display), ["u2"], "name filter is a case-insensitive substring");

    let sorted = UserFilter { sort: UserSort::Username, order: OrderDirection::Desc, ..Default::default() };
    assert_eq!(names(store.list_users(&sorted).await.unwrap()), ["u4", "u3", "u2", "u1"]);
    let by_name = UserFilter { sort: UserSort::Name, ..Default::default() };
    assert_eq!(names(store.list_users(&by_name).await.unwrap()), ["u2", "u1", "u4", "u3"]);

    let page = UserFilter { sort: UserSort::Username, offset: 1, limit: Some(2), ..Default::default() };
    let page = store.list_users(&page).await.unwrap();
    assert_eq!(page.total, 4, "total counts every match, not just the page");
    assert_eq!(names(page), ["u2", "u3"]);
    let past_end = UserFilter { offset: 10, limit: Some(2), ..Default::default() };
    assert!(store.list_users(&past_end).await.unwrap().users.is_empty());
}

pub async fn record_login_sets_last_auth(store: &dyn Store) {
    let user = store.create_user(new_user("gina")).await.unwrap();
    let at = db_now();
    store.record_login(user.id, at).await.unwrap();
    assert_eq!(store.user_by_id(user.id).await.unwrap().last_auth_at, Some(at));
}

/// `det user link-with-agent-user`: the four columns are written together, read back by id,
/// name, list and session, left alone by other patches, and replaced by a new link.
pub async fn agent_user_group_links_and_relinks(store: &dyn Store) {
    let created = store.create_user(new_user("linda")).await.unwrap();
    assert_eq!(created.agent_user_group(), None);
    let link = AgentUserGroup { uid: 20001, gid: 20002, user: "linda".into(), group: "ml-team".into() };
    let patch = UserPatch { agent_user_group: Some(link.clone()), ..Default::default() };
    let linked = store.update_user(created.id, &patch).await.unwrap();
    assert_eq!(linked.agent_user_group(), Some(link.clone()));
    assert_eq!(store.user_by_name("linda").await.unwrap().agent_user_group(), Some(link.clone()));
    let page = store.list_users(&UserFilter { name: Some("linda".into()), ..Default::default() }).await.unwrap();
    assert_eq!(page.users[0].agent_user_group(), Some(link.clone()));
    store
        .create_session(resolute_store::NewSession {
            user_id: created.id,
            token_hash: "linda-token".into(),
            created_at: db_now(),
            expires_at: db_now() + TimeDelta::days(1),
        })
        .await
        .unwrap();
    let session = store.session_by_token_hash("linda-token").await.unwrap().unwrap();
    assert_eq!(session.user.agent_user_group(), Some(link.clone()));

    let other = UserPatch { display_name: Some("Linda".into()), ..Default::default() };
    assert_eq!(store.update_user(created.id, &other).await.unwrap().agent_user_group(), Some(link));
    let relink = AgentUserGroup { uid: 0, gid: 0, user: "root".into(), group: "root".into() };
    let patch = UserPatch { agent_user_group: Some(relink.clone()), ..Default::default() };
    assert_eq!(store.update_user(created.id, &patch).await.unwrap().agent_user_group(), Some(relink));
}
