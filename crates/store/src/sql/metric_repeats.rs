//! Exactly-once metric reports: a report that repeats one already stored — same trial, run,
//! group, steps and body, as when the harness retries a report whose answer it never got (the
//! master was killed after the write) — is admitted as [`MetricAdmission::Repeated`] and not
//! stored again. Both write paths (`metrics`, `sqlite_metrics`) read the stored candidates in the
//! batch's transaction with [`candidates_sql`] and apply [`mark_repeats`].

use std::collections::HashSet;

use super::metric_batch::body_text;
use crate::error::StoreResult;
use crate::model_metrics::{MetricAdmission, NewMetricReport};

/// `(trial id, run id, group, steps, body)` of a report.
pub(crate) type ReportKey = (i32, i32, String, i64, String);

/// The `(trial, group, steps)` triples of the admitted reports, each once, in batch order: what
/// the candidates query looks for.
pub(crate) fn lookups<'a>(reports: &[&'a NewMetricReport], admissions: &[MetricAdmission]) -> Vec<(i32, &'a str, i64)> {
    let mut seen = HashSet::new();
    reports
        .iter()
        .zip(admissions)
        .filter(|(_, a)| **a == MetricAdmission::Stored)
        .map(|(r, _)| (r.trial_id, r.group.as_str(), r.steps_completed))
        .filter(|k| seen.insert(*k))
        .collect()
}

/// A query for the live rows at `count` `(trial, group, steps)` triples; `placeholder(i)` names
/// the i-th parameter (`$1` or `?1`), bound as trial, group, steps for each triple in turn.
pub(crate) fn candidates_sql(count: usize, placeholder: impl Fn(usize) -> String) -> String {
    let terms: Vec<String> = (0..count)
        .map(|i| {
            format!(
                "(trial_id = {} AND metric_group = {} AND steps_completed = {})",
                placeholder(3 * i + 1),
                placeholder(3 * i + 2),
                placeholder(3 * i + 3)
            )
        })
        .collect();
    format!(
        "SELECT trial_id, trial_run_id, metric_group, steps_completed, body FROM metrics WHERE archived = FALSE AND ({})",
        terms.join(" OR ")
    )
}

/// Marks as repeated each admitted report equal to a stored one or to an earlier one of the batch.
pub(crate) fn mark_repeats(
    reports: &[&NewMetricReport],
    admissions: &mut [MetricAdmission],
    stored: HashSet<ReportKey>,
) -> StoreResult<()> {
    let mut seen = stored;
    for (r, admission) in reports.iter().zip(admissions.iter_mut()) {
        if *admission != MetricAdmission::Stored {
            continue;
        }
        if !seen.insert((r.trial_id, r.trial_run_id, r.group.clone(), r.steps_completed, body_text(r)?)) {
            *admission = MetricAdmission::Repeated;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    fn report(trial_id: i32, run: i32, steps: i64, loss: f64) -> NewMetricReport {
        let mut avg = Map::new();
        avg.insert("loss".into(), json!(loss));
        NewMetricReport {
            trial_id,
            trial_run_id: run,
            group: "training".into(),
            steps_completed: steps,
            report_time: crate::db_now(),
            avg_metrics: avg,
            batch_metrics: vec![],
            searcher_metric: None,
        }
    }

    #[test]
    fn only_exact_repeats_of_the_same_run_are_dropped() {
        let (a, b, c, d) = (report(1, 1, 5, 0.5), report(1, 1, 5, 0.5), report(1, 2, 5, 0.5), report(1, 1, 5, 0.25));
        let reports = vec![&a, &b, &c, &d];
        let mut admissions = vec![MetricAdmission::Stored; 4];
        assert_eq!(lookups(&reports, &admissions), vec![(1, "training", 5)]);
        mark_repeats(&reports, &mut admissions, HashSet::new()).unwrap();
        // The second is a retry of the first; another run, or other values at the same step, are not.
        assert_eq!(admissions, vec![MetricAdmission::Stored, MetricAdmission::Repeated, MetricAdmission::Stored, MetricAdmission::Stored]);
        let stored: HashSet<ReportKey> = [(1, 1, "training".to_owned(), 5, body_text(&a).unwrap())].into();
        let mut admissions = vec![MetricAdmission::Stored, MetricAdmission::StaleRun { current_run_id: 3 }];
        mark_repeats(&[&a, &c], &mut admissions, stored).unwrap();
        assert_eq!(admissions, vec![MetricAdmission::Repeated, MetricAdmission::StaleRun { current_run_id: 3 }]);
    }

    #[test]
    fn the_candidates_query_names_every_triple() {
        let sql = candidates_sql(2, |i| format!("${i}"));
        assert!(sql.contains("(trial_id = $4 AND metric_group = $5 AND steps_completed = $6)"), "{sql}");
        assert!(sql.contains("archived = FALSE"), "{sql}");
    }
}
