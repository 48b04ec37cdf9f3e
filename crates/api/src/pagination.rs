//! Offset/limit pagination as upstream reports it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `pagination` in list responses. Clients loop until `endIndex >= total`, using `endIndex` as the
/// next `offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    #[serde(default)]
    pub offset: i32,
    #[serde(default)]
    pub limit: i32,
    #[serde(default)]
    pub start_index: i32,
    #[serde(default)]
    pub end_index: i32,
    #[serde(default)]
    pub total: i32,
}

impl Pagination {
    /// Resolves a request's `offset`/`limit` against `total` items. `limit <= 0` means "all";
    /// a negative offset counts from the end, as upstream does.
    pub fn resolve(offset: i32, limit: i32, total: i32) -> Pagination {
        let total = total.max(0);
        let start = if offset < 0 { (total + offset).max(0) } else { offset.min(total) };
        let end = if limit > 0 { start.saturating_add(limit).min(total) } else { total };
        Pagination { offset, limit, start_index: start, end_index: end, total }
    }
}

#[cfg(test)]
mod tests {
    use super::Pagination;

    #[test]
    fn resolves_offsets_and_limits() {
        let p = Pagination::resolve(0, 0, 5);
        assert_eq!((p.start_index, p.end_index, p.total), (0, 5, 5));
        let p = Pagination::resolve(2, 2, 5);
        assert_eq!((p.start_index, p.end_index), (2, 4));
        let p = Pagination::resolve(-2, 0, 5);
        assert_eq!((p.start_index, p.end_index), (3, 5));
        let p = Pagination::resolve(9, 3, 5);
        assert_eq!((p.start_index, p.end_index), (5, 5));
        let p = Pagination::resolve(-9, 1, 5);
        assert_eq!((p.start_index, p.end_index), (0, 1));
    }
}
