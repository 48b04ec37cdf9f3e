//! Cluster-wide reports: the allocation usage CSV (`/resources/allocation/allocations-csv`) and
//! the Prometheus endpoints (`observability.enable_prometheus`; 404 while off).

use serde_json::json;

use crate::cluster_loop::FakeAgent;
use crate::harness::{TestMaster, assert_error};

const CONFIG: &str = "name: usage\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 10}}\n";

fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub async fn allocations_csv_lists_the_window_s_allocations(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(m, "agent-1", 1).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = r.body["experiment"]["id"].as_i64().unwrap();
    let start = agent.next_start().await;
    agent.running(&start).await;

    let now = chrono::Utc::now();
    let window =
        format!("timestamp_after={}&timestamp_before={}", iso(now - chrono::TimeDelta::hours(1)), iso(now + chrono::TimeDelta::hours(1)));
    let r = m.get(&format!("/resources/allocation/allocations-csv?{window}"), Some(&token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut lines = r.text.lines();
    assert_eq!(
        lines.next(),
        Some("allocation_id,task_type,username,workspace_name,experiment_id,slots,start_time,end_time,slot_hours,resource_pool")
    );
    let row: Vec<&str> = lines.find(|l| l.starts_with(&start.allocation_id)).unwrap_or_else(|| panic!("{}", r.text)).split(',').collect();
    assert_eq!(&row[1..6], ["TRIAL", "determined", "Uncategorized", &exp.to_string(), "1"], "{}", r.text);
    assert_eq!((row[7], row[9]), ("", "default"), "still running: no end");

    // The same allocation as JSON (`det resources raw --json`; grpc-gateway's camelCase names too).
    let r = m.get(&format!("/api/v1/resources/allocation/raw?{window}"), Some(&token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let entries = r.body["resourceEntries"].as_array().unwrap();
    let entry = entries.iter().find(|e| e["experimentId"] == exp).unwrap_or_else(|| panic!("{}", r.text));
    assert_eq!((entry["kind"].as_str(), entry["username"].as_str(), entry["slots"].as_i64()), (Some("TRIAL"), Some("determined"), Some(1)));
    assert!(entry["seconds"].as_f64().unwrap() >= 0.0 && entry.get("endTime").is_none(), "{entry}");
    let camel = window.replace("timestamp_after", "timestampAfter").replace("timestamp_before", "timestampBefore");
    let again = m.get(&format!("/api/v1/resources/allocation/raw?{camel}"), Some(&token)).await.body;
    assert_eq!(again["resourceEntries"][0]["startTime"], r.body["resourceEntries"][0]["startTime"], "{again}");
    assert_error(&m.get("/api/v1/resources/allocation/raw?timestampAfter=x", Some(&token)).await, 400, "InvalidArgument");

    // A window that ended before the run started lists nothing but the header.
    let before =
        format!("timestamp_after={}&timestamp_before={}", iso(now - chrono::TimeDelta::days(2)), iso(now - chrono::TimeDelta::days(1)));
    let r = m.get(&format!("/resources/allocation/allocations-csv?{before}"), Some(&token)).await;
    assert_eq!(r.text.lines().count(), 1, "{}", r.text);

    let r = m.get("/resources/allocation/allocations-csv?timestamp_after=2030-01-01T00:00:00Z", Some(&token)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("timestamp_before"), "{}", r.text);
    let r =
        m.get("/resources/allocation/allocations-csv?timestamp_after=yesterday&timestamp_before=2030-01-01T00:00:00Z", Some(&token)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("timestamp_after"), "{}", r.text);
    assert_error(&m.get(&format!("/resources/allocation/allocations-csv?{window}"), None).await, 401, "Unauthenticated");
}

pub async fn prometheus_is_off_by_default_and_counts_when_on(m: TestMaster) {
    assert_error(&m.get("/debug/prom/metrics", None).await, 404, "NotFound");
    let r = m.get("/prom/det-state-metrics", None).await;
    assert_error(&r, 404, "NotFound");
    assert!(r.text.contains("observability.enable_prometheus"), "{}", r.text);

    let m = m.restart_with(|c| c.observability.enable_prometheus = true).await;
    let token = m.login("determined", "").await;
    let mut agent = FakeAgent::connect(&m, "agent-1", 2).await;
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": CONFIG, "modelDefinition": [], "activate": true})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let start = agent.next_start().await;
    agent.running(&start).await;

    // The loop publishes the container on the slot after the running event: poll for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let r = m.get("/prom/det-state-metrics", None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let placed = ["STATE_STARTING", "STATE_RUNNING"].iter().any(|s| r.text.contains(&format!("det_experiments{{state=\"{s}\"}} 1")));
        if placed && r.text.contains(r#"det_slots_in_use{device_type="cpu",resource_pool="default"} 1"#)
            || std::time::Instant::now() > deadline
        {
            break r.text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    };
    assert!(text.contains("det_agents 1"), "{text}");
    assert!(text.contains(r#"det_slots{device_type="cpu",resource_pool="default"} 2"#), "{text}");
    assert!(text.contains(r#"det_slots_in_use{device_type="cpu",resource_pool="default"} 1"#), "{text}");
    // Placed and started (STARTING until the harness reports in, then RUNNING).
    let active = |kind: &str| ["STATE_STARTING", "STATE_RUNNING"].iter().any(|s| text.contains(&format!("{kind}{{state=\"{s}\"}} 1")));
    assert!(active("det_experiments") && active("det_trials"), "{text}");
    assert!(text.contains(r#"det_open_tasks{task_type="TASK_TYPE_TRIAL"} 1"#), "{text}");

    let text = m.get("/debug/prom/metrics", None).await.text;
    assert!(text.contains("# TYPE det_http_request_duration_seconds histogram"), "{text}");
    assert!(
        text.contains(r#"det_http_request_duration_seconds_count{code="200",method="POST",route="/api/v1/experiments"} 1"#),
        "latencies by route pattern: {text}"
    );
    assert!(text.contains(r#"route="/prom/det-state-metrics""#), "{text}");
}
