//! The connections a burst of queries opened are closed again while the store keeps answering a
//! query now and then, as an idle master does (`sql/pool_lifetime.rs`). Before, sqlx handed idle
//! connections out first in, first out, so periodic queries kept every one of them younger than
//! its idle timeout and the pool never shrank after a load.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures_util::future::join_all;
use resolute_store::{NewUser, PoolLifetime, SqlStore, Store, UserFilter};

use crate::harness::Reopenable;

/// Short enough for a test; the idle timeout is longer than the gap between two uses of a
/// connection below, so only the lifetime can close them.
const LIFETIME: PoolLifetime = PoolLifetime { connection: Duration::from_secs(2), idle: Duration::from_secs(5) };
/// One small query every this often: with eight connections handed out in turn, each is used
/// every ~0.2 s, far inside the idle timeout.
const PERIOD: Duration = Duration::from_millis(25);
/// Generous: the lifetime is 2 s.
const GIVE_UP: Duration = Duration::from_secs(60);

async fn the_pool_shrinks_after_a_burst(store: Arc<SqlStore>) {
    for i in 0..50 {
        let user = NewUser {
            username: format!("pool-{i:02}"),
            display_name: String::new(),
            admin: false,
            active: true,
            remote: false,
            password_hash: None,
            now: Utc::now(),
        };
        store.create_user(user).await.expect("creating a user");
    }
    let filter = UserFilter { name: Some("pool-".into()), ..Default::default() };
    // The burst: many reads at once, each on a connection of its own while the pool has room.
    let burst = join_all((0..32).map(|_| {
        let (store, filter) = (store.clone(), filter.clone());
        async move { store.list_users(&filter).await.expect("listing users").users.len() }
    }))
    .await;
    assert!(burst.iter().all(|n| *n == 50), "every read of the burst saw the 50 users: {burst:?}");
    let after_burst = store.pool_connections();
    assert!(after_burst > 1, "the burst opened several connections (the pool holds {after_burst})");

    // Now one small query at a time, as the master's periodic work.
    let started = Instant::now();
    let mut sizes = Vec::new();
    loop {
        store.list_users(&filter).await.expect("a periodic read");
        let size = store.pool_connections();
        sizes.push(size);
        if size <= 1 {
            break;
        }
        assert!(
            started.elapsed() < GIVE_UP,
            "the pool kept {size} connections (after the burst: {after_burst}) under one query at a time; sizes seen: {:?}",
            &sizes[sizes.len().saturating_sub(20)..]
        );
        tokio::time::sleep(PERIOD).await;
    }
}

#[tokio::test]
async fn sqlite() {
    let Reopenable::Sqlite(path) = Reopenable::sqlite() else { unreachable!("a SQLite path") };
    let store = SqlStore::open_sqlite_with(&path, LIFETIME).await.expect("open sqlite");
    the_pool_shrinks_after_a_burst(Arc::new(store)).await;
}

#[tokio::test]
async fn postgres() {
    let Some(Reopenable::Postgres(mut opts)) = Reopenable::postgres().await else { return };
    opts.max_connections = 8;
    opts.lifetime = LIFETIME;
    let store = SqlStore::open_postgres(&opts).await.expect("open postgres");
    the_pool_shrinks_after_a_burst(Arc::new(store)).await;
}
