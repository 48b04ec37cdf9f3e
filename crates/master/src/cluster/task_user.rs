//! Which Unix account a task's processes run as, decided when the loop launches an allocation:
//! the owner's linked agent user group (`det user link-with-agent-user`), else the master's
//! `security.default_task_user` (from [`LoopHooks::default_task_user`](super::LoopHooks)). The
//! agent enforces it (`StartTask.run_as`).

use resolute_api::agent_protocol::AgentUnixUser;
use resolute_store::AgentUserGroup;

use super::allocations::AllocationOwner;
use super::orchestrator::{LoopResult, Orchestrator};

/// The owner's link when there is a usable one, else the default.
pub fn resolve_task_user(link: Option<AgentUserGroup>, default: AgentUnixUser) -> AgentUnixUser {
    let usable = link.and_then(|g| {
        let (uid, gid) = (u32::try_from(g.uid).ok()?, u32::try_from(g.gid).ok()?);
        Some(AgentUnixUser { user: g.user, uid, group: g.group, gid })
    });
    usable.unwrap_or(default)
}

impl Orchestrator {
    /// The account the processes of `owner`'s allocation run as, read from the owner's user row
    /// now (a link made after a task was queued applies to its next start).
    pub(super) async fn task_unix_user(&self, owner: &AllocationOwner) -> LoopResult<AgentUnixUser> {
        let owner_id = match owner {
            AllocationOwner::Trial(trial_id) => {
                self.trials.get(trial_id).and_then(|t| self.experiments.get(&t.experiment_id)).map(|e| e.owner_id)
            }
            AllocationOwner::Task(task_id) => self.commands.get(task_id).map(|c| c.owner_id),
        };
        let link = match owner_id {
            Some(id) => self.store.user_by_id(id).await?.agent_user_group(),
            None => None,
        };
        Ok(resolve_task_user(link, self.hooks.default_task_user()))
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
            resolve_task_user(Some(link), nobody()),
            AgentUnixUser { user: "alice".into(), uid: 20001, group: "team".into(), gid: 20002 }
        );
        assert_eq!(resolve_task_user(None, nobody()), nobody());
        // A row the API would have refused (negative id) never means root.
        let bad = AgentUserGroup { uid: -1, gid: 0, user: "x".into(), group: "x".into() };
        assert_eq!(resolve_task_user(Some(bad), nobody()), nobody());
    }
}
