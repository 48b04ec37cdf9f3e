//! How long a page of a list may be. Every list endpoint pages in the database; this bounds the
//! page, so a read costs what it returns whatever the caller asks. A limit past the maximum (or
//! "all", which upstream spells 0 or -1 on most lists) is clamped: the response's `pagination`
//! (`endIndex` < `total`) tells the caller to read on, as upstream's clients do
//! (`read_paginated`).

/// The most rows a page of any list holds.
pub const MAX_PAGE_SIZE: i64 = 1000;

/// Lists whose upstream clients read them unpaged (`det experiment describe` reads an
/// experiment's trials in one call): their pages may be longer.
pub const MAX_UNPAGED_LIST: i64 = 10_000;

/// The rows a page returns for a requested `limit` (0 or negative: all) under `max`.
pub fn page_limit(limit: i64, max: i64) -> i64 {
    if limit <= 0 { max } else { limit.min(max) }
}

/// `(start, end)` of a page of at most `limit` rows over `total`: a negative offset counts from
/// the end.
pub fn page_window(offset: i64, limit: i64, total: i64) -> (i64, i64) {
    let start = if offset < 0 { (total + offset).max(0) } else { offset.min(total) };
    (start, start.saturating_add(limit.max(0)).min(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_clamped_to_the_maximum() {
        assert_eq!(page_limit(0, MAX_PAGE_SIZE), MAX_PAGE_SIZE);
        assert_eq!(page_limit(-1, MAX_PAGE_SIZE), MAX_PAGE_SIZE);
        assert_eq!(page_limit(10, MAX_PAGE_SIZE), 10);
        assert_eq!(page_limit(1_000_000, MAX_PAGE_SIZE), MAX_PAGE_SIZE);
    }

    #[test]
    fn windows_count_negative_offsets_from_the_end() {
        assert_eq!(page_window(0, 1000, 5), (0, 5));
        assert_eq!(page_window(2, 2, 5), (2, 4));
        assert_eq!(page_window(-2, 1000, 5), (3, 5));
        assert_eq!(page_window(9, 3, 5), (5, 5));
        assert_eq!(page_window(-9, 3, 5), (0, 3));
    }
}
