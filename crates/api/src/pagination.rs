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

    /// The `pagination` of a page the database already cut: `returned` rows from `offset` of
    /// `total`, for a request that asked for `limit`. Counts past `i32::MAX` read as the maximum.
    pub fn of_page(offset: i64, limit: i32, total: i64, returned: usize) -> Pagination {
        let clamp = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
        let start = offset.clamp(0, total.max(0));
        let end = start.saturating_add(i64::try_from(returned).unwrap_or(i64::MAX));
        Pagination { offset: clamp(offset), limit, start_index: clamp(start), end_index: clamp(end), total: clamp(total) }
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

    #[test]
    fn describes_a_page_cut_by_the_database() {
        let p = Pagination::of_page(10, 5, 12, 2);
        assert_eq!((p.offset, p.limit, p.start_index, p.end_index, p.total), (10, 5, 10, 12, 12));
        let p = Pagination::of_page(50, 5, 12, 0);
        assert_eq!((p.start_index, p.end_index), (12, 12));
        let p = Pagination::of_page(0, 0, i64::MAX, 3);
        assert_eq!((p.end_index, p.total), (3, i32::MAX));
    }
}
