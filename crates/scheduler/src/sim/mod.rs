//! Seeded workloads for the scheduling-pass benchmark (`benches/scheduling_pass.rs`) and the
//! deterministic simulation (`tests/simulation.rs`): a portable random generator and generators of
//! agents and jobs. Pure and clock-free like the rest of the crate.

pub mod rng;
pub mod workload;

pub use rng::Rng;
