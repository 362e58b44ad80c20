//! How many buckets a requested capacity needs, and how many items a bucket count promises.
//!
//! Measured with the crate's breadth-first insert (paths of at most
//! [`MAX_PATH_LEN`](crate::stats::MAX_PATH_LEN) relocations), random tables first refuse an insert
//! at about 97% load when large; small tables vary much more (with 16 buckets, one in 100,000
//! refuses at 62%). The promise is 94% of the lanes less a fixed reserve of 24 items, which keeps
//! every table size below its one-in-100,000 first-refusal point. `buckets_for` inverts the
//! promise.

use crate::bucket::LANES;

/// The load factor promised by large tables.
const LOAD: f64 = 0.94;

/// Items held back from the promise, for the spread of small tables.
const RESERVE: usize = 24;

/// The share of its promise, in tenths, that a table holds before it counts as full: a growable
/// filter adds a level only when an insert is refused by a full newest level, and a refusal below
/// this share is *crowded* (`Stats::crowded_refusals`). Random items first meet a refusal above
/// the promise in all but one table in 100,000 (above), and at this share in none of the
/// 100,000 fills measured at every size (`BENCHMARKS.md`, "First refusals"), so they grow as
/// they did before the rule; items aimed at a few buckets, which fill those buckets and every
/// path from them while the table is nearly empty, are refused instead of adding a level each.
const FULL_TENTHS: usize = 9;

/// Tables of fewer buckets count as full whenever they refuse an insert. Their first refusals
/// spread down to the promise itself (above), so the item counts that inserts in flight on other
/// threads have not yet added could hide a full table; and items aimed at them grow a filter
/// by at most four such levels, a few kilobytes. From 256 buckets up, random items first meet a
/// refusal at least 13% of the promise (over 120 items) above the share below.
const RULED_BUCKETS: usize = 256;

/// Whether a table of `buckets` buckets holding `items` items is full: at least
/// [`FULL_TENTHS`] of its promise, or fewer than [`RULED_BUCKETS`] buckets.
pub(crate) fn is_full(items: usize, buckets: usize) -> bool {
    buckets < RULED_BUCKETS
        || items.saturating_mul(10) >= capacity_of(buckets).saturating_mul(FULL_TENTHS)
}

/// Items a table of `buckets` buckets promises to accept.
pub(crate) fn capacity_of(buckets: usize) -> usize {
    let lanes = buckets.saturating_mul(LANES);
    // Any table holds any four items: the fourth finds a free lane in its first bucket.
    ((lanes as f64 * LOAD) as usize).saturating_sub(RESERVE).max(LANES)
}

/// The fewest buckets whose promised capacity is at least `capacity`, or `None` if that table
/// would not fit in memory.
pub(crate) fn buckets_for(capacity: usize) -> Option<usize> {
    if capacity <= LANES {
        return Some(1);
    }
    let max_buckets = isize::MAX as usize / core::mem::size_of::<u64>();
    let estimate = (capacity.saturating_add(RESERVE) as f64 / (LANES as f64 * LOAD)) as usize;
    // The float estimate is within a bucket or two of the answer; settle it exactly.
    let mut buckets = estimate.saturating_sub(2).max(1);
    while capacity_of(buckets) < capacity {
        buckets += 1;
        if buckets > max_buckets {
            return None;
        }
    }
    Some(buckets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn buckets_for_is_the_least_sufficient_count() {
        for n in (0..5000).chain([65_535, 65_536, 100_000, 1 << 20, 10_000_019]) {
            let m = buckets_for(n).unwrap();
            assert!(capacity_of(m) >= n, "n={n} m={m}");
            assert!(m == 1 || capacity_of(m - 1) < n, "n={n} m={m} is not the least");
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn capacity_is_monotone_in_buckets() {
        let mut last = 0;
        for m in 1..100_000 {
            let c = capacity_of(m);
            assert!(c >= last, "capacity_of({m}) = {c} < {last}");
            last = c;
        }
    }

    #[test]
    fn large_tables_cost_at_most_2_2_bytes_per_item() {
        for n in [100_000, 1_000_000, 12_345_678, 100_000_000] {
            let bytes = buckets_for(n).unwrap() * 8;
            assert!(bytes as f64 / n as f64 <= 2.2, "n={n}: {bytes} bytes");
        }
    }

    /// The rule that decides growth: a change of the share moves these edges.
    #[test]
    fn a_table_is_full_from_nine_tenths_of_its_promise() {
        for buckets in [256, 273, 1 << 20] {
            let promise = capacity_of(buckets);
            let edge = (promise * FULL_TENTHS).div_ceil(10);
            assert!(is_full(edge, buckets), "{buckets} buckets, {edge} of {promise}");
            assert!(!is_full(edge - 1, buckets), "{buckets} buckets, {} of {promise}", edge - 1);
        }
        assert!(is_full(0, 1) && is_full(0, 255), "small tables are full when they refuse");
        assert!(!is_full(0, 256));
        assert!(!is_full(901, 273), "273 buckets promise 1,002");
        assert!(is_full(902, 273));
    }

    #[test]
    fn impossible_capacities_are_refused() {
        assert_eq!(buckets_for(usize::MAX), None);
        assert_eq!(buckets_for(usize::MAX / 2), None);
    }
}
