//! Config templates: upsert by name, lookup, paged listing by name, delete.

use resolute_store::{DEFAULT_WORKSPACE_ID, NewTemplate, Store, StoreError, TemplateFilter};
use serde_json::{Value, json};

fn new_template(name: &str, config: Value) -> NewTemplate {
    NewTemplate { name: name.to_owned(), config, workspace_id: DEFAULT_WORKSPACE_ID }
}

async fn names(store: &dyn Store, filter: TemplateFilter) -> (Vec<String>, i64) {
    let (templates, total) = store.list_templates(&filter).await.unwrap();
    (templates.into_iter().map(|t| t.name).collect(), total)
}

pub async fn put_replaces_by_name(store: &dyn Store) {
    let config = json!({"resources": {"slots": 2}, "environment": {"image": "python:3.11"}});
    let created = store.put_template(new_template("gpu", config.clone())).await.unwrap();
    assert_eq!((created.name.as_str(), &created.config, created.workspace_id), ("gpu", &config, DEFAULT_WORKSPACE_ID));
    assert_eq!(store.template_by_name("gpu").await.unwrap(), created);

    let replacement = json!({"resources": {"slots": 8}});
    let replaced = store.put_template(new_template("gpu", replacement.clone())).await.unwrap();
    assert_eq!(replaced.config, replacement);
    assert_eq!(store.template_by_name("gpu").await.unwrap(), replaced);
    assert_eq!(names(store, TemplateFilter::default()).await, (vec!["gpu".to_owned()], 1), "replaced, not added");

    let err = store.template_by_name("missing").await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "template", key } if key == "missing"), "{err:?}");
    assert_eq!(err.to_string(), "template not found: missing");

    let mut elsewhere = new_template("orphan", json!({}));
    elsewhere.workspace_id = 4242;
    let err = store.put_template(elsewhere).await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "workspace", key } if key == "4242"), "{err:?}");
    assert!(matches!(store.template_by_name("orphan").await, Err(StoreError::NotFound { .. })));
    // A failed replace keeps the stored template.
    let mut moved = new_template("gpu", json!({"x": 1}));
    moved.workspace_id = 4242;
    assert!(store.put_template(moved).await.is_err());
    assert_eq!(store.template_by_name("gpu").await.unwrap(), replaced);
}

pub async fn list_filters_and_pages(store: &dyn Store) {
    for name in ["b-gpu", "a-cpu", "C-big", "my_GPU", "100%", "gpuXbig"] {
        store.put_template(new_template(name, json!({"description": name}))).await.unwrap();
    }
    let all = names(store, TemplateFilter::default()).await;
    assert_eq!(all.0, ["100%", "C-big", "a-cpu", "b-gpu", "gpuXbig", "my_GPU"], "bytewise by name");
    assert_eq!(all.1, 6);
    let (templates, _) = store.list_templates(&TemplateFilter::default()).await.unwrap();
    assert_eq!(templates[1].config, json!({"description": "C-big"}));

    let page = |offset, limit| TemplateFilter { offset, limit, ..Default::default() };
    assert_eq!(names(store, page(0, 2)).await, (vec!["100%".to_owned(), "C-big".to_owned()], 6));
    assert_eq!(names(store, page(4, 2)).await, (vec!["gpuXbig".to_owned(), "my_GPU".to_owned()], 6));
    assert_eq!(names(store, page(5, 10)).await, (vec!["my_GPU".to_owned()], 6));
    assert_eq!(names(store, page(9, 2)).await, (vec![], 6), "a page past the end still counts");
    assert_eq!(names(store, page(2, 0)).await.0.len(), 4, "limit 0 means all");

    let named = |needle: &str| TemplateFilter { name_contains: Some(needle.to_owned()), ..Default::default() };
    assert_eq!(names(store, named("GPU")).await, (vec!["b-gpu".to_owned(), "gpuXbig".to_owned(), "my_GPU".to_owned()], 3));
    assert_eq!(names(store, named("big")).await.0, ["C-big", "gpuXbig"], "case-insensitive");
    assert_eq!(names(store, named("%")).await.0, ["100%"], "LIKE wildcards match literally");
    assert_eq!(names(store, named("_")).await.0, ["my_GPU"]);
    assert_eq!(names(store, named("nothing")).await, (vec![], 0));
    let paged = TemplateFilter { name_contains: Some("gpu".into()), offset: 1, limit: 1, ..Default::default() };
    assert_eq!(names(store, paged).await, (vec!["gpuXbig".to_owned()], 3), "the total counts the filtered set");

    let in_default = TemplateFilter { workspace_ids: vec![DEFAULT_WORKSPACE_ID], ..Default::default() };
    assert_eq!(names(store, in_default).await.1, 6);
    assert_eq!(names(store, TemplateFilter { workspace_ids: vec![2, 3], ..Default::default() }).await, (vec![], 0));
}

pub async fn delete_removes(store: &dyn Store) {
    store.put_template(new_template("keep", json!({}))).await.unwrap();
    store.put_template(new_template("drop", json!({}))).await.unwrap();
    store.delete_template("drop").await.unwrap();
    assert!(matches!(store.template_by_name("drop").await, Err(StoreError::NotFound { entity: "template", .. })));
    let err = store.delete_template("drop").await.unwrap_err();
    assert!(matches!(&err, StoreError::NotFound { entity: "template", key } if key == "drop"), "{err:?}");
    assert_eq!(names(store, TemplateFilter::default()).await, (vec!["keep".to_owned()], 1));
}

/// PostgreSQL cannot store a NUL in text; both backends refuse it the same way.
pub async fn nul_names_are_refused_alike(store: &dyn Store) {
    let err = store.put_template(new_template("a\0b", json!({}))).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { field: "template name", .. }), "{err:?}");
    assert_eq!(err.to_string(), "invalid template name: contains a NUL character; remove it");
    // Inside JSON a NUL is escaped text, so configs may hold one.
    let config = json!({"entrypoint": "echo a\u{0}b"});
    assert_eq!(store.put_template(new_template("ok", config.clone())).await.unwrap().config, config);

    assert!(matches!(store.template_by_name("ok\0").await, Err(StoreError::NotFound { entity: "template", .. })));
    assert!(matches!(store.delete_template("ok\0").await, Err(StoreError::NotFound { .. })));
    let filter = TemplateFilter { name_contains: Some("\0".into()), ..Default::default() };
    assert_eq!(names(store, filter).await, (vec![], 0));
    assert_eq!(names(store, TemplateFilter::default()).await.1, 1);
}

pub async fn the_default_workspace_is_listed(store: &dyn Store) {
    let workspaces = store.list_workspaces().await.unwrap();
    assert_eq!(workspaces.len(), 1, "{workspaces:?}");
    let w = &workspaces[0];
    assert_eq!((w.id, w.name.as_str(), w.immutable, w.archived, w.num_projects), (DEFAULT_WORKSPACE_ID, "Uncategorized", true, false, 1));
}
