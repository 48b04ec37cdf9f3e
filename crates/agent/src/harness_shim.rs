//! Task info for the upstream harness without containers.
//!
//! The harness (`determined._info`) reads a task's cluster, trial, rendezvous and resources info
//! only from hard-coded `/run/determined/info/*.json` files, which upstream's container entrypoint
//! writes; without them `det.core.init()` silently runs off-cluster. Our tasks share the host, so
//! each task gets its own shim dir next to its work dir. The agent writes the files about where
//! the task runs (cluster, rendezvous, resources); the master sends the rest (a trial's
//! `trial.json`, `StartTask.harness_info`), which the agent writes as given without reading:
//!
//! ```text
//! <work_root>/<task_id>/<allocation_id>.harness/
//!     info/{cluster,trial,rendezvous,resources}.json
//!     python/sitecustomize.py      (first on the task's PYTHONPATH)
//! ```
//!
//! `sitecustomize.py` installs a lazy `sys.meta_path` hook: only when `determined._info` is
//! imported does it point the module's default paths at `info/`. It then runs whatever other
//! `sitecustomize` would have been loaded without it. It also stands in a no-op TensorBoard
//! writer when the task's Python has neither TensorFlow nor torch+tensorboard
//! (`harness_shim_tensorboard.py`), so `core.init()` works in a bare venv, and runs a one-process
//! legacy Trial itself when `torch.distributed.run` is missing (`harness_shim_torchrun.py`). For
//! multi-process launches it fixes torch 1.13's elastic launcher under Python 3.11 and gives each
//! process of an allocation its own pid server socket (`harness_shim_distributed.py`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::devices::{Device, DeviceType};

#[derive(Debug, thiserror::Error)]
pub enum ShimError {
    #[error("harness info dir {0} already exists; another task with the same allocation id ran here, remove it first")]
    AlreadyExists(PathBuf),
    #[error("cannot write the harness info in {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("harness_info file {name:?} is refused: {reason}")]
    InfoName { name: String, reason: &'static str },
}

/// The info files only the agent can write: the master may not send these.
pub const AGENT_INFO_FILES: [&str; 3] = ["cluster.json", "rendezvous.json", "resources.json"];

/// Where a task's shim lives, next to its work dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShimDir {
    pub root: PathBuf,
}

impl ShimDir {
    /// The shim dir for the work dir `<root>/<task_id>/<allocation_id>`.
    pub fn for_work_dir(work_dir: &Path) -> ShimDir {
        let mut name = work_dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".harness");
        ShimDir { root: work_dir.with_file_name(name) }
    }

    pub fn info_dir(&self) -> PathBuf {
        self.root.join("info")
    }

    pub fn python_dir(&self) -> PathBuf {
        self.root.join("python")
    }

    /// A pristine copy of the model definition, for the harness to put into checkpoints.
    pub fn model_dir(&self) -> PathBuf {
        self.root.join("model")
    }

    /// `PYTHONPATH` with the shim's `sitecustomize` first.
    pub fn python_path(&self, existing: Option<&str>) -> String {
        let dir = self.python_dir().to_string_lossy().into_owned();
        match existing.filter(|p| !p.is_empty()) {
            Some(rest) => format!("{dir}:{rest}"),
            None => dir,
        }
    }

    /// Writes the info files and `sitecustomize.py` for a task whose final environment is `env`:
    /// the agent's own (with `rendezvous`, see [`crate::rendezvous`]) and the master's
    /// `harness_info`.
    pub fn write(
        &self,
        env: &BTreeMap<String, String>,
        devices: &[Device],
        rendezvous: &Value,
        harness_info: &BTreeMap<String, Value>,
        model: Option<&[u8]>,
    ) -> Result<(), ShimError> {
        check_harness_info(harness_info)?;
        let mut files: Vec<(&str, &Value)> = Vec::new();
        let own = info_files(env, devices, rendezvous.clone());
        files.extend(own.iter().map(|(name, value)| (*name, value)));
        files.extend(harness_info.iter().map(|(name, value)| (name.as_str(), value)));
        if self.root.exists() {
            return Err(ShimError::AlreadyExists(self.root.clone()));
        }
        let mut result = self.write_files(&files);
        if let (Ok(()), Some(archive)) = (&result, model) {
            result = crate::workdir::extract_tar_gz(archive, &self.model_dir())
                .map(|_| ())
                .map_err(|e| ShimError::Write { path: self.model_dir(), source: std::io::Error::other(e.to_string()) });
        }
        if result.is_err() {
            let _ = self.remove();
        }
        result
    }

    fn write_files(&self, files: &[(&str, &Value)]) -> Result<(), ShimError> {
        use std::os::unix::fs::DirBuilderExt;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ShimError::Write { path, source }
        };
        if let Some(parent) = self.root.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        // cluster.json holds the task's session token.
        std::fs::DirBuilder::new().mode(0o700).create(&self.root).map_err(io(&self.root))?;
        for dir in [self.info_dir(), self.python_dir(), self.model_dir()] {
            std::fs::create_dir(&dir).map_err(io(&dir))?;
        }
        for (name, value) in files {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let path = self.info_dir().join(name);
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).map_err(io(&path))?;
            file.write_all(value.to_string().as_bytes()).map_err(io(&path))?;
        }
        let path = self.python_dir().join("sitecustomize.py");
        std::fs::write(&path, sitecustomize_source(&self.info_dir())).map_err(io(&path))
    }

    /// Deletes the shim dir (one already gone is fine), and its `<task_id>` parent when that is
    /// left empty, as the work dir's removal does.
    pub fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        if let Some(task_dir) = self.root.parent() {
            // Fails while the work dir or another allocation's dirs are still there; that is expected.
            let _ = std::fs::remove_dir(task_dir);
        }
        Ok(())
    }
}

/// Refuses `harness_info` names that are not a plain file name of the info dir or that name one
/// of the agent's own files.
pub fn check_harness_info(harness_info: &BTreeMap<String, Value>) -> Result<(), ShimError> {
    for name in harness_info.keys() {
        let reason = if name.is_empty() || name == "." || name == ".." {
            Some("it is not a file name")
        } else if name.contains(['/', '\0']) {
            Some("it must be a plain file name, without '/' or NUL")
        } else if AGENT_INFO_FILES.contains(&name.as_str()) {
            Some("the agent writes that file itself")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ShimError::InfoName { name: name.clone(), reason });
        }
    }
    Ok(())
}

/// The agent's info files, as the harness's `_to_file` methods would write them: `(file name, content)`.
pub fn info_files(env: &BTreeMap<String, String>, devices: &[Device], rendezvous: Value) -> Vec<(&'static str, Value)> {
    let var = |name: &str| env.get(name).cloned();
    let text = |name: &str| var(name).unwrap_or_default();
    let slot_ids: Vec<u32> = devices.iter().map(|d| d.id).collect();
    let cluster = json!({
        "master_url": text("DET_MASTER"),
        "cluster_id": text("DET_CLUSTER_ID"),
        "agent_id": text("DET_AGENT_ID"),
        "slot_ids": slot_ids,
        "task_id": text("DET_TASK_ID"),
        "allocation_id": text("DET_ALLOCATION_ID"),
        "session_token": text("DET_SESSION_TOKEN"),
        "task_type": text("DET_TASK_TYPE"),
        "master_cert_name": var("DET_MASTER_CERT_NAME"),
        "master_cert_file": var("DET_MASTER_CERT_FILE"),
        "latest_checkpoint": var("DET_LATEST_CHECKPOINT"),
    });
    let gpu_uuids: Vec<&str> = devices.iter().filter(|d| d.device_type == DeviceType::Cuda).map(|d| d.uuid.as_str()).collect();
    let resources = json!({ "gpu_uuids": gpu_uuids });
    vec![("cluster.json", cluster), ("rendezvous.json", rendezvous), ("resources.json", resources)]
}

/// The `sitecustomize.py` that redirects `determined._info` to `info_dir`.
pub fn sitecustomize_source(info_dir: &Path) -> String {
    // A JSON string is a valid Python string literal.
    let literal = |p: &Path| Value::String(p.to_string_lossy().into_owned()).to_string();
    let model_dir = info_dir.with_file_name("model");
    let source = SITECUSTOMIZE.replace("@INFO_DIR@", &literal(info_dir)).replace("@MODEL_DIR@", &literal(&model_dir));
    // The writer fallback goes before the chained sitecustomize runs (the last statement).
    match source.rfind(CHAIN_CALL) {
        Some(at) => format!("{}{TENSORBOARD_FALLBACK}{TORCHRUN_STANDIN}{DISTRIBUTED}\n{}", &source[..at], &source[at..]),
        None => format!("{source}{TENSORBOARD_FALLBACK}{TORCHRUN_STANDIN}{DISTRIBUTED}"),
    }
}

/// A stand-in TensorBoard writer when the trial's Python has neither TensorFlow nor
/// torch+tensorboard (see the file's comment).
const TENSORBOARD_FALLBACK: &str = include_str!("harness_shim_tensorboard.py");
/// Runs a one-process legacy Trial when `torch.distributed.run` cannot (no torch in the
/// trial's Python, e.g. a TensorFlow-only venv for a `TFKerasTrial`).
const TORCHRUN_STANDIN: &str = include_str!("harness_shim_torchrun.py");
/// torch 1.13's elastic launcher under Python 3.11, and per-process pid server sockets (see the
/// file's comment).
const DISTRIBUTED: &str = include_str!("harness_shim_distributed.py");
const CHAIN_CALL: &str = "\n_resolute_chain()\n";

const SITECUSTOMIZE: &str = r#"# Written by the Resolute agent for one task. Points determined._info at this task's info files
# (upstream reads them from /run/determined/info) when, and only when, that module is imported;
# then runs any other sitecustomize that this one shadows.
import sys

_RESOLUTE_INFO_DIR = @INFO_DIR@
# A clean copy of the model definition, which the harness copies into checkpoints (upstream:
# /run/determined/train/model).
_RESOLUTE_MODEL_DIR = @MODEL_DIR@
_RESOLUTE_FILES = (
    ("DEFAULT_CLUSTER_INFO_PATH", "ClusterInfo", "cluster.json"),
    ("DEFAULT_TRIAL_INFO_PATH", "TrialInfo", "trial.json"),
    ("DEFAULT_RENDEZVOUS_INFO_PATH", "RendezvousInfo", "rendezvous.json"),
    ("DEFAULT_RESOURCES_INFO_PATH", "ResourcesInfo", "resources.json"),
)


def _resolute_redirect(module):
    import os

    for constant, class_name, file_name in _RESOLUTE_FILES:
        new = os.path.join(_RESOLUTE_INFO_DIR, file_name)
        old = getattr(module, constant, None)
        setattr(module, constant, new)
        cls = getattr(module, class_name, None)
        for method in ("_from_file", "_to_file"):
            function = getattr(getattr(cls, method, None), "__func__", None) or getattr(cls, method, None)
            defaults = getattr(function, "__defaults__", None)
            if defaults:
                function.__defaults__ = tuple(new if d == old else d for d in defaults)


def _resolute_constants(module):
    module.MANAGED_TRAINING_MODEL_COPY = _RESOLUTE_MODEL_DIR


_RESOLUTE_TARGETS = {"determined._info": _resolute_redirect, "determined.constants": _resolute_constants}


class _ResoluteInfoLoader:
    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _ResoluteInfoFinder:
    def find_spec(self, fullname, path=None, target=None):
        patch = _RESOLUTE_TARGETS.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ResoluteInfoLoader(spec.loader, patch)
                return spec
        return None


for _name, _patch in _RESOLUTE_TARGETS.items():
    if _name in sys.modules:
        _patch(sys.modules[_name])
sys.meta_path.insert(0, _ResoluteInfoFinder())


def _resolute_chain():
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_resolute_chain()
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn shim_dir_sits_next_to_the_work_dir() {
        let shim = ShimDir::for_work_dir(Path::new("/r/t.1/t.1.a1"));
        assert_eq!(shim.root, Path::new("/r/t.1/t.1.a1.harness"));
        assert_eq!(shim.python_path(Some("/x")), "/r/t.1/t.1.a1.harness/python:/x");
        assert_eq!(shim.python_path(None), "/r/t.1/t.1.a1.harness/python");
    }

    #[test]
    fn the_agent_writes_only_what_it_knows() {
        let gpu = Device { id: 2, brand: "GPU".into(), uuid: "GPU-2".into(), device_type: DeviceType::Cuda };
        let vars = env(&[("DET_TASK_TYPE", "TRIAL"), ("DET_MASTER", "http://m:8080"), ("DET_TRIAL_ID", "7"), ("DET_HPARAMS", "{}")]);
        let files = info_files(&vars, &[gpu], crate::rendezvous::rendezvous_info(None, 1).unwrap());
        let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, AGENT_INFO_FILES, "a trial's trial.json comes from the master");
        assert_eq!(files[0].1["slot_ids"], json!([2]));
        assert_eq!(files[0].1["task_type"], "TRIAL");
        assert_eq!(files[0].1["master_cert_file"], Value::Null);
        assert_eq!(files[1].1["container_slot_counts"], json!([1]));
        assert_eq!(files[2].1["gpu_uuids"], json!(["GPU-2"]));
    }

    #[test]
    fn the_master_sends_the_rest_as_given() {
        let root = tempfile::tempdir().unwrap();
        let shim = ShimDir::for_work_dir(&root.path().join("t/t.a"));
        let trial = json!({"trial_id": 7, "hparams": {"lr": 0.1}});
        shim.write(
            &env(&[("DET_TASK_TYPE", "TRIAL")]),
            &[],
            &json!({}),
            &BTreeMap::from([("trial.json".to_string(), trial.clone())]),
            None,
        )
        .unwrap();
        let written: Value = serde_json::from_slice(&std::fs::read(shim.info_dir().join("trial.json")).unwrap()).unwrap();
        assert_eq!(written, trial);
        assert!(shim.info_dir().join("cluster.json").is_file());
    }

    #[test]
    fn harness_info_names_are_plain_and_not_the_agents() {
        let refused = |name: &str| check_harness_info(&BTreeMap::from([(name.to_string(), Value::Null)])).unwrap_err().to_string();
        assert!(refused("cluster.json").contains("the agent writes that file itself"));
        assert!(refused("../trial.json").contains("plain file name"));
        assert!(refused("..").contains("not a file name"));
        assert!(refused("").contains("not a file name"));
        check_harness_info(&BTreeMap::from([("trial.json".to_string(), json!({}))])).unwrap();
    }

    #[test]
    fn the_writer_fallback_and_torchrun_stand_in_run_before_the_chained_sitecustomize() {
        let source = sitecustomize_source(Path::new("/x/info"));
        let writer = source.find("class _ResoluteWriterFinder").expect("the TensorBoard writer fallback");
        let torchrun = source.find("_resolute_torchrun_standin()\n").expect("the torch.distributed.run stand-in");
        let distributed = source.find("_resolute_pid_server_argv()\n").expect("the multi-process patches");
        let chain = source.rfind("\n_resolute_chain()\n").expect("the chain call");
        assert!(writer < chain && torchrun < chain && distributed < chain, "{source}");
        assert!(source.contains(r#"_RESOLUTE_TARGETS["torch.distributed.elastic.multiprocessing.api"]"#), "{source}");
    }

    #[test]
    fn info_dir_is_a_python_literal() {
        let source = sitecustomize_source(Path::new("/a \"b\"/info"));
        assert!(source.contains(r#"_RESOLUTE_INFO_DIR = "/a \"b\"/info""#), "{source}");
    }
}
