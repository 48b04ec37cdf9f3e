//! The agent user groups read at a task's launch: its workspace's (a trial's through its
//! experiment's project) and its owner's link, as they are at the time of the read.

use resolute_store::{
    AgentUserGroup, NewCommandTask, Store, StoreError, TaskUserGroups, TaskWorkspaceOf, UserPatch, WorkspacePatch, db_now,
};
use serde_json::json;

use crate::fixtures::{new_experiment, new_project, new_workspace, user_id};

fn group(uid: i32, name: &str) -> AgentUserGroup {
    AgentUserGroup { uid, gid: uid + 1, user: name.to_owned(), group: format!("{name}-group") }
}

pub async fn workspace_and_owner_groups_as_they_are_now(store: &dyn Store) {
    let owner = user_id(store, "grouped-owner").await;
    let unlinked = user_id(store, "unlinked-owner").await;
    let mut new_ws = new_workspace("grouped", owner);
    new_ws.agent_user_group = Some(group(3001, "ws"));
    let workspace = store.create_workspace(new_ws).await.unwrap();
    let project = store.create_project(new_project("grouped", workspace.id, owner)).await.unwrap();
    let mut new = new_experiment(owner, "in-grouped");
    new.project_id = project.id;
    let in_workspace = store.create_experiment(new).await.unwrap();
    let uncategorized = store.create_experiment(new_experiment(owner, "uncategorized")).await.unwrap();

    // Nothing linked yet: the workspace's group only where it has one.
    let of = TaskWorkspaceOf::Experiment(in_workspace.id);
    assert_eq!(store.task_user_groups(of, Some(owner)).await.unwrap(), TaskUserGroups { workspace: Some(group(3001, "ws")), owner: None });
    let of_default = TaskWorkspaceOf::Experiment(uncategorized.id);
    assert_eq!(store.task_user_groups(of_default, Some(unlinked)).await.unwrap(), TaskUserGroups::default());

    // A link made later is read by the next launch, and only for that owner.
    store.update_user(owner, &UserPatch { agent_user_group: Some(group(2001, "owner")), ..Default::default() }).await.unwrap();
    let read = store.task_user_groups(of, Some(owner)).await.unwrap();
    assert_eq!(read, TaskUserGroups { workspace: Some(group(3001, "ws")), owner: Some(group(2001, "owner")) });
    assert_eq!(store.task_user_groups(of, Some(unlinked)).await.unwrap().owner, None);
    assert_eq!(store.task_user_groups(of, None).await.unwrap().owner, None);
    assert_eq!(store.task_user_groups(of, Some(424_242)).await.unwrap().owner, None, "an unknown owner has no link");

    // So is a workspace's edit.
    store.patch_workspace(workspace.id, &WorkspacePatch { agent_user_group: Some(None), ..Default::default() }).await.unwrap();
    assert_eq!(store.task_user_groups(of, Some(owner)).await.unwrap().workspace, None);
    store
        .patch_workspace(workspace.id, &WorkspacePatch { agent_user_group: Some(Some(group(3101, "ws2"))), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(store.task_user_groups(of, Some(owner)).await.unwrap().workspace, Some(group(3101, "ws2")));

    // A command task's own workspace.
    let command = NewCommandTask {
        task_id: "grouped-command".into(),
        task_type: "TASK_TYPE_COMMAND".into(),
        job_id: "job-grouped-command".into(),
        owner_id: unlinked,
        workspace_id: workspace.id,
        description: "Command (grouped)".into(),
        config: json!({"entrypoint": ["true"]}),
        context: Vec::new(),
        extra: json!({}),
        start_time: db_now(),
    };
    store.create_command_task(command).await.unwrap();
    let of_command = TaskWorkspaceOf::CommandTask("grouped-command");
    assert_eq!(
        store.task_user_groups(of_command, Some(owner)).await.unwrap(),
        TaskUserGroups { workspace: Some(group(3101, "ws2")), owner: Some(group(2001, "owner")) }
    );

    // Unknown tasks are not found, whatever their key holds.
    let err = store.task_user_groups(TaskWorkspaceOf::Experiment(987_654), Some(owner)).await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { entity: "experiment", .. }), "{err:?}");
    for key in ["no-such-task", "nul\0task"] {
        let err = store.task_user_groups(TaskWorkspaceOf::CommandTask(key), None).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { entity: "task", .. }), "{key:?}: {err:?}");
    }
}
