//! End-to-end behaviour of every search method, driven by the deterministic simulator: seeded
//! workers, out-of-order completion, stops noticed late, optional failures.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use resolute_searcher::simulate::{SimulationOptions, SimulationReport, simulate};
use resolute_searcher::{
    AdaptiveAshaConfig, AshaVariant, AsyncHalvingConfig, Event, ExitReason, GridConfig, HyperparameterSpace as Hp, Hyperparameters,
    MethodConfig, Operation, PbtConfig, RandomConfig, RequestId, Searcher, SearcherConfig, TrainingLength, preview,
};
use serde_json::{Value, json};

fn config(method: MethodConfig, hyperparameters: Hyperparameters, seed: u32) -> SearcherConfig {
    SearcherConfig { method, hyperparameters, smaller_is_better: true, experiment_seed: seed }
}

fn space() -> Hyperparameters {
    let mut optimizer = Hyperparameters::new();
    optimizer.insert("lr".into(), Hp::Log { min: -4.0, max: -1.0, base: 10.0, count: None });
    optimizer.insert("momentum".into(), Hp::Double { min: 0.5, max: 0.99, count: None });
    let mut s = Hyperparameters::new();
    s.insert("optimizer".into(), Hp::Nested(optimizer));
    s.insert("layers".into(), Hp::Int { min: 1, max: 8, count: None });
    s.insert("dropout".into(), Hp::Double { min: 0.0, max: 0.5, count: None });
    s.insert("activation".into(), Hp::Categorical(vec![json!("relu"), json!("tanh")]));
    s.insert("batch_size".into(), Hp::Const(json!(64)));
    s
}

/// A loss curve: each configuration converges, at its own speed, to a floor set by how far its
/// hyperparameters are from a sweet spot.
fn curve(hp: &Value, t: u64) -> f64 {
    let lr = hp["optimizer"]["lr"].as_f64().unwrap_or(1e-3);
    let momentum = hp["optimizer"]["momentum"].as_f64().unwrap_or(0.9);
    let layers = hp["layers"].as_f64().unwrap_or(4.0);
    let dropout = hp["dropout"].as_f64().unwrap_or(0.2);
    let floor = (lr.log10() + 2.5).powi(2) + (momentum - 0.9).powi(2) + 0.01 * (layers - 5.0).abs() + (dropout - 0.2).powi(2);
    let speed = 0.2 + lr * 10.0;
    floor + 2.0 / (1.0 + speed * t as f64)
}

/// Every `Create` in order: (request id, hparams, checkpoint_from).
fn creates(report: &SimulationReport) -> Vec<(RequestId, Value, Option<RequestId>)> {
    report
        .initial
        .iter()
        .chain(report.steps.iter().flat_map(|s| &s.operations))
        .filter_map(|op| match op {
            Operation::Create { request_id, hparams, checkpoint_from, .. } => Some((*request_id, hparams.clone(), *checkpoint_from)),
            _ => None,
        })
        .collect()
}

fn event_trial(event: &Event) -> RequestId {
    match *event {
        Event::TrialCreated { request_id }
        | Event::ValidationCompleted { request_id, .. }
        | Event::TrialExitedEarly { request_id, .. }
        | Event::TrialClosed { request_id } => request_id,
    }
}

fn assert_monotone(progress: &[f64]) {
    for w in progress.windows(2) {
        assert!(w[1] + 1e-12 >= w[0], "progress dropped from {} to {}", w[0], w[1]);
    }
    assert_eq!(progress.last().copied(), Some(1.0));
}

#[test]
fn grid_covers_every_point_exactly_once() {
    let mut nested = Hyperparameters::new();
    nested.insert("lr".into(), Hp::Log { min: -3.0, max: -1.0, base: 10.0, count: Some(3) });
    nested.insert("momentum".into(), Hp::Double { min: 0.0, max: 1.0, count: Some(2) });
    let mut s = Hyperparameters::new();
    s.insert("a".into(), Hp::Int { min: 1, max: 10, count: Some(4) });
    s.insert("b".into(), Hp::Categorical(vec![json!("x"), json!("y"), json!("z")]));
    s.insert("c".into(), Hp::Const(json!(5)));
    s.insert("opt".into(), Hp::Nested(nested));
    let grid = GridConfig { max_concurrent_trials: 5, length: Some(TrainingLength::max_time("batches", 10)) };
    let searcher = Searcher::new(config(MethodConfig::Grid(grid), s, 1)).unwrap();
    let mut options = SimulationOptions::new(4, 10);
    options.validation_period = 5;
    let (_, report) = simulate(searcher, &options, &curve).unwrap();

    // Independent expectation: the product written out by hand.
    let key = |a: i64, b: &str, lr: f64, m: f64| format!("{a}/{b}/{lr:.9e}/{m:.3}");
    let mut expected = BTreeSet::new();
    for a in [1, 4, 7, 10] {
        for b in ["x", "y", "z"] {
            for lr in [1e-3, 1e-2, 1e-1] {
                for m in [0.0, 1.0] {
                    expected.insert(key(a, b, lr, m));
                }
            }
        }
    }
    let created = creates(&report);
    let got: Vec<String> = created
        .iter()
        .map(|(_, h, _)| {
            assert_eq!(h["c"], 5);
            key(
                h["a"].as_i64().unwrap(),
                h["b"].as_str().unwrap(),
                h["opt"]["lr"].as_f64().unwrap(),
                h["opt"]["momentum"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got.len(), 72, "4 x 3 x 3 x 2 points");
    assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), expected, "every point exactly once");
    assert_eq!(report.shutdown, Some(false));
    assert!(report.max_running <= 4);
    assert_monotone(&report.progress);
}

/// Trials requested and not yet closed, after every step.
fn outstanding_over_time(report: &SimulationReport) -> Vec<usize> {
    let mut open = report.initial.iter().filter(|op| matches!(op, Operation::Create { .. })).count();
    let mut out = vec![open];
    for step in &report.steps {
        open += step.operations.iter().filter(|op| matches!(op, Operation::Create { .. })).count();
        if matches!(step.event, Event::TrialClosed { .. }) {
            open -= 1;
        }
        out.push(open);
    }
    out
}

#[test]
fn random_honours_max_trials_and_max_concurrent_trials() {
    let mut random = RandomConfig::new(25);
    random.max_concurrent_trials = 3;
    let searcher = Searcher::new(config(MethodConfig::Random(random), space(), 7)).unwrap();
    let mut options = SimulationOptions::new(8, 20);
    options.validation_period = 5;
    options.invalid_hp_probability = 0.3;
    let (searcher, report) = simulate(searcher, &options, &curve).unwrap();

    let invalid = report.trials.values().filter(|t| t.exit == Some(ExitReason::InvalidHp)).count();
    assert!(invalid > 0, "the seed should produce some invalid trials");
    assert_eq!(report.trials.len() - invalid, 25, "invalid-HP trials are replaced, valid ones count");
    assert!(outstanding_over_time(&report).iter().all(|&n| n <= 3), "never more than 3 trials at once");
    assert_eq!(report.shutdown, Some(false));
    assert_eq!(searcher.progress(), 1.0);

    let single = Searcher::new(config(MethodConfig::Single { length: None }, space(), 7)).unwrap();
    let (_, report) = simulate(single, &SimulationOptions::new(8, 20), &curve).unwrap();
    assert_eq!(report.trials.len(), 1);
    assert_eq!(report.shutdown, Some(false));
}

/// Replays the published 0.38 stopping rule on the events one bracket saw and checks every
/// decision: a validation enters each rung whose length it reached, ranks by counting strictly
/// better metrics, and stops the trial unless rank < max(floor(n/divisor), 1) (always at the top).
fn check_stopping_rule(
    report: &SimulationReport,
    in_bracket: &dyn Fn(RequestId) -> bool,
    lengths: &[u64],
    divisor: usize,
    max_trials: usize,
) -> Vec<usize> {
    let mut rungs: Vec<Vec<f64>> = vec![Vec::new(); lengths.len()];
    let mut next_rung: HashMap<RequestId, usize> = HashMap::new();
    let mut done: BTreeSet<RequestId> = BTreeSet::new();
    // Trials created so far, starting from the initial batch.
    let mut created = report.initial.iter().filter(|op| op.request_id().is_some_and(in_bracket)).count();
    for step in &report.steps {
        let id = event_trial(&step.event);
        if !in_bracket(id) {
            continue;
        }
        let mut expect_stop = false;
        match step.event {
            Event::ValidationCompleted { metric, time_progress, .. } if !done.contains(&id) => {
                let mut r = next_rung.get(&id).copied().unwrap_or(0);
                while r < lengths.len() && time_progress >= lengths[r] {
                    rungs[r].push(metric);
                    let n = rungs[r].len();
                    let better = rungs[r].iter().filter(|m| **m < metric).count();
                    if r == lengths.len() - 1 || better >= (n / divisor).max(1) {
                        expect_stop = true;
                        break;
                    }
                    r += 1;
                }
                next_rung.insert(id, r);
            }
            Event::TrialClosed { .. } => {
                done.insert(id);
            }
            _ => {}
        }
        let stopped = step.operations.contains(&Operation::Stop { request_id: id });
        assert_eq!(stopped, expect_stop, "stop decision for trial {id} at {:?}", step.event);
        let new = step.operations.iter().filter(|op| matches!(op, Operation::Create { .. })).count();
        let expect_new = usize::from(expect_stop && created < max_trials);
        assert_eq!(new, expect_new, "a stop frees a slot while the budget lasts ({:?})", step.event);
        created += new;
        if expect_stop {
            done.insert(id);
        }
    }
    assert_eq!(created, max_trials);
    rungs.iter().map(Vec::len).collect()
}

#[test]
fn async_halving_follows_the_published_stopping_rule() {
    let mut asha = AsyncHalvingConfig::new(4, 200, TrainingLength::max_time("batches", 81));
    asha.divisor = 3.0;
    asha.max_concurrent_trials = 12;
    let config = config(MethodConfig::AsyncHalving(asha), space(), 11);
    let plan = preview(&config).unwrap();
    let lengths: Vec<u64> = plan.brackets[0].rungs.iter().map(|r| r.length).collect();
    assert_eq!(lengths, vec![3, 9, 27, 81]);
    let mut options = SimulationOptions::new(12, 81);
    options.seed = 5;
    // Validations every 10 batches: the first (t=10) reaches rungs 3 and 9 at once.
    options.validation_period = 10;
    let (searcher, report) = simulate(Searcher::new(config).unwrap(), &options, &curve).unwrap();

    let counts = check_stopping_rule(&report, &|_| true, &lengths, 3, 200);
    assert_eq!(searcher.rung_counts(), vec![counts.clone()]);
    assert_eq!(counts[0], 200, "every trial reaches the first rung");
    assert!(counts.windows(2).all(|w| w[1] <= w[0]) && counts[3] >= 1, "rungs thin out: {counts:?}");
    assert_eq!(report.shutdown, Some(false));
    assert!(report.max_running <= 12);
    assert_monotone(&report.progress);
}

#[test]
fn adaptive_asha_brackets_each_follow_the_rule() {
    let mut adaptive = AdaptiveAshaConfig::new(300, TrainingLength::max_time("batches", 256));
    adaptive.max_concurrent_trials = 16;
    let config = config(MethodConfig::AdaptiveAsha(adaptive), space(), 3);
    let plan = preview(&config).unwrap();
    assert_eq!(plan.brackets.iter().map(|b| b.rungs.len()).collect::<Vec<_>>(), vec![5, 4, 3]);
    let mut options = SimulationOptions::new(16, 256);
    options.validation_period = 4;
    options.seed = 9;
    let (searcher, report) = simulate(Searcher::new(config).unwrap(), &options, &curve).unwrap();

    let bracket_of: HashMap<RequestId, usize> = searcher.trials().map(|t| (t.request_id, t.bracket.unwrap())).collect();
    let rung_counts = searcher.rung_counts();
    for (b, bracket) in plan.brackets.iter().enumerate() {
        let lengths: Vec<u64> = bracket.rungs.iter().map(|r| r.length).collect();
        let counts = check_stopping_rule(&report, &|id| bracket_of[&id] == b, &lengths, 4, bracket.max_trials);
        assert_eq!(rung_counts[b], counts, "bracket {b}");
    }
    assert_eq!(creates(&report).len(), 300);
    assert_eq!(report.shutdown, Some(false));
    assert_monotone(&report.progress);
}

#[test]
fn promotion_variant_promotes_the_top_of_each_rung() {
    let mut asha = AsyncHalvingConfig::new(3, 60, TrainingLength::max_time("batches", 64));
    asha.variant = AshaVariant::Promotion;
    asha.max_concurrent_trials = 6;
    let config = config(MethodConfig::AsyncHalving(asha), space(), 21);
    let mut options = SimulationOptions::new(6, 64);
    options.validation_period = 4;
    let (searcher, report) = simulate(Searcher::new(config).unwrap(), &options, &curve).unwrap();
    assert_eq!(report.shutdown, Some(false));

    // A resumed promotion restarts a stopped trial's configuration from its checkpoint.
    let created = creates(&report);
    let fresh = created.iter().filter(|(_, _, parent)| parent.is_none()).count();
    assert_eq!(fresh, 60);
    let hparams: HashMap<RequestId, &Value> = created.iter().map(|(id, h, _)| (*id, h)).collect();
    let resumed: Vec<_> = created.iter().filter_map(|(id, _, p)| p.map(|p| (*id, p))).collect();
    assert!(!resumed.is_empty(), "some paused trials get promoted later");
    for (id, parent) in &resumed {
        assert_eq!(hparams[id], hparams[parent]);
        assert!(report.trials[parent].stopped, "only paused (stopped) trials are resumed");
    }

    // ASHA's invariant (Li et al., Alg. 2): in every rung but the top, the best floor(n/divisor)
    // entries have been promoted.
    let snapshot = searcher.snapshot();
    let rungs = snapshot["method_state"]["brackets"][0]["rungs"].as_array().unwrap();
    for rung in &rungs[..rungs.len() - 1] {
        let entries = rung.as_array().unwrap();
        let mut by_metric: Vec<(f64, bool)> =
            entries.iter().map(|e| (e["metric"].as_f64().unwrap(), e["promoted"].as_bool().unwrap())).collect();
        by_metric.sort_by(|a, b| a.0.total_cmp(&b.0));
        let top = by_metric.len() / 4;
        assert!(by_metric[..top].iter().all(|e| e.1), "top {top} of {} promoted", by_metric.len());
    }
    assert!(searcher.rung_counts()[0][2] >= 1, "someone reaches the top rung");
    assert_monotone(&report.progress);
}

#[test]
fn pbt_replaces_the_bottom_with_perturbed_copies_of_the_top() {
    let pbt = PbtConfig {
        population_size: 8,
        num_rounds: 5,
        length_per_round: TrainingLength::max_time("batches", 10),
        truncate_fraction: 0.25,
        resample_probability: 0.0,
        perturb_factor: 0.2,
    };
    let mut options = SimulationOptions::new(8, 50);
    options.validation_period = 10;
    options.seed = 4;
    let config = config(MethodConfig::Pbt(pbt), space(), 5);
    let (_, report) = simulate(Searcher::new(config).unwrap(), &options, &curve).unwrap();
    assert_eq!(report.shutdown, Some(false));

    // Reference: per member, the first metric at or past each round boundary; at a round's end
    // rank by (metric, id), stop the worst 2, copy the best 2.
    let created = creates(&report);
    let hparams: HashMap<RequestId, Value> = created.iter().map(|(id, h, _)| (*id, h.clone())).collect();
    let mut population: BTreeMap<RequestId, (u64, BTreeMap<u64, f64>)> =
        created[..8].iter().map(|(id, _, _)| (*id, (0, BTreeMap::new()))).collect();
    let mut closed = BTreeSet::new();
    let mut round = 0u64;
    let mut rounds_with_replacements = 0;
    for step in &report.steps {
        let id = event_trial(&step.event);
        match step.event {
            Event::ValidationCompleted { metric, time_progress, .. } => {
                // A validation stands for every round boundary it is the first to pass since the
                // member joined (a child resumed past a boundary never reports that round).
                if let Some((joined, m)) = population.get_mut(&id) {
                    let next = m.keys().next_back().map_or(*joined, |r| r + 1);
                    for r in next..time_progress / 10 {
                        m.insert(r, metric);
                    }
                }
            }
            Event::TrialClosed { .. } => {
                closed.insert(id);
            }
            _ => {}
        }
        let (mut stops, mut closes, mut parents) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
        if round < 5 && population.values().all(|(_, m)| m.contains_key(&round)) {
            let mut ranked: Vec<(f64, RequestId)> = population.iter().map(|(id, (_, m))| (m[&round], *id)).collect();
            ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if round == 4 {
                closes = population.keys().filter(|id| !closed.contains(*id)).copied().collect();
            } else {
                stops = ranked[6..].iter().map(|(_, id)| *id).filter(|id| !closed.contains(id)).collect();
                parents = ranked[..2].iter().map(|(_, id)| *id).collect();
                for (_, id) in &ranked[6..] {
                    population.remove(id);
                }
            }
            round += 1;
        }
        let got_stops: BTreeSet<_> = step
            .operations
            .iter()
            .filter_map(|op| match op {
                Operation::Stop { request_id } => Some(*request_id),
                _ => None,
            })
            .collect();
        let got_closes: BTreeSet<_> = step
            .operations
            .iter()
            .filter_map(|op| match op {
                Operation::Close { request_id } => Some(*request_id),
                _ => None,
            })
            .collect();
        let children: Vec<(RequestId, RequestId)> = step
            .operations
            .iter()
            .filter_map(|op| match op {
                Operation::Create { request_id, checkpoint_from: Some(p), .. } => Some((*request_id, *p)),
                _ => None,
            })
            .collect();
        assert_eq!(got_stops, stops, "bottom fraction stopped at {:?}", step.event);
        assert_eq!(got_closes, closes);
        assert_eq!(children.iter().map(|c| c.1).collect::<Vec<_>>(), parents, "children of the top fraction, best first");
        if !parents.is_empty() {
            rounds_with_replacements += 1;
        }
        for (child, parent) in children {
            assert_perturbed(&hparams[&parent], &hparams[&child], 0.2);
            population.insert(child, (round, BTreeMap::new()));
        }
    }
    assert_eq!(rounds_with_replacements, 4, "every round but the last replaces");
    assert_eq!(created.len(), 8 + 4 * 2);
}

/// With no resampling, each numeric value moves by exactly `1 ± factor` (clamped; ints rounded
/// away), and categorical and const values are kept.
fn assert_perturbed(parent: &Value, child: &Value, factor: f64) {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(1.0);
    let one_of = |got: f64, old: f64, min: f64, max: f64| {
        close(got, (old * (1.0 - factor)).clamp(min, max)) || close(got, (old * (1.0 + factor)).clamp(min, max))
    };
    let (p, c) = (parent["dropout"].as_f64().unwrap(), child["dropout"].as_f64().unwrap());
    assert!(one_of(c, p, 0.0, 0.5), "dropout {p} -> {c}");
    let (p, c) = (parent["optimizer"]["lr"].as_f64().unwrap(), child["optimizer"]["lr"].as_f64().unwrap());
    assert!(one_of(c, p, 1e-4, 1e-1), "lr {p} -> {c}");
    let (p, c) = (parent["optimizer"]["momentum"].as_f64().unwrap(), child["optimizer"]["momentum"].as_f64().unwrap());
    assert!(one_of(c, p, 0.5, 0.99), "momentum {p} -> {c}");
    let (p, c) = (parent["layers"].as_i64().unwrap(), child["layers"].as_i64().unwrap());
    let down = ((p as f64 * (1.0 - factor)).floor() as i64).clamp(1, 8);
    let up = ((p as f64 * (1.0 + factor)).ceil() as i64).clamp(1, 8);
    assert!(c == down || c == up, "layers {p} -> {c}");
    assert_eq!(parent["activation"], child["activation"]);
    assert_eq!(child["batch_size"], 64);
}

fn all_methods(seed: u32) -> Vec<SearcherConfig> {
    let mut grid_space = Hyperparameters::new();
    grid_space.insert("a".into(), Hp::Int { min: 0, max: 9, count: Some(5) });
    grid_space.insert("b".into(), Hp::Log { min: -3.0, max: 0.0, base: 10.0, count: Some(4) });
    let mut random = RandomConfig::new(30);
    random.max_concurrent_trials = 4;
    let mut adaptive = AdaptiveAshaConfig::new(120, TrainingLength::max_time("batches", 64));
    adaptive.max_concurrent_trials = 8;
    let mut promotion = AsyncHalvingConfig::new(3, 40, TrainingLength::max_time("batches", 64));
    promotion.variant = AshaVariant::Promotion;
    let pbt = PbtConfig {
        population_size: 6,
        num_rounds: 4,
        length_per_round: TrainingLength::max_time("batches", 16),
        truncate_fraction: 0.34,
        resample_probability: 0.3,
        perturb_factor: 0.25,
    };
    vec![
        config(MethodConfig::Grid(GridConfig::default()), grid_space, seed),
        config(MethodConfig::Random(random), space(), seed),
        config(MethodConfig::AdaptiveAsha(adaptive), space(), seed),
        config(MethodConfig::AsyncHalving(promotion), space(), seed),
        config(MethodConfig::Pbt(pbt), space(), seed),
    ]
}

fn failing_options() -> SimulationOptions {
    let mut options = SimulationOptions::new(6, 64);
    options.validation_period = 4;
    options.seed = 17;
    options.error_probability = 0.01;
    options.invalid_hp_probability = 0.05;
    options
}

#[test]
fn snapshot_restore_continue_equals_uninterrupted() {
    for config in all_methods(99) {
        let name = config.method.name();
        let options = failing_options();
        let (searcher, uninterrupted) = simulate(Searcher::new(config.clone()).unwrap(), &options, &curve).unwrap();
        assert!(uninterrupted.shutdown.is_some(), "{name} finished");
        let n = uninterrupted.steps.len();
        for restart in [1, 2, n / 3, n / 2, n - 1] {
            let mut options = options.clone();
            options.restart_after_events = Some(restart);
            let (restored, resumed) = simulate(Searcher::new(config.clone()).unwrap(), &options, &curve).unwrap();
            assert!(resumed == uninterrupted, "{name}: restart after {restart} of {n} events diverged");
            assert_eq!(restored.snapshot(), searcher.snapshot(), "{name}: final state after restart at {restart}");
        }
    }
}

#[test]
fn same_seed_gives_the_same_trials() {
    for (a, b) in all_methods(42).into_iter().zip(all_methods(42)) {
        let (_, first) = simulate(Searcher::new(a).unwrap(), &failing_options(), &curve).unwrap();
        let (_, second) = simulate(Searcher::new(b).unwrap(), &failing_options(), &curve).unwrap();
        assert!(first == second);
    }
    let hparams = |seed| {
        let mut s = Searcher::new(all_methods(seed).swap_remove(1)).unwrap();
        s.initial_operations().unwrap().into_iter().map(|op| serde_json::to_value(op).unwrap()["hparams"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(hparams(42), hparams(42));
    assert_ne!(hparams(42), hparams(43));
}

#[test]
fn a_search_whose_every_trial_fails_shuts_down_as_failed() {
    let searcher = Searcher::new(config(MethodConfig::Random(RandomConfig::new(5)), space(), 1)).unwrap();
    let mut options = SimulationOptions::new(2, 10);
    options.error_probability = 1.0;
    let (searcher, report) = simulate(searcher, &options, &curve).unwrap();
    assert_eq!(report.shutdown, Some(true));
    assert_eq!(searcher.shutdown(), Some(true));
}

#[test]
fn ten_thousand_trial_adaptive_asha_end_to_end() {
    let mut adaptive = AdaptiveAshaConfig::new(10_000, TrainingLength::max_time("batches", 256));
    adaptive.max_concurrent_trials = 100;
    let searcher = Searcher::new(config(MethodConfig::AdaptiveAsha(adaptive), space(), 2024)).unwrap();
    let options = SimulationOptions::new(100, 256);
    let started = Instant::now();
    let (searcher, report) = simulate(searcher, &options, &curve).unwrap();
    let elapsed = started.elapsed();
    println!(
        "10,000-trial adaptive ASHA: {} events, {} trials, rungs {:?}, simulated in {:.3} s (target < 2 s in release)",
        report.steps.len(),
        report.trials.len(),
        searcher.rung_counts(),
        elapsed.as_secs_f64()
    );
    assert_eq!(report.trials.len(), 10_000);
    assert_eq!(report.shutdown, Some(false));
}

#[test]
fn pbt_holds_a_member_that_finished_a_round_until_the_population_has() {
    let pbt = PbtConfig {
        population_size: 2,
        num_rounds: 3,
        length_per_round: TrainingLength::max_time("batches", 10),
        truncate_fraction: 0.5,
        resample_probability: 0.0,
        perturb_factor: 0.2,
    };
    let mut searcher = Searcher::new(config(MethodConfig::Pbt(pbt), space(), 5)).unwrap();
    let ids: Vec<RequestId> = searcher.initial_operations().unwrap().iter().filter_map(Operation::request_id).collect();
    for id in &ids {
        searcher.trial_created(*id).unwrap();
    }
    let (a, b) = (ids[0], ids[1]);
    assert!(!searcher.ahead_of_round(a) && !searcher.ahead_of_round(b), "nobody is ahead before any report");
    // A reaches the end of round 0 (it may have run past it) while B has not: A waits there.
    searcher.validation_completed(a, 0.1, 12).unwrap();
    assert!(searcher.ahead_of_round(a));
    assert!(!searcher.ahead_of_round(b));
    // B's report decides the round: B is replaced by a child of A; nobody waits any more.
    let ops = searcher.validation_completed(b, 0.9, 10).unwrap();
    assert!(ops.contains(&Operation::Stop { request_id: b }), "{ops:?}");
    let child = ops.iter().find_map(|op| match op {
        Operation::Create { request_id, checkpoint_from: Some(parent), .. } if *parent == a => Some(*request_id),
        _ => None,
    });
    let child = child.expect("a child of the better member");
    searcher.trial_created(child).unwrap();
    assert!(!searcher.ahead_of_round(a) && !searcher.ahead_of_round(child));
    // A member that reported the last round is done, not waiting.
    searcher.validation_completed(a, 0.1, 30).unwrap();
    assert!(!searcher.ahead_of_round(a));
}
