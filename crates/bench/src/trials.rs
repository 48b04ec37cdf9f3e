//! Running trials on the fake agent: one `single` experiment per trial, each trial's `StartTask`
//! collected (it carries the allocation token the runtime endpoints authenticate with) and
//! reported `Running`.

use std::time::Duration;

use anyhow::{Context, Result};
use resolute_api::agent_protocol::StartTask;

use crate::api;
use crate::fake_agent::FakeAgent;

/// A trial "process" on the fake agent and what its harness would know from its environment.
#[derive(Clone)]
pub struct RunningTrial {
    pub trial_id: i64,
    pub trial_run_id: i64,
    /// `DET_SESSION_TOKEN`: sent as `Grpc-Metadata-x-allocation-token: Bearer <token>`.
    pub token: String,
    pub start: StartTask,
}

impl RunningTrial {
    fn from_start(start: StartTask) -> Result<Self> {
        let env = |key: &str| start.env.get(key).cloned().with_context(|| format!("StartTask has no {key}"));
        let trial_id = env("DET_TRIAL_ID")?.parse().context("DET_TRIAL_ID is not a number")?;
        let trial_run_id = env("DET_TRIAL_RUN_ID")?.parse().context("DET_TRIAL_RUN_ID is not a number")?;
        let token = env("DET_SESSION_TOKEN")?;
        Ok(RunningTrial { trial_id, trial_run_id, token, start })
    }
}

/// Connects a fake agent with `count` slots and starts `count` one-trial experiments on it.
pub async fn start_trials(http: &reqwest::Client, base: &str, token: &str, count: usize) -> Result<(FakeAgent, Vec<RunningTrial>)> {
    let slots = u32::try_from(count).context("too many trials")?;
    let mut agent = FakeAgent::connect(base, "bench-agent", slots).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = api::create_body(api::SINGLE_CONFIG, true);
    for _ in 0..count {
        api::create_experiment(http, base, token, &body).await?;
    }
    let mut trials = Vec::with_capacity(count);
    for _ in 0..count {
        let start = agent.next_start(Duration::from_secs(30)).await.context("waiting for the trials to start")?;
        agent.running(&start).await?;
        trials.push(RunningTrial::from_start(start)?);
    }
    trials.sort_by_key(|t| t.trial_id);
    Ok((agent, trials))
}
