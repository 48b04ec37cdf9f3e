//! Checkpoint files: download as tar and tar.gz, the 4xx cases, garbage collection by the
//! experiment's retention policy (inline, and as a `TASK_TYPE_CHECKPOINT_GC` task), and
//! `DELETE /api/v1/checkpoints`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use flate2::read::GzDecoder;
use resolute_master::domain::TaskType;
use resolute_master::services::checkpoint_gc::{CheckpointGc, collect_experiment_checkpoints};
use resolute_store::{TaskFilter, TaskWithAllocations};
use serde_json::json;

use crate::experiments::create;
use crate::harness::{TestMaster, assert_error};
use crate::seed::{self, stream_results};

pub(crate) fn yaml(name: &str, storage: &str) -> String {
    format!(
        "name: {name}\nentrypoint: python3 train.py\nsearcher: {{name: single, metric: accuracy, smaller_is_better: false}}\n\
         checkpoint_storage: {storage}\n"
    )
}

/// Writes a checkpoint directory: metadata.json, model/w.bin, an empty dir.
fn write_files(root: &Path, uuid: &str) {
    let dir = root.join(uuid);
    std::fs::create_dir_all(dir.join("model")).unwrap();
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::write(dir.join("metadata.json"), format!("{{\"uuid\": \"{uuid}\"}}")).unwrap();
    std::fs::write(dir.join("model/w.bin"), vec![7u8; 300_000]).unwrap();
}

/// Path → contents of every regular file in an archive, plus its directory names.
pub(crate) fn unpack(bytes: &[u8]) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut archive = tar::Archive::new(bytes);
    let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().trim_end_matches('/').to_owned();
        if entry.header().entry_type().is_dir() {
            dirs.push(path);
        } else {
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            files.insert(path, data);
        }
    }
    (files, dirs)
}

pub(crate) async fn download(m: &TestMaster, token: &str, uuid: &str, accept: Option<&str>) -> reqwest::Response {
    let mut req = m.http.get(format!("{}/checkpoints/{uuid}", m.base)).bearer_auth(token);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    req.send().await.unwrap()
}

pub async fn download_as_tar_and_tar_gz(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let shared = format!("{{type: shared_fs, host_path: {}, storage_path: sub}}", storage.path().display());
    let exp = create(m, &admin, &yaml("dl", &shared), false).await;
    let trial = seed::trial(m, exp, 1).await;
    seed::checkpoint(m, &trial, "c-1", 100, Some(0.5), "STATE_COMPLETED").await;
    write_files(&storage.path().join("sub"), "c-1");

    let expected =
        BTreeMap::from([("metadata.json".to_owned(), b"{\"uuid\": \"c-1\"}".to_vec()), ("model/w.bin".to_owned(), vec![7u8; 300_000])]);
    let tar = download(m, &admin, "c-1", None).await;
    assert_eq!(tar.status(), 200);
    assert_eq!(tar.headers()["content-type"], "application/x-tar");
    let (files, mut dirs) = unpack(&tar.bytes().await.unwrap());
    dirs.sort();
    assert_eq!(files, expected);
    assert_eq!(dirs, ["empty", "model"]);

    let gz = download(m, &admin, "c-1", Some("application/gzip")).await;
    assert_eq!(gz.status(), 200);
    assert_eq!(gz.headers()["content-type"], "application/gzip");
    let mut raw = Vec::new();
    GzDecoder::new(&gz.bytes().await.unwrap()[..]).read_to_end(&mut raw).unwrap();
    assert_eq!(unpack(&raw).0, expected);

    let r = download(m, &admin, "nope", None).await;
    assert_eq!(r.status(), 404);
    seed::checkpoint(m, &trial, "c-active", 200, None, "STATE_ACTIVE").await;
    let r = download(m, &admin, "c-active", None).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("only COMPLETED or PARTIALLY_DELETED"));
    seed::checkpoint(m, &trial, "c-deleted", 300, None, "STATE_DELETED").await;
    assert_eq!(download(m, &admin, "c-deleted", None).await.status(), 404);
    seed::checkpoint(m, &trial, "c-nofiles", 400, None, "STATE_COMPLETED").await;
    let r = download(m, &admin, "c-nofiles", None).await;
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().contains("not in storage"));
    assert_eq!(download(m, &admin, "c-1", Some("application/zip")).await.status(), 501);
    assert_eq!(m.http.get(format!("{}/checkpoints/c-1", m.base)).send().await.unwrap().status(), 401);
}

pub async fn gc_keeps_best_and_latest_and_is_idempotent(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let dir = format!("{{type: directory, container_path: {}}}", storage.path().display());
    let exp = create(m, &admin, &yaml("gc", &dir), false).await;
    let t1 = seed::trial(m, exp, 1).await;
    let t2 = seed::trial(m, exp, 2).await;
    // Trial 1: best is 200, latest 400; 100 and 300 go. Trial 2: one checkpoint, kept.
    for (uuid, steps, metric) in [("a-100", 100, Some(0.5)), ("a-200", 200, Some(0.9)), ("a-300", 300, Some(0.7)), ("a-400", 400, None)] {
        seed::checkpoint(m, &t1, uuid, steps, metric, "STATE_COMPLETED").await;
        write_files(storage.path(), uuid);
    }
    seed::checkpoint(m, &t2, "b-100", 100, Some(0.1), "STATE_COMPLETED").await;
    write_files(storage.path(), "b-100");
    std::fs::remove_dir_all(storage.path().join("a-300")).unwrap(); // already gone: tolerated

    let config = m.store.experiment_by_id(i32::try_from(exp).unwrap()).await.unwrap().config;
    let report = collect_experiment_checkpoints(m.store.as_ref(), i32::try_from(exp).unwrap(), &config, &[]).await.unwrap();
    assert_eq!(report.deleted, ["a-100", "a-300"]);
    assert_eq!(report.already_missing, ["a-300"]);
    for (uuid, kept) in [("a-100", false), ("a-200", true), ("a-300", false), ("a-400", true), ("b-100", true)] {
        assert_eq!(storage.path().join(uuid).exists(), kept, "{uuid} files");
        let c = m.store.checkpoint_by_uuid(uuid).await.unwrap();
        assert_eq!(c.state, if kept { "STATE_COMPLETED" } else { "STATE_DELETED" }, "{uuid}");
        assert_eq!(c.resources.is_empty(), !kept, "{uuid} resources");
    }
    let again = collect_experiment_checkpoints(m.store.as_ref(), i32::try_from(exp).unwrap(), &config, &[]).await.unwrap();
    assert!(again.deleted.is_empty(), "idempotent: {again:?}");

    // DELETE /api/v1/checkpoints: owner or admin; files first, then the state.
    m.create_user(&admin, "mallory", "Mallory1").await;
    let mallory = m.login("mallory", "Mallory1").await;
    let body = json!({"checkpointUuids": ["a-200"]});
    let denied = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&mallory).json(&body)).await;
    assert_error(&denied, 403, "PermissionDenied");
    assert!(storage.path().join("a-200").exists());
    let ok = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&body)).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.body, json!({}));
    assert!(!storage.path().join("a-200").exists());
    assert_eq!(m.store.checkpoint_by_uuid("a-200").await.unwrap().state, "STATE_DELETED");
    let repeat = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&body)).await;
    assert_eq!(repeat.status, 200, "deleting a deleted checkpoint again is a no-op: {}", repeat.text);
    let unknown = json!({"checkpointUuids": ["a-400", "zzz"]});
    let r = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&unknown)).await;
    assert_error(&r, 404, "NotFound");
    assert!(storage.path().join("a-400").exists(), "nothing is deleted when one uuid is unknown");
    let empty = m.send(m.http.delete(format!("{}/api/v1/checkpoints", m.base)).bearer_auth(&admin).json(&json!({}))).await;
    assert_error(&empty, 400, "InvalidArgument");
}

/// The ended checkpoint GC tasks, once `want` of them have ended (polled with a deadline).
async fn ended_gc_tasks(m: &TestMaster, want: usize) -> Vec<TaskWithAllocations> {
    let filter = TaskFilter { task_type: Some(TaskType::CheckpointGc.as_str().to_owned()), open_only: false };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let tasks = m.store.list_tasks(&filter).await.unwrap();
        if tasks.iter().filter(|t| t.task.end_time.is_some()).count() >= want {
            return tasks;
        }
        assert!(Instant::now() < deadline, "{want} GC task(s) never ended: {tasks:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn task_log_lines(m: &TestMaster, token: &str, task_id: &str) -> Vec<(String, String)> {
    let r = m.get(&format!("/api/v1/tasks/{task_id}/logs"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    stream_results(&r.text)
        .iter()
        .map(|l| (l["level"].as_str().unwrap().to_owned(), l["log"].as_str().unwrap().trim_end().to_owned()))
        .collect()
}

pub async fn gc_runs_as_a_task_with_its_logs(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let dir = format!("{{type: directory, container_path: {}}}", storage.path().display());
    let exp = create(m, &admin, &yaml("gc-task", &dir), false).await;
    let trial = seed::trial(m, exp, 1).await;
    // Best is 200, latest 400; 300 is protected (a live trial starts from it): only 100 goes.
    for (uuid, steps, metric) in [("g-100", 100, Some(0.5)), ("g-200", 200, Some(0.9)), ("g-300", 300, Some(0.7)), ("g-400", 400, None)] {
        seed::checkpoint(m, &trial, uuid, steps, metric, "STATE_COMPLETED").await;
        write_files(storage.path(), uuid);
    }
    let exp_id = i32::try_from(exp).unwrap();
    let config = m.store.experiment_by_id(exp_id).await.unwrap().config.into_value();

    // A burst of requests returns at once; the runs never overlap, so one task deletes g-100 and
    // the coalesced run after it finds nothing to do (and, as upstream, creates no task).
    let gc = CheckpointGc::new(m.store.clone());
    for _ in 0..5 {
        gc.spawn(exp_id, config.clone(), vec!["g-300".to_owned()]);
    }
    let tasks = ended_gc_tasks(m, 1).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0].task;
    assert!(uuid::Uuid::parse_str(&task.task_id).is_ok(), "{}", task.task_id);
    assert!(task.end_time.unwrap() >= task.start_time);
    assert!(tasks[0].allocations.is_empty());
    assert_eq!(
        task_log_lines(m, &admin, &task.task_id).await,
        [
            ("LOG_LEVEL_INFO".to_owned(), format!("deleting 1 checkpoint(s) of experiment {exp}: g-100")),
            ("LOG_LEVEL_INFO".to_owned(), "deleted 1 checkpoint(s)".to_owned()),
        ]
    );
    for (uuid, kept) in [("g-100", false), ("g-200", true), ("g-300", true), ("g-400", true)] {
        assert_eq!(storage.path().join(uuid).exists(), kept, "{uuid} files");
        assert_eq!(m.store.checkpoint_by_uuid(uuid).await.unwrap().state, if kept { "STATE_COMPLETED" } else { "STATE_DELETED" });
    }

    // Unprotected, 300 goes too. A failure (a bucket that does not exist) is the task's log, and
    // it still ends.
    gc.spawn(exp_id, config.clone(), Vec::new());
    let tasks = ended_gc_tasks(m, 2).await;
    assert!(!storage.path().join("g-300").exists());
    let moto = crate::s3_checkpoints::start_moto();
    let no_bucket = format!("{{type: s3, bucket: missing-bucket, endpoint_url: \"{}\", access_key: AK, secret_key: SK}}", moto.endpoint);
    let s3 = create(m, &admin, &yaml("gc-s3", &no_bucket), false).await;
    let s3_trial = seed::trial(m, s3, 1).await;
    for (uuid, steps) in [("s-100", 100), ("s-200", 200)] {
        seed::checkpoint(m, &s3_trial, uuid, steps, None, "STATE_COMPLETED").await;
    }
    let s3_id = i32::try_from(s3).unwrap();
    gc.spawn(s3_id, m.store.experiment_by_id(s3_id).await.unwrap().config.into_value(), Vec::new());
    let failed = ended_gc_tasks(m, 3).await.into_iter().find(|t| tasks.iter().all(|old| old.task.task_id != t.task.task_id)).unwrap();
    let lines = task_log_lines(m, &admin, &failed.task.task_id).await;
    assert_eq!(lines[0], ("LOG_LEVEL_INFO".to_owned(), format!("deleting 1 checkpoint(s) of experiment {s3}: s-100")));
    assert_eq!(lines[1].0, "LOG_LEVEL_ERROR");
    assert!(lines[1].1.starts_with("checkpoint GC failed: checkpoint s-100 at s3://missing-bucket/s-100: "), "{lines:?}");
    assert_eq!(m.store.checkpoint_by_uuid("s-100").await.unwrap().state, "STATE_COMPLETED");
}

/// `save_trial_best: 10` keeps the trial's 10 best checkpoints, also those reported while their
/// step's validation was being committed (stored without a searcher metric: neither the report
/// nor the validation's backfill saw the other). Such checkpoints were ranked as having no
/// metric and deleted: a trial with 10 kept 8.
pub async fn gc_keeps_the_best_checkpoints_reported_beside_their_validation(m: &TestMaster) {
    let admin = m.login("admin", "").await;
    let storage = tempfile::tempdir().unwrap();
    let dir = format!("{{type: directory, container_path: {}, save_trial_best: 10, save_trial_latest: 1}}", storage.path().display());
    let exp = create(m, &admin, &yaml("gc-best", &dir), false).await;
    let trial = seed::trial(m, exp, 1).await;
    for step in (100..=1200).step_by(100) {
        // accuracy (larger is better): 100 and 200 are the two worst.
        let accuracy = if step <= 200 { f64::from(step as i32) / 10_000.0 } else { f64::from(step as i32) / 1_000.0 };
        let uuid = format!("c-{step}");
        seed::metrics(m, &trial, step, accuracy).await;
        // 500 and 800 lost the race with their validation: no metric on the row.
        let raced = step == 500 || step == 800;
        seed::checkpoint(m, &trial, &uuid, step, (!raced).then_some(accuracy), "STATE_COMPLETED").await;
        write_files(storage.path(), &uuid);
    }
    let config = m.store.experiment_by_id(i32::try_from(exp).unwrap()).await.unwrap().config;
    let report = collect_experiment_checkpoints(m.store.as_ref(), i32::try_from(exp).unwrap(), &config, &[]).await.unwrap();
    assert_eq!(report.deleted, ["c-100", "c-200"], "exactly the two worst go");
    let kept: Vec<String> = (300..=1200).step_by(100).map(|s| format!("c-{s}")).collect();
    for uuid in &kept {
        assert_eq!(m.store.checkpoint_by_uuid(uuid).await.unwrap().state, "STATE_COMPLETED", "{uuid}");
        assert!(storage.path().join(uuid).exists(), "{uuid} files");
    }
    assert_eq!(kept.len(), 10);
}
