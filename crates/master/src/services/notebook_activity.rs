//! Whether a notebook is in use, as upstream's `notebook_idle_type` defines it, read from its
//! JupyterLab (`/api/kernels`, `/api/terminals` under the notebook's `/proxy/<id>/` base URL):
//! - `kernels_or_terminals` (default): any kernel or terminal is open;
//! - `kernel_connections`: any kernel has a client connected;
//! - `activity`: any kernel is busy (proxied traffic counts too, in the idle watcher).

use std::time::Duration;

use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotebookIdleType {
    KernelsOrTerminals,
    KernelConnections,
    Activity,
}

impl NotebookIdleType {
    /// The task config's `notebook_idle_type`; unknown or missing is the default.
    pub fn from_config(config: &Value) -> NotebookIdleType {
        match config.get("notebook_idle_type").and_then(Value::as_str) {
            Some("kernel_connections") => NotebookIdleType::KernelConnections,
            Some("activity") => NotebookIdleType::Activity,
            _ => NotebookIdleType::KernelsOrTerminals,
        }
    }
}

/// Whether Jupyter's kernels and terminals mean the notebook is in use.
pub fn in_use(kind: NotebookIdleType, kernels: &[Value], terminals: &[Value]) -> bool {
    match kind {
        NotebookIdleType::KernelsOrTerminals => !kernels.is_empty() || !terminals.is_empty(),
        NotebookIdleType::KernelConnections => kernels.iter().any(|k| k["connections"].as_i64().unwrap_or(0) > 0),
        NotebookIdleType::Activity => kernels.iter().any(|k| k["execution_state"] == "busy"),
    }
}

/// Asks the notebook's JupyterLab at `address` (`host:port`) whether it is in use; `None` when it
/// does not answer (it is then neither idle nor busy this round).
pub async fn probe(client: &reqwest::Client, address: &str, task_id: &str, kind: NotebookIdleType) -> Option<bool> {
    let base = format!("http://{address}/proxy/{task_id}/api");
    let list = |path: &'static str| {
        let url = format!("{base}/{path}");
        async move {
            let r = client.get(url).timeout(Duration::from_secs(5)).send().await.ok()?;
            r.json::<Vec<Value>>().await.ok()
        }
    };
    let kernels = list("kernels").await?;
    let terminals = list("terminals").await.unwrap_or_default();
    Some(in_use(kind, &kernels, &terminals))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn idle_types_read_kernels_and_terminals() {
        let idle_kernel = json!({"execution_state": "idle", "connections": 0});
        let busy_connected = json!({"execution_state": "busy", "connections": 1});
        use NotebookIdleType as T;
        assert!(!in_use(T::KernelsOrTerminals, &[], &[]));
        assert!(in_use(T::KernelsOrTerminals, std::slice::from_ref(&idle_kernel), &[]));
        assert!(in_use(T::KernelsOrTerminals, &[], &[json!({"name": "1"})]));
        assert!(!in_use(T::KernelConnections, std::slice::from_ref(&idle_kernel), &[]));
        assert!(in_use(T::KernelConnections, std::slice::from_ref(&busy_connected), &[]));
        assert!(!in_use(T::Activity, &[idle_kernel], &[json!({"name": "1"})]));
        assert!(in_use(T::Activity, &[busy_connected], &[]));
        assert_eq!(NotebookIdleType::from_config(&json!({})), T::KernelsOrTerminals);
        assert_eq!(NotebookIdleType::from_config(&json!({"notebook_idle_type": "activity"})), T::Activity);
    }
}
