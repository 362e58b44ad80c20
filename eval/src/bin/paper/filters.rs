//! The drivers that run batches of operations on the filters under test (the eval crate's
//! peers; keys are `u64`s, hashed by each filter's own default hasher, as the paper includes
//! hashing in its timings) from one thread or several.
//!
//! Each batch is one virtual call; the loop inside is compiled per filter, so the interface
//! costs nothing per operation. Single-threaded peers are driven through `&mut self` and pay no
//! lock; only filters that are concurrent themselves get a multi-threaded line.

use std::hint::black_box;
use std::iter;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;

use lockfree_cuckoo_eval::keys::{key, PRESENT};
use lockfree_cuckoo_eval::peers::{Filter, Local, Shared};

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
    /// Inserts the [`PRESENT`] keys with sequence numbers in `range`, stopping at the first refusal (with several
    /// threads, each stops at its own refusal or soon after another's).
    fn insert(&mut self, range: Range<u64>) -> Inserted;
    /// Looks up every query; returns how many answered `true`.
    fn lookup(&mut self, queries: &[u64]) -> u64;
    /// Removes the [`PRESENT`] keys with sequence numbers in `ranges`; returns how many removes found their key.
    fn remove(&mut self, ranges: &[Range<u64>]) -> u64;
}

/// One thread, through `&mut self`.
pub(crate) struct Serial<F>(pub(crate) F);

impl<F: Local> Driver for Serial<F> {
    fn threads(&self) -> usize {
        1
    }
    fn filter(&self) -> &dyn Filter {
        &self.0
    }
    fn insert(&mut self, range: Range<u64>) -> Inserted {
        let Range { start, end } = range;
        for index in start..end {
            if !self.0.insert(key(PRESENT, index)) {
                return Inserted { ranges: iter::once(start..index).collect(), refused: true };
            }
        }
        Inserted { ranges: iter::once(start..end).collect(), refused: false }
    }
    fn lookup(&mut self, queries: &[u64]) -> u64 {
        queries.iter().map(|&q| u64::from(self.0.contains(black_box(q)))).sum()
    }
    fn remove(&mut self, ranges: &[Range<u64>]) -> u64 {
        ranges
            .iter()
            .flat_map(|r| r.clone())
            .map(|i| u64::from(self.0.remove(key(PRESENT, i))))
            .sum()
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

impl<F: Shared> Driver for Parallel<F> {
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
                            if stop.load(Relaxed) || !Shared::insert(filter, key(PRESENT, index)) {
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
                            .map(|i| u64::from(Shared::remove(filter, key(PRESENT, i))))
                            .sum::<u64>()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().expect("remove worker panicked")).sum()
        })
    }
}
