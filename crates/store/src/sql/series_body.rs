//! A stored report body's `avgMetrics` streamed into a [`MetricSeriesBuilder`]: the body text is
//! parsed once, names borrowed from it where they have no escapes, numbers handed over as numbers,
//! and every other part of the body skipped, without building a `serde_json::Value` per report
//! (a 500-trial chart's first read decodes a million bodies).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::model_series::{MetricSeriesBuilder, Reported};

/// Appends the report of `body` (a stored report body: `{"avgMetrics": {...}, ...}`) at `steps`
/// and `time_micros`. A body without `avgMetrics` (or with a non-object one) is a report of no
/// metrics, as before.
pub(crate) fn push_body(builder: &mut MetricSeriesBuilder, steps: i64, time_micros: i64, body: &str) -> serde_json::Result<()> {
    builder.start_report(steps, time_micros);
    let mut de = serde_json::Deserializer::from_str(body);
    let result = Part { builder: &mut *builder, metrics: false }.deserialize(&mut de).and_then(|()| de.end());
    builder.end_report();
    result
}

/// A part of the body: the body itself (`metrics: false`) or its `avgMetrics` (`true`). Either,
/// when not an object, is a report of no metrics.
struct Part<'b> {
    builder: &'b mut MetricSeriesBuilder,
    metrics: bool,
}

impl<'de> DeserializeSeed<'de> for Part<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Part<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(if self.metrics { "an avgMetrics object" } else { "a report body object" })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if self.metrics {
                let value = map.next_value::<ReportedValue>()?;
                self.builder.metric(&key, value.0);
            } else if key == "avgMetrics" {
                if seen {
                    return Err(de::Error::duplicate_field("avgMetrics"));
                }
                seen = true;
                map.next_value_seed(Part { builder: &mut *self.builder, metrics: true })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        IgnoredAny.visit_seq(seq).map(drop)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// One metric's value: numbers as numbers, anything else as its JSON.
struct ReportedValue(Reported);

impl<'de> de::Deserialize<'de> for ReportedValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ReportedVisitor)
    }
}

struct ReportedVisitor;

impl<'de> Visitor<'de> for ReportedVisitor {
    type Value = ReportedValue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a metric value")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ReportedValue, E> {
        Ok(ReportedValue(Reported::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ReportedValue, E> {
        Ok(ReportedValue(match i64::try_from(v) {
            Ok(i) => Reported::Int(i),
            Err(_) => Reported::Other(Value::from(v)),
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ReportedValue, E> {
        Ok(ReportedValue(Reported::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ReportedValue, E> {
        Ok(ReportedValue(Reported::Other(Value::String(v.to_owned()))))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ReportedValue, E> {
        Ok(ReportedValue(Reported::Other(Value::Bool(v))))
    }
    fn visit_unit<E: de::Error>(self) -> Result<ReportedValue, E> {
        Ok(ReportedValue(Reported::Other(Value::Null)))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<ReportedValue, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(ReportedValue(Reported::Other(Value::Array(items))))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReportedValue, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            object.insert(k, v);
        }
        Ok(ReportedValue(Reported::Other(Value::Object(object))))
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;
    use serde_json::json;

    use super::*;
    use crate::model_series::MetricSeries;

    /// The series the straightforward way: each body parsed to a `Value`, its `avgMetrics` pushed.
    fn via_values(bodies: &[&str]) -> MetricSeries {
        let mut b = MetricSeriesBuilder::default();
        for (i, body) in bodies.iter().enumerate() {
            let v: Value = serde_json::from_str(body).unwrap();
            let empty = serde_json::Map::new();
            b.push(
                i as i64,
                DateTime::from_timestamp_micros(i as i64).unwrap(),
                v.get("avgMetrics").and_then(Value::as_object).unwrap_or(&empty),
            );
        }
        b.finish()
    }

    fn streamed(bodies: &[&str]) -> MetricSeries {
        let mut b = MetricSeriesBuilder::default();
        for (i, body) in bodies.iter().enumerate() {
            push_body(&mut b, i as i64, i as i64, body).unwrap();
        }
        b.finish()
    }

    /// Equal series (NaN, the absent value, is not equal to itself: compared as printed).
    fn assert_same(a: &MetricSeries, b: &MetricSeries) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn streaming_builds_the_same_series_as_values() {
        let bodies = [
            r#"{"avgMetrics": {"loss": 0.5, "epoch": 1, "phase": "warmup"}, "batchMetrics": [{"loss": 1}]}"#,
            r#"{"batchMetrics": null, "avgMetrics": {"loss": 2, "big": 18446744073709551615, "neg": -3, "huge": 9007199254740993}}"#,
            r#"{"avgMetrics": {"accuracy": 0.25, "loss": null, "nested": {"a": [1, 2]}, "list": [1, "x"], "flag": true}}"#,
            r#"{"avgMetrics": {"esc\u0061ped": 1.5e300, "loss": -0.0}}"#,
            r#"{"avgMetrics": {"loss": 1, "loss": 3.5}}"#,
            r#"{"avgMetrics": []}"#,
            r#"{"avgMetrics": "none"}"#,
            r#"{}"#,
            r#"{"avgMetrics": {"accuracy": 0.5, "loss": 0.1}}"#,
            r#"{"avgMetrics": {"loss": 0.2, "accuracy": 0.6}}"#,
        ];
        let (a, b) = (via_values(&bodies), streamed(&bodies));
        assert_same(&a, &b);
        let loss = b.column("loss").unwrap();
        assert_eq!(loss.value(4), Some(json!(3.5)), "a repeated name: the last value, as serde_json's map");
        assert_eq!(b.column("escaped").unwrap().number(3), Some(1.5e300), "an escaped name is unescaped");
    }

    #[test]
    fn many_reports_in_changing_orders_match() {
        let bodies: Vec<String> = (0..300)
            .map(|i| match i % 5 {
                0 => format!(r#"{{"avgMetrics": {{"a": {i}, "b": {}.5}}}}"#, i),
                1 => format!(r#"{{"avgMetrics": {{"b": {i}, "a": {}.25}}}}"#, i),
                2 => format!(r#"{{"avgMetrics": {{"c": {i}}}}}"#),
                3 => r#"{"avgMetrics": {}}"#.to_owned(),
                _ => format!(r#"{{"avgMetrics": {{"a": {i}, "b": {i}, "c": {i}}}}}"#),
            })
            .collect();
        let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
        assert_same(&via_values(&bodies), &streamed(&bodies));
    }

    #[test]
    fn a_corrupt_body_is_an_error() {
        let mut b = MetricSeriesBuilder::default();
        assert!(push_body(&mut b, 1, 1, r#"{"avgMetrics": {"loss": 1"#).is_err());
        assert!(push_body(&mut b, 1, 1, r#"{"avgMetrics": {}} trailing"#).is_err());
    }
}
