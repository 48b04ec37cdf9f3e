//! Webhooks: create with triggers, list, look up, re-point, delete; the durable event queue
//! (written with the experiment's state change, due/next-due, attempts, once-per-task log events).

use resolute_store::{
    DEFAULT_WORKSPACE_ID, DeliveryOutcome, NewLogEvent, NewWebhook, NewWebhookTrigger, Store, StoreError, TRIGGER_EXPERIMENT_STATE_CHANGE,
    TRIGGER_TASK_LOG, WebhookEventStatus,
};
use serde_json::json;

use crate::fixtures::{experiment, trial};

fn state_trigger(state: &str) -> NewWebhookTrigger {
    NewWebhookTrigger {
        trigger_type: TRIGGER_EXPERIMENT_STATE_CHANGE.to_owned(),
        condition: json!({"state": state.trim_start_matches("STATE_")}),
        experiment_state: Some(state.to_owned()),
    }
}

fn log_trigger(regex: &str) -> NewWebhookTrigger {
    NewWebhookTrigger { trigger_type: TRIGGER_TASK_LOG.to_owned(), condition: json!({"regex": regex}), experiment_state: None }
}

fn new_webhook(name: &str, workspace_id: Option<i32>, triggers: Vec<NewWebhookTrigger>) -> NewWebhook {
    NewWebhook {
        name: name.to_owned(),
        url: format!("http://127.0.0.1:9/{name}"),
        webhook_type: "WEBHOOK_TYPE_DEFAULT".to_owned(),
        mode: "WEBHOOK_MODE_WORKSPACE".to_owned(),
        workspace_id,
        triggers,
    }
}

pub async fn create_list_patch_delete(store: &dyn Store) {
    let a = store.create_webhook(new_webhook("a", None, vec![state_trigger("STATE_COMPLETED"), log_trigger("OOM")])).await.unwrap();
    assert_eq!((a.name.as_str(), a.workspace_id, a.triggers.len()), ("a", None, 2));
    assert_eq!(a.triggers[0].condition, json!({"state": "COMPLETED"}));
    assert_eq!(a.triggers[1].condition, json!({"regex": "OOM"}));
    assert!(a.triggers.iter().all(|t| t.webhook_id == a.id));
    let b = store.create_webhook(new_webhook("b", Some(DEFAULT_WORKSPACE_ID), vec![])).await.unwrap();
    assert_eq!(store.webhook_by_id(a.id).await.unwrap(), a);
    let all = store.list_webhooks().await.unwrap();
    assert_eq!(all, vec![a.clone(), b.clone()]);
    assert_eq!(store.task_log_triggers().await.unwrap(), vec![a.triggers[1].clone()]);

    store.set_webhook_url(b.id, "https://example.com/new").await.unwrap();
    assert_eq!(store.webhook_by_id(b.id).await.unwrap().url, "https://example.com/new");
    assert!(matches!(store.set_webhook_url(4242, "http://x").await, Err(StoreError::NotFound { entity: "webhook", .. })));

    // A missing workspace is refused whole: no webhook, no trigger.
    let err = store.create_webhook(new_webhook("c", Some(4242), vec![state_trigger("STATE_ERROR")])).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "workspace", .. }), "{err:?}");
    assert_eq!(store.list_webhooks().await.unwrap().len(), 2);

    store.delete_webhook(a.id).await.unwrap();
    assert!(matches!(store.webhook_by_id(a.id).await, Err(StoreError::NotFound { entity: "webhook", .. })));
    assert!(store.task_log_triggers().await.unwrap().is_empty(), "triggers go with their webhook");
    assert!(matches!(store.delete_webhook(a.id).await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.list_webhooks().await.unwrap(), vec![store.webhook_by_id(b.id).await.unwrap()]);
}

pub async fn state_change_queues_events_in_its_transaction(store: &dyn Store) {
    let signal = store.webhook_events_signal();
    let notified = signal.notified();
    let on_done = store.create_webhook(new_webhook("done", None, vec![state_trigger("STATE_COMPLETED")])).await.unwrap();
    let on_error = store.create_webhook(new_webhook("err", Some(DEFAULT_WORKSPACE_ID), vec![state_trigger("STATE_ERROR")])).await.unwrap();
    let e = experiment(store, "hooked").await;

    // Moves that enter no watched state queue nothing; a refused compare-and-set neither.
    store.update_experiment_state(e.id, "STATE_PAUSED", None).await.unwrap();
    assert!(!store.update_experiment_state_if(e.id, &["STATE_ACTIVE"], "STATE_COMPLETED", None).await.unwrap());
    assert!(store.due_webhook_events(i64::MAX, 100).await.unwrap().is_empty());
    assert_eq!(store.next_webhook_event_due_ms().await.unwrap(), None);

    let before = chrono::Utc::now().timestamp_millis();
    assert!(store.update_experiment_state_if(e.id, &["STATE_PAUSED"], "STATE_COMPLETED", Some(resolute_store::db_now())).await.unwrap());
    // The writer signals the worker.
    tokio::time::timeout(std::time::Duration::from_secs(5), notified).await.expect("the store signals queued events");
    let due = store.due_webhook_events(i64::MAX, 100).await.unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    let ev = &due[0];
    assert_eq!((ev.webhook_id, ev.trigger_id), (on_done.id, on_done.triggers[0].id));
    assert_eq!((ev.experiment_id, ev.experiment_state.as_deref()), (Some(e.id), Some("STATE_COMPLETED")));
    assert_eq!((ev.status, ev.attempts), (WebhookEventStatus::Pending, 0));
    assert!(ev.created_ms >= before && ev.next_attempt_ms == ev.created_ms);
    assert_eq!(ev.event_uuid.len(), 36);
    // Writing the same state again is no change.
    store.update_experiment_state(e.id, "STATE_COMPLETED", None).await.unwrap();
    assert_eq!(store.due_webhook_events(i64::MAX, 100).await.unwrap().len(), 1);

    // The unconditional write queues too, for the workspace webhook.
    let e2 = experiment(store, "broken").await;
    store.update_experiment_state(e2.id, "STATE_ERROR", None).await.unwrap();
    let errors = store.webhook_events(on_error.id).await.unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].experiment_id, Some(e2.id));

    // Attempts: a retry moves the due time, delivery ends it.
    store
        .finish_webhook_attempt(ev.id, &DeliveryOutcome::Retry { at_ms: ev.created_ms + 60_000, error: "refused".into() }, 1)
        .await
        .unwrap();
    assert!(store.due_webhook_events(ev.created_ms + 59_999, 100).await.unwrap().iter().all(|d| d.id != ev.id));
    let due_later = store.due_webhook_events(ev.created_ms + 60_000, 100).await.unwrap();
    let again = due_later.iter().find(|d| d.id == ev.id).expect("due again after the backoff");
    assert_eq!((again.attempts, again.last_error.as_deref()), (1, Some("refused")));
    store.finish_webhook_attempt(ev.id, &DeliveryOutcome::Delivered, 7).await.unwrap();
    let done = store.webhook_events(on_done.id).await.unwrap();
    assert_eq!((done[0].status, done[0].attempts, done[0].finished_ms), (WebhookEventStatus::Delivered, 2, Some(7)));
    store.finish_webhook_attempt(errors[0].id, &DeliveryOutcome::Failed { error: "HTTP 404".into() }, 8).await.unwrap();
    assert_eq!(store.webhook_events(on_error.id).await.unwrap()[0].status, WebhookEventStatus::Failed);
    assert!(store.due_webhook_events(i64::MAX, 100).await.unwrap().is_empty());
    assert_eq!(store.next_webhook_event_due_ms().await.unwrap(), None);
    assert!(matches!(store.finish_webhook_attempt(999_999, &DeliveryOutcome::Delivered, 1).await, Err(StoreError::NotFound { .. })));

    // Deleting the webhook drops its queue.
    store.delete_webhook(on_done.id).await.unwrap();
    assert!(store.webhook_events(on_done.id).await.unwrap().is_empty());
}

pub async fn log_events_fire_once_per_task(store: &dyn Store) {
    let hook = store.create_webhook(new_webhook("logs", None, vec![log_trigger("CUDA out of memory")])).await.unwrap();
    let elsewhere = store.create_webhook(new_webhook("other-ws", Some(DEFAULT_WORKSPACE_ID), vec![log_trigger("x")])).await.unwrap();
    let e = experiment(store, "logging").await;
    let t = trial(store, e.id, 1).await;
    let event = |webhook_id, trigger_id, task: &str, line: &str| NewLogEvent {
        event_uuid: uuid::Uuid::new_v4().to_string(),
        webhook_id,
        trigger_id,
        task_id: task.to_owned(),
        node_name: "agent-1".to_owned(),
        log_line: line.to_owned(),
    };
    let trig = hook.triggers[0].id;
    let first = [event(hook.id, trig, &t.task_id, "RuntimeError: CUDA out of memory"), event(hook.id, trig, &t.task_id, "again")];
    assert_eq!(store.enqueue_log_events(&first).await.unwrap(), 1, "once per trigger and task");
    assert_eq!(store.enqueue_log_events(&[event(hook.id, trig, &t.task_id, "later")]).await.unwrap(), 0);
    assert_eq!(store.enqueue_log_events(&[event(hook.id, trig, "other-task", "CUDA out of memory")]).await.unwrap(), 1);
    // A workspace webhook fires for its workspace's trials only (a task of no trial matches none).
    assert_eq!(store.enqueue_log_events(&[event(elsewhere.id, elsewhere.triggers[0].id, &t.task_id, "x")]).await.unwrap(), 1);
    assert_eq!(store.enqueue_log_events(&[event(elsewhere.id, elsewhere.triggers[0].id, "cmd-1", "x")]).await.unwrap(), 0);
    let events = store.webhook_events(hook.id).await.unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[0].task_id.as_deref(), events[0].log_line.as_deref()),
        (Some(t.task_id.as_str()), Some("RuntimeError: CUDA out of memory"))
    );
    assert_eq!((events[0].experiment_id, events[0].node_name.as_deref()), (None, Some("agent-1")));
    // A deleted webhook's late log events are dropped, not an error.
    store.delete_webhook(hook.id).await.unwrap();
    assert_eq!(store.enqueue_log_events(&[event(hook.id, trig, "t-9", "CUDA out of memory")]).await.unwrap(), 0);
}

pub async fn signing_key_is_kept(store: &dyn Store) {
    assert_eq!(store.webhook_signing_key("first").await.unwrap(), "first");
    assert_eq!(store.webhook_signing_key("second").await.unwrap(), "first", "the stored key wins");
}
