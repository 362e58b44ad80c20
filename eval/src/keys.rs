//! The one key scheme every measurement uses, and its query streams.
//!
//! Key `seq` of key space `space` is [`mix`] of the two packed into one word (16 bits of space,
//! 48 of sequence number): `mix` is a bijection, so distinct `(space, seq)` pairs give distinct
//! keys, and a key of the [`ABSENT`] space is never one a tool inserted. Keys are named this
//! way, not drawn from a generator, so that no set of keys has to be stored to know what was
//! inserted: a [`KeySet`] of sequence numbers, a few ranges, stands for any number of keys. A
//! seed ([`seeded_key`]) picks another such key set, for runs that should not see the same keys.
//! The query streams, which are random, come from `rand`.

use std::ops::Range;

use rand::distr::{Bernoulli, Distribution};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// SplitMix64's increment, the golden ratio in 64 bits: odd, so stepping or multiplying by it is
/// a bijection.
pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One step of SplitMix64 from state `z`: a bijection on `u64` with good avalanche, so distinct
/// inputs give distinct keys.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 as a generator, for hot loops that need a cheap random number and no `rand`
/// state: output `i` is [`mix`] of the seed plus `i` steps.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let out = mix(self.0);
        self.0 = self.0.wrapping_add(GAMMA);
        out
    }
}

/// Key `seq` of key space `space` (see [`PRESENT`], [`ABSENT`], [`FILLER`], [`THREAD_BASE`]).
#[inline]
pub fn key(space: u64, seq: u64) -> u64 {
    seeded_key(0, space, seq)
}

/// Key `seq` of key space `space` in the key set of `seed` (seed 0 is [`key`]'s). Within one
/// seed, distinct `(space, seq)` pairs give distinct keys; `space` is below 2^16, `seq` below
/// 2^48.
#[inline]
pub fn seeded_key(seed: u64, space: u64, seq: u64) -> u64 {
    debug_assert!(space < 1 << 16 && seq < 1 << 48, "space {space}, seq {seq}");
    // Multiplying by an odd number maps seed 0 to 0 and keeps seeds apart; the XOR is a
    // bijection, so each seed's keys stay distinct.
    mix((space << 48 | seq) ^ seed.wrapping_mul(GAMMA))
}

/// Key space of the items a tool inserts up front.
pub const PRESENT: u64 = 0;
/// Key space of items no tool ever inserts.
pub const ABSENT: u64 = 1;
/// Key space of items inserted beside the [`PRESENT`] ones and removed again.
pub const FILLER: u64 = 2;
/// First key space of per-thread keys (`THREAD_BASE + thread`).
pub const THREAD_BASE: u64 = 16;

/// Sequence numbers of the [`PRESENT`] keys a filter holds, in insertion order, as a few
/// ranges: an insert phase adds one range per thread (a prefix of its share when it met a
/// refusal), and removes take from the front.
#[derive(Debug, Default, Clone)]
pub struct KeySet {
    ranges: Vec<Range<u64>>,
    len: u64,
}

impl From<Range<u64>> for KeySet {
    fn from(range: Range<u64>) -> Self {
        let mut set = Self::default();
        set.push(range);
        set
    }
}

impl KeySet {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        self.len += range.end - range.start;
        match self.ranges.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.ranges.push(range),
        }
    }

    /// The sequence number of the `n`th key held, `n < len`.
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

    /// Removes the `count` oldest keys from the set and returns their sequence ranges.
    pub fn take_front(&mut self, mut count: u64) -> Vec<Range<u64>> {
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

/// Generates lookup keys: positives drawn uniformly from a [`KeySet`] of [`PRESENT`] keys,
/// negatives from [`ABSENT`] keys that never repeat within a generator, so each false positive
/// is a new one. Queries are generated before any clock starts, so timings measure the filter
/// and not the generator.
#[derive(Debug)]
pub struct Queries {
    /// Seeded, so every run (and every filter) is asked the same questions; `StdRng` gives the
    /// same stream on every platform with the locked `rand` version.
    rng: StdRng,
    /// Next [`ABSENT`] sequence number.
    next_absent: u64,
}

impl Queries {
    /// A generator whose negatives start at [`ABSENT`] key `seed << 32`, so generators of
    /// different seeds (below 2^16) ask different negatives.
    pub fn new(seed: u64) -> Self {
        assert!(seed < 1 << 16, "query seeds are below 2^16");
        Self { rng: StdRng::seed_from_u64(seed), next_absent: seed << 32 }
    }

    /// `count` queries, each positive with probability `positive` (0.0 to 1.0), in random order.
    pub fn mixed(&mut self, held: &KeySet, count: usize, positive: f64) -> Vec<u64> {
        // Exact at 0.0 and 1.0.
        let coin = Bernoulli::new(positive).expect("a fraction from 0.0 to 1.0");
        (0..count)
            .map(|_| {
                if coin.sample(&mut self.rng) && !held.is_empty() {
                    key(PRESENT, held.nth(self.rng.random_range(0..held.len())))
                } else {
                    self.next_absent += 1;
                    key(ABSENT, self.next_absent)
                }
            })
            .collect()
    }
}

/// A query stream of `len` keys (a power of two, so tools can wrap an index with a mask),
/// `percent_positive` of them drawn uniformly from the first `present` keys of [`PRESENT`], the
/// rest from [`ABSENT`], in random order. The same `seed` gives the same stream.
pub fn queries(len: usize, present: usize, percent_positive: u32, seed: u64) -> Vec<u64> {
    assert!(len.is_power_of_two());
    let held = KeySet::from(0..present as u64);
    Queries::new(seed).mixed(&held, len, f64::from(percent_positive) / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_reproducible_and_respect_the_positive_share() {
        let stream = queries(1 << 12, 1000, 50, 7);
        assert_eq!(stream, queries(1 << 12, 1000, 50, 7));
        let present: std::collections::HashSet<u64> = (0..1000).map(|i| key(PRESENT, i)).collect();
        let hits = stream.iter().filter(|k| present.contains(k)).count();
        assert!((1800..2300).contains(&hits), "{hits}");
        assert!(queries(1 << 10, 1000, 0, 1).iter().all(|k| !present.contains(k)));
        assert!(queries(1 << 10, 1000, 100, 1).iter().all(|k| present.contains(k)));
    }

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
        assert!(set.is_empty());
    }

    #[test]
    fn negatives_never_repeat_and_seeds_keep_key_sets_apart() {
        let mut queries = Queries::new(1);
        let negatives = queries.mixed(&KeySet::from(0..1000), 10_000, 0.0);
        let distinct: std::collections::HashSet<u64> = negatives.iter().copied().collect();
        assert_eq!(distinct.len(), negatives.len());
        assert_eq!(seeded_key(0, PRESENT, 5), key(PRESENT, 5));
        assert_ne!(seeded_key(1, PRESENT, 5), key(PRESENT, 5));
        assert_ne!(seeded_key(1, PRESENT, 5), seeded_key(1, ABSENT, 5));
    }

    #[test]
    fn the_generator_is_splitmix64() {
        // The first output of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}
