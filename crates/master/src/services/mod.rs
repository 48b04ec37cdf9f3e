//! Business rules, independent of HTTP: handlers parse and render, services decide.

mod auth;
mod session_cache;
mod users;

pub use auth::{AuthService, Principal};
pub use session_cache::SessionCache;
pub use users::{NewUserRequest, UserChanges, UserListQuery, UserService, validate_username};
