//! Input no backend can hold as given (NUL characters) or that is easy to mangle (RTL, emoji,
//! combining marks, huge numbers): every text path answers the same on SQLite and PostgreSQL —
//! `InvalidInput` naming the field for writes, `NotFound` (or an empty page) for lookups.

use resolute_store::{ExperimentFilter, ExperimentPatch, NewTemplate, Store, StoreError, TemplateFilter, UserFilter, UserPatch};

use crate::fixtures::{checkpoint, experiment, new_experiment, trial, user_id};
use crate::users::new_user;

fn invalid(result: Result<impl std::fmt::Debug, StoreError>, field: &str) {
    match result {
        Err(StoreError::InvalidInput { field: f, reason }) => {
            assert_eq!(f, field);
            assert!(reason.contains("NUL"), "{reason}");
        }
        other => panic!("expected InvalidInput for {field}, got {other:?}"),
    }
}

fn not_found<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::NotFound { .. })), "{result:?}");
}

pub async fn nul_characters_are_refused_on_every_text_write(store: &dyn Store) {
    let owner = user_id(store, "nora").await;
    for (field, edit) in [
        ("name", (|e: &mut resolute_store::NewExperiment| e.name = "a\0b".into()) as fn(&mut resolute_store::NewExperiment)),
        ("description", |e| e.description = "d\0".into()),
        ("notes", |e| e.notes = "n\0".into()),
        ("config", |e| e.original_config = "name: x # \0\n".into()),
        ("label", |e| e.labels = vec!["ok".into(), "l\0".into()]),
    ] {
        let mut new = new_experiment(owner, "nul");
        edit(&mut new);
        invalid(store.create_experiment(new).await, field);
    }
    let page = store.list_experiments(&ExperimentFilter { limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!(page.total, 0, "nothing half-written");

    let exp = experiment(store, "clean").await;
    for (field, patch) in [
        ("name", ExperimentPatch { name: Some("x\0".into()), ..Default::default() }),
        ("description", ExperimentPatch { description: Some("x\0".into()), ..Default::default() }),
        ("notes", ExperimentPatch { notes: Some("x\0".into()), ..Default::default() }),
    ] {
        invalid(store.patch_experiment(exp.id, &patch).await, field);
    }
    invalid(store.set_experiment_labels(exp.id, &["a\0".into()]).await, "label");
    assert_eq!(store.experiment_by_id(exp.id).await.unwrap(), exp, "unchanged");

    invalid(store.create_user(resolute_store::NewUser { username: "u\0".into(), ..new_user("x") }).await, "username");
    invalid(store.create_user(resolute_store::NewUser { display_name: "D\0".into(), ..new_user("dee") }).await, "display name");
    invalid(store.update_user(owner, &UserPatch { display_name: Some("D\0".into()), ..Default::default() }).await, "display name");
    invalid(store.update_user(owner, &UserPatch { username: Some("n\0".into()), ..Default::default() }).await, "username");
    invalid(store.put_template(NewTemplate { name: "t\0".into(), config: serde_json::json!({}), workspace_id: 1 }).await, "template name");

    let t = trial(store, exp.id, 1).await;
    invalid(store.set_trial_runner_state(t.id, "r\0").await, "runner state");
    let mut ckpt = checkpoint(&t, "u\0", 1, None);
    invalid(store.report_checkpoints(std::slice::from_ref(&ckpt)).await, "checkpoint uuid");
    ckpt.uuid = "fine".into();
    ckpt.state = "STATE_\0".into();
    invalid(store.report_checkpoints(&[ckpt]).await, "checkpoint state");
}

pub async fn nul_lookups_find_nothing(store: &dyn Store) {
    user_id(store, "lookup").await;
    not_found(store.user_by_name("look\0up").await);
    not_found(store.project_by_names("Uncategorized\0", "Uncategorized").await);
    not_found(store.template_by_name("t\0").await);
    not_found(store.checkpoint_by_uuid("c\0").await);
    not_found(store.task_by_id("t\0").await);
    not_found(store.allocation_by_id("a\0").await);
    not_found(store.trial_by_task_id("t\0").await);
    not_found(store.command_task_by_id("t\0").await);
    let users = store.list_users(&UserFilter { name: Some("lo\0".into()), limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!((users.users.len(), users.total), (0, 0));
    let exps = store.list_experiments(&ExperimentFilter { name: Some("a\0".into()), limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!(exps.total, 0);
    let (templates, total) =
        store.list_templates(&TemplateFilter { name_contains: Some("\0".into()), ..Default::default() }).await.unwrap();
    assert_eq!((templates.len(), total), (0, 0));
}

pub async fn odd_unicode_round_trips(store: &dyn Store) {
    let odd = "שלום \u{202e}evil\u{202c} 🧪👩‍🔬 e\u{301}\u{301} 𝔘𝔫𝔦 \u{feff}\u{fffd}";
    let owner = store.create_user(resolute_store::NewUser { display_name: odd.into(), ..new_user("ünïcødé-🧪") }).await.unwrap();
    assert_eq!(store.user_by_name("ünïcødé-🧪").await.unwrap().display_name, odd);
    let mut new = new_experiment(owner.id, odd);
    new.description = odd.into();
    new.labels = vec![odd.into(), "plain".into()];
    let created = store.create_experiment(new).await.unwrap();
    let read = store.experiment_by_id(created.id).await.unwrap();
    assert_eq!((read.name.as_str(), read.description.as_str()), (odd, odd));
    assert_eq!(read.labels, [odd, "plain"]);
    let by_label =
        store.list_experiments(&ExperimentFilter { labels: vec![odd.into()], limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!(by_label.total, 1);
    let by_name =
        store.list_experiments(&ExperimentFilter { name: Some("🧪👩‍🔬".into()), limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!(by_name.total, 1);
}

pub async fn huge_numbers_are_not_found_or_empty(store: &dyn Store) {
    not_found(store.experiment_by_id(i32::MAX).await);
    not_found(store.experiment_by_id(i32::MIN).await);
    not_found(store.user_by_id(i32::MAX).await);
    not_found(store.trial_by_id(-1).await);
    user_id(store, "big").await;
    let far = store.list_users(&UserFilter { offset: i64::MAX, limit: Some(i64::MAX), ..Default::default() }).await.unwrap();
    assert_eq!((far.users.len(), far.total), (0, 1));
    let far = store.list_experiments(&ExperimentFilter { offset: i64::MAX, limit: Some(i64::MAX), ..Default::default() }).await.unwrap();
    assert_eq!(far.total, 0);
}

pub async fn log_lines_keep_nul_and_refuse_it_in_their_fields(store: &dyn Store) {
    let exp = experiment(store, "logs").await;
    let t = trial(store, exp.id, 1).await;
    let mut line = crate::logs::log_line(&t.task_id, 1);
    line.log = "binary \0 output 🧪\n".into();
    store.insert_logs(std::slice::from_ref(&line)).await.unwrap();
    let stored = store.task_logs(&t.task_id, &resolute_store::LogFilter::default()).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].log, "binary \0 output 🧪\n", "a process's NUL is kept, on both backends");

    let mut bad = crate::logs::log_line(&t.task_id, 2);
    bad.source = Some("s\0".into());
    invalid(store.insert_logs(&[bad]).await, "log source");
    let mut bad = crate::logs::log_line(&t.task_id, 3);
    bad.agent_id = Some("a\0".into());
    invalid(store.insert_logs(&[bad]).await, "agent id");
    assert_eq!(store.task_logs(&t.task_id, &resolute_store::LogFilter::default()).await.unwrap().len(), 1);
}

/// Name filters fold ASCII case only, on both backends (SQLite's `LOWER` knows only ASCII; a
/// PostgreSQL database's collation may know more), so a filter matches the same rows anywhere.
pub async fn name_filters_fold_ascii_case_only(store: &dyn Store) {
    let owner = store.create_user(resolute_store::NewUser { display_name: "ÉLODIE".into(), ..new_user("ÜBER-user") }).await.unwrap();
    store.create_experiment(new_experiment(owner.id, "ÜBER-Net")).await.unwrap();
    let count = |name: &str| {
        let filter = ExperimentFilter { name: Some(name.into()), limit: Some(10), ..Default::default() };
        async move { store.list_experiments(&filter).await.unwrap().total }
    };
    assert_eq!(count("ÜBER-NET").await, 1);
    assert_eq!(count("Über-net").await, 1, "the non-ASCII letter as stored, ASCII in any case");
    assert_eq!(count("über-net").await, 0, "non-ASCII letters are compared exactly");
    let users = |name: &str| {
        let filter = UserFilter { name: Some(name.into()), limit: Some(10), ..Default::default() };
        async move { store.list_users(&filter).await.unwrap().total }
    };
    assert_eq!(users("Über-USER").await, 1);
    assert_eq!(users("über-user").await, 0);
    assert_eq!(users("Élodie").await, 1);
    assert_eq!(users("élodie").await, 0);
}
