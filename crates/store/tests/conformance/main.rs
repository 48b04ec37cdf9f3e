//! One conformance suite, run against every backend: each case below becomes a `sqlite` and a
//! `postgres` test. PostgreSQL cases need `RESOLUTE_TEST_POSTGRES_URL` (an admin connection URL;
//! every test creates its own database). Without it they are skipped, unless
//! `RESOLUTE_REQUIRE_POSTGRES=1`, which CI sets so a missing server fails loudly.

mod harness;
mod sessions;
mod users;

use resolute_store::Store;

harness::conformance!(users::create_and_fetch);
harness::conformance!(users::duplicate_username_conflicts);
harness::conformance!(users::create_if_absent_is_idempotent);
harness::conformance!(users::update_changes_only_given_fields);
harness::conformance!(users::password_can_be_set_and_cleared);
harness::conformance!(users::rename_to_taken_name_conflicts);
harness::conformance!(users::unknown_user_is_not_found);
harness::conformance!(users::list_filters_sorts_and_pages);
harness::conformance!(users::record_login_sets_last_auth);
harness::conformance!(sessions::create_lookup_delete);
harness::conformance!(sessions::expired_sessions_are_purged);
harness::conformance!(cluster_id_is_stable);

async fn cluster_id_is_stable(store: &dyn Store) {
    let first = store.cluster_id().await.unwrap();
    assert_eq!(first.len(), 36, "a UUID: {first}");
    assert_eq!(store.cluster_id().await.unwrap(), first);
}

#[tokio::test]
async fn sqlite_file_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resolute.db");
    let store = resolute_store::SqlStore::open_sqlite(&path).await.unwrap();
    let id = store.cluster_id().await.unwrap();
    store.create_user(users::new_user("persisted")).await.unwrap();
    store.close().await;

    // Re-opening re-runs migrations (a no-op) and sees the same data.
    let store = resolute_store::SqlStore::open_sqlite(&path).await.unwrap();
    assert_eq!(store.cluster_id().await.unwrap(), id);
    assert_eq!(store.user_by_name("persisted").await.unwrap().username, "persisted");
}
