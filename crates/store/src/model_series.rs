//! A trial's metric series of one group as columns: its live reports in step order, each
//! metric's values as numbers (what downsampling compares) with the exact JSON kept for the points
//! a chart returns. Compact (about 8 bytes a value) so the store can keep recent series in memory
//! (see `sql/metric_series.rs`) and a time-series request reads numbers, not report bodies.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Number, Value};

/// Integers up to this magnitude are exact in an `f64`; larger ones are kept as JSON.
const EXACT_INT: i64 = 1 << 53;

/// One reported metric value as the builder takes it: what a column stores as a number, or the
/// exact JSON otherwise (a `u64` above `i64::MAX`, a string, a bool, null, an object...).
#[derive(Clone, Debug, PartialEq)]
pub enum Reported {
    Int(i64),
    Float(f64),
    Other(Value),
}

impl Reported {
    pub fn of(value: &Value) -> Reported {
        match value {
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Reported::Int(i),
                (None, Some(f)) if !n.is_u64() => Reported::Float(f),
                _ => Reported::Other(value.clone()),
            },
            other => Reported::Other(other.clone()),
        }
    }
}

/// One metric's values, one per report of the series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesColumn {
    /// The value as a number; NaN where the report has no number for this metric (absent, or a
    /// string, bool, object… kept in `others`).
    numbers: Vec<f64>,
    /// Bit per report: the number was written as an integer (read back as one).
    integers: Vec<u64>,
    /// Values that are not numbers representable above (by report index).
    others: BTreeMap<u32, Value>,
}

impl SeriesColumn {
    fn push(&mut self, value: Option<&Value>) {
        self.push_reported(value.map(Reported::of));
    }

    fn push_reported(&mut self, value: Option<Reported>) {
        let row = self.numbers.len();
        if row.is_multiple_of(64) {
            self.integers.push(0);
        }
        let number = match value {
            None => f64::NAN,
            Some(Reported::Int(i)) if (-EXACT_INT..=EXACT_INT).contains(&i) => {
                self.integers[row / 64] |= 1 << (row % 64);
                i as f64
            }
            Some(Reported::Float(f)) => f,
            Some(Reported::Int(i)) => {
                self.others.insert(row as u32, Value::from(i));
                f64::NAN
            }
            Some(Reported::Other(other)) => {
                self.others.insert(row as u32, other);
                f64::NAN
            }
        };
        self.numbers.push(number);
    }

    /// The value at `row` as a finite number, if it is one.
    pub fn number(&self, row: usize) -> Option<f64> {
        self.numbers.get(row).copied().filter(|v| v.is_finite()).or_else(|| self.others.get(&(row as u32)).and_then(Value::as_f64))
    }

    /// The value at `row` as reported (integers stay integers), or `None` where absent.
    pub fn value(&self, row: usize) -> Option<Value> {
        if let Some(other) = self.others.get(&(row as u32)) {
            return Some(other.clone());
        }
        let v = *self.numbers.get(row)?;
        if v.is_nan() {
            None
        } else if self.integers[row / 64] & (1 << (row % 64)) != 0 {
            Some(Value::Number(Number::from(v as i64)))
        } else {
            Number::from_f64(v).map(Value::Number)
        }
    }

    fn bytes(&self) -> usize {
        self.numbers.capacity() * 8 + self.integers.capacity() * 8 + self.others.len() * 64
    }
}

/// A trial's live reports of one group, ascending by `(steps_completed, id)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetricSeries {
    /// `steps_completed` per report (ascending).
    pub steps: Vec<i64>,
    /// Report time per report, microseconds since the epoch.
    pub times: Vec<i64>,
    /// Every metric name any report of the series has, sorted; `columns` in the same order.
    pub names: Vec<String>,
    pub columns: Vec<SeriesColumn>,
}

impl MetricSeries {
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The column of metric `name`, if any report has it.
    pub fn column(&self, name: &str) -> Option<&SeriesColumn> {
        self.names.binary_search_by(|n| n.as_str().cmp(name)).ok().map(|i| &self.columns[i])
    }

    /// The reports (as an index range) with `start <= steps_completed <= end`.
    pub fn step_range(&self, start: i64, end: i64) -> std::ops::Range<usize> {
        let lo = self.steps.partition_point(|&s| s < start);
        let hi = self.steps.partition_point(|&s| s <= end);
        lo..hi.max(lo)
    }

    pub fn report_time(&self, row: usize) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.times[row]).unwrap_or_default()
    }

    /// Approximate heap size, for the cache's memory bound.
    pub fn bytes(&self) -> usize {
        self.steps.capacity() * 8
            + self.times.capacity() * 8
            + self.names.iter().map(|n| n.capacity() + 24).sum::<usize>()
            + self.columns.iter().map(SeriesColumn::bytes).sum::<usize>()
    }
}

/// Builds a [`MetricSeries`] from reports given in `(steps_completed, id)` order.
#[derive(Default)]
pub struct MetricSeriesBuilder {
    series: MetricSeries,
    by_name: std::collections::HashMap<String, usize>,
    /// Scratch: which columns the current report filled.
    filled: Vec<bool>,
    /// The columns in the order the last reports named them, and the current report's place in it.
    order: Vec<usize>,
    next: usize,
}

impl MetricSeriesBuilder {
    /// Appends one report (its `avgMetrics`).
    pub fn push(&mut self, steps: i64, time: DateTime<Utc>, avg_metrics: &Map<String, Value>) {
        self.start_report(steps, time.timestamp_micros());
        for (name, value) in avg_metrics {
            self.metric(name, Reported::of(value));
        }
        self.end_report();
    }

    /// Starts a report; its metrics follow through [`Self::metric`], then [`Self::end_report`].
    pub fn start_report(&mut self, steps: i64, time_micros: i64) {
        self.series.steps.push(steps);
        self.series.times.push(time_micros);
        self.filled.iter_mut().for_each(|f| *f = false);
        self.next = 0;
    }

    /// One metric of the current report (a repeated name: the last value wins, as in a JSON map).
    pub fn metric(&mut self, name: &str, value: Reported) {
        // Reports of a series mostly name the same metrics in the same order: try the column
        // after the last one filled before hashing the name.
        let guess = self.order.get(self.next).copied().filter(|&c| self.series.names[c] == name);
        let column = match guess.or_else(|| self.by_name.get(name).copied()) {
            Some(c) => c,
            None => {
                let row = self.series.steps.len() - 1;
                let mut column = SeriesColumn::default();
                for _ in 0..row {
                    column.push(None);
                }
                self.series.columns.push(column);
                self.series.names.push(name.to_owned());
                self.filled.push(false);
                self.by_name.insert(name.to_owned(), self.series.columns.len() - 1);
                self.series.columns.len() - 1
            }
        };
        if self.order.get(self.next) != Some(&column) {
            self.order.truncate(self.next);
            self.order.push(column);
        }
        self.next += 1;
        if self.filled[column] {
            // Already filled in this report: replace its value.
            let c = &mut self.series.columns[column];
            let row = c.numbers.len() - 1;
            c.numbers.pop();
            c.others.remove(&(row as u32));
            c.integers[row / 64] &= !(1 << (row % 64));
            if row.is_multiple_of(64) {
                c.integers.pop();
            }
        }
        self.series.columns[column].push_reported(Some(value));
        self.filled[column] = true;
    }

    /// Ends the current report: the metrics it did not name are absent from it.
    pub fn end_report(&mut self) {
        for (column, filled) in self.series.columns.iter_mut().zip(&self.filled) {
            if !filled {
                column.push(None);
            }
        }
    }

    pub fn finish(self) -> MetricSeries {
        let MetricSeries { mut steps, mut times, names, mut columns } = self.series;
        // Kept in a cache: no spare capacity from the doublings while reading.
        steps.shrink_to_fit();
        times.shrink_to_fit();
        for column in &mut columns {
            column.numbers.shrink_to_fit();
            column.integers.shrink_to_fit();
        }
        let mut named: Vec<(String, SeriesColumn)> = names.into_iter().zip(columns).collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let (names, columns) = named.into_iter().unzip();
        MetricSeries { steps, times, names, columns }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(reports: &[(i64, Value)]) -> MetricSeries {
        let mut b = MetricSeriesBuilder::default();
        for (steps, avg) in reports {
            b.push(*steps, DateTime::from_timestamp_micros(*steps * 1_000_001).unwrap(), avg.as_object().unwrap());
        }
        b.finish()
    }

    #[test]
    fn values_read_back_as_reported() {
        let s = build(&[
            (1, json!({"loss": 0.5, "epoch": 1, "phase": "warmup"})),
            (2, json!({"loss": 2, "big": 18446744073709551615u64, "neg": -3})),
            (3, json!({"accuracy": 0.25, "loss": null})),
        ]);
        assert_eq!(s.names, ["accuracy", "big", "epoch", "loss", "neg", "phase"]);
        assert_eq!(s.len(), 3);
        let loss = s.column("loss").unwrap();
        assert_eq!((loss.value(0), loss.value(1), loss.value(2)), (Some(json!(0.5)), Some(json!(2)), Some(Value::Null)));
        assert_eq!(loss.value(1).unwrap().to_string(), "2", "an integer stays an integer");
        assert_eq!((loss.number(0), loss.number(1), loss.number(2)), (Some(0.5), Some(2.0), None));
        assert_eq!(s.column("big").unwrap().value(1), Some(json!(18446744073709551615u64)));
        assert_eq!(s.column("neg").unwrap().value(1), Some(json!(-3)));
        assert_eq!(s.column("phase").unwrap().value(0), Some(json!("warmup")));
        assert_eq!(s.column("phase").unwrap().number(0), None, "a string is not a number to downsample");
        assert_eq!(s.column("accuracy").unwrap().value(0), None, "absent before its first report");
        assert_eq!(s.column("epoch").unwrap().value(2), None, "absent after its last");
        assert_eq!(s.report_time(1), DateTime::from_timestamp_micros(2_000_002).unwrap());
        assert!(s.column("nope").is_none());
    }

    #[test]
    fn step_ranges_are_inclusive() {
        let s = build(&[(10, json!({})), (20, json!({})), (20, json!({})), (30, json!({}))]);
        assert_eq!(s.step_range(i64::MIN, i64::MAX), 0..4);
        assert_eq!(s.step_range(20, 20), 1..3);
        assert_eq!(s.step_range(11, 29), 1..3);
        assert_eq!(s.step_range(31, 40), 4..4);
        assert_eq!(s.step_range(30, 10), 3..3);
    }

    #[test]
    fn many_rows_keep_integer_bits_apart() {
        let reports: Vec<(i64, Value)> =
            (0..200).map(|i| (i, if i % 3 == 0 { json!({"v": i}) } else { json!({"v": i as f64 + 0.5}) })).collect();
        let s = build(&reports);
        let v = s.column("v").unwrap();
        for i in 0..200usize {
            let expected = if i % 3 == 0 { json!(i) } else { json!(i as f64 + 0.5) };
            assert_eq!(v.value(i), Some(expected), "row {i}");
        }
    }
}
