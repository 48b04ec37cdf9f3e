//! Business rules, independent of HTTP: handlers parse and render, services decide.

mod auth;
mod experiment_changes;
mod experiment_items;
pub mod experiment_state;
mod experiments;
pub mod model_def;
mod session_cache;
mod users;

pub use auth::{AuthService, Principal};
pub use experiment_changes::ExperimentChanges;
pub use experiment_items::{CheckpointListQuery, CheckpointView, TrialListQuery, TrialView};
pub use experiments::{CreatedExperiment, ExperimentListQuery, ExperimentService, ExperimentView, ListPage, NewExperimentRequest};
pub use session_cache::SessionCache;
pub use users::{NewUserRequest, UserChanges, UserListQuery, UserService, validate_username};
