//! Custom webhook triggers (`POST /api/v1/webhooks/custom`, the harness's `core.alert`): the
//! event is queued for the experiment's custom triggers with its data; bad triggers and alerts
//! are 400s naming the field, unknown experiments and trials 404s.

use serde_json::json;

use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};

pub async fn custom_alerts_queue_events_and_bad_input_names_the_field(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let hook = |condition: serde_json::Value| {
        json!({"name": "alerts", "url": "http://127.0.0.1:9/alerts", "webhookType": "WEBHOOK_TYPE_DEFAULT",
               "triggers": [{"triggerType": "TRIGGER_TYPE_CUSTOM", "condition": condition}]})
    };
    let r = m.post("/api/v1/webhooks", Some(&admin), hook(json!({"regex": "x"}))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("triggers[0].condition: a custom trigger takes no condition"), "{}", r.text);
    let r = m.post("/api/v1/webhooks", Some(&admin), hook(json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let webhook_id = r.body["webhook"]["id"].as_i64().unwrap();
    assert_eq!(r.body["webhook"]["triggers"][0]["triggerType"], "TRIGGER_TYPE_CUSTOM");
    let r = m.post("/api/v1/webhooks", Some(&admin), hook(json!(null))).await;
    assert_eq!(r.status, 200, "an absent condition is an empty one: {}", r.text);

    let yaml = "name: alerting\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";
    let exp = create(m, &admin, yaml, false).await;
    let data = json!({"title": "loss exploded", "description": "nan", "level": "LOG_LEVEL_ERROR"});
    let r = m.post("/api/v1/webhooks/custom", Some(&admin), json!({"experimentId": exp, "data": data})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let events = m.store.webhook_events(i32::try_from(webhook_id).unwrap()).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].experiment_id, Some(i32::try_from(exp).unwrap()));
    assert_eq!(events[0].custom_data.as_ref().unwrap()["title"], "loss exploded");
    assert_eq!(events[0].custom_data.as_ref().unwrap()["level"], "LOG_LEVEL_ERROR");

    let cases = [
        (json!({"data": data}), 400, "experimentId"),
        (json!({"experimentId": 0, "data": data}), 400, "experimentId"),
        (json!({"experimentId": exp, "data": {"title": "t", "level": "LOUD"}}), 400, "data.level"),
        (json!({"experimentId": 424242, "data": data}), 404, "424242"),
        (json!({"experimentId": exp, "trialId": 424242, "data": data}), 404, "424242"),
    ];
    for (body, status, names) in cases {
        let r = m.post("/api/v1/webhooks/custom", Some(&admin), body.clone()).await;
        assert_error(&r, status, if status == 404 { "NotFound" } else { "InvalidArgument" });
        assert!(r.text.contains(names), "{body}: {}", r.text);
    }
    let other = create(m, &admin, yaml, false).await;
    let trials = m.get(&format!("/api/v1/experiments/{other}/trials"), Some(&admin)).await;
    let other_trial = trials.body["trials"][0]["id"].as_i64().unwrap();
    let r = m.post("/api/v1/webhooks/custom", Some(&admin), json!({"experimentId": exp, "trialId": other_trial, "data": data})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains(&format!("trialId: trial {other_trial} belongs to experiment {other}")), "{}", r.text);
    // Nothing more was queued by the refused alerts.
    assert_eq!(m.store.webhook_events(i32::try_from(webhook_id).unwrap()).await.unwrap().len(), 1);
}
