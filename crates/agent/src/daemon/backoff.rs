//! How long the agent waits between attempts to reach the master, and when it gives up.
//!
//! By default it never gives up: its tasks keep running while the master is unreachable, and it
//! tries again after 1 s, doubling up to 30 s, each wait varied by ±20 % so that a cluster's
//! agents do not all return at the same instant. An operator may bound it with upstream's keys:
//! `agent_reconnect_attempts` (0 means unbounded, like leaving it unset) and
//! `agent_reconnect_backoff` (a fixed wait instead of the growing one).

use std::time::Duration;

use crate::config::AgentConfig;

/// The first wait of the growing backoff.
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait of the growing backoff.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Each growing wait is varied by up to this fraction either way.
const JITTER: f64 = 0.2;

/// One run of attempts (at start, or after a lost connection).
#[derive(Debug, Clone)]
pub struct Backoff {
    max_attempts: Option<u32>,
    fixed: Option<Duration>,
    attempts: u32,
    next: Duration,
}

impl Backoff {
    pub fn new(config: &AgentConfig) -> Backoff {
        Backoff {
            max_attempts: config.agent_reconnect_attempts.filter(|n| *n > 0),
            fixed: config.agent_reconnect_backoff,
            attempts: 0,
            next: INITIAL_BACKOFF,
        }
    }

    /// The configured bound on attempts; `None` means the agent tries forever.
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// Counts one failed attempt and returns how long to wait before the next, or `None` when
    /// the configured attempts are used up. `random` is a number in `[0, 1)` for the jitter.
    pub fn failed(&mut self, random: f64) -> Option<Duration> {
        self.attempts = self.attempts.saturating_add(1);
        if self.max_attempts.is_some_and(|max| self.attempts >= max) {
            return None;
        }
        Some(self.wait(random))
    }

    /// The wait before an attempt that follows no failure of this run (a reconnect after a lost
    /// connection), without counting an attempt.
    pub fn wait(&mut self, random: f64) -> Duration {
        if let Some(fixed) = self.fixed {
            return fixed;
        }
        let base = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        base.mul_f64(1.0 + JITTER * (2.0 * random.clamp(0.0, 1.0) - 1.0))
    }

    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_the_agent_never_gives_up_and_waits_grow_to_a_cap() {
        let mut backoff = Backoff::new(&AgentConfig::default());
        assert_eq!(backoff.max_attempts(), None);
        let waits: Vec<Duration> = (0..10_000).map(|_| backoff.failed(0.5).expect("the default never gives up")).collect();
        assert_eq!(&waits[..6], &[1, 2, 4, 8, 16, 30].map(Duration::from_secs));
        assert!(waits.iter().all(|w| *w <= MAX_BACKOFF));
        // Ten thousand attempts is more than three days of outage.
        assert!(waits.iter().sum::<Duration>() > Duration::from_secs(3 * 24 * 3600));
    }

    #[test]
    fn jitter_stays_within_a_fifth() {
        let mut low = Backoff::new(&AgentConfig::default());
        let mut high = low.clone();
        for _ in 0..8 {
            let (l, h) = (low.failed(0.0).unwrap(), high.failed(0.999_999).unwrap());
            assert!(l < h);
            assert!(l >= Duration::from_millis(800).min(MAX_BACKOFF.mul_f64(0.8)) && h <= MAX_BACKOFF.mul_f64(1.2));
        }
    }

    #[test]
    fn configured_attempts_and_fixed_backoff_bound_it() {
        let config = AgentConfig {
            agent_reconnect_attempts: Some(3),
            agent_reconnect_backoff: Some(Duration::from_millis(250)),
            ..AgentConfig::default()
        };
        let mut backoff = Backoff::new(&config);
        assert_eq!(backoff.failed(0.9), Some(Duration::from_millis(250)));
        assert_eq!(backoff.failed(0.1), Some(Duration::from_millis(250)));
        assert_eq!(backoff.failed(0.5), None);
        assert_eq!(backoff.attempts(), 3);
        // 0 attempts means "unbounded", as leaving it unset.
        let unbounded = AgentConfig { agent_reconnect_attempts: Some(0), ..AgentConfig::default() };
        assert_eq!(Backoff::new(&unbounded).max_attempts(), None);
    }
}
