//! Shared pieces of the loom models: tiny tables, items crafted to land in chosen buckets, and the
//! bookkeeping that proves each model explored the interleavings it is about.
//!
//! Bookkeeping uses `std` types on purpose: loom does not see them, so they add no interleavings
//! and survive from one explored execution to the next.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lockfree_cuckoo::SemiSorted;
use lockfree_cuckoo::{Builder, CuckooFilter, DefaultHashBuilder, Layout, LoadError, Plain};

/// Whether the models run on semi-sorted buckets: `LFC_LOOM_ENCODING=semi-sorted` when the suite
/// is built, plain otherwise (CI builds and runs it once for each). Read at compile time, so that
/// the filter's layout is a type; cargo rebuilds the suite when the variable changes.
const SEMI_SORTED: bool = match option_env!("LFC_LOOM_ENCODING") {
    None => false,
    Some(value) => is_semi_sorted(value.as_bytes()),
};

/// Whether `value` names the semi-sorted encoding; fails the build for anything but the names.
const fn is_semi_sorted(value: &[u8]) -> bool {
    const fn equal(a: &[u8], b: &[u8]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    if equal(value, b"semi-sorted") {
        true
    } else if equal(value, b"plain") {
        false
    } else {
        panic!("LFC_LOOM_ENCODING is plain or semi-sorted")
    }
}

/// The layout of [`SEMI_SORTED`], as a type.
pub(crate) trait Choose {
    type Layout: Layout;
}

pub(crate) struct Choice<const SEMI_SORTED: bool>;

impl Choose for Choice<false> {
    type Layout = Plain;
}

impl Choose for Choice<true> {
    type Layout = SemiSorted;
}

/// The layout every model runs on.
pub(crate) type L = <Choice<SEMI_SORTED> as Choose>::Layout;

/// The filters of the models.
pub(crate) type Filter = CuckooFilter<DefaultHashBuilder, L>;

/// A builder of tiny filters of `buckets` buckets in the layout under test, whose lookups retry
/// validation `retries` times.
pub(crate) fn builder(buckets: usize, retries: u32) -> Builder<DefaultHashBuilder, L> {
    CuckooFilter::builder().bucket_count(buckets).lookup_retries(retries).layout::<L>()
}

/// A filter of the layout under test loaded from `bytes`.
pub(crate) fn load(bytes: &[u8]) -> Result<Filter, LoadError> {
    CuckooFilter::builder().layout::<L>().load(bytes)
}

/// A filter of exactly `buckets` buckets whose lookups retry validation `retries` times.
pub(crate) fn table(buckets: usize, retries: u32) -> Arc<Filter> {
    Arc::new(builder(buckets, retries).build())
}

/// One item as the table sees it: a pre-hashed key, its fingerprint and its two buckets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item {
    pub(crate) hash: u64,
    pub(crate) fingerprint: u32,
    pub(crate) first: usize,
    pub(crate) second: usize,
}

impl Item {
    /// The same fingerprint and bucket pair with the buckets read in the opposite order:
    /// lookups and removes scan `first` before `second`, so this picks the side of a race.
    pub(crate) fn flipped(self, filter: &Filter) -> Item {
        item(filter, self.second, self.fingerprint)
    }

    /// Copies of this fingerprint in the item's buckets.
    pub(crate) fn count(self, filter: &Filter) -> usize {
        let second = if self.second == self.first {
            0
        } else {
            filter.fingerprint_count(self.second, self.fingerprint)
        };
        filter.fingerprint_count(self.first, self.fingerprint) + second
    }

    /// Copies of this item's fingerprint in its buckets of level `level` (0 the oldest).
    pub(crate) fn count_in_level(self, filter: &Filter, level: usize) -> usize {
        let (first, second, fingerprint) = filter.slots_for_hash_in_level(level, self.hash);
        let copies = |bucket| filter.fingerprint_count_in_level(level, bucket, fingerprint);
        copies(first) + if second == first { 0 } else { copies(second) }
    }

    pub(crate) fn insert(self, filter: &Filter) -> bool {
        filter.insert_hash(self.hash).is_ok()
    }

    /// What `CuckooFilter::count` answers for the item (the operation under test, unlike
    /// [`count`](Self::count), which reads the buckets directly).
    pub(crate) fn counted(self, filter: &Filter) -> usize {
        filter.count_hash(self.hash)
    }

    pub(crate) fn contains(self, filter: &Filter) -> bool {
        filter.contains_hash(self.hash)
    }

    pub(crate) fn remove(self, filter: &Filter) -> bool {
        filter.remove_hash(self.hash)
    }
}

fn item(filter: &Filter, first: usize, fingerprint: u32) -> Item {
    let hash = filter.hash_for_slot(first, fingerprint);
    let (first, second, fingerprint) = filter.slots_for_hash(hash);
    Item { hash, fingerprint, first, second }
}

/// Two items with one fingerprint and one bucket pair in level 1 of a grown filter but different
/// pairs in level 0: colliding in level 1 only. (An item's bucket in a level of `4m` buckets
/// determines its bucket in one of `m`, and the second bucket is a reflection, so the pairs in
/// level 0 differ only for some first buckets in level 1: a search finds them.) `buckets` is the
/// bucket count of level 1.
pub(crate) fn colliding_in_level_1_only(grown: &Filter, buckets: usize) -> (Item, Item) {
    let pair = |first: usize, second: usize| (first.min(second), first.max(second));
    let at = |bucket: usize, fingerprint: u32| {
        let hash = grown.hash_for_slot_in_level(1, bucket, fingerprint);
        let (first, second, _) = grown.slots_for_hash(hash);
        let (there, other, _) = grown.slots_for_hash_in_level(1, hash);
        (Item { hash, fingerprint, first, second }, there, other)
    };
    (1..=0xFFFE)
        .flat_map(|fingerprint| (0..buckets).map(move |bucket| (bucket, fingerprint)))
        .find_map(|(bucket, fingerprint)| {
            let (x, first, second) = at(bucket, fingerprint);
            let (y, y_first, y_second) = at(second, fingerprint);
            (first == bucket
                && pair(y_first, y_second) == pair(first, second)
                && pair(x.first, x.second) != pair(y.first, y.second))
            .then_some((x, y))
        })
        .expect("no pair of items collides in level 1 only")
}

/// Hands out items with distinct fingerprints, so each model's counts are exact.
#[derive(Default)]
pub(crate) struct Items {
    next: u32,
}

impl Items {
    /// An item whose buckets are `first` and `second` (equal for a one-bucket item).
    pub(crate) fn pick(&mut self, filter: &Filter, first: usize, second: usize) -> Item {
        loop {
            self.next += 1;
            assert!(self.next < 0xFFFF, "no fingerprint fits these buckets");
            let candidate = item(filter, first, self.next);
            if (candidate.first, candidate.second) == (first, second) {
                return candidate;
            }
        }
    }

    /// `copies` copies of a fresh one-bucket item in `bucket`: filler that no path search can
    /// move, so a model controls exactly which fingerprints relocate.
    pub(crate) fn fill(&mut self, filter: &Filter, bucket: usize, copies: usize) -> Item {
        let filler = self.pick(filter, bucket, bucket);
        for _ in 0..copies {
            assert!(filler.insert(filter), "setup: bucket {bucket} has no room");
        }
        filler
    }
}

/// Progress of the writes a lookup races with, as a lookup saw it when it began and ended: the
/// labels show that lookups really overlapped those writes.
///
/// The count is `2k - 1` while the `k`-th operation under [`run`](Self::run) runs and `2k` once it
/// has returned. loom switches threads only at the crate's atomic accesses, so a lookup's first
/// and last accesses see the same progress as its marks.
#[derive(Default)]
pub(crate) struct Stage(AtomicUsize);

impl Stage {
    /// Runs one racing write, marking its start and end.
    pub(crate) fn run<T>(&self, op: impl FnOnce() -> T) -> T {
        self.0.fetch_add(1, SeqCst);
        let out = op();
        self.0.fetch_add(1, SeqCst);
        out
    }

    /// Runs `op`, returning the progress it saw at its start and end.
    pub(crate) fn watch<T>(&self, op: impl FnOnce() -> T) -> (T, Span) {
        let start = self.0.load(SeqCst);
        let out = op();
        (out, Span { start, end: self.0.load(SeqCst) })
    }
}

/// What a lookup under [`Stage::watch`] saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// How the lookup overlapped the `k`-th write (from 1).
    pub(crate) fn of(self, k: usize) -> &'static str {
        let running = 2 * k - 1;
        match (self.start, self.end) {
            (_, end) if end < running => "before",
            (start, _) if start > running => "after",
            (start, end) if start == running && end == running => "within",
            _ => "across",
        }
    }
}

/// Outcomes one model observed across all its explored executions.
#[derive(Default)]
pub(crate) struct Seen {
    executions: AtomicUsize,
    outcomes: Mutex<BTreeSet<String>>,
}

impl Seen {
    pub(crate) fn record(&self, outcome: impl Into<String>) {
        self.outcomes.lock().unwrap().insert(outcome.into());
    }
}

/// Explores `model` with loom, then fails unless every `expected` outcome occurred at least
/// once: a model that explored too little fails instead of passing vacuously.
///
/// The preemption bound comes from `LOOM_MAX_PREEMPTIONS` (2 if unset, since unbounded
/// exploration of these models does not finish).
pub(crate) fn explore(
    name: &str,
    expected: &[&str],
    model: impl Fn(&Seen) + Sync + Send + 'static,
) {
    let seen = Arc::new(Seen::default());
    let mut builder = loom::model::Builder::new();
    let bound = *builder.preemption_bound.get_or_insert(2);
    let start = Instant::now();
    let shared = Arc::clone(&seen);
    builder.check(move || {
        shared.executions.fetch_add(1, SeqCst);
        model(&shared);
    });
    let elapsed = start.elapsed();
    let outcomes = seen.outcomes.lock().unwrap();
    let executions = seen.executions.load(SeqCst);
    eprintln!(
        "loom model {name}: {executions} executions in {elapsed:.2?} (preemption bound {bound}); \
         outcomes {outcomes:?}"
    );
    let missing: Vec<_> = expected.iter().filter(|e| !outcomes.contains(**e)).collect();
    assert!(missing.is_empty(), "{name}: never observed {missing:?}; observed {outcomes:?}");
}
