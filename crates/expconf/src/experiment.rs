//! The typed, fully defaulted experiment config and the reader that assembles it from the tree.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::entrypoint::{Entrypoint, read_entrypoint};
use crate::environment::{Environment, read_environment};
use crate::error::{ConfigError, WarningKind};
use crate::hyperparameters::{Hyperparameters, read_hyperparameters};
use crate::length::{Length, Unit, read_length};
use crate::log_policies::{LogPolicy, read_log_policies};
use crate::mounts::{BindMount, read_bind_mounts};
use crate::path::FieldPath;
use crate::read::{Ctx, Field, Fields};
use crate::resources::{Resources, read_resources};
use crate::searcher::{SearcherConfig, read_searcher};
use crate::sections::{
    Optimizations, Profiling, Reproducibility, RetentionPolicy, read_optimizations, read_profiling, read_reproducibility,
    read_retention_policy,
};
use crate::storage::{CheckpointStorage, read_checkpoint_storage};

/// Name used when the config gives none.
pub const DEFAULT_NAME: &str = "Experiment";

/// Sections we accept and pass through untouched (mappings or lists we do not interpret yet).
const PASSTHROUGH: &[&str] = &["integrations", "slurm", "pbs"];

/// Fields upstream still parses but ignores.
const IGNORED: &[(&str, &str)] = &[
    ("data_layer", "data_layer was removed upstream; ignored"),
    ("tensorboard_storage", "tensorboard_storage is deprecated; TensorBoard files go to checkpoint_storage; ignored"),
    ("security", "security is unused upstream; ignored"),
    ("internal", "internal is an upstream implementation detail; ignored"),
];

/// Which checkpoints the legacy Trial APIs save after validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointPolicy {
    Best,
    All,
    None,
}

/// A validated experiment config with every default filled in. Serialises to the JSON upstream's
/// `POST /api/v1/experiments` returns as `config`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExperimentConfig {
    pub bind_mounts: Vec<BindMount>,
    pub checkpoint_policy: CheckpointPolicy,
    pub checkpoint_storage: CheckpointStorage,
    /// Free-form data handed to the trial.
    pub data: Map<String, Value>,
    pub debug: bool,
    pub description: Option<String>,
    pub entrypoint: Entrypoint,
    pub environment: Environment,
    pub hyperparameters: Hyperparameters,
    pub labels: Vec<String>,
    pub log_policies: Vec<LogPolicy>,
    pub max_restarts: u32,
    pub min_checkpoint_period: Length,
    pub min_validation_period: Length,
    pub name: String,
    pub optimizations: Optimizations,
    pub perform_initial_validation: bool,
    /// Seconds a preempted trial gets to checkpoint; `None` means the cluster default.
    pub preemption_timeout: Option<u64>,
    pub profiling: Profiling,
    pub project: String,
    pub records_per_epoch: u64,
    pub reproducibility: Reproducibility,
    pub resources: Resources,
    pub retention_policy: Option<RetentionPolicy>,
    pub scheduling_unit: u64,
    pub searcher: SearcherConfig,
    pub workspace: String,
    /// Accepted sections we do not interpret (`integrations`, `slurm`, `pbs`), as written.
    #[serde(flatten)]
    pub passthrough: BTreeMap<String, Value>,
}

impl ExperimentConfig {
    /// The validation metric the searcher optimises.
    pub fn searcher_metric(&self) -> &str {
        &self.searcher.metric
    }

    /// Whether a lower `searcher_metric` is better (default true).
    pub fn smaller_is_better(&self) -> bool {
        self.searcher.smaller_is_better
    }

    /// How many trials a grid search over these hyperparameters creates (see
    /// [`Hyperparameters::grid_points`]); errors name each int/double/log hyperparameter without a
    /// `count`.
    pub fn grid_trial_count(&self) -> Result<u64, Vec<ConfigError>> {
        self.hyperparameters.grid_points()
    }

    /// The JSON tree upstream returns as the experiment's `config`.
    pub fn to_json(&self) -> Value {
        // Every field is plain data with string keys; serialisation cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Reads a whole config tree (master defaults already merged in).
pub(crate) fn read_experiment(ctx: &mut Ctx, tree: &Value, default_seed: u32) -> Option<ExperimentConfig> {
    let root = FieldPath::root();
    let Some(map) = tree.as_object() else {
        ctx.wrong_type(&root, "a mapping of config fields (name, entrypoint, searcher, ...)", tree);
        return None;
    };
    let mut fields = Fields::new(map, root.clone());
    let name = fields.take("name").and_then(|f| f.non_empty_string(ctx)).unwrap_or_else(|| DEFAULT_NAME.to_string());
    let description = fields.string(ctx, "description");
    let labels = fields.take("labels").and_then(|f| f.string_list(ctx)).unwrap_or_default();
    let data = fields.take("data").and_then(|f| f.mapping(ctx).cloned()).unwrap_or_default();
    let entrypoint =
        fields.require(ctx, "entrypoint", "the command that starts a trial, e.g. python3 train.py").and_then(|f| read_entrypoint(ctx, &f));
    let searcher_field = fields.take("searcher");
    let grid = searcher_field.as_ref().and_then(|f| f.value.get("name")).and_then(Value::as_str) == Some("grid");
    let hyperparameters = read_hyperparameters(ctx, fields.take("hyperparameters"), grid);
    let searcher = read_searcher(ctx, searcher_field, &root.key("searcher"));
    let resources = read_resources(ctx, fields.take("resources"));
    let checkpoint_storage = read_checkpoint_storage(ctx, fields.take("checkpoint_storage"), &root.key("checkpoint_storage"));
    let checkpoint_policy = match fields.take("checkpoint_policy").and_then(|f| f.choice(ctx, &["best", "all", "none"])) {
        Some("all") => CheckpointPolicy::All,
        Some("none") => CheckpointPolicy::None,
        _ => CheckpointPolicy::Best,
    };
    let bind_mounts = read_bind_mounts(ctx, fields.take("bind_mounts"));
    let environment = read_environment(ctx, fields.take("environment"));
    let max_restarts = fields.u32_or(ctx, "max_restarts", 0, 5);
    let records_per_epoch = fields.uint_or(ctx, "records_per_epoch", 0, 0);
    let min_validation_period = read_period(ctx, &mut fields, "min_validation_period");
    let min_checkpoint_period = read_period(ctx, &mut fields, "min_checkpoint_period");
    let scheduling_unit = fields
        .take("scheduling_unit")
        .and_then(|f| {
            let unit = f.uint_at_least(ctx, 1);
            deprecated(ctx, &f, unit, 100)
        })
        .unwrap_or(100);
    let perform_initial_validation = fields.bool_or(ctx, "perform_initial_validation", false);
    let debug = fields.bool_or(ctx, "debug", false);
    let preemption_timeout = fields.take("preemption_timeout").and_then(|f| f.uint_at_least(ctx, 0));
    let profiling = read_profiling(ctx, fields.take("profiling"));
    let optimizations = read_optimizations(ctx, fields.take("optimizations"));
    let reproducibility = read_reproducibility(ctx, fields.take("reproducibility"), default_seed);
    let retention_policy = read_retention_policy(ctx, fields.take("retention_policy"));
    let log_policies = fields.take("log_policies").map(|f| read_log_policies(ctx, &f)).unwrap_or_default();
    let workspace = fields.string(ctx, "workspace").unwrap_or_default();
    let project = fields.string(ctx, "project").unwrap_or_default();
    let passthrough = read_passthrough(ctx, &mut fields);
    for (key, message) in IGNORED {
        if let Some(f) = fields.take(key) {
            ctx.warn(&f.path, WarningKind::Ignored, *message);
        }
    }
    fields.finish(ctx);

    let searcher = searcher?;
    if records_per_epoch == 0 {
        warn_epochs_without_records(ctx, &searcher, min_validation_period, min_checkpoint_period);
    }
    Some(ExperimentConfig {
        bind_mounts,
        checkpoint_policy,
        checkpoint_storage: checkpoint_storage?,
        data,
        debug,
        description,
        entrypoint: entrypoint?,
        environment,
        hyperparameters,
        labels,
        log_policies,
        max_restarts,
        min_checkpoint_period,
        min_validation_period,
        name,
        optimizations,
        perform_initial_validation,
        preemption_timeout,
        profiling,
        project,
        records_per_epoch,
        reproducibility,
        resources,
        retention_policy,
        scheduling_unit,
        searcher,
        workspace,
        passthrough,
    })
}

/// Legacy Trial APIs convert epochs to batches with `records_per_epoch`; 0.38 loops count epochs
/// themselves, so this is a warning, not upstream's old error.
fn warn_epochs_without_records(ctx: &mut Ctx, searcher: &SearcherConfig, validation: Length, checkpoint: Length) {
    let searcher_path = FieldPath::root().key("searcher");
    let mut lengths =
        vec![(FieldPath::root().key("min_validation_period"), validation), (FieldPath::root().key("min_checkpoint_period"), checkpoint)];
    lengths.extend(searcher.lengths().into_iter().map(|(key, length)| (searcher_path.key(key), length)));
    for (path, length) in lengths.into_iter().filter(|(_, l)| l.unit == Unit::Epochs && l.units > 0) {
        let message = format!("{length} given but records_per_epoch is not set; legacy Trial APIs need it to convert epochs");
        ctx.warn(&path, WarningKind::Deprecated, message);
    }
}

/// Passes a deprecated field's value through, warning when it differs from the default (a stored,
/// fully defaulted config carries the defaults and should re-validate silently).
fn deprecated<T: PartialEq>(ctx: &mut Ctx, field: &Field<'_>, value: Option<T>, default: T) -> Option<T> {
    if value.as_ref().is_some_and(|v| *v != default) {
        ctx.warn(&field.path, WarningKind::Deprecated, "deprecated since Determined 0.38; only legacy Trial APIs read it");
    }
    value
}

/// `min_validation_period` / `min_checkpoint_period`: a length, `{batches: 0}` (never) by default.
fn read_period(ctx: &mut Ctx, fields: &mut Fields<'_>, key: &str) -> Length {
    let never = Length::batches(0);
    let period = |f: Field<'_>| {
        let length = read_length(ctx, &f, 0);
        deprecated(ctx, &f, length, never)
    };
    fields.take(key).and_then(period).unwrap_or(never)
}

fn read_passthrough(ctx: &mut Ctx, fields: &mut Fields<'_>) -> BTreeMap<String, Value> {
    let mut passthrough = BTreeMap::new();
    for key in PASSTHROUGH {
        if let Some(f) = fields.take(key)
            && f.mapping(ctx).is_some()
        {
            passthrough.insert(key.to_string(), f.value.clone());
        }
    }
    passthrough
}
