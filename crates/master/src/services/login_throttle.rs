//! Login rate limiting: failed logins counted per username and per client address in fixed
//! windows; a key that reached its limit is refused (429, `Retry-After`) until its window ends.
//!
//! Policy (see ARCHITECTURE.md): a username may fail [`ThrottlePolicy::per_user`] times in a
//! window, wherever the attempts come from, so a guessing attack on one account gets at most that
//! many guesses per window; an address may fail [`ThrottlePolicy::per_address`] times, across all
//! usernames, so one client cannot spray many accounts. A refused attempt counts as a failure (it
//! was one), but windows are fixed from their first failure, so retrying never extends a lock.
//! A successful login clears its username's count (a user who mistyped a few times starts over)
//! but not its address's (an attacker cannot reset the address count with an account of their
//! own). Attempts are checked before the password, so a locked key costs no Argon2 work.
//! Memory is bounded: at most [`ThrottlePolicy::max_keys`] keys per table; a full table drops
//! expired windows first, then the oldest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The limits. [`ThrottlePolicy::default`] is what the master runs with.
#[derive(Clone, Copy, Debug)]
pub struct ThrottlePolicy {
    pub per_user: u32,
    pub per_address: u32,
    pub window: Duration,
    pub max_keys: usize,
}

impl Default for ThrottlePolicy {
    /// 10 failures per username and 50 per address in 5 minutes: a user with a few typos is never
    /// stopped, and one who is waits at most 5 minutes; a guesser gets 120 guesses an hour per
    /// account.
    fn default() -> Self {
        ThrottlePolicy { per_user: 10, per_address: 50, window: Duration::from_secs(300), max_keys: 10_000 }
    }
}

/// Why an attempt was refused, for the 429's message and `Retry-After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttled {
    pub key: ThrottledKey,
    pub retry_after: Duration,
    pub limit: u32,
    pub window: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottledKey {
    User,
    Address,
}

impl std::fmt::Display for Throttled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = match self.key {
            ThrottledKey::User => "for this user",
            ThrottledKey::Address => "from this address",
        };
        write!(
            f,
            "too many failed logins {whose} ({} in {} s); try again in {} s",
            self.limit,
            self.window.as_secs(),
            self.retry_after.as_secs().max(1)
        )
    }
}

#[derive(Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

struct Table<K> {
    windows: HashMap<K, Window>,
}

impl<K: std::hash::Hash + Eq + Clone> Table<K> {
    fn new() -> Self {
        Table { windows: HashMap::new() }
    }

    /// The live window of `key` (an expired one reads as none).
    fn live(&self, key: &K, now: Instant, window: Duration) -> Option<Window> {
        self.windows.get(key).copied().filter(|w| now.duration_since(w.started) < window)
    }

    fn record_failure(&mut self, key: &K, now: Instant, policy: &ThrottlePolicy) {
        match self.windows.get_mut(key) {
            Some(w) if now.duration_since(w.started) < policy.window => w.failures = w.failures.saturating_add(1),
            Some(w) => *w = Window { started: now, failures: 1 },
            None => {
                if self.windows.len() >= policy.max_keys {
                    self.windows.retain(|_, w| now.duration_since(w.started) < policy.window);
                }
                if self.windows.len() >= policy.max_keys {
                    let oldest = self.windows.iter().min_by_key(|(_, w)| w.started).map(|(k, _)| k.clone());
                    if let Some(oldest) = oldest {
                        self.windows.remove(&oldest);
                    }
                }
                self.windows.insert(key.clone(), Window { started: now, failures: 1 });
            }
        }
    }
}

/// The per-master limiter; one for every login.
pub struct LoginThrottle {
    policy: ThrottlePolicy,
    tables: Mutex<(Table<String>, Table<IpAddr>)>,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        LoginThrottle::new(ThrottlePolicy::default())
    }
}

impl LoginThrottle {
    pub fn new(policy: ThrottlePolicy) -> Self {
        LoginThrottle { policy, tables: Mutex::new((Table::new(), Table::new())) }
    }

    /// `Err` when the username or the address has used up its failures for the window; the
    /// refusal itself counts as a failure.
    pub fn check(&self, username: &str, address: Option<IpAddr>, now: Instant) -> Result<(), Throttled> {
        let username = &user_key(username);
        let mut tables = self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (users, addresses) = &mut *tables;
        let p = self.policy;
        let over = |w: Option<Window>, limit: u32| {
            w.filter(|w| w.failures >= limit).map(|w| p.window.saturating_sub(now.duration_since(w.started)))
        };
        let refusal = match (over(users.live(&username.to_owned(), now, p.window), p.per_user), address) {
            (Some(retry_after), _) => Some(Throttled { key: ThrottledKey::User, retry_after, limit: p.per_user, window: p.window }),
            (None, Some(addr)) => over(addresses.live(&addr, now, p.window), p.per_address).map(|retry_after| Throttled {
                key: ThrottledKey::Address,
                retry_after,
                limit: p.per_address,
                window: p.window,
            }),
            (None, None) => None,
        };
        match refusal {
            Some(refusal) => {
                users.record_failure(&username.to_owned(), now, &p);
                if let Some(addr) = address {
                    addresses.record_failure(&addr, now, &p);
                }
                Err(refusal)
            }
            None => Ok(()),
        }
    }

    pub fn record_failure(&self, username: &str, address: Option<IpAddr>, now: Instant) {
        let username = &user_key(username);
        let mut tables = self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (users, addresses) = &mut *tables;
        users.record_failure(&username.to_owned(), now, &self.policy);
        if let Some(addr) = address {
            addresses.record_failure(&addr, now, &self.policy);
        }
    }

    /// A correct password: the username starts over; the address keeps its count.
    pub fn record_success(&self, username: &str) {
        let mut tables = self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tables.0.windows.remove(&user_key(username));
    }

    /// How many keys are tracked (usernames, addresses).
    #[cfg(test)]
    pub fn tracked(&self) -> (usize, usize) {
        let tables = self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        (tables.0.windows.len(), tables.1.windows.len())
    }
}

/// The table key for a username: itself, or its SHA-256 when long, so a login with a megabyte
/// username cannot make the table hold megabytes.
fn user_key(username: &str) -> String {
    const MAX_KEY_BYTES: usize = 256;
    if username.len() <= MAX_KEY_BYTES {
        return username.to_owned();
    }
    use sha2::{Digest, Sha256};
    format!("sha256:{}", hex::encode(Sha256::digest(username.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1)));
    const B: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2)));

    fn policy() -> ThrottlePolicy {
        ThrottlePolicy { per_user: 3, per_address: 5, window: Duration::from_secs(60), max_keys: 4 }
    }

    #[test]
    fn a_user_is_locked_after_its_failures_until_the_window_ends() {
        let t = LoginThrottle::new(policy());
        let start = Instant::now();
        for _ in 0..3 {
            assert!(t.check("pat", A, start).is_ok());
            t.record_failure("pat", A, start);
        }
        let refused = t.check("pat", B, start + Duration::from_secs(10)).unwrap_err();
        assert_eq!(refused.key, ThrottledKey::User);
        assert_eq!(refused.retry_after, Duration::from_secs(50));
        assert!(refused.to_string().contains("try again in 50 s"), "{refused}");
        // Retrying does not extend the lock.
        assert!(t.check("pat", A, start + Duration::from_secs(59)).is_err());
        assert!(t.check("pat", A, start + Duration::from_secs(60)).is_ok());
        // Another user from another address is unaffected.
        assert!(t.check("sam", B, start + Duration::from_secs(10)).is_ok());
    }

    #[test]
    fn an_address_is_locked_across_usernames_and_success_does_not_reset_it() {
        let t = LoginThrottle::new(policy());
        let now = Instant::now();
        for name in ["a", "b", "c", "d", "e"] {
            assert!(t.check(name, A, now).is_ok());
            t.record_failure(name, A, now);
        }
        t.record_success("own-account");
        let refused = t.check("fresh", A, now).unwrap_err();
        assert_eq!(refused.key, ThrottledKey::Address);
        assert!(t.check("fresh", B, now).is_ok(), "other addresses are unaffected");
    }

    #[test]
    fn success_clears_the_username() {
        let t = LoginThrottle::new(policy());
        let now = Instant::now();
        t.record_failure("pat", A, now);
        t.record_failure("pat", A, now);
        t.record_success("pat");
        t.record_failure("pat", A, now);
        t.record_failure("pat", A, now);
        assert!(t.check("pat", A, now).is_ok());
    }

    #[test]
    fn long_usernames_are_tracked_by_digest() {
        let t = LoginThrottle::new(policy());
        let now = Instant::now();
        let long = "x".repeat(1 << 20);
        for _ in 0..3 {
            t.record_failure(&long, None, now);
        }
        assert!(t.check(&long, None, now).is_err());
        let tables = t.tables.lock().unwrap();
        assert!(tables.0.windows.keys().all(|k| k.len() <= 256 + 7));
    }

    #[test]
    fn memory_is_bounded() {
        let t = LoginThrottle::new(policy());
        let now = Instant::now();
        for i in 0..100 {
            t.record_failure(&format!("user{i}"), None, now + Duration::from_millis(i));
        }
        assert_eq!(t.tracked(), (4, 0));
    }
}
