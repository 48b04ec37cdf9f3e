//! int64/uint64 fields travel as JSON strings (`"1710000000"`), as grpc-gateway writes them. Inputs
//! also accept plain numbers, which upstream's gateway takes too (and its echo routes send).

use serde::de::{Deserializer, Error, Unexpected, Visitor};
use serde::ser::Serializer;

/// `#[serde(with = "crate::int64")]` for an `i64`.
pub fn serialize<S: Serializer>(value: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(Int64Visitor)
}

struct Int64Visitor;

impl Visitor<'_> for Int64Visitor {
    type Value = i64;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an int64 as a string (\"123\") or a number")
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<i64, E> {
        // Python clients may send `1710000000.0`; only whole numbers are int64s.
        if v.fract() == 0.0 && v.abs() < 9.0e18 { Ok(v as i64) } else { Err(E::invalid_value(Unexpected::Float(v), &self)) }
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<i64, E> {
        v.trim().parse().map_err(|_| E::invalid_value(Unexpected::Str(v), &self))
    }
}

/// `#[serde(default, with = "crate::int64::option")]` for an `Option<i64>`: `null` or absent is `None`.
pub mod option {
    use serde::de::Deserializer;
    use serde::ser::Serializer;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    struct Wrapped(#[serde(with = "super")] i64);

    pub fn serialize<S: Serializer>(value: &Option<i64>, serializer: S) -> Result<S::Ok, S::Error> {
        value.map(Wrapped).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
        Ok(Option::<Wrapped>::deserialize(deserializer)?.map(|Wrapped(v)| v))
    }
}

/// A map whose int64 values travel as strings (checkpoint `resources`).
pub mod map {
    use std::collections::BTreeMap;

    use serde::de::Deserializer;
    use serde::ser::{SerializeMap, Serializer};
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    struct Wrapped(#[serde(with = "super")] i64);

    pub fn serialize<S: Serializer>(value: &BTreeMap<String, i64>, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(value.len()))?;
        for (k, v) in value {
            map.serialize_entry(k, &Wrapped(*v))?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, i64>, D::Error> {
        let wrapped = BTreeMap::<String, Wrapped>::deserialize(deserializer)?;
        Ok(wrapped.into_iter().map(|(k, Wrapped(v))| (k, v)).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct T {
        #[serde(with = "crate::int64")]
        n: i64,
        #[serde(with = "crate::int64::map")]
        m: BTreeMap<String, i64>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct O {
        #[serde(default, with = "crate::int64::option")]
        n: Option<i64>,
    }

    #[test]
    fn optional_int64_writes_a_string_and_reads_both_or_null() {
        assert_eq!(serde_json::to_string(&O { n: Some(7) }).unwrap(), r#"{"n":"7"}"#);
        assert_eq!(serde_json::from_str::<O>(r#"{"n":7}"#).unwrap(), O { n: Some(7) });
        assert_eq!(serde_json::from_str::<O>(r#"{"n":"7"}"#).unwrap(), O { n: Some(7) });
        assert_eq!(serde_json::from_str::<O>(r#"{"n":null}"#).unwrap(), O { n: None });
        assert_eq!(serde_json::from_str::<O>("{}").unwrap(), O { n: None });
    }

    #[test]
    fn writes_strings_and_reads_both() {
        let t = T { n: 1_710_000_000, m: BTreeMap::from([("a".to_owned(), 5)]) };
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"n":"1710000000","m":{"a":"5"}}"#);
        let back: T = serde_json::from_str(r#"{"n":1710000000,"m":{"a":5}}"#).unwrap();
        assert_eq!(back, t);
        let back: T = serde_json::from_str(r#"{"n":"1710000000","m":{"a":"5"}}"#).unwrap();
        assert_eq!(back, t);
        assert!(serde_json::from_str::<T>(r#"{"n":"ten","m":{}}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"n":1.5,"m":{}}"#).is_err());
    }
}
