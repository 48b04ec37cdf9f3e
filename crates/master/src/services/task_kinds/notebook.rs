//! Notebooks: JupyterLab from the task's interpreter, serving under `/proxy/<id>/` on the port the
//! agent picks, with no token of its own — the master's proxy admits only the owner or an admin
//! (as upstream). Ready when Jupyter prints that it is running.

use serde_json::{Value, json};

use super::{KindLaunch, default_key};
use crate::domain::task_service::{SERVICE_HOST_ENV, SERVICE_PORT_ENV, ServiceSpec};

/// Jupyter Server's line once it listens.
pub const READY_PATTERN: &str = r"Jupyter Server .* is running at";

pub fn prepare(task_id: &str, mut config: Value, mut extra: Value) -> KindLaunch {
    let entrypoint = format!(
        "exec python3 -m jupyterlab --no-browser --allow-root --ip=\"${SERVICE_HOST_ENV}\" --port=\"${SERVICE_PORT_ENV}\" \
         --ServerApp.base_url=/proxy/{task_id}/ --IdentityProvider.token= --ServerApp.password= \
         --ServerApp.allow_origin='*' --ServerApp.disable_check_xsrf=True --ServerApp.root_dir=\"$PWD\""
    );
    default_key(&mut config, "entrypoint", Value::String(entrypoint));
    extra["service"] = json!(ServiceSpec::http(READY_PATTERN));
    KindLaunch { config, extra }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notebook_runs_jupyterlab_under_its_proxy_path() {
        let launch = prepare("abc-1", json!({}), json!({}));
        let entrypoint = launch.config["entrypoint"].as_str().unwrap();
        assert!(entrypoint.contains("-m jupyterlab") && entrypoint.contains("--ServerApp.base_url=/proxy/abc-1/"), "{entrypoint}");
        assert_eq!(launch.extra["service"]["portEnv"], SERVICE_PORT_ENV);
        assert_eq!(launch.extra["service"]["proxy"], "http");
        let mine = prepare("abc-1", json!({"entrypoint": "jupyter notebook"}), json!({}));
        assert_eq!(mine.config["entrypoint"], "jupyter notebook", "the user's entrypoint wins");
        let line = "[I 2026-11-25 17:38:01.527 ServerApp] Jupyter Server 2.21.1 is running at:";
        assert!(regex::Regex::new(READY_PATTERN).unwrap().is_match(line));
    }
}
