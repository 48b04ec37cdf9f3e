//! Hyperparameter search for Resolute: `single`, `grid`, `random`, `async_halving`,
//! `adaptive_asha` and `pbt`, as deterministic state machines with no I/O, clock or async.
//!
//! The master drives a [`Searcher`] from its single writer loop: it calls
//! [`Searcher::initial_operations`] once, then reports each trial event (`trial_created`,
//! `validation_completed`, `trial_exited_early`, `trial_closed`) and carries out the
//! [`Operation`]s it gets back (`Create`, `Stop`, `Close`, `Shutdown`). After each batch it stores
//! [`Searcher::snapshot`]; [`Searcher::restore`] resumes exactly, RNG position included.
//!
//! Invariants: all randomness comes from one ChaCha8 stream seeded by `experiment_seed`, and
//! request ids come from a counter, so the same configuration and the same events always give the
//! same operations. Metrics are compared after sign adjustment (smaller is better inside).
//! [`simulate`] runs a search against synthetic workers for tests and previews.

mod adaptive;
mod asha;
mod asha_promotion;
mod config;
mod error;
mod grid;
mod method;
mod ops;
mod pbt;
mod preview;
mod random;
mod rng;
mod sample;
mod searcher;
pub mod simulate;
mod space;

pub use config::MAX_TRIALS;
pub use config::{
    AdaptiveAshaConfig, AdaptiveMode, AshaVariant, AsyncHalvingConfig, DEFAULT_DIVISOR, DEFAULT_MAX_CONCURRENT_TRIALS, DEFAULT_MAX_RUNGS,
    GridConfig, LengthUnit, MethodConfig, PbtConfig, RandomConfig, SearcherConfig, TrainingLength,
};
pub use error::{ConfigError, SearcherError, SearcherResult};
pub use grid::MAX_GRID_POINTS;
pub use ops::{Event, ExitReason, Operation, RequestId};
pub use preview::{BracketPlan, Plan, RungPlan, preview};
pub use searcher::{Searcher, TrialInfo, TrialState};
pub use space::{HyperparameterSpace, Hyperparameters};
