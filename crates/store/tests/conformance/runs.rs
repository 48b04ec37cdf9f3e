//! Runs: the filtered, sorted, paged list with each run's experiment, project and workspace
//! fields; a run's own archive flag; deleting runs (kept when a checkpoint is registered); and a
//! project's notes.

use resolute_store::{
    DEFAULT_WORKSPACE_ID, NewModel, NewModelVersion, NewProject, RunColumn, RunFilterExpr, RunFilterOp, RunFilterValue, RunQuery,
    RunSortKey, Store, StoreError, db_now,
};
use serde_json::json;

use crate::fixtures::{checkpoint, new_experiment, trial, user_id};

fn field(column: RunColumn, op: RunFilterOp, value: RunFilterValue) -> RunFilterExpr {
    RunFilterExpr::Field { column, op, value }
}

async fn ids(store: &dyn Store, q: &RunQuery) -> Vec<i32> {
    store.search_runs(q).await.unwrap().runs.iter().map(|r| r.trial.id).collect()
}

pub async fn filter_sort_and_page(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let other = user_id(store, "other").await;
    let project = store
        .create_project(NewProject {
            name: "runs".into(),
            description: String::new(),
            key: None,
            workspace_id: DEFAULT_WORKSPACE_ID,
            user_id: owner,
        })
        .await
        .unwrap();
    let mut search = new_experiment(owner, "alpha search");
    search.project_id = project.id;
    search.labels = vec!["keep".into()];
    search.config = json!({"searcher": {"name": "random", "metric": "val_loss"}, "resources": {"resource_pool": "gpu"}});
    let search = store.create_experiment(search).await.unwrap();
    let single = store.create_experiment(new_experiment(other, "beta")).await.unwrap();
    let (a, b) = (trial(store, search.id, 1).await, trial(store, search.id, 2).await);
    let c = trial(store, single.id, 1).await;
    store.update_trial_state(b.id, "STATE_COMPLETED", Some(db_now())).await.unwrap();
    store.report_checkpoint(checkpoint(&b, "run-ck-1", 100, None)).await.unwrap();

    let all = store.search_runs(&RunQuery::default()).await.unwrap();
    assert_eq!(all.total, 3);
    let rb = all.runs.iter().find(|r| r.trial.id == b.id).unwrap();
    assert_eq!((rb.experiment_name.as_str(), rb.project_id, rb.project_name.as_str()), ("alpha search", project.id, "runs"));
    assert_eq!((rb.workspace_id, rb.experiment_trials, rb.checkpoint_count, rb.owner_id), (DEFAULT_WORKSPACE_ID, 2, 1, owner));
    assert_eq!(rb.checkpoint_size, 1100 + 24, "the sum of the checkpoint's resources");
    assert_eq!(rb.experiment_labels, vec!["keep".to_owned()]);

    let in_project = RunQuery { project_id: Some(project.id), ..Default::default() };
    assert_eq!(ids(store, &in_project).await, vec![a.id, b.id]);

    let by_name = RunQuery {
        filter: Some(field(RunColumn::ExperimentName, RunFilterOp::Contains, RunFilterValue::Text("ALPHA".into()))),
        ..Default::default()
    };
    assert_eq!(ids(store, &by_name).await, vec![a.id, b.id], "contains ignores ASCII case on both backends");

    let or_group = RunQuery {
        filter: Some(RunFilterExpr::Group {
            any: true,
            children: vec![
                field(RunColumn::State, RunFilterOp::Eq, RunFilterValue::Text("STATE_COMPLETED".into())),
                field(RunColumn::User, RunFilterOp::Eq, RunFilterValue::Text("other".into())),
            ],
        }),
        ..Default::default()
    };
    assert_eq!(ids(store, &or_group).await, vec![b.id, c.id]);

    let json_fields = RunQuery {
        filter: Some(RunFilterExpr::Group {
            any: false,
            children: vec![
                field(RunColumn::SearcherType, RunFilterOp::Eq, RunFilterValue::Text("random".into())),
                field(RunColumn::ResourcePool, RunFilterOp::Eq, RunFilterValue::Text("gpu".into())),
                field(RunColumn::Id, RunFilterOp::Ge, RunFilterValue::Int(i64::from(b.id))),
            ],
        }),
        ..Default::default()
    };
    assert_eq!(ids(store, &json_fields).await, vec![b.id]);

    let tags =
        RunQuery { filter: Some(field(RunColumn::Tags, RunFilterOp::Contains, RunFilterValue::Text("keep".into()))), ..Default::default() };
    assert_eq!(ids(store, &tags).await, vec![a.id, b.id]);
    let multi =
        RunQuery { filter: Some(field(RunColumn::IsExpMultitrial, RunFilterOp::Eq, RunFilterValue::Bool(false))), ..Default::default() };
    assert_eq!(ids(store, &multi).await, vec![c.id]);
    let ended = RunQuery { filter: Some(field(RunColumn::EndTime, RunFilterOp::NotEmpty, RunFilterValue::None)), ..Default::default() };
    assert_eq!(ids(store, &ended).await, vec![b.id]);
    let checkpoints =
        RunQuery { filter: Some(field(RunColumn::CheckpointCount, RunFilterOp::Gt, RunFilterValue::Int(0))), ..Default::default() };
    assert_eq!(ids(store, &checkpoints).await, vec![b.id]);
    let states = RunQuery {
        filter: Some(field(RunColumn::State, RunFilterOp::NotIn, RunFilterValue::TextList(vec!["STATE_COMPLETED".into()]))),
        ..Default::default()
    };
    assert_eq!(ids(store, &states).await, vec![a.id, c.id]);

    let hp = |path: &[&str], op, value| RunQuery {
        filter: Some(RunFilterExpr::Hyperparameter { path: path.iter().map(|k| (*k).to_owned()).collect(), op, value }),
        ..Default::default()
    };
    assert_eq!(ids(store, &hp(&["lr"], RunFilterOp::Lt, RunFilterValue::Float(0.015))).await, vec![a.id, c.id]);
    assert_eq!(ids(store, &hp(&["layers"], RunFilterOp::Eq, RunFilterValue::Int(2))).await, vec![b.id]);
    assert_eq!(
        ids(store, &hp(&["layers"], RunFilterOp::Eq, RunFilterValue::Text("2".into()))).await,
        Vec::<i32>::new(),
        "a number is not text"
    );
    assert_eq!(ids(store, &hp(&["nope"], RunFilterOp::NotEmpty, RunFilterValue::None)).await, Vec::<i32>::new());
    assert_eq!(ids(store, &hp(&["nope"], RunFilterOp::IsEmpty, RunFilterValue::None)).await, vec![a.id, b.id, c.id]);

    let sorted = RunQuery {
        sort: vec![RunSortKey { column: RunColumn::ExperimentName, descending: true }],
        offset: 1,
        limit: Some(1),
        ..Default::default()
    };
    let page = store.search_runs(&sorted).await.unwrap();
    assert_eq!(page.total, 3, "the total counts every match, not the page");
    assert_eq!(page.runs.iter().map(|r| r.trial.id).collect::<Vec<_>>(), vec![a.id], "beta first, then alpha's runs by id");

    let chosen = RunQuery { ids: Some(vec![c.id, a.id, 999_999]), ..Default::default() };
    assert_eq!(ids(store, &chosen).await, vec![a.id, c.id]);
    assert_eq!(store.search_runs(&RunQuery { ids: Some(vec![]), ..Default::default() }).await.unwrap().total, 0);
}

pub async fn archive_and_delete(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let e = store.create_experiment(new_experiment(owner, "runs")).await.unwrap();
    let (a, b, c) = (trial(store, e.id, 1).await, trial(store, e.id, 2).await, trial(store, e.id, 3).await);
    assert_eq!(store.set_runs_archived(&[b.id, 999_999], true).await.unwrap(), vec![b.id]);
    let visible = RunQuery { hide_archived: true, ..Default::default() };
    assert_eq!(ids(store, &visible).await, vec![a.id, c.id]);
    assert!(store.search_runs(&RunQuery { ids: Some(vec![b.id]), ..Default::default() }).await.unwrap().runs[0].archived);
    store.set_experiment_archived(e.id, true).await.unwrap();
    assert_eq!(ids(store, &visible).await, Vec::<i32>::new(), "an archived experiment hides its runs");
    store.set_experiment_archived(e.id, false).await.unwrap();
    assert_eq!(store.set_runs_archived(&[b.id], false).await.unwrap(), vec![b.id]);

    store.report_checkpoint(checkpoint(&a, "kept-ck", 10, None)).await.unwrap();
    store.report_checkpoint(checkpoint(&c, "gone-ck", 10, None)).await.unwrap();
    let model = store
        .create_model(NewModel {
            name: "runs-model".into(),
            description: String::new(),
            notes: String::new(),
            metadata: json!({}),
            labels: Vec::new(),
            user_id: owner,
            workspace_id: DEFAULT_WORKSPACE_ID,
        })
        .await
        .unwrap();
    store
        .create_model_version(NewModelVersion {
            model_id: model.id,
            checkpoint_uuid: "kept-ck".into(),
            name: String::new(),
            comment: String::new(),
            notes: String::new(),
            metadata: json!({}),
            labels: Vec::new(),
            user_id: owner,
        })
        .await
        .unwrap();
    let outcome = store.delete_runs(&[a.id, c.id]).await.unwrap();
    assert_eq!((outcome.deleted, outcome.registered), (vec![c.id], vec![a.id]));
    assert!(matches!(store.trial_by_id(c.id).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.checkpoint_by_uuid("gone-ck").await, Err(StoreError::NotFound { .. })), "its checkpoints went with it");
    assert_eq!(store.trial_by_id(a.id).await.unwrap().id, a.id);
    assert_eq!(store.experiment_trial_ids(e.id).await.unwrap(), vec![a.id, b.id]);
    assert_eq!(store.delete_runs(&[]).await.unwrap().deleted, Vec::<i32>::new());
}

pub async fn project_notes_replace_the_list(store: &dyn Store) {
    let notes = json!([{"name": "first", "contents": "hello"}, {"name": "second", "contents": "world"}]);
    store.set_project_notes(1, &notes).await.unwrap();
    assert_eq!(store.project_by_id(1).await.unwrap().notes, notes, "the built-in project keeps notes too");
    store.set_project_notes(1, &json!([])).await.unwrap();
    assert_eq!(store.project_by_id(1).await.unwrap().notes, json!([]));
    assert!(matches!(store.set_project_notes(4242, &notes).await, Err(StoreError::NotFound { entity: "project", .. })));
}
