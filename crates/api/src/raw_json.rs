//! `RawJson`: a JSON document carried through an answer as text (e.g. an experiment's stored
//! configuration in a list of 200), neither parsed nor re-serialised on the way. Two are equal
//! when their documents are, whatever their spacing.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawJson(pub Box<RawValue>);

impl RawJson {
    /// The document, parsed.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl Default for RawJson {
    /// `null`.
    fn default() -> Self {
        Self(RawValue::NULL.to_owned())
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        Self(serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_value() == other.to_value()
    }
}
