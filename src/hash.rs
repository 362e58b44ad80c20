//! From an item's 64-bit hash to its fingerprint and its two buckets.
//!
//! The hash is first mixed ([`mix`]): hashers with weak low bits (FxHash, or a hasher that
//! returns an integer key as it is, or raw integers passed to `insert_hash`) would otherwise
//! collapse the fingerprints and the bucket choice, and the false-positive rate with them. The
//! mix is the SplitMix64 finaliser's structure with 32-bit shifts: two multiplies, so that every
//! bit of the fingerprint and of the bucket index depends on all 64 bits of the hash, and
//! sequential integers hashed to themselves give the false-positive rate of random hashes (one
//! multiply is not enough: it leaves them a lattice, measured at 0.55 to 0.8 times the random
//! rate, and with strided keys inserts fail). It is a bijection, so it loses nothing and
//! `compose` (a test hook) can invert it exactly.
//!
//! The bucket index comes from the high 48 bits of the mixed hash (multiply-shift "fastrange",
//! so any bucket count works) and the fingerprint from the low 16: disjoint bits, so two items
//! that share a fingerprint are no likelier to share a bucket ([`Fingerprint`] says which
//! values a fingerprint takes). A semi-sorted fingerprint also takes bit 16, the lowest bit of
//! the index's 48: it moves an item's bucket only when the index lands within one part in 2^48
//! of a bucket's edge, so the two stay independent in effect, and the index is the same in both
//! encodings. The second bucket is a reflection, `alt(i, f) = (c(f) - i) mod m`,
//! an involution for every `m`, not only powers of two.

use crate::bucket::BucketEncoding;
use crate::fingerprint::Fingerprint;

/// Where an item lives: its fingerprint and its two candidate buckets (equal for some items).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slots {
    pub(crate) fingerprint: Fingerprint,
    pub(crate) first: usize,
    pub(crate) second: usize,
}

/// The multipliers of [`mix`] (SplitMix64's), odd so that multiplying by them is invertible.
const MIX_1: u64 = 0xBF58_476D_1CE4_E5B9;
const MIX_2: u64 = 0x94D0_49BB_1331_11EB;

/// The inverse of an odd `a` modulo 2^64, by Newton's iteration: `a` is its own inverse modulo
/// 2^3, and each step doubles the correct low bits (3, 6, 12, 24, 48, 96).
#[cfg(any(test, feature = "test-hooks"))]
const fn inverse(a: u64) -> u64 {
    let mut x = a;
    let mut step = 0;
    while step < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        step += 1;
    }
    x
}

/// A hash with every output bit depending on every input bit: a bijection on `u64`, the inverse
/// of `unmix`. On a lookup's critical path: two multiplies and three xor-shifts.
#[inline]
pub(crate) const fn mix(mut hash: u64) -> u64 {
    hash ^= hash >> 32;
    hash = hash.wrapping_mul(MIX_1);
    hash ^= hash >> 32;
    hash = hash.wrapping_mul(MIX_2);
    hash ^ hash >> 32
}

/// The hash that [`mix`] maps to `mixed`: its steps undone in reverse order (a xor-shift by 32
/// is its own inverse).
#[cfg(any(test, feature = "test-hooks"))]
const fn unmix(mut mixed: u64) -> u64 {
    mixed ^= mixed >> 32;
    mixed = mixed.wrapping_mul(inverse(MIX_2));
    mixed ^= mixed >> 32;
    mixed = mixed.wrapping_mul(inverse(MIX_1));
    mixed ^ mixed >> 32
}

/// The first bucket of a mixed hash among `buckets`, from the bits above the fingerprint.
#[inline]
pub(crate) const fn index(mixed: u64, buckets: usize) -> usize {
    (((mixed >> 16) as u128 * buckets as u128) >> 48) as usize
}

/// The other bucket of the fingerprint found in bucket `i`: `alt(alt(i, f), f) == i`.
#[inline]
pub(crate) const fn alt_index(i: usize, fingerprint: Fingerprint, buckets: usize) -> usize {
    // Golden-ratio multiply spreads the 16 fingerprint bits over the word; fastrange reduces it.
    let mixed = (fingerprint.get() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let centre = ((mixed as u128 * buckets as u128) >> 64) as usize;
    // `centre - i`, plus `buckets` when that is negative, without a branch: the CPU would
    // mispredict one half the time. Both are below `isize::MAX`, so the difference's sign bit
    // says whether it wrapped.
    let difference = centre.wrapping_sub(i);
    let wrapped = ((difference as isize) >> (usize::BITS - 1)) as usize;
    difference.wrapping_add(buckets & wrapped)
}

/// The fingerprint and both buckets of a hash, in a table of `buckets` buckets.
#[cfg(test)]
pub(crate) fn slots<E: BucketEncoding>(hash: u64, buckets: usize) -> Slots {
    mixed_slots::<E>(mix(hash), buckets)
}

/// The fingerprint and both buckets of a mixed hash (`mix`) in a table of `buckets` buckets: the
/// one place hashes become slots. A growable filter mixes an item's hash once and takes its
/// slots in each level from it.
#[inline(always)]
pub(crate) fn mixed_slots<E: BucketEncoding>(mixed: u64, buckets: usize) -> Slots {
    let fingerprint = E::fingerprint(mixed);
    let first = index(mixed, buckets);
    Slots { fingerprint, first, second: alt_index(first, E::key(fingerprint), buckets) }
}

/// A hash whose first bucket is `bucket` and whose fingerprint is `fingerprint`.
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn compose<E: BucketEncoding>(
    bucket: usize,
    fingerprint: Fingerprint,
    buckets: usize,
) -> u64 {
    compose_nth::<E>(bucket, fingerprint, buckets, 0)
}

/// The `nth` hash (from 0) whose first bucket is `bucket` and whose fingerprint is
/// `fingerprint`, for `nth` below `2^48 / buckets - 1`: distinct items with the same slots.
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn compose_nth<E: BucketEncoding>(
    bucket: usize,
    fingerprint: Fingerprint,
    buckets: usize,
    nth: u64,
) -> u64 {
    // The 48-bit values that fastrange maps to `bucket`, from the smallest, whose bits under the
    // fingerprint (none for 16-bit fingerprints, bit 16 for 17) are the fingerprint's.
    let shared = E::FINGERPRINT_BITS.saturating_sub(16);
    let above = u64::from(fingerprint.get() >> 16);
    let first = ((bucket as u128) << 48).div_ceil(buckets as u128) as u64;
    let aligned = first + (above.wrapping_sub(first) & ((1 << shared) - 1));
    let high = aligned + (nth << shared);
    unmix(high << 16 | u64::from(fingerprint.get() & 0xFFFF))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::{plain::Plain, semi_sorted::SemiSorted};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    const SIZES: [usize; 14] = [1, 2, 3, 4, 5, 7, 8, 9, 97, 255, 256, 257, 65_537, 1_000_003];

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn mix_is_a_bijection_undone_by_unmix() {
        assert_eq!(MIX_1.wrapping_mul(inverse(MIX_1)), 1);
        assert_eq!(MIX_2.wrapping_mul(inverse(MIX_2)), 1);
        let mut rng = StdRng::seed_from_u64(4);
        let edges = [0, 1, u64::MAX, 1 << 63, 0xFFFF, 0xFFFF_FFFF, 0xFFFF_FFFF_0000_0000];
        for h in edges.into_iter().chain((0..100_000).map(|_| rng.random())) {
            assert_eq!(unmix(mix(h)), h, "{h:#x}");
            assert_eq!(mix(unmix(h)), h, "{h:#x}");
        }
    }

    /// The test vectors of `FORMAT.md`: the mapping is part of the snapshot format.
    #[test]
    fn mix_and_slots_match_the_format_specification() {
        let vectors = [
            (0, 0, 1, 0),
            (1, 0x9364_9591_28E9_190D, 0x190D, 575),
            (2, 0x1398_1938_6483_0000, 1, 76),
            (0x0123_4567_89AB_CDEF, 0x4ACB_8F78_3C23_F41C, 0xF41C, 292),
            (u64::MAX, 0xA937_D212_3A01_043F, 0x043F, 661),
        ];
        for (hash, mixed, f, first) in vectors {
            assert_eq!(mix(hash), mixed, "{hash:#x}");
            let s = slots::<Plain>(hash, 1000);
            assert_eq!((s.fingerprint.get(), s.first), (f, first), "{hash:#x}");
            // The semi-sorted encoding adds the mixed hash's bit 16 and keeps the index.
            let s = slots::<SemiSorted>(hash, 1000);
            let wide = f | (mixed & 0x1_0000) as u32;
            assert_eq!((s.fingerprint.get(), s.first), (wide, first), "{hash:#x}");
        }
    }

    /// Every input bit must reach every fingerprint bit and the high index bits (the ones
    /// fastrange uses) with chance one half, or weak hashers would collapse them.
    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn every_input_bit_flips_every_fingerprint_and_high_index_bit_half_the_time() {
        let trials = 10_000;
        let mut flips = [[0u32; 64]; 64];
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..trials {
            let h: u64 = rng.random();
            for (bit, counts) in flips.iter_mut().enumerate() {
                let diff = mix(h) ^ mix(h ^ 1 << bit);
                for (out, count) in counts.iter_mut().enumerate() {
                    *count += (diff >> out & 1) as u32;
                }
            }
        }
        for (bit, counts) in flips.iter().enumerate() {
            for out in (0..16).chain(40..64) {
                let p = f64::from(counts[out]) / f64::from(trials);
                assert!((0.45..0.55).contains(&p), "input bit {bit} flips bit {out} with {p:.3}");
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn alt_is_an_involution_within_range_for_every_size() {
        for m in SIZES {
            let prints = (1..0xFFFF).step_by(97).chain([1, 0xFFFE, 0x1_0001, 0x1_FFFE]);
            for f in prints.map(Fingerprint::of) {
                for i in [0, m / 2, m - 1] {
                    let j = alt_index(i, f, m);
                    assert!(j < m, "alt({i}, {f:?}) = {j} out of {m}");
                    assert_eq!(alt_index(j, f, m), i, "m={m} f={f:?} i={i}");
                }
            }
        }
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..100_000 {
            let m = rng.random_range(1..1 << 30);
            let i = rng.random_range(0..m);
            let f = Fingerprint::of(rng.random_range(1..0xFFFF) | rng.random_range(0..2) << 16);
            let j = alt_index(i, f, m);
            assert!(j < m);
            assert_eq!(alt_index(j, f, m), i);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn index_stays_in_range_and_spreads_evenly() {
        for m in SIZES {
            assert_eq!(index(0, m), 0);
            assert_eq!(index(u64::MAX, m), m - 1);
        }
        let m = 10;
        let mut counts = [0u32; 10];
        let mut rng = StdRng::seed_from_u64(2);
        for _ in 0..100_000 {
            counts[index(rng.random(), m)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    fn compose_round_trips_through_slots<E: BucketEncoding>(prints: &[u32]) {
        for m in SIZES {
            for bucket in [0, m / 3, m - 1] {
                for &f in prints {
                    let f = Fingerprint::of(f);
                    for nth in 0..3 {
                        let hash = compose_nth::<E>(bucket, f, m, nth);
                        let s = slots::<E>(hash, m);
                        assert_eq!((s.first, s.fingerprint), (bucket, f), "m={m} nth={nth}");
                        assert_eq!(s.second, alt_index(bucket, f, m));
                        assert_ne!(hash, compose_nth::<E>(bucket, f, m, nth + 1));
                    }
                }
            }
        }
    }

    #[test]
    fn compose_round_trips_through_slots_in_both_encodings() {
        compose_round_trips_through_slots::<Plain>(&[1, 2, 0x8000, 0xFFFE]);
        compose_round_trips_through_slots::<SemiSorted>(&[1, 0x8000, 0x1_0001, 0x1_FFFE]);
    }

    /// If the index and the fingerprint shared bits, items in the same bucket would share
    /// fingerprints more often than chance and the false-positive rate would rise. Count pairs
    /// of random hashes that land in the same bucket and compare their fingerprint agreement
    /// with the chance that independence predicts: the sum of the squared probabilities of the
    /// fingerprints, 1/65,532 (`fingerprint`'s module), or 1/131,064 for semi-sorted ones, whose
    /// 17th bit is also the index's lowest.
    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn index_and_fingerprint_are_independent() {
        index_and_fingerprint_are_independent_in::<Plain>(65_532.0);
        index_and_fingerprint_are_independent_in::<SemiSorted>(131_064.0);
    }

    fn index_and_fingerprint_are_independent_in<E: BucketEncoding>(values: f64) {
        let buckets = 1 << 10;
        let mut by_bucket = vec![Vec::new(); buckets];
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..300_000 {
            let s = slots::<E>(rng.random(), buckets);
            by_bucket[s.first].push(s.fingerprint);
        }
        let (mut pairs, mut equal) = (0u64, 0u64);
        for prints in &by_bucket {
            for (a, x) in prints.iter().enumerate() {
                for y in &prints[a + 1..] {
                    pairs += 1;
                    equal += u64::from(x == y);
                }
            }
        }
        let expected = pairs as f64 / values;
        let ratio = equal as f64 / expected;
        assert!((0.8..1.2).contains(&ratio), "{equal} equal of {pairs} pairs: {ratio:.3}x chance");
    }
}
