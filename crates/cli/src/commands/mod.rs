//! One module per top-level command group.

pub mod agent;
mod agent_control;
pub mod agent_run;
pub mod checkpoint;
pub mod command;
pub mod deploy;
pub mod experiment;
pub mod experiment_create;
mod experiment_searcher;
pub mod experiment_views;
mod local_agents;
pub mod master;
pub mod notebook;
pub mod ntsc;
mod ntsc_fetch;
pub mod ntsc_launch;
pub mod preview;
pub mod shell;
pub mod slot;
pub mod task;
mod task_generic;
pub mod template;
pub mod tensorboard;
pub mod trial;
mod trial_download;
pub mod tunnel;
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
