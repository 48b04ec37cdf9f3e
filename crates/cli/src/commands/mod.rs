//! One module per top-level command group.

pub mod agent;
pub mod agent_run;
pub mod checkpoint;
pub mod deploy;
pub mod experiment;
pub mod experiment_create;
mod experiment_searcher;
pub mod experiment_views;
mod local_agents;
pub mod master;
pub mod preview;
pub mod slot;
pub mod task;
pub mod trial;
pub mod user;
pub mod wire;

/// Options that every client command sees (`-m`, `-u`, `--json`).
#[derive(Clone, Debug)]
pub struct Globals {
    /// Canonical master URL.
    pub master: String,
    /// `-u/--user`: act as this user instead of the cached/default one.
    pub user: Option<String>,
    pub json: bool,
}
