//! A workspace's background deletion begins only when nothing in it runs: refused (the reason
//! recorded as DELETE_FAILED) while an experiment is unfinished, else marked DELETING, after which
//! its projects and then the workspace are deleted step by step.

use resolute_store::{
    DEFAULT_WORKSPACE_ID, Deletion, NewProject, NewWorkspace, Store, StoreError, WORKSPACE_STATE_DELETE_FAILED, WORKSPACE_STATE_DELETING,
    db_now,
};

use crate::fixtures::{new_experiment, user_id};

pub async fn begins_only_when_nothing_runs(store: &dyn Store) {
    let owner = user_id(store, "owner").await;
    let w = store
        .create_workspace(NewWorkspace {
            name: "fading".into(),
            user_id: owner,
            checkpoint_storage_config: None,
            agent_user_group: None,
            default_compute_pool: String::new(),
            default_aux_pool: String::new(),
        })
        .await
        .unwrap();
    let mut projects = Vec::new();
    for name in ["one", "two"] {
        let p = NewProject { name: name.into(), description: String::new(), key: None, workspace_id: w.id, user_id: owner };
        projects.push(store.create_project(p).await.unwrap().id);
    }
    let mut e = new_experiment(owner, "in-fading");
    e.project_id = projects[0];
    let e = store.create_experiment(e).await.unwrap();

    let reason = store.begin_workspace_deletion(w.id).await.unwrap().expect("refused while the experiment runs");
    assert!(reason.contains(&e.id.to_string()), "{reason}");
    let row = store.workspace_by_id(w.id, owner).await.unwrap();
    assert_eq!((row.state.as_str(), row.error_message.as_str()), (WORKSPACE_STATE_DELETE_FAILED, reason.as_str()));

    store.update_experiment_state(e.id, "STATE_CANCELED", Some(db_now())).await.unwrap();
    assert_eq!(store.begin_workspace_deletion(w.id).await.unwrap(), None);
    let row = store.workspace_by_id(w.id, owner).await.unwrap();
    assert_eq!((row.state.as_str(), row.error_message.as_str(), row.num_projects), (WORKSPACE_STATE_DELETING, "", 2));
    assert_eq!(store.delete_project(projects[0]).await.unwrap(), Deletion::Deleted);
    assert_eq!(store.workspace_by_id(w.id, owner).await.unwrap().num_projects, 1, "what a poller sees shrink");
    assert_eq!(store.delete_workspace(w.id).await.unwrap(), Deletion::Deleted);
    assert!(matches!(store.workspace_by_id(w.id, owner).await, Err(StoreError::NotFound { .. })));
    assert!(matches!(store.experiment_by_id(e.id).await, Err(StoreError::NotFound { .. })));

    assert!(matches!(store.begin_workspace_deletion(DEFAULT_WORKSPACE_ID).await, Err(StoreError::Precondition { .. })));
    assert!(matches!(store.begin_workspace_deletion(4242).await, Err(StoreError::NotFound { entity: "workspace", .. })));
}
