//! The filters under test behind one interface, and the drivers that run batches of operations
//! on them from one thread or several.
//!
//! Each batch is one virtual call; the loop inside is compiled per filter, so the interface
//! costs nothing per operation. Single-threaded peers are driven through `&mut self` and pay no
//! lock; only filters that are concurrent themselves get a multi-threaded line.

use std::collections::hash_map::DefaultHasher;
use std::hint::black_box;
use std::iter;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;

use crate::keys::key;

/// A filter used from one thread. Keys are `u64`s, hashed by each filter's own default hasher,
/// as the paper includes hashing in its timings.
pub(crate) trait Filter {
    /// Adds `key`; `false` when the filter refused it.
    fn insert(&mut self, key: u64) -> bool;
    /// Whether `key` may be present.
    fn contains(&self, key: u64) -> bool;
    /// Removes one copy of `key`; only called when [`removes`](Self::removes) is true.
    fn remove(&mut self, key: u64) -> bool;
    /// Whether the filter supports removal at all (Bloom filters do not).
    fn removes(&self) -> bool {
        true
    }
    /// Bytes of the filter's table: the numerator of bits per item.
    fn bytes(&self) -> usize;
    /// Items at 100% occupancy: fingerprint slots for a cuckoo filter, the item count a Bloom
    /// filter was sized for. Occupancy on the figures' x axes is items over this.
    fn slots(&self) -> u64;
}

/// A filter that threads share through `&self`.
pub(crate) trait Concurrent: Filter + Sync {
    fn insert_shared(&self, key: u64) -> bool;
    fn remove_shared(&self, key: u64) -> bool;
}

/// This crate's filter.
#[derive(Debug)]
pub(crate) struct Ours(pub(crate) lockfree_cuckoo::CuckooFilter);

impl Filter for Ours {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.insert_shared(key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.remove_shared(key)
    }
    fn bytes(&self) -> usize {
        self.0.bucket_count() * 8
    }
    fn slots(&self) -> u64 {
        self.0.bucket_count() as u64 * 4
    }
}

impl Concurrent for Ours {
    #[inline]
    fn insert_shared(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn remove_shared(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

/// `cuckoofilter` 0.5: 8-bit fingerprints, four per bucket, a power-of-two bucket count, SipHash
/// (`std`'s `DefaultHasher`, its default), random-walk inserts of up to 500 kicks.
pub(crate) struct CuckooRs {
    filter: cuckoofilter::CuckooFilter<DefaultHasher>,
    slots: u64,
}

impl CuckooRs {
    pub(crate) fn with_capacity(items: usize) -> Self {
        // Its constructor's own rounding: the next power of two of slots, four to a bucket.
        let slots = items.next_power_of_two().max(4) as u64;
        Self { filter: cuckoofilter::CuckooFilter::with_capacity(items), slots }
    }
}

impl Filter for CuckooRs {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.filter.add(&key).is_ok()
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.filter.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.filter.delete(&key)
    }
    fn bytes(&self) -> usize {
        self.filter.memory_usage()
    }
    fn slots(&self) -> u64 {
        self.slots
    }
}

/// `atomic-cuckoo-filter` 0.3: 16-bit fingerprints, four per bucket, a power-of-two bucket
/// count, SipHash; lock-free simple inserts, but evictions and removes take its writer lock.
pub(crate) struct AtomicCuckoo(pub(crate) atomic_cuckoo_filter::CuckooFilter);

impl Filter for AtomicCuckoo {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        self.insert_shared(key)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.0.contains(&key)
    }
    #[inline]
    fn remove(&mut self, key: u64) -> bool {
        self.remove_shared(key)
    }
    fn bytes(&self) -> usize {
        // 16-bit fingerprints packed into machine words with no padding at four to a bucket.
        self.0.capacity() * 2
    }
    fn slots(&self) -> u64 {
        self.0.capacity() as u64
    }
}

impl Concurrent for AtomicCuckoo {
    #[inline]
    fn insert_shared(&self, key: u64) -> bool {
        self.0.insert(&key).is_ok()
    }
    #[inline]
    fn remove_shared(&self, key: u64) -> bool {
        self.0.remove(&key)
    }
}

/// `fastbloom` 0.17's `AtomicBloomFilter`, sized for a given item count and false-positive
/// rate. It is concurrent through `&self`, but only driven from one thread here.
pub(crate) struct Bloom {
    filter: fastbloom::AtomicBloomFilter,
    items: u64,
}

impl Bloom {
    pub(crate) fn new(items: u64, fpr: f64) -> Self {
        let filter =
            fastbloom::AtomicBloomFilter::with_false_pos(fpr).expected_items(items as usize);
        Self { filter, items }
    }
}

impl Filter for Bloom {
    #[inline]
    fn insert(&mut self, key: u64) -> bool {
        // `insert` reports whether the key was (probably) present already; a Bloom filter
        // never refuses.
        self.filter.insert(&key);
        true
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        self.filter.contains(&key)
    }
    fn remove(&mut self, _key: u64) -> bool {
        unreachable!("the drivers never remove from a Bloom filter")
    }
    fn removes(&self) -> bool {
        false
    }
    fn bytes(&self) -> usize {
        self.filter.num_bits() / 8
    }
    fn slots(&self) -> u64 {
        self.items
    }
}

/// `scalable_cuckoo_filter` 0.5: fingerprints sized from a target false-positive rate, SipHash
/// 1-3; it never refuses, it adds a larger table instead.
pub(crate) struct Scalable(pub(crate) scalable_cuckoo_filter::ScalableCuckooFilter<u64>);

impl Filter for Scalable {
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
    fn bytes(&self) -> usize {
        (self.0.bits() / 8) as usize
    }
    fn slots(&self) -> u64 {
        self.0.capacity() as u64
    }
}

/// What an insert batch did.
#[derive(Debug)]
pub(crate) struct Inserted {
    /// Index ranges of the keys now held: one per thread, each a prefix of that thread's share.
    pub(crate) ranges: Vec<Range<u64>>,
    /// Whether the batch stopped at a refused insert.
    pub(crate) refused: bool,
}

/// Runs batches of operations on a filter, from one thread or several.
pub(crate) trait Driver {
    fn threads(&self) -> usize;
    fn filter(&self) -> &dyn Filter;
    /// Inserts the keys with indices in `range`, stopping at the first refusal (with several
    /// threads, each stops at its own refusal or soon after another's).
    fn insert(&mut self, range: Range<u64>) -> Inserted;
    /// Looks up every query; returns how many answered `true`.
    fn lookup(&mut self, queries: &[u64]) -> u64;
    /// Removes the keys with indices in `ranges`; returns how many removes found their key.
    fn remove(&mut self, ranges: &[Range<u64>]) -> u64;
}

/// One thread, through `&mut self`.
pub(crate) struct Serial<F>(pub(crate) F);

impl<F: Filter> Driver for Serial<F> {
    fn threads(&self) -> usize {
        1
    }
    fn filter(&self) -> &dyn Filter {
        &self.0
    }
    fn insert(&mut self, range: Range<u64>) -> Inserted {
        let Range { start, end } = range;
        for index in start..end {
            if !self.0.insert(key(index)) {
                return Inserted { ranges: iter::once(start..index).collect(), refused: true };
            }
        }
        Inserted { ranges: iter::once(start..end).collect(), refused: false }
    }
    fn lookup(&mut self, queries: &[u64]) -> u64 {
        queries.iter().map(|&q| u64::from(self.0.contains(black_box(q)))).sum()
    }
    fn remove(&mut self, ranges: &[Range<u64>]) -> u64 {
        ranges.iter().flat_map(|r| r.clone()).map(|i| u64::from(self.0.remove(key(i)))).sum()
    }
}

/// Several threads sharing the filter through `&self`; each batch is split into one contiguous
/// share per thread. Threads are spawned per batch: a few tens of microseconds against batches
/// of a million operations.
pub(crate) struct Parallel<F> {
    pub(crate) filter: F,
    pub(crate) threads: usize,
}

/// `range` cut into `parts` contiguous shares of near-equal size.
fn shares(range: Range<u64>, parts: usize) -> Vec<Range<u64>> {
    let len = range.end - range.start;
    let parts = parts as u64;
    (0..parts).map(|p| range.start + len * p / parts..range.start + len * (p + 1) / parts).collect()
}

impl<F: Concurrent> Driver for Parallel<F> {
    fn threads(&self) -> usize {
        self.threads
    }
    fn filter(&self) -> &dyn Filter {
        &self.filter
    }
    fn insert(&mut self, range: Range<u64>) -> Inserted {
        let filter = &self.filter;
        // Once one thread is refused the table is about full; the others stop too, so the
        // phase ends at the first refusal, as the single-threaded one does.
        let stop = AtomicBool::new(false);
        let ranges = thread::scope(|s| {
            let workers: Vec<_> = shares(range, self.threads)
                .into_iter()
                .map(|share| {
                    let stop = &stop;
                    s.spawn(move || {
                        for index in share.clone() {
                            if stop.load(Relaxed) || !filter.insert_shared(key(index)) {
                                stop.store(true, Relaxed);
                                return share.start..index;
                            }
                        }
                        share
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().expect("insert worker panicked")).collect()
        });
        Inserted { ranges, refused: stop.into_inner() }
    }
    fn lookup(&mut self, queries: &[u64]) -> u64 {
        let filter = &self.filter;
        let chunk = queries.len().div_ceil(self.threads).max(1);
        thread::scope(|s| {
            let workers: Vec<_> = queries
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter().map(|&q| u64::from(filter.contains(black_box(q)))).sum::<u64>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().expect("lookup worker panicked")).sum()
        })
    }
    fn remove(&mut self, ranges: &[Range<u64>]) -> u64 {
        let filter = &self.filter;
        thread::scope(|s| {
            let workers: Vec<_> = (0..self.threads)
                .map(|t| {
                    // Every thread takes its share of every range, so the work stays even.
                    let mine: Vec<_> =
                        ranges.iter().map(|r| shares(r.clone(), self.threads)[t].clone()).collect();
                    s.spawn(move || {
                        mine.into_iter()
                            .flatten()
                            .map(|i| u64::from(filter.remove_shared(key(i))))
                            .sum::<u64>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().expect("remove worker panicked")).sum()
        })
    }
}
