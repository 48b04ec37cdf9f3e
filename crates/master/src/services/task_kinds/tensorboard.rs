//! TensorBoards: the real `tensorboard` from the task's interpreter, serving under
//! `/proxy/<id>/` on the port the agent picks. The master sends two files: the trials' sources
//! (`services::tensorboards`: event directories, stored metrics for trials without event files)
//! and a launcher that turns stored metrics into event files with TensorBoard's own writer, then
//! execs `python3 -m tensorboard.main --logdir_spec … --host $DET_SERVICE_HOST --port
//! $DET_SERVICE_PORT --path_prefix /proxy/<id>`. Ready when TensorBoard prints its URL.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::{KindLaunch, default_key};
use crate::domain::task_service::{LaunchFile, ServiceSpec};

/// TensorBoard's line once it listens ("TensorBoard 2.21.0 at http://…/ (Press CTRL+C to quit)").
pub const READY_PATTERN: &str = r"TensorBoard \S+ at http://";
/// The launcher, run from the work dir.
pub const LAUNCHER_PATH: &str = "tensorboard_launch.py";
/// Its input; the name is fixed in the launcher.
pub const SOURCES_PATH: &str = "tensorboard_sources.json";
const LAUNCHER: &str = include_str!("tensorboard_launch.py");

pub fn prepare(task_id: &str, mut config: Value, mut extra: Value) -> KindLaunch {
    default_key(&mut config, "entrypoint", Value::String(format!("exec python3 {LAUNCHER_PATH}")));
    let trials = extra.as_object_mut().and_then(|e| e.remove("sources")).unwrap_or_else(|| json!([]));
    let sources = json!({ "pathPrefix": format!("/proxy/{task_id}"), "trials": trials });
    let files = vec![
        LaunchFile { path: LAUNCHER_PATH.to_owned(), content_b64: BASE64.encode(LAUNCHER), mode: 0o644 },
        LaunchFile { path: SOURCES_PATH.to_owned(), content_b64: BASE64.encode(sources.to_string()), mode: 0o644 },
    ];
    extra["files"] = json!(files);
    extra["service"] = json!(ServiceSpec::http(READY_PATTERN));
    KindLaunch { config, extra }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::task_service::{SERVICE_PORT_ENV, from_extra};

    #[test]
    fn a_tensorboard_runs_the_launcher_over_its_sources_under_its_proxy_path() {
        let extra = json!({"experimentIds": [3], "trialIds": [9], "sources": [{"experimentId": 3, "trialId": 9, "eventDir": "/h/c/tensorboard/experiment/3/trial/9"}]});
        let launch = prepare("tb-1", json!({}), extra);
        assert_eq!(launch.config["entrypoint"], "exec python3 tensorboard_launch.py");
        assert!(launch.extra.get("sources").is_none(), "the sources travel as a file, not twice");
        assert_eq!(launch.extra["trialIds"], json!([9]));
        let (spec, files) = from_extra(&launch.extra);
        assert_eq!(spec.proxy.as_deref(), Some("http"));
        assert_eq!(spec.port_env.as_deref(), Some(SERVICE_PORT_ENV));
        let sources = files.iter().find(|f| f.path == SOURCES_PATH).unwrap();
        let sources: Value = serde_json::from_slice(&BASE64.decode(&sources.content_b64).unwrap()).unwrap();
        assert_eq!(sources["pathPrefix"], "/proxy/tb-1");
        assert_eq!(sources["trials"][0]["trialId"], 9);
        let launcher = files.iter().find(|f| f.path == LAUNCHER_PATH).unwrap();
        let launcher = String::from_utf8(BASE64.decode(&launcher.content_b64).unwrap()).unwrap();
        assert!(launcher.contains(SOURCES_PATH) && launcher.contains("tensorboard.main") && launcher.contains("--path_prefix"));
        let line = "TensorBoard 2.21.0 at http://127.0.0.1:41233/proxy/tb-1/ (Press CTRL+C to quit)";
        assert!(regex::Regex::new(READY_PATTERN).unwrap().is_match(line));
    }
}
