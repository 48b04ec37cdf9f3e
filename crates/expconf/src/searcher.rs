//! The `searcher` section: which hyperparameter search runs (single, random, grid, adaptive_asha,
//! async_halving, pbt), the metric it optimises, and each method's budget.

use serde::Serialize;

use crate::error::{ConfigError, WarningKind};
use crate::length::{Length, SearcherLength, read_length, read_searcher_length};
use crate::number::whole_as_integer;
use crate::read::{Ctx, Field, Fields, quote};

/// Upstream's default cap on trials running at once (0 would mean "no cap").
pub const DEFAULT_MAX_CONCURRENT_TRIALS: u64 = 16;

const METHODS: &[&str] = &["single", "random", "grid", "adaptive_asha", "async_halving", "pbt"];

/// Searchers upstream removed, with what to tell a user who still names one.
const REMOVED: &[(&str, &str)] = &[
    ("custom", "removed in Determined 0.38; use single, random, grid, adaptive_asha or async_halving"),
    ("adaptive", "removed in Determined 0.16; use adaptive_asha"),
    ("adaptive_simple", "removed in Determined 0.16; use adaptive_asha"),
    ("sync_halving", "removed in Determined 0.16; use adaptive_asha or async_halving"),
];

/// Method-specific keys, so a key meant for another searcher gets a precise warning.
fn method_keys(name: &str) -> &'static [&'static str] {
    match name {
        "random" => &["max_trials", "max_concurrent_trials"],
        "grid" => &["max_concurrent_trials"],
        "adaptive_asha" => &[
            "max_trials",
            "mode",
            "divisor",
            "max_rungs",
            "bracket_rungs",
            "max_concurrent_trials",
            "time_metric",
            "max_time",
            "stop_once",
        ],
        "async_halving" => &["num_rungs", "max_trials", "divisor", "max_concurrent_trials", "time_metric", "max_time", "stop_once"],
        "pbt" => &["population_size", "num_rounds", "length_per_round", "replace_function", "explore_function"],
        _ => &[],
    }
}

/// The whole `searcher` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearcherConfig {
    #[serde(flatten)]
    pub method: SearcherMethod,
    pub metric: String,
    pub smaller_is_better: bool,
    /// Deprecated since 0.38: only the legacy in-trial `SearcherContext` reads it.
    pub max_length: Option<SearcherLength>,
    pub source_trial_id: Option<i64>,
    pub source_checkpoint_uuid: Option<String>,
}

/// The search method and its settings; serialises with `name` as the tag, as upstream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum SearcherMethod {
    /// One trial with the (const) hyperparameters.
    Single,
    Random {
        max_trials: u64,
        max_concurrent_trials: u64,
    },
    Grid {
        max_concurrent_trials: u64,
    },
    AdaptiveAsha(AdaptiveAsha),
    AsyncHalving(AsyncHalving),
    Pbt(Pbt),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AshaMode {
    Aggressive,
    Standard,
    Conservative,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdaptiveAsha {
    pub max_trials: u64,
    pub mode: AshaMode,
    #[serde(serialize_with = "whole_as_integer")]
    pub divisor: f64,
    pub max_rungs: u64,
    pub bracket_rungs: Vec<u64>,
    pub max_concurrent_trials: u64,
    /// The validation metric that measures training progress (e.g. `batches`); with `max_time`.
    pub time_metric: Option<String>,
    pub max_time: Option<u64>,
    pub stop_once: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AsyncHalving {
    pub num_rungs: u64,
    pub max_trials: u64,
    #[serde(serialize_with = "whole_as_integer")]
    pub divisor: f64,
    pub max_concurrent_trials: u64,
    pub time_metric: Option<String>,
    pub max_time: Option<u64>,
    pub stop_once: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pbt {
    pub population_size: u64,
    pub num_rounds: u64,
    pub length_per_round: Length,
    pub replace_function: ReplaceFunction,
    pub explore_function: ExploreFunction,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplaceFunction {
    pub truncate_fraction: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExploreFunction {
    pub resample_probability: f64,
    pub perturb_factor: f64,
}

/// How long each ASHA trial may train, in units of a metric the trial reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeBudget {
    pub time_metric: String,
    pub max_time: u64,
}

impl SearcherConfig {
    /// The method's config name (`single`, `adaptive_asha`, ...).
    pub fn name(&self) -> &'static str {
        match self.method {
            SearcherMethod::Single => "single",
            SearcherMethod::Random { .. } => "random",
            SearcherMethod::Grid { .. } => "grid",
            SearcherMethod::AdaptiveAsha(_) => "adaptive_asha",
            SearcherMethod::AsyncHalving(_) => "async_halving",
            SearcherMethod::Pbt(_) => "pbt",
        }
    }

    /// The ASHA budget: `time_metric` + `max_time` when given, else derived from a `max_length`
    /// with a unit (`{batches: 5000}` → `batches`, 5000), as pre-0.38 configs express it.
    pub fn time_budget(&self) -> Option<TimeBudget> {
        let (time_metric, max_time) = match &self.method {
            SearcherMethod::AdaptiveAsha(a) => (&a.time_metric, a.max_time),
            SearcherMethod::AsyncHalving(a) => (&a.time_metric, a.max_time),
            _ => return None,
        };
        if let (Some(time_metric), Some(max_time)) = (time_metric, max_time) {
            return Some(TimeBudget { time_metric: time_metric.clone(), max_time });
        }
        match self.max_length? {
            SearcherLength::Length(length) => Some(TimeBudget { time_metric: length.unit.key().to_string(), max_time: length.units }),
            SearcherLength::Units(_) => None,
        }
    }

    /// Every length in the section, with its field name (for the epochs-need-records check).
    pub(crate) fn lengths(&self) -> Vec<(&'static str, Length)> {
        let mut lengths = Vec::new();
        if let Some(SearcherLength::Length(length)) = self.max_length {
            lengths.push(("max_length", length));
        }
        if let SearcherMethod::Pbt(pbt) = &self.method {
            lengths.push(("length_per_round", pbt.length_per_round));
        }
        lengths
    }
}

/// `searcher.metric` when the config leaves it out: the validation loss as Keras names it.
pub const DEFAULT_SEARCHER_METRIC: &str = "val_loss";

/// Reads the `searcher` section.
pub(crate) fn read_searcher(ctx: &mut Ctx, field: Option<Field<'_>>, path: &crate::path::FieldPath) -> Option<SearcherConfig> {
    let Some(field) = field else {
        ctx.missing(path, "set searcher.name and searcher.metric, e.g. {name: single, metric: validation_loss}");
        return None;
    };
    let mut fields = Fields::of(ctx, &field)?;
    let name = match fields.take("name") {
        Some(f) => read_name(ctx, &f),
        None => {
            ctx.missing(&field.path.key("name"), format!("one of {}", METHODS.join(", ")));
            None
        }
    };
    let metric = match fields.take("metric") {
        Some(f) => f.non_empty_string(ctx),
        // Upstream's docs (and seed 002) say the metric defaults to val_loss, Keras's name.
        None => {
            ctx.warn(
                &field.path.key("metric"),
                WarningKind::Defaulted,
                format!(
                    "not set; defaulting to {DEFAULT_SEARCHER_METRIC} (set searcher.metric to the validation metric your trial reports)"
                ),
            );
            Some(DEFAULT_SEARCHER_METRIC.to_owned())
        }
    };
    let smaller_is_better = fields.bool_or(ctx, "smaller_is_better", true);
    let source_trial_id = fields.take("source_trial_id").and_then(|f| f.int_between(ctx, 1, i64::from(i32::MAX)));
    let source_checkpoint_uuid = fields.string(ctx, "source_checkpoint_uuid");
    let max_length = fields.take("max_length").and_then(|f| {
        ctx.warn(&f.path, WarningKind::Deprecated, "deprecated since Determined 0.38: the training loop decides how long to train");
        read_searcher_length(ctx, &f)
    });
    let method = match name {
        Some(name) => read_method(ctx, &mut fields, name, max_length.is_some()),
        None => {
            // Without a (valid) name nothing can tell which method keys apply; don't guess.
            for key in METHODS.iter().flat_map(|m| method_keys(m)) {
                let _ = fields.take(key);
            }
            None
        }
    };
    // PBT: a lineage trains `num_rounds × length_per_round`; that is the training length the
    // harness reads when the config sets none (a longer one would never be reached anyway).
    let max_length = match (&method, max_length) {
        (Some(SearcherMethod::Pbt(pbt)), None) => {
            Some(SearcherLength::Length(Length::new(pbt.length_per_round.unit, pbt.length_per_round.units.saturating_mul(pbt.num_rounds))))
        }
        (_, given) => given,
    };
    let chosen = name.unwrap_or("chosen");
    fields.finish_with(ctx, |key| {
        METHODS
            .iter()
            .any(|m| method_keys(m).contains(&key))
            .then(|| (WarningKind::Ignored, format!("not used by the {chosen} searcher; ignored")))
    });
    Some(SearcherConfig { method: method?, metric: metric?, smaller_is_better, max_length, source_trial_id, source_checkpoint_uuid })
}

fn read_name(ctx: &mut Ctx, field: &Field<'_>) -> Option<&'static str> {
    let name = field.string(ctx)?;
    if let Some((_, reason)) = REMOVED.iter().find(|(removed, _)| *removed == name) {
        ctx.error(ConfigError::Removed { path: field.path.to_string(), found: format!("the {name} searcher"), reason: reason.to_string() });
        return None;
    }
    match METHODS.iter().find(|m| **m == name) {
        Some(m) => Some(m),
        None => {
            ctx.error(ConfigError::NotOneOf { path: field.path.to_string(), found: quote(&name), allowed: METHODS.join(", ") });
            None
        }
    }
}

fn read_method(ctx: &mut Ctx, fields: &mut Fields<'_>, name: &str, has_max_length: bool) -> Option<SearcherMethod> {
    let concurrency =
        |ctx: &mut Ctx, fields: &mut Fields<'_>| fields.uint_or(ctx, "max_concurrent_trials", 0, DEFAULT_MAX_CONCURRENT_TRIALS);
    match name {
        "single" => Some(SearcherMethod::Single),
        "random" => {
            let max_trials = read_max_trials(ctx, fields);
            let max_concurrent_trials = concurrency(ctx, fields);
            Some(SearcherMethod::Random { max_trials: max_trials?, max_concurrent_trials })
        }
        "grid" => Some(SearcherMethod::Grid { max_concurrent_trials: concurrency(ctx, fields) }),
        "adaptive_asha" => {
            let max_trials = read_max_trials(ctx, fields);
            let mode = match fields.take("mode").map(|f| f.choice(ctx, &["aggressive", "standard", "conservative"])) {
                Some(Some("aggressive")) => AshaMode::Aggressive,
                Some(Some("conservative")) => AshaMode::Conservative,
                _ => AshaMode::Standard,
            };
            let divisor = read_divisor(ctx, fields);
            let max_rungs = fields.uint_or(ctx, "max_rungs", 1, 5);
            let bracket_rungs = fields.take("bracket_rungs").map(|f| f.items(ctx)).unwrap_or_default();
            let bracket_rungs = bracket_rungs.iter().filter_map(|f| f.uint_at_least(ctx, 1)).collect();
            let max_concurrent_trials = concurrency(ctx, fields);
            let stop_once = read_stop_once(ctx, fields);
            let (time_metric, max_time) = read_time_budget(ctx, fields, name, has_max_length);
            Some(SearcherMethod::AdaptiveAsha(AdaptiveAsha {
                max_trials: max_trials?,
                mode,
                divisor,
                max_rungs,
                bracket_rungs,
                max_concurrent_trials,
                time_metric,
                max_time,
                stop_once,
            }))
        }
        "async_halving" => {
            let num_rungs = fields.require(ctx, "num_rungs", "the number of rungs, e.g. 4").and_then(|f| f.uint_at_least(ctx, 1));
            let max_trials = read_max_trials(ctx, fields);
            let divisor = read_divisor(ctx, fields);
            let max_concurrent_trials = concurrency(ctx, fields);
            let stop_once = read_stop_once(ctx, fields);
            let (time_metric, max_time) = read_time_budget(ctx, fields, name, has_max_length);
            Some(SearcherMethod::AsyncHalving(AsyncHalving {
                num_rungs: num_rungs?,
                max_trials: max_trials?,
                divisor,
                max_concurrent_trials,
                time_metric,
                max_time,
                stop_once,
            }))
        }
        _ => read_pbt(ctx, fields).map(SearcherMethod::Pbt),
    }
}

fn read_max_trials(ctx: &mut Ctx, fields: &mut Fields<'_>) -> Option<u64> {
    fields.require(ctx, "max_trials", "how many trials to create, e.g. 16").and_then(|f| f.uint_at_least(ctx, 1))
}

fn read_divisor(ctx: &mut Ctx, fields: &mut Fields<'_>) -> f64 {
    let Some(f) = fields.take("divisor") else { return 4.0 };
    match f.number(ctx) {
        Some(divisor) if divisor > 1.0 => divisor,
        Some(divisor) => {
            ctx.out_of_range(&f.path, divisor, "a number > 1");
            4.0
        }
        None => 4.0,
    }
}

fn read_stop_once(ctx: &mut Ctx, fields: &mut Fields<'_>) -> bool {
    let Some(f) = fields.take("stop_once") else { return false };
    let stop_once = f.boolean(ctx).unwrap_or(false);
    if stop_once {
        ctx.warn(&f.path, WarningKind::Deprecated, "deprecated: since Determined 0.38 ASHA always stops trials early");
    }
    stop_once
}

/// `time_metric` and `max_time` go together; one of them or `max_length` must bound training.
fn read_time_budget(ctx: &mut Ctx, fields: &mut Fields<'_>, name: &str, has_max_length: bool) -> (Option<String>, Option<u64>) {
    let time_metric_field = fields.take("time_metric");
    let max_time_field = fields.take("max_time");
    let time_metric = time_metric_field.as_ref().and_then(|f| f.non_empty_string(ctx));
    let max_time = max_time_field.as_ref().and_then(|f| f.uint_at_least(ctx, 1));
    let path = fields.path().clone();
    match (&time_metric_field, &max_time_field) {
        (Some(_), None) => ctx.missing(&path.key("max_time"), "time_metric needs max_time, the training budget in its units"),
        (None, Some(_)) => {
            ctx.missing(&path.key("time_metric"), "max_time needs time_metric, the reported metric that counts progress, e.g. batches")
        }
        (None, None) if !has_max_length => ctx.missing(
            &path.key("max_time"),
            format!("{name} needs max_time and time_metric (e.g. max_time: 5000, time_metric: batches), or the deprecated max_length"),
        ),
        _ => {}
    }
    (time_metric, max_time)
}

fn read_pbt(ctx: &mut Ctx, fields: &mut Fields<'_>) -> Option<Pbt> {
    let population_size = fields.require(ctx, "population_size", "trials per generation, e.g. 10").and_then(|f| f.uint_at_least(ctx, 1));
    let num_rounds = fields.require(ctx, "num_rounds", "how many rounds to run, e.g. 5").and_then(|f| f.uint_at_least(ctx, 1));
    let length_per_round =
        fields.require(ctx, "length_per_round", "training per round, e.g. {batches: 1000}").and_then(|f| read_length(ctx, &f, 1));
    let fraction = |ctx: &mut Ctx, f: Field<'_>| f.number_between(ctx, 0.0, 1.0, "a number from 0 to 1");
    let replace_function = fields.require(ctx, "replace_function", "e.g. {truncate_fraction: 0.5}").and_then(|f| {
        let mut sub = Fields::of(ctx, &f)?;
        let truncate_fraction = sub.require(ctx, "truncate_fraction", "share of the population to replace, 0 to 1");
        let truncate_fraction = truncate_fraction.and_then(|f| fraction(ctx, f));
        sub.finish(ctx);
        Some(ReplaceFunction { truncate_fraction: truncate_fraction? })
    });
    let explore_function = fields.require(ctx, "explore_function", "e.g. {resample_probability: 0.2, perturb_factor: 0.2}").and_then(|f| {
        let mut sub = Fields::of(ctx, &f)?;
        let resample = sub.require(ctx, "resample_probability", "chance to resample a hyperparameter, 0 to 1");
        let resample_probability = resample.and_then(|f| fraction(ctx, f));
        let perturb = sub.require(ctx, "perturb_factor", "how far to perturb a hyperparameter, 0 to 1");
        let perturb_factor = perturb.and_then(|f| fraction(ctx, f));
        sub.finish(ctx);
        Some(ExploreFunction { resample_probability: resample_probability?, perturb_factor: perturb_factor? })
    });
    Some(Pbt {
        population_size: population_size?,
        num_rounds: num_rounds?,
        length_per_round: length_per_round?,
        replace_function: replace_function?,
        explore_function: explore_function?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: Value) -> (Option<SearcherConfig>, Vec<String>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let path = FieldPath::root().key("searcher");
        let searcher = read_searcher(&mut ctx, Some(Field::new(&value, path.clone())), &path);
        let warnings = ctx.warnings.iter().map(ToString::to_string).collect();
        (searcher, ctx.errors.iter().map(ToString::to_string).collect(), warnings)
    }

    #[test]
    fn single_defaults_and_serialises_with_name_tag() {
        let (searcher, errors, _) = read(json!({"name": "single", "metric": "loss", "max_length": {"batches": 100}}));
        assert!(errors.is_empty(), "{errors:?}");
        let searcher = searcher.unwrap();
        assert!(searcher.smaller_is_better);
        assert_eq!(
            serde_json::to_value(&searcher).unwrap(),
            json!({"name": "single", "metric": "loss", "smaller_is_better": true, "max_length": {"batches": 100},
                   "source_trial_id": null, "source_checkpoint_uuid": null})
        );
    }

    #[test]
    fn adaptive_asha_defaults() {
        let (searcher, errors, _) =
            read(json!({"name": "adaptive_asha", "metric": "loss", "max_trials": 16, "max_time": 1000, "time_metric": "batches"}));
        assert!(errors.is_empty(), "{errors:?}");
        let SearcherMethod::AdaptiveAsha(asha) = searcher.as_ref().unwrap().method.clone() else { panic!("asha") };
        assert_eq!((asha.mode, asha.divisor, asha.max_rungs, asha.max_concurrent_trials), (AshaMode::Standard, 4.0, 5, 16));
        let json = serde_json::to_value(searcher.unwrap()).unwrap();
        assert_eq!(json["divisor"], json!(4));
        assert_eq!(json["mode"], json!("standard"));
    }

    #[test]
    fn asha_needs_a_time_budget_or_max_length() {
        let (_, errors, _) = read(json!({"name": "adaptive_asha", "metric": "loss", "max_trials": 4}));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("searcher.max_time: required but missing"), "{errors:?}");
        let (_, errors, _) = read(json!({"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "max_time": 10}));
        assert!(errors[0].starts_with("searcher.time_metric: required but missing"), "{errors:?}");
        let (searcher, errors, _) =
            read(json!({"name": "adaptive_asha", "metric": "loss", "max_trials": 4, "max_length": {"batches": 500}}));
        assert!(errors.is_empty());
        assert_eq!(searcher.unwrap().time_budget(), Some(TimeBudget { time_metric: "batches".into(), max_time: 500 }));
    }

    #[test]
    fn removed_searchers_are_rejected_with_advice() {
        let (_, errors, warnings) = read(json!({"name": "custom", "metric": "loss", "unit": "batches"}));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("searcher.name: the custom searcher is no longer supported (removed in Determined 0.38"), "{errors:?}");
        assert_eq!(warnings, ["searcher.unit: unknown field; ignored"]);
    }

    #[test]
    fn keys_of_other_searchers_are_ignored_with_a_warning() {
        let (_, errors, warnings) = read(json!({"name": "single", "metric": "loss", "max_trials": 3}));
        assert!(errors.is_empty());
        assert_eq!(warnings, ["searcher.max_trials: not used by the single searcher; ignored"]);
    }

    #[test]
    fn pbt_reads_and_validates_its_functions() {
        let (searcher, errors, _) = read(json!({
            "name": "pbt", "metric": "loss", "population_size": 4, "num_rounds": 3, "length_per_round": {"batches": 100},
            "replace_function": {"truncate_fraction": 0.25}, "explore_function": {"resample_probability": 0.2, "perturb_factor": 1.5}
        }));
        assert!(searcher.is_none());
        assert_eq!(errors, ["searcher.explore_function.perturb_factor: found 1.5, expected a number from 0 to 1"]);
    }

    #[test]
    fn pbt_without_max_length_trains_a_lineage_for_every_round() {
        let pbt = |extra: Value| {
            let mut v = json!({
                "name": "pbt", "metric": "loss", "population_size": 4, "num_rounds": 3, "length_per_round": {"epochs": 2},
                "replace_function": {"truncate_fraction": 0.25}, "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.5}
            });
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            read(v)
        };
        let (searcher, errors, _) = pbt(json!({}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(searcher.unwrap().max_length, Some(SearcherLength::Length(Length::new(crate::length::Unit::Epochs, 6))));
        // A length the user set stays.
        let (searcher, _, _) = pbt(json!({"max_length": {"epochs": 100}}));
        assert_eq!(searcher.unwrap().max_length, Some(SearcherLength::Length(Length::new(crate::length::Unit::Epochs, 100))));
    }

    #[test]
    fn random_requires_max_trials_and_unknown_names_list_choices() {
        let (_, errors, _) = read(json!({"name": "random", "metric": "loss"}));
        assert!(errors[0].starts_with("searcher.max_trials: required but missing"));
        let (_, errors, _) = read(json!({"name": "bayes", "metric": "loss"}));
        assert_eq!(errors, ["searcher.name: found \"bayes\", expected one of single, random, grid, adaptive_asha, async_halving, pbt"]);
    }
}
