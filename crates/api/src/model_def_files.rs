//! The model definition's files one at a time, as upstream's WebUI reads them: the tree
//! (`GET /api/v1/experiments/{experimentId}/file_tree`, `GetModelDefTreeResponse`) and one
//! file's bytes (`POST /api/v1/experiments/{experimentId}/file`, `GetModelDefFile*`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `v1FileNode`: a file or directory of the model definition; a directory holds its entries in
/// `files` (directories first, then by name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileNode {
    /// Path from the context root, with `/`.
    pub path: String,
    /// The last path component.
    pub name: String,
    /// Modification time (RFC 3339) from the archive.
    pub modified_time: String,
    /// Size in bytes (0 for a directory).
    pub content_length: i32,
    pub is_dir: bool,
    /// A MIME type guessed from the name and contents (empty for a directory).
    pub content_type: String,
    #[schema(no_recursion)]
    pub files: Vec<FileNode>,
}

/// `GetModelDefTreeResponse`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetModelDefTreeResponse {
    pub files: Vec<FileNode>,
}

/// `GetModelDefFileRequest`: the file's `path` (as in the tree). `experimentId` is the path's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetModelDefFileRequest {
    #[serde(default)]
    pub experiment_id: Option<i32>,
    #[serde(default)]
    pub path: Option<String>,
}

/// `GetModelDefFileResponse`: the file's bytes, base64 (protobuf `bytes`).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct GetModelDefFileResponse {
    pub file: String,
}
