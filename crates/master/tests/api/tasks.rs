//! `GET /api/v1/tasks`, `/api/v1/tasks/{id}`, `/api/v1/tasks/count`, and trial workloads.

use resolute_store::{AllocationPatch, NewAllocation, db_now};
use serde_json::json;

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};
use crate::seed;

async fn allocation(m: &TestMaster, task_id: &str, n: u32, slots: i32) -> String {
    let allocation_id = format!("{task_id}.{n}");
    m.store
        .create_allocation(NewAllocation {
            allocation_id: allocation_id.clone(),
            task_id: task_id.to_owned(),
            state: "STATE_RUNNING".into(),
            slots,
            resource_pool: "default".into(),
            agent_id: Some("agent-1".into()),
            start_time: db_now(),
        })
        .await
        .unwrap();
    allocation_id
}

pub async fn tasks_list_get_and_count(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = format!("{}resources: {{priority: 7}}\n", minimal_yaml("tasks"));
    let exp = create(m, &admin, &yaml, false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::task(m, &trial.task_id, "TASK_TYPE_TRIAL").await;
    let first = allocation(m, &trial.task_id, 1, 2).await;
    let patch = AllocationPatch {
        state: Some("STATE_TERMINATED".into()),
        end_time: Some(db_now()),
        exit_reason: Some("preempted".into()),
        exit_code: Some(0),
        ..AllocationPatch::default()
    };
    m.store.update_allocation(&first, &patch).await.unwrap();
    let second = allocation(m, &trial.task_id, 2, 2).await;
    seed::task(m, "cmd-1", "TASK_TYPE_COMMAND").await;
    let command = allocation(m, "cmd-1", 1, 0).await;
    seed::task(m, "done-1", "TASK_TYPE_COMMAND").await;
    allocation(m, "done-1", 1, 0).await;
    m.store.end_task("done-1", db_now()).await.unwrap();

    let r = m.get("/api/v1/tasks", Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let summaries = r.body["allocationIdToSummary"].as_object().unwrap();
    let mut keys: Vec<_> = summaries.keys().cloned().collect();
    keys.sort();
    let mut expected = vec![second.clone(), command.clone()];
    expected.sort();
    assert_eq!(keys, expected, "only open allocations of open tasks");
    let s = &summaries[&second];
    assert_eq!(s["taskId"], trial.task_id.as_str());
    assert_eq!(s["allocationId"], second.as_str());
    assert_eq!(s["name"], format!("Trial {} (Experiment {exp})", trial.id));
    assert_eq!((&s["slotsNeeded"], &s["resourcePool"], &s["priority"]), (&json!(2), &json!("default"), &json!(7)));
    assert_eq!((&s["schedulerType"], &s["resources"]), (&json!("priority"), &json!([])));
    assert!(s["registeredTime"].as_str().unwrap().ends_with('Z'));
    assert_eq!(summaries[&command]["name"], "Command (cmd-1)");
    // The legacy route answers the same summaries as a bare map.
    let legacy = m.get("/tasks", Some(&admin)).await;
    assert_eq!(legacy.status, 200, "{}", legacy.text);
    assert_eq!(&legacy.body, &r.body["allocationIdToSummary"]);

    let t = m.get(&format!("/api/v1/tasks/{}", trial.task_id), Some(&admin)).await;
    assert_eq!(t.status, 200, "{}", t.text);
    let task = &t.body["task"];
    assert_eq!((&task["taskId"], &task["taskType"]), (&json!(trial.task_id), &json!("TASK_TYPE_TRIAL")));
    assert!(task["startTime"].is_string() && task.get("endTime").is_none(), "{task}");
    let allocations = task["allocations"].as_array().unwrap();
    assert_eq!(allocations.len(), 2);
    let a = &allocations[0];
    assert_eq!((&a["allocationId"], &a["state"], &a["slots"]), (&json!(first), &json!("STATE_TERMINATED"), &json!(2)));
    assert_eq!((&a["exitReason"], &a["statusCode"], &a["isReady"]), (&json!("preempted"), &json!(0), &json!(false)));
    assert!(a["endTime"].is_string());
    assert!(allocations[1].get("endTime").is_none());
    let done = m.get("/api/v1/tasks/done-1", Some(&admin)).await;
    assert!(done.body["task"]["endTime"].is_string(), "{}", done.text);
    assert_error(&m.get("/api/v1/tasks/nope", Some(&admin)).await, 404, "NotFound");

    let count = m.get("/api/v1/tasks/count", Some(&admin)).await;
    assert_eq!(count.body, json!({"commands": 1, "notebooks": 0, "shells": 0, "tensorboards": 0}));
    assert_error(&m.get("/api/v1/tasks", None).await, 401, "Unauthenticated");
}

pub async fn trial_workloads_filter_sort_and_page(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &minimal_yaml("workloads"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::metrics(m, &trial, 100, 0.5).await;
    seed::metrics(m, &trial, 200, 0.9).await;
    seed::checkpoint(m, &trial, "w-100", 100, Some(0.5), "STATE_COMPLETED").await;
    seed::checkpoint(m, &trial, "w-200", 200, Some(0.9), "STATE_DELETED").await;

    let kinds = |r: &crate::harness::Reply| -> Vec<String> {
        r.body["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| {
                let (kind, body) = w.as_object().unwrap().iter().next().unwrap();
                format!("{kind}@{}", body["totalBatches"])
            })
            .collect()
    };
    let base = format!("/api/v1/trials/{}/workloads", trial.id);
    let all = m.get(&base, Some(&admin)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(kinds(&all), ["training@100", "validation@100", "checkpoint@100", "training@200", "validation@200", "checkpoint@200"]);
    assert_eq!(all.body["pagination"], json!({"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 6, "total": 6}));
    let w = &all.body["workloads"];
    assert_eq!(w[0]["training"]["metrics"]["avgMetrics"], json!({"loss": 2.0}));
    assert_eq!(w[0]["training"]["metrics"]["batchMetrics"], json!(null), "batch metrics only on request");
    assert!(w[0]["training"]["endTime"].is_string());
    assert_eq!(w[2]["checkpoint"]["uuid"], "w-100");
    assert_eq!(w[2]["checkpoint"]["state"], "STATE_COMPLETED");
    assert_eq!(w[2]["checkpoint"]["resources"]["model/w.bin"], "5");

    let cases: [(&str, &[&str]); 6] = [
        ("filter=FILTER_OPTION_VALIDATION", &["validation@100", "validation@200"]),
        ("filter=FILTER_OPTION_CHECKPOINT&removeDeletedCheckpoints=true", &["checkpoint@100"]),
        (
            "filter=FILTER_OPTION_CHECKPOINT_OR_VALIDATION&orderBy=ORDER_BY_DESC",
            &["validation@200", "checkpoint@200", "validation@100", "checkpoint@100"],
        ),
        ("filter=FILTER_OPTION_VALIDATION&sortKey=accuracy&orderBy=ORDER_BY_DESC", &["validation@200", "validation@100"]),
        ("offset=4&limit=1", &["validation@200"]),
        ("offset=-1", &["checkpoint@200"]),
    ];
    for (query, expected) in cases {
        let r = m.get(&format!("{base}?{query}"), Some(&admin)).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(kinds(&r), expected, "{query}");
    }
    // The CLI's read_paginated loop.
    let (mut offset, mut seen) = (0, 0);
    loop {
        let r = m.get(&format!("{base}?offset={offset}&limit=4&includeBatchMetrics=true"), Some(&admin)).await;
        seen += r.body["workloads"].as_array().unwrap().len();
        if r.body["pagination"]["endIndex"].as_i64() >= r.body["pagination"]["total"].as_i64() {
            break;
        }
        offset = r.body["pagination"]["endIndex"].as_i64().unwrap();
        assert_eq!(r.body["workloads"][0]["training"]["metrics"]["batchMetrics"], json!([{"loss": 1.0}]));
    }
    assert_eq!(seen, 6);
    assert_error(&m.get("/api/v1/trials/999/workloads", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get(&format!("{base}?filter=FILTER_OPTION_SHOES"), Some(&admin)).await, 400, "InvalidArgument");
}
