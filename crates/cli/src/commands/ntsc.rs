//! What commands, notebooks, shells and TensorBoards share (upstream's `cli/ntsc.py`): the kinds'
//! API paths, partial-UUID expansion, and `list`, `describe`, `config`, `logs`, `kill` and
//! `set priority`.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use super::Globals;
use super::wire::{connect, int, py_str};
use crate::client::{Client, ClientError, path_segment};
use crate::error::CliError;
use crate::log_stream::{self, LogArgs, green};
use crate::output::tabulate_or_csv;
use crate::table::Cell;
use crate::{render, say};

/// One of the four NTSC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Command,
    Notebook,
    Shell,
    Tensorboard,
}

impl Kind {
    /// The collection under `/api/v1/`, also the list response's key.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Command => "commands",
            Kind::Notebook => "notebooks",
            Kind::Shell => "shells",
            Kind::Tensorboard => "tensorboards",
        }
    }

    /// The key of the single object in get/launch responses, and the word in messages.
    pub fn singular(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::Notebook => "notebook",
            Kind::Shell => "shell",
            Kind::Tensorboard => "tensorboard",
        }
    }

    fn headers(self) -> &'static [&'static str] {
        match self {
            Kind::Tensorboard => {
                &["id", "username", "description", "state", "experimentIds", "trialIds", "exitStatus", "resourcePool", "workspaceName"]
            }
            _ => &["id", "username", "description", "state", "exitStatus", "resourcePool", "workspaceName"],
        }
    }
}

/// Sort keys of `list` (upstream's `ls_sort_args`): the JSON keys themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SortBy {
    #[value(name = "id")]
    Id,
    #[value(name = "username")]
    Username,
    #[value(name = "description")]
    Description,
    #[value(name = "state")]
    State,
    #[value(name = "exitStatus")]
    ExitStatus,
    #[value(name = "resourcePool")]
    ResourcePool,
    #[value(name = "workspaceName")]
    WorkspaceName,
    #[value(name = "startTime")]
    StartTime,
}

impl SortBy {
    fn key(self) -> String {
        self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Order {
    Asc,
    Desc,
}

/// `list` flags, shared by the four kinds.
#[derive(Clone, Debug, Args)]
pub struct ListArgs {
    /// sort by the given field
    #[arg(long, value_enum, default_value = "startTime")]
    pub sort_by: SortBy,
    /// order in either ascending or descending order
    #[arg(long, value_enum, default_value = "asc")]
    pub order_by: Order,
    /// only display the IDs
    #[arg(short, long)]
    pub quiet: bool,
    /// show all tasks (including other users')
    #[arg(short, long)]
    pub all: bool,
    /// print as CSV
    #[arg(long)]
    pub csv: bool,
}

/// What `det <kind>` alone lists with: the flags' defaults.
impl Default for ListArgs {
    fn default() -> Self {
        ListArgs { sort_by: SortBy::StartTime, order_by: Order::Asc, quiet: false, all: false, csv: false }
    }
}

/// Upstream's `TASK_ID_REGEX`: an optional `<n>.` and a full UUID; anything else is a prefix.
pub fn is_full_task_id(id: &str) -> bool {
    let uuid = match id.split_once('.') {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => id,
    };
    let groups: Vec<&str> = uuid.split('-').collect();
    groups.len() == 5 && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `ntsc.expand_uuid_prefixes`: full ids pass untouched; prefixes must match exactly one task of
/// the kind. Without a kind (`det task logs`) ids pass as given: upstream refuses prefixes there,
/// and the master's 404 says the same.
pub fn expand_ids(client: &Client, kind: Option<Kind>, prefixes: &[String]) -> Result<Vec<String>, CliError> {
    let Some(kind) = kind.filter(|_| !prefixes.iter().all(|p| is_full_task_id(p))) else {
        return Ok(prefixes.to_vec());
    };
    let resp: Value = client.get(&format!("api/v1/{}", kind.plural()))?;
    let ids: Vec<&str> = resp.get(kind.plural()).and_then(Value::as_array).into_iter().flatten().filter_map(|t| t["id"].as_str()).collect();
    prefixes
        .iter()
        .map(|p| {
            if is_full_task_id(p) {
                return Ok(p.clone());
            }
            match ids.iter().filter(|id| id.starts_with(p.as_str())).collect::<Vec<_>>().as_slice() {
                [one] => Ok((**one).to_owned()),
                [] => Err(CliError::msg(format!("partial UUID '{p}' not found"))),
                _ => Err(CliError::msg(format!("partial UUID '{p}' not unique"))),
            }
        })
        .collect()
}

/// [`expand_ids`] for one id.
pub fn expand_id(client: &Client, kind: Option<Kind>, prefix: &str) -> Result<String, CliError> {
    Ok(expand_ids(client, kind, &[prefix.to_owned()])?.remove(0))
}

/// `workspace.get_workspace_names`. A master without the workspaces endpoint yet gives no names
/// rather than failing the listing.
pub fn workspace_names(client: &Client) -> Result<BTreeMap<i64, String>, CliError> {
    let resp: Value = match client.get("api/v1/workspaces") {
        Ok(v) => v,
        Err(ClientError::NotFound(_)) => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    let list = resp.get("workspaces").and_then(Value::as_array).cloned().unwrap_or_default();
    Ok(list.iter().filter_map(|w| Some((int(w, "id")?, w.get("name")?.as_str()?.to_owned()))).collect())
}

/// Upstream's in-place touch-ups before printing: `STATE_` dropped, `workspaceName` added.
fn annotate(item: &mut Value, names: &BTreeMap<i64, String>) {
    if let Some(state) = item.get("state").and_then(Value::as_str).and_then(|s| s.strip_prefix("STATE_")).map(str::to_owned) {
        item["state"] = json!(state);
    }
    if let Some(id) = int(item, "workspaceId") {
        item["workspaceName"] = json!(names.get(&id).cloned().unwrap_or_else(|| format!("missing workspace id {id}")));
    }
}

/// Python's `str()` of a cell value, lists as `[1, 2]`; absent keys are `N/A` (`select_values`).
fn cell(item: &Value, key: &str) -> Cell {
    match item.get(key) {
        None => "N/A".into(),
        Some(Value::Array(list)) => format!("[{}]", list.iter().map(py_str).collect::<Vec<_>>().join(", ")).into(),
        Some(Value::Number(n)) if n.is_i64() => Cell::Int(n.as_i64().unwrap_or_default()),
        Some(v) => py_str(v).into(),
    }
}

/// Orders like Python's `sorted(key=itemgetter(k))` for the value types involved.
fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64().partial_cmp(&y.as_f64()).unwrap_or(std::cmp::Ordering::Equal),
        _ => py_str(a).cmp(&py_str(b)),
    }
}

/// `ntsc.list_tasks`: `GET /api/v1/{kind}?users=<me>` (all users with `--all`).
pub fn list(g: &Globals, kind: Kind, args: &ListArgs) -> Result<(), CliError> {
    let session = crate::session::login_with_cache(&g.master, g.user.as_deref())?;
    let client = session.client;
    let mut path = format!("api/v1/{}", kind.plural());
    if !args.all {
        path.push_str(&format!("?users={}", path_segment(&session.username)));
    }
    let resp: Value = client.get(&path)?;
    let mut items = resp.get(kind.plural()).and_then(Value::as_array).cloned().unwrap_or_default();
    if args.quiet {
        for item in &items {
            say!("{}", item.get("id").and_then(Value::as_str).unwrap_or_default());
        }
        return Ok(());
    }
    let names = workspace_names(&client)?;
    items.iter_mut().for_each(|i| annotate(i, &names));
    let key = args.sort_by.key();
    items.sort_by(|a, b| compare(&a[&key], &b[&key]));
    if args.order_by == Order::Desc {
        items.reverse();
    }
    if g.json {
        say!("{}", render::json(&items));
        return Ok(());
    }
    let headers = kind.headers();
    let rows: Vec<Vec<Cell>> = items.iter().map(|i| headers.iter().map(|h| cell(i, h)).collect()).collect();
    tabulate_or_csv(headers, &rows, args.csv);
    Ok(())
}

/// `GET /api/v1/{kind}/{id}`, the whole response (`{<kind>, config}`).
pub fn get(client: &Client, kind: Kind, id: &str) -> Result<Value, CliError> {
    Ok(client.get(&format!("api/v1/{}/{}", kind.plural(), path_segment(id)))?)
}

/// `ntsc.describe`: one row of the list table, or the object as JSON.
pub fn describe(g: &Globals, kind: Kind, id: &str, csv: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = expand_id(&client, Some(kind), id)?;
    let mut item = get(&client, kind, &id)?.get(kind.singular()).cloned().unwrap_or(Value::Null);
    annotate(&mut item, &workspace_names(&client)?);
    if g.json {
        say!("{}", render::json(&item));
        return Ok(());
    }
    let headers = kind.headers();
    tabulate_or_csv(headers, &[headers.iter().map(|h| cell(&item, h)).collect()], csv);
    Ok(())
}

/// `ntsc.config`: the task's config as YAML.
pub fn config(g: &Globals, kind: Kind, id: &str) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = expand_id(&client, Some(kind), id)?;
    let resp = get(&client, kind, &id)?;
    crate::output::emit_raw(&render::yaml(resp.get("config").unwrap_or(&Value::Null)));
    Ok(())
}

/// `task.logs` for a task of this kind (prefixes expand against the kind's list).
pub fn logs(g: &Globals, kind: Option<Kind>, id: &str, json: bool, logs: &LogArgs) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = expand_id(&client, kind, id)?;
    follow_task_logs(&client, &id, logs, json || g.json)
}

/// Streams a task's logs and prints upstream's closing hint, whether or not the stream failed.
pub fn follow_task_logs(client: &Client, task_id: &str, logs: &LogArgs, json: bool) -> Result<(), CliError> {
    let path = format!("api/v1/tasks/{}/logs", path_segment(task_id));
    let streamed = log_stream::stream(client, &path, logs, |e| log_stream::print_entry(e, json));
    log_stream::print_ended("Task", "task", task_id);
    streamed
}

/// `ntsc.kill`: stops at the first failure (naming the ids left alone) unless `--force`.
pub fn kill(g: &Globals, kind: Kind, ids: &[String], force: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let ids = expand_ids(&client, Some(kind), ids)?;
    for (i, id) in ids.iter().enumerate() {
        let path = format!("api/v1/{}/{}/kill", kind.plural(), path_segment(id));
        match client.post::<_, Value>(&path, &json!({})) {
            Ok(_) => say!("{}", green(&format!("Killed {} {id}", kind.singular()))),
            Err(e) if force => say!("Skipping: {e}"),
            Err(e) => {
                for ignored in &ids[i + 1..] {
                    say!("Cowardly not killing {ignored}");
                }
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// `ntsc.set_priority`.
pub fn set_priority(g: &Globals, kind: Kind, id: &str, priority: i32) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = expand_id(&client, Some(kind), id)?;
    let path = format!("api/v1/{}/{}/set_priority", kind.plural(), path_segment(&id));
    client.post::<_, Value>(&path, &json!({ "priority": priority }))?;
    say!("{}", green(&format!("Set priority of {} {id} to {priority}", kind.singular())));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_full_task_ids() {
        assert!(is_full_task_id("7f1c2d3e-0000-4000-8000-000000000001"));
        assert!(is_full_task_id("12.7F1C2D3E-0000-4000-8000-000000000001"));
        assert!(!is_full_task_id("7f1c2d3e"));
        assert!(!is_full_task_id("x.7f1c2d3e-0000-4000-8000-000000000001"));
        assert!(!is_full_task_id("7f1c2d3e-0000-4000-8000-00000000000g"));
    }

    #[test]
    fn cells_print_like_python() {
        let item = json!({"experimentIds": [1, 2], "id": "a", "workspaceId": 1});
        assert_eq!(cell(&item, "experimentIds"), Cell::Str("[1, 2]".into()));
        assert_eq!(cell(&item, "exitStatus"), Cell::Str("N/A".into()));
        let mut item = json!({"state": "STATE_RUNNING", "workspaceId": 2});
        annotate(&mut item, &BTreeMap::from([(1, "Uncategorized".to_owned())]));
        assert_eq!(item, json!({"state": "RUNNING", "workspaceId": 2, "workspaceName": "missing workspace id 2"}));
    }
}
