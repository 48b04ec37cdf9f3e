//! Custom webhook events (`core.alert`): queued for the custom triggers of webhooks for every
//! workspace or for the experiment's, with their data; nothing for an unknown experiment.

use resolute_store::{
    DEFAULT_WORKSPACE_ID, NewWebhook, NewWebhookTrigger, NewWorkspace, Store, StoreError, TRIGGER_CUSTOM, TRIGGER_TASK_LOG,
};
use serde_json::json;

use crate::fixtures::{experiment, user_id};

fn webhook(name: &str, workspace_id: Option<i32>, trigger_type: &str) -> NewWebhook {
    let condition = if trigger_type == TRIGGER_CUSTOM { json!({}) } else { json!({"regex": "x"}) };
    NewWebhook {
        name: name.to_owned(),
        url: format!("http://127.0.0.1:9/{name}"),
        webhook_type: "WEBHOOK_TYPE_DEFAULT".to_owned(),
        mode: "WEBHOOK_MODE_WORKSPACE".to_owned(),
        workspace_id,
        triggers: vec![NewWebhookTrigger { trigger_type: trigger_type.to_owned(), condition, experiment_state: None }],
    }
}

pub async fn custom_events_reach_custom_triggers_of_the_experiments_workspace(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let other = store
        .create_workspace(NewWorkspace {
            name: "elsewhere".into(),
            user_id: owner,
            checkpoint_storage_config: None,
            agent_user_group: None,
            default_compute_pool: String::new(),
            default_aux_pool: String::new(),
        })
        .await
        .unwrap();
    let global = store.create_webhook(webhook("global", None, TRIGGER_CUSTOM)).await.unwrap();
    let same = store.create_webhook(webhook("same", Some(DEFAULT_WORKSPACE_ID), TRIGGER_CUSTOM)).await.unwrap();
    let elsewhere = store.create_webhook(webhook("elsewhere", Some(other.id), TRIGGER_CUSTOM)).await.unwrap();
    let logs_only = store.create_webhook(webhook("logs", None, TRIGGER_TASK_LOG)).await.unwrap();
    let e = experiment(store, "alerting").await;

    let data = json!({"title": "loss exploded", "description": "nan at step 7\u{0}", "level": "LOG_LEVEL_ERROR", "trial_id": 3});
    assert_eq!(store.enqueue_custom_events(e.id, &data).await.unwrap(), 2);
    for hook in [&global, &same] {
        let events = store.webhook_events(hook.id).await.unwrap();
        assert_eq!(events.len(), 1, "{}", hook.name);
        assert_eq!((events[0].experiment_id, events[0].trigger_id), (Some(e.id), hook.triggers[0].id));
        assert_eq!(events[0].custom_data.as_ref(), Some(&data));
        assert_eq!(events[0].experiment_state, None);
    }
    assert!(store.webhook_events(elsewhere.id).await.unwrap().is_empty());
    assert!(store.webhook_events(logs_only.id).await.unwrap().is_empty());
    // Every alert is its own event.
    assert_eq!(store.enqueue_custom_events(e.id, &data).await.unwrap(), 2);
    assert_eq!(store.webhook_events(global.id).await.unwrap().len(), 2);

    let err = store.enqueue_custom_events(4242, &data).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");
    assert_eq!(store.due_webhook_events(i64::MAX, 100).await.unwrap().len(), 4);
}
