//! Job queue positions: saved per pool and job, replaced by the next save, removed when
//! forgotten, read back by pool in queue order.

use resolute_store::{JobQueuePositionRecord, Store, StoreError};

fn place(pool: &str, job: &str, registered_at: i64, seq: i64) -> JobQueuePositionRecord {
    JobQueuePositionRecord { resource_pool: pool.to_owned(), job_id: job.to_owned(), registered_at, seq }
}

pub async fn job_queue_positions_are_replaced_removed_and_read_in_queue_order(store: &dyn Store) {
    assert_eq!(store.job_queue_positions().await.unwrap(), vec![]);
    store
        .save_job_queue_positions(&[place("default", "a", 1, 0), place("default", "b", 2, 1), place("gpu", "a", 3, 0)], &[])
        .await
        .unwrap();
    // `b` moved ahead of `a`: both change in one save; `gpu`'s `a` is forgotten.
    store
        .save_job_queue_positions(&[place("default", "b", 1, 0), place("default", "a", 2, 1)], &[("gpu".to_owned(), "a".to_owned())])
        .await
        .unwrap();
    store.save_job_queue_positions(&[], &[("default".to_owned(), "never-stored".to_owned())]).await.unwrap();
    store.save_job_queue_positions(&[place("cpu", "c", 9, 9)], &[]).await.unwrap();
    assert_eq!(
        store.job_queue_positions().await.unwrap(),
        vec![place("cpu", "c", 9, 9), place("default", "b", 1, 0), place("default", "a", 2, 1)],
        "one row per pool and job, the latest save wins, forgotten ones are gone, by pool then place"
    );
    let err = store.save_job_queue_positions(&[place("default", "nul\0job", 1, 1)], &[]).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
    assert_eq!(store.job_queue_positions().await.unwrap().len(), 3, "a refused save writes nothing");
}
