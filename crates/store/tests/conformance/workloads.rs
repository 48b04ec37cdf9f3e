//! A trial's workloads are ordered, filtered and paged in the database: a page reads (decodes)
//! only its own rows whatever the trial's history, with the same order, totals and filters on
//! both backends.

use resolute_store::{MetricPageQuery, Store, TRAINING_GROUP, VALIDATION_GROUP, WorkloadFilter, WorkloadPage, WorkloadRecord};
use serde_json::json;

use crate::fixtures::{checkpoint, experiment, report, trial};

/// Training reports at steps 1..=N; validations every 100 steps; a custom group every 500.
const N: i64 = 5000;

/// `(kind, steps)` of each workload: `t`raining, `v`alidation, `c`heckpoint.
fn shape(page: &WorkloadPage) -> Vec<(char, i64)> {
    page.items
        .iter()
        .map(|w| match w {
            WorkloadRecord::Metric(m) if m.group == VALIDATION_GROUP => ('v', m.steps_completed),
            WorkloadRecord::Metric(m) => ('t', m.steps_completed),
            WorkloadRecord::Checkpoint(c) => ('c', c.steps_completed),
        })
        .collect()
}

fn all(limit: i64) -> WorkloadFilter {
    WorkloadFilter {
        groups: vec![TRAINING_GROUP.to_owned(), VALIDATION_GROUP.to_owned()],
        include_checkpoints: true,
        sort_group: VALIDATION_GROUP.to_owned(),
        limit: Some(limit),
        ..WorkloadFilter::default()
    }
}

pub async fn workloads_are_paged_in_the_database(store: &dyn Store) {
    let e = experiment(store, "workloads").await;
    let t = trial(store, e.id, 1).await;
    let mut reports = Vec::new();
    for step in 1..=N {
        reports.push(report(t.id, 1, TRAINING_GROUP, step, json!({"loss": 1.0 / step as f64})));
        if step % 100 == 0 {
            // Validation loss is best (lowest) at step 2500.
            reports.push(report(t.id, 1, VALIDATION_GROUP, step, json!({"loss": ((step - 2500) as f64).abs(), "note": "x"})));
        }
        if step % 500 == 0 {
            reports.push(report(t.id, 1, "inference", step, json!({"x": 1})));
        }
    }
    for batch in reports.chunks(1000) {
        store.insert_metrics(batch).await.unwrap();
    }
    // A restarted run recomputes the last 10 training steps: those rows are archived.
    assert_eq!(store.archive_metrics_after(t.id, 2, N - 10, Some(TRAINING_GROUP)).await.unwrap(), 10);
    for step in [1000, 2000, 3000, 4000, 5000] {
        store.report_checkpoint(checkpoint(&t, &format!("ckpt-{step}"), step, None)).await.unwrap();
    }
    store.set_checkpoints_state(&["ckpt-2000".to_owned()], "STATE_DELETED").await.unwrap();
    let live_training = N - 10;

    // The first page: ten rows read whole, out of the whole history.
    let before = store.metric_rows_decoded();
    let page = store.trial_workloads(t.id, &all(10)).await.unwrap();
    let decoded = store.metric_rows_decoded() - before;
    assert_eq!(page.total, live_training + N / 100 + 5, "live training + validations + checkpoints; archived and other groups left out");
    assert_eq!(shape(&page), (1..=10).map(|s| ('t', s)).collect::<Vec<_>>());
    assert_eq!(decoded, 10, "only the page's metric rows are read whole");

    // A page across a step with all three kinds: training, validation, then the checkpoint.
    let page = store.trial_workloads(t.id, &WorkloadFilter { offset: 1007, ..all(4) }).await.unwrap();
    assert_eq!(shape(&page), [('t', 999), ('t', 1000), ('v', 1000), ('c', 1000)]);

    // Descending by batches: the last step first (its archived training row is gone), ties in kind order.
    let page = store.trial_workloads(t.id, &WorkloadFilter { descending: true, ..all(4) }).await.unwrap();
    assert_eq!(shape(&page), [('v', 5000), ('c', 5000), ('t', 4990), ('t', 4989)]);

    // A deep page costs its own rows too.
    let before = store.metric_rows_decoded();
    let page = store.trial_workloads(t.id, &WorkloadFilter { offset: 4000, ..all(3) }).await.unwrap();
    assert_eq!(page.items.len(), 3);
    let metrics = page.items.iter().filter(|w| matches!(w, WorkloadRecord::Metric(_))).count() as u64;
    assert_eq!(store.metric_rows_decoded() - before, metrics);

    // Validations only; checkpoints or validations without the deleted checkpoint.
    let validations = WorkloadFilter { groups: vec![VALIDATION_GROUP.to_owned()], include_checkpoints: false, ..all(2) };
    let page = store.trial_workloads(t.id, &validations).await.unwrap();
    assert_eq!((page.total, shape(&page)), (N / 100, vec![('v', 100), ('v', 200)]));
    let either = WorkloadFilter {
        include_checkpoints: true,
        skip_checkpoint_state: Some("STATE_DELETED".to_owned()),
        offset: 19,
        limit: Some(3),
        ..validations.clone()
    };
    let page = store.trial_workloads(t.id, &either).await.unwrap();
    assert_eq!((page.total, shape(&page)), (N / 100 + 4, vec![('v', 1900), ('v', 2000), ('v', 2100)]), "ckpt-2000 is deleted");

    // By a validation metric: best first, then the rows without it (training, checkpoints) by batches.
    let by_loss = WorkloadFilter { sort_metric: Some("loss".to_owned()), ..all(3) };
    let page = store.trial_workloads(t.id, &by_loss).await.unwrap();
    assert_eq!(shape(&page), [('v', 2500), ('v', 2400), ('v', 2600)]);
    let page = store.trial_workloads(t.id, &WorkloadFilter { offset: N / 100, ..by_loss.clone() }).await.unwrap();
    assert_eq!(shape(&page), [('t', 1), ('t', 2), ('t', 3)], "workloads without the metric go last");
    let page = store.trial_workloads(t.id, &WorkloadFilter { descending: true, ..by_loss.clone() }).await.unwrap();
    assert_eq!(shape(&page), [('v', 5000), ('v', 100), ('v', 4900)], "equal values go by batches");
    // A metric that is not a number sorts like a missing one, on both backends.
    let by_note = WorkloadFilter { sort_metric: Some("note".to_owned()), ..all(1) };
    assert_eq!(shape(&store.trial_workloads(t.id, &by_note).await.unwrap()), [('t', 1)]);

    // Nothing asked for, nothing returned; an unknown trial has no workloads.
    let none = WorkloadFilter { groups: Vec::new(), include_checkpoints: false, ..all(10) };
    assert_eq!(store.trial_workloads(t.id, &none).await.unwrap(), WorkloadPage::default());
    assert_eq!(store.trial_workloads(t.id + 1000, &all(10)).await.unwrap(), WorkloadPage::default());
}

pub async fn metric_pages_follow_a_keyset(store: &dyn Store) {
    let e = experiment(store, "metric-pages").await;
    let t = trial(store, e.id, 1).await;
    let mut reports: Vec<_> = (1..=250).map(|s| report(t.id, 1, TRAINING_GROUP, s, json!({"loss": s}))).collect();
    reports.push(report(t.id, 1, VALIDATION_GROUP, 100, json!({"loss": 0.5})));
    reports.push(report(t.id, 1, VALIDATION_GROUP, 100, json!({"loss": 0.25})));
    store.insert_metrics(&reports).await.unwrap();

    let mut query = MetricPageQuery { trial_id: t.id, group: Some(TRAINING_GROUP.to_owned()), limit: 100, ..Default::default() };
    let mut seen = Vec::new();
    loop {
        let before = store.metric_rows_decoded();
        let page = store.metrics_page(&query).await.unwrap();
        assert_eq!(store.metric_rows_decoded() - before, page.len() as u64, "a page reads its own rows");
        let Some(last) = page.last() else { break };
        query.after = Some((last.steps_completed, last.id));
        seen.extend(page.iter().map(|m| m.steps_completed));
    }
    assert_eq!(seen, (1..=250).collect::<Vec<_>>(), "every report once, in step order");

    // At one step, in report order (the last is the latest).
    let at =
        MetricPageQuery { trial_id: t.id, group: Some(VALIDATION_GROUP.to_owned()), steps_completed: Some(100), limit: 10, after: None };
    let found = store.metrics_page(&at).await.unwrap();
    assert_eq!(found.iter().map(|m| m.avg_metrics["loss"].clone()).collect::<Vec<_>>(), [json!(0.5), json!(0.25)]);
    let every_group = MetricPageQuery { group: None, ..at.clone() };
    assert_eq!(store.metrics_page(&every_group).await.unwrap().len(), 3);
    assert!(store.metrics_page(&MetricPageQuery { limit: 0, ..at }).await.unwrap().is_empty());
}
