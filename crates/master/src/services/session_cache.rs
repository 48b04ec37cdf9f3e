//! A short-lived in-memory cache of authenticated sessions, so an authenticated request costs no
//! database round trip. Correct because this master is the only writer of sessions and users:
//! logout and every user change invalidate explicitly; the TTL only bounds staleness should an
//! invalidation ever be missed.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::Principal;

const TTL: Duration = Duration::from_secs(30);
/// Bounds memory; reaching it simply starts over (a cold cache is only slower).
const MAX_ENTRIES: usize = 50_000;

#[derive(Default)]
pub struct SessionCache {
    entries: RwLock<HashMap<String, Entry>>,
    /// Bumped by every invalidation. A reader takes it before reading the store and inserts only
    /// if it has not moved, so a session revoked while it was being read is never cached.
    generation: AtomicU64,
}

struct Entry {
    principal: Principal,
    session_expires_at: DateTime<Utc>,
    cached_at: Instant,
}

impl SessionCache {
    pub fn get(&self, token_hash: &str, now: DateTime<Utc>) -> Option<Principal> {
        let entries = self.entries.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let entry = entries.get(token_hash)?;
        (entry.cached_at.elapsed() < TTL && entry.session_expires_at > now).then(|| entry.principal.clone())
    }

    /// The invalidation count, to pass to [`SessionCache::insert`].
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches what was read from the store after `generation`, unless something was invalidated
    /// since.
    pub fn insert(&self, token_hash: String, principal: Principal, session_expires_at: DateTime<Utc>, generation: u64) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(token_hash, Entry { principal, session_expires_at, cached_at: Instant::now() });
    }

    pub fn remove_session(&self, session_id: i64) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        entries.retain(|_, e| e.principal.session_id != session_id);
    }

    /// Drops every cached session of a user whose account changed.
    pub fn remove_user(&self, user_id: i32) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        entries.retain(|_, e| e.principal.user.id != user_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resolute_store::UserRecord;

    fn principal(user_id: i32, session_id: i64) -> Principal {
        let user = UserRecord {
            id: user_id,
            username: format!("u{user_id}"),
            display_name: String::new(),
            admin: false,
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
        Principal { user, session_id }
    }

    #[test]
    fn a_session_revoked_while_being_read_is_not_cached() {
        let cache = SessionCache::default();
        let now = Utc::now();
        let later = now + chrono::TimeDelta::hours(1);
        // A reader takes the generation and reads the store; meanwhile the user's password
        // changes (sessions deleted, cache invalidated); the reader's insert is dropped.
        let read_at = cache.generation();
        cache.remove_user(7);
        cache.insert("stale".into(), principal(7, 1), later, read_at);
        assert!(cache.get("stale", now).is_none());
        // A read after the invalidation is cached as usual.
        cache.insert("fresh".into(), principal(7, 2), later, cache.generation());
        assert_eq!(cache.get("fresh", now).map(|p| p.session_id), Some(2));
        cache.remove_session(2);
        assert!(cache.get("fresh", now).is_none());
    }
}
