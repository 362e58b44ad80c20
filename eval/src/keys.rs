//! Keys and query streams every measurement shares.
//!
//! Key `seq` of a key space is [`mix`] of the space and the sequence number: `mix` is a
//! bijection, so distinct `(space, seq)` pairs give distinct keys, and a key of the
//! [`ABSENT`] space is never one a benchmark inserted. Keys are named this way, not drawn from
//! a generator, so that no set of keys has to be stored to know what was inserted; the query
//! streams, which are random, come from `rand`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The splitmix64 finaliser: a bijection on `u64` with good avalanche, so distinct inputs give
/// distinct keys.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key `seq` of key space `space` (0: the inserted set; 1: never inserted; 16..: per-thread).
#[inline]
pub fn key(space: u64, seq: u64) -> u64 {
    mix(space << 48 | seq)
}

/// Key space of the items a benchmark inserts up front.
pub const PRESENT: u64 = 0;
/// Key space of items no benchmark ever inserts.
pub const ABSENT: u64 = 1;
/// First key space of the per-thread keys in the mixed workload.
pub const THREAD_BASE: u64 = 16;

/// A query stream of `len` keys (a power of two), `percent_positive` of them drawn uniformly
/// from the first `present` keys of [`PRESENT`], the rest from [`ABSENT`], in random order. The
/// same `seed` gives the same stream (on every platform, with the locked `rand` version).
pub fn queries(len: usize, present: usize, percent_positive: u32, seed: u64) -> Vec<u64> {
    assert!(len.is_power_of_two());
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len as u64)
        .map(|i| {
            if rng.random_ratio(percent_positive, 100) {
                key(PRESENT, rng.random_range(0..present as u64))
            } else {
                key(ABSENT, i + (seed << 32))
            }
        })
        .collect()
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
}
