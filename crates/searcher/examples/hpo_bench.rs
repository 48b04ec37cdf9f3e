//! Benchmark driver for `bench/hpo`: runs one of our searchers against the synthetic multi-fidelity
//! function that `bench/hpo/synthetic.py` also implements, with simulated parallel workers, and
//! prints a JSON trace of (epochs spent so far, best full-fidelity loss so far).
//!
//! Usage: `hpo_bench SPEC.json` or `hpo_bench -` (spec on stdin); `hpo_bench --eval SPEC.json`
//! prints the function at the spec's `points` instead (for the cross-language agreement test).
//!
//! The function (document changes in `bench/hpo/README.md` and `synthetic.py` too): x in [0,1]^4,
//!   final(x) = 0.05 + (x0-0.3)^2 + 0.8 (x1-0.7)^2 + 0.6 (x2-0.5)^2 + 0.4 (x3-0.2)^2
//!              + 0.05 (1 - cos(6 pi (x1-0.7)))
//!   alpha(x) = 0.3 + 1.2 x0          (a high "learning rate" learns fast but ends worse)
//!   start(x) = 1.0 + 0.5 x3
//!   loss(x, t) = final(x) + (start(x) - final(x)) (1 + t)^-alpha(x)        (t = epochs, >= 1)
//!   observed(x, t) = loss(x, t) + sigma sqrt(3) (2 u(x, t) - 1)
//!   epoch duration(x) = 0.5 + u(x, 2^32)  (simulated time: trials finish out of order)
//! with u a SplitMix64 hash of (noise_seed, the IEEE bits of x0..x3, t) mapped to [0, 1).
//!
//! Workers: an event queue in simulated time. A free worker takes the next requested trial; each
//! epoch of trial x ends `duration(x)` later and reports a validation; ties go to the lower
//! request id. Compute is the number of epochs trained across all trials; the run ends when the
//! searcher shuts down or `budget` epochs are spent.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::process::ExitCode;

use resolute_searcher::{
    AdaptiveAshaConfig, AdaptiveMode, AsyncHalvingConfig, Event, HyperparameterSpace, Hyperparameters, MethodConfig, Operation,
    RandomConfig, RequestId, Searcher, SearcherConfig, TrainingLength,
};
use serde::Deserialize;
use serde_json::{Value, json};

const DIMS: usize = 4;

#[derive(Deserialize)]
struct Spec {
    method: MethodSpec,
    #[serde(default = "default_workers")]
    workers: usize,
    #[serde(default)]
    seed: u32,
    /// Epochs (compute) after which the run stops.
    budget: u64,
    max_epochs: u64,
    function: FunctionSpec,
    /// Only for `--eval`: points `[x0, x1, x2, x3, t]`.
    #[serde(default)]
    points: Vec<[f64; DIMS + 1]>,
}

fn default_workers() -> usize {
    4
}

#[derive(Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
enum MethodSpec {
    Random {
        max_trials: usize,
    },
    AdaptiveAsha {
        max_trials: usize,
        #[serde(default)]
        divisor: Option<f64>,
        #[serde(default)]
        max_rungs: Option<usize>,
        #[serde(default)]
        mode: Option<AdaptiveMode>,
    },
    AsyncHalving {
        max_trials: usize,
        num_rungs: usize,
        #[serde(default)]
        divisor: Option<f64>,
    },
}

#[derive(Deserialize, Clone, Copy)]
struct FunctionSpec {
    noise_seed: u64,
    sigma: f64,
}

fn splitmix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform number in [0, 1) determined by the seed, the point and `t`.
fn unit_hash(seed: u64, x: &[f64; DIMS], t: u64) -> f64 {
    let mut h = seed;
    for xi in x {
        h = splitmix64(h ^ xi.to_bits());
    }
    h = splitmix64(h ^ t);
    (h >> 11) as f64 / (1u64 << 53) as f64
}

fn final_loss(x: &[f64; DIMS]) -> f64 {
    0.05 + (x[0] - 0.3).powi(2)
        + 0.8 * (x[1] - 0.7).powi(2)
        + 0.6 * (x[2] - 0.5).powi(2)
        + 0.4 * (x[3] - 0.2).powi(2)
        + 0.05 * (1.0 - (6.0 * std::f64::consts::PI * (x[1] - 0.7)).cos())
}

/// Noise-free loss after `t` epochs.
fn true_loss(x: &[f64; DIMS], t: u64) -> f64 {
    let fin = final_loss(x);
    let alpha = 0.3 + 1.2 * x[0];
    let start = 1.0 + 0.5 * x[3];
    fin + (start - fin) * (1.0 + t as f64).powf(-alpha)
}

fn observed_loss(f: FunctionSpec, x: &[f64; DIMS], t: u64) -> f64 {
    true_loss(x, t) + f.sigma * 3f64.sqrt() * (2.0 * unit_hash(f.noise_seed, x, t) - 1.0)
}

fn epoch_duration(f: FunctionSpec, x: &[f64; DIMS]) -> f64 {
    0.5 + unit_hash(f.noise_seed, x, 1 << 32)
}

fn point(hparams: &Value) -> Result<[f64; DIMS], String> {
    let mut x = [0.0; DIMS];
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = hparams[format!("x{i}")].as_f64().ok_or_else(|| format!("hyperparameters lack a number x{i}: {hparams}"))?;
    }
    Ok(x)
}

fn searcher_config(spec: &Spec) -> SearcherConfig {
    let mut space = Hyperparameters::new();
    for i in 0..DIMS {
        space.insert(format!("x{i}"), HyperparameterSpace::Double { min: 0.0, max: 1.0, count: None });
    }
    let length = TrainingLength::max_time("epochs", spec.max_epochs);
    let method = match &spec.method {
        MethodSpec::Random { max_trials } => {
            let mut c = RandomConfig::new(*max_trials);
            c.max_concurrent_trials = spec.workers;
            c.length = Some(length);
            MethodConfig::Random(c)
        }
        MethodSpec::AdaptiveAsha { max_trials, divisor, max_rungs, mode } => {
            let mut c = AdaptiveAshaConfig::new(*max_trials, length);
            c.max_concurrent_trials = spec.workers;
            c.divisor = divisor.unwrap_or(c.divisor);
            c.max_rungs = max_rungs.unwrap_or(c.max_rungs);
            c.mode = mode.unwrap_or(c.mode);
            MethodConfig::AdaptiveAsha(c)
        }
        MethodSpec::AsyncHalving { max_trials, num_rungs, divisor } => {
            let mut c = AsyncHalvingConfig::new(*num_rungs, *max_trials, length);
            c.max_concurrent_trials = spec.workers;
            c.divisor = divisor.unwrap_or(c.divisor);
            MethodConfig::AsyncHalving(c)
        }
    };
    SearcherConfig { method, hyperparameters: space, smaller_is_better: true, experiment_seed: spec.seed }
}

struct Running {
    x: [f64; DIMS],
    epochs: u64,
    next_done: f64,
}

/// Runs the search; returns the trace `[compute, best true loss at max_epochs]`, the compute spent
/// and the number of trials started.
fn run(spec: &Spec) -> Result<Value, String> {
    let mut searcher = Searcher::new(searcher_config(spec)).map_err(|e| e.to_string())?;
    let mut queue: VecDeque<(RequestId, Value)> = VecDeque::new();
    let mut running: BTreeMap<RequestId, Running> = BTreeMap::new();
    let mut stopped: Vec<RequestId> = Vec::new();
    let mut pending = searcher.initial_operations().map_err(|e| e.to_string())?;
    let (mut now, mut compute, mut started) = (0.0f64, 0u64, 0usize);
    let mut best = f64::INFINITY;
    let mut trace: Vec<(u64, f64)> = Vec::new();
    loop {
        for op in pending.drain(..) {
            match op {
                Operation::Create { request_id, hparams, .. } => queue.push_back((request_id, hparams)),
                Operation::Stop { request_id } => stopped.push(request_id),
                Operation::Close { .. } | Operation::Shutdown { .. } => {}
            }
        }
        let mut events = Vec::new();
        // Stops take effect at once: the trial exits before training another epoch.
        for id in stopped.drain(..) {
            if running.remove(&id).is_some() {
                events.push(Event::TrialClosed { request_id: id });
            } else if let Some(pos) = queue.iter().position(|(q, _)| *q == id) {
                queue.remove(pos);
                events.push(Event::TrialClosed { request_id: id });
            }
        }
        while running.len() < spec.workers {
            let Some((id, hparams)) = queue.pop_front() else { break };
            let x = point(&hparams)?;
            running.insert(id, Running { x, epochs: 0, next_done: now + epoch_duration(spec.function, &x) });
            started += 1;
            events.push(Event::TrialCreated { request_id: id });
        }
        if !events.is_empty() {
            for e in &events {
                pending.extend(searcher.apply(e).map_err(|e| e.to_string())?);
            }
            continue;
        }
        if searcher.shutdown().is_some() || compute >= spec.budget {
            break;
        }
        // The next epoch to finish; ties go to the lower request id (BTreeMap order).
        let Some((&id, _)) = running.iter().min_by(|a, b| a.1.next_done.total_cmp(&b.1.next_done)) else {
            return Err("the searcher left nothing to run but never shut down".into());
        };
        let trial = running.get_mut(&id).ok_or("lost a running trial")?;
        now = trial.next_done;
        trial.epochs += 1;
        trial.next_done = now + epoch_duration(spec.function, &trial.x);
        compute += 1;
        let (x, t) = (trial.x, trial.epochs);
        let metric = observed_loss(spec.function, &x, t);
        pending
            .extend(searcher.apply(&Event::ValidationCompleted { request_id: id, metric, time_progress: t }).map_err(|e| e.to_string())?);
        if t >= spec.max_epochs {
            let value = true_loss(&x, spec.max_epochs);
            if value < best {
                best = value;
                trace.push((compute, best));
            }
            running.remove(&id);
            pending.extend(searcher.apply(&Event::TrialClosed { request_id: id }).map_err(|e| e.to_string())?);
        }
    }
    Ok(json!({ "trace": trace, "compute": compute, "trials": started }))
}

fn eval(spec: &Spec) -> Value {
    let rows: Vec<Value> = spec
        .points
        .iter()
        .map(|p| {
            let x = [p[0], p[1], p[2], p[3]];
            let t = p[4] as u64;
            json!({ "true": true_loss(&x, t), "observed": observed_loss(spec.function, &x, t), "duration": epoch_duration(spec.function, &x) })
        })
        .collect();
    Value::Array(rows)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (eval_mode, path) = match args.as_slice() {
        [flag, path] if flag == "--eval" => (true, path.as_str()),
        [path] => (false, path.as_str()),
        _ => {
            eprintln!("usage: hpo_bench [--eval] SPEC.json|-");
            return ExitCode::from(2);
        }
    };
    let text = if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    } else {
        std::fs::read_to_string(path)
    };
    let spec: Spec = match text.map_err(|e| e.to_string()).and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hpo_bench: cannot read the spec {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let out = if eval_mode { Ok(eval(&spec)) } else { run(&spec) };
    match out {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hpo_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
