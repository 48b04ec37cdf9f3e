//! Agent controls: saved per agent, replaced by the next save, read back in agent order.

use resolute_store::{AgentControlRecord, Store, StoreError};

fn control(agent: &str, mode: &str, slots: &[u32], at: i64) -> AgentControlRecord {
    AgentControlRecord { agent_id: agent.to_owned(), mode: mode.to_owned(), disabled_slots: slots.to_vec(), updated_ms: at }
}

pub async fn agent_controls_are_replaced_per_agent_and_read_back(store: &dyn Store) {
    assert_eq!(store.agent_controls().await.unwrap(), vec![]);
    store.save_agent_control(control("gpu-b", "draining", &[], 1)).await.unwrap();
    store.save_agent_control(control("gpu-a", "disabled", &[3, 1, 3], 2)).await.unwrap();
    store.save_agent_control(control("gpu-b", "enabled", &[0], 3)).await.unwrap();
    assert_eq!(
        store.agent_controls().await.unwrap(),
        vec![control("gpu-a", "disabled", &[1, 3], 2), control("gpu-b", "enabled", &[0], 3)],
        "one row per agent, slots sorted and unique, the latest save wins"
    );
    let err = store.save_agent_control(control("nul\0agent", "enabled", &[], 4)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
}
