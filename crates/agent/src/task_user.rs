//! Which Unix account a task's processes run as, and what that account needs.
//!
//! The master names an account for every task (`StartTask.run_as`: its owner's linked agent
//! user, else the cluster's unprivileged default). An agent running as root switches to it: the
//! task's process drops every supplementary group, then sets its gid and uid before it execs
//! ([`drop_privileges`]), and the task's work dir, harness info (which holds its session token)
//! and model copy are handed to that account with mode 0700 ([`hand_over_tree`]), so no other
//! account can read them and the kernel keeps other uids out of `/proc/<pid>/environ`. An agent
//! that is not root cannot switch: the task runs as the agent's own account, and the task's log
//! says so ([`decide`]).

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Uid};
use resolute_api::agent_protocol::{AgentUnixUser, TaskDir};

/// The account a task is switched to (only on an agent running as root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAccount {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
}

impl TaskAccount {
    fn from_wire(user: &AgentUnixUser) -> TaskAccount {
        TaskAccount { uid: user.uid, gid: user.gid, user: user.user.clone(), group: user.group.clone() }
    }

    /// The environment that describes the account: `USER`, `LOGNAME` and `HOME` (the account's
    /// home directory when it has one on this host, else the task's work dir, which it owns).
    pub fn login_env(&self, work_dir: &Path) -> [(&'static str, String); 3] {
        let home = nix::unistd::User::from_uid(Uid::from_raw(self.uid))
            .ok()
            .flatten()
            .map(|u| u.dir)
            .filter(|dir| dir.is_dir() && dir != Path::new("/nonexistent"))
            .unwrap_or_else(|| work_dir.to_path_buf());
        [("USER", self.user.clone()), ("LOGNAME", self.user.clone()), ("HOME", home.to_string_lossy().into_owned())]
    }
}

/// What an agent whose effective uid is `agent_uid` does with a task the master wants run as
/// `requested`: the account to switch to (`None`: the agent's own) and a warning for the task's
/// log when the task cannot run as requested.
pub fn decide(agent_uid: u32, requested: Option<&AgentUnixUser>) -> (Option<TaskAccount>, Option<String>) {
    let Some(requested) = requested else { return (None, None) };
    if agent_uid == 0 {
        return (Some(TaskAccount::from_wire(requested)), None);
    }
    if requested.uid == agent_uid {
        return (None, None);
    }
    let agent_user = nix::unistd::User::from_uid(Uid::from_raw(agent_uid)).ok().flatten().map(|u| u.name).unwrap_or_default();
    let warning = format!(
        "warning: this task should run as {} (uid {}), but the agent runs as {agent_user} (uid {agent_uid}), not as root, and cannot \
         switch users: the task runs as uid {agent_uid}. Run the agent as root for tasks to run as their owners.",
        requested.user, requested.uid
    );
    (None, Some(warning))
}

/// Runs in the forked child just before `exec` (async-signal-safe: plain system calls, no
/// allocation): supplementary groups first (root may still set them), then the gid, then the
/// uid, after which none of them can be changed back.
pub fn drop_privileges(uid: u32, gid: u32) -> std::io::Result<()> {
    nix::unistd::setgroups(&[])?;
    nix::unistd::setgid(Gid::from_raw(gid))?;
    nix::unistd::setuid(Uid::from_raw(uid))?;
    Ok(())
}

#[derive(Debug, thiserror::Error)]
#[error("cannot hand {path} to uid {uid}: {source}")]
pub struct HandOverError {
    pub path: PathBuf,
    pub uid: u32,
    pub source: std::io::Error,
}

/// Makes `root` and everything below it `account`'s (links themselves, never their targets) and
/// `root` mode 0700: readable by that account only.
pub fn hand_over_tree(root: &Path, account: &TaskAccount) -> Result<(), HandOverError> {
    let fail = |path: &Path, source| HandOverError { path: path.to_path_buf(), uid: account.uid, source };
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        std::os::unix::fs::lchown(&path, Some(account.uid), Some(account.gid)).map_err(|e| fail(&path, e))?;
        let meta = std::fs::symlink_metadata(&path).map_err(|e| fail(&path, e))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).map_err(|e| fail(&path, e))? {
                pending.push(entry.map_err(|e| fail(&path, e))?.path());
            }
        }
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700)).map_err(|e| fail(root, e))
}

/// Creates the task's [`TaskDir`]s: a shared one (a checkpoint storage root) becomes
/// world-writable with the sticky bit, as `/tmp`, so every account can create its own entries
/// there and none can remove or rename another's; a task's own one is created and handed to
/// `account`. Missing parents are created by the agent with mode 0755.
pub fn prepare_task_dirs(dirs: &[TaskDir], account: &TaskAccount) -> Result<(), HandOverError> {
    for dir in dirs {
        let path = Path::new(&dir.path);
        let fail = |source| HandOverError { path: path.to_path_buf(), uid: account.uid, source };
        if !path.is_absolute() {
            return Err(fail(std::io::Error::other("the path is not absolute")));
        }
        match std::fs::DirBuilder::new().recursive(true).mode(0o755).create(path) {
            Ok(()) => {}
            Err(e) => return Err(fail(e)),
        }
        if dir.shared {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o1777)).map_err(fail)?;
        } else {
            std::os::unix::fs::lchown(path, Some(account.uid), Some(account.gid)).map_err(fail)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn alice() -> AgentUnixUser {
        AgentUnixUser { user: "alice".into(), uid: 20001, group: "alice".into(), gid: 20002 }
    }

    #[test]
    fn root_switches_others_run_as_themselves_and_say_so() {
        let (account, warning) = decide(0, Some(&alice()));
        assert_eq!(account, Some(TaskAccount { uid: 20001, gid: 20002, user: "alice".into(), group: "alice".into() }));
        assert_eq!(warning, None);

        let (account, warning) = decide(1000, Some(&alice()));
        assert_eq!(account, None);
        let warning = warning.unwrap();
        assert!(warning.contains("should run as alice (uid 20001)") && warning.contains("runs as uid 1000"), "{warning}");

        // Already the right account, or an older master that names none: nothing to do or say.
        assert_eq!(decide(20001, Some(&alice())), (None, None));
        assert_eq!(decide(0, None), (None, None));
    }

    #[test]
    fn login_env_falls_back_to_the_work_dir() {
        let account = TaskAccount { uid: 20001, gid: 20001, user: "u20001".into(), group: "g".into() };
        let env = account.login_env(Path::new("/w/t/a"));
        assert_eq!(env[0], ("USER", "u20001".to_string()));
        assert_eq!(env[1], ("LOGNAME", "u20001".to_string()));
        assert_eq!(env[2], ("HOME", "/w/t/a".to_string()));
    }

    /// Needs root (CI runs as root); elsewhere there is nothing to hand over to.
    fn is_root() -> bool {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to change owners");
            return false;
        }
        true
    }

    #[test]
    fn a_handed_over_tree_is_the_accounts_alone() {
        if !is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/token"), "secret").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("link")).unwrap();
        let account = TaskAccount { uid: 20001, gid: 20002, user: "a".into(), group: "a".into() };
        hand_over_tree(&root, &account).unwrap();
        for path in [root.clone(), root.join("sub"), root.join("sub/token"), root.join("link")] {
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (20001, 20002), "{}", path.display());
        }
        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o700);
        // The link's target is untouched.
        assert_ne!(std::fs::metadata("/etc/hostname").unwrap().uid(), 20001);
    }

    #[test]
    fn shared_dirs_are_sticky_and_own_dirs_are_the_accounts() {
        if !is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("storage");
        let own = dir.path().join("storage/c/tensorboard/experiment/1/trial/2");
        let account = TaskAccount { uid: 20001, gid: 20001, user: "a".into(), group: "a".into() };
        let dirs = [
            TaskDir { path: shared.to_string_lossy().into_owned(), shared: true },
            TaskDir { path: own.to_string_lossy().into_owned(), shared: false },
        ];
        prepare_task_dirs(&dirs, &account).unwrap();
        assert_eq!(std::fs::metadata(&shared).unwrap().mode() & 0o7777, 0o1777);
        assert_eq!(std::fs::metadata(&own).unwrap().uid(), 20001);
        // Its parents, shared by other trials, stay the agent's.
        assert_eq!(std::fs::metadata(own.parent().unwrap()).unwrap().uid(), 0);
        let relative = [TaskDir { path: "rel".into(), shared: true }];
        assert!(prepare_task_dirs(&relative, &account).unwrap_err().to_string().contains("not absolute"));
    }
}
