//! The model registry: models (unique names, filters, sorts, patches, delete with versions),
//! versions numbered per model, and registered checkpoints kept from GC and experiment deletion.

use resolute_store::{
    CheckpointGcPolicy, DEFAULT_WORKSPACE_ID, ModelFilter, ModelPatch, ModelSort, ModelVersionFilter, ModelVersionPatch, ModelVersionSort,
    NewModel, NewModelVersion, OrderDirection, Store, StoreError,
};
use serde_json::json;

use crate::fixtures::{checkpoint, experiment, trial, user_id};

fn new_model(name: &str, user_id: i32) -> NewModel {
    NewModel {
        name: name.to_owned(),
        description: format!("about {name}"),
        notes: String::new(),
        metadata: json!({}),
        labels: Vec::new(),
        user_id,
        workspace_id: DEFAULT_WORKSPACE_ID,
    }
}

fn new_version(model_id: i32, uuid: &str, user_id: i32) -> NewModelVersion {
    NewModelVersion {
        model_id,
        checkpoint_uuid: uuid.to_owned(),
        name: String::new(),
        comment: String::new(),
        notes: String::new(),
        metadata: json!({}),
        labels: Vec::new(),
        user_id,
    }
}

async fn names(store: &dyn Store, filter: ModelFilter) -> (Vec<String>, i64) {
    let (models, total) = store.list_models(&filter).await.unwrap();
    (models.into_iter().map(|m| m.name).collect(), total)
}

pub async fn create_fetch_and_conflict(store: &dyn Store) {
    let owner = user_id(store, "modeler").await;
    let mut new = new_model("mnist", owner);
    new.metadata = json!({"framework": "torch"});
    new.labels = vec!["prod".into(), "cv".into()];
    let created = store.create_model(new.clone()).await.unwrap();
    assert_eq!(created.name, "mnist");
    assert_eq!(created.description, "about mnist");
    assert_eq!(created.metadata, json!({"framework": "torch"}));
    assert_eq!(created.labels, ["prod", "cv"]);
    assert_eq!((created.user_id, created.username.as_str()), (owner, "modeler"));
    assert_eq!((created.workspace_id, created.archived, created.num_versions), (DEFAULT_WORKSPACE_ID, false, 0));
    assert_eq!(created.creation_time, created.last_updated_time);
    assert_eq!(store.model_by_name("mnist").await.unwrap(), created);
    assert_eq!(store.model_by_id(created.id).await.unwrap(), created);

    let err = store.create_model(new).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { entity: "model", key } if key == "mnist"), "{err:?}");
    let err = store.model_by_name("missing").await.unwrap_err();
    assert_eq!(err.to_string(), "model not found: missing");
    assert!(matches!(store.model_by_id(9999).await, Err(StoreError::NotFound { entity: "model", .. })));
    let mut elsewhere = new_model("orphan", owner);
    elsewhere.workspace_id = 4242;
    let err = store.create_model(elsewhere).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "workspace", key } if key == "4242"), "{err:?}");
    let err = store.create_model(new_model("nul\0name", owner)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { field: "name", .. }), "{err:?}");
    assert!(matches!(store.model_by_name("nul\0name").await, Err(StoreError::NotFound { .. })));
}

pub async fn model_list_filters_sorts_and_pages(store: &dyn Store) {
    let alice = user_id(store, "alice").await;
    let bob = user_id(store, "bob").await;
    for (name, owner, labels) in [("b-net", alice, vec!["prod"]), ("a-net", bob, vec!["prod", "cv"]), ("C_big", alice, vec!["production"])]
    {
        let mut m = new_model(name, owner);
        m.labels = labels.into_iter().map(String::from).collect();
        store.create_model(m).await.unwrap();
    }
    let by = |sort, order| ModelFilter { sort, order, ..Default::default() };
    assert_eq!(names(store, by(ModelSort::Name, OrderDirection::Asc)).await, (vec!["C_big".into(), "a-net".into(), "b-net".into()], 3));
    assert_eq!(names(store, by(ModelSort::Id, OrderDirection::Desc)).await.0, ["C_big", "a-net", "b-net"]);
    assert_eq!(names(store, by(ModelSort::CreationTime, OrderDirection::Asc)).await.0, ["b-net", "a-net", "C_big"]);
    let page = ModelFilter { sort: ModelSort::Name, offset: 1, limit: Some(1), ..Default::default() };
    assert_eq!(names(store, page).await, (vec!["a-net".into()], 3));

    let labelled = |labels: &[&str]| ModelFilter {
        labels: labels.iter().map(|l| l.to_string()).collect(),
        sort: ModelSort::Name,
        ..Default::default()
    };
    assert_eq!(names(store, labelled(&["prod"])).await.0, ["a-net", "b-net"], "whole labels only");
    assert_eq!(names(store, labelled(&["prod", "cv"])).await.0, ["a-net"]);
    let named = ModelFilter { name_contains: Some("NET".into()), sort: ModelSort::Name, ..Default::default() };
    assert_eq!(names(store, named).await.0, ["a-net", "b-net"], "case-insensitive substring");
    let literal = ModelFilter { name_contains: Some("_".into()), ..Default::default() };
    assert_eq!(names(store, literal).await.0, ["C_big"], "LIKE wildcards match literally");
    let owned = ModelFilter { usernames: vec!["bob".into()], ..Default::default() };
    assert_eq!(names(store, owned).await.0, ["a-net"]);
    let owned = ModelFilter { user_ids: vec![alice], sort: ModelSort::Name, ..Default::default() };
    assert_eq!(names(store, owned).await.0, ["C_big", "b-net"]);
    let in_default = ModelFilter { workspace_names: vec!["Uncategorized".into()], ..Default::default() };
    assert_eq!(names(store, in_default).await.1, 3);
    let nowhere = ModelFilter { workspace_ids: vec![4242], ..Default::default() };
    assert_eq!(names(store, nowhere).await, (vec![], 0));

    let a = store.model_by_name("a-net").await.unwrap();
    store.update_model(a.id, &ModelPatch { archived: Some(true), ..Default::default() }).await.unwrap();
    let archived = ModelFilter { archived: Some(true), ..Default::default() };
    assert_eq!(names(store, archived).await.0, ["a-net"]);
    let live = ModelFilter { archived: Some(false), sort: ModelSort::Name, ..Default::default() };
    assert_eq!(names(store, live).await.0, ["C_big", "b-net"]);
    let nul = ModelFilter { name_contains: Some("\0".into()), ..Default::default() };
    assert_eq!(names(store, nul).await, (vec![], 0));
}

pub async fn patch_and_delete(store: &dyn Store) {
    let owner = user_id(store, "modeler").await;
    let created = store.create_model(new_model("resnet", owner)).await.unwrap();
    store.create_model(new_model("taken", owner)).await.unwrap();
    let patch = ModelPatch {
        description: Some("residual".into()),
        notes: Some("# Notes".into()),
        metadata: Some(json!({"a": 1})),
        labels: Some(vec!["x".into()]),
        ..Default::default()
    };
    let patched = store.update_model(created.id, &patch).await.unwrap();
    assert_eq!((patched.description.as_str(), patched.notes.as_str()), ("residual", "# Notes"));
    assert_eq!((patched.metadata, patched.labels), (json!({"a": 1}), vec!["x".to_owned()]));
    assert!(patched.last_updated_time >= created.last_updated_time);
    assert_eq!(patched.name, "resnet", "unchanged fields stay");

    let err = store.update_model(created.id, &ModelPatch { name: Some("taken".into()), ..Default::default() }).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { entity: "model", key } if key == "taken"), "{err:?}");
    let renamed = store.update_model(created.id, &ModelPatch { name: Some("resnet50".into()), ..Default::default() }).await.unwrap();
    assert_eq!(store.model_by_name("resnet50").await.unwrap(), renamed);
    let err = store.update_model(9999, &ModelPatch::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "model", .. }), "{err:?}");

    let e = experiment(store, "models-delete").await;
    let t = trial(store, e.id, 1).await;
    store.report_checkpoint(checkpoint(&t, "ck-1", 10, None)).await.unwrap();
    store.create_model_version(new_version(created.id, "ck-1", owner)).await.unwrap();
    store.delete_model(created.id).await.unwrap();
    assert!(matches!(store.model_by_id(created.id).await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.registered_checkpoints(&["ck-1".into()]).await.unwrap(), Vec::<String>::new(), "its versions went with it");
    assert!(matches!(store.delete_model(created.id).await, Err(StoreError::NotFound { entity: "model", .. })));
}

pub async fn versions_are_numbered_per_model(store: &dyn Store) {
    let owner = user_id(store, "modeler").await;
    let e = experiment(store, "models-versions").await;
    let t = trial(store, e.id, 1).await;
    for (uuid, steps) in [("ck-a", 10), ("ck-b", 20)] {
        store.report_checkpoint(checkpoint(&t, uuid, steps, None)).await.unwrap();
    }
    let m1 = store.create_model(new_model("one", owner)).await.unwrap();
    let m2 = store.create_model(new_model("two", owner)).await.unwrap();
    let mut first = new_version(m1.id, "ck-a", owner);
    first.metadata = json!({"k": "v"});
    first.labels = vec!["l1".into()];
    first.comment = "first".into();
    let v1 = store.create_model_version(first).await.unwrap();
    assert_eq!((v1.version, v1.checkpoint_uuid.as_str(), v1.username.as_str()), (1, "ck-a", "modeler"));
    assert_eq!((v1.metadata.clone(), v1.labels.clone(), v1.comment.as_str()), (json!({"k": "v"}), vec!["l1".to_owned()], "first"));
    let v2 = store.create_model_version(new_version(m1.id, "ck-b", owner)).await.unwrap();
    assert_eq!(v2.version, 2);
    assert_eq!(store.create_model_version(new_version(m2.id, "ck-a", owner)).await.unwrap().version, 1, "per model");
    assert_eq!(store.model_by_id(m1.id).await.unwrap().num_versions, 2);
    assert_eq!(store.model_version(m1.id, 1).await.unwrap(), v1);

    let newest = ModelVersionFilter { sort: ModelVersionSort::Version, order: OrderDirection::Desc, limit: Some(1), ..Default::default() };
    let (page, total) = store.list_model_versions(m1.id, &newest).await.unwrap();
    assert_eq!((page.iter().map(|v| v.version).collect::<Vec<_>>(), total), (vec![2], 2));
    let (all, _) = store.list_model_versions(m1.id, &ModelVersionFilter::default()).await.unwrap();
    assert_eq!(all.iter().map(|v| v.version).collect::<Vec<_>>(), [1, 2]);

    let patch = ModelVersionPatch { name: Some("best".into()), notes: Some("n".into()), labels: Some(vec![]), ..Default::default() };
    let patched = store.update_model_version(m1.id, 1, &patch).await.unwrap();
    assert_eq!((patched.name.as_str(), patched.notes.as_str(), patched.comment.as_str()), ("best", "n", "first"));
    assert!(patched.labels.is_empty());
    assert!(matches!(store.update_model_version(m1.id, 7, &patch).await, Err(StoreError::NotFound { entity: "model version", .. })));

    let err = store.create_model_version(new_version(m1.id, "no-such-checkpoint", owner)).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "checkpoint", key } if key == "no-such-checkpoint"), "{err:?}");

    store.delete_model_version(m1.id, 2).await.unwrap();
    assert!(matches!(store.model_version(m1.id, 2).await, Err(StoreError::NotFound { entity: "model version", .. })));
    assert!(matches!(store.delete_model_version(m1.id, 2).await, Err(StoreError::NotFound { .. })));
    assert_eq!(store.create_model_version(new_version(m1.id, "ck-b", owner)).await.unwrap().version, 2, "max + 1");
}

pub async fn registered_checkpoints_are_kept(store: &dyn Store) {
    let owner = user_id(store, "modeler").await;
    let e = experiment(store, "models-gc").await;
    let t = trial(store, e.id, 1).await;
    for steps in [100, 200, 300] {
        store.report_checkpoint(checkpoint(&t, &format!("gc-{steps}"), steps, None)).await.unwrap();
    }
    let keep_latest = CheckpointGcPolicy { save_experiment_best: 0, save_trial_best: 0, save_trial_latest: 1, smaller_is_better: true };
    assert_eq!(store.checkpoints_to_gc(e.id, &keep_latest).await.unwrap(), ["gc-100", "gc-200"]);
    let model = store.create_model(new_model("kept", owner)).await.unwrap();
    store.create_model_version(new_version(model.id, "gc-100", owner)).await.unwrap();
    assert_eq!(store.checkpoints_to_gc(e.id, &keep_latest).await.unwrap(), ["gc-200"], "a registered checkpoint is never collected");

    let asked: Vec<String> = ["gc-200", "gc-100", "gc-missing"].map(String::from).to_vec();
    assert_eq!(store.registered_checkpoints(&asked).await.unwrap(), ["gc-100"]);
    assert_eq!(store.registered_checkpoints(&[]).await.unwrap(), Vec::<String>::new());
    assert_eq!(store.experiment_registered_checkpoints(e.id).await.unwrap(), ["gc-100"]);
    assert_eq!(store.experiment_registered_checkpoints(9999).await.unwrap(), Vec::<String>::new());

    // The version holds its checkpoint row: deleting the experiment under it fails, and leaves
    // everything in place.
    assert!(store.delete_experiment(e.id).await.is_err());
    assert_eq!(store.checkpoint_by_uuid("gc-100").await.unwrap().uuid, "gc-100");
    store.delete_model_version(model.id, 1).await.unwrap();
    store.delete_experiment(e.id).await.unwrap();
}
