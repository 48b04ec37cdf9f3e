//! Hyperparameter importance of an experiment's metrics (`…/hyperparameter-importance`): reads at
//! most [`MAX_TRIALS`] trials (their hyperparameters and summary metrics, no metric rows) and
//! hands them to the pure `domain::hp_importance`. The value of a metric per trial: the best
//! value (by `smaller_is_better`) for the searcher metric, the latest reported one for others.

use std::collections::BTreeMap;

use resolute_store::{OrderDirection, TrialFilter, TrialSort};
use serde_json::Value;

use super::ExperimentService;
use crate::domain::ExperimentState;
use crate::domain::hp_importance::{MIN_TRIALS, Observation, flatten_hparams, importance};
use crate::error::ApiResult;

/// Trials read per request (the oldest first); bounds the request's cost.
pub const MAX_TRIALS: i64 = 2000;

/// The store's metric groups the endpoint covers.
pub const GROUPS: [&str; 2] = ["training", "validation"];

pub struct MetricImportance {
    pub importance: BTreeMap<String, f64>,
    pub trial_count: usize,
    /// Why `importance` is empty.
    pub error: String,
    /// Too few trials yet, and the experiment still runs.
    pub pending: bool,
}

pub struct HpImportanceView {
    pub progress: f64,
    /// Group (`training` / `validation`) → metric name → its importances.
    pub metrics: BTreeMap<&'static str, BTreeMap<String, MetricImportance>>,
}

impl ExperimentService {
    /// `only`: one metric (`group`, name); `None`: every numeric metric of both groups.
    pub async fn hp_importance(&self, experiment_id: i32, only: Option<(&'static str, String)>) -> ApiResult<HpImportanceView> {
        let record = self.store.experiment_by_id(experiment_id).await?;
        let running = ExperimentState::parse(&record.state).is_some_and(|s| !s.is_terminal());
        let searcher = record.config.get("searcher");
        let searcher_metric = searcher.and_then(|s| s.get("metric")).and_then(Value::as_str).map(str::to_owned);
        let smaller_is_better = searcher.and_then(|s| s.get("smaller_is_better")).and_then(Value::as_bool).unwrap_or(true);
        let trials = self
            .store
            .list_trials(&TrialFilter {
                experiment_id,
                sort: TrialSort::Id,
                order: OrderDirection::Asc,
                limit: Some(MAX_TRIALS),
                ..Default::default()
            })
            .await?
            .trials;

        let wanted: Vec<(&'static str, String)> = match only {
            Some(one) => vec![one],
            None => {
                let mut names = std::collections::BTreeSet::new();
                for t in &trials {
                    for group in GROUPS {
                        if let Some(Value::Object(metrics)) = t.summary_metrics.get(group) {
                            for (name, s) in metrics {
                                if s.get("type").and_then(Value::as_str) == Some("number") {
                                    names.insert((group, name.clone()));
                                }
                            }
                        }
                    }
                }
                names.into_iter().collect()
            }
        };

        let mut metrics: BTreeMap<&'static str, BTreeMap<String, MetricImportance>> = BTreeMap::new();
        for (group, name) in wanted {
            let best = group == "validation" && searcher_metric.as_deref() == Some(name.as_str());
            let key = if best { if smaller_is_better { "min" } else { "max" } } else { "last" };
            let observations: Vec<Observation> = trials
                .iter()
                .filter_map(|t| {
                    let metric = t.summary_metrics.get(group)?.get(&name)?.get(key)?.as_f64()?;
                    Some(Observation { hparams: flatten_hparams(&t.hparams), metric })
                })
                .filter(|o| o.metric.is_finite())
                .collect();
            let trial_count = observations.len();
            let result = importance(&observations);
            let (error, pending) = if trial_count < MIN_TRIALS {
                (format!("{trial_count} trial(s) reported {group} metric {name:?}; importance needs at least {MIN_TRIALS}"), running)
            } else if result.is_empty() {
                ("the trials have no hyperparameters".to_owned(), false)
            } else {
                (String::new(), false)
            };
            metrics.entry(group).or_default().insert(name, MetricImportance { importance: result, trial_count, error, pending });
        }
        Ok(HpImportanceView { progress: record.progress.unwrap_or(0.0), metrics })
    }
}
