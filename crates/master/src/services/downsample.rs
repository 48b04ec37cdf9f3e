//! Downsampling of a trial's metric series for `GET /api/v1/trials/time-series` (the WebUI's and
//! SDK's trial comparison): choose at most a budget of report indices so that the chart keeps its
//! shape — the first and last report, every metric's overall minimum and maximum, and per bucket of
//! consecutive reports each metric's local minimum and maximum (min/max bucketing). A pure
//! function over values, so the rule is unit-tested without a master.

/// Indices (ascending, distinct, at most `budget`) of the points to keep out of `len` points.
///
/// `series` holds one column per metric, each `len` long; `None` (or NaN) marks a report without
/// that metric. With `len <= budget` every point is kept. A budget of 0 keeps nothing.
pub fn keep_indices(len: usize, series: &[Vec<Option<f64>>], budget: usize) -> Vec<usize> {
    if len <= budget {
        return (0..len).collect();
    }
    if budget == 0 {
        return Vec::new();
    }
    // Must-keep points, in priority order: ends, then each metric's global extremes.
    let mut must = vec![0, len - 1];
    for column in series {
        if let Some((lo, hi)) = extremes(column, 0, len) {
            must.extend([lo, hi]);
        }
    }
    let mut keep: Vec<usize> = Vec::with_capacity(budget);
    for i in must {
        if keep.len() == budget {
            break;
        }
        if !keep.contains(&i) {
            keep.push(i);
        }
    }
    // The rest of the budget: equal buckets of the interior, each giving every metric's local
    // extremes (two points per metric per bucket, or one point per bucket without metrics).
    // Extremes often coincide (monotone metrics), so the bucket count is refined from the first
    // guess until the distinct points fill the budget as closely as a few passes allow.
    let per_bucket = (2 * series.len()).max(1);
    let spare = budget - keep.len();
    let mut buckets = spare / per_bucket;
    let mut best = bucket_extremes(len, series, buckets, &keep);
    for _ in 0..4 {
        let got = best.len().saturating_sub(keep.len()).max(1);
        if best.len() >= budget.saturating_sub(budget / 100) || buckets >= spare {
            break;
        }
        let guess = (buckets.max(1) * spare / got).clamp(buckets + 1, spare);
        let candidate = bucket_extremes(len, series, guess, &keep);
        if candidate.len() > budget {
            break;
        }
        buckets = guess;
        best = candidate;
    }
    best
}

/// `must` plus, per each of `buckets` equal buckets of the interior, every metric's local
/// extremes (the bucket's first point without metrics): ascending and distinct.
fn bucket_extremes(len: usize, series: &[Vec<Option<f64>>], buckets: usize, must: &[usize]) -> Vec<usize> {
    let mut keep = must.to_vec();
    let interior = len.saturating_sub(2);
    if buckets > 0 && interior > 0 {
        for b in 0..buckets {
            let start = 1 + b * interior / buckets;
            let end = 1 + (b + 1) * interior / buckets;
            if start >= end {
                continue;
            }
            if series.is_empty() {
                keep.push(start);
            }
            for column in series {
                if let Some((lo, hi)) = extremes(column, start, end) {
                    keep.extend([lo, hi]);
                }
            }
        }
    }
    keep.sort_unstable();
    keep.dedup();
    keep
}

/// Indices of the smallest and largest finite value in `column[start..end]`, if any.
fn extremes(column: &[Option<f64>], start: usize, end: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, f64, usize, f64)> = None;
    for (i, v) in column.iter().enumerate().take(end).skip(start) {
        let Some(v) = v.filter(|v| !v.is_nan()) else { continue };
        best = Some(match best {
            None => (i, v, i, v),
            Some((lo, lov, hi, hiv)) => {
                let (lo, lov) = if v < lov { (i, v) } else { (lo, lov) };
                let (hi, hiv) = if v > hiv { (i, v) } else { (hi, hiv) };
                (lo, lov, hi, hiv)
            }
        });
    }
    best.map(|(lo, _, hi, _)| (lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: impl IntoIterator<Item = f64>) -> Vec<Option<f64>> {
        values.into_iter().map(Some).collect()
    }

    #[test]
    fn short_series_are_returned_whole() {
        let s = vec![column([3.0, 1.0, 2.0])];
        assert_eq!(keep_indices(3, &s, 10), vec![0, 1, 2]);
        assert_eq!(keep_indices(3, &s, 3), vec![0, 1, 2]);
    }

    #[test]
    fn budget_is_respected_and_ends_and_extremes_are_kept() {
        let len = 10_000;
        // A noisy decreasing loss with a spike at 7_777 and a dip at 4_321.
        let loss = column((0..len).map(|i| {
            let base = 10.0 - i as f64 / 1000.0 + ((i * 7919) % 13) as f64 / 100.0;
            match i {
                7_777 => 100.0,
                4_321 => -50.0,
                _ => base,
            }
        }));
        let acc = column((0..len).map(|i| if i == 9_000 { 2.0 } else { (i % 100) as f64 / 100.0 }));
        for budget in [1, 2, 5, 7, 100, 1000, 9_999] {
            let keep = keep_indices(len, &[loss.clone(), acc.clone()], budget);
            assert!(keep.len() <= budget, "budget {budget}: kept {}", keep.len());
            assert!(keep.windows(2).all(|w| w[0] < w[1]), "indices ascend and are distinct");
            if budget >= 2 {
                assert_eq!((keep[0], *keep.last().unwrap()), (0, len - 1), "budget {budget} keeps both ends");
            }
            if budget >= 6 {
                for extreme in [7_777, 4_321, 9_000] {
                    assert!(keep.contains(&extreme), "budget {budget} keeps the extreme at {extreme}");
                }
            }
        }
        // A generous budget is used, not wasted.
        assert!(keep_indices(len, &[loss, acc], 1000).len() > 900);
        // Coinciding extremes (two monotone metrics) still fill the budget.
        let up = column((0..len).map(|i| i as f64));
        let steps = column((0..len).map(|i| (i / 100) as f64));
        let keep = keep_indices(len, &[up, steps], 1000);
        assert!(keep.len() > 950 && keep.len() <= 1000, "kept {}", keep.len());
    }

    #[test]
    fn every_bucket_keeps_its_local_extremes() {
        // A sine wave: each peak and trough must survive a 1:10 downsampling.
        let len = 10_000;
        let wave = column((0..len).map(|i| (i as f64 * std::f64::consts::TAU / 1000.0).sin()));
        let keep = keep_indices(len, std::slice::from_ref(&wave), 1000);
        for peak in (0..10).map(|k| 250 + k * 1000) {
            let near = keep.iter().any(|&i| i.abs_diff(peak) <= 1 && wave[i].unwrap() > 0.9999);
            assert!(near, "peak near {peak} is kept");
        }
        let max_gap = keep.windows(2).map(|w| w[1] - w[0]).max().unwrap();
        assert!(max_gap <= 40, "points are spread over the series (largest gap {max_gap})");
    }

    #[test]
    fn missing_values_and_no_metrics_are_handled() {
        let sparse: Vec<Option<f64>> = (0..100).map(|i| if i % 10 == 3 { Some(i as f64) } else { None }).collect();
        let keep = keep_indices(100, &[sparse], 10);
        assert!(keep.len() <= 10);
        assert!(keep.contains(&3) && keep.contains(&93), "min and max of the sparse metric: {keep:?}");
        let none: Vec<Vec<Option<f64>>> = Vec::new();
        let keep = keep_indices(100, &none, 10);
        assert_eq!(keep.len(), 10);
        assert_eq!((keep[0], keep[9]), (0, 99));
        assert!(keep_indices(100, &none, 0).is_empty());
        let nan = vec![vec![Some(f64::NAN); 50]];
        assert!(keep_indices(50, &nan, 4).len() <= 4);
    }
}
