//! Log streams: shapes, every filter, head and tail, and follow ending with the task.

use std::time::Duration;

use chrono::TimeDelta;
use resolute_store::{NewLogLine, db_now};
use serde_json::json;

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};
use crate::seed::{self, stream_results};

fn line(task_id: &str, n: i64, rank: i32, level: &str, stdtype: &str) -> NewLogLine {
    NewLogLine {
        task_id: task_id.to_owned(),
        allocation_id: Some(format!("{task_id}.{}", 1 + n % 2)),
        agent_id: Some(format!("agent-{rank}")),
        container_id: Some(format!("container-{rank}")),
        rank_id: Some(rank),
        timestamp: db_now() - TimeDelta::seconds(100 - n),
        level: Some(level.to_owned()),
        log: format!("line {n}\n"),
        source: Some(if n == 0 { "master" } else { "task" }.to_owned()),
        stdtype: Some(stdtype.to_owned()),
    }
}

fn logs(results: &[serde_json::Value]) -> Vec<String> {
    results.iter().map(|r| r["log"].as_str().unwrap().trim_end().to_owned()).collect()
}

pub async fn trial_and_task_logs_stream_with_filters(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &minimal_yaml("logs"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::task(m, &trial.task_id, "TASK_TYPE_TRIAL").await;
    let lines: Vec<_> = (0..6)
        .map(|n| {
            let level = if n == 3 { "LOG_LEVEL_ERROR" } else { "LOG_LEVEL_INFO" };
            line(&trial.task_id, n, (n % 2) as i32, level, if n == 4 { "stderr" } else { "stdout" })
        })
        .collect();
    m.store.insert_logs(&lines).await.unwrap();

    let base = format!("/api/v1/trials/{}/logs", trial.id);
    let all = m.get(&base, Some(&admin)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    let results = stream_results(&all.text);
    assert_eq!(logs(&results), ["line 0", "line 1", "line 2", "line 3", "line 4", "line 5"]);
    let first = &results[0];
    assert!(first["id"].is_string(), "id is an int64 string: {first}");
    assert_eq!(first["trialId"], trial.id);
    assert_eq!(first["level"], "LOG_LEVEL_INFO");
    assert_eq!((&first["agentId"], &first["containerId"], &first["rankId"]), (&json!("agent-0"), &json!("container-0"), &json!(0)));
    assert_eq!((&first["source"], &first["stdtype"]), (&json!("master"), &json!("stdout")));
    let message = first["message"].as_str().unwrap();
    assert!(message.starts_with('[') && message.ends_with(" containe [rank=0] || INFO: line 0\n"), "{message}");

    let cases: [(&str, &[&str]); 11] = [
        ("levels=LOG_LEVEL_ERROR&levels=LOG_LEVEL_CRITICAL", &["line 3"]),
        ("rankIds=1", &["line 1", "line 3", "line 5"]),
        ("agentIds=agent-0&stdtypes=stderr", &["line 4"]),
        ("containerIds=container-1&limit=2", &["line 1", "line 3"]),
        ("sources=master", &["line 0"]),
        ("searchText=line%205", &["line 5"]),
        ("limit=2", &["line 0", "line 1"]),
        ("orderBy=ORDER_BY_DESC&limit=2", &["line 5", "line 4"]),
        ("orderBy=ORDER_BY_DESC", &["line 5", "line 4", "line 3", "line 2", "line 1", "line 0"]),
        ("timestampAfter=2000-01-01T00:00:00Z&timestampBefore=2000-01-02T00:00:00Z", &[]),
        ("levels=LOG_LEVEL_INFO&rankIds=0&orderBy=ORDER_BY_ASC&enableRegex=false", &["line 0", "line 2", "line 4"]),
    ];
    for (query, expected) in cases {
        let r = m.get(&format!("{base}?{query}"), Some(&admin)).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(logs(&stream_results(&r.text)), expected, "{query}");
    }
    let after = lines[3].timestamp.to_rfc3339();
    let r = m.get(&format!("{base}?timestampAfter={}", after.replace('+', "%2B")), Some(&admin)).await;
    assert_eq!(logs(&stream_results(&r.text)), ["line 4", "line 5"], "{}", r.text);

    let task = m.get(&format!("/api/v1/tasks/{}/logs?allocationIds={}.2", trial.task_id, trial.task_id), Some(&admin)).await;
    assert_eq!(task.status, 200, "{}", task.text);
    let results = stream_results(&task.text);
    assert_eq!(logs(&results), ["line 1", "line 3", "line 5"]);
    assert_eq!(results[0]["taskId"], trial.task_id.as_str());
    assert_eq!(results[0]["allocationId"], format!("{}.2", trial.task_id));

    let fields = m.get(&format!("/api/v1/tasks/{}/logs/fields", trial.task_id), Some(&admin)).await;
    let fields = &stream_results(&fields.text)[0];
    assert_eq!(fields["rankIds"], json!([0, 1]));
    assert_eq!(fields["stdtypes"], json!(["stderr", "stdout"]));
    assert_eq!(fields["allocationIds"].as_array().unwrap().len(), 2);
    let trial_fields = m.get(&format!("/api/v1/trials/{}/logs/fields", trial.id), Some(&admin)).await;
    assert_eq!(stream_results(&trial_fields.text)[0]["agentIds"], json!(["agent-0", "agent-1"]));

    assert_error(&m.get("/api/v1/trials/999/logs", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/tasks/nope/logs", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get(&format!("{base}?searchText=x&enableRegex=true"), Some(&admin)).await, 501, "Unimplemented");
    assert_error(&m.get(&format!("{base}?follow=true&orderBy=ORDER_BY_DESC"), Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get(&format!("{base}?levels=LOUD"), Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get(&base, None).await, 401, "Unauthenticated");
}

pub async fn follow_streams_new_lines_until_the_task_ends(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let exp = create(m, &admin, &minimal_yaml("follow"), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::task(m, &trial.task_id, "TASK_TYPE_TRIAL").await;
    m.store.insert_logs(&[line(&trial.task_id, 0, 0, "LOG_LEVEL_INFO", "stdout")]).await.unwrap();

    let mut resp = m.http.get(format!("{}/api/v1/trials/{}/logs?follow=true", m.base, trial.id)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let first = tokio::time::timeout(Duration::from_secs(10), resp.chunk()).await.unwrap().unwrap().unwrap();
    assert_eq!(logs(&stream_results(std::str::from_utf8(&first).unwrap())), ["line 0"]);

    // Lines written while following arrive; the stream ends once the task has ended.
    m.store.insert_logs(&[line(&trial.task_id, 1, 0, "LOG_LEVEL_INFO", "stdout")]).await.unwrap();
    let mut text = String::new();
    while !text.contains("line 1") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk()).await.expect("line 1 arrives").unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    m.store.insert_logs(&[line(&trial.task_id, 2, 1, "LOG_LEVEL_INFO", "stdout")]).await.unwrap();
    m.store.end_task(&trial.task_id, db_now()).await.unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(10), resp.text()).await.expect("the stream ends with the task").unwrap();
    text.push_str(&rest);
    assert_eq!(logs(&stream_results(&text)), ["line 1", "line 2"]);

    // A follower that leaves early does not hold the stream open (the next request still works).
    let other = seed::trial(m, exp, 2).await;
    let early = m.http.get(format!("{}/api/v1/trials/{}/logs?follow=true", m.base, other.id)).bearer_auth(&admin).send().await.unwrap();
    drop(early);
    let r = m.get(&format!("/api/v1/trials/{}/logs?follow=true", trial.id), Some(&admin)).await;
    assert_eq!(logs(&stream_results(&r.text)), ["line 0", "line 1", "line 2"], "an ended task's follow returns at once");
}
