//! The filters we compare against, behind two small traits.
//!
//! - [`Local`]: single-threaded use; inserts and removes take `&mut self`, so a single-threaded
//!   peer pays no lock in the single-thread measurements.
//! - [`Shared`]: concurrent use through `&self`; single-threaded peers sit behind a `RwLock`.
//!   Every [`Shared`] filter is a [`Local`] one too, through `&self`.

use std::hash::Hasher;
use std::sync::RwLock;

use lockfree_cuckoo::CuckooFilter;

use crate::keys::{key, PRESENT};

/// `cuckoofilter`'s hasher parameter for its ahash variant.
pub type AHasher = ahash::AHasher;

/// A filter used from one thread.
pub trait Local {
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
pub trait Shared: Sync {
    /// Display name.
    fn name(&self) -> &'static str;
    /// Inserts `key`; false when refused.
    fn insert(&self, key: u64) -> bool;
    /// Whether `key` may be present.
    fn contains(&self, key: u64) -> bool;
    /// Removes `key`; peers without removal return false.
    fn remove(&self, key: u64) -> bool;
    /// Whether [`remove`](Self::remove) is supported.
    fn removes(&self) -> bool {
        true
    }
    /// Bytes the filter occupies, from its own API where it has one (see each impl).
    fn bytes(&self) -> usize;
}

/// A filter threads can share is usable from one thread too: `&mut self` goes through `&self`.
impl<T: Shared> Local for T {
    fn name(&self) -> &'static str {
        Shared::name(self)
    }
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        Shared::insert(self, key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        Shared::contains(self, key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        Shared::remove(self, key)
    }
    fn removes(&self) -> bool {
        Shared::removes(self)
    }
    fn bytes(&self) -> usize {
        Shared::bytes(self)
    }
}

// ---------------------------------------------------------------------------------------------
// lockfree-cuckoo

/// Ours.
pub struct Ours(pub CuckooFilter);

impl Ours {
    pub fn new(capacity: usize) -> Self {
        Self(CuckooFilter::with_capacity(capacity))
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
    fn bytes(&self) -> usize {
        self.0.memory_usage()
    }
}

// ---------------------------------------------------------------------------------------------
// cuckoofilter 0.5 (single-threaded, 8-bit fingerprints, power-of-two table)

/// `cuckoofilter::CuckooFilter<H>`: 8-bit fingerprints, four per bucket, a power-of-two bucket
/// count, random-walk inserts of up to 500 kicks; `RwLock`-wrapped for [`Shared`].
pub struct Cf<H> {
    pub inner: cuckoofilter::CuckooFilter<H>,
    name: &'static str,
    /// Fingerprint slots of its table: its constructor's own rounding, the next power of two
    /// of the capacity (at least four), four to a bucket.
    pub slots: u64,
}

/// `cuckoofilter` with its default hasher (SipHash-1-3 via `std`'s `DefaultHasher`).
pub type CfSip = Cf<std::collections::hash_map::DefaultHasher>;
/// `cuckoofilter` with `ahash::AHasher`.
pub type CfAhash = Cf<AHasher>;

impl<H: Hasher + Default> Cf<H> {
    fn named(capacity: usize, name: &'static str) -> Self {
        let slots = capacity.next_power_of_two().max(4) as u64;
        Self { inner: cuckoofilter::CuckooFilter::with_capacity(capacity), name, slots }
    }
}

impl CfSip {
    pub fn new(capacity: usize) -> Self {
        Self::named(capacity, "cuckoofilter")
    }
}

impl CfAhash {
    pub fn new(capacity: usize) -> Self {
        Self::named(capacity, "cuckoofilter+ahash")
    }
}

impl<H: Hasher + Default> Local for Cf<H> {
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
pub struct Locked<T>(pub RwLock<T>);

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
    fn removes(&self) -> bool {
        self.0.read().unwrap().removes()
    }
    /// The wrapped filter's (the lock itself not counted).
    fn bytes(&self) -> usize {
        self.0.read().unwrap().bytes()
    }
}

// ---------------------------------------------------------------------------------------------
// atomic-cuckoo-filter 0.3 (concurrent; 16-bit fingerprints; global lock for evictions/removes)

/// `atomic_cuckoo_filter::CuckooFilter` with its defaults (16-bit fingerprints, 4 a bucket, a
/// power-of-two bucket count, `std`'s `DefaultHasher`); lock-free simple inserts, but evictions
/// and removes take its writer lock.
pub struct Acf(pub atomic_cuckoo_filter::CuckooFilter);

impl Acf {
    pub fn new(capacity: usize) -> Self {
        Self(atomic_cuckoo_filter::CuckooFilter::with_capacity(capacity))
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
    /// Its table: `capacity()` slots of 16 bits (it has no memory API).
    fn bytes(&self) -> usize {
        self.0.capacity() * 2 + std::mem::size_of_val(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------
// fastbloom 0.17 AtomicBloomFilter (concurrent, no remove)

/// `fastbloom::AtomicBloomFilter` sized for `items` at false-positive rate `fp`, default hasher.
pub struct Bloom {
    pub inner: fastbloom::AtomicBloomFilter,
    /// The item count it was sized for.
    pub items: usize,
}

impl Bloom {
    pub fn new(items: usize, fp: f64) -> Self {
        Self {
            inner: fastbloom::AtomicBloomFilter::with_false_pos(fp).expected_items(items),
            items,
        }
    }
}

impl Shared for Bloom {
    fn name(&self) -> &'static str {
        "fastbloom (atomic)"
    }
    #[inline]
    fn insert(&self, key: u64) -> bool {
        // `insert` reports whether the key was (probably) present already; a Bloom filter
        // never refuses.
        self.inner.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.inner.contains(&key)
    }
    fn remove(&self, _key: u64) -> bool {
        false
    }
    fn removes(&self) -> bool {
        false
    }
    fn bytes(&self) -> usize {
        self.inner.num_bits() / 8 + std::mem::size_of_val(&self.inner)
    }
}

// ---------------------------------------------------------------------------------------------
// scalable_cuckoo_filter 0.5 (single-threaded, grows)

/// `scalable_cuckoo_filter::ScalableCuckooFilter<u64>` with its defaults (SipHash-1-3) but the
/// initial capacity and false-positive rate given; it never refuses, it adds a larger table.
pub struct Scalable(pub scalable_cuckoo_filter::ScalableCuckooFilter<u64>);

impl Scalable {
    pub fn new(capacity: usize, fp: f64) -> Self {
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
pub struct Dash(pub dashmap::DashSet<u64>);

impl Dash {
    pub fn new(capacity: usize) -> Self {
        Self(dashmap::DashSet::with_capacity(capacity))
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
    /// Estimated (no memory API): hashbrown keeps capacity * 8/7 buckets of an 8-byte entry
    /// and a control byte.
    fn bytes(&self) -> usize {
        self.0.capacity() * 8 / 7 * 9
    }
}
