//! `StoredJson`: a JSON document as the store read it — its text, validated, parsed into a
//! [`Value`] only when some code reads into it. Lists pass stored configurations through to their
//! answers as text (no parse, no re-serialisation per row); code that inspects one (`config["x"]`)
//! parses it once, on first use, through `Deref`.

use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use serde_json::Value;
use serde_json::value::RawValue;

pub struct StoredJson {
    raw: Box<RawValue>,
    parsed: OnceLock<Value>,
}

impl StoredJson {
    /// Checks that `text` is one JSON document (without building it).
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        Ok(Self { raw: RawValue::from_string(text)?, parsed: OnceLock::new() })
    }

    /// The document as stored.
    pub fn raw(&self) -> &RawValue {
        &self.raw
    }

    /// A copy of the stored text, to embed in an answer unchanged.
    pub fn to_raw(&self) -> Box<RawValue> {
        self.raw.clone()
    }

    /// The stored text, moved out to embed in an answer unchanged.
    pub fn into_raw(self) -> Box<RawValue> {
        self.raw
    }

    /// The parsed document (parsing it now if nothing has yet).
    pub fn value(&self) -> &Value {
        // Valid JSON by construction; the parser's nesting limit is the same as the validator's.
        self.parsed.get_or_init(|| serde_json::from_str(self.raw.get()).unwrap_or(Value::Null))
    }

    /// The parsed document, owned.
    pub fn into_value(self) -> Value {
        match self.parsed.into_inner() {
            Some(v) => v,
            None => serde_json::from_str(self.raw.get()).unwrap_or(Value::Null),
        }
    }

    /// Reads a typed view of the document straight from its text (fields the type skips are
    /// scanned, not built).
    pub fn read<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.raw.get())
    }
}

impl From<&Value> for StoredJson {
    fn from(value: &Value) -> Self {
        let raw = serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        let parsed = OnceLock::new();
        let _ = parsed.set(value.clone());
        Self { raw, parsed }
    }
}

impl From<Value> for StoredJson {
    fn from(value: Value) -> Self {
        let raw = serde_json::value::to_raw_value(&value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        let parsed = OnceLock::new();
        let _ = parsed.set(value);
        Self { raw, parsed }
    }
}

impl Deref for StoredJson {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl Clone for StoredJson {
    fn clone(&self) -> Self {
        let parsed = OnceLock::new();
        if let Some(v) = self.parsed.get() {
            let _ = parsed.set(v.clone());
        }
        Self { raw: self.raw.clone(), parsed }
    }
}

impl PartialEq for StoredJson {
    fn eq(&self, other: &Self) -> bool {
        self.raw.get() == other.raw.get() || self.value() == other.value()
    }
}

impl fmt::Debug for StoredJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw.get())
    }
}

impl serde::Serialize for StoredJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_parse_lazily_and_serialise_the_stored_text() {
        let stored = StoredJson::from_text(r#"{"searcher": {"name": "single"},  "x": [1, 2]}"#.to_owned()).expect("valid");
        assert!(stored.parsed.get().is_none());
        assert_eq!(stored["searcher"]["name"], "single");
        assert!(stored.parsed.get().is_some());
        // The text is passed through exactly as stored (spacing included).
        assert_eq!(serde_json::to_string(&stored).expect("serialises"), r#"{"searcher": {"name": "single"},  "x": [1, 2]}"#);
        assert_eq!(stored.clone().into_value(), json!({"searcher": {"name": "single"}, "x": [1, 2]}));
    }

    #[test]
    fn invalid_text_is_refused_and_values_round_trip() {
        assert!(StoredJson::from_text("{\"a\": ".to_owned()).is_err());
        let v = json!({"a": [1, {"b": null}]});
        let stored = StoredJson::from(&v);
        assert_eq!(*stored, v);
        assert_eq!(StoredJson::from_text(stored.raw().get().to_owned()).expect("valid"), stored);
    }
}
