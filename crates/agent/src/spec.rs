//! What to run ([`TaskSpec`]) and how it becomes a command line and an environment: the variables
//! the runtime owns, the interpreter on `PATH`, and `startup-hook.sh`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::devices::{Device, DeviceType};
use crate::task_user::TaskAccount;
use crate::work_files::WorkFile;
pub use resolute_api::agent_protocol::TaskDir;

/// The file in the work dir that is sourced before the entrypoint, so its exports apply.
pub const STARTUP_HOOK: &str = "startup-hook.sh";
pub use resolute_api::agent_protocol::DEFAULTS_STARTUP_HOOK;
/// The hooks a work dir may hold, in the order they are sourced.
pub const STARTUP_HOOKS: [&str; 2] = [DEFAULTS_STARTUP_HOOK, STARTUP_HOOK];

/// Variables passed through from the agent's own environment (a trailing `*` matches a prefix).
/// Everything else a task sees comes from its spec, as in a container: the agent's own settings
/// and secrets do not leak into tasks.
pub const DEFAULT_INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
];

/// A task to run as a local process.
#[derive(Clone)]
pub struct TaskSpec {
    pub task_id: String,
    pub allocation_id: String,
    pub task_type: TaskType,
    /// The container id the master assigned (upstream `StartContainer.Container.id`); a fresh
    /// UUID when `None`.
    pub container_id: Option<String>,
    /// The slots assigned to this task; their ids become `DET_SLOT_IDS`.
    pub devices: Vec<Device>,
    /// A tar.gz of the model definition, extracted into the work dir.
    pub work_dir_archive: Option<Vec<u8>>,
    pub entrypoint: Entrypoint,
    /// Variables from the master (`DET_*`) and the user; the runtime's own variables win.
    pub env: BTreeMap<String, String>,
    /// Overrides the agent's `python` for this task.
    pub python: Option<PathBuf>,
    /// Variables that each get a free host port (`NAME=<port>`), chosen when the task starts.
    pub port_env: Vec<String>,
    /// Written into the work dir after the archive.
    pub files: Vec<WorkFile>,
    /// The account to switch to (an agent running as root); `None`: the agent's own.
    pub run_as: Option<TaskAccount>,
    /// Directories outside the work dir the task writes into, prepared for `run_as`.
    pub task_dirs: Vec<TaskDir>,
}

impl fmt::Debug for TaskSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSpec")
            .field("task_id", &self.task_id)
            .field("allocation_id", &self.allocation_id)
            .field("task_type", &self.task_type)
            .field("container_id", &self.container_id)
            .field("devices", &self.devices)
            .field("work_dir_archive_bytes", &self.work_dir_archive.as_ref().map(Vec::len))
            .field("entrypoint", &self.entrypoint)
            .field("env_names", &self.env.keys().collect::<Vec<_>>())
            .field("python", &self.python)
            .field("port_env", &self.port_env)
            .field("files", &self.files)
            .field("run_as", &self.run_as)
            .field("task_dirs", &self.task_dirs)
            .finish()
    }
}

/// The command a task runs, as upstream's `entrypoint`: a list is an argv, a string is run with `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Entrypoint {
    Argv(Vec<String>),
    Shell(String),
}

/// Upstream task types (`DET_TASK_TYPE`), as the master names them.
pub use resolute_api::task_type::TaskType;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("the entrypoint is empty; give a command (a string) or an argv (a non-empty list)")]
    EmptyEntrypoint,
    #[error("python interpreter {python:?} not found{where_}; set `python` in the agent config to an interpreter path")]
    PythonNotFound { python: PathBuf, where_: String },
    #[error("environment variable name {0:?} is invalid: it must be non-empty and contain no '=' or NUL")]
    InvalidEnvName(String),
    #[error("environment variable {0} contains a NUL byte")]
    InvalidEnvValue(String),
}

/// The argv to exec: the entrypoint, wrapped so that the work dir's startup hooks (`hooks`, paths
/// relative to it, in order) are sourced first (exports in a hook then reach the entrypoint, as
/// upstream's `entrypoint.sh`).
pub fn command_line(entrypoint: &Entrypoint, hooks: &[&str]) -> Result<Vec<String>, SpecError> {
    let argv = match entrypoint {
        Entrypoint::Argv(argv) if argv.is_empty() => return Err(SpecError::EmptyEntrypoint),
        Entrypoint::Argv(argv) => argv.clone(),
        Entrypoint::Shell(command) if command.trim().is_empty() => return Err(SpecError::EmptyEntrypoint),
        Entrypoint::Shell(command) => vec!["sh".to_string(), "-c".to_string(), command.clone()],
    };
    if hooks.is_empty() {
        return Ok(argv);
    }
    let sourced: Vec<String> = hooks.iter().map(|h| format!(". ./{h}")).collect();
    let script = format!("{} && exec \"$@\"", sourced.join(" && "));
    let mut wrapped = vec!["sh".to_string(), "-c".to_string(), script, "sh".to_string()];
    wrapped.extend(argv);
    Ok(wrapped)
}

/// Finds the interpreter: a path (made absolute) is taken as is, a bare name is looked up on `path_var`.
pub fn resolve_python(python: &Path, path_var: Option<&OsStr>) -> Result<PathBuf, SpecError> {
    if python.components().count() > 1 {
        let absolute = crate::config::absolute(python);
        return if absolute.is_file() {
            Ok(absolute)
        } else {
            Err(SpecError::PythonNotFound { python: python.to_path_buf(), where_: String::new() })
        };
    }
    let path_var = path_var.unwrap_or_default();
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(python))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| SpecError::PythonNotFound {
            python: python.to_path_buf(),
            where_: format!(" on PATH {}", path_var.to_string_lossy()),
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The facts about this agent and this launch that the environment is built from.
#[derive(Debug, Clone)]
pub(crate) struct LaunchContext<'a> {
    pub agent_id: &'a str,
    pub container_id: &'a str,
    /// The resolved interpreter.
    pub python: &'a Path,
    /// `(name, value)` pairs from the agent's environment that tasks inherit.
    pub inherited: Vec<(String, String)>,
}

/// The agent's environment variables whose names match `patterns` (see [`DEFAULT_INHERITED_ENV`]).
pub(crate) fn inherited_env(patterns: &[String]) -> Vec<(String, String)> {
    let matches = |name: &str| {
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == p,
        })
    };
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| matches(name))
        .collect()
}

/// The complete environment of the task process.
pub(crate) fn environment(spec: &TaskSpec, ctx: &LaunchContext<'_>) -> Result<BTreeMap<String, String>, SpecError> {
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(SpecError::InvalidEnvName(name.clone()));
        }
        if value.contains('\0') {
            return Err(SpecError::InvalidEnvValue(name.clone()));
        }
    }
    let mut env: BTreeMap<String, String> = ctx.inherited.iter().cloned().collect();
    env.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));

    // Filled in when the master did not send them, so a spec is self-describing.
    let python = ctx.python.to_string_lossy().into_owned();
    for (name, value) in [
        ("DET_TASK_ID", spec.task_id.as_str()),
        ("DET_ALLOCATION_ID", spec.allocation_id.as_str()),
        ("DET_TASK_TYPE", spec.task_type.env_name()),
        ("DET_RESOURCES_ID", ctx.container_id),
        ("DET_PYTHON_EXECUTABLE", python.as_str()),
        // CUDA numbers GPUs fastest-first by default; nvidia-smi indexes (our slot ids) follow the bus.
        ("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
    ] {
        env.entry(name.to_string()).or_insert_with(|| value.to_string());
    }

    // Owned by the runtime: it alone knows the agent, the container and the assigned slots.
    let slot_ids: Vec<u32> = spec.devices.iter().map(|d| d.id).collect();
    let cuda: Vec<String> = spec.devices.iter().filter(|d| d.device_type == DeviceType::Cuda).map(|d| d.id.to_string()).collect();
    env.insert("DET_AGENT_ID".to_string(), ctx.agent_id.to_string());
    env.insert("DET_CONTAINER_ID".to_string(), ctx.container_id.to_string());
    env.insert("DET_SLOT_IDS".to_string(), serde_json::to_string(&slot_ids).unwrap_or_else(|_| "[]".to_string()));
    env.insert("CUDA_VISIBLE_DEVICES".to_string(), cuda.join(","));
    env.insert("PYTHONUNBUFFERED".to_string(), "1".to_string());
    let path = prepend_python_dir(env.get("PATH").map(String::as_str), ctx.python);
    env.insert("PATH".to_string(), path);
    Ok(env)
}

/// `PATH` with the interpreter's directory first, so `python3` (and `pip` of a venv) resolve to it.
fn prepend_python_dir(path: Option<&str>, python: &Path) -> String {
    let base = path.filter(|p| !p.is_empty()).unwrap_or("/usr/local/bin:/usr/bin:/bin");
    let Some(dir) = python.parent().map(|d| d.to_string_lossy().into_owned()).filter(|d| !d.is_empty()) else {
        return base.to_string();
    };
    if base.split(':').next() == Some(dir.as_str()) { base.to_string() } else { format!("{dir}:{base}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(devices: Vec<Device>, env: &[(&str, &str)]) -> TaskSpec {
        TaskSpec {
            task_id: "t1".into(),
            allocation_id: "t1.a1".into(),
            task_type: TaskType::Trial,
            container_id: None,
            devices,
            work_dir_archive: None,
            entrypoint: Entrypoint::Shell("true".into()),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            python: None,
            port_env: Vec::new(),
            files: Vec::new(),
            run_as: None,
            task_dirs: Vec::new(),
        }
    }

    fn ctx() -> LaunchContext<'static> {
        LaunchContext {
            agent_id: "agent-1",
            container_id: "c-1",
            python: Path::new("/venv/bin/python3"),
            inherited: vec![("PATH".into(), "/usr/bin:/bin".into()), ("HOME".into(), "/home/u".into())],
        }
    }

    fn gpu(id: u32) -> Device {
        Device { id, brand: "GPU".into(), uuid: format!("GPU-{id}"), device_type: DeviceType::Cuda }
    }

    #[test]
    fn runtime_variables_win_over_the_spec_and_defaults_do_not() {
        let env =
            environment(&spec(vec![gpu(0), gpu(3)], &[("DET_AGENT_ID", "spoof"), ("DET_TASK_TYPE", "COMMAND"), ("FOO", "bar")]), &ctx())
                .unwrap();
        assert_eq!(env["DET_AGENT_ID"], "agent-1");
        assert_eq!(env["DET_SLOT_IDS"], "[0,3]");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "0,3");
        assert_eq!(env["DET_TASK_TYPE"], "COMMAND");
        assert_eq!(env["DET_TASK_ID"], "t1");
        assert_eq!(env["DET_RESOURCES_ID"], "c-1");
        assert_eq!(env["PYTHONUNBUFFERED"], "1");
        assert_eq!(env["FOO"], "bar");
        assert_eq!(env["HOME"], "/home/u");
        assert_eq!(env["PATH"], "/venv/bin:/usr/bin:/bin");
    }

    #[test]
    fn cpu_tasks_see_no_gpus() {
        let cpu = Device { id: 0, brand: "cpu".into(), uuid: "x".into(), device_type: DeviceType::Cpu };
        let env = environment(&spec(vec![cpu], &[]), &ctx()).unwrap();
        assert_eq!(env["DET_SLOT_IDS"], "[0]");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "");
        assert_eq!(environment(&spec(vec![], &[]), &ctx()).unwrap()["DET_SLOT_IDS"], "[]");
    }

    #[test]
    fn invalid_names_are_refused() {
        assert!(matches!(environment(&spec(vec![], &[("A=B", "x")]), &ctx()), Err(SpecError::InvalidEnvName(_))));
        assert!(matches!(environment(&spec(vec![], &[("A", "x\0")]), &ctx()), Err(SpecError::InvalidEnvValue(_))));
    }

    #[test]
    fn command_lines() {
        assert_eq!(command_line(&Entrypoint::Shell("echo hi".into()), &[]).unwrap(), ["sh", "-c", "echo hi"]);
        assert_eq!(
            command_line(&Entrypoint::Argv(vec!["python3".into(), "train.py".into()]), &[STARTUP_HOOK]).unwrap(),
            ["sh", "-c", ". ./startup-hook.sh && exec \"$@\"", "sh", "python3", "train.py"]
        );
        assert_eq!(
            command_line(&Entrypoint::Shell("true".into()), &STARTUP_HOOKS).unwrap(),
            ["sh", "-c", ". ./.det/startup-hook-defaults.sh && . ./startup-hook.sh && exec \"$@\"", "sh", "sh", "-c", "true"]
        );
        assert!(matches!(command_line(&Entrypoint::Argv(vec![]), &[]), Err(SpecError::EmptyEntrypoint)));
        assert!(matches!(command_line(&Entrypoint::Shell(" ".into()), &[]), Err(SpecError::EmptyEntrypoint)));
    }

    #[test]
    fn python_is_found_on_path_or_refused() {
        let sh = resolve_python(Path::new("sh"), Some(OsStr::new("/nonexistent:/bin:/usr/bin"))).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"));
        assert!(matches!(resolve_python(Path::new("no-such-python"), Some(OsStr::new("/bin"))), Err(SpecError::PythonNotFound { .. })));
        assert!(matches!(resolve_python(Path::new("/no/such/python3"), None), Err(SpecError::PythonNotFound { .. })));
    }
}
