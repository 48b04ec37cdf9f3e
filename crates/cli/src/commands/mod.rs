//! One module per top-level command group.

pub mod agent_run;
pub mod deploy;
mod local_agents;
pub mod master;
pub mod user;

/// Options that every client command sees (`-m`, `-u`, `--json`).
#[derive(Clone, Debug)]
pub struct Globals {
    /// Canonical master URL.
    pub master: String,
    /// `-u/--user`: act as this user instead of the cached/default one.
    pub user: Option<String>,
    pub json: bool,
}
