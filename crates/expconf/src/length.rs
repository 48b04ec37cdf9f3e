//! Training lengths: `{batches: N}`, `{records: N}` or `{epochs: N}` (and, for the deprecated
//! `searcher.max_length`, a bare integer that upstream treated as unitless).

use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::error::ConfigError;
use crate::read::{Ctx, Field, quote};

/// The unit a length is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    Records,
    Batches,
    Epochs,
}

impl Unit {
    /// The config key for this unit (`records`, `batches`, `epochs`).
    pub fn key(self) -> &'static str {
        match self {
            Unit::Records => "records",
            Unit::Batches => "batches",
            Unit::Epochs => "epochs",
        }
    }

    fn from_key(key: &str) -> Option<Unit> {
        [Unit::Records, Unit::Batches, Unit::Epochs].into_iter().find(|u| u.key() == key)
    }
}

/// An amount of training, e.g. 5000 batches. Serialises as `{"batches": 5000}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Length {
    pub unit: Unit,
    pub units: u64,
}

impl Length {
    pub fn new(unit: Unit, units: u64) -> Self {
        Self { unit, units }
    }

    pub fn batches(units: u64) -> Self {
        Self::new(Unit::Batches, units)
    }

    pub fn records(units: u64) -> Self {
        Self::new(Unit::Records, units)
    }

    pub fn epochs(units: u64) -> Self {
        Self::new(Unit::Epochs, units)
    }
}

impl fmt::Display for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.units, self.unit.key())
    }
}

impl Serialize for Length {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.unit.key(), &self.units)?;
        map.end()
    }
}

/// `searcher.max_length`: a [`Length`], or a bare integer as older configs wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SearcherLength {
    Length(Length),
    /// Legacy unitless length; the training code decides what it counts.
    Units(u64),
}

impl SearcherLength {
    /// The number of units, whatever they are.
    pub fn units(&self) -> u64 {
        match self {
            SearcherLength::Length(length) => length.units,
            SearcherLength::Units(units) => *units,
        }
    }

    /// The unit, when the config named one.
    pub fn unit(&self) -> Option<Unit> {
        match self {
            SearcherLength::Length(length) => Some(length.unit),
            SearcherLength::Units(_) => None,
        }
    }
}

/// Reads a length object; `min` is the smallest allowed count (0 for periods, 1 for budgets).
pub(crate) fn read_length(ctx: &mut Ctx, field: &Field<'_>, min: u64) -> Option<Length> {
    let map = match field.value {
        serde_json::Value::Object(map) => map,
        other => {
            ctx.wrong_type(&field.path, "a length such as {batches: 100}, {records: 6400} or {epochs: 2}", other);
            return None;
        }
    };
    if map.len() != 1 {
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        let found = if keys.is_empty() { "an empty mapping".to_string() } else { keys.join(", ") };
        ctx.invalid(&field.path, found, "a length needs exactly one of batches, records or epochs");
        return None;
    }
    let (key, value) = map.iter().next()?;
    let Some(unit) = Unit::from_key(key) else {
        ctx.error(ConfigError::NotOneOf {
            path: field.path.key(key).to_string(),
            found: quote(key),
            allowed: "batches, records, epochs".to_string(),
        });
        return None;
    };
    let units = Field::new(value, field.path.key(key)).uint_at_least(ctx, min)?;
    Some(Length::new(unit, units))
}

/// Reads `max_length`: a positive length object or a positive bare integer.
pub(crate) fn read_searcher_length(ctx: &mut Ctx, field: &Field<'_>) -> Option<SearcherLength> {
    match field.value {
        serde_json::Value::Number(_) => field.uint_at_least(ctx, 1).map(SearcherLength::Units),
        _ => read_length(ctx, field, 1).map(SearcherLength::Length),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::path::FieldPath;
    use crate::read::Mode;

    fn read(value: serde_json::Value, min: u64) -> (Option<Length>, Vec<String>) {
        let mut ctx = Ctx::new(Mode::Complete);
        let length = read_length(&mut ctx, &Field::new(&value, FieldPath::root().key("max_length")), min);
        (length, ctx.errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn reads_each_unit_and_serialises_back() {
        assert_eq!(read(json!({"batches": 5000}), 1).0, Some(Length::batches(5000)));
        assert_eq!(read(json!({"epochs": 2}), 1).0, Some(Length::epochs(2)));
        assert_eq!(serde_json::to_value(Length::records(64)).unwrap(), json!({"records": 64}));
        assert_eq!(Length::batches(10).to_string(), "10 batches");
    }

    #[test]
    fn rejects_bad_shapes_with_paths() {
        let (_, errors) = read(json!({"batches": 0}), 1);
        assert_eq!(errors, ["max_length.batches: found 0, expected an integer >= 1"]);
        let (_, errors) = read(json!({"steps": 10}), 1);
        assert_eq!(errors, ["max_length.steps: found \"steps\", expected one of batches, records, epochs"]);
        let (_, errors) = read(json!({"batches": 1, "epochs": 1}), 1);
        assert_eq!(errors.len(), 1);
        let (_, errors) = read(json!("100 batches"), 1);
        assert!(errors[0].starts_with("max_length: expected a length"));
    }

    #[test]
    fn searcher_length_accepts_legacy_bare_integers() {
        let mut ctx = Ctx::new(Mode::Complete);
        let value = json!(1000);
        let length = read_searcher_length(&mut ctx, &Field::new(&value, FieldPath::root().key("max_length")));
        assert_eq!(length, Some(SearcherLength::Units(1000)));
        assert_eq!(length.map(|l| l.units()), Some(1000));
        assert_eq!(serde_json::to_value(length).unwrap(), json!(1000));
    }
}
