//! `GET /api/v1/experiments/{id}/searcher/state`: an ASHA search driven through the loop with a
//! fake agent; the state names each trial's rung and the searcher's decisions as they happen.

use serde_json::{Value, json};

use crate::cluster_loop::FakeAgent;
use crate::harness::TestMaster;
use crate::runtime_support::report_validation;

/// Async halving: 4 trials, rungs at 10 / 40 batches (divisor 4), two at a time.
const ASHA: &str = "name: asha\nentrypoint: python3 train.py\n\
    searcher: {name: async_halving, metric: loss, smaller_is_better: true, num_rungs: 2, divisor: 4, max_trials: 4, \
    max_concurrent_trials: 2, max_length: {batches: 40}}\n\
    hyperparameters: {lr: {type: double, minval: 0.01, maxval: 0.1}}\n";

async fn state(m: &TestMaster, token: &str, id: i64) -> Value {
    let r = m.get(&format!("/api/v1/experiments/{id}/searcher/state"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

pub async fn searcher_state_shows_rungs_and_decisions(m: &TestMaster) {
    let token = m.login("determined", "").await;
    let missing = m.get("/api/v1/experiments/999/searcher/state", Some(&token)).await;
    assert_eq!(missing.status, 404, "{}", missing.text);

    // Paused: the first trials exist (paused, not training yet) and the plan is there.
    let r = m.post("/api/v1/experiments", Some(&token), json!({"config": ASHA, "modelDefinition": [], "activate": false})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.body["experiment"]["id"].as_i64().unwrap();
    let s = state(m, &token, id).await;
    assert_eq!((s["method"].as_str(), s["unit"].as_str(), s["status"].as_str()), (Some("async_halving"), Some("batches"), Some("running")));
    let requested: Vec<_> = s["trials"].as_array().unwrap().iter().map(|t| (t["requestId"].as_u64(), t["timeProgress"].as_u64())).collect();
    assert_eq!(requested, [(Some(1), Some(0)), (Some(2), Some(0))], "{s}");
    let rungs = &s["brackets"][0]["rungs"];
    assert_eq!((rungs[0]["length"].as_u64(), rungs[1]["length"].as_u64()), (Some(10), Some(40)), "{s}");
    assert_eq!(rungs[0]["recorded"], 0);

    let mut agent = FakeAgent::connect(m, "agent-1", 2).await;
    let r = m.post(&format!("/api/v1/experiments/{id}/activate"), Some(&token), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (first, second) = (agent.next_start().await, agent.next_start().await);
    // The first at rung 0 is promoted (nothing to compare with); the worse second is stopped.
    report_validation(m, &first, 10, 0.1).await;
    report_validation(m, &second, 10, 0.9).await;
    let second_id: i64 = second.env["DET_TRIAL_ID"].parse().unwrap();
    let mut s = Value::Null;
    for _ in 0..200 {
        s = state(m, &token, id).await;
        let decided = s["trials"].as_array().unwrap().iter().any(|t| t["trialId"] == second_id && t["decision"] == "stopped_early");
        if decided {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let trials = s["trials"].as_array().unwrap();
    let by_id = |id: &str| trials.iter().find(|t| t["trialId"].as_i64() == id.parse().ok()).unwrap_or_else(|| panic!("trial {id} in {s}"));
    let (a, b) = (by_id(&first.env["DET_TRIAL_ID"]), by_id(&second.env["DET_TRIAL_ID"]));
    assert_eq!((a["rung"].as_u64(), a["decision"].as_str(), a["timeProgress"].as_u64()), (Some(1), Some("training"), Some(10)), "{s}");
    assert_eq!(a["lastMetric"], 0.1);
    assert_eq!(
        (b["rung"].as_u64(), b["decision"].as_str(), b["state"].as_str()),
        (Some(0), Some("stopped_early"), Some("stopping")),
        "{s}"
    );
    assert_eq!(s["brackets"][0]["rungs"][0]["recorded"], 2, "{s}");
    assert!(s["progress"].as_f64().unwrap() > 0.0, "{s}");
}
