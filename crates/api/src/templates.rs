//! Config templates (`/api/v1/templates*`): named config fragments merged under an experiment's or
//! a task's config.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::pagination::Pagination;
use crate::users::OrderBy;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// `sortBy` of `GET /api/v1/templates`.
    pub enum TemplateSortBy {
        Unspecified = "SORT_BY_UNSPECIFIED",
        Name = "SORT_BY_NAME",
    }
}

/// `v1Template`; also the body of `PUT`/`POST /api/v1/templates/{templateName}` (where the
/// path's name is the one that counts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    #[serde(default)]
    pub name: String,
    /// The config fragment as a JSON object.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub config: Value,
    #[serde(default, alias = "workspace_id")]
    pub workspace_id: i32,
}

/// Query parameters of `GET /api/v1/templates`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GetTemplatesQuery {
    #[serde(default, alias = "sort_by", skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<TemplateSortBy>,
    #[serde(default, alias = "order_by", skip_serializing_if = "Option::is_none")]
    pub order_by: Option<OrderBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    /// 0 or absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    /// Substring of the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, alias = "workspace_ids", skip_serializing_if = "Vec::is_empty")]
    pub workspace_ids: Vec<i32>,
}

/// `GET /api/v1/templates`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetTemplatesResponse {
    pub templates: Vec<Template>,
    pub pagination: Pagination,
}

/// `GET /api/v1/templates/{templateName}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GetTemplateResponse {
    pub template: Template,
}

/// `PUT /api/v1/templates/{templateName}` (upsert): the stored template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PutTemplateResponse {
    #[serde(default)]
    pub template: Option<Template>,
}

/// `POST /api/v1/templates/{templateName}` (create; 409 if the name is taken).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PostTemplateResponse {
    pub template: Template,
}

/// `PATCH /api/v1/templates/{templateName}`: the body is the new config object itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatchTemplateConfigResponse {
    pub template: Template,
}

/// `DELETE /api/v1/templates/{templateName}`: `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeleteTemplateResponse {}

/// `PATCH /api/v1/template/rename`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchTemplateNameRequest {
    #[serde(alias = "old_name")]
    pub old_name: String,
    #[serde(alias = "new_name")]
    pub new_name: String,
}

/// `PATCH /api/v1/template/rename` response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PatchTemplateNameResponse {
    pub template: Template,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn template_round_trips_in_the_bindings_shape() {
        let body = json!({"config": {"resources": {"slots": 1}}, "name": "gpu", "workspaceId": 1});
        let t: Template = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(t.workspace_id, 1);
        assert_eq!(serde_json::to_value(&t).unwrap(), body);

        let list = json!({"templates": [body], "pagination": {"offset": 0, "limit": 0, "startIndex": 0,
            "endIndex": 1, "total": 1}});
        let resp: GetTemplatesResponse = serde_json::from_value(list.clone()).unwrap();
        assert_eq!(resp.templates[0].name, "gpu");
        assert_eq!(serde_json::to_value(&resp).unwrap(), list);

        let put: PutTemplateResponse = serde_json::from_value(json!({"template": null})).unwrap();
        assert_eq!(put.template, None);
        let deleted: DeleteTemplateResponse = serde_json::from_value(json!({})).unwrap();
        assert_eq!(serde_json::to_value(deleted).unwrap(), json!({}));
    }

    #[test]
    fn put_body_may_omit_the_name() {
        // The upstream CLI always sends the name, but the path is what names the template.
        let t: Template = serde_json::from_value(json!({"config": {}})).unwrap();
        assert_eq!((t.name.as_str(), t.workspace_id), ("", 0));
        let r: PatchTemplateNameRequest = serde_json::from_value(json!({"oldName": "a", "new_name": "b"})).unwrap();
        assert_eq!((r.old_name.as_str(), r.new_name.as_str()), ("a", "b"));
    }
}
