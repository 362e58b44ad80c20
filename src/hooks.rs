//! The hooks of feature `test-hooks`, unstable and hidden from the documentation: what this
//! crate's tests, loom models and evaluation reach inside a filter for. Among them, items aimed at
//! chosen buckets ([`CuckooFilter::crowding_items`]): what anyone who knows a filter's key
//! computes from `FORMAT.md` to crowd a few buckets, for the tests that show the filter holds
//! against it (README, "Security").

use core::hash::BuildHasher;

use crate::bucket::{BucketEncoding, Layout};
use crate::builder::Builder;
use crate::error::InsertError;
use crate::filter::CuckooFilter;
use crate::fingerprint::Fingerprint;
use crate::hash;
use crate::hasher::DefaultHashBuilder;
use crate::table::Table;
use crate::windowed::WindowedFilter;

impl<S: BuildHasher, E: Layout> CuckooFilter<S, E> {
    /// **Unstable, for tests** (feature `test-hooks`): a hash whose first bucket is `bucket`
    /// and whose fingerprint is `fingerprint` (in `1..=0xFFFE`) in level 0, for use with the
    /// `*_hash` methods.
    #[doc(hidden)]
    pub fn hash_for_slot(&self, bucket: usize, fingerprint: u32) -> u64 {
        self.hash_for_slot_in_level(0, bucket, fingerprint)
    }

    /// **Unstable, for tests** (feature `test-hooks`): [`hash_for_slot`](Self::hash_for_slot)
    /// in level `level` (0 the oldest) of a grown filter.
    ///
    /// # Panics
    ///
    /// If the filter has no such level, or `fingerprint` is 0 or 0xFFFF.
    #[doc(hidden)]
    pub fn hash_for_slot_in_level(&self, level: usize, bucket: usize, fingerprint: u32) -> u64 {
        let fingerprint = test_fingerprint(fingerprint);
        self.levels().level(level).hash_for_slot(bucket, fingerprint)
    }

    /// **Unstable, for tests** (feature `test-hooks`): the first bucket, second bucket and
    /// fingerprint of a hash in level 0.
    #[doc(hidden)]
    pub fn slots_for_hash(&self, hash: u64) -> (usize, usize, u32) {
        self.slots_for_hash_in_level(0, hash)
    }

    /// **Unstable, for tests** (feature `test-hooks`): [`slots_for_hash`](Self::slots_for_hash)
    /// in level `level` (0 the oldest) of a grown filter.
    ///
    /// # Panics
    ///
    /// If the filter has no such level.
    #[doc(hidden)]
    pub fn slots_for_hash_in_level(&self, level: usize, hash: u64) -> (usize, usize, u32) {
        let s = self.levels().level(level).slots(hash::mix(hash));
        (s.first, s.second, s.fingerprint.get())
    }

    /// **Unstable, for tests** (feature `test-hooks`): how many copies of `fingerprint` bucket
    /// `bucket` of level 0 holds (a plain read).
    #[doc(hidden)]
    pub fn fingerprint_count(&self, bucket: usize, fingerprint: u32) -> usize {
        self.fingerprint_count_in_level(0, bucket, fingerprint)
    }

    /// **Unstable, for tests** (feature `test-hooks`):
    /// [`fingerprint_count`](Self::fingerprint_count) in level `level` (0 the oldest) of a grown
    /// filter.
    ///
    /// # Panics
    ///
    /// If the filter has no such level, or `fingerprint` is 0 or 0xFFFF.
    #[doc(hidden)]
    pub fn fingerprint_count_in_level(
        &self,
        level: usize,
        bucket: usize,
        fingerprint: u32,
    ) -> usize {
        let fingerprint = test_fingerprint(fingerprint);
        self.levels().level(level).fingerprint_count(bucket, fingerprint)
    }

    /// **Unstable, for tests** (feature `test-hooks`): [`insert_hash`](Self::insert_hash) in a
    /// growable filter as a thread makes it whose first look at the levels was taken when the
    /// filter had `levels` levels (1: level 0 alone), and which another thread's growths have
    /// overtaken since.
    ///
    /// # Errors
    ///
    /// As [`insert_hash`](Self::insert_hash).
    ///
    /// # Panics
    ///
    /// If the filter is fixed, or `levels` is 0 or more than it has.
    #[doc(hidden)]
    pub fn insert_hash_as_of(&self, levels: usize, hash: u64) -> Result<(), InsertError> {
        assert!(levels > 0, "a filter has at least one level");
        self.levels().insert_as_of(levels, hash::mix(hash))
    }

    /// **Unstable, for tests** (feature `test-hooks`): adds a level to a growable filter now, as
    /// an insert that finds the newest level full does. Returns whether a level newer than the
    /// one this call saw exists afterwards (false for a fixed filter or at the ceiling).
    #[doc(hidden)]
    pub fn grow_now(&self) -> bool {
        self.levels().grow_now()
    }
}

impl<S, E: Layout> Builder<S, E> {
    /// **Unstable, for tests** (feature `test-hooks`): use exactly `buckets` buckets (at least
    /// 1), overriding the capacity.
    #[doc(hidden)]
    pub fn bucket_count(mut self, buckets: usize) -> Self {
        self.buckets = Some(buckets.max(1));
        self
    }

    /// **Unstable, for tests** (feature `test-hooks`): validation attempts a lookup makes
    /// before answering `true` without proof (default 8).
    #[doc(hidden)]
    pub fn lookup_retries(mut self, retries: u32) -> Self {
        self.lookup_retries = retries;
        self
    }
}

impl<S: BuildHasher> WindowedFilter<S> {
    /// **Unstable, for tests** (feature `test-hooks`): [`insert`](Self::insert) of an item by
    /// its hash.
    #[doc(hidden)]
    pub fn insert_hash(&self, hash: u64) -> Result<(), InsertError> {
        self.insert_mixed(hash::mix(hash))
    }

    /// **Unstable, for tests** (feature `test-hooks`): [`contains`](Self::contains) of an item
    /// by its hash.
    #[doc(hidden)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.contains_mixed(hash::mix(hash))
    }

    /// **Unstable, for tests** (feature `test-hooks`): [`remove`](Self::remove) of an item by
    /// its hash.
    #[doc(hidden)]
    pub fn remove_hash(&self, hash: u64) -> bool {
        self.remove_mixed(hash::mix(hash))
    }

    /// **Unstable, for tests** (feature `test-hooks`): a hash whose first bucket is `bucket`
    /// and whose 14-bit fingerprint is `fingerprint` (in `1..=0x3FFE`).
    #[doc(hidden)]
    pub fn hash_for_slot(&self, bucket: usize, fingerprint: u32) -> u64 {
        assert!((1..0x3FFF).contains(&fingerprint), "a windowed fingerprint is 14 bits");
        self.table().hash_for_slot(bucket, test_fingerprint(fingerprint))
    }

    /// **Unstable, for tests** (feature `test-hooks`): the first bucket, second bucket and
    /// 14-bit fingerprint of a hash.
    #[doc(hidden)]
    pub fn slots_for_hash(&self, hash: u64) -> (usize, usize, u32) {
        let s = self.table().slots(hash::mix(hash));
        (s.first, s.second, s.fingerprint.get() & 0x3FFF)
    }

    /// **Unstable, for tests** (feature `test-hooks`): starts the next epoch if it is due, as
    /// an insert does, leaving its sweep to others. Whether it started it.
    #[doc(hidden)]
    pub fn start_epoch_unswept(&self) -> bool {
        self.epochs().try_advance()
    }

    /// **Unstable, for tests** (feature `test-hooks`): sweeps one claim of up to `buckets`
    /// buckets of the current epoch's dead tag, as an insert does. Whether it claimed any.
    #[doc(hidden)]
    pub fn sweep_claim(&self, buckets: usize) -> bool {
        self.sweep_some(buckets)
    }
}

/// A test hook's fingerprint argument, checked.
fn test_fingerprint(value: u32) -> crate::fingerprint::Fingerprint {
    crate::fingerprint::Fingerprint::from_entry(value)
        .expect("a fingerprint is below 2^17, with its low 16 bits in 1..=0xFFFE")
}

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
    #[doc(hidden)]
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
