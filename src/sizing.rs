//! How many buckets a requested capacity needs, how many items a bucket count promises, and
//! how large a growable filter's next level is.
//!
//! Measured with the crate's breadth-first insert (paths of at most
//! [`MAX_PATH_LEN`](crate::stats::MAX_PATH_LEN) relocations), random tables first refuse an insert
//! at about 97% load when large; small tables vary much more (with 16 buckets, one in 100,000
//! refuses at 62%). The promise is 94% of the lanes less a fixed reserve of 24 items, which keeps
//! every table size below its one-in-100,000 first-refusal point. `buckets_for` inverts the
//! promise.

use crate::bucket::LANES;

/// The most levels a filter has: level 0 and 31 growths. At [`GROWTH_FACTOR`] 4 the 31st growth
/// of a one-bucket filter would need 2^62 buckets, more than any address space holds.
pub(crate) const MAX_LEVELS: usize = 32;

/// Buckets of a new level, in buckets of the level before it. Four keeps the levels of a 1,000×
/// growth to six, so lookups read few levels, and the false-positive rate (the sum of the
/// levels') under 0.1%; the cost is memory: the newest level is often mostly empty.
pub(crate) const GROWTH_FACTOR: usize = 4;

/// Where a growable filter stops growing: no level is added that would take the filter past
/// either limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ceiling {
    /// The most items the filter's levels promise together ([`capacity_of`]).
    pub(crate) items: Option<usize>,
    /// The most bytes the filter takes (its `memory_usage`).
    pub(crate) bytes: Option<usize>,
}

/// A growable filter as a growth finds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    pub(crate) levels: usize,
    pub(crate) newest_buckets: usize,
    /// Items the levels promise together ([`capacity_of`] of each).
    pub(crate) promised: usize,
    /// Bytes the filter takes.
    pub(crate) bytes: usize,
}

/// The bucket count of the level to add to a filter of `size`, if `level_limit` levels and the
/// ceiling allow one; `level_bytes(buckets)` is what a level of `buckets` buckets takes.
pub(crate) fn next_level(
    size: Size,
    level_limit: usize,
    ceiling: Ceiling,
    level_bytes: impl Fn(usize) -> usize,
) -> Option<usize> {
    if size.levels >= level_limit {
        return None;
    }
    let mut buckets = size.newest_buckets.checked_mul(GROWTH_FACTOR)?;
    if let Some(items) = ceiling.items {
        let room = items.checked_sub(size.promised).filter(|&room| room > 0)?;
        // A room too large to allocate leaves the growth factor's size.
        if let Some(fits) = buckets_for(room) {
            buckets = buckets.min(fits);
        }
    }
    if let Some(bytes) = ceiling.bytes {
        let room = bytes.checked_sub(size.bytes)?;
        buckets = buckets.min(room / core::mem::size_of::<u64>());
        while buckets > 0 && level_bytes(buckets) > room {
            buckets -= (buckets / 64).max(1);
        }
        // Smaller, a level would cost every absent lookup its reads for little room: once a
        // level took the room left to within the sizing's steps, what remains stays unused.
        if buckets < size.newest_buckets / GROWTH_FACTOR {
            return None;
        }
    }
    (buckets > 0).then_some(buckets)
}

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

    /// A level costs its buckets' words and 1,000 bytes besides, in these tests.
    fn level_bytes(buckets: usize) -> usize {
        buckets * 8 + 1_000
    }

    fn size(levels: usize, newest_buckets: usize, promised: usize, bytes: usize) -> Size {
        Size { levels, newest_buckets, promised, bytes }
    }

    #[test]
    fn a_level_has_four_times_the_buckets_of_the_newest_up_to_the_level_limit() {
        let unbounded = Ceiling::default();
        assert_eq!(next_level(size(1, 10, 0, 0), MAX_LEVELS, unbounded, level_bytes), Some(40));
        assert_eq!(next_level(size(3, 640, 0, 0), 4, unbounded, level_bytes), Some(2_560));
        assert_eq!(next_level(size(4, 640, 0, 0), 4, unbounded, level_bytes), None);
        assert_eq!(next_level(size(1, usize::MAX / 2, 0, 0), 2, unbounded, level_bytes), None);
    }

    #[test]
    fn an_item_ceiling_sizes_the_last_level_to_reach_it_and_adds_none_past_it() {
        let ceiling = Ceiling { items: Some(1_000), bytes: None };
        let last = next_level(size(2, 40, 900, 0), MAX_LEVELS, ceiling, level_bytes).unwrap();
        assert_eq!(last, buckets_for(100).unwrap());
        assert_eq!(next_level(size(2, 40, 1_000, 0), MAX_LEVELS, ceiling, level_bytes), None);
        assert_eq!(next_level(size(2, 40, 1_001, 0), MAX_LEVELS, ceiling, level_bytes), None);
    }

    #[test]
    fn a_memory_ceiling_sizes_the_last_level_to_the_room_left_but_not_under_a_quarter() {
        let ceiling = |bytes| Ceiling { items: None, bytes: Some(bytes) };
        let at = |room| {
            next_level(size(2, 1_600, 0, 50_000), MAX_LEVELS, ceiling(50_000 + room), level_bytes)
        };
        assert_eq!(at(level_bytes(6_400)), Some(6_400), "room for the growth factor's size");
        let sized = at(level_bytes(1_000)).unwrap();
        assert!(level_bytes(sized) <= level_bytes(1_000) && sized > 1_000 - 1_000 / 32, "{sized}");
        let quarter = at(level_bytes(400 + 400 / 16)).expect("room for a quarter of the newest");
        assert!((400..=425).contains(&quarter), "{quarter}");
        assert_eq!(at(level_bytes(400) - 1), None, "room under a quarter of the newest");
        assert_eq!(
            next_level(size(2, 1_600, 0, 50_001), MAX_LEVELS, ceiling(50_000), level_bytes),
            None
        );
    }

    #[test]
    fn impossible_capacities_are_refused() {
        assert_eq!(buckets_for(usize::MAX), None);
        assert_eq!(buckets_for(usize::MAX / 2), None);
    }
}
