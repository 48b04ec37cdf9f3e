//! What each kind of command-like task runs by default, decided at launch: the entrypoint a
//! notebook, TensorBoard or shell gets when the config names none, and the service record
//! (`domain::task_service`) — port, readiness line, files, proxy — the loop starts it with.

mod notebook;
mod shell;
mod tensorboard;

use serde_json::{Value, json};

use crate::domain::TaskType;
use crate::error::ApiResult;

/// A kind's launch: the config with its defaults, and the task's `extra`.
#[derive(Clone, Debug)]
pub struct KindLaunch {
    pub config: Value,
    pub extra: Value,
}

/// Fills a kind's defaults into `config` (a JSON object) and builds its `extra`, starting from
/// what the request carried (`extra`).
pub fn prepare(kind: TaskType, task_id: &str, config: Value, extra: Value) -> ApiResult<KindLaunch> {
    let extra = if extra.is_object() { extra } else { json!({}) };
    match kind {
        TaskType::Notebook => Ok(notebook::prepare(task_id, config, extra)),
        TaskType::Shell => shell::prepare(task_id, config, extra),
        TaskType::Tensorboard => Ok(tensorboard::prepare(task_id, config, extra)),
        _ => Ok(KindLaunch { config, extra }),
    }
}

/// Sets `key` in the config object unless the user set it.
pub(super) fn default_key(config: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = config
        && map.get(key).is_none_or(Value::is_null)
    {
        map.insert(key.to_owned(), value);
    }
}
