//! Listing experiments, their trials and checkpoints: filters, sorting, pagination, and the keys
//! the upstream bindings require. Trials, metrics and checkpoints are seeded through the store
//! (nothing runs experiments yet).

use std::collections::BTreeMap;

use resolute_store::{NewCheckpoint, NewMetricReport, NewTrial, SearcherMetric, TrialRecord, db_now};
use serde_json::{Map, Value, json};

use crate::experiments::{assert_required_keys, create, minimal_yaml};
use crate::harness::{TestMaster, assert_error};

fn names(reply: &crate::harness::Reply) -> Vec<String> {
    reply.body["experiments"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_owned()).collect()
}

pub async fn list_filters_sorts_and_paginates(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let alice_id = m.create_user(&admin, "alice", "Alice123").await;
    let alice = m.login("alice", "Alice123").await;
    for (token, name, labels, activate) in [
        (&admin, "bravo", "[x, y]", true),
        (&admin, "alpha", "[x]", false),
        (&alice, "charlie", "[y]", true),
        (&alice, "delta", "[]", true),
    ] {
        create(m, token, &format!("{}labels: {labels}\n", minimal_yaml(name)), activate).await;
    }
    let all = m.get("/api/v1/experiments", Some(&admin)).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(names(&all), ["bravo", "alpha", "charlie", "delta"]);
    assert_eq!(all.body["pagination"], json!({"offset": 0, "limit": 0, "startIndex": 0, "endIndex": 4, "total": 4}));
    for e in all.body["experiments"].as_array().unwrap() {
        assert_required_keys(e);
        // As upstream's GetExperiments: the submitted YAML only in a describe.
        assert_eq!(e["originalConfig"], "", "{e}");
        assert_eq!(e["config"]["name"], e["name"]);
    }
    let first = all.body["experiments"][0]["id"].as_i64().unwrap();
    let one = m.get(&format!("/api/v1/experiments/{first}"), Some(&admin)).await;
    assert!(one.body["experiment"]["originalConfig"].as_str().unwrap().starts_with("name: bravo\n"), "{}", one.text);

    let cases = [
        ("users=alice", vec!["charlie", "delta"]),
        (&format!("userIds={alice_id}&userIds=1") as &str, vec!["bravo", "alpha", "charlie", "delta"]),
        ("users=admin&users=alice&userIds=1", vec!["bravo", "alpha"]),
        ("users=nobody", vec![]),
        ("states=STATE_PAUSED", vec!["alpha"]),
        ("states=STATE_PAUSED&states=STATE_ACTIVE", vec!["bravo", "alpha", "charlie", "delta"]),
        ("labels=x", vec!["bravo", "alpha"]),
        ("labels=x&labels=y", vec!["bravo"]),
        ("name=HA", vec!["alpha", "charlie"]),
        ("archived=false&users=admin&offset=0", vec!["bravo", "alpha"]),
        ("projectId=1&sortBy=SORT_BY_NAME", vec!["alpha", "bravo", "charlie", "delta"]),
        ("sortBy=SORT_BY_NAME&orderBy=ORDER_BY_DESC", vec!["delta", "charlie", "bravo", "alpha"]),
        ("sortBy=SORT_BY_USER&orderBy=ORDER_BY_DESC", vec!["delta", "charlie", "alpha", "bravo"]),
        // PAUSED sorts before QUEUED (no agent: the active ones wait for slots).
        ("sortBy=SORT_BY_STATE", vec!["alpha", "bravo", "charlie", "delta"]),
        ("projectId=2", vec![]),
    ];
    for (query, expected) in cases {
        let r = m.get(&format!("/api/v1/experiments?{query}"), Some(&alice)).await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(names(&r), expected, "{query}");
    }

    // The SDK's read_paginated: offset = endIndex until endIndex >= total.
    let (mut offset, mut seen) = (0, Vec::new());
    loop {
        let r = m.get(&format!("/api/v1/experiments?offset={offset}&limit=3&sortBy=SORT_BY_ID&orderBy=ORDER_BY_DESC"), Some(&admin)).await;
        seen.extend(names(&r));
        let p = &r.body["pagination"];
        if p["endIndex"].as_i64() >= p["total"].as_i64() {
            break;
        }
        offset = p["endIndex"].as_i64().unwrap();
    }
    assert_eq!(seen, ["delta", "charlie", "alpha", "bravo"]);
    let counts = m.get("/api/v1/experiments?limit=-2", Some(&admin)).await;
    assert_eq!((names(&counts).len(), &counts.body["pagination"]["total"]), (0, &json!(4)));
    let tail = m.get("/api/v1/experiments?offset=-1", Some(&admin)).await;
    assert_eq!(names(&tail), ["delta"]);
    assert_eq!(tail.body["pagination"]["startIndex"], 3);
    let everything = m.get("/api/v1/experiments?limit=-1&offset=1", Some(&admin)).await;
    assert_eq!(names(&everything).len(), 3);

    assert_error(&m.get("/api/v1/experiments?sortBy=SORT_BY_NUM_TRIALS", Some(&admin)).await, 501, "Unimplemented");
    assert_error(&m.get("/api/v1/experiments?sortBy=SORT_BY_SHOE", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/experiments?states=ACTIVE", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/experiments?limit=-3", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/experiments?userIds=me", Some(&admin)).await, 400, "InvalidArgument");
    assert_error(&m.get("/api/v1/experiments?experimentIdFilter.gt=1", Some(&admin)).await, 501, "Unimplemented");
}

async fn seed_trial(m: &TestMaster, experiment_id: i64, n: usize, state: &str, lr: f64) -> TrialRecord {
    let experiment_id = i32::try_from(experiment_id).unwrap();
    m.store
        .create_trial(NewTrial {
            experiment_id,
            request_id: format!("req-{n}"),
            task_id: format!("{experiment_id}.task-{n}"),
            state: state.to_owned(),
            hparams: json!({"lr": lr}),
            seed: 7,
            start_time: db_now(),
        })
        .await
        .unwrap()
}

async fn seed_validation(m: &TestMaster, trial: &TrialRecord, steps: i64, accuracy: f64) {
    let mut avg = Map::new();
    avg.insert("accuracy".into(), json!(accuracy));
    let report = |group: &str, avg: Map<String, Value>| NewMetricReport {
        trial_id: trial.id,
        trial_run_id: 1,
        group: group.to_owned(),
        steps_completed: steps,
        report_time: db_now(),
        avg_metrics: avg,
        batch_metrics: Vec::new(),
        searcher_metric: (group == "validation").then(|| SearcherMetric { name: "accuracy".into(), smaller_is_better: false }),
    };
    let mut train = Map::new();
    train.insert("loss".into(), json!(1.0 / accuracy));
    m.store.insert_metrics(&[report("training", train), report("validation", avg)]).await.unwrap();
    let checkpoint = NewCheckpoint {
        uuid: format!("ckpt-{}-{steps}", trial.id),
        task_id: trial.task_id.clone(),
        allocation_id: Some(format!("{}.1", trial.task_id)),
        trial_id: Some(trial.id),
        experiment_id: Some(trial.experiment_id),
        report_time: db_now(),
        state: "STATE_COMPLETED".into(),
        resources: BTreeMap::from([("model.pt".to_owned(), 1000 + steps), ("dir/".to_owned(), 0)]),
        metadata: json!({"steps_completed": steps}),
        steps_completed: steps,
        storage_id: None,
        searcher_metric: Some(accuracy),
    };
    m.store.report_checkpoint(checkpoint).await.unwrap();
}

pub async fn trials_and_checkpoints(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let yaml = "name: hp\nentrypoint: python3 train.py\nsearcher: {name: single, metric: accuracy, smaller_is_better: false}\n\
                hyperparameters: {lr: 0.1}\n";
    // Paused: the searcher's one trial exists (paused) when the create call returns; it plays the
    // finished trial here, beside a seeded active one.
    let id = create(m, &admin, yaml, false).await;
    let first = m
        .store
        .list_trials(&resolute_store::TrialFilter { experiment_id: i32::try_from(id).unwrap(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(first.trials.len(), 1, "{first:?}");
    m.store.update_trial_state(first.trials[0].id, "STATE_COMPLETED", Some(db_now())).await.unwrap();
    let t1 = m.store.trial_by_id(first.trials[0].id).await.unwrap();
    let t2 = seed_trial(m, id, 2, "STATE_ACTIVE", 0.2).await;
    seed_validation(m, &t1, 100, 0.5).await;
    seed_validation(m, &t1, 200, 0.9).await;
    seed_validation(m, &t2, 100, 0.7).await;
    let mut errored = NewCheckpoint { uuid: "ckpt-err".into(), state: "STATE_ERROR".into(), ..checkpoint_like(&t2) };
    errored.steps_completed = 150;
    m.store.report_checkpoint(errored).await.unwrap();

    let r = m.get(&format!("/api/v1/experiments/{id}/trials"), Some(&admin)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let trials = r.body["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    for t in trials {
        for key in ["id", "experimentId", "startTime", "state", "restarts", "hparams", "totalBatchesProcessed"] {
            assert!(t.get(key).is_some(), "trial lacks {key}: {t}");
        }
    }
    assert_eq!(trials[0]["totalBatchesProcessed"], 200);
    assert_eq!(trials[0]["hparams"], json!({"lr": 0.1}));
    assert_eq!(trials[0]["summaryMetrics"]["validation_metrics"]["accuracy"]["max"], 0.9, "upstream's summary keys");
    let active = m.get(&format!("/api/v1/experiments/{id}/trials?states=STATE_ACTIVE&states=STATE_PAUSED"), Some(&admin)).await;
    assert_eq!(active.body["trials"][0]["id"], t2.id, "{}", active.text);
    assert_eq!(active.body["pagination"]["total"], 1);
    let none = m.get(&format!("/api/v1/experiments/{id}/trials?states=STATE_DELETED"), Some(&admin)).await;
    assert_eq!(none.body["pagination"]["total"], 0, "experiment-only states are accepted: {}", none.text);
    let sorted = m
        .get(&format!("/api/v1/experiments/{id}/trials?sortBy=SORT_BY_BATCHES_PROCESSED&orderBy=ORDER_BY_ASC&limit=1"), Some(&admin))
        .await;
    assert_eq!(sorted.body["trials"][0]["id"], t2.id);
    assert_eq!(sorted.body["pagination"]["endIndex"], 1);
    assert_error(&m.get(&format!("/api/v1/experiments/{id}/trials?sortBy=SORT_BY_DURATION"), Some(&admin)).await, 501, "Unimplemented");
    assert_error(&m.get("/api/v1/experiments/999/trials", Some(&admin)).await, 404, "NotFound");

    let one = m.get(&format!("/api/v1/trials/{}", t1.id), Some(&admin)).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["trial"]["latestValidation"]["totalBatches"], 200);
    assert_eq!(one.body["trial"]["latestValidation"]["metrics"]["avgMetrics"]["accuracy"], 0.9);
    assert_error(&m.get("/api/v1/trials/999", Some(&admin)).await, 404, "NotFound");

    let exp = m.get(&format!("/api/v1/experiments/{id}"), Some(&admin)).await.body["experiment"].clone();
    assert_eq!(exp["numTrials"], 2);
    assert_eq!(exp["trialIds"], json!([t1.id, t2.id]));
    assert_eq!(exp["checkpointCount"], 3);
    assert_eq!(exp["checkpointSize"], (1100 + 1200 + 1100).to_string());
    assert_eq!((exp["bestTrialId"].as_i64(), exp["bestTrialSearcherMetric"].as_f64()), (Some(i64::from(t1.id)), Some(0.9)));
    let listed = m.get("/api/v1/experiments", Some(&admin)).await;
    assert_eq!(listed.body["experiments"][0]["numTrials"], 2);
    // The list shows the same best trial and metric as the single read (it used to leave them null).
    let row = &listed.body["experiments"][0];
    assert_eq!((row["bestTrialId"].as_i64(), row["bestTrialSearcherMetric"].as_f64()), (Some(i64::from(t1.id)), Some(0.9)), "{row}");

    // Searcher-metric sort with no order: best first, and here bigger is better.
    let uuids = |r: &crate::harness::Reply| -> Vec<String> {
        r.body["checkpoints"].as_array().unwrap().iter().map(|c| c["uuid"].as_str().unwrap().to_owned()).collect()
    };
    let base = format!("/api/v1/experiments/{id}/checkpoints");
    let best = m.get(&format!("{base}?sortByAttr=SORT_BY_SEARCHER_METRIC&states=STATE_COMPLETED"), Some(&admin)).await;
    assert_eq!(best.status, 200, "{}", best.text);
    let (a, b, c) = (format!("ckpt-{}-200", t1.id), format!("ckpt-{}-100", t2.id), format!("ckpt-{}-100", t1.id));
    assert_eq!(uuids(&best), [a.clone(), b.clone(), c.clone()]);
    let asc = m.get(&format!("{base}?sortByAttr=SORT_BY_SEARCHER_METRIC&orderBy=ORDER_BY_ASC&states=STATE_COMPLETED"), Some(&admin)).await;
    assert_eq!(uuids(&asc), [c.clone(), b.clone(), a.clone()]);
    let by_name = m.get(&format!("{base}?sortByMetric=accuracy&limit=1"), Some(&admin)).await;
    assert_eq!(uuids(&by_name), std::slice::from_ref(&a));
    assert_eq!(by_name.body["pagination"]["total"], 4, "the error checkpoint counts without a state filter");
    // Not the searcher's metric, and no validation reported it (loss is a training metric): all
    // four, by uuid (checkpoint_edits.rs sorts by such metrics).
    let by_loss = m.get(&format!("{base}?sortByMetric=loss"), Some(&admin)).await;
    assert_eq!(by_loss.status, 200, "{}", by_loss.text);
    let mut by_uuid = uuids(&by_loss);
    by_uuid.sort();
    assert_eq!((uuids(&by_loss).len(), uuids(&by_loss)), (4, by_uuid));
    let all = m.get(&base, Some(&admin)).await;
    assert_eq!(all.body["pagination"]["total"], 4);

    let top = &best.body["checkpoints"][0];
    for key in ["uuid", "resources", "metadata", "training", "state"] {
        assert!(top.get(key).is_some(), "checkpoint lacks {key}: {top}");
    }
    assert_eq!(top["resources"], json!({"dir/": "0", "model.pt": "1200"}), "int64 sizes as strings");
    assert_eq!(top["state"], "STATE_COMPLETED");
    assert_eq!(top["training"]["trialId"], t1.id);
    assert_eq!(top["training"]["experimentId"], id);
    assert_eq!(top["training"]["hparams"], json!({"lr": 0.1}));
    assert_eq!(top["training"]["searcherMetric"], 0.9);
    assert_eq!(top["training"]["validationMetrics"]["avgMetrics"], json!({"accuracy": 0.9}));
    assert_eq!(top["training"]["experimentConfig"]["searcher"]["metric"], "accuracy");

    // A trial is ACTIVE in the store, so the API answers a cancel with STOPPING_CANCELED; the loop,
    // which never ran these seeded trials, then settles it.
    assert_eq!(m.post(&format!("/api/v1/experiments/{id}/cancel"), Some(&admin), json!({})).await.status, 200);
    let exp = m.get(&format!("/api/v1/experiments/{id}"), Some(&admin)).await;
    let state = exp.body["experiment"]["state"].as_str().unwrap_or_default().to_owned();
    assert!(state == "STATE_STOPPING_CANCELED" || state == "STATE_CANCELED", "{}", exp.text);
}

fn checkpoint_like(trial: &TrialRecord) -> NewCheckpoint {
    NewCheckpoint {
        uuid: String::new(),
        task_id: trial.task_id.clone(),
        allocation_id: None,
        trial_id: Some(trial.id),
        experiment_id: Some(trial.experiment_id),
        report_time: db_now(),
        state: "STATE_COMPLETED".into(),
        resources: BTreeMap::new(),
        metadata: json!({}),
        steps_completed: 0,
        storage_id: None,
        searcher_metric: None,
    }
}
