//! Experiment configuration for Resolute, compatible with Determined 0.38's `expconf` schema.
//!
//! [`parse_experiment_config`] takes the YAML a user submits, merges the master's defaults under it
//! ([`Defaults`]), fills every schema default and validates it, returning a typed
//! [`ExperimentConfig`] (which serialises to the fully defaulted JSON upstream returns) plus
//! [`Warning`]s for unknown or deprecated fields — or every [`ConfigError`] at once, each naming its
//! field path, what was found and what is allowed. No I/O and no clock: the experiment seed default
//! is an input.
//!
//! ```
//! use resolute_expconf::{Defaults, parse_experiment_config};
//!
//! let yaml = "entrypoint: python3 train.py\nsearcher: {name: single, metric: loss}\n";
//! let defaults = Defaults::new(1234).with_checkpoint_storage(serde_json::json!({"type": "shared_fs", "host_path": "/ckpt"}));
//! let parsed = parse_experiment_config(yaml, &defaults).unwrap();
//! assert_eq!(parsed.config.max_restarts, 5);
//! assert_eq!(parsed.config.searcher_metric(), "loss");
//! ```

mod defaults;
mod entrypoint;
mod environment;
mod error;
mod experiment;
mod hyperparameters;
mod length;
mod log_policies;
mod mounts;
mod number;
mod path;
mod read;
mod resources;
mod searcher;
mod sections;
mod storage;
mod task_config;
mod validate;
mod yaml;

pub use defaults::{Defaults, merge_under};
pub use entrypoint::Entrypoint;
pub use environment::{DEFAULT_CPU_IMAGE, DEFAULT_CUDA_IMAGE, DEFAULT_ROCM_IMAGE, Environment, PerDevice};
pub use error::{ConfigError, Warning, WarningKind};
pub use experiment::{CheckpointPolicy, DEFAULT_NAME, ExperimentConfig};
pub use hyperparameters::{Hyperparameter, Hyperparameters};
pub use length::{Length, SearcherLength, Unit};
pub use log_policies::{LogAction, LogPolicy, compile_log_pattern};
pub use mounts::BindMount;
pub use path::FieldPath;
pub use resources::{Device, Resources, ShmSize, parse_memory_size};
pub use searcher::{
    AdaptiveAsha, AshaMode, AsyncHalving, DEFAULT_MAX_CONCURRENT_TRIALS, DEFAULT_SEARCHER_METRIC, ExploreFunction, Pbt, ReplaceFunction,
    SearcherConfig, SearcherMethod, TimeBudget,
};
pub use sections::{Optimizations, Profiling, Reproducibility, RetentionPolicy};
pub use storage::{CheckpointStorage, StorageBackend};
pub use task_config::{TaskConfig, TaskEntrypoint, parse_task_config};
pub use validate::{Parsed, check_fragment, parse_experiment_config, validate_experiment_config};
pub use yaml::yaml_to_json;
