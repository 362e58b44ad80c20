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

    #[test]
    fn impossible_capacities_are_refused() {
        assert_eq!(buckets_for(usize::MAX), None);
        assert_eq!(buckets_for(usize::MAX / 2), None);
    }
}
