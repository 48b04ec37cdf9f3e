//! `v1File`: one entry of a model definition (context directory) as the upstream CLI uploads it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The tar type flag of a regular file (`'0'`).
pub const FILE_TYPE_REGULAR: i32 = 48;
/// The tar type flag of a directory (`'5'`).
pub const FILE_TYPE_DIRECTORY: i32 = 53;

/// A file or directory, with the metadata a tar header needs. Paths are relative to the context
/// root and use `/`; directories come before their contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct File {
    pub path: String,
    /// Tar type flag: 48 (`'0'`) regular file, 53 (`'5'`) directory.
    #[serde(rename = "type")]
    pub file_type: i32,
    /// Base64 of the file's bytes; empty for directories.
    #[serde(default)]
    pub content: String,
    /// Seconds since the epoch, as an int64 string.
    #[serde(with = "crate::int64", default)]
    #[schema(value_type = String, format = Int64)]
    pub mtime: i64,
    /// `st_mode` (permission bits and file type bits).
    #[serde(default)]
    pub mode: i32,
    #[serde(default)]
    pub uid: i32,
    #[serde(default)]
    pub gid: i32,
}
