//! The process a command-like task gets (upstream-determined.md §4.2's variables that are not
//! trial-specific): pure, from the facts the loop holds.

use std::collections::BTreeMap;

use resolute_api::agent_protocol::{StartTask, TaskEntrypoint, TaskFile};
use resolute_expconf::{TaskConfig, TaskEntrypoint as ConfigEntrypoint};
use serde_json::json;

use crate::domain::TaskType;
use crate::domain::task_service::ServiceSpec;

/// What a command launch needs to know.
pub struct CommandLaunch<'a> {
    pub cluster_id: &'a str,
    pub master_id: &'a str,
    pub task_type: TaskType,
    pub task_id: &'a str,
    pub allocation_id: &'a str,
    pub container_id: &'a str,
    pub session_token: &'a str,
    pub user: &'a str,
    pub config: &'a TaskConfig,
    pub slot_ids: Vec<u32>,
    pub device_type: &'a str,
    /// base64 of the context tar.gz, if the user uploaded one.
    pub context_b64: Option<String>,
    pub service: &'a ServiceSpec,
    pub files: &'a [TaskFile],
}

pub fn command_start_task(l: &CommandLaunch<'_>) -> StartTask {
    let mut env = BTreeMap::new();
    // The user's variables first: ours win on a clash, as upstream's container env does.
    for entry in l.config.environment_variables.for_device(l.device_type) {
        if let Some((k, v)) = entry.split_once('=') {
            env.insert(k.to_owned(), v.to_owned());
        }
    }
    let mut set = |k: &str, v: &str| {
        env.insert(k.to_owned(), v.to_owned());
    };
    set("DET_CLUSTER_ID", l.cluster_id);
    set("DET_MASTER_ID", l.master_id);
    set("DET_TASK_ID", l.task_id);
    set("DET_ALLOCATION_ID", l.allocation_id);
    set("DET_RESOURCES_ID", l.container_id);
    set("DET_CONTAINER_ID", l.container_id);
    set("DET_SESSION_TOKEN", l.session_token);
    set("DET_USER", l.user);
    set("DET_TASK_TYPE", l.task_type.env_name());
    set("DET_RESOURCES_TYPE", "process");
    set("DET_TASK_LOGGING_METADATA", &json!({"task_id": l.task_id, "allocation_id": l.allocation_id}).to_string());
    let entrypoint = match &l.config.entrypoint {
        Some(ConfigEntrypoint::Shell(s)) => TaskEntrypoint::Shell(s.clone()),
        // `det cmd run 'echo a; echo b'` sends one element holding a whole command line: a shell
        // runs it, as upstream's command entrypoint script does.
        Some(ConfigEntrypoint::Argv(argv)) if argv.len() == 1 => TaskEntrypoint::Shell(argv[0].clone()),
        Some(ConfigEntrypoint::Argv(argv)) => TaskEntrypoint::Argv(argv.clone()),
        None => TaskEntrypoint::Shell("true".to_owned()),
    };
    StartTask {
        container_id: l.container_id.to_owned(),
        task_id: l.task_id.to_owned(),
        allocation_id: l.allocation_id.to_owned(),
        task_type: l.task_type.env_name().to_owned(),
        description: l.config.description.clone(),
        slot_ids: l.slot_ids.clone(),
        entrypoint,
        env,
        work_dir_archive_b64: l.context_b64.clone(),
        work_dir_archive_stream: None,
        python: l.config.python.clone(),
        port_env: l.service.port_env.iter().cloned().collect(),
        ready_pattern: l.service.ready_pattern.clone(),
        files: l.files.to_vec(),
        harness_info: BTreeMap::new(),
        // Set by the loop for every kind (`cluster/task_user.rs`).
        run_as: None,
        task_dirs: Vec::new(),
        rendezvous: None,
    }
}

#[cfg(test)]
mod tests {
    use resolute_expconf::parse_task_config;
    use serde_json::json;

    use super::*;

    #[test]
    fn command_environment() {
        let config = parse_task_config(
            &json!({"entrypoint": "echo $FOO", "environment": {"environment_variables": ["FOO=bar", "DET_TASK_ID=spoof"]}}),
            1,
            "Command (x)",
            true,
        )
        .unwrap();
        let task = command_start_task(&CommandLaunch {
            cluster_id: "c",
            master_id: "m",
            task_type: TaskType::Command,
            task_id: "t-1",
            allocation_id: "t-1.1",
            container_id: "ctr",
            session_token: "tok",
            user: "alice",
            config: &config,
            slot_ids: vec![0],
            device_type: "cpu",
            context_b64: None,
            service: &ServiceSpec::default(),
            files: &[],
        });
        assert_eq!(task.env["FOO"], "bar");
        assert_eq!(task.env["DET_TASK_ID"], "t-1", "our variables win");
        assert_eq!(task.env["DET_TASK_TYPE"], "COMMAND");
        assert_eq!(task.task_type, "COMMAND");
        assert_eq!(task.entrypoint, TaskEntrypoint::Shell("echo $FOO".into()));
        assert_eq!(task.description, "Command (x)");
    }
}
