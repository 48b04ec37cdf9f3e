//! What commands, notebooks, shells and TensorBoards share (upstream's `cli/ntsc.py`): the kinds'
//! API paths, partial-UUID expansion, and `list`, `describe`, `config`, `logs`, `kill` and
//! `set priority`.

use std::collections::BTreeMap;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use resolute_api::commands::NtscBase;
use resolute_api::workspaces::GetWorkspacesResponse;

use super::Globals;
use super::ntsc_fetch::{self, AnyTask};
use super::wire::{connect, py_str};
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
    /// The collection under `/api/v1/`.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Command => "commands",
            Kind::Notebook => "notebooks",
            Kind::Shell => "shells",
            Kind::Tensorboard => "tensorboards",
        }
    }

    /// The word in messages.
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
    let tasks = ntsc_fetch::list(client, kind, None)?;
    let ids: Vec<&str> = tasks.iter().map(|t| t.base().id.as_str()).collect();
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
pub fn workspace_names(client: &Client) -> Result<BTreeMap<i32, String>, CliError> {
    match client.get::<GetWorkspacesResponse>("api/v1/workspaces") {
        Ok(resp) => Ok(resp.workspaces.into_iter().map(|w| (w.id, w.name)).collect()),
        Err(ClientError::NotFound(_)) => Ok(BTreeMap::new()),
        Err(e) => Err(e.into()),
    }
}

/// The workspace column: its name, or upstream's placeholder for an id it does not know.
fn workspace_name(names: &BTreeMap<i32, String>, id: i32) -> String {
    names.get(&id).cloned().unwrap_or_else(|| format!("missing workspace id {id}"))
}

/// The state as upstream prints it, without `STATE_`.
fn short_state(base: &NtscBase) -> &'static str {
    let name = base.state.name();
    name.strip_prefix("STATE_").unwrap_or(name)
}

/// What upstream prints for a task: the object as the bindings write it, touched up in place as
/// upstream does (`STATE_` dropped, `workspaceName` added).
fn shown(task: &AnyTask, names: &BTreeMap<i32, String>) -> Value {
    let base = task.base();
    let mut item = task.to_json();
    item["state"] = json!(short_state(base));
    item["workspaceName"] = json!(workspace_name(names, base.workspace_id));
    item
}

/// The text upstream sorts by (`sorted(key=itemgetter(k))` over the printed objects: all strings,
/// an absent `exitStatus` as `None`).
fn sort_key(base: &NtscBase, names: &BTreeMap<i32, String>, by: SortBy) -> String {
    match by {
        SortBy::Id => base.id.clone(),
        SortBy::Username => base.username.clone(),
        SortBy::Description => base.description.clone(),
        SortBy::State => short_state(base).to_owned(),
        SortBy::ExitStatus => base.exit_status.clone().unwrap_or_else(|| "None".to_owned()),
        SortBy::ResourcePool => base.resource_pool.clone(),
        SortBy::WorkspaceName => workspace_name(names, base.workspace_id),
        // The wire's RFC 3339 text, as upstream compares it.
        SortBy::StartTime => serde_json::to_value(base.start_time).ok().map(|v| py_str(&v)).unwrap_or_default(),
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

/// `ntsc.list_tasks`: `GET /api/v1/{kind}?users=<me>` (all users with `--all`).
pub fn list(g: &Globals, kind: Kind, args: &ListArgs) -> Result<(), CliError> {
    let session = crate::session::login_with_cache(&g.master, g.user.as_deref())?;
    let client = session.client;
    let mut tasks = ntsc_fetch::list(&client, kind, (!args.all).then_some(session.username.as_str()))?;
    if args.quiet {
        for task in &tasks {
            say!("{}", task.base().id);
        }
        return Ok(());
    }
    let names = workspace_names(&client)?;
    tasks.sort_by_cached_key(|t| sort_key(t.base(), &names, args.sort_by));
    if args.order_by == Order::Desc {
        tasks.reverse();
    }
    let items: Vec<Value> = tasks.iter().map(|t| shown(t, &names)).collect();
    if g.json {
        say!("{}", render::json(&items));
        return Ok(());
    }
    let headers = kind.headers();
    let rows: Vec<Vec<Cell>> = items.iter().map(|i| headers.iter().map(|h| cell(i, h)).collect()).collect();
    tabulate_or_csv(headers, &rows, args.csv);
    Ok(())
}

/// `ntsc.describe`: one row of the list table, or the object as JSON.
pub fn describe(g: &Globals, kind: Kind, id: &str, csv: bool) -> Result<(), CliError> {
    let client = connect(g)?;
    let id = expand_id(&client, Some(kind), id)?;
    let (task, _config) = ntsc_fetch::get(&client, kind, &id)?;
    let item = shown(&task, &workspace_names(&client)?);
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
    let (_task, config) = ntsc_fetch::get(&client, kind, &id)?;
    crate::output::emit_raw(&render::yaml(&config));
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
        match ntsc_fetch::kill(&client, kind, id) {
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
    ntsc_fetch::set_priority(&client, kind, &id, priority)?;
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
        let task: resolute_api::commands::Command = serde_json::from_value(json!({"id": "a", "state": "STATE_RUNNING",
            "startTime": "2025-03-19T10:01:02Z", "username": "u", "workspaceId": 2}))
        .unwrap();
        let names = BTreeMap::from([(1, "Uncategorized".to_owned())]);
        let item = shown(&AnyTask::Command(task.clone()), &names);
        assert_eq!((&item["state"], &item["workspaceName"]), (&json!("RUNNING"), &json!("missing workspace id 2")));
        assert_eq!(sort_key(&task.base, &names, SortBy::StartTime), "2025-03-19T10:01:02Z");
        assert_eq!(sort_key(&task.base, &names, SortBy::ExitStatus), "None");
    }
}
