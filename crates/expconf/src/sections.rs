//! Small top-level sections: `profiling`, `optimizations` (deprecated), `reproducibility` and
//! `retention_policy`.

use serde::Serialize;

use crate::error::WarningKind;
use crate::read::{Ctx, Field, Fields};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Profiling {
    pub enabled: bool,
    pub begin_on_batch: u64,
    pub end_after_batch: Option<u64>,
    pub sync_timings: bool,
}

/// Distributed-training knobs of the legacy Trial APIs; deprecated upstream, kept for their readers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Optimizations {
    pub aggregation_frequency: u64,
    pub auto_tune_tensor_fusion: bool,
    pub average_aggregated_gradients: bool,
    pub average_training_metrics: bool,
    pub gradient_compression: bool,
    pub grad_updates_size_file: Option<String>,
    pub mixed_precision: String,
    pub tensor_fusion_cycle_time: u64,
    pub tensor_fusion_threshold: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Reproducibility {
    /// Seeds hyperparameter sampling and each trial's `DET_TRIAL_SEED`.
    pub experiment_seed: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionPolicy {
    /// -1 keeps logs forever; 0 deletes them at the next cleanup.
    pub log_retention_days: i16,
}

pub(crate) fn read_profiling(ctx: &mut Ctx, field: Option<Field<'_>>) -> Profiling {
    let mut profiling = Profiling { enabled: false, begin_on_batch: 0, end_after_batch: None, sync_timings: true };
    let Some(mut fields) = field.and_then(|f| Fields::of(ctx, &f)) else { return profiling };
    profiling.enabled = fields.bool_or(ctx, "enabled", false);
    profiling.begin_on_batch = fields.uint_or(ctx, "begin_on_batch", 0, 0);
    if let Some(end) = fields.take("end_after_batch") {
        profiling.end_after_batch = end.uint_at_least(ctx, 0);
        if profiling.end_after_batch.is_some_and(|e| e < profiling.begin_on_batch) {
            let reason = format!("end_after_batch must not be before begin_on_batch ({})", profiling.begin_on_batch);
            ctx.invalid(&end.path, crate::read::describe(end.value), reason);
        }
    }
    profiling.sync_timings = fields.bool_or(ctx, "sync_timings", true);
    fields.finish(ctx);
    profiling
}

pub(crate) fn read_optimizations(ctx: &mut Ctx, field: Option<Field<'_>>) -> Optimizations {
    let mut optimizations = Optimizations {
        aggregation_frequency: 1,
        auto_tune_tensor_fusion: false,
        average_aggregated_gradients: true,
        average_training_metrics: true,
        gradient_compression: false,
        grad_updates_size_file: None,
        mixed_precision: "O0".to_string(),
        tensor_fusion_cycle_time: 5,
        tensor_fusion_threshold: 64,
    };
    let defaults = optimizations.clone();
    let Some(field) = field else { return optimizations };
    let Some(mut fields) = Fields::of(ctx, &field) else { return optimizations };
    optimizations.aggregation_frequency = fields.uint_or(ctx, "aggregation_frequency", 1, 1);
    optimizations.auto_tune_tensor_fusion = fields.bool_or(ctx, "auto_tune_tensor_fusion", false);
    optimizations.average_aggregated_gradients = fields.bool_or(ctx, "average_aggregated_gradients", true);
    optimizations.average_training_metrics = fields.bool_or(ctx, "average_training_metrics", true);
    optimizations.gradient_compression = fields.bool_or(ctx, "gradient_compression", false);
    optimizations.grad_updates_size_file = fields.string(ctx, "grad_updates_size_file");
    if let Some(precision) = fields.take("mixed_precision").and_then(|f| f.choice(ctx, &["O0", "O1", "O2", "O3"])) {
        optimizations.mixed_precision = precision.to_string();
    }
    optimizations.tensor_fusion_cycle_time = fields.uint_or(ctx, "tensor_fusion_cycle_time", 0, 5);
    optimizations.tensor_fusion_threshold = fields.uint_or(ctx, "tensor_fusion_threshold", 0, 64);
    fields.finish(ctx);
    // A stored, fully defaulted config carries the defaults; only real settings deserve a warning.
    if optimizations != defaults {
        ctx.warn(&field.path, WarningKind::Deprecated, "deprecated since Determined 0.38; only legacy Trial APIs read it");
    }
    optimizations
}

/// `reproducibility.experiment_seed`, or `default_seed` (the caller's, e.g. from the clock).
pub(crate) fn read_reproducibility(ctx: &mut Ctx, field: Option<Field<'_>>, default_seed: u32) -> Reproducibility {
    let Some(mut fields) = field.and_then(|f| Fields::of(ctx, &f)) else { return Reproducibility { experiment_seed: default_seed } };
    let experiment_seed = fields.u32_or(ctx, "experiment_seed", 0, default_seed);
    fields.finish(ctx);
    Reproducibility { experiment_seed }
}

pub(crate) fn read_retention_policy(ctx: &mut Ctx, field: Option<Field<'_>>) -> Option<RetentionPolicy> {
    let mut fields = Fields::of(ctx, &field?)?;
    let days = fields.take("log_retention_days").and_then(|f| f.int_between(ctx, -1, 32767));
    fields.finish(ctx);
    Some(RetentionPolicy { log_retention_days: i16::try_from(days?).ok()? })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn field<'v>(value: &'v Value, key: &str) -> Option<Field<'v>> {
        Some(Field::new(value, FieldPath::root().key(key)))
    }

    #[test]
    fn profiling_checks_batch_order() {
        let mut ctx = Ctx::new(Mode::Complete);
        let value = json!({"enabled": true, "begin_on_batch": 10, "end_after_batch": 5});
        read_profiling(&mut ctx, field(&value, "profiling"));
        assert!(ctx.errors[0].to_string().starts_with("profiling.end_after_batch: end_after_batch must not be before begin_on_batch"));
    }

    #[test]
    fn optimizations_default_and_warn_when_given() {
        let mut ctx = Ctx::new(Mode::Complete);
        assert_eq!(read_optimizations(&mut ctx, None).mixed_precision, "O0");
        assert!(ctx.warnings.is_empty());
        let value = json!({"aggregation_frequency": 4});
        assert_eq!(read_optimizations(&mut ctx, field(&value, "optimizations")).aggregation_frequency, 4);
        assert_eq!(ctx.warnings[0].kind, WarningKind::Deprecated);
    }

    #[test]
    fn seed_comes_from_the_config_or_the_caller() {
        let mut ctx = Ctx::new(Mode::Complete);
        assert_eq!(read_reproducibility(&mut ctx, None, 77).experiment_seed, 77);
        let value = json!({"experiment_seed": 5});
        assert_eq!(read_reproducibility(&mut ctx, field(&value, "reproducibility"), 77).experiment_seed, 5);
        let value = json!({"experiment_seed": -5});
        read_reproducibility(&mut ctx, field(&value, "reproducibility"), 77);
        assert_eq!(ctx.errors[0].path(), "reproducibility.experiment_seed");
    }

    #[test]
    fn retention_days_range() {
        let mut ctx = Ctx::new(Mode::Complete);
        let value = json!({"log_retention_days": 40000});
        assert_eq!(read_retention_policy(&mut ctx, field(&value, "retention_policy")), None);
        assert_eq!(ctx.errors[0].to_string(), "retention_policy.log_retention_days: found 40000, expected an integer from -1 to 32767");
    }
}
