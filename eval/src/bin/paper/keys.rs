//! Keys and query streams.
//!
//! Like the paper's setup, items are random 64-bit integers. Key number `i` is `mix(i)`, a
//! bijection, so keys never repeat and a set of inserted keys is just a set of indices: a few
//! ranges, cheap to remember and to sample from, instead of hundreds of megabytes of vectors.

use std::ops::Range;

use lockfree_cuckoo_eval::keys::mix;
use rand::distr::{Bernoulli, Distribution};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// First index of the keys that are never inserted: inserted keys use indices below it, and
/// `mix` is a bijection, so a query drawn from here is a true negative.
const ABSENT_BASE: u64 = 1 << 62;

/// The key with index `index`.
#[inline]
pub(crate) fn key(index: u64) -> u64 {
    mix(index)
}

/// The indices of the keys a filter holds, in insertion order, as a few ranges: an insert
/// phase adds one range per thread (a prefix of its share when it met a refusal), and removes
/// take from the front.
#[derive(Debug, Default, Clone)]
pub(crate) struct KeySet {
    ranges: Vec<Range<u64>>,
    len: u64,
}

impl KeySet {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn push(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        self.len += range.end - range.start;
        match self.ranges.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.ranges.push(range),
        }
    }

    /// The index of the `n`th key held, `n < len`.
    fn nth(&self, mut n: u64) -> u64 {
        for range in &self.ranges {
            let size = range.end - range.start;
            if n < size {
                return range.start + n;
            }
            n -= size;
        }
        unreachable!("nth({n}) past the end of a key set of {}", self.len)
    }

    /// Removes the `count` oldest keys from the set and returns their index ranges.
    pub(crate) fn take_front(&mut self, mut count: u64) -> Vec<Range<u64>> {
        let mut taken = Vec::new();
        while count > 0 && !self.ranges.is_empty() {
            let first = &mut self.ranges[0];
            let size = (first.end - first.start).min(count);
            taken.push(first.start..first.start + size);
            first.start += size;
            count -= size;
            self.len -= size;
            if first.is_empty() {
                self.ranges.remove(0);
            }
        }
        taken
    }
}

/// Generates lookup keys: positives drawn uniformly from a [`KeySet`], negatives from keys
/// never inserted. Queries are generated before the clock starts, as the paper pre-generates its
/// items, so the timings measure the filter and not the generator.
#[derive(Debug)]
pub(crate) struct Queries {
    /// Seeded, so every run (and every filter) is asked the same questions; `StdRng` gives the
    /// same stream on every platform, and generation is not timed, so its speed does not matter.
    rng: StdRng,
    /// Next never-inserted index; negatives never repeat, so each false positive is a new one.
    next_absent: u64,
}

impl Queries {
    pub(crate) fn new(seed: u64) -> Self {
        Self { rng: StdRng::seed_from_u64(seed), next_absent: ABSENT_BASE }
    }

    /// `count` queries, each positive with probability `positive` (0.0 to 1.0), in random order.
    pub(crate) fn mixed(&mut self, held: &KeySet, count: usize, positive: f64) -> Vec<u64> {
        // Exact at 0.0 and 1.0.
        let coin = Bernoulli::new(positive).expect("a fraction from 0.0 to 1.0");
        (0..count)
            .map(|_| {
                if coin.sample(&mut self.rng) && held.len() > 0 {
                    key(held.nth(self.rng.random_range(0..held.len())))
                } else {
                    self.next_absent += 1;
                    key(self.next_absent)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_sets_merge_and_take_in_order() {
        let mut set = KeySet::default();
        set.push(0..10);
        set.push(10..20);
        set.push(30..35);
        assert_eq!(set.len(), 25);
        assert_eq!(set.nth(19), 19);
        assert_eq!(set.nth(20), 30);
        assert_eq!(set.take_front(22), vec![0..20, 30..32]);
        assert_eq!(set.len(), 3);
        assert_eq!(set.take_front(10), vec![32..35]);
        assert_eq!(set.len(), 0);
    }

    #[test]
    fn queries_respect_the_positive_fraction() {
        let mut set = KeySet::default();
        set.push(0..1000);
        let present: std::collections::HashSet<u64> = (0..1000).map(key).collect();
        let mut queries = Queries::new(1);
        assert!(queries.mixed(&set, 1000, 1.0).iter().all(|k| present.contains(k)));
        assert!(queries.mixed(&set, 1000, 0.0).iter().all(|k| !present.contains(k)));
        let half = queries.mixed(&set, 10_000, 0.5).iter().filter(|k| present.contains(k)).count();
        assert!((4500..5500).contains(&half), "{half}");
    }
}
