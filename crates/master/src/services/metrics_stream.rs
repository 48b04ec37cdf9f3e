//! The rules of the experiment `metrics-stream` endpoints, apart from HTTP: the update period, the
//! metric group a request names, metric names read from the trials' summaries (one row per trial,
//! kept current as reports arrive — never a scan of the reports), what a later update adds, and a
//! trial's value nearest a point of progress.

use std::collections::BTreeSet;
use std::time::Duration;

use resolute_api::metrics_stream::{ExpMetricNamesResponse, MetricIdentifier};
use resolute_store::{MetricRecord, TRAINING_GROUP, VALIDATION_GROUP};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Upstream's period when the request gives none.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(30);

/// `periodSeconds`: 0 or absent means the default; negative is a 400.
pub fn period(seconds: Option<i32>) -> ApiResult<Duration> {
    match seconds {
        None | Some(0) => Ok(DEFAULT_PERIOD),
        Some(s) if s < 0 => Err(ApiError::invalid(format!("periodSeconds must not be negative, got {s}"))),
        Some(s) => Ok(Duration::from_secs(u64::try_from(s).unwrap_or(0))),
    }
}

/// The group a request names with `group` or the legacy `metricType`; one is required.
pub fn group_of(group: Option<&str>, metric_type: Option<&str>) -> ApiResult<String> {
    if let Some(g) = group.filter(|g| !g.is_empty()) {
        return Ok(g.to_owned());
    }
    match metric_type.filter(|t| !t.is_empty()) {
        Some("METRIC_TYPE_TRAINING") => Ok(TRAINING_GROUP.to_owned()),
        Some("METRIC_TYPE_VALIDATION") => Ok(VALIDATION_GROUP.to_owned()),
        Some("METRIC_TYPE_PROFILING") => Ok("profiling".to_owned()),
        None | Some("METRIC_TYPE_UNSPECIFIED") => {
            Err(ApiError::invalid("group: give the metric group (e.g. training, validation) or metricType"))
        }
        Some(other) => Err(ApiError::invalid(format!(
            "metricType: {other:?} is not one of METRIC_TYPE_TRAINING, METRIC_TYPE_VALIDATION, METRIC_TYPE_PROFILING"
        ))),
    }
}

/// Every (group, name) of a trial's `summary_metrics` (`{"<group>": {"<name>": …}}`).
pub fn summary_names(summary: &Value) -> impl Iterator<Item = MetricIdentifier> + '_ {
    summary.as_object().into_iter().flat_map(|groups| {
        groups.iter().flat_map(|(group, metrics)| {
            metrics
                .as_object()
                .into_iter()
                .flat_map(move |m| m.keys().map(move |name| MetricIdentifier { group: group.clone(), name: name.clone() }))
        })
    })
}

/// What the metric-names stream has sent so far.
#[derive(Default)]
pub struct NamesSent {
    first_sent: bool,
    searcher: BTreeSet<String>,
    names: BTreeSet<MetricIdentifier>,
}

impl NamesSent {
    /// The update holding what is new; the first update is always sent, later ones only when
    /// something is new.
    pub fn update(
        &mut self,
        searcher: impl IntoIterator<Item = String>,
        names: impl IntoIterator<Item = MetricIdentifier>,
    ) -> Option<ExpMetricNamesResponse> {
        let mut out = ExpMetricNamesResponse::default();
        for s in searcher {
            if self.searcher.insert(s.clone()) {
                out.searcher_metrics.push(s);
            }
        }
        let new: BTreeSet<MetricIdentifier> = names.into_iter().filter(|n| !self.names.contains(n)).collect();
        for n in new {
            match n.group.as_str() {
                TRAINING_GROUP => out.training_metrics.push(n.name.clone()),
                VALIDATION_GROUP => out.validation_metrics.push(n.name.clone()),
                _ => {}
            }
            self.names.insert(n.clone());
            out.metric_names.push(n);
        }
        let empty = out.searcher_metrics.is_empty() && out.metric_names.is_empty();
        if empty && self.first_sent {
            return None;
        }
        self.first_sent = true;
        Some(out)
    }
}

/// The report of `name` nearest `target` within `margin` batches (the earlier one on a tie), as
/// `(batches, value)`. Archived reports (superseded by a restart) do not count.
pub fn nearest(reports: &[MetricRecord], name: &str, target: i64, margin: i64) -> Option<(i64, f64)> {
    reports
        .iter()
        .filter(|r| !r.archived && (r.steps_completed - target).abs() <= margin)
        .filter_map(|r| r.avg_metrics.get(name).and_then(Value::as_f64).map(|v| (r.steps_completed, v)))
        .min_by_key(|(steps, _)| ((steps - target).abs(), *steps))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn report(steps: i64, metrics: Value) -> MetricRecord {
        MetricRecord {
            id: steps,
            trial_id: 1,
            trial_run_id: 1,
            group: "validation".into(),
            steps_completed: steps,
            report_time: chrono::Utc::now(),
            avg_metrics: metrics.as_object().unwrap().clone(),
            batch_metrics: Vec::new(),
            archived: false,
        }
    }

    #[test]
    fn later_updates_carry_only_new_names() {
        let summary = json!({"training": {"loss": {}}, "validation": {"val_loss": {}, "acc": {}}, "inference": {"lat": {}}});
        let mut sent = NamesSent::default();
        let first = sent.update(["val_loss".to_owned()], summary_names(&summary)).unwrap();
        assert_eq!(first.searcher_metrics, ["val_loss"]);
        assert_eq!(first.training_metrics, ["loss"]);
        assert_eq!(first.validation_metrics, ["acc", "val_loss"]);
        assert_eq!(first.metric_names.len(), 4);
        assert!(sent.update(["val_loss".to_owned()], summary_names(&summary)).is_none());
        let grown = json!({"training": {"loss": {}, "lr": {}}});
        let next = sent.update(Vec::new(), summary_names(&grown)).unwrap();
        assert_eq!(next.metric_names, [MetricIdentifier { group: "training".into(), name: "lr".into() }]);
        // An empty first update is still sent.
        assert!(NamesSent::default().update(Vec::new(), Vec::new()).is_some());
    }

    #[test]
    fn nearest_report_within_the_margin() {
        let reports = [
            report(90, json!({"acc": 0.1})),
            report(105, json!({"acc": 0.5})),
            report(95, json!({"loss": 1.0})),
            report(120, json!({"acc": 0.9})),
        ];
        assert_eq!(nearest(&reports, "acc", 100, 10), Some((105, 0.5)));
        assert_eq!(nearest(&reports, "acc", 100, 4), None);
        assert_eq!(nearest(&reports, "acc", 95, 5), Some((90, 0.1)));
    }

    #[test]
    fn periods_and_groups() {
        assert_eq!(period(None).unwrap(), DEFAULT_PERIOD);
        assert_eq!(period(Some(2)).unwrap(), Duration::from_secs(2));
        assert!(period(Some(-1)).unwrap_err().message.contains("periodSeconds"));
        assert_eq!(group_of(None, Some("METRIC_TYPE_VALIDATION")).unwrap(), "validation");
        assert!(group_of(None, None).unwrap_err().message.contains("group"));
        assert!(group_of(None, Some("BOGUS")).unwrap_err().message.contains("metricType"));
    }
}
