use chrono::TimeDelta;
use resolute_store::{NewSession, NewUser, RevokeSessions, Store, StoreError, UserPatch, db_now};

use crate::users::new_user;

pub async fn create_lookup_delete(store: &dyn Store) {
    let user = store.create_user(new_user("sam")).await.unwrap();
    let now = db_now();
    let session = store
        .create_session(NewSession { user_id: user.id, token_hash: "abc123".into(), created_at: now, expires_at: now + TimeDelta::days(7) })
        .await
        .unwrap();
    assert_eq!(session.user_id, user.id);
    assert_eq!(session.expires_at, now + TimeDelta::days(7));

    let found = store.session_by_token_hash("abc123").await.unwrap().expect("session found");
    assert_eq!(found.session_id, session.id);
    assert_eq!(found.expires_at, session.expires_at);
    assert_eq!(found.user, user, "the session comes with its user");
    assert_eq!(store.session_by_token_hash("other").await.unwrap(), None);

    store.delete_session(session.id).await.unwrap();
    assert_eq!(store.session_by_token_hash("abc123").await.unwrap(), None);
    // Deleting twice is harmless.
    store.delete_session(session.id).await.unwrap();
}

pub async fn expired_sessions_are_purged(store: &dyn Store) {
    let user = store.create_user(new_user("tim")).await.unwrap();
    let now = db_now();
    for (hash, expires) in [("old", now - TimeDelta::seconds(1)), ("new", now + TimeDelta::hours(1))] {
        let session = NewSession { user_id: user.id, token_hash: hash.into(), created_at: now, expires_at: expires };
        store.create_session(session).await.unwrap();
    }
    assert_eq!(store.delete_expired_sessions(now).await.unwrap(), 1);
    assert!(store.session_by_token_hash("old").await.unwrap().is_none());
    assert!(store.session_by_token_hash("new").await.unwrap().is_some());
}

async fn open_session(store: &dyn Store, user_id: i32, hash: &str) -> i64 {
    let now = db_now();
    store
        .create_session(NewSession { user_id, token_hash: hash.into(), created_at: now, expires_at: now + TimeDelta::days(1) })
        .await
        .unwrap()
        .id
}

pub async fn user_update_revokes_sessions(store: &dyn Store) {
    let uma = store.create_user(new_user("uma")).await.unwrap();
    let vic = store.create_user(new_user("vic")).await.unwrap();
    let kept = open_session(store, uma.id, "uma-1").await;
    open_session(store, uma.id, "uma-2").await;
    open_session(store, vic.id, "vic-1").await;

    let patch =
        UserPatch { password_hash: Some(Some("h2".into())), revoke_sessions: Some(RevokeSessions::AllBut(kept)), ..Default::default() };
    store.update_user(uma.id, &patch).await.unwrap();
    assert!(store.session_by_token_hash("uma-1").await.unwrap().is_some(), "the named session stays");
    assert!(store.session_by_token_hash("uma-2").await.unwrap().is_none());
    assert!(store.session_by_token_hash("vic-1").await.unwrap().is_some(), "other users' sessions stay");

    let patch = UserPatch { active: Some(false), revoke_sessions: Some(RevokeSessions::All), ..Default::default() };
    store.update_user(uma.id, &patch).await.unwrap();
    assert!(store.session_by_token_hash("uma-1").await.unwrap().is_none());

    // A failed update revokes nothing.
    let taken = UserPatch { username: Some("vic".into()), revoke_sessions: Some(RevokeSessions::All), ..Default::default() };
    open_session(store, uma.id, "uma-3").await;
    assert!(matches!(store.update_user(uma.id, &taken).await, Err(StoreError::Conflict { .. })));
    assert!(store.session_by_token_hash("uma-3").await.unwrap().is_some());
}

pub async fn the_last_active_admin_cannot_be_removed(store: &dyn Store) {
    let boss = store.create_user(NewUser { admin: true, ..new_user("boss") }).await.unwrap();
    open_session(store, boss.id, "boss-1").await;
    for patch in [
        UserPatch { admin: Some(false), ..Default::default() },
        UserPatch { active: Some(false), revoke_sessions: Some(RevokeSessions::All), ..Default::default() },
    ] {
        let refused = store.update_user(boss.id, &patch).await;
        assert!(matches!(&refused, Err(StoreError::Precondition { reason }) if reason.contains("last active admin")), "{refused:?}");
    }
    let boss_now = store.user_by_id(boss.id).await.unwrap();
    assert!(boss_now.admin && boss_now.active, "nothing written");
    assert!(store.session_by_token_hash("boss-1").await.unwrap().is_some(), "nothing revoked");

    // Other changes to the last admin are fine; a second admin lets the first step down.
    store.update_user(boss.id, &UserPatch { display_name: Some("B".into()), admin: Some(true), ..Default::default() }).await.unwrap();
    let deputy = store.create_user(NewUser { admin: true, ..new_user("deputy") }).await.unwrap();
    store.update_user(boss.id, &UserPatch { admin: Some(false), ..Default::default() }).await.unwrap();
    let refused = store.update_user(deputy.id, &UserPatch { active: Some(false), ..Default::default() }).await;
    assert!(matches!(refused, Err(StoreError::Precondition { .. })), "{refused:?}");
    // An inactive admin does not count.
    store.update_user(boss.id, &UserPatch { admin: Some(true), active: Some(false), ..Default::default() }).await.unwrap();
    assert!(matches!(
        store.update_user(deputy.id, &UserPatch { admin: Some(false), ..Default::default() }).await,
        Err(StoreError::Precondition { .. })
    ));
}
