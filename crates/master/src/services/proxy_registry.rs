//! The task services the master proxies at `/proxy/{service_id}/…`: which address serves each
//! one, who may open it, and when traffic last went through it.
//!
//! The cluster loop registers a service when its task reports it ready and unregisters it when
//! the task ends; the HTTP proxy (`http/proxy.rs`) reads the registry on every request, so reads
//! take a read lock for one hash lookup and clone an `Arc`, and activity is an atomic store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::error::{ApiError, ApiResult};
use crate::services::Principal;

/// How the proxy talks to a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    /// HTTP, with websocket upgrades forwarded as websockets (JupyterLab, TensorBoard).
    Http,
    /// A raw TCP port, reached through a websocket whose binary frames carry the bytes (a
    /// shell's sshd, opened by upstream's `determined.cli.tunnel`).
    Tcp,
}

/// Where a service listens and who may open it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyTarget {
    /// `host:port` of the service, as reachable from the master.
    pub address: String,
    /// The task's owner; only they and admins may open it.
    pub owner_id: i32,
    pub kind: ProxyKind,
    /// `NOTEBOOK`, `TENSORBOARD`, `SHELL`, `COMMAND`: shown in messages.
    pub task_type: String,
    /// Upstream's `proxy_ports[].unauthenticated`: open to anyone who can reach the master.
    /// Upstream's shells set it, because `det shell open` runs `determined.cli.tunnel` without
    /// `--auth` (no token is sent) and sshd's key check is the authentication.
    pub unauthenticated: bool,
}

/// A registered service, as the proxy holds it for the life of one request or connection.
#[derive(Clone, Debug)]
pub struct ProxyRoute {
    service_id: Arc<str>,
    entry: Arc<Entry>,
    epoch: Instant,
}

#[derive(Debug)]
struct Entry {
    target: ProxyTarget,
    /// Milliseconds after the registry's epoch.
    last_activity_ms: AtomicU64,
}

impl ProxyRoute {
    pub fn service_id(&self) -> &str {
        &self.service_id
    }

    pub fn target(&self) -> &ProxyTarget {
        &self.entry.target
    }

    /// Records traffic through the service now (what notebook idle timeouts read).
    pub fn touch(&self) {
        self.entry.last_activity_ms.store(millis_since(self.epoch), Ordering::Relaxed);
    }
}

/// Task services by service id (a task id, or upstream's `<task id>:<port>` for extra ports).
/// Cheap to clone: every clone shares one table.
#[derive(Clone, Debug)]
pub struct ProxyRegistry {
    services: Arc<RwLock<HashMap<Arc<str>, Arc<Entry>>>>,
    epoch: Instant,
}

impl Default for ProxyRegistry {
    fn default() -> Self {
        ProxyRegistry::new()
    }
}

impl ProxyRegistry {
    pub fn new() -> ProxyRegistry {
        ProxyRegistry { services: Arc::default(), epoch: Instant::now() }
    }

    /// Makes `target` reachable at `/proxy/{service_id}/`, replacing any earlier target of that
    /// id. Its last activity starts now.
    pub fn register(&self, service_id: &str, target: ProxyTarget) {
        let entry = Arc::new(Entry { target, last_activity_ms: AtomicU64::new(millis_since(self.epoch)) });
        self.write().insert(Arc::from(service_id), entry);
    }

    /// Stops proxying `service_id`; returns its target if it was registered. Connections already
    /// open stay open until either side closes them.
    pub fn unregister(&self, service_id: &str) -> Option<ProxyTarget> {
        self.write().remove(service_id).map(|entry| entry.target.clone())
    }

    pub fn lookup(&self, service_id: &str) -> Option<ProxyTarget> {
        self.route(service_id).map(|route| route.target().clone())
    }

    /// When traffic last went through `service_id` (or when it was registered, if none has).
    pub fn last_activity(&self, service_id: &str) -> Option<Instant> {
        let route = self.route(service_id)?;
        Some(self.epoch + Duration::from_millis(route.entry.last_activity_ms.load(Ordering::Relaxed)))
    }

    /// The route of `service_id` for a caller, who authenticated as `principal` (or failed to:
    /// that error is the answer unless the service is unauthenticated). Unknown services are 404
    /// only to authenticated callers, so anonymous ones cannot probe for task ids.
    pub fn authorize(&self, service_id: &str, principal: ApiResult<Principal>) -> ApiResult<ProxyRoute> {
        let route = self.route(service_id);
        if let Some(route) = &route
            && route.target().unauthenticated
        {
            return Ok(route.clone());
        }
        let principal = principal?;
        let route = route.ok_or_else(|| ApiError::not_found(format!("task {service_id} not found or has no running service")))?;
        if route.target().owner_id != principal.user.id && !principal.user.admin {
            return Err(ApiError::forbidden(format!("only the owner of task {service_id} or an admin may open it")));
        }
        Ok(route)
    }

    fn route(&self, service_id: &str) -> Option<ProxyRoute> {
        let services = self.services.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (key, entry) = services.get_key_value(service_id)?;
        Some(ProxyRoute { service_id: key.clone(), entry: entry.clone(), epoch: self.epoch })
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Arc<Entry>>> {
        // A panic while holding the lock cannot leave the map half-updated (one insert/remove).
        self.services.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use resolute_store::UserRecord;

    use super::*;

    fn target(owner_id: i32, unauthenticated: bool) -> ProxyTarget {
        ProxyTarget { address: "127.0.0.1:1".into(), owner_id, kind: ProxyKind::Http, task_type: "NOTEBOOK".into(), unauthenticated }
    }

    fn principal(id: i32, admin: bool) -> Principal {
        let user = UserRecord {
            id,
            username: format!("u{id}"),
            display_name: String::new(),
            admin,
            active: true,
            remote: false,
            password_hash: None,
            modified_at: Utc::now(),
            last_auth_at: None,
            agent_uid: None,
            agent_gid: None,
            agent_user: None,
            agent_group: None,
        };
        Principal { user, session_id: 1 }
    }

    #[test]
    fn register_lookup_unregister() {
        let registry = ProxyRegistry::new();
        assert_eq!(registry.lookup("t1"), None);
        registry.register("t1", target(5, false));
        assert_eq!(registry.clone().lookup("t1"), Some(target(5, false)));
        assert!(registry.last_activity("t1").is_some());
        assert_eq!(registry.unregister("t1"), Some(target(5, false)));
        assert_eq!(registry.lookup("t1"), None);
        assert_eq!(registry.last_activity("t1"), None);
    }

    #[test]
    fn touch_moves_last_activity_forward() {
        let registry = ProxyRegistry::new();
        registry.register("t1", target(5, false));
        let before = registry.last_activity("t1").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        registry.authorize("t1", Ok(principal(5, false))).unwrap().touch();
        assert!(registry.last_activity("t1").unwrap() > before);
    }

    #[test]
    fn owner_and_admins_may_open_others_may_not() {
        let registry = ProxyRegistry::new();
        registry.register("t1", target(5, false));
        assert!(registry.authorize("t1", Ok(principal(5, false))).is_ok());
        assert!(registry.authorize("t1", Ok(principal(6, true))).is_ok());
        let denied = registry.authorize("t1", Ok(principal(6, false))).unwrap_err();
        assert_eq!(denied.status.as_u16(), 403);
        assert!(denied.message.contains("t1"), "{}", denied.message);
        let anonymous = registry.authorize("t1", Err(ApiError::unauthenticated("no token"))).unwrap_err();
        assert_eq!(anonymous.status.as_u16(), 401);
        let unknown = registry.authorize("t2", Ok(principal(5, false))).unwrap_err();
        assert_eq!(unknown.status.as_u16(), 404);
        assert!(unknown.message.contains("task t2"), "{}", unknown.message);
        // Anonymous callers learn nothing about which tasks exist.
        let probe = registry.authorize("t2", Err(ApiError::unauthenticated("no token"))).unwrap_err();
        assert_eq!(probe.status.as_u16(), 401);
    }

    #[test]
    fn unauthenticated_services_are_open_to_anyone() {
        let registry = ProxyRegistry::new();
        registry.register("shell", target(5, true));
        assert!(registry.authorize("shell", Err(ApiError::unauthenticated("no token"))).is_ok());
        assert!(registry.authorize("shell", Ok(principal(6, false))).is_ok());
    }
}
