//! The one list of filters the evaluation measures ([`Peer`]): each peer's names, what it can
//! do, how it is built, and its implementation of three small traits.
//!
//! - [`Filter`]: what every filter answers through `&self` (lookups, sizes).
//! - [`Local`]: single-threaded use; inserts and removes take `&mut self`, so a single-threaded
//!   peer pays no lock in the single-thread measurements.
//! - [`Shared`]: concurrent use through `&self`; single-threaded peers that can be shared sit
//!   behind a `RwLock` ([`Locked`]). Every [`Shared`] filter is a [`Local`] one too.
//!
//! Tools pick peers by their command-line names (clap's [`ValueEnum`], [`Peer::parser`] for a
//! tool's own subset) and run their measurements through [`Peer::visit`], written once over the
//! peer's type, so every operation is compiled for the peer and none is a virtual call.
//!
//! `eval/paired.sh` builds this crate against older revisions of `lockfree-cuckoo`, so the
//! peers use only the API every revision since the first benchmarks has.

use std::hash::Hasher;
use std::sync::RwLock;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::ValueEnum;
use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, Layout, Plain, SemiSorted};

use crate::floor::{CasFloor, Floor};
use crate::keys::{key, PRESENT};

/// Every filter a tool can measure, by its command-line name; a tool's default order is this
/// order, filtered to what it measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum Peer {
    /// Ours, default builder
    Ours,
    /// Ours through its batch calls (contains_batch, insert_batch)
    OursBatch,
    /// Ours with semi-sorted buckets (17-bit fingerprints in the same memory)
    OursSemiSorted,
    #[cfg(feature = "windowed")]
    /// Ours with a one-hour window (14-bit fingerprints with 2-bit ages, sized for the capacity
    /// within the window), on the system clock
    OursWindowed,
    /// The two-read floor (4 KiB pages)
    Floor,
    /// The two-read floor, batched
    FloorBatch,
    /// The one-CAS floor under writers (4 KiB pages): its "fill" and "remove" are one load and
    /// one compare-and-swap of a random word a key, its lookups two loads of the same words
    CasFloor,
    /// cuckoofilter with ahash
    CfAhash,
    /// cuckoofilter with its default hasher (SipHash-1-3)
    Cf,
    /// atomic-cuckoo-filter
    Acf,
    /// fastbloom's AtomicBloomFilter, sized for our false-positive rate
    Fastbloom,
    /// sbbf-rs-safe's split block (blocked) Bloom filter, sized for our false-positive rate
    Sbbf,
    /// qfilter's rank-select quotient filter, sized for our false-positive rate
    Qfilter,
    /// scalable_cuckoo_filter, sized for our false-positive rate
    Scalable,
    /// dashmap's DashSet<u64>, an exact set
    Dashset,
}

/// The operations a peer can be measured doing.
#[derive(Clone, Copy, Debug)]
pub struct Ops {
    pub insert: bool,
    pub contains: bool,
    pub remove: bool,
}

const ALL: Ops = Ops { insert: true, contains: true, remove: true };

/// What a peer is built for: `items` of capacity (the item count a Bloom filter expects), and
/// the false-positive rate that the peers sized by a rate (Bloom, quotient, scalable) are built
/// for.
#[derive(Clone, Copy, Debug)]
pub struct Sizing {
    pub items: usize,
    pub fp: f64,
}

impl Sizing {
    /// `items`, with the rate peers sized by a rate get: ours at `items` (see [`expected_fpr`]).
    pub fn like_ours(items: usize) -> Self {
        Self { items, fp: expected_fpr(items) }
    }
}

/// Our expected false-positive rate holding `items` in a filter built for them.
pub fn expected_fpr(items: usize) -> f64 {
    let lanes = CuckooFilter::with_capacity(items).bucket_count() * 4;
    fpr_at_load(items as f64 / lanes as f64)
}

/// Our expected false-positive rate at `load` (items over lanes): a lookup compares the 8 lanes
/// of two buckets, each fingerprint matching an absent key's 1 time in 65532.
pub fn fpr_at_load(load: f64) -> f64 {
    8.0 * load / 65532.0
}

/// What a tool does with one peer, written once over the peer's type ([`Peer::visit`] calls the
/// method its kind of filter needs, with a constructor of fresh empty filters).
pub trait Visit: Sized {
    type Output;
    /// A filter used from one thread only.
    fn local<F: Local, M: Fn() -> F>(self, peer: Peer, make: M) -> Self::Output;
    /// A single-threaded filter that threads may share behind a lock ([`Locked`]).
    fn lockable<F: Local + Send + Sync, M: Fn() -> F>(self, peer: Peer, make: M) -> Self::Output {
        self.local(peer, make)
    }
    /// A concurrent filter.
    fn shared<F: Shared, M: Fn() -> F>(self, peer: Peer, make: M) -> Self::Output {
        self.local(peer, make)
    }
}

impl Peer {
    /// Name in tables, benchmark ids and records.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ours => "lockfree-cuckoo",
            Self::OursBatch => "lockfree-cuckoo batch",
            Self::OursSemiSorted => "lockfree-cuckoo semi-sorted",
            #[cfg(feature = "windowed")]
            Self::OursWindowed => "lockfree-cuckoo windowed",
            Self::Floor => "two-read floor",
            Self::FloorBatch => "two-read floor batch",
            Self::CasFloor => "one-CAS floor",
            Self::CfAhash => "cuckoofilter+ahash",
            Self::Cf => "cuckoofilter",
            Self::Acf => "atomic-cuckoo-filter",
            Self::Fastbloom => "fastbloom (atomic)",
            Self::Sbbf => "sbbf-rs-safe",
            Self::Qfilter => "qfilter",
            Self::Scalable => "scalable_cuckoo_filter",
            Self::Dashset => "DashSet<u64>",
        }
    }

    /// Name on the paper's figures and in their CSV files: the crate's, as the paper's legends
    /// name systems.
    pub fn legend(self) -> &'static str {
        match self {
            Self::Fastbloom => "fastbloom",
            Self::Dashset => "dashmap",
            peer => peer.base().name(),
        }
    }

    /// The peer whose legend is `legend`.
    pub fn by_legend(legend: &str) -> Option<Self> {
        Self::value_variants().iter().copied().find(|peer| peer.legend() == legend)
    }

    /// Its command-line name.
    pub fn key(self) -> String {
        self.to_possible_value().expect("no peer is skipped").get_name().to_owned()
    }

    /// Every peer `keep` keeps, in the registry's order: a tool's subset.
    pub fn matching(keep: impl Fn(Peer) -> bool) -> Vec<Peer> {
        Self::value_variants().iter().copied().filter(|&peer| keep(peer)).collect()
    }

    /// A clap value parser that takes the command-line names of `peers` only: a tool's subset.
    pub fn parser(peers: &[Peer]) -> impl TypedValueParser<Value = Peer> {
        PossibleValuesParser::new(peers.iter().filter_map(ValueEnum::to_possible_value))
            .map(|name| Peer::from_str(&name, false).expect("one of the possible values"))
    }

    /// The operations it can be measured doing.
    pub fn ops(self) -> Ops {
        match self.base() {
            Self::Floor => Ops { insert: false, contains: true, remove: false },
            Self::Fastbloom | Self::Sbbf => Ops { remove: false, ..ALL },
            _ => ALL,
        }
    }

    /// Whether it is a floor: a cost model, not a set, whose answers mean nothing (a tool counts
    /// no misses or refusals for it).
    pub fn is_floor(self) -> bool {
        matches!(self.base(), Self::Floor | Self::CasFloor)
    }

    /// The same filter through its batch calls, where it has them.
    pub fn batch(self) -> Option<Self> {
        match self {
            Self::Ours => Some(Self::OursBatch),
            Self::Floor => Some(Self::FloorBatch),
            _ => None,
        }
    }

    /// Whether the filter has batch calls of its own, whether or not a batched peer drives it
    /// through them ([`batch`](Self::batch)).
    pub fn has_batch_calls(self) -> bool {
        self.batch().is_some() || self == Self::OursSemiSorted
    }

    /// Whether this is a filter driven through its batch calls.
    pub fn batched(self) -> bool {
        self.base() != self
    }

    /// The filter it drives: itself, or for a batched peer, the unbatched one.
    pub fn base(self) -> Self {
        match self {
            Self::OursBatch => Self::Ours,
            Self::FloorBatch => Self::Floor,
            peer => peer,
        }
    }

    /// Builds the peer for `size` and hands it to `visit`. The floors' arrays are as large as
    /// our table for the same items.
    pub fn visit<V: Visit>(self, size: Sizing, visit: V) -> V::Output {
        let Sizing { items, fp } = size;
        let words = || CuckooFilter::with_capacity(items).bucket_count();
        match self.base() {
            Self::Ours => visit.shared(self, || Ours::new(items)),
            Self::OursSemiSorted => visit.shared(self, || Ours::semi_sorted(items)),
            #[cfg(feature = "windowed")]
            Self::OursWindowed => visit.shared(self, || OursWindowed::new(items)),
            Self::Floor => visit.shared(self, || Floor::new(words())),
            Self::CasFloor => visit.shared(self, || CasFloor::new(words())),
            Self::CfAhash => visit.lockable(self, || CfAhash::new(items)),
            Self::Cf => visit.lockable(self, || CfSip::new(items)),
            Self::Acf => visit.shared(self, || Acf::new(items)),
            Self::Fastbloom => visit.shared(self, || Bloom::new(items, fp)),
            Self::Sbbf => visit.lockable(self, || Sbbf::new(items, fp)),
            Self::Qfilter => visit.lockable(self, || Quotient::new(items, fp)),
            Self::Scalable => visit.local(self, || Scalable::new(items, fp)),
            Self::Dashset => visit.shared(self, || Dash::new(items)),
            Self::OursBatch | Self::FloorBatch => unreachable!("base() is never batched"),
        }
    }
}

/// What every filter answers through `&self`.
pub trait Filter {
    /// Whether `key` may be present.
    fn contains(&self, key: u64) -> bool;
    /// Each of `keys` looked up into `out`: one [`contains`](Self::contains) a key, unless the
    /// filter has a batch call ([`Peer::batch`]).
    #[inline]
    fn contains_batch(&self, keys: &[u64], out: &mut [bool]) {
        keys.iter().zip(out).for_each(|(k, o)| *o = self.contains(*k));
    }
    /// Bytes the filter occupies, from its own API where it has one (see each impl).
    fn bytes(&self) -> usize;
    /// Bytes of its table alone: the numerator of bits per item.
    fn table_bytes(&self) -> usize;
    /// Items at 100% occupancy: fingerprint slots for a cuckoo filter, the item count a Bloom
    /// filter was sized for.
    fn slots(&self) -> u64;
}

/// A filter used from one thread.
pub trait Local: Filter {
    /// Inserts `key`; false when the filter refused it.
    fn insert(&mut self, key: u64) -> bool;
    /// Removes `key`; false when it found none (or cannot remove, see [`Peer::ops`]).
    fn remove(&mut self, key: u64) -> bool;
    /// Inserts `keys`, returns how many it stored: one [`insert`](Self::insert) a key, unless
    /// the filter has a batch call.
    #[inline]
    fn insert_batch(&mut self, keys: &[u64]) -> usize {
        keys.iter().filter(|&&k| self.insert(k)).count()
    }
    /// Inserts `PRESENT` keys `0..items` from empty; returns how many were refused.
    fn fill(&mut self, items: usize) -> usize {
        (0..items as u64).filter(|&i| !self.insert(key(PRESENT, i))).count()
    }
    /// [`fill`](Self::fill) through [`insert_batch`](Self::insert_batch), 1024 keys a call.
    fn fill_batched(&mut self, items: usize) -> usize {
        let mut refused = 0;
        let mut chunk = Vec::with_capacity(1024);
        for lo in (0..items as u64).step_by(1024) {
            chunk.clear();
            chunk.extend((lo..(lo + 1024).min(items as u64)).map(|i| key(PRESENT, i)));
            refused += chunk.len() - self.insert_batch(&chunk);
        }
        refused
    }
}

/// A filter shared by threads through `&self`.
pub trait Shared: Filter + Sync {
    /// Inserts `key`; false when refused.
    fn insert(&self, key: u64) -> bool;
    /// Removes `key`; false when it found none (or cannot remove, see [`Peer::ops`]).
    fn remove(&self, key: u64) -> bool;
    /// As [`Local::insert_batch`].
    #[inline]
    fn insert_batch(&self, keys: &[u64]) -> usize {
        keys.iter().filter(|&&k| self.insert(k)).count()
    }
}

/// A filter threads can share is usable from one thread too: `&mut self` goes through `&self`.
impl<T: Shared> Local for T {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        Shared::insert(self, key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        Shared::remove(self, key)
    }
    #[inline]
    fn insert_batch(&mut self, keys: &[u64]) -> usize {
        Shared::insert_batch(self, keys)
    }
}

// ---------------------------------------------------------------------------------------------
// lockfree-cuckoo

/// Ours, with buckets of layout `L`.
pub struct Ours<L: Layout = Plain>(pub CuckooFilter<DefaultHashBuilder, L>);

impl Ours {
    pub fn new(capacity: usize) -> Self {
        Self(CuckooFilter::with_capacity(capacity))
    }
}

impl Ours<SemiSorted> {
    pub fn semi_sorted(capacity: usize) -> Self {
        Self(CuckooFilter::builder().capacity(capacity).layout::<SemiSorted>().build())
    }
}

impl<L: Layout> Filter for Ours<L> {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn contains_batch(&self, keys: &[u64], out: &mut [bool]) {
        self.0.contains_batch(keys, out);
    }
    fn bytes(&self) -> usize {
        self.0.memory_usage()
    }
    fn table_bytes(&self) -> usize {
        self.0.bucket_count() * 8
    }
    fn slots(&self) -> u64 {
        self.0.bucket_count() as u64 * 4
    }
}

impl<L: Layout> Shared for Ours<L> {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
    #[inline]
    fn insert_batch(&self, keys: &[u64]) -> usize {
        self.0.insert_batch(keys)
    }
}

/// Ours with a window: items expire an hour after their last insert.
#[cfg(feature = "windowed")]
pub struct OursWindowed(pub lockfree_cuckoo::WindowedFilter);

#[cfg(feature = "windowed")]
impl OursWindowed {
    /// The window of the measurements: long enough that nothing expires while they run, so
    /// that they measure the cost of the layout and of the expiry work, not of misses.
    pub const WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);

    pub fn new(capacity: usize) -> Self {
        Self(CuckooFilter::builder().capacity(capacity).expire_after(Self::WINDOW).build())
    }
}

#[cfg(feature = "windowed")]
impl Filter for OursWindowed {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    fn bytes(&self) -> usize {
        self.0.memory_usage()
    }
    fn table_bytes(&self) -> usize {
        self.0.bucket_count() * 8
    }
    fn slots(&self) -> u64 {
        self.0.bucket_count() as u64 * 4
    }
}

#[cfg(feature = "windowed")]
impl Shared for OursWindowed {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

// ---------------------------------------------------------------------------------------------
// The floors (crate::floor): lookups only, or writes and lookups on shared words

impl Filter for Floor {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        Floor::contains(self, key)
    }
    #[inline]
    fn contains_batch(&self, keys: &[u64], out: &mut [bool]) {
        Floor::contains_batch(self, keys, out);
    }
    fn bytes(&self) -> usize {
        self.words() * 8
    }
    fn table_bytes(&self) -> usize {
        self.words() * 8
    }
    fn slots(&self) -> u64 {
        self.words() as u64 * 4
    }
}

impl Shared for Floor {
    fn insert(&self, _key: u64) -> bool {
        true
    }
    fn remove(&self, _key: u64) -> bool {
        false
    }
}

impl Filter for CasFloor {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        CasFloor::contains(self, key)
    }
    fn bytes(&self) -> usize {
        self.words() * 8
    }
    fn table_bytes(&self) -> usize {
        self.words() * 8
    }
    fn slots(&self) -> u64 {
        self.words() as u64 * 4
    }
}

impl Shared for CasFloor {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.write(key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.write(key)
    }
}

// ---------------------------------------------------------------------------------------------
// cuckoofilter 0.5 (single-threaded, 8-bit fingerprints, power-of-two table)

/// `cuckoofilter::CuckooFilter<H>`: 8-bit fingerprints, four per bucket, a power-of-two bucket
/// count, random-walk inserts of up to 500 kicks; `RwLock`-wrapped for [`Shared`].
pub struct Cf<H> {
    pub inner: cuckoofilter::CuckooFilter<H>,
    /// Fingerprint slots of its table: its constructor's own rounding, the next power of two
    /// of the capacity (at least four), four to a bucket.
    pub slots: u64,
}

/// `cuckoofilter` with its default hasher (SipHash-1-3 via `std`'s `DefaultHasher`).
pub type CfSip = Cf<std::collections::hash_map::DefaultHasher>;
/// `cuckoofilter` with `ahash::AHasher`.
pub type CfAhash = Cf<ahash::AHasher>;

impl<H: Hasher + Default> Cf<H> {
    pub fn new(capacity: usize) -> Self {
        let slots = capacity.next_power_of_two().max(4) as u64;
        Self { inner: cuckoofilter::CuckooFilter::with_capacity(capacity), slots }
    }
}

impl<H: Hasher + Default> Filter for Cf<H> {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.inner.contains(&key)
    }
    fn bytes(&self) -> usize {
        self.inner.memory_usage()
    }
    fn table_bytes(&self) -> usize {
        self.inner.memory_usage()
    }
    fn slots(&self) -> u64 {
        self.slots
    }
}

impl<H: Hasher + Default> Local for Cf<H> {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.inner.add(&key).is_ok()
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.inner.delete(&key)
    }
}

/// A single-threaded peer behind a `RwLock`: reads share the lock, writes take it exclusively.
pub struct Locked<T>(pub RwLock<T>);

impl<T> Locked<T> {
    pub fn new(filter: T) -> Self {
        Self(RwLock::new(filter))
    }
}

impl<T: Local + Send + Sync> Filter for Locked<T> {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.read().unwrap().contains(key)
    }
    /// The wrapped filter's (the lock itself not counted).
    fn bytes(&self) -> usize {
        self.0.read().unwrap().bytes()
    }
    fn table_bytes(&self) -> usize {
        self.0.read().unwrap().table_bytes()
    }
    fn slots(&self) -> u64 {
        self.0.read().unwrap().slots()
    }
}

impl<T: Local + Send + Sync> Shared for Locked<T> {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.write().unwrap().insert(key)
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.write().unwrap().remove(key)
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

impl Filter for Acf {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    /// Its table and its struct (it has no memory API).
    fn bytes(&self) -> usize {
        self.table_bytes() + std::mem::size_of_val(&self.0)
    }
    /// `capacity()` slots of 16 bits, packed four to a bucket with no padding.
    fn table_bytes(&self) -> usize {
        self.0.capacity() * 2
    }
    fn slots(&self) -> u64 {
        self.0.capacity() as u64
    }
}

impl Shared for Acf {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key)
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

impl Filter for Bloom {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.inner.contains(&key)
    }
    fn bytes(&self) -> usize {
        self.table_bytes() + std::mem::size_of_val(&self.inner)
    }
    fn table_bytes(&self) -> usize {
        self.inner.num_bits() / 8
    }
    fn slots(&self) -> u64 {
        self.items as u64
    }
}

impl Shared for Bloom {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        // `insert` reports whether the key was (probably) present already; a Bloom filter
        // never refuses.
        self.inner.insert(&key);
        true
    }
    fn remove(&self, _key: u64) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// sbbf-rs-safe 0.3 (single-threaded, no remove, takes hashes)

/// `sbbf_rs_safe::Filter`, the split block Bloom filter of the Parquet spec: a key sets one bit
/// in each of the eight 32-bit words of one 32-byte block. Sized for `items` at rate `fp` by the
/// spec's formula, which assumes every block holds the mean load, so the measured rate is
/// higher. The crate takes hashes: keys are hashed as the spec does, xxh64 with seed 0.
pub struct Sbbf {
    pub inner: sbbf_rs_safe::Filter,
    /// The item count it was sized for.
    pub items: usize,
}

impl Sbbf {
    pub fn new(items: usize, fp: f64) -> Self {
        let bits = -8.0 * items as f64 / (1.0 - fp.powf(1.0 / 8.0)).ln();
        // Its constructor takes bits a key and keys: one bit for each of `bits` keys.
        Self { inner: sbbf_rs_safe::Filter::new(1, bits.ceil() as usize), items }
    }

    #[inline]
    fn hash(key: u64) -> u64 {
        xxhash_rust::xxh64::xxh64(&key.to_le_bytes(), 0)
    }
}

impl Filter for Sbbf {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.inner.contains_hash(Self::hash(key))
    }
    fn bytes(&self) -> usize {
        self.table_bytes() + std::mem::size_of_val(&self.inner)
    }
    fn table_bytes(&self) -> usize {
        self.inner.as_bytes().len()
    }
    fn slots(&self) -> u64 {
        self.items as u64
    }
}

impl Local for Sbbf {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        // `insert_hash` reports whether the key was (probably) present already; a Bloom filter
        // never refuses.
        self.inner.insert_hash(Self::hash(key));
        true
    }
    fn remove(&mut self, _key: u64) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// qfilter 0.3 (single-threaded, fixed size, refuses at 95% of its slots)

/// `qfilter::Filter::new(items, fp)` with its default hasher (foldhash with a fixed seed): a
/// rank-select quotient filter of a power of two of slots, the fewest that hold `items` at 95%
/// occupancy, its limit; remainders of `ceil(log2(1/fp))` bits. It does not grow: inserts past
/// the limit are refused.
pub struct Quotient(pub qfilter::Filter);

impl Quotient {
    pub fn new(items: usize, fp: f64) -> Self {
        Self(qfilter::Filter::new(items as u64, fp).expect("a quotient filter of that size"))
    }
}

impl Filter for Quotient {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(key)
    }
    fn bytes(&self) -> usize {
        self.table_bytes() + std::mem::size_of_val(&self.0)
    }
    /// Its buffer: remainders and 2.125 bits a slot of metadata.
    fn table_bytes(&self) -> usize {
        self.0.memory_usage()
    }
    /// Its slots: `capacity()` is 95% of them, a power of two.
    fn slots(&self) -> u64 {
        self.0.capacity().next_power_of_two()
    }
}

impl Local for Quotient {
    /// Stores the remainder even when an equal one is there, as a cuckoo filter stores equal
    /// fingerprints, so every inserted key can be removed.
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert_duplicated(key).is_ok()
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.0.remove(key)
    }
}

// ---------------------------------------------------------------------------------------------
// scalable_cuckoo_filter 0.5 (single-threaded, grows)

/// `scalable_cuckoo_filter::ScalableCuckooFilter<u64>` with its defaults (SipHash-1-3, `rand`'s
/// thread-local generator for its kicks) but the initial capacity and false-positive rate
/// given; it never refuses, it adds a larger table. With a seeded generator
/// ([`Scalable::seeded`]) it can be shared behind a lock.
pub struct Scalable<R = scalable_cuckoo_filter::DefaultRng>(
    pub scalable_cuckoo_filter::ScalableCuckooFilter<u64, scalable_cuckoo_filter::DefaultHasher, R>,
);

impl Scalable {
    pub fn new(capacity: usize, fp: f64) -> Self {
        Self(scalable_cuckoo_filter::ScalableCuckooFilter::new(capacity, fp))
    }
}

impl Scalable<rand::rngs::SmallRng> {
    /// Kicks drawn from a `SmallRng` seeded with `seed`: the default thread-local generator
    /// cannot move between threads at all.
    pub fn seeded(capacity: usize, fp: f64, seed: u64) -> Self {
        use rand::SeedableRng;
        Self(
            scalable_cuckoo_filter::ScalableCuckooFilterBuilder::new()
                .initial_capacity(capacity)
                .false_positive_probability(fp)
                .rng(rand::rngs::SmallRng::seed_from_u64(seed))
                .finish(),
        )
    }
}

impl<R: rand::Rng> Filter for Scalable<R> {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    fn bytes(&self) -> usize {
        self.table_bytes() + std::mem::size_of_val(&self.0)
    }
    fn table_bytes(&self) -> usize {
        (self.0.bits() / 8) as usize
    }
    fn slots(&self) -> u64 {
        self.0.capacity() as u64
    }
}

impl<R: rand::Rng> Local for Scalable<R> {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.0.insert(&key);
        true
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

impl Filter for Dash {
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    /// Estimated (no memory API): hashbrown keeps capacity * 8/7 buckets of an 8-byte entry
    /// and a control byte.
    fn bytes(&self) -> usize {
        self.0.capacity() * 8 / 7 * 9
    }
    fn table_bytes(&self) -> usize {
        self.bytes()
    }
    fn slots(&self) -> u64 {
        self.0.capacity() as u64
    }
}

impl Shared for Dash {
    #[inline]
    fn insert(&self, key: u64) -> bool {
        self.0.insert(key);
        true
    }
    #[inline]
    fn remove(&self, key: u64) -> bool {
        self.0.remove(&key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fills and checks every peer, through the same visitor every tool uses.
    struct Check;

    impl Visit for Check {
        type Output = ();
        fn local<F: Local, M: Fn() -> F>(self, peer: Peer, make: M) {
            let mut filter = make();
            assert!(filter.bytes() > 0 && filter.slots() > 0, "{}", peer.name());
            if peer.is_floor() {
                // A cost model: what it answers means nothing.
                return;
            }
            let ops = peer.ops();
            if ops.insert {
                let refused =
                    if peer.batched() { filter.fill_batched(1000) } else { filter.fill(1000) };
                assert_eq!(refused, 0, "{}", peer.name());
            }
            if ops.contains && ops.insert {
                let keys: Vec<u64> = (0..1000).map(|i| key(PRESENT, i)).collect();
                let mut out = vec![false; keys.len()];
                filter.contains_batch(&keys, &mut out);
                assert!(out.iter().all(|&hit| hit), "{}", peer.name());
            }
            if ops.remove && ops.contains {
                assert!(filter.remove(key(PRESENT, 0)), "{}", peer.name());
            }
        }
    }

    #[test]
    fn every_peer_is_built_filled_and_found() {
        for &peer in Peer::value_variants() {
            peer.visit(Sizing::like_ours(2000), Check);
        }
    }

    #[test]
    fn names_and_legends_lead_back_to_their_peer() {
        for &peer in Peer::value_variants() {
            assert_eq!(Peer::from_str(&peer.key(), false), Ok(peer));
            assert_eq!(Peer::by_legend(peer.legend()), Some(peer.base()));
        }
        assert_eq!(Peer::Fastbloom.legend(), "fastbloom");
        assert_eq!(Peer::Ours.batch().map(Peer::batched), Some(true));
    }
}
