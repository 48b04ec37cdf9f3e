//! A short-lived in-memory cache of authenticated sessions, so an authenticated request costs no
//! database round trip. Correct because this master is the only writer of sessions and users:
//! logout and every user change invalidate explicitly; the TTL only bounds staleness should an
//! invalidation ever be missed.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::Principal;

const TTL: Duration = Duration::from_secs(30);
/// Bounds memory; reaching it simply starts over (a cold cache is only slower).
const MAX_ENTRIES: usize = 50_000;

#[derive(Default)]
pub struct SessionCache {
    entries: RwLock<HashMap<String, Entry>>,
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

    pub fn insert(&self, token_hash: String, principal: Principal, session_expires_at: DateTime<Utc>) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(token_hash, Entry { principal, session_expires_at, cached_at: Instant::now() });
    }

    pub fn remove_session(&self, session_id: i64) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.retain(|_, e| e.principal.session_id != session_id);
    }

    /// Drops every cached session of a user whose account changed.
    pub fn remove_user(&self, user_id: i32) {
        let mut entries = self.entries.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.retain(|_, e| e.principal.user.id != user_id);
    }
}
