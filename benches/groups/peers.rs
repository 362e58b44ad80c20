//! The filters we compare against, behind two small traits, plus the key streams every benchmark
//! shares. Used by the criterion benches (`benches/filter.rs`) and by `examples/peers.rs`.
//!
//! - [`Local`]: single-threaded use; inserts and removes take `&mut self`, so a single-threaded
//!   peer pays no lock in the single-thread benchmarks.
//! - [`Shared`]: concurrent use through `&self`; single-threaded peers sit behind a `RwLock`.

#![allow(dead_code)]

use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::RwLock;

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder};

/// `cuckoofilter`'s hasher parameter for its ahash variant.
pub(crate) type AHasher = ahash::AHasher;

/// The splitmix64 finaliser: a bijection on `u64`, so distinct inputs give distinct keys.
#[inline]
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key `seq` of key space `space` (0: the inserted set; 1: never inserted; 2..: per-thread).
#[inline]
pub(crate) fn key(space: u64, seq: u64) -> u64 {
    mix(space << 48 | seq)
}

/// Key space of the items a benchmark inserts up front.
pub(crate) const PRESENT: u64 = 0;
/// Key space of items no benchmark ever inserts.
pub(crate) const ABSENT: u64 = 1;
/// First key space of the per-thread keys in the mixed workload.
pub(crate) const THREAD_BASE: u64 = 16;

/// A query stream of `len` keys (a power of two), `percent_positive` of them from the first
/// `present` keys of [`PRESENT`], the rest from [`ABSENT`], shuffled.
pub(crate) fn queries(len: usize, present: usize, percent_positive: u32, seed: u64) -> Vec<u64> {
    assert!(len.is_power_of_two());
    let mut rng = seed;
    (0..len as u64)
        .map(|i| {
            rng = mix(rng ^ i);
            if (rng % 100) < u64::from(percent_positive) {
                key(PRESENT, mix(rng) % present as u64)
            } else {
                key(ABSENT, i + (seed << 32))
            }
        })
        .collect()
}

/// A filter used from one thread.
pub(crate) trait Local {
    /// Display name, as used in benchmark ids and tables.
    fn name(&self) -> &'static str;
    /// Inserts `key`; false when the filter refused it.
    fn insert(&mut self, key: u64) -> bool;
    /// Whether `key` may be present.
    fn contains(&self, key: u64) -> bool;
    /// Removes `key`; peers without removal return false.
    fn remove(&mut self, key: u64) -> bool;
    /// Whether [`remove`](Self::remove) is supported.
    fn removes(&self) -> bool {
        true
    }
    /// Bytes the filter occupies, from its own API where it has one (see each impl).
    fn bytes(&self) -> usize;
    /// Inserts `PRESENT` keys `0..items` from empty; returns how many were refused.
    fn fill(&mut self, items: usize) -> usize {
        (0..items as u64).filter(|&i| !self.insert(key(PRESENT, i))).count()
    }
}

/// A filter shared by threads through `&self`.
pub(crate) trait Shared: Sync {
    /// Display name.
    fn name(&self) -> &'static str;
    /// Inserts `key`; false when refused.
    fn insert(&self, key: u64) -> bool;
    /// Whether `key` may be present.
    fn contains(&self, key: u64) -> bool;
    /// Removes `key`.
    fn remove(&self, key: u64) -> bool;
}

// ---------------------------------------------------------------------------------------------
// lockfree-cuckoo

/// Ours.
pub(crate) struct Ours(pub(crate) CuckooFilter);

impl Ours {
    pub(crate) fn new(capacity: usize) -> Self {
        Self(CuckooFilter::with_capacity(capacity))
    }
}

impl Local for Ours {
    fn bytes(&self) -> usize {
        self.0.memory_usage()
    }
    fn name(&self) -> &'static str {
        "lockfree-cuckoo"
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

impl Shared for Ours {
    fn name(&self) -> &'static str {
        "lockfree-cuckoo"
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

// ---------------------------------------------------------------------------------------------
// cuckoofilter 0.5 (single-threaded, 8-bit fingerprints, power-of-two table)

/// `cuckoofilter::CuckooFilter<H>`; `RwLock`-wrapped for [`Shared`].
pub(crate) struct Cf<H> {
    pub(crate) inner: cuckoofilter::CuckooFilter<H>,
    name: &'static str,
}

/// `cuckoofilter` with its default hasher (SipHash-1-3 via `std`'s `DefaultHasher`).
pub(crate) type CfSip = Cf<std::collections::hash_map::DefaultHasher>;
/// `cuckoofilter` with `ahash::AHasher`.
pub(crate) type CfAhash = Cf<AHasher>;

impl CfSip {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { inner: cuckoofilter::CuckooFilter::with_capacity(capacity), name: "cuckoofilter" }
    }
}

impl CfAhash {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: cuckoofilter::CuckooFilter::with_capacity(capacity),
            name: "cuckoofilter+ahash",
        }
    }
}

impl<H: std::hash::Hasher + Default> Local for Cf<H> {
    fn bytes(&self) -> usize {
        self.inner.memory_usage()
    }
    fn name(&self) -> &'static str {
        self.name
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.inner.add(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.inner.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.inner.delete(&key)
    }
}

/// A single-threaded peer behind a `RwLock`: reads share the lock, writes take it exclusively.
pub(crate) struct Locked<T>(pub(crate) RwLock<T>);

impl<T: Local + Send + Sync> Shared for Locked<T> {
    fn name(&self) -> &'static str {
        match self.0.read().unwrap().name() {
            "cuckoofilter" => "RwLock<cuckoofilter>",
            "cuckoofilter+ahash" => "RwLock<cuckoofilter+ahash>",
            _ => "RwLock<peer>",
        }
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.write().unwrap().insert(key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.read().unwrap().contains(key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.write().unwrap().remove(key)
    }
}

// ---------------------------------------------------------------------------------------------
// atomic-cuckoo-filter 0.3 (concurrent; 16-bit fingerprints; global lock for evictions/removes)

/// `atomic_cuckoo_filter::CuckooFilter` with its defaults (16-bit fingerprints, 4 a bucket,
/// `std`'s `DefaultHasher`).
pub(crate) struct Acf(pub(crate) atomic_cuckoo_filter::CuckooFilter);

impl Acf {
    pub(crate) fn new(capacity: usize) -> Self {
        Self(atomic_cuckoo_filter::CuckooFilter::with_capacity(capacity))
    }
}

impl Local for Acf {
    /// Its table: `capacity()` slots of 16 bits (it has no memory API).
    fn bytes(&self) -> usize {
        self.0.capacity() * 2 + std::mem::size_of_val(&self.0)
    }
    fn name(&self) -> &'static str {
        "atomic-cuckoo-filter"
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

impl Shared for Acf {
    fn name(&self) -> &'static str {
        "atomic-cuckoo-filter"
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

// ---------------------------------------------------------------------------------------------
// fastbloom 0.17 AtomicBloomFilter (concurrent, no remove)

/// `fastbloom::AtomicBloomFilter` sized for `items` at false-positive rate `fp`, default hasher.
pub(crate) struct Bloom(pub(crate) fastbloom::AtomicBloomFilter);

impl Bloom {
    pub(crate) fn new(items: usize, fp: f64) -> Self {
        Self(fastbloom::AtomicBloomFilter::with_false_pos(fp).expected_items(items))
    }
}

impl Local for Bloom {
    fn bytes(&self) -> usize {
        self.0.num_bits() / 8 + std::mem::size_of_val(&self.0)
    }
    fn name(&self) -> &'static str {
        "fastbloom (atomic)"
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    fn remove(&mut self, _key: u64) -> bool {
        false
    }
    fn removes(&self) -> bool {
        false
    }
}

impl Shared for Bloom {
    fn name(&self) -> &'static str {
        "fastbloom (atomic)"
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    fn remove(&self, _key: u64) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// scalable_cuckoo_filter 0.5 (single-threaded, grows)

/// `scalable_cuckoo_filter::ScalableCuckooFilter<u64>` with its defaults but the initial capacity
/// and false-positive rate given.
pub(crate) struct Scalable(pub(crate) scalable_cuckoo_filter::ScalableCuckooFilter<u64>);

impl Scalable {
    pub(crate) fn new(capacity: usize, fp: f64) -> Self {
        Self(scalable_cuckoo_filter::ScalableCuckooFilter::new(capacity, fp))
    }
}

impl Local for Scalable {
    fn bytes(&self) -> usize {
        (self.0.bits() / 8) as usize + std::mem::size_of_val(&self.0)
    }
    fn name(&self) -> &'static str {
        "scalable_cuckoo_filter"
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

// ---------------------------------------------------------------------------------------------
// dashmap 6 DashSet<u64> (exact concurrent set, std RandomState)

/// `dashmap::DashSet<u64>` with its default hasher: the exact set a user might pick instead.
pub(crate) struct Dash(pub(crate) dashmap::DashSet<u64>);

impl Dash {
    pub(crate) fn new(capacity: usize) -> Self {
        Self(dashmap::DashSet::with_capacity(capacity))
    }
}

impl Local for Dash {
    /// Estimated (no memory API): hashbrown keeps capacity * 8/7 buckets of an 8-byte entry
    /// and a control byte.
    fn bytes(&self) -> usize {
        self.0.capacity() * 8 / 7 * 9
    }
    fn name(&self) -> &'static str {
        "DashSet<u64>"
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(&key).is_some()
    }
}

impl Shared for Dash {
    fn name(&self) -> &'static str {
        "DashSet<u64>"
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key).is_some()
    }
}

// ---------------------------------------------------------------------------------------------
// The two-read floor

/// The floor under any two-bucket lookup: hash the key with our hasher, read two pseudo-random
/// words of an array as large as our table, combine them. No validation, no fingerprint logic.
pub(crate) struct Floor {
    words: Box<[u64]>,
    hasher: DefaultHashBuilder,
}

/// Keys [`Floor::contains_batch`] hashes and prefetches ahead of the one it reads.
pub(crate) const FLOOR_BATCH: usize = 16;

impl Floor {
    /// An array of `words` words, each written (so no page is a shared zero page).
    pub(crate) fn new(words: usize) -> Self {
        let words: Box<[u64]> = (0..words as u64).map(|i| mix(i) | 1).collect();
        Self { words, hasher: DefaultHashBuilder::default() }
    }

    #[inline]
    fn indexes(&self, key: u64) -> (usize, usize, u64) {
        let h = self.hasher.hash_one(key);
        let n = self.words.len() as u128;
        let a = ((u128::from(h >> 16) * n) >> 48) as usize;
        let b = ((u128::from(h.wrapping_mul(0x9E37_79B9_7F4A_7C15)) * n) >> 64) as usize;
        (a, b, h & 0xFFFF)
    }

    /// Hash, two reads, and a lane-free comparison so the reads cannot be optimised away.
    #[inline]
    pub(crate) fn contains(&self, key: u64) -> bool {
        let (a, b, f) = self.indexes(key);
        (self.words[a] ^ self.words[b]) & 0xFFFF == f
    }

    /// [`contains`](Self::contains) over a slice, prefetching [`FLOOR_BATCH`] keys ahead: the
    /// same rolling window as our `contains_batch`.
    #[inline]
    pub(crate) fn contains_batch(&self, keys: &[u64], out: &mut [bool]) {
        let mut ring = [(0usize, 0usize, 0u64); FLOOR_BATCH];
        for (slot, &k) in ring.iter_mut().zip(keys) {
            *slot = self.indexes(k);
            prefetch(&self.words[slot.0]);
            prefetch(&self.words[slot.1]);
        }
        for (i, o) in out.iter_mut().enumerate().take(keys.len()) {
            let (a, b, f) = ring[i % FLOOR_BATCH];
            if let Some(&next) = keys.get(i + FLOOR_BATCH) {
                let n = self.indexes(next);
                prefetch(&self.words[n.0]);
                prefetch(&self.words[n.1]);
                ring[i % FLOOR_BATCH] = n;
            }
            *o = (self.words[a] ^ self.words[b]) & 0xFFFF == f;
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }
}

impl Shared for Floor {
    fn name(&self) -> &'static str {
        "two-read floor"
    }
    fn insert(&self, _key: u64) -> bool {
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        Floor::contains(self, key)
    }
    fn remove(&self, _key: u64) -> bool {
        false
    }
}

/// A read prefetch of the cache line holding `value` (a no-op off x86_64).
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and reads nothing the program can observe;
    // the pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// `BuildHasherDefault` spelled for peers that take a `BuildHasher`.
pub(crate) type AhashBuild = BuildHasherDefault<AHasher>;
