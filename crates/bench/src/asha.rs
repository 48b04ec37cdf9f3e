//! ASHA bookkeeping overhead: one `adaptive_asha` experiment of `max_trials` no-op trials on a fake
//! agent with S artificial slots (`max_concurrent_trials` = S), run through the real master. The
//! trials make the harness's runtime calls and spend a simulated time per batch (`asha_trial`).
//! Measured: the makespan from `POST /api/v1/experiments` to the experiment reading
//! `STATE_COMPLETED`, against the ideal makespan of the same search with zero overhead
//! (`asha_ideal`: the same searcher, configuration and seed replayed in simulated time).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use resolute_api::agent_protocol::{MasterToAgent, StartTask, TaskExitInfo, TaskState};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::api;
use crate::asha_ideal::{AshaPlan, IdealRun, RunSummary, ideal_run, list_schedule};
use crate::asha_trial::{TrialOutcome, run_trial};
use crate::fake_agent::FakeAgent;
use crate::load::Latencies;

/// How often the experiment's state is read once every trial has exited, and before (reading an
/// experiment lists its trials and scans its validations: frequent reads would load the master).
const STATE_POLL: Duration = Duration::from_millis(2);
const STATE_POLL_EARLY: Duration = Duration::from_millis(500);

pub struct AshaReport {
    pub plan: AshaPlan,
    pub makespan: Duration,
    pub ideal: IdealRun,
    pub measured: RunSummary,
    /// The measured trials' trained lengths list-scheduled on the slots, in batches.
    pub measured_list_units: u64,
    /// Trials (in creation order) whose hyperparameters differ from the replay's.
    pub hparams_mismatches: usize,
    /// Slot-time inside trials: `StartTask` received → `Terminated` sent, summed.
    pub busy: Duration,
    /// CPU time (user + system) the master and the benchmark process used during the run.
    pub master_cpu: Option<Duration>,
    pub bench_cpu: Option<Duration>,
    /// Last validation report sent → the trial sees the preemption signal (trials ASHA stopped).
    pub stop_latency: Latencies,
    /// Where a trial's slot time outside training goes: `POST runs/start` before the first batch,
    /// the last reports before the exit, and a trial's `Terminated` sent → the next `StartTask`
    /// received (the n-th exit matched with the n-th start after the first `slots`).
    pub start_call: Latencies,
    pub last_reports: Latencies,
    pub exit_to_start: Latencies,
    /// Trials that ended on the preemption signal (ASHA stopped them below `max_time`).
    pub preempted: usize,
    pub trial_errors: usize,
    pub first_error: Option<String>,
}

/// A trial's end as the fake agent learns it.
struct Finished {
    start: StartTask,
    hparams: Value,
    outcome: Result<TrialOutcome>,
}

/// Runs the search on the master at `base` (process `master_pid`, whose CPU time is reported).
pub async fn run(http: &reqwest::Client, base: &str, token: &str, master_pid: u32, plan: AshaPlan) -> Result<AshaReport> {
    let ideal = ideal_run(&plan).context("replaying the search with zero overhead")?;
    let boundaries = plan.boundaries();
    let mut agent = FakeAgent::connect(base, "asha-agent", plan.slots).await?;
    // The agent is registered once the master has processed `AgentStarted`; give it a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = api::create_body(&plan.yaml(), true);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Finished>();

    let cpu_before = (cpu_time(master_pid), cpu_time(std::process::id()));
    let created = Instant::now();
    let id = api::create_experiment(http, base, token, &body).await?;
    // Generous: the run should take the ideal makespan plus a few percent.
    let deadline = Duration::from_secs(120) + plan.unit * u32::try_from(ideal.makespan_units * 20).unwrap_or(u32::MAX);
    let (end_tx, mut end_rx) = oneshot::channel();
    let (all_exited_tx, all_exited) = watch::channel(false);
    tokio::spawn(wait_completed(http.clone(), base.to_owned(), token.to_owned(), id, deadline, all_exited, end_tx));

    let mut outcomes: Vec<(TrialOutcome, Value)> = Vec::new();
    let mut started: HashMap<String, Instant> = HashMap::new();
    let (mut start_times, mut exit_times) = (Vec::new(), Vec::new());
    let (mut busy, mut trial_errors, mut first_error) = (Duration::ZERO, 0, None);
    let completed = loop {
        tokio::select! {
            message = agent.recv(deadline) => match message.context("the fake agent lost the master")? {
                MasterToAgent::StartTask(start) => {
                    let now = Instant::now();
                    start_times.push(now);
                    started.insert(start.container_id.clone(), now);
                    agent.running(&start).await?;
                    let hparams = start.env.get("DET_HPARAMS").and_then(|h| serde_json::from_str(h).ok()).unwrap_or(Value::Null);
                    let (http, base, done, boundaries, unit) = (http.clone(), base.to_owned(), done_tx.clone(), boundaries.clone(), plan.unit);
                    tokio::spawn(async move {
                        let outcome = run_trial(&http, &base, &start, &boundaries, unit).await;
                        let _ = done.send(Finished { start: *start, hparams, outcome });
                    });
                }
                // The fake agent runs no process, so it needs no work dir.
                MasterToAgent::TaskArchiveChunk(_) => {}
                other => bail!("the benchmark's trials are never killed, but the master sent {other:?}"),
            },
            Some(finished) = done_rx.recv() => {
                match finished.outcome {
                    Ok(outcome) => {
                        agent.exit_ok(&finished.start).await?;
                        outcomes.push((outcome, finished.hparams));
                    }
                    Err(e) => {
                        trial_errors += 1;
                        first_error.get_or_insert_with(|| format!("{e:#}"));
                        let exit = TaskExitInfo { exit_code: Some(1), signal: None, failure: Some(format!("{e:#}")) };
                        agent.report(&finished.start, TaskState::Terminated, Some(exit)).await?;
                    }
                }
                exit_times.push(Instant::now());
                busy += started.remove(&finished.start.container_id).map_or(Duration::ZERO, |t| t.elapsed());
                if outcomes.len() + trial_errors >= plan.max_trials {
                    all_exited_tx.send_replace(true);
                }
            },
            ended = &mut end_rx => break ended.context("the state poller stopped")??,
        }
    };
    let makespan = completed - created;
    let cpu_used = |before: Option<Duration>, pid: u32| Some(cpu_time(pid)?.saturating_sub(before?));
    let master_cpu = cpu_used(cpu_before.0, master_pid);
    let bench_cpu = cpu_used(cpu_before.1, std::process::id());
    outcomes.sort_by_key(|(o, _)| o.trial_id);
    let measured = RunSummary {
        trials: outcomes.len() + trial_errors,
        stopped_early: outcomes.iter().filter(|(o, _)| o.trained < plan.max_time).count(),
        trained_units: outcomes.iter().map(|(o, _)| o.trained).sum(),
        hparams: outcomes.iter().map(|(_, h)| h.clone()).collect(),
    };
    let lengths: Vec<u64> = outcomes.iter().map(|(o, _)| o.trained).collect();
    let hparams_mismatches = measured.hparams.iter().zip(&ideal.summary.hparams).filter(|(a, b)| a != b).count()
        + measured.hparams.len().abs_diff(ideal.summary.hparams.len());
    let preempted = outcomes.iter().filter(|(o, _)| o.preempted).count();
    let stop_latency: Vec<Duration> = outcomes.iter().filter_map(|(o, _)| o.stop_latency).collect();
    let start_call: Vec<Duration> = outcomes.iter().map(|(o, _)| o.start_call).collect();
    let last_reports: Vec<Duration> = outcomes.iter().filter(|(o, _)| !o.preempted).map(|(o, _)| o.last_reports).collect();
    let first_wave = start_times.len().min(plan.slots as usize);
    let exit_to_start: Vec<Duration> =
        exit_times.iter().zip(&start_times[first_wave..]).map(|(exit, start)| start.saturating_duration_since(*exit)).collect();
    Ok(AshaReport {
        measured_list_units: list_schedule(&lengths, plan.slots),
        plan,
        makespan,
        ideal,
        measured,
        hparams_mismatches,
        busy,
        master_cpu,
        bench_cpu,
        stop_latency: Latencies::from_durations(&stop_latency),
        start_call: Latencies::from_durations(&start_call),
        last_reports: Latencies::from_durations(&last_reports),
        exit_to_start: Latencies::from_durations(&exit_to_start),
        preempted,
        trial_errors,
        first_error,
    })
}

/// Polls the experiment until it completes; any other end state, or the deadline, is an error.
/// Polls often only once every trial has exited (`all_exited`), when completion is imminent.
async fn wait_completed(
    http: reqwest::Client,
    base: String,
    token: String,
    id: i64,
    deadline: Duration,
    mut all_exited: watch::Receiver<bool>,
    done: oneshot::Sender<Result<Instant>>,
) {
    let url = format!("{base}/api/v1/experiments/{id}");
    let started = Instant::now();
    let result = loop {
        match api::get_json(&http, &url, &token).await {
            Ok(body) => match body.pointer("/experiment/state").and_then(Value::as_str).unwrap_or("") {
                "STATE_COMPLETED" => break Ok(Instant::now()),
                s @ ("STATE_ERROR" | "STATE_CANCELED") => break Err(anyhow::anyhow!("experiment {id} ended in {s}")),
                _ => {}
            },
            Err(e) => break Err(e),
        }
        if started.elapsed() > deadline {
            break Err(anyhow::anyhow!("experiment {id} did not complete within {deadline:?}"));
        }
        if *all_exited.borrow() {
            tokio::time::sleep(STATE_POLL).await;
        } else {
            let _ = tokio::time::timeout(STATE_POLL_EARLY, all_exited.wait_for(|all| *all)).await;
        }
    };
    let _ = done.send(result);
}

/// User + system CPU time of a process, from `/proc/<pid>/stat` (in USER_HZ = 100 ticks per second,
/// as on every mainstream Linux architecture).
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

impl AshaReport {
    fn unit_ms(&self) -> f64 {
        self.plan.unit.as_secs_f64() * 1000.0
    }

    pub fn ideal_makespan(&self) -> Duration {
        self.plan.unit * u32::try_from(self.ideal.makespan_units).unwrap_or(u32::MAX)
    }

    pub fn overhead_percent(&self) -> f64 {
        let ideal = self.ideal_makespan().as_secs_f64();
        (self.makespan.as_secs_f64() - ideal) / ideal * 100.0
    }

    pub fn print(&self) {
        let p = &self.plan;
        let (m, i) = (&self.measured, &self.ideal.summary);
        println!(
            "### ASHA bookkeeping overhead ({} trials, `adaptive_asha` standard mode, divisor {}, max_rungs {}, max_time {} batches; \
             fake agent with {} slots = max_concurrent_trials; {:.1} ms per batch)\n",
            p.max_trials,
            p.divisor,
            p.max_rungs,
            p.max_time,
            p.slots,
            self.unit_ms()
        );
        let ideal_s = self.ideal_makespan().as_secs_f64();
        let list_s = p.unit.as_secs_f64() * self.measured_list_units as f64;
        println!("| Measure | Measured | Ideal (zero overhead) |");
        println!("|---|---:|---:|");
        println!("| Makespan, create → `STATE_COMPLETED` | **{:.2} s** | {ideal_s:.2} s |", self.makespan.as_secs_f64());
        println!("| **Overhead over the ideal makespan** | **{:.1} %** | target ≤ 5 % (Ray Tune's bar: 28 %) |", self.overhead_percent());
        println!("| Trials | {} | {} |", m.trials, i.trials);
        println!(
            "| Trials stopped early by ASHA (measured: by the preemption signal) | {} ({}) | {} |",
            m.stopped_early, self.preempted, i.stopped_early
        );
        println!("| Batches trained (sum over trials) | {} | {} |", m.trained_units, i.trained_units);
        // The measured run's decisions can differ (see the README): scale the ideal by the work done.
        let adjusted_s = ideal_s * m.trained_units as f64 / i.trained_units.max(1) as f64;
        let over_adjusted = (self.makespan.as_secs_f64() - adjusted_s) / adjusted_s * 100.0;
        println!("| Ideal makespan scaled by the batches actually trained; overhead over it | {over_adjusted:.1} % | {adjusted_s:.2} s |");
        let over_list = (self.makespan.as_secs_f64() - list_s) / list_s * 100.0;
        println!(
            "| Makespan of the measured trials' lengths list-scheduled on {} slots; overhead over it | {over_list:.1} % | {list_s:.2} s |",
            p.slots
        );
        let per_trial_ms = (self.makespan.as_secs_f64() - ideal_s) * f64::from(p.slots) / m.trials.max(1) as f64 * 1000.0;
        println!("| Overhead per trial (slot-time lost ÷ trials) | {per_trial_ms:.1} ms | |");
        let stop = &self.stop_latency;
        println!(
            "| Stopping validation sent → the trial sees the preemption signal, p50 / p95 / max | {:.1} / {:.1} / {:.1} ms | 0 |",
            stop.percentile_ms(50.0),
            stop.percentile_ms(95.0),
            stop.max_ms()
        );
        for (what, latencies) in [
            ("`POST /api/v1/runs/start` before the first batch", &self.start_call),
            ("Last batch → its validation and progress reports answered (trials not stopped)", &self.last_reports),
            ("A trial's exit sent → the next `StartTask` received", &self.exit_to_start),
        ] {
            println!(
                "| {what}, mean / p50 / p95 | {:.1} / {:.1} / {:.1} ms | 0 |",
                latencies.mean_ms(),
                latencies.percentile_ms(50.0),
                latencies.percentile_ms(95.0)
            );
        }
        // Where the slots' time went: S × makespan = training + the rest of the trials' lives + empty slots.
        let slots = f64::from(p.slots);
        let (unit, busy) = (p.unit.as_secs_f64(), self.busy.as_secs_f64());
        let (train_m, train_i) = (unit * m.trained_units as f64, unit * i.trained_units as f64);
        let (total_m, total_i) = (slots * self.makespan.as_secs_f64(), slots * ideal_s);
        println!("| Slot-time: slots × makespan | {total_m:.1} s | {total_i:.1} s |");
        println!("| … training (batches × batch time) | {train_m:.1} s | {train_i:.1} s |");
        println!("| … in the trial, not training (runtime calls, waiting for the stop signal) | {:.1} s | 0 |", busy - train_m);
        println!(
            "| … slot empty (exit → next `StartTask`, and ASHA's tail with fewer trials than slots) | {:.1} s | {:.1} s |",
            total_m - busy,
            total_i - train_i
        );
        let per_trial = |cpu: Option<Duration>| {
            cpu.map_or("?".to_owned(), |c| {
                format!("{:.1} s ({:.1} ms per trial)", c.as_secs_f64(), c.as_secs_f64() * 1000.0 / m.trials.max(1) as f64)
            })
        };
        println!("| CPU time of the master during the run | {} | |", per_trial(self.master_cpu));
        println!("| CPU time of the benchmark (fake agent and trials) | {} | |", per_trial(self.bench_cpu));
        println!();
        println!(
            "Hyperparameters of the trials in creation order: {} of {} differ from the replay's (0 means the master ran the \
             same searcher configuration and seed).",
            self.hparams_mismatches,
            m.hparams.len()
        );
        println!("The replay never ran more than {} trials at once (slots: {}).", self.ideal.max_running, p.slots);
        if self.trial_errors > 0 {
            println!("\n{} trials failed; first error: {}", self.trial_errors, self.first_error.as_deref().unwrap_or("?"));
        }
        println!();
    }
}
