//! The store's thread hook reaches sqlx's SQLite connection threads (`sql/sqlite_worker_hook.rs`):
//! the master collects each thread's freed memory there, and before, those threads never did,
//! so the SQLite master's heap grew under a long load (bench/README.md, Soak). A test binary of
//! its own: the hook is process-wide and set once.

use std::collections::BTreeSet;
use std::sync::Mutex;

use chrono::Utc;
use resolute_store::{NewUser, SqlStore, Store, UserFilter, set_thread_idle_hook};

static THREADS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn record_thread() {
    let name = std::thread::current().name().unwrap_or("unnamed").to_owned();
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).insert(name);
}

#[tokio::test]
async fn a_long_read_runs_the_thread_hook_on_the_connection_thread() {
    assert!(set_thread_idle_hook(record_thread), "no other hook in this test binary");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqlStore::open_sqlite(&dir.path().join("det.db")).await.expect("opening the database");
    for i in 0..300 {
        let user = NewUser {
            username: format!("user-{i:03}"),
            display_name: format!("User {i}"),
            admin: false,
            active: true,
            remote: false,
            password_hash: None,
            now: Utc::now(),
        };
        store.create_user(user).await.expect("creating a user");
    }
    THREADS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    // A substring filter reads every row: thousands of SQLite instructions on one connection.
    let page = store.list_users(&UserFilter { name: Some("user-2".into()), ..Default::default() }).await.expect("listing users");
    assert_eq!(page.users.len(), 100, "user-200 … user-299 match");
    let threads = THREADS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        threads.iter().any(|t| t.starts_with("sqlx-sqlite-worker")),
        "the read ran on a pooled connection's thread, which should have run the hook; it ran on: {threads:?}"
    );
}
