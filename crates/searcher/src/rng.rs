//! The searcher's seeded random source, whose position is part of every snapshot so a restarted
//! master draws exactly the numbers an uninterrupted one would have.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::SearcherError;

/// ChaCha8 seeded from the experiment seed. ChaCha's state is its seed plus a word position, so a
/// snapshot is two numbers instead of an opaque blob.
#[derive(Clone, Debug)]
pub(crate) struct SearchRng {
    seed: u32,
    inner: ChaCha8Rng,
}

/// The serialised form; `word_pos` is a decimal string because JSON numbers stop at 2^64.
#[derive(Serialize, Deserialize)]
pub(crate) struct RngSnapshot {
    seed: u32,
    word_pos: String,
}

impl SearchRng {
    pub(crate) fn new(seed: u32) -> Self {
        SearchRng { seed, inner: ChaCha8Rng::seed_from_u64(u64::from(seed)) }
    }

    pub(crate) fn snapshot(&self) -> RngSnapshot {
        RngSnapshot { seed: self.seed, word_pos: self.inner.get_word_pos().to_string() }
    }

    pub(crate) fn restore(expected_seed: u32, snapshot: &RngSnapshot) -> Result<Self, SearcherError> {
        if snapshot.seed != expected_seed {
            return Err(SearcherError::SnapshotMismatch(format!(
                "snapshot was taken with experiment_seed {}, the configuration has {expected_seed}",
                snapshot.seed
            )));
        }
        let word_pos: u128 = snapshot
            .word_pos
            .parse()
            .map_err(|_| SearcherError::SnapshotMismatch(format!("random state position {:?} is not a number", snapshot.word_pos)))?;
        let mut rng = SearchRng::new(expected_seed);
        rng.inner.set_word_pos(word_pos);
        Ok(rng)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        self.inner.random::<f64>()
    }

    /// Uniform in [min, max]; `min == max` gives `min`.
    pub(crate) fn uniform(&mut self, min: f64, max: f64) -> f64 {
        min + self.unit() * (max - min)
    }

    /// Uniform integer in [min, max] (callers guarantee min <= max).
    pub(crate) fn int_inclusive(&mut self, min: i64, max: i64) -> i64 {
        self.inner.random_range(min..=max)
    }

    /// Uniform index below `len` (callers guarantee len > 0).
    pub(crate) fn index(&mut self, len: usize) -> usize {
        self.inner.random_range(0..len)
    }

    /// A trial seed in [0, 2^31), the range upstream hands to trials as `DET_TRIAL_SEED`.
    pub(crate) fn trial_seed(&mut self) -> u32 {
        self.inner.random_range(0..1u32 << 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_rng_continues_the_same_sequence() {
        let mut a = SearchRng::new(7);
        for _ in 0..13 {
            a.unit();
        }
        let mut b = SearchRng::restore(7, &a.snapshot()).unwrap();
        for _ in 0..100 {
            assert_eq!(a.unit().to_bits(), b.unit().to_bits());
            assert_eq!(a.trial_seed(), b.trial_seed());
        }
    }

    #[test]
    fn restore_rejects_a_different_seed() {
        let a = SearchRng::new(7);
        assert!(SearchRng::restore(8, &a.snapshot()).is_err());
    }
}
