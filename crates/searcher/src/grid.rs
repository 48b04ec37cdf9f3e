//! Grid search: one trial per point of the cartesian product of every hyperparameter's axis, each
//! point exactly once. Points are decoded from their index on demand, so a large grid costs no
//! memory up front.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ConfigError, SearcherResult};
use crate::method::{Context, SearchMethod, Trials, to_json};
use crate::ops::{ExitReason, Operation, RequestId};
use crate::sample::float;
use crate::space::{HyperparameterSpace, Hyperparameters, field_path};

/// A grid larger than this is almost certainly a `count` typo; refusing it beats queueing it.
/// (With `max_concurrent_trials: 0` every point becomes a trial at once, so the limit also
/// bounds the trials one experiment can create in one step.)
pub const MAX_GRID_POINTS: u64 = crate::config::MAX_TRIALS as u64;

/// One axis: where the value goes in the (possibly nested) object, and its grid values.
#[derive(Clone, Debug)]
struct Axis {
    path: Vec<String>,
    values: Vec<Value>,
}

/// The grid's axes, in name order (nested groups depth first).
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    axes: Vec<Axis>,
    size: u64,
}

impl Grid {
    pub(crate) fn new(space: &Hyperparameters) -> Result<Self, ConfigError> {
        // Sized before any axis is built: one `count: 4000000000` must not allocate its values.
        let size = grid_size(space);
        let mut axes = Vec::new();
        match u64::try_from(size) {
            Ok(size) if size <= MAX_GRID_POINTS => {
                collect_axes(space, &mut Vec::new(), &mut axes)?;
                Ok(Grid { axes, size })
            }
            _ => Err(ConfigError::new(
                "hyperparameters",
                format!(
                    "the grid has {size} points (the product of the hyperparameters' counts); the limit is {MAX_GRID_POINTS} \
                     trials: lower some `count`"
                ),
            )),
        }
    }

    /// Number of points (an empty space has one point: `{}`).
    pub(crate) fn len(&self) -> u64 {
        self.size
    }

    /// Point `index` (0-based, below `len()`); the last axis varies fastest.
    pub(crate) fn point(&self, mut index: u64) -> Value {
        let mut chosen = vec![0usize; self.axes.len()];
        for (slot, axis) in chosen.iter_mut().zip(&self.axes).rev() {
            let n = axis.values.len() as u64;
            *slot = (index % n) as usize;
            index /= n;
        }
        let mut root = Map::new();
        for (axis, i) in self.axes.iter().zip(chosen) {
            insert_at(&mut root, &axis.path, axis.values[i].clone());
        }
        Value::Object(root)
    }
}

fn insert_at(root: &mut Map<String, Value>, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut node = root;
    for key in parents {
        let entry = node.entry(key.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(next) = entry else { return };
        node = next;
    }
    node.insert(last.clone(), value);
}

/// The number of grid points, saturating; a numeric axis without `count` counts as one (building
/// the axes reports it).
fn grid_size(space: &Hyperparameters) -> u128 {
    space.values().fold(1u128, |size, hp| {
        let len = match hp {
            HyperparameterSpace::Nested(inner) => grid_size(inner),
            HyperparameterSpace::Const(_) => 1,
            HyperparameterSpace::Categorical(vals) => vals.len() as u128,
            HyperparameterSpace::Int { min, max, count } => {
                let span = (*max as i128 - *min as i128 + 1).max(0) as u128;
                (count.unwrap_or(1) as u128).min(span).max(1)
            }
            HyperparameterSpace::Double { count, .. } | HyperparameterSpace::Log { count, .. } => (count.unwrap_or(1) as u128).max(1),
        };
        size.saturating_mul(len)
    })
}

fn collect_axes(space: &Hyperparameters, path: &mut Vec<String>, axes: &mut Vec<Axis>) -> Result<(), ConfigError> {
    for (name, hp) in space {
        path.push(name.clone());
        match hp {
            HyperparameterSpace::Nested(inner) if !inner.is_empty() => collect_axes(inner, path, axes)?,
            HyperparameterSpace::Nested(_) => axes.push(Axis { path: path.clone(), values: vec![Value::Object(Map::new())] }),
            _ => {
                let values = axis_values(hp).ok_or_else(|| {
                    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
                    ConfigError::new(field_path(&parts), "grid search needs `count` on every int, double and log hyperparameter")
                })?;
                axes.push(Axis { path: path.clone(), values });
            }
        }
        path.pop();
    }
    Ok(())
}

/// The grid values of one leaf; `None` when a numeric axis lacks `count`.
pub(crate) fn axis_values(hp: &HyperparameterSpace) -> Option<Vec<Value>> {
    // Evenly spaced positions in [min, max]; a single point sits in the middle.
    fn positions(min: f64, max: f64, count: usize) -> Vec<f64> {
        if count <= 1 {
            return vec![(min + max) / 2.0];
        }
        (0..count).map(|i| min + i as f64 * (max - min) / (count - 1) as f64).collect()
    }
    Some(match hp {
        HyperparameterSpace::Const(v) => vec![v.clone()],
        HyperparameterSpace::Categorical(vals) => vals.clone(),
        HyperparameterSpace::Int { min, max, count } => {
            // No more points than integers in the range, so no value repeats.
            let span = (*max as i128 - *min as i128 + 1).min(usize::MAX as i128) as usize;
            let count = (*count)?.min(span);
            positions(*min as f64, *max as f64, count).into_iter().map(|x| Value::from(x.round() as i64)).collect()
        }
        HyperparameterSpace::Double { min, max, count } => positions(*min, *max, (*count)?).into_iter().map(float).collect(),
        HyperparameterSpace::Log { min, max, base, count } => {
            positions(*min, *max, (*count)?).into_iter().map(|x| float(base.powf(x))).collect()
        }
        HyperparameterSpace::Nested(_) => return None,
    })
}

pub(crate) struct GridSearch {
    grid: Grid,
    max_concurrent_trials: usize,
    length: Option<u64>,
    state: GridState,
}

#[derive(Default, Serialize, Deserialize)]
struct GridState {
    /// Index of the next point to hand out.
    next: u64,
}

impl GridSearch {
    pub(crate) fn new(grid: Grid, max_concurrent_trials: usize, length: Option<u64>) -> Self {
        GridSearch { grid, max_concurrent_trials, length, state: GridState::default() }
    }

    fn create_next(&mut self, ctx: &mut Context) -> Option<Operation> {
        if self.state.next >= self.grid.len() {
            return None;
        }
        let point = self.grid.point(self.state.next);
        self.state.next += 1;
        Some(ctx.create_from(point, None).1)
    }
}

impl SearchMethod for GridSearch {
    fn initial_operations(&mut self, ctx: &mut Context) -> Vec<Operation> {
        let n = if self.max_concurrent_trials > 0 { (self.max_concurrent_trials as u64).min(self.grid.len()) } else { self.grid.len() };
        (0..n).filter_map(|_| self.create_next(ctx)).collect()
    }

    fn validation_completed(&mut self, _: &mut Context, _: RequestId, _: f64, _: u64) -> Vec<Operation> {
        Vec::new()
    }

    /// An invalid point stays invalid; there is nothing to replace it with.
    fn trial_exited_early(&mut self, _: &mut Context, _: RequestId, _: ExitReason) -> Vec<Operation> {
        Vec::new()
    }

    fn trial_closed(&mut self, ctx: &mut Context, _: RequestId) -> Vec<Operation> {
        self.create_next(ctx).into_iter().collect()
    }

    fn progress(&self, trials: &Trials) -> f64 {
        let done: f64 = trials.values().map(|t| t.fraction_done(self.length)).sum();
        done / self.grid.len() as f64
    }

    fn snapshot(&self) -> Box<serde_json::value::RawValue> {
        to_json(&self.state)
    }

    fn restore(&mut self, state: &Value) -> SearcherResult<()> {
        self.state = GridState::deserialize(state)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_values_follow_upstream_spacing() {
        let ints = axis_values(&HyperparameterSpace::Int { min: 1, max: 10, count: Some(4) }).unwrap();
        assert_eq!(ints, vec![Value::from(1), Value::from(4), Value::from(7), Value::from(10)]);
        let clamped = axis_values(&HyperparameterSpace::Int { min: 1, max: 3, count: Some(10) }).unwrap();
        assert_eq!(clamped.len(), 3);
        let single = axis_values(&HyperparameterSpace::Int { min: 1, max: 4, count: Some(1) }).unwrap();
        assert_eq!(single, vec![Value::from(3)], "midpoint 2.5 rounds half away from zero");
        let logs = axis_values(&HyperparameterSpace::Log { min: -3.0, max: -1.0, base: 10.0, count: Some(3) }).unwrap();
        let logs: Vec<f64> = logs.iter().map(|v| v.as_f64().unwrap()).collect();
        assert!((logs[0] - 1e-3).abs() < 1e-15 && (logs[1] - 1e-2).abs() < 1e-15 && (logs[2] - 1e-1).abs() < 1e-15);
    }

    #[test]
    fn oversized_grids_are_refused() {
        let mut space = Hyperparameters::new();
        for name in ["a", "b", "c"] {
            space.insert(name.into(), HyperparameterSpace::Double { min: 0.0, max: 1.0, count: Some(1000) });
        }
        let reason = Grid::new(&space).unwrap_err().reason;
        assert!(reason.contains("the grid has 1000000000 points") && reason.contains("the limit is 100000"), "{reason}");
        for name in ["d", "e", "f", "g", "h", "i"] {
            space.insert(name.into(), HyperparameterSpace::Double { min: 0.0, max: 1.0, count: Some(u32::MAX as usize) });
        }
        assert!(Grid::new(&space).unwrap_err().reason.contains("the limit is 100000"), "no overflow");
    }
}
