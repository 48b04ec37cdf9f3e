//! Which Unix account a task's processes run as, decided when the loop launches an allocation:
//! the agent user group of the task's workspace (`det workspace create/edit --agent-uid …`),
//! else the owner's linked one (`det user link-with-agent-user`), else the master's
//! `security.default_task_user` (from [`LoopHooks::default_task_user`](super::LoopHooks)). The
//! agent enforces it (`StartTask.run_as`).

use resolute_api::agent_protocol::AgentUnixUser;
use resolute_store::{AgentUserGroup, TaskUserGroups, TaskWorkspaceOf};

use super::allocations::AllocationOwner;
use super::orchestrator::{LoopResult, Orchestrator};

/// The first usable group of the workspace's and the owner's, else the default.
pub fn resolve_task_user(workspace: Option<AgentUserGroup>, link: Option<AgentUserGroup>, default: AgentUnixUser) -> AgentUnixUser {
    let usable = |g: AgentUserGroup| {
        let (uid, gid) = (u32::try_from(g.uid).ok()?, u32::try_from(g.gid).ok()?);
        Some(AgentUnixUser { user: g.user, uid, group: g.group, gid })
    };
    workspace.and_then(usable).or_else(|| link.and_then(usable)).unwrap_or(default)
}

impl Orchestrator {
    /// The account the processes of `owner`'s allocation run as, read from the workspace's and
    /// the owner's rows now (a change made after a task was queued applies to its next start),
    /// in one narrow read: the loop awaits it on every launch.
    pub(super) async fn task_unix_user(&self, owner: &AllocationOwner) -> LoopResult<AgentUnixUser> {
        let groups = match owner {
            AllocationOwner::Trial(trial_id) => match self.trials.get(trial_id).map(|t| t.experiment_id) {
                Some(experiment_id) => {
                    let owner_id = self.experiments.get(&experiment_id).map(|e| e.owner_id);
                    self.store.task_user_groups(TaskWorkspaceOf::Experiment(experiment_id), owner_id).await?
                }
                None => TaskUserGroups::default(),
            },
            AllocationOwner::Task(task_id) => match self.commands.get(task_id) {
                Some(c) => self.store.task_user_groups(TaskWorkspaceOf::CommandTask(task_id), Some(c.owner_id)).await?,
                None => TaskUserGroups::default(),
            },
        };
        Ok(resolve_task_user(groups.workspace, groups.owner, self.hooks.default_task_user()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nobody() -> AgentUnixUser {
        AgentUnixUser { user: "nobody".into(), uid: 65534, group: "nogroup".into(), gid: 65534 }
    }

    #[test]
    fn a_linked_owner_runs_as_its_link_and_others_as_the_default() {
        let link = AgentUserGroup { uid: 20001, gid: 20002, user: "alice".into(), group: "team".into() };
        assert_eq!(
            resolve_task_user(None, Some(link.clone()), nobody()),
            AgentUnixUser { user: "alice".into(), uid: 20001, group: "team".into(), gid: 20002 }
        );
        assert_eq!(resolve_task_user(None, None, nobody()), nobody());
        // A row the API would have refused (negative id) never means root.
        let bad = AgentUserGroup { uid: -1, gid: 0, user: "x".into(), group: "x".into() };
        assert_eq!(resolve_task_user(None, Some(bad.clone()), nobody()), nobody());
        // The workspace's group comes first; an unusable one falls back to the owner's.
        let ws = AgentUserGroup { uid: 30001, gid: 30002, user: "ws".into(), group: "wsg".into() };
        assert_eq!(resolve_task_user(Some(ws), Some(link.clone()), nobody()).uid, 30001);
        assert_eq!(resolve_task_user(Some(bad), Some(link), nobody()).uid, 20001);
    }
}
