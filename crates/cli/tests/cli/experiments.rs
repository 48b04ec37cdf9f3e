//! `det experiment` against a real master: create with a context directory, listings, lifecycle
//! actions, labels, model definition download, and the one-line errors.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::{Det, Master};

const CONFIG: &str = "name: cli-exp\nentrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

fn describe_json(det: &Det, id: &str) -> Value {
    let out = det.ok(&["experiment", "describe", id, "--json"], "");
    let list: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    list[0]["experiment"].clone()
}

/// Paths inside a `.tgz` archive.
fn tgz_paths(path: &Path) -> Vec<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path).expect("tgz").read_to_end(&mut bytes).expect("read");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut paths: Vec<String> = archive
        .entries()
        .expect("entries")
        .map(|e| e.expect("entry").path().expect("path").display().to_string().trim_end_matches('/').to_owned())
        .collect();
    paths.sort();
    paths
}

#[test]
fn experiment_commands_against_a_real_master() {
    let master = Master::start();
    let det = Det::new(&master.url);
    det.ok(&["user", "login", "admin"], "\n");

    let work = tempfile::tempdir().expect("work dir");
    let ctx = work.path().join("ctx");
    write(&ctx, "train.py", "print('train')\n");
    write(&ctx, "lib/util.py", "X = 1\n");
    write(&ctx, "data/big.bin", "ignored");
    write(&ctx, "__pycache__/x.pyc", "ignored");
    write(&ctx, ".detignore", "data/\n");
    let cfg = work.path().join("exp.yaml");
    std::fs::write(&cfg, CONFIG).expect("config");
    let (cfg, ctx_arg) = (cfg.display().to_string(), ctx.display().to_string());

    let out = det.ok(&["experiment", "create", &cfg, &ctx_arg, "--paused"], "");
    let final_line = out.lines().last().unwrap_or_default();
    assert!(final_line.starts_with("Created experiment "), "{out:?}");
    assert!(out.contains("Preparing files to send to master... 21.0B and 3 files\r\n"), "{out:?}");
    let id = final_line.trim_start_matches("Created experiment ").to_owned();
    let exp = describe_json(&det, &id);
    assert_eq!(exp["state"], "STATE_PAUSED");
    assert_eq!(exp["name"], "cli-exp");

    // The stored model definition is exactly the non-ignored files.
    det.ok(&["experiment", "download-model-def", &id, "--output-dir", &work.path().display().to_string()], "");
    let tgz = work.path().join(format!("experiment_{id}_model_def.tgz"));
    assert_eq!(tgz_paths(&tgz), ["lib", "lib/util.py", "train.py"]);

    // Listings: upstream's headers, our experiment in them.
    let list = det.ok(&["experiment", "list"], "");
    assert!(
        list.starts_with(
            "   ID | Owner   | Name    | Parent ID   | State   | Progress   | Started                  | Ended   | Resource Pool"
        ),
        "{list}"
    );
    assert!(list.lines().nth(2).unwrap_or_default().contains(&format!("{id} | admin   | cli-exp |             | PAUSED  |")), "{list}");
    let all = det.ok(&["e", "ls", "--all", "--csv"], "");
    assert!(all.starts_with("ID,Owner,Name,Parent ID,State,Progress,Started,Ended,Resource Pool,Archived\r\n"), "{all}");
    let described = det.ok(&["experiment", "describe", &id], "");
    assert!(described.starts_with("Experiment:\n   Experiment ID | State   | Progress   | Started"), "{described}");
    assert!(described.contains("\nTrials:\n") && described.contains("\nWorkloads:\n"), "{described}");
    let trials = det.ok(&["experiment", "list-trials", &id], "");
    // The paused experiment's trial exists from its creation, paused.
    let header: Vec<&str> = trials.lines().next().unwrap_or_default().split('|').map(str::trim).collect();
    assert_eq!(header, ["Trial ID", "State", "H-Params", "Started", "Ended", "# of Batches"], "{trials}");
    assert!(trials.lines().nth(2).is_some_and(|row| row.contains("| PAUSED ")), "{trials}");
    let ckpts = det.ok(&["experiment", "list-checkpoints", &id, "--best", "1"], "");
    assert!(ckpts.starts_with(" Trial ID   | # of Batches   | State   | Validation Metric   | UUID   | Resources   | Size"), "{ckpts}");

    // Lifecycle actions print upstream's lines and change the state.
    assert_eq!(det.ok(&["experiment", "activate", &id], ""), format!("Activated experiment {id}\n"));
    // Active; the loop shows it QUEUED once it has queued the trial (no agent here).
    let state = describe_json(&det, &id)["state"].as_str().unwrap_or_default().to_owned();
    assert!(state == "STATE_ACTIVE" || state == "STATE_QUEUED", "{state}");
    assert_eq!(det.ok(&["experiment", "pause", &id], ""), format!("Paused experiment {id}\n"));
    assert_eq!(det.ok(&["experiment", "label", "add", &id, "nightly"], ""), format!("Added label 'nightly' to experiment {id}\n"));
    det.ok(&["experiment", "label", "add", &id, "gpu"], "");
    assert_eq!(describe_json(&det, &id)["labels"], serde_json::json!(["nightly", "gpu"]));
    assert_eq!(det.ok(&["experiment", "label", "remove", &id, "nightly"], ""), format!("Removed label 'nightly' from experiment {id}\n"));
    assert_eq!(describe_json(&det, &id)["labels"], serde_json::json!(["gpu"]));
    assert_eq!(det.ok(&["experiment", "kill", &id], ""), format!("Killed experiment {id}\n"));
    let state = describe_json(&det, &id)["state"].as_str().unwrap_or_default().to_owned();
    assert!(state == "STATE_CANCELED" || state == "STATE_STOPPING_KILLED", "{state}");
    // `wait` exits non-zero unless the experiment completed.
    let err = det.fails(&["experiment", "wait", &id, "--polling-interval", "0"], "", &[]);
    assert!(err.contains("ended in state CANCELED"), "{err}");
    assert_eq!(det.ok(&["experiment", "archive", &id], ""), format!("Archived experiment {id}\n"));
    assert!(!det.ok(&["experiment", "list"], "").contains("cli-exp"));
    assert!(det.ok(&["experiment", "list", "--all"], "").contains("| True"));
    assert_eq!(det.ok(&["experiment", "unarchive", &id], ""), format!("Unarchived experiment {id}\n"));
    assert!(det.ok(&["experiment", "delete", &id], "n\n").ends_with("wish to proceed? [y/n]: Aborting experiment deletion.\n"));
    assert_eq!(det.ok(&["experiment", "delete", &id, "--yes"], ""), format!("Deletion of experiment {id} is in progress\n"));

    // Errors are one line each.
    let err = det.fails(&["experiment", "describe", "999"], "", &[]);
    assert!(err.contains("not found"), "{err}");
    det.fails(&["experiment", "pause", "999"], "", &[]);
    let missing = work.path().join("nope").display().to_string();
    let err = det.fails(&["experiment", "create", &cfg, &missing], "", &[]);
    assert!(err.contains("doesn't exist"), "{err}");
    let bad = work.path().join("bad.yaml");
    std::fs::write(&bad, "name: [unclosed\n").expect("bad yaml");
    let err = det.fails(&["experiment", "create", &bad.display().to_string(), &ctx_arg], "", &[]);
    assert!(err.contains("invalid experiment config file"), "{err}");
    let err = det.fails(&["experiment", "create", &work.path().join("none.yaml").display().to_string(), &ctx_arg], "", &[]);
    assert!(err.contains("cannot read experiment config file"), "{err}");
    let err = det.fails(&["trial", "describe", "424242"], "", &[]);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn unreachable_master_fails_experiment_commands_cleanly() {
    let det = Det::new("http://127.0.0.1:1");
    let err = det.fails(&["experiment", "list"], "", &[]);
    assert!(err.contains("cannot reach the master"), "{err}");
    let err = det.fails(&["slot", "list"], "", &[]);
    assert!(err.contains("cannot reach the master"), "{err}");
}
