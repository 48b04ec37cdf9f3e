//! Per-allocation preemption signals: the orchestrator raises them, the harness's long poll
//! (`GET /api/v1/allocations/{id}/signals/preemption`) waits on them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

#[derive(Default)]
pub struct PreemptionSignals {
    by_allocation: Mutex<HashMap<String, watch::Sender<bool>>>,
}

impl PreemptionSignals {
    /// Registers a live allocation (not preempted). Idempotent.
    pub fn register(&self, allocation_id: &str) {
        let mut map = self.by_allocation.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(allocation_id.to_owned()).or_insert_with(|| watch::channel(false).0);
    }

    /// Tells the allocation to checkpoint and exit. Idempotent.
    pub fn preempt(&self, allocation_id: &str) {
        let mut map = self.by_allocation.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(allocation_id.to_owned()).or_insert_with(|| watch::channel(false).0).send_replace(true);
    }

    pub fn is_preempted(&self, allocation_id: &str) -> bool {
        let map = self.by_allocation.lock().unwrap_or_else(|p| p.into_inner());
        map.get(allocation_id).is_some_and(|s| *s.borrow())
    }

    /// Forgets an ended allocation; waiters see `true` (the allocation is going away either way).
    pub fn remove(&self, allocation_id: &str) {
        let mut map = self.by_allocation.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = map.remove(allocation_id) {
            sender.send_replace(true);
        }
    }

    /// Waits up to `timeout` for the allocation to be preempted; returns whether it is. An unknown
    /// allocation is not preempted (it may not have been registered yet).
    pub async fn wait(&self, allocation_id: &str, timeout: Duration) -> bool {
        let mut receiver = {
            let mut map = self.by_allocation.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(allocation_id.to_owned()).or_insert_with(|| watch::channel(false).0).subscribe()
        };
        if *receiver.borrow_and_update() {
            return true;
        }
        match tokio::time::timeout(timeout, receiver.wait_for(|p| *p)).await {
            Ok(Ok(_)) => true,
            // Sender dropped (allocation removed): treat as preempted so the task winds down.
            Ok(Err(_)) => true,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_returns_on_preempt_or_timeout() {
        let signals = std::sync::Arc::new(PreemptionSignals::default());
        signals.register("a.1");
        assert!(!signals.wait("a.1", Duration::from_millis(5)).await);
        let s2 = signals.clone();
        let waiter = tokio::spawn(async move { s2.wait("a.1", Duration::from_secs(30)).await });
        tokio::task::yield_now().await;
        signals.preempt("a.1");
        assert!(waiter.await.unwrap());
        assert!(signals.is_preempted("a.1"));
    }
}
