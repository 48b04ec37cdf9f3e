//! Create → trial process handed over: the time from `POST /api/v1/experiments` to the fake
//! agent receiving the `StartTask` of its trial (the moment the master hands the process to an
//! agent). Sequential, one experiment at a time; each trial then "runs" and exits 0 so its slot
//! frees up and its experiment completes before the next one is created.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::api;
use crate::fake_agent::FakeAgent;
use crate::load::Latencies;

pub struct CreateReport {
    pub iterations: usize,
    pub slots: u32,
    /// `POST /api/v1/experiments` round trip.
    pub create_response: Latencies,
    /// POST sent → `StartTask` received by the agent.
    pub to_start_task: Latencies,
    /// `Terminated` (exit 0) sent → the experiment reads `STATE_COMPLETED` (polled every 1 ms).
    pub exit_to_completed: Latencies,
}

pub async fn run(http: &reqwest::Client, base: &str, token: &str, iterations: usize, slots: u32) -> Result<CreateReport> {
    let mut agent = FakeAgent::connect(base, "bench-agent", slots).await?;
    // The agent is registered once the master has processed `AgentStarted`; give it a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = api::create_body(api::SINGLE_CONFIG, true);
    let (mut create, mut start, mut done) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..iterations {
        let sent = Instant::now();
        let post = async {
            let id = api::create_experiment(http, base, token, &body).await;
            (id, sent.elapsed())
        };
        let task = async {
            let start = agent.next_start(Duration::from_secs(10)).await;
            (start, sent.elapsed())
        };
        let ((id, posted), (task, started)) = tokio::join!(post, task);
        let id = id?;
        let task = task.with_context(|| format!("iteration {i}: waiting for the StartTask of experiment {id}"))?;
        if task.env.get("DET_EXPERIMENT_ID") != Some(&id.to_string()) {
            bail!("iteration {i}: StartTask is for experiment {:?}, not {id}", task.env.get("DET_EXPERIMENT_ID"));
        }
        create.push(posted);
        start.push(started);

        agent.running(&task).await?;
        let exited = Instant::now();
        agent.exit_ok(&task).await?;
        let completed = api::wait_experiment_state(http, base, token, id, "STATE_COMPLETED", Duration::from_millis(1)).await?;
        done.push(completed - exited);
    }
    Ok(CreateReport {
        iterations,
        slots,
        create_response: Latencies::from_durations(&create),
        to_start_task: Latencies::from_durations(&start),
        exit_to_completed: Latencies::from_durations(&done),
    })
}

impl CreateReport {
    pub fn print(&self) {
        println!(
            "### Create experiment → trial process handed over ({} sequential experiments, fake agent with {} slots)\n",
            self.iterations, self.slots
        );
        println!("| Interval | p50 ms | p95 ms | max ms | Target |");
        println!("|---|---:|---:|---:|---|");
        let row = |name: &str, l: &Latencies, target: &str| {
            println!("| {name} | {:.2} | {:.2} | {:.2} | {target} |", l.percentile_ms(50.0), l.percentile_ms(95.0), l.max_ms());
        };
        row("`POST /api/v1/experiments` response", &self.create_response, "");
        row("POST sent → agent receives `StartTask`", &self.to_start_task, "p50 < 100 ms");
        row("agent sends `Terminated` (exit 0) → experiment `STATE_COMPLETED`", &self.exit_to_completed, "");
        println!(
            "\nThe fake agent answers `Running` as soon as `StartTask` arrives; a real agent would then extract the \
             model definition and exec `python3 -m determined.exec.launch`, which is not measured here.\n"
        );
    }
}
