//! Behaviour a user submitting experiment configs would notice: the seed configs validate as
//! written, defaults match upstream, every error is reported at once with its path, and nothing
//! malformed panics.
//!
//! Fixtures `seed001_*` are the YAML blocks of the seed blog post 001 (const.yaml, the
//! distributed.yaml fragment, a notebook config, adaptive.yaml); `seed004_*` are the blocks of the
//! seed quickstart 004 (distributed fragment, adaptive hyperparameters, adaptive searcher). Seed 002
//! has no YAML blocks. Copied verbatim.

use resolute_expconf::{
    AshaMode, CheckpointPolicy, ConfigError, Defaults, Entrypoint, ExperimentConfig, Length, SearcherLength, SearcherMethod,
    StorageBackend, TimeBudget, WarningKind, check_fragment, merge_under, parse_experiment_config, validate_experiment_config,
    yaml_to_json,
};
use serde_json::{Value, json};

const SEED001_CONST: &str = include_str!("fixtures/seed001_const.yaml");
const SEED001_ADAPTIVE: &str = include_str!("fixtures/seed001_adaptive.yaml");
const SEED001_DISTRIBUTED: &str = include_str!("fixtures/seed001_distributed_fragment.yaml");
const SEED001_NOTEBOOK: &str = include_str!("fixtures/seed001_notebook_config.yaml");
const SEED004_DISTRIBUTED: &str = include_str!("fixtures/seed004_distributed_fragment.yaml");
const SEED004_HYPERPARAMETERS: &str = include_str!("fixtures/seed004_adaptive_hyperparameters.yaml");
const SEED004_SEARCHER: &str = include_str!("fixtures/seed004_adaptive_searcher.yaml");

const MINIMAL: &str = "entrypoint: python3 train.py\nsearcher:\n  name: single\n  metric: validation_loss\n";

/// A master with shared_fs checkpoint storage, as `det deploy local` configures one.
fn master() -> Defaults {
    Defaults::new(20250319).with_checkpoint_storage(json!({"type": "shared_fs", "host_path": "/tmp/determined-checkpoint"}))
}

fn parse(yaml: &str) -> ExperimentConfig {
    match parse_experiment_config(yaml, &master()) {
        Ok(parsed) => parsed.config,
        Err(errors) => panic!("config should validate, got: {errors:#?}"),
    }
}

fn errors(yaml: &str) -> Vec<String> {
    match parse_experiment_config(yaml, &master()) {
        Ok(parsed) => panic!("config should be rejected, got {:?}", parsed.config),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

/// Lays a fragment over a base config, the fragment winning (as the quickstart describes
/// distributed.yaml: const.yaml plus one field).
fn overlay(fragment: &str, base: &str) -> Value {
    let mut tree = yaml_to_json(fragment).unwrap();
    merge_under(&mut tree, &yaml_to_json(base).unwrap());
    tree
}

#[test]
fn seed_const_config_validates_as_written() {
    let parsed = parse_experiment_config(SEED001_CONST, &master()).unwrap();
    let config = parsed.config;
    assert_eq!(config.name, "iris_const_testuser1");
    assert_eq!(config.entrypoint.legacy_trial_class(), Some("model_def:IrisTrial"));
    assert_eq!(config.searcher.method, SearcherMethod::Single);
    assert_eq!(config.searcher.max_length, Some(SearcherLength::Length(Length::batches(5000))));
    assert!(!config.smaller_is_better());
    assert_eq!(config.searcher_metric(), "val_categorical_accuracy");
    assert_eq!(config.min_validation_period, Length::batches(1000));
    assert_eq!(config.bind_mounts.len(), 1);
    assert!(config.bind_mounts[0].read_only);
    // Legacy and deprecated fields warn; nothing in the seed is unknown.
    assert!(parsed.warnings.iter().all(|w| w.kind != WarningKind::UnknownField), "{:?}", parsed.warnings);
    let paths: Vec<&str> = parsed.warnings.iter().map(|w| w.path.as_str()).collect();
    assert!(paths.contains(&"entrypoint") && paths.contains(&"searcher.max_length"), "{paths:?}");
}

#[test]
fn seed_adaptive_config_validates_as_written() {
    let parsed = parse_experiment_config(SEED001_ADAPTIVE, &master()).unwrap();
    let SearcherMethod::AdaptiveAsha(asha) = &parsed.config.searcher.method else { panic!("adaptive_asha expected") };
    assert_eq!((asha.max_trials, asha.mode, asha.max_rungs), (6, AshaMode::Standard, 5));
    assert_eq!(parsed.config.searcher.time_budget(), Some(TimeBudget { time_metric: "batches".into(), max_time: 5000 }));
    assert!(parsed.warnings.iter().all(|w| w.kind != WarningKind::UnknownField), "{:?}", parsed.warnings);
}

#[test]
fn seed_fragments_are_well_formed() {
    for (name, fragment) in [
        ("seed001 distributed", SEED001_DISTRIBUTED),
        ("seed004 distributed", SEED004_DISTRIBUTED),
        ("seed004 hyperparameters", SEED004_HYPERPARAMETERS),
        ("seed004 searcher", SEED004_SEARCHER),
        ("seed001 const", SEED001_CONST),
        ("seed001 adaptive", SEED001_ADAPTIVE),
    ] {
        let warnings = check_fragment(fragment).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert!(warnings.iter().all(|w| w.kind != WarningKind::UnknownField), "{name}: {warnings:?}");
    }
}

#[test]
fn seed_notebook_config_is_well_formed_but_is_not_an_experiment() {
    // A notebook config: its fields are well-formed, `idle_timeout` is not an experiment field...
    let warnings = check_fragment(SEED001_NOTEBOOK).unwrap();
    assert_eq!(warnings.iter().map(|w| w.path.as_str()).collect::<Vec<_>>(), ["idle_timeout"]);
    // ...and submitted as an experiment, `resources.slots` is refused as upstream refuses it.
    let errors = errors(SEED001_NOTEBOOK);
    assert!(errors.iter().any(|e| e.starts_with("resources.slots: experiments use resources.slots_per_trial")), "{errors:?}");
}

#[test]
fn seed_fragments_complete_their_configs() {
    for (fragment, slots) in [(SEED001_DISTRIBUTED, 2), (SEED004_DISTRIBUTED, 8)] {
        let config = validate_experiment_config(overlay(fragment, SEED001_CONST), &master()).unwrap().config;
        assert_eq!(config.resources.slots_per_trial, slots);
    }
    let searcher_and_hps = overlay(SEED004_SEARCHER, SEED004_HYPERPARAMETERS);
    let tree = overlay("entrypoint: python3 train.py\n", &serde_json::to_string(&searcher_and_hps).unwrap());
    let config = validate_experiment_config(tree, &master()).unwrap().config;
    let SearcherMethod::AdaptiveAsha(asha) = &config.searcher.method else { panic!("adaptive_asha expected") };
    assert_eq!(asha.max_trials, 16);
    assert_eq!(config.hyperparameters.0.len(), 6);
}

#[test]
fn defaults_are_filled_as_upstream() {
    let config = parse(MINIMAL);
    assert_eq!(config.name, "Experiment");
    assert_eq!(config.max_restarts, 5);
    assert_eq!(config.checkpoint_policy, CheckpointPolicy::Best);
    assert_eq!(config.resources.slots_per_trial, 1);
    assert_eq!(config.resources.weight, 1.0);
    assert_eq!(config.scheduling_unit, 100);
    assert_eq!(config.records_per_epoch, 0);
    assert!(config.smaller_is_better());
    assert_eq!(config.reproducibility.experiment_seed, 20250319);
    assert_eq!(config.min_validation_period, Length::batches(0));
    let storage = &config.checkpoint_storage;
    assert_eq!((storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest), (0, 1, 1));
    assert!(matches!(&storage.backend, StorageBackend::SharedFs { propagation, .. } if propagation == "rprivate"));

    let json = config.to_json();
    assert_eq!(json["checkpoint_policy"], json!("best"));
    assert_eq!(
        json["searcher"],
        json!({"name": "single", "metric": "validation_loss", "smaller_is_better": true,
        "max_length": null, "source_trial_id": null, "source_checkpoint_uuid": null})
    );
    assert_eq!(json["checkpoint_storage"]["save_trial_latest"], json!(1));
    assert_eq!(json["min_checkpoint_period"], json!({"batches": 0}));
    assert_eq!(json["entrypoint"], json!("python3 train.py"));
    assert_eq!(json["hyperparameters"], json!({}));

    let random = parse("entrypoint: [python3, train.py]\nsearcher: {name: random, metric: loss, max_trials: 8}\n");
    assert_eq!(random.searcher.method, SearcherMethod::Random { max_trials: 8, max_concurrent_trials: 16 });
    assert_eq!(random.entrypoint, Entrypoint::Argv(vec!["python3".into(), "train.py".into()]));
}

#[test]
fn every_error_is_reported_at_once_with_its_path() {
    let yaml = "
entrypoint: python3 train.py
hyperparameters:
  lr: {type: double, minval: 0.5, maxval: 0.1}
searcher:
  name: single
  metric: ''
resources:
  slots_per_trial: -1
";
    let errors = match parse_experiment_config(yaml, &master()) {
        Err(errors) => errors,
        Ok(_) => panic!("must fail"),
    };
    let paths: Vec<&str> = errors.iter().map(ConfigError::path).collect();
    assert_eq!(paths, ["hyperparameters.lr.minval", "searcher.metric", "resources.slots_per_trial"]);
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "hyperparameters.lr.minval: minval must be less than maxval (0.1) (found 0.5)",
            "searcher.metric: must not be empty (found \"\")",
            "resources.slots_per_trial: found -1, expected an integer >= 0",
        ]
    );
}

/// Seed 002: "`metric` - defaults to val_loss". Accepted, stored filled in, and the user is told.
#[test]
fn a_missing_searcher_metric_defaults_to_val_loss_with_a_warning() {
    let parsed =
        parse_experiment_config("entrypoint: model_def:IrisTrial\nsearcher: {name: single, max_length: {batches: 10}}\n", &master())
            .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(parsed.config.searcher_metric(), "val_loss");
    let warning = parsed.warnings.iter().find(|w| w.path == "searcher.metric").expect("a warning for searcher.metric");
    assert_eq!(warning.kind, WarningKind::Defaulted);
    assert!(warning.to_string().contains("defaulting to val_loss"), "{warning}");
    assert_eq!(serde_json::to_value(&parsed.config).unwrap()["searcher"]["metric"], "val_loss");
}

#[test]
fn wrong_types_say_what_was_expected_and_found() {
    let errors = errors(&format!("{MINIMAL}resources:\n  slots_per_trial: two\nmax_restarts: [1]\ndebug: \"yes\"\n"));
    assert_eq!(
        errors,
        [
            "resources.slots_per_trial: expected an integer, found a string (\"two\")",
            "max_restarts: expected an integer, found a list",
            "debug: expected a boolean (true or false), found a string (\"yes\")",
        ]
    );
}

#[test]
fn unknown_keys_warn_with_their_paths() {
    let yaml = format!(
        "{MINIMAL}nmae: typo\nresources:\n  slot_per_trial: 2\nbind_mounts:\n  - {{host_path: /data, container_path: /data, readonly: true}}\n\
         environment:\n  imgae: x\nhyperparameters:\n  lr: {{type: const, val: 1, count: 3}}\n"
    );
    let parsed = parse_experiment_config(&yaml, &master()).unwrap();
    let mut paths: Vec<&str> = parsed.warnings.iter().filter(|w| w.kind == WarningKind::UnknownField).map(|w| w.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths, ["bind_mounts[0].readonly", "environment.imgae", "hyperparameters.lr.count", "nmae", "resources.slot_per_trial"]);
}

#[test]
fn legacy_bare_integer_max_length_is_accepted() {
    let config = parse("entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 1000}\n");
    assert_eq!(config.searcher.max_length, Some(SearcherLength::Units(1000)));
    assert_eq!(config.to_json()["searcher"]["max_length"], json!(1000));
    let errors = errors("entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: {batches: 0}}\n");
    assert_eq!(errors, ["searcher.max_length.batches: found 0, expected an integer >= 1"]);
}

#[test]
fn grid_trial_count_is_the_product_of_axes() {
    let config = parse(
        "entrypoint: python3 train.py
searcher: {name: grid, metric: loss}
hyperparameters:
  lr: {type: log, minval: -4, maxval: -1, count: 4}
  layers: {type: int, minval: 1, maxval: 2, count: 5}
  act: {type: categorical, vals: [relu, tanh, gelu]}
  batch: 32
",
    );
    // log 4 x int min(5, 2 distinct) x categorical 3 x const 1
    assert_eq!(config.grid_trial_count(), Ok(24));
    let errors = errors(
        "entrypoint: python3 train.py\nsearcher: {name: grid, metric: loss}\nhyperparameters:\n  lr: {type: double, minval: 0, maxval: 1}\n",
    );
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("hyperparameters.lr.count: required but missing (the grid searcher needs a count"), "{errors:?}");
}

#[test]
fn custom_searcher_is_rejected_clearly() {
    let errors = errors("entrypoint: python3 train.py\nsearcher: {name: custom, metric: loss, unit: batches}\n");
    assert_eq!(
        errors,
        [
            "searcher.name: the custom searcher is no longer supported (removed in Determined 0.38; use single, random, grid, adaptive_asha or async_halving)"
        ]
    );
}

#[test]
fn adaptive_asha_needs_a_training_budget() {
    let errors = errors("entrypoint: python3 train.py\nsearcher: {name: adaptive_asha, metric: loss, max_trials: 4}\n");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("searcher.max_time: required but missing"), "{errors:?}");
    let config =
        parse("entrypoint: x\nsearcher: {name: adaptive_asha, metric: loss, max_trials: 4, max_time: 100, time_metric: batches}\n");
    assert_eq!(config.searcher.time_budget(), Some(TimeBudget { time_metric: "batches".into(), max_time: 100 }));
}

#[test]
fn malformed_yaml_is_an_error_not_a_panic() {
    for text in ["searcher: [unclosed", "name: a\nname: b\n", "a:\n\t- tab", "{{{{", "\u{0}", "x: !!binary zz", "- - - -\n  - : :"] {
        if let Err(errors) = parse_experiment_config(text, &master()) {
            assert!(!errors.is_empty());
        }
    }
    let errors = errors("searcher: [unclosed");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("invalid YAML: "), "{errors:?}");
}

#[test]
fn master_defaults_sit_under_the_users_values() {
    let config = parse(&format!("{MINIMAL}checkpoint_storage:\n  save_trial_best: 3\n"));
    assert_eq!(config.checkpoint_storage.save_trial_best, 3);
    assert!(
        matches!(&config.checkpoint_storage.backend, StorageBackend::SharedFs { host_path, .. } if host_path == "/tmp/determined-checkpoint")
    );

    let config = parse(&format!("{MINIMAL}checkpoint_storage: {{type: s3, bucket: my-bucket}}\n"));
    assert!(matches!(&config.checkpoint_storage.backend, StorageBackend::S3 { bucket, .. } if bucket == "my-bucket"));

    let defaults = master().with_master_config(json!({"resources": {"priority": 42, "resource_pool": "default"}}));
    let config = parse_experiment_config(&format!("{MINIMAL}resources: {{priority: 7}}\n"), &defaults).unwrap().config;
    assert_eq!((config.resources.priority, config.resources.resource_pool.as_str()), (Some(7), "default"));
}

#[test]
fn a_defaulted_config_validates_back_to_itself() {
    for yaml in [SEED001_CONST, SEED001_ADAPTIVE, MINIMAL] {
        let config = parse(yaml);
        let again = validate_experiment_config(config.to_json(), &Defaults::new(1)).unwrap();
        assert_eq!(again.config, config);
    }
    // Defaults written out explicitly (as a stored config has them) raise no deprecation warnings.
    let stored = parse(MINIMAL).to_json();
    assert_eq!(validate_experiment_config(stored, &Defaults::new(1)).unwrap().warnings, []);
}

#[test]
fn any_value_in_any_field_is_reported_not_panicked_on() {
    fn paths(tree: &Value, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        if let Value::Object(map) = tree {
            for (key, value) in map {
                let mut path = prefix.clone();
                path.push(key.clone());
                out.push(path.clone());
                paths(value, path, out);
            }
        }
    }
    let base = parse(
        "entrypoint: python3 train.py\nsearcher: {name: adaptive_asha, metric: loss, max_trials: 4, max_time: 9, time_metric: batches}\n\
         hyperparameters: {lr: {type: log, minval: -3, maxval: -1}, g: {a: {type: int, minval: 1, maxval: 3}}}\n\
         bind_mounts: [{host_path: /a, container_path: /b}]\n",
    )
    .to_json();
    let mut all = Vec::new();
    paths(&base, Vec::new(), &mut all);
    let weird = [
        json!(null),
        json!(-1),
        json!(0),
        json!(1.5),
        json!(u64::MAX),
        json!(-1e300),
        json!("x"),
        json!(true),
        json!([]),
        json!({}),
        json!({"type": "int"}),
    ];
    for path in &all {
        for value in &weird {
            let mut tree = base.clone();
            let mut slot = &mut tree;
            for key in path {
                slot = &mut slot[key.as_str()];
            }
            *slot = value.clone();
            // Either outcome is fine; a panic fails the test.
            let _ = validate_experiment_config(tree, &master());
        }
    }
    assert!(all.len() > 50, "walked {} fields", all.len());
}
