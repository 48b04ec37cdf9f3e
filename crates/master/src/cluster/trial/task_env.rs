//! The environment a trial process gets (upstream-determined.md §4.2) and the harness's
//! `trial.json` (upstream's `determined._info.TrialInfo`): pure, from the facts the loop holds,
//! so the contract with the harness is tested without starting anything. The agent only writes
//! `trial.json` where the harness looks; what a trial is stays here.

use std::collections::BTreeMap;

use resolute_api::agent_protocol::{StartTask, TaskDir, TaskEntrypoint};
use resolute_expconf::ExperimentConfig;
use serde_json::{Value, json};

use crate::domain::TaskType;

/// What a trial launch needs to know.
#[derive(Clone, Debug)]
pub struct TrialLaunch<'a> {
    pub cluster_id: &'a str,
    pub master_id: &'a str,
    pub experiment_id: i32,
    pub trial_id: i32,
    pub trial_run_id: i32,
    pub trial_seed: i64,
    pub hparams: &'a Value,
    pub config: &'a ExperimentConfig,
    /// The fully defaulted config as stored (`DET_EXPERIMENT_CONFIG`).
    pub config_json: &'a Value,
    pub task_id: &'a str,
    pub allocation_id: &'a str,
    pub container_id: &'a str,
    pub session_token: &'a str,
    /// The experiment owner's username (`DET_USER`).
    pub user: &'a str,
    pub latest_checkpoint: Option<&'a str>,
    pub steps_completed: i64,
    pub slot_ids: Vec<u32>,
    /// `cpu` or `cuda`, for the per-device `environment_variables`.
    pub device_type: &'a str,
    /// base64 of the model definition tar.gz.
    pub model_definition_b64: String,
}

/// The harness's launch layer reads the entrypoint from `DET_EXPERIMENT_CONFIG` (command string,
/// argv list or legacy `module:Class`) and runs it, as upstream's container entrypoint does.
pub const TRIAL_ENTRYPOINT: [&str; 3] = ["python3", "-m", "determined.exec.launch"];

/// Upstream's `DET_PYTHON_EXECUTABLE`, honoured per experiment through `environment_variables`.
const PYTHON_VAR: &str = "DET_PYTHON_EXECUTABLE";

/// The harness info file upstream's entrypoint writes for a trial (`TrialInfo._to_file`).
pub const TRIAL_INFO_FILE: &str = "trial.json";

/// The stored config cannot be handed to the harness.
#[derive(Debug, thiserror::Error)]
#[error("cannot map the experiment's checkpoint_storage for the harness: {0}")]
pub struct TaskEnvError(#[from] resolute_storage::StorageError);

pub fn trial_start_task(l: &TrialLaunch<'_>) -> Result<StartTask, TaskEnvError> {
    let mut env = BTreeMap::new();
    // The user's variables first: ours win on a clash, as upstream's container env does.
    for entry in l.config.environment.environment_variables.for_device(l.device_type) {
        if let Some((k, v)) = entry.split_once('=') {
            env.insert(k.to_owned(), v.to_owned());
        }
    }
    let python = l.config.environment.python.clone().or_else(|| env.get(PYTHON_VAR).cloned());
    let set = |env: &mut BTreeMap<String, String>, k: &str, v: String| {
        env.insert(k.to_owned(), v);
    };
    set(&mut env, "DET_CLUSTER_ID", l.cluster_id.to_owned());
    set(&mut env, "DET_MASTER_ID", l.master_id.to_owned());
    set(&mut env, "DET_TASK_ID", l.task_id.to_owned());
    set(&mut env, "DET_ALLOCATION_ID", l.allocation_id.to_owned());
    set(&mut env, "DET_RESOURCES_ID", l.container_id.to_owned());
    set(&mut env, "DET_CONTAINER_ID", l.container_id.to_owned());
    set(&mut env, "DET_SESSION_TOKEN", l.session_token.to_owned());
    set(&mut env, "DET_USER", l.user.to_owned());
    set(&mut env, "DET_TASK_TYPE", TaskType::Trial.env_name().to_owned());
    set(&mut env, "DET_RESOURCES_TYPE", "process".to_owned());
    set(&mut env, "DET_EXPERIMENT_ID", l.experiment_id.to_string());
    set(&mut env, "DET_TRIAL_ID", l.trial_id.to_string());
    set(&mut env, "DET_TRIAL_RUN_ID", l.trial_run_id.to_string());
    set(&mut env, "DET_TRIAL_SEED", l.trial_seed.to_string());
    set(&mut env, "DET_HPARAMS", l.hparams.to_string());
    let config = harness_config(l.config_json)?;
    set(&mut env, "DET_EXPERIMENT_CONFIG", config.to_string());
    set(&mut env, "DET_STEPS_COMPLETED", l.steps_completed.to_string());
    set(&mut env, "DET_TASK_LOGGING_METADATA", json!({"task_id": l.task_id, "allocation_id": l.allocation_id}).to_string());
    // No wheel to install: the agent's interpreter already has the harness.
    set(&mut env, "DET_SKIP_PIP_INSTALL", "1".to_owned());
    if let Some(uuid) = l.latest_checkpoint {
        set(&mut env, "DET_LATEST_CHECKPOINT", uuid.to_owned());
    }
    let trial_info = trial_info(l, config, &env);
    Ok(StartTask {
        container_id: l.container_id.to_owned(),
        task_id: l.task_id.to_owned(),
        allocation_id: l.allocation_id.to_owned(),
        task_type: TaskType::Trial.env_name().to_owned(),
        description: format!("Trial {} (Experiment {})", l.trial_id, l.experiment_id),
        slot_ids: l.slot_ids.clone(),
        entrypoint: TaskEntrypoint::Argv(TRIAL_ENTRYPOINT.iter().map(|s| (*s).to_owned()).collect()),
        env,
        work_dir_archive_b64: Some(l.model_definition_b64.clone()),
        work_dir_archive_stream: None,
        python,
        port_env: Vec::new(),
        ready_pattern: None,
        files: Vec::new(),
        harness_info: BTreeMap::from([(TRIAL_INFO_FILE.to_owned(), trial_info)]),
        // Set by the loop for every kind (`cluster/task_user.rs`).
        run_as: None,
        task_dirs: storage_dirs(l),
        rendezvous: None,
    })
}

/// Where a trial running as its owner's account must be able to write on the host: the
/// checkpoint storage root, shared by every user's trials (each checkpoint is a directory the
/// trial creates there), and its own TensorBoard directory, whose parents other trials share.
/// Nothing for storage that is not a host path (s3, …).
fn storage_dirs(l: &TrialLaunch<'_>) -> Vec<TaskDir> {
    let Ok(storage) = resolute_storage::StorageConfig::from_experiment_config(l.config_json) else { return Vec::new() };
    let mut dirs = Vec::new();
    if let Ok(root) = storage.root() {
        dirs.push(TaskDir { path: root.to_string_lossy().into_owned(), shared: true });
    }
    if let Ok(tensorboard) = storage.tensorboard_dir(l.cluster_id, l.experiment_id, l.trial_id) {
        dirs.push(TaskDir { path: tensorboard.to_string_lossy().into_owned(), shared: false });
    }
    dirs
}

/// The config as the harness must see it. Trials run as host processes, not in containers, so
/// `shared_fs` storage (upstream: `host_path` mounted into the container) becomes a `directory`
/// at the host path itself; where that is, is `resolute-storage`'s.
fn harness_config(stored: &Value) -> Result<Value, TaskEnvError> {
    let mut config = stored.clone();
    resolute_storage::rewrite_experiment_config(&mut config)?;
    Ok(config)
}

/// `trial.json`: the fields of upstream's `TrialInfo`, with the values `TrialInfo._from_env` would
/// read from the trial's environment.
fn trial_info(l: &TrialLaunch<'_>, config: Value, env: &BTreeMap<String, String>) -> Value {
    let debug = config.get("debug").and_then(Value::as_bool).unwrap_or(false);
    json!({
        "trial_id": l.trial_id,
        "experiment_id": l.experiment_id,
        "trial_seed": l.trial_seed,
        "hparams": l.hparams,
        "config": config,
        "steps_completed": l.steps_completed,
        "trial_run_id": l.trial_run_id,
        "debug": debug,
        "inter_node_network_interface": env.get("DET_INTER_NODE_NETWORK_INTERFACE"),
    })
}

#[cfg(test)]
mod tests {
    use resolute_expconf::{Defaults, parse_experiment_config};

    use super::*;

    #[test]
    fn trial_environment_follows_the_contract() {
        let yaml = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 10}\n\
                    checkpoint_storage: {type: shared_fs, host_path: /tmp, storage_path: runs}\n\
                    environment: {environment_variables: [FOO=bar, DET_TRIAL_ID=999, DET_PYTHON_EXECUTABLE=/venv/bin/python3, \
                    DET_INTER_NODE_NETWORK_INTERFACE=eth1]}\n";
        let config = parse_experiment_config(yaml, &Defaults::new(1)).unwrap().config;
        let config_json = config.to_json();
        let hparams = json!({"lr": 0.1, "opt": {"name": "sgd"}});
        let launch = TrialLaunch {
            cluster_id: "c",
            master_id: "m",
            experiment_id: 3,
            trial_id: 7,
            trial_run_id: 2,
            trial_seed: 42,
            hparams: &hparams,
            config: &config,
            config_json: &config_json,
            task_id: "3.abc",
            allocation_id: "3.abc.2",
            container_id: "ctr",
            session_token: "tok",
            user: "determined",
            latest_checkpoint: Some("uuid-1"),
            steps_completed: 50,
            slot_ids: vec![0],
            device_type: "cpu",
            model_definition_b64: "AAAA".into(),
        };
        let task = trial_start_task(&launch).unwrap();
        let env = &task.env;
        assert_eq!(env["FOO"], "bar");
        assert_eq!(env["DET_TRIAL_ID"], "7", "our variables win over the user's");
        assert_eq!(env["DET_TRIAL_RUN_ID"], "2");
        assert_eq!(env["DET_LATEST_CHECKPOINT"], "uuid-1");
        assert_eq!(env["DET_STEPS_COMPLETED"], "50");
        assert_eq!(serde_json::from_str::<Value>(&env["DET_HPARAMS"]).unwrap(), hparams);
        // The harness runs on the host: shared_fs storage is the host directory itself.
        let harness_config: Value = serde_json::from_str(&env["DET_EXPERIMENT_CONFIG"]).unwrap();
        let storage = &harness_config["checkpoint_storage"];
        assert_eq!((storage["type"].as_str(), storage["container_path"].as_str()), (Some("directory"), Some("/tmp/runs")));
        assert_eq!(storage.get("host_path"), None);
        let mut rest = harness_config.clone();
        rest["checkpoint_storage"] = config_json["checkpoint_storage"].clone();
        assert_eq!(rest, config_json, "only the storage is rewritten");
        assert_eq!(task.python.as_deref(), Some("/venv/bin/python3"));
        assert_eq!(task.entrypoint, TaskEntrypoint::Argv(vec!["python3".into(), "-m".into(), "determined.exec.launch".into()]));

        // trial.json holds exactly what upstream's TrialInfo(**json) takes.
        assert_eq!(task.harness_info.keys().collect::<Vec<_>>(), ["trial.json"]);
        assert_eq!(
            task.harness_info["trial.json"],
            json!({
                "trial_id": 7,
                "experiment_id": 3,
                "trial_seed": 42,
                "hparams": hparams,
                "config": harness_config,
                "steps_completed": 50,
                "trial_run_id": 2,
                "debug": false,
                "inter_node_network_interface": "eth1",
            })
        );
    }

    #[test]
    fn trial_info_follows_the_config() {
        let yaml = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss, max_length: 10}\n\
                    checkpoint_storage: {type: directory, container_path: /ckpt}\ndebug: true\n";
        let config = parse_experiment_config(yaml, &Defaults::new(1)).unwrap().config;
        let config_json = config.to_json();
        let hparams = json!({});
        let launch = |config_json: &Value| {
            trial_start_task(&TrialLaunch {
                cluster_id: "c",
                master_id: "m",
                experiment_id: 1,
                trial_id: 1,
                trial_run_id: 0,
                trial_seed: -5,
                hparams: &hparams,
                config: &config,
                config_json,
                task_id: "1.a",
                allocation_id: "1.a.0",
                container_id: "ctr",
                session_token: "tok",
                user: "u",
                latest_checkpoint: None,
                steps_completed: 0,
                slot_ids: vec![],
                device_type: "cpu",
                model_definition_b64: String::new(),
            })
        };
        let task = launch(&config_json).unwrap();
        let trial = &task.harness_info[TRIAL_INFO_FILE];
        assert_eq!((trial["debug"].as_bool(), trial["trial_seed"].as_i64()), (Some(true), Some(-5)));
        assert_eq!(trial["config"], config_json, "directory storage is handed over unchanged");
        assert_eq!(trial["inter_node_network_interface"], Value::Null);

        let mut outside = config_json.clone();
        outside["checkpoint_storage"] = json!({"type": "shared_fs", "host_path": "/h", "storage_path": "../x"});
        let err = launch(&outside).unwrap_err().to_string();
        assert!(err.contains("must be a subdirectory of host_path"), "{err}");
    }
}
