//! `det preview-search` against a real master: the plan of the iris adaptive search, a grid's one
//! trial per point, and a bad config's field-named error.

use serde_json::Value;

use super::{Det, Master};

const ADAPTIVE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/iris/adaptive.yaml");

#[test]
fn preview_search_against_a_real_master() {
    let master = Master::start();
    let det = Det::new(&master.url);
    det.ok(&["user", "login", "admin"], "\n");

    let out = det.ok(&["preview-search", ADAPTIVE], "");
    assert!(out.starts_with("Using search configuration:\n"), "{out}");
    assert!(out.contains("name: adaptive_asha\n") && out.contains("max_trials: 6\n"), "{out}");
    assert!(out.contains("Trials | Training Time"), "{out}");
    assert!(out.contains("| train for 5000 batches"), "the longest rung trains to max_length: {out}");

    let json: Value = serde_json::from_str(&det.ok(&["preview-search", ADAPTIVE, "--json"], "")).expect("json");
    let trials = json["summary"]["trials"].as_array().expect("trials");
    let total: i64 = trials.iter().map(|t| t["count"].as_i64().expect("count")).sum();
    assert_eq!(total, 6, "every planned trial is counted once: {json}");
    assert!(trials.len() > 1, "ASHA stops some trials at shorter rungs: {json}");

    let work = tempfile::tempdir().expect("work dir");
    let grid = work.path().join("grid.yaml");
    std::fs::write(
        &grid,
        "entrypoint: python3 train.py\nsearcher: {name: grid, metric: loss}\n\
         hyperparameters: {lr: {type: double, minval: 0.1, maxval: 0.3, count: 3}, bs: {type: categorical, vals: [8, 16]}}\n",
    )
    .expect("grid config");
    let out = det.ok(&["preview-search", &grid.display().to_string()], "");
    assert!(out.contains("6 | train to completion"), "{out}");

    let bad = work.path().join("bad.yaml");
    std::fs::write(&bad, "entrypoint: python3 train.py\nsearcher: {name: random, metric: loss, max_trials: -2}\n").expect("bad config");
    let err = det.fails(&["preview-search", &bad.display().to_string()], "", &[]);
    assert!(err.contains("searcher.max_trials"), "{err}");

    let none = work.path().join("none.yaml");
    std::fs::write(&none, "entrypoint: python3 train.py\n").expect("config");
    let err = det.fails(&["preview-search", &none.display().to_string()], "", &[]);
    assert!(err.contains("Missing 'searcher' config section"), "{err}");
}
