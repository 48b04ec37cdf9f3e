use chrono::TimeDelta;
use resolute_store::{NewSession, Store, db_now};

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
