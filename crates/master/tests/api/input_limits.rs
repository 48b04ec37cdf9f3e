//! Bad input that must behave the same on both backends: oversized text, NUL characters, huge
//! numbers, odd Unicode, search spaces too large for their searcher.

use serde_json::json;

use crate::experiments::{create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};

const TEN_MB: usize = 10 * 1024 * 1024;

fn grid_yaml(name: &str, count_a: u64, count_b: u64) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: grid, metric: loss, max_length: {{batches: 10}}}}\n\
         hyperparameters: {{a: {{type: int, minval: 0, maxval: 100000000, count: {count_a}}}, \
         b: {{type: int, minval: 0, maxval: 100000000, count: {count_b}}}}}\n"
    )
}

async fn post_experiment(m: &TestMaster, token: &str, yaml: &str) -> crate::harness::Reply {
    m.post("/api/v1/experiments", Some(token), json!({"config": yaml, "modelDefinition": [], "activate": false})).await
}

pub async fn ten_megabyte_names_are_refused(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let huge = "n".repeat(TEN_MB);
    let r = post_experiment(m, &admin, &minimal_yaml(&huge)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("config is 10485") && r.text.contains("the limit is 1048576"), "{}", &r.text[..r.text.len().min(300)]);
    let r = post_experiment(m, &admin, &minimal_yaml(&"n".repeat(2000))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("name is 2000 bytes; the limit is 1024"), "{}", r.text);
    let r = post_experiment(m, &admin, &format!("{}labels: [{}]\n", minimal_yaml("labelled"), vec!["x"; 101].join(", "))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("101 labels; the limit is 100"), "{}", r.text);

    let id = create(m, &admin, &minimal_yaml("small"), false).await;
    let path = format!("/api/v1/experiments/{id}");
    let r = m.patch(&path, Some(&admin), json!({"name": huge})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("name is 10485760 bytes; the limit is 1024"), "{}", &r.text[..r.text.len().min(300)]);
    for (field, size, limit) in [("description", 16 * 1024 + 1, "16384"), ("notes", 256 * 1024 + 1, "262144")] {
        let r = m.patch(&path, Some(&admin), json!({ field: "d".repeat(size) })).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(&format!("{field} is {size} bytes; the limit is {limit}")), "{}", r.text);
    }
    let r = m.patch(&path, Some(&admin), json!({"labels": ["l".repeat(256)]})).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("label is 256 bytes; the limit is 255"), "{}", r.text);
    let r = m.put(&format!("{path}/labels/{}", "l".repeat(300)), Some(&admin)).await;
    assert_error(&r, 400, "InvalidArgument");
    // At the limits, all is accepted.
    let r = m.patch(&path, Some(&admin), json!({"name": "é".repeat(512), "description": "d".repeat(16 * 1024)})).await;
    assert_eq!(r.status, 200, "{}", &r.text[..r.text.len().min(300)]);

    let big_template = json!({"name": "big", "config": {"description": "t".repeat(2 * 1024 * 1024)}, "workspaceId": 1});
    let r = m.send(m.http.put(format!("{}/api/v1/templates/big", m.base)).bearer_auth(&admin).json(&big_template)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("config is 2097") && r.text.contains("the limit is 1048576"), "{}", &r.text[..r.text.len().min(300)]);

    // Nothing oversized was stored: the list stays small.
    let list = m.get("/api/v1/experiments", Some(&admin)).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["pagination"]["total"], 1, "{}", &list.text[..list.text.len().min(300)]);
    assert!(list.text.len() < 64 * 1024, "the list is {} bytes", list.text.len());
}

pub async fn nul_characters_get_the_same_answer(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    // YAML's "\0" escape puts a NUL in the name.
    let r = post_experiment(m, &admin, &minimal_yaml("\"a\\0b\"")).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("name") && r.text.contains("NUL"), "{}", r.text);
    let r = post_experiment(m, &admin, &format!("{}description: \"d\\0\"\n", minimal_yaml("nul-description"))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("description") && r.text.contains("NUL"), "{}", r.text);
    let r = post_experiment(m, &admin, &format!("{}labels: [\"l\\0\"]\n", minimal_yaml("nul-label"))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("label") && r.text.contains("NUL"), "{}", r.text);
    // A raw NUL in the config's text (a comment) is refused, not half-stored.
    let r = post_experiment(m, &admin, &format!("{}# note\0\n", minimal_yaml("nul-comment"))).await;
    assert_error(&r, 400, "InvalidArgument");

    let id = create(m, &admin, &minimal_yaml("clean"), false).await;
    let path = format!("/api/v1/experiments/{id}");
    for field in ["name", "description", "notes"] {
        let r = m.patch(&path, Some(&admin), json!({ field: "x\u{0}y" })).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(field) && r.text.contains("NUL"), "{field}: {}", r.text);
    }
    assert_error(&m.patch(&path, Some(&admin), json!({"labels": ["a\u{0}"]})).await, 400, "InvalidArgument");
    assert_error(&m.put(&format!("{path}/labels/a%00b"), Some(&admin)).await, 400, "InvalidArgument");
    let exp = m.get(&path, Some(&admin)).await;
    assert_eq!((exp.body["experiment"]["name"].as_str(), exp.body["experiment"]["labels"].clone()), (Some("clean"), json!([])));

    // Lookups and filters by a NUL-holding key find nothing, on both backends.
    let r = m.get("/api/v1/experiments?name=a%00b", Some(&admin)).await;
    assert_eq!((r.status, r.body["pagination"]["total"].as_i64()), (200, Some(0)), "{}", r.text);
    let r = m.get("/api/v1/users?name=a%00b", Some(&admin)).await;
    assert_eq!((r.status, r.body["pagination"]["total"].as_i64()), (200, Some(0)), "{}", r.text);
    assert_error(&m.get("/api/v1/users/a%00b/by-username", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/templates/a%00b", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/checkpoints/a%00b", Some(&admin)).await, 404, "NotFound");
    assert_error(&m.get("/api/v1/tasks/a%00b", Some(&admin)).await, 404, "NotFound");
    let r = post_experiment(m, &admin, &format!("{}workspace: \"w\\0\"\nproject: p\n", minimal_yaml("nul-project"))).await;
    assert_error(&r, 404, "NotFound");
    let r = m.post("/api/v1/auth/login", None, json!({"username": "ad\u{0}min", "password": ""})).await;
    assert_error(&r, 401, "Unauthenticated");

    // Users: names and display names.
    let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "nul\u{0}user"}})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.post("/api/v1/users", Some(&admin), json!({"user": {"username": "ok-user", "displayName": "D\u{0}"}})).await;
    assert_error(&r, 400, "InvalidArgument");
    let r = m.get("/api/v1/users?limit=0", Some(&admin)).await;
    assert_eq!(r.body["pagination"]["total"], 2, "nothing half-written: {}", r.text);
}

pub async fn huge_numbers_and_odd_unicode(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    for path in [
        "/api/v1/experiments/99999999999999999999",
        "/api/v1/experiments/9223372036854775808",
        "/api/v1/users/99999999999999999999",
        "/api/v1/trials/99999999999999999999",
        "/api/v1/experiments?limit=99999999999999999999",
        "/api/v1/experiments?offset=-99999999999999999999",
        "/api/v1/users?limit=-99999999999999999999",
    ] {
        let r = m.get(path, Some(&admin)).await;
        assert!(r.status == 400 || r.status == 404, "{path}: {} {}", r.status, r.text);
        assert!(r.body["error"]["error"].is_string(), "{path}: {}", r.text);
    }
    for path in ["/api/v1/experiments/2147483648", "/api/v1/experiments/0", "/api/v1/experiments/-1"] {
        let r = m.get(path, Some(&admin)).await;
        assert!(r.status == 400 || r.status == 404, "{path}: {} {}", r.status, r.text);
    }
    // Every list answers out-of-range paging with a page or a 400, never a 500.
    let exp = create(m, &admin, &minimal_yaml("paged"), false).await;
    let lists = [
        "/api/v1/experiments".to_owned(),
        "/api/v1/users".to_owned(),
        format!("/api/v1/experiments/{exp}/trials"),
        format!("/api/v1/experiments/{exp}/checkpoints"),
        "/api/v1/templates".to_owned(),
        "/api/v1/commands".to_owned(),
    ];
    for list in &lists {
        for query in [
            "limit=-1",
            "limit=-100",
            "limit=2147483648",
            "limit=9223372036854775807",
            "offset=-1",
            "offset=-9223372036854775808",
            "offset=9223372036854775807",
            "offset=9223372036854775807&limit=9223372036854775807",
        ] {
            let r = m.get(&format!("{list}?{query}"), Some(&admin)).await;
            assert!(r.status == 200 || r.status == 400, "{list}?{query}: {} {}", r.status, r.text);
        }
    }
    let r = m.get("/api/v1/experiments?limit=-3", Some(&admin)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("limit"), "{}", r.text);

    // Right-to-left text, emoji, combining marks and astral characters round-trip exactly.
    let odd = "שלום \u{202e}evil\u{202c} 🧪👩‍🔬 e\u{301}\u{301} 𝔘𝔫𝔦";
    let id = create(m, &admin, &minimal_yaml(&serde_json::to_string(odd).unwrap()), false).await;
    let path = format!("/api/v1/experiments/{id}");
    assert_eq!(m.get(&path, Some(&admin)).await.body["experiment"]["name"], odd);
    let r = m.patch(&path, Some(&admin), json!({"notes": odd, "labels": [odd]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let exp = m.get(&path, Some(&admin)).await.body["experiment"].clone();
    assert_eq!((exp["notes"].as_str(), exp["labels"].clone()), (Some(odd), json!([odd])));
    let r = m.get(&format!("/api/v1/experiments?labels={}", urlencode(odd)), Some(&admin)).await;
    assert_eq!(r.body["pagination"]["total"], 1, "{}", r.text);
    // A lone surrogate is not Unicode: the JSON is refused, whatever the backend.
    let r = m.send(m.http.patch(format!("{}{path}", m.base)).bearer_auth(&admin).body(r#"{"name": "bad \ud800 name"}"#)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("`name`"), "the field is named: {}", r.text);
}

fn urlencode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

pub async fn a_grid_too_large_is_refused_with_its_size(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let r = post_experiment(m, &admin, &grid_yaml("million", 1000, 1001)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("the grid has 1001000 points") && r.text.contains("the limit is 100000"), "{}", r.text);
    let r = post_experiment(m, &admin, &grid_yaml("huge", u64::from(u32::MAX), u64::from(u32::MAX))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("the limit is 100000"), "{}", r.text);
    let list = m.get("/api/v1/experiments?limit=-2", Some(&admin)).await;
    assert_eq!(list.body["pagination"]["total"], 0, "nothing stored: {}", list.text);

    // At the limit: accepted, and its search state answers.
    let r = m
        .post(
            "/api/v1/experiments",
            Some(&admin),
            json!({"config": grid_yaml("at-limit", 100, 1000), "modelDefinition": [], "activate": false}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();
    let s = m.get(&format!("/api/v1/experiments/{id}/searcher/state"), Some(&admin)).await;
    assert_eq!(s.status, 200, "{}", s.text);
    assert_eq!(s.body["brackets"][0]["maxTrials"], 100_000);
}

/// What a trial can store through its token: metric groups, checkpoint metadata and ids, NaN as
/// the harness spells it, int64 strings out of range.
pub async fn trial_reports_are_bounded_and_nul_free(m: &TestMaster) {
    use crate::runtime_support::{metrics_body, running_trial, task_post, task_post_raw};
    let admin = m.login("admin", "").await;
    let t = running_trial(m, &admin, "runtime-limits").await;
    let metrics = format!("/api/v1/trials/{}/metrics", t.trial.id);
    for (group, needle) in [("g\u{0}", "NUL"), (&*"g".repeat(300), "group is 300 bytes; the limit is 255")] {
        let r = task_post(m, &metrics, &t.token, metrics_body(t.trial.id, 1, group, 1, json!({"loss": 0.5}))).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(needle), "{}", r.text);
    }
    // `det.util.json_encode` writes NaN and infinities as strings; they are kept as sent.
    let r = task_post(m, &metrics, &t.token, metrics_body(t.trial.id, 1, "training", 2, json!({"loss": "NaN", "gn": "Infinity"}))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = format!(
        r#"{{"group": "training", "metrics": {{"trialId": {}, "trialRunId": 1, "stepsCompleted": "99999999999999999999", "avgMetrics": {{}}}}}}"#,
        t.trial.id
    );
    let r = task_post_raw(m, &metrics, &t.token, &body).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("stepsCompleted"), "{}", r.text);

    let checkpoint = |uuid: &str, metadata: serde_json::Value| {
        json!({
            "allocationId": t.allocation_id, "taskId": t.trial.task_id, "uuid": uuid, "metadata": metadata,
            "resources": {}, "training": {}, "state": "STATE_COMPLETED", "reportTime": "2025-03-19T10:05:01Z",
        })
    };
    let r = task_post(m, "/api/v1/checkpoints", &t.token, checkpoint("u\u{0}", json!({"steps_completed": 1}))).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("uuid"), "{}", r.text);
    let big = json!({"steps_completed": 1, "notes": "m".repeat(2 * 1024 * 1024)});
    let r = task_post(m, "/api/v1/checkpoints", &t.token, checkpoint(&uuid::Uuid::new_v4().to_string(), big)).await;
    assert_error(&r, 400, "InvalidArgument");
    assert!(r.text.contains("metadata is 2097") && r.text.contains("the limit is 1048576"), "{}", &r.text[..r.text.len().min(300)]);
}

pub async fn searches_over_the_trial_limit_are_refused(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    for (searcher, field) in [
        ("{name: random, metric: loss, max_trials: 1000000000000000, max_concurrent_trials: 0, max_length: {batches: 10}}", "max_trials"),
        ("{name: adaptive_asha, metric: loss, max_trials: 100001, max_length: {batches: 100}}", "max_trials"),
        ("{name: async_halving, metric: loss, num_rungs: 3, max_trials: 200000, max_length: {batches: 100}}", "max_trials"),
        (
            "{name: pbt, metric: loss, population_size: 1000000, num_rounds: 2, length_per_round: {batches: 10}, \
              replace_function: {truncate_fraction: 0.5}, explore_function: {resample_probability: 0.5, perturb_factor: 0.2}}",
            "population_size",
        ),
    ] {
        let yaml = format!(
            "name: big\nentrypoint: python3 train.py\nsearcher: {searcher}\nhyperparameters: {{lr: {{type: double, minval: 0.1, maxval: 1}}}}\n"
        );
        let r = post_experiment(m, &admin, &yaml).await;
        assert_error(&r, 400, "InvalidArgument");
        assert!(r.text.contains(&format!("searcher.{field}")) && r.text.contains("the limit is 100000"), "{searcher}: {}", r.text);
    }
    let list = m.get("/api/v1/experiments?limit=-2", Some(&admin)).await;
    assert_eq!(list.body["pagination"]["total"], 0, "nothing stored: {}", list.text);
}
