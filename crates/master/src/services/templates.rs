//! Config templates: named config fragments merged under an experiment's or a task's config
//! (`--template`). Any user may read and write them, as on upstream's OSS master.

use std::sync::Arc;

use resolute_store::{DEFAULT_WORKSPACE_ID, NewTemplate, Store, StoreError, TemplateFilter, TemplateRecord};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

#[derive(Clone)]
pub struct TemplateService {
    store: Arc<dyn Store>,
}

impl TemplateService {
    pub fn new(store: Arc<dyn Store>) -> Self {
        TemplateService { store }
    }

    pub async fn list(&self, filter: &TemplateFilter) -> ApiResult<(Vec<TemplateRecord>, i64)> {
        Ok(self.store.list_templates(filter).await?)
    }

    /// 404 naming the template.
    pub async fn get(&self, name: &str) -> ApiResult<TemplateRecord> {
        match self.store.template_by_name(name).await {
            Ok(t) => Ok(t),
            Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!("template {name:?} not found"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates or replaces; `config` must be an object.
    pub async fn put(&self, name: &str, config: Value, workspace_id: i32) -> ApiResult<TemplateRecord> {
        if name.trim().is_empty() {
            return Err(ApiError::invalid("name: a template needs a name"));
        }
        super::input_limits::check_text("name", name, super::input_limits::NAME_BYTES)?;
        super::input_limits::check_config("config", &config)?;
        if !config.is_object() {
            return Err(ApiError::invalid(format!("config: a template's config must be an object, found {config}")));
        }
        let workspace_id = if workspace_id > 0 { workspace_id } else { DEFAULT_WORKSPACE_ID };
        Ok(self.store.put_template(NewTemplate { name: name.to_owned(), config, workspace_id }).await?)
    }

    /// Replaces the config of an existing template.
    pub async fn patch_config(&self, name: &str, config: Value) -> ApiResult<TemplateRecord> {
        let existing = self.get(name).await?;
        self.put(name, config, existing.workspace_id).await
    }

    pub async fn delete(&self, name: &str) -> ApiResult<()> {
        match self.store.delete_template(name).await {
            Ok(()) => Ok(()),
            Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!("template {name:?} not found"))),
            Err(e) => Err(e.into()),
        }
    }
}
