//! Items aimed at chosen buckets (a test hook): what anyone who knows a filter's key computes
//! from `FORMAT.md` to crowd a few buckets, for the tests that show the filter holds against it
//! (README, "Security").

use crate::bucket::{BucketEncoding, Layout};
use crate::filter::CuckooFilter;
use crate::fingerprint::Fingerprint;
use crate::hash;
use crate::hasher::DefaultHashBuilder;
use crate::table::Table;

/// Items a triangle of buckets holds: four lanes in each of three buckets.
const TRIANGLE_LANES: u64 = 12;

impl<E: Layout> CuckooFilter<DefaultHashBuilder, E> {
    /// **Unstable, for tests** (feature `test-hooks`): 13 distinct 16-byte items, crafted with
    /// this filter's key, that crowd level `level` (0 the oldest): three fingerprints whose
    /// bucket pairs close a triangle of three buckets, four items each, fill its twelve lanes,
    /// and every fingerprint in it can only move within it, so the 13th item (another of the
    /// first fingerprint's) finds no free lane on any path. The triangle's buckets are empty when
    /// it is chosen (the attacker knows what it inserted); `round` picks another one.
    ///
    /// # Panics
    ///
    /// If the filter has no such level, or its level has fewer than three buckets.
    #[cfg_attr(docsrs, doc(cfg(feature = "test-hooks")))]
    pub fn crowding_items(&self, level: usize, round: u64) -> Vec<[u8; 16]> {
        let hashes = crowding_hashes(self.levels().level(level), round);
        hashes.into_iter().map(|hash| self.hasher().item_for_hash(hash)).collect()
    }
}

/// The hashes of [`CuckooFilter::crowding_items`] in `table`.
fn crowding_hashes<E: BucketEncoding>(table: &Table<E>, round: u64) -> Vec<u64> {
    let buckets = table.bucket_count();
    assert!(buckets >= 3, "a triangle needs three buckets");
    let m = buckets as u64;
    // `c(f)` of `FORMAT.md`: the sum of a fingerprint's two buckets, modulo `m`.
    let centre = |f: Fingerprint| hash::alt_index(0, f, buckets) as u64;
    let fingerprints = (0u64..).map(|k| {
        let f = (round.wrapping_mul(0x9E37_79B9).wrapping_add(k.wrapping_mul(7919))) % 0xFFFD;
        Fingerprint::of(f as u32 + 1)
    });
    let mut candidates = fingerprints.clone().zip(fingerprints.clone().skip(1));
    // Buckets i, j, k with i + j = c(f1), j + k = c(f2), k + i = c(f3), all modulo m.
    let (prints, [i, j, k]) = loop {
        let ((f1, f2), f3) = (candidates.next().expect("endless"), fingerprints_after(round));
        let (c1, c2, c3) = (centre(f1), centre(f2), centre(f3));
        let twice_i = (c1 + c3 + m - c2) % m;
        let i = if m % 2 == 1 {
            twice_i * m.div_ceil(2) % m
        } else if twice_i % 2 == 0 {
            twice_i / 2
        } else {
            continue;
        };
        let (j, k) = ((c1 + m - i) % m, (c3 + m - i) % m);
        let empty = [i, j, k].iter().all(|&b| table.occupied(b as usize) == 0);
        if i != j && j != k && k != i && f1 != f2 && f2 != f3 && f1 != f3 && empty {
            break ([f1, f2, f3], [i, j, k].map(|b| b as usize));
        }
    };
    let edges = [(prints[0], i), (prints[1], j), (prints[2], k)];
    (0..=TRIANGLE_LANES)
        .map(|n| {
            let (f, first) = edges[(n % 3) as usize];
            let nth = n / 3;
            hash::compose_nth::<E>(first, f, buckets, nth)
        })
        .collect()
}

/// A third fingerprint for `round`'s triangles, away from the pairs tried with it.
fn fingerprints_after(round: u64) -> Fingerprint {
    Fingerprint::of((round.wrapping_mul(31_337) % 0x7FFF) as u32 + 0x8000)
}
