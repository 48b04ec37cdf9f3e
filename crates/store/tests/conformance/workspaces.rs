//! Workspaces and projects: create with unique names, per-user pins, filters and pages, patch
//! (and clearing), archive, the built-in pair refusing changes, deletion (refused while an
//! experiment is unfinished, then whole), project keys, and experiments moved between projects.

use resolute_store::{
    AgentUserGroup, DEFAULT_PROJECT_ID, DEFAULT_WORKSPACE_ID, Deletion, OrderDirection, ProjectFilter, ProjectPatch, ProjectSort, Store,
    StoreError, WORKSPACE_STATE_DELETE_FAILED, WorkspaceFilter, WorkspacePatch, WorkspaceSort, db_now,
};
use serde_json::json;

use crate::fixtures::{new_experiment, new_project, new_workspace, user_id};

pub async fn create_patch_and_conflicts(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let mut new = new_workspace("team", owner);
    new.checkpoint_storage_config = Some(json!({"type": "shared_fs", "host_path": "/ckpt"}));
    new.agent_user_group = Some(AgentUserGroup { uid: 1001, gid: 1002, user: "u".into(), group: "g".into() });
    let w = store.create_workspace(new).await.unwrap();
    assert_eq!((w.name.as_str(), w.user_id, w.username.as_str(), w.num_projects, w.pinned), ("team", Some(owner), "owner", 0, false));
    assert_eq!(w.checkpoint_storage_config, Some(json!({"type": "shared_fs", "host_path": "/ckpt"})));
    assert_eq!(w.agent_user_group.as_ref().map(|g| g.uid), Some(1001));
    assert_eq!(store.workspace_by_id(w.id, owner).await.unwrap(), w);

    let err = store.create_workspace(new_workspace("team", owner)).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { entity: "workspace", key } if key == "team"), "{err:?}");
    let err = store.create_workspace(new_workspace("ghost", 4242)).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "user", .. }), "{err:?}");

    // Only the given fields change; Some(None) clears.
    let patch = WorkspacePatch { name: Some("team2".into()), checkpoint_storage_config: Some(None), ..Default::default() };
    store.patch_workspace(w.id, &patch).await.unwrap();
    let patched = store.workspace_by_id(w.id, owner).await.unwrap();
    assert_eq!((patched.name.as_str(), patched.checkpoint_storage_config.as_ref()), ("team2", None));
    assert_eq!(patched.agent_user_group, w.agent_user_group, "untouched");
    store.patch_workspace(w.id, &WorkspacePatch { agent_user_group: Some(None), ..Default::default() }).await.unwrap();
    assert_eq!(store.workspace_by_id(w.id, owner).await.unwrap().agent_user_group, None);

    let other = store.create_workspace(new_workspace("other", owner)).await.unwrap();
    let taken = WorkspacePatch { name: Some("team2".into()), ..Default::default() };
    assert!(matches!(store.patch_workspace(other.id, &taken).await, Err(StoreError::Conflict { .. })));
    assert_eq!(store.workspace_by_id(other.id, owner).await.unwrap().name, "other", "a refused rename writes nothing");

    // The built-in workspace and project refuse every change.
    let rename = WorkspacePatch { name: Some("x".into()), ..Default::default() };
    assert!(matches!(store.patch_workspace(DEFAULT_WORKSPACE_ID, &rename).await, Err(StoreError::Precondition { .. })));
    assert!(matches!(store.set_workspace_archived(DEFAULT_WORKSPACE_ID, true).await, Err(StoreError::Precondition { .. })));
    assert!(matches!(store.delete_workspace(DEFAULT_WORKSPACE_ID).await, Err(StoreError::Precondition { .. })));
    assert!(matches!(store.delete_project(DEFAULT_PROJECT_ID).await, Err(StoreError::Precondition { .. })));
    assert!(matches!(store.workspace_by_id(4242, owner).await, Err(StoreError::NotFound { entity: "workspace", .. })));
}

pub async fn list_filters_pins_and_pages(store: &dyn Store) {
    let alice = user_id(store, "alice").await;
    let bob = user_id(store, "bob").await;
    let a = store.create_workspace(new_workspace("Alpha", alice)).await.unwrap();
    let b = store.create_workspace(new_workspace("beta", bob)).await.unwrap();
    let c = store.create_workspace(new_workspace("Gamma", bob)).await.unwrap();
    store.set_workspace_archived(c.id, true).await.unwrap();
    store.set_workspace_pinned(a.id, alice, Some(db_now())).await.unwrap();
    store.set_workspace_pinned(a.id, alice, Some(db_now())).await.unwrap();

    let ids = |(rows, _): (Vec<resolute_store::WorkspaceRecord>, i64)| rows.into_iter().map(|w| w.id).collect::<Vec<_>>();
    let base = |viewer| WorkspaceFilter { viewer_id: viewer, ..Default::default() };
    assert_eq!(ids(store.workspace_page(&base(alice)).await.unwrap()), [DEFAULT_WORKSPACE_ID, a.id, b.id, c.id]);
    let pinned = WorkspaceFilter { pinned: Some(true), ..base(alice) };
    assert_eq!(ids(store.workspace_page(&pinned).await.unwrap()), [a.id]);
    let pinned_for_bob = WorkspaceFilter { pinned: Some(true), ..base(bob) };
    assert_eq!(ids(store.workspace_page(&pinned_for_bob).await.unwrap()), Vec::<i32>::new(), "pins are per user");
    assert!(store.workspace_by_id(a.id, alice).await.unwrap().pinned);
    assert!(!store.workspace_by_id(a.id, bob).await.unwrap().pinned);
    let archived = WorkspaceFilter { archived: Some(true), ..base(alice) };
    assert_eq!(ids(store.workspace_page(&archived).await.unwrap()), [c.id]);
    let by_name = WorkspaceFilter { name: Some("ALPHA".into()), ..base(alice) };
    assert_eq!(ids(store.workspace_page(&by_name).await.unwrap()), [a.id]);
    let exact = WorkspaceFilter { name_case_sensitive: Some("ALPHA".into()), ..base(alice) };
    assert_eq!(ids(store.workspace_page(&exact).await.unwrap()), Vec::<i32>::new());
    let by_owner = WorkspaceFilter { usernames: vec!["bob".into()], ..base(alice) };
    assert_eq!(ids(store.workspace_page(&by_owner).await.unwrap()), [b.id, c.id]);
    let by_owner_id = WorkspaceFilter { user_ids: vec![alice], ..base(alice) };
    assert_eq!(ids(store.workspace_page(&by_owner_id).await.unwrap()), [a.id]);
    let sorted = WorkspaceFilter { sort: WorkspaceSort::Name, order: OrderDirection::Desc, limit: 2, offset: 1, ..base(alice) };
    let (rows, total) = store.workspace_page(&sorted).await.unwrap();
    assert_eq!((rows.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), total), (vec!["Gamma", "beta"], 4));
    let nul = WorkspaceFilter { name: Some("a\0".into()), ..base(alice) };
    assert_eq!(store.workspace_page(&nul).await.unwrap().1, 0);

    store.set_workspace_pinned(a.id, alice, None).await.unwrap();
    assert!(!store.workspace_by_id(a.id, alice).await.unwrap().pinned);
    assert!(matches!(store.set_workspace_pinned(4242, alice, None).await, Err(StoreError::NotFound { .. })));
}

pub async fn projects_keys_counts_and_patches(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let w = store.create_workspace(new_workspace("lab", owner)).await.unwrap();
    let p = store.create_project(new_project("my project", w.id, owner)).await.unwrap();
    assert_eq!((p.key.as_str(), p.workspace_name.as_str(), p.username.as_str(), p.archived), ("MYP", "lab", "owner", false));
    let q = store.create_project(new_project("My Plan", w.id, owner)).await.unwrap();
    assert_eq!(q.key, "MYP1", "keys stay unique");
    let err = store.create_project(new_project("my project", w.id, owner)).await.unwrap_err();
    assert!(matches!(&err, StoreError::Conflict { entity: "project", key } if key == "my project"), "{err:?}");
    let mut keyed = new_project("keyed", w.id, owner);
    keyed.key = Some("MYP".into());
    assert!(matches!(store.create_project(keyed).await, Err(StoreError::Conflict { .. })), "a taken key");
    let other = store.create_workspace(new_workspace("lab2", owner)).await.unwrap();
    store.create_project(new_project("my project", other.id, owner)).await.unwrap();
    assert!(matches!(store.create_project(new_project("x", 4242, owner)).await, Err(StoreError::NotFound { entity: "workspace", .. })));

    let mut e = new_experiment(owner, "e1");
    e.project_id = p.id;
    e.state = "STATE_ACTIVE".into();
    store.create_experiment(e.clone()).await.unwrap();
    e.state = "STATE_COMPLETED".into();
    store.create_experiment(e).await.unwrap();
    let s = store.project_summary(p.id).await.unwrap();
    assert_eq!((s.num_experiments, s.num_active_experiments), (2, 1));
    assert!(s.last_experiment_started_at.is_some());
    assert_eq!(store.workspace_by_id(w.id, owner).await.unwrap().num_experiments, 2);

    let patch = ProjectPatch {
        name: Some("renamed".into()),
        description: Some("d".into()),
        notes: Some(json!([{"name": "n", "contents": "c"}])),
        ..Default::default()
    };
    let patched = store.patch_project(p.id, &patch).await.unwrap();
    assert_eq!((patched.name.as_str(), patched.description.as_str(), patched.key.as_str()), ("renamed", "d", "MYP"));
    assert_eq!(patched.notes, json!([{"name": "n", "contents": "c"}]));
    let clash = ProjectPatch { name: Some("My Plan".into()), ..Default::default() };
    assert!(matches!(store.patch_project(p.id, &clash).await, Err(StoreError::Conflict { .. })));

    store.set_project_archived(q.id, true).await.unwrap();
    store.set_workspace_archived(w.id, true).await.unwrap();
    let q_now = store.project_by_id(q.id).await.unwrap();
    assert!(q_now.archived && q_now.workspace_archived);

    let page = |archived, sort, order| ProjectFilter { workspace_id: w.id, archived, sort, order, ..Default::default() };
    let names =
        |(rows, total): (Vec<resolute_store::ProjectSummary>, i64)| (rows.into_iter().map(|s| s.project.name).collect::<Vec<_>>(), total);
    assert_eq!(names(store.project_page(&page(None, ProjectSort::Id, OrderDirection::Asc)).await.unwrap()).0, ["renamed", "My Plan"]);
    assert_eq!(
        names(store.project_page(&page(Some(false), ProjectSort::Id, OrderDirection::Asc)).await.unwrap()),
        (vec!["renamed".into()], 1)
    );
    assert_eq!(names(store.project_page(&page(None, ProjectSort::Name, OrderDirection::Asc)).await.unwrap()).0, ["My Plan", "renamed"]);
    let recent = page(None, ProjectSort::LastExperimentStartTime, OrderDirection::Desc);
    assert_eq!(names(store.project_page(&recent).await.unwrap()).0, ["renamed", "My Plan"], "never-started last");
    let named = ProjectFilter { workspace_id: w.id, name: Some("My Plan".into()), ..Default::default() };
    assert_eq!(names(store.project_page(&named).await.unwrap()).1, 1);
}

pub async fn deletion_is_refused_while_experiments_run(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let w = store.create_workspace(new_workspace("doomed", owner)).await.unwrap();
    let p = store.create_project(new_project("p", w.id, owner)).await.unwrap();
    let mut e = new_experiment(owner, "running");
    e.project_id = p.id;
    let running = store.create_experiment(e).await.unwrap();

    let refused = store.delete_project(p.id).await.unwrap();
    assert!(matches!(&refused, Deletion::Refused { reason } if reason.contains(&running.id.to_string())), "{refused:?}");
    let kept = store.project_by_id(p.id).await.unwrap();
    assert_eq!(kept.state, WORKSPACE_STATE_DELETE_FAILED);
    assert!(kept.error_message.contains("not in a terminal state"), "{}", kept.error_message);
    assert!(matches!(store.delete_workspace(w.id).await.unwrap(), Deletion::Refused { .. }));
    assert_eq!(store.workspace_by_id(w.id, owner).await.unwrap().state, WORKSPACE_STATE_DELETE_FAILED);
    assert!(store.experiment_by_id(running.id).await.is_ok(), "nothing deleted");

    // Moving it out (to the default project) and back.
    store.move_experiment(running.id, DEFAULT_PROJECT_ID).await.unwrap();
    assert_eq!(store.experiment_by_id(running.id).await.unwrap().project_id, DEFAULT_PROJECT_ID);
    assert!(matches!(store.move_experiment(running.id, 4242).await, Err(StoreError::NotFound { entity: "project", .. })));
    assert!(matches!(store.move_experiment(4242, p.id).await, Err(StoreError::NotFound { entity: "experiment", .. })));
    store.move_experiment(running.id, p.id).await.unwrap();

    store.update_experiment_state(running.id, "STATE_CANCELED", Some(db_now())).await.unwrap();
    assert_eq!(store.delete_workspace(w.id).await.unwrap(), Deletion::Deleted);
    assert!(matches!(store.workspace_by_id(w.id, owner).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.project_by_id(p.id).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.experiment_by_id(running.id).await, Err(StoreError::NotFound { .. })));

    let w2 = store.create_workspace(new_workspace("doomed2", owner)).await.unwrap();
    let p2 = store.create_project(new_project("p2", w2.id, owner)).await.unwrap();
    assert_eq!(store.delete_project(p2.id).await.unwrap(), Deletion::Deleted);
    assert_eq!(store.workspace_by_id(w2.id, owner).await.unwrap().num_projects, 0);
}
