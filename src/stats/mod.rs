//! Per-thread and shared shards of operation counters, and the [`Stats`] snapshot.
//!
//! A thread whose [`thread_number`](fn@thread_number) is below the filter's owned shard
//! count owns a shard of its counters and bumps it with a plain load and store: no locked
//! instruction and no shared cache line on the insert and remove paths (two locked adds cost
//! about as much as the insert's own CAS). Thread numbers are those of the threads alive at
//! once, reused after a thread exits, so a server's worker threads own shards however often
//! its pools replace threads. Filters own 16 shards, and large ones up to 256 (one for each
//! 32 KiB of table), so that up to 256 threads share no counter line; any other
//! thread bumps a shared shard chosen by its item's first bucket with `fetch_add`, so threads
//! working on different items rarely share a cache line. Counters are statistics: all Relaxed,
//! exact once the operations they count have finished and been joined (joining synchronises),
//! approximate while operations are in flight.

use crossbeam_utils::CachePadded;

use crate::sync::{self, AtomicU64, AtomicUsize, Ordering::Relaxed};

mod thread_number;

pub(crate) use thread_number::thread_number;

/// Longest cuckoo path an insert may commit, in relocations: the one home of the limit (libcuckoo
/// uses five too), kept here, below the table and the errors that use it, where the counters
/// keep a count for each length. `InsertError::Full` says it in words.
pub(crate) const MAX_PATH_LEN: usize = 5;

/// Shards owned by one thread each, at least and at most: those of threads numbered below.
/// loom's threads have no number ([`thread_number`](fn@thread_number)), so models own none.
const MIN_OWNED: usize = if sync::MODEL_CHECKING { 0 } else { 16 };
const MAX_OWNED: usize = 256;
/// Buckets of table for each owned shard past the minimum: a shard (128 bytes) for each 32 KiB
/// of table, so that the owned shards past the minimum cost at most 0.4% of its size.
const BUCKETS_PER_OWNED: usize = 4096;
/// Shards shared by every other thread, chosen by bucket. loom explores every atomic, and its
/// threads own no shard: one shared shard keeps the models small.
const SHARED: usize = if sync::MODEL_CHECKING { 1 } else { 16 };

/// Adds 1 to a counter: a plain load and store on a shard only this thread writes, `fetch_add`
/// on a shared one.
#[inline]
fn bump_u64(counter: &AtomicU64, owned: bool) {
    if owned {
        counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
    } else {
        counter.fetch_add(1, Relaxed);
    }
}

/// Adds `delta` (wrapping, so `usize::MAX` subtracts 1) to an item count, as [`bump_u64`].
#[inline]
fn add_usize(counter: &AtomicUsize, delta: usize, owned: bool) {
    if owned {
        counter.store(counter.load(Relaxed).wrapping_add(delta), Relaxed);
    } else {
        counter.fetch_add(delta, Relaxed);
    }
}

#[derive(Debug, Default)]
struct Shard {
    /// Accepted inserts minus successful removes, wrapping: a shard may go "negative" when an
    /// item is inserted through one shard's thread mix and removed through another's.
    items: AtomicUsize,
    paths: [AtomicU64; MAX_PATH_LEN + 1],
    relocations: AtomicU64,
    path_retries: AtomicU64,
    refused: AtomicU64,
    crowded: AtomicU64,
    conservative_lookups: AtomicU64,
    surplus_removals: AtomicU64,
    expired: AtomicU64,
}

/// What an operation reports to the counters.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    /// An insert stored its item after relocating this many fingerprints.
    Inserted {
        relocations: usize,
    },
    Removed,
    /// One fingerprint moved to its other bucket.
    Relocated,
    /// A committed path met a concurrent change and the insert searched again.
    PathRetried,
    Refused,
    /// A refusal while the table was not full (`sizing::is_full`), counted besides `Refused`.
    Crowded,
    ConservativeLookup,
    SurplusRemoved,
    /// The sweep of a windowed filter emptied this many expired entries of one bucket.
    Expired {
        lanes: usize,
    },
}

#[derive(Debug)]
pub(crate) struct Counters {
    /// The owned shards, then the [`SHARED`] ones.
    shards: Box<[CachePadded<Shard>]>,
    owned: usize,
}

impl Counters {
    /// Fresh counters for a table of `buckets` buckets.
    pub(crate) fn new(buckets: usize) -> Self {
        let owned = Self::owned_for(buckets);
        let shards = (0..owned + SHARED).map(|_| CachePadded::new(Shard::default())).collect();
        Self { shards, owned }
    }

    /// Fresh counters for a table of `buckets` buckets that already holds `items` items (a
    /// loaded snapshot).
    pub(crate) fn with_items(buckets: usize, items: usize) -> Self {
        let counters = Self::new(buckets);
        counters.shards[0].items.store(items, Relaxed);
        counters
    }

    /// Records `event` on this thread's own shard, or else on the shared shard of the item
    /// whose first bucket is `bucket`.
    #[inline]
    // `SHARED` is 1 when model checking: the modulo is constant there on purpose.
    #[allow(clippy::modulo_one)]
    pub(crate) fn record(&self, bucket: usize, event: Event) {
        let (shard, owned) = match thread_number() {
            Some(number) if number < self.owned => (&self.shards[number], true),
            _ => (&self.shards[self.owned + bucket % SHARED], false),
        };
        let counter = match event {
            Event::Inserted { relocations } => {
                add_usize(&shard.items, 1, owned);
                &shard.paths[relocations.min(MAX_PATH_LEN)]
            }
            Event::Removed => {
                add_usize(&shard.items, usize::MAX, owned);
                return;
            }
            Event::Expired { lanes } => {
                add_usize(&shard.items, lanes.wrapping_neg(), owned);
                let expired = &shard.expired;
                if owned {
                    expired.store(expired.load(Relaxed) + lanes as u64, Relaxed);
                } else {
                    expired.fetch_add(lanes as u64, Relaxed);
                }
                return;
            }
            Event::Relocated => &shard.relocations,
            Event::PathRetried => &shard.path_retries,
            Event::Refused => &shard.refused,
            Event::Crowded => &shard.crowded,
            Event::ConservativeLookup => &shard.conservative_lookups,
            Event::SurplusRemoved => &shard.surplus_removals,
        };
        bump_u64(counter, owned);
    }

    /// Accepted inserts minus successful removes, never below zero.
    pub(crate) fn len(&self) -> usize {
        let net = self.shards.iter().fold(0usize, |sum, s| sum.wrapping_add(s.items.load(Relaxed)));
        // A remove may be counted before the insert it undoes; clamp the transient underflow.
        if (net as isize) < 0 {
            0
        } else {
            net
        }
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let sum = |field: fn(&Shard) -> &AtomicU64| {
            self.shards.iter().map(|s| field(s).load(Relaxed)).sum::<u64>()
        };
        let mut insert_paths = [0; MAX_PATH_LEN + 1];
        for (k, slot) in insert_paths.iter_mut().enumerate() {
            *slot = self.shards.iter().map(|s| s.paths[k].load(Relaxed)).sum();
        }
        Stats {
            insert_paths: InsertPaths(insert_paths),
            relocations: sum(|s| &s.relocations),
            path_retries: sum(|s| &s.path_retries),
            refused_inserts: sum(|s| &s.refused),
            crowded_refusals: sum(|s| &s.crowded),
            conservative_lookups: sum(|s| &s.conservative_lookups),
            surplus_removals: sum(|s| &s.surplus_removals),
            expired_entries: sum(|s| &s.expired),
            ..Stats::default()
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        core::mem::size_of_val(&*self.shards)
    }

    /// What [`memory_usage`](Self::memory_usage) is for counters of a table of `buckets` buckets.
    pub(crate) fn memory_for(buckets: usize) -> usize {
        (Self::owned_for(buckets) + SHARED) * core::mem::size_of::<CachePadded<Shard>>()
    }

    fn owned_for(buckets: usize) -> usize {
        (buckets / BUCKETS_PER_OWNED).clamp(MIN_OWNED, MAX_OWNED)
    }
}

/// A snapshot of a filter's operation counters, from [`CuckooFilter::stats`].
///
/// Counts are cumulative since the filter was built (or last cleared) and exact once the counted
/// operations have finished; a snapshot taken while operations run may be slightly behind.
///
/// [`CuckooFilter::stats`]: crate::CuckooFilter::stats
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(1000);
/// filter.insert("a").unwrap();
/// let stats = filter.stats();
/// assert_eq!(stats.insert_paths[0], 1); // stored without relocating anything
/// assert_eq!(stats.refused_inserts, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Accepted inserts by how many fingerprints they relocated: index `k` counts inserts whose
    /// cuckoo path had `k` hops (0: an empty lane was free in one of the item's buckets).
    pub insert_paths: InsertPaths,
    /// Fingerprints moved to their other bucket by inserts' cuckoo paths.
    pub relocations: u64,
    /// Cuckoo paths abandoned because another thread changed a bucket on them first; the insert
    /// then searched again.
    pub path_retries: u64,
    /// Inserts that returned [`InsertError::Full`](crate::InsertError::Full).
    pub refused_inserts: u64,
    /// Of [`refused_inserts`](Self::refused_inserts), those refused while the table (in a
    /// growable filter, the newest level) held less than 90% of the items it promises: every
    /// lane in reach of the item's buckets was taken. Random items practically never meet this;
    /// items aimed at a few buckets, by someone who knows the hasher's key, do (README,
    /// "Security"). A growable filter adds no level for such a refusal.
    pub crowded_refusals: u64,
    /// Lookups that saw removals (relocations or removes) in their bucket pair on every
    /// validation attempt and answered `true` without proof (a rare extra false positive, never a
    /// false negative).
    pub conservative_lookups: u64,
    /// Extra copies removed after two relocations (or a relocation and a remove) raced for the
    /// same fingerprint.
    pub surplus_removals: u64,
    /// Entries a [`WindowedFilter`](crate::WindowedFilter)'s sweep emptied because their window
    /// had passed (0 in other filters).
    pub expired_entries: u64,
    /// Levels the filter has: 1, plus one for each time a growable filter grew. A growth adds a
    /// level and moves no item, so there is no migration in progress, ever.
    pub levels: usize,
    /// Levels that threads built at the same moment as another thread's growth of the filter,
    /// lost the race to add and freed unused (no thread waits for another's growth).
    pub discarded_levels: u64,
    /// Fingerprints of removed items that stay in a grown filter: removes that found the item's
    /// fingerprint in more than one level and, unable to tell which copy was the item's, took
    /// none (a match in another level may be a different item's only copy, so taking it could
    /// lose that item). The item stays as a false positive. Inserts keep an item's copies in one
    /// level, so this happens about as often as a false positive in another level,
    /// `8 × load / 65,532` a remove, and to copies inserted while another thread grew the filter
    /// or while their item's level was full. Most such removes stay pending
    /// ([`pending_removals`](Self::pending_removals)).
    pub retained_removals: u64,
    /// Of [`retained_removals`](Self::retained_removals), those still pending: never more than
    /// the item's matching copies (but for removes racing past its last copy). An insert of the
    /// same item takes the fingerprint back instead of storing another; the remove that makes
    /// them as many as the matching copies takes every copy; and once only one level matches,
    /// the item's next remove, or the sweep before a growth or when an insert meets the
    /// ceiling, completes them. The rest were retained for good: no entry was free for them, or
    /// a snapshot, clone or merge brought them.
    pub pending_removals: u64,
}

/// Accepted inserts by the length of their cuckoo path ([`Stats::insert_paths`]), read as a
/// slice of counts: index `k` counts inserts whose path had `k` hops, for every `k` up to the
/// longest path an insert commits. That limit is the crate's to choose (five hops today), so the
/// slice's length may change in a release; index it within [`len`](slice::len).
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(1000);
/// filter.insert(&1).unwrap();
/// let paths = filter.stats().insert_paths;
/// assert_eq!(paths.iter().sum::<u64>(), 1);
/// assert_eq!(paths[0], 1); // the item's bucket had room: no relocation
/// assert!(paths.len() > 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InsertPaths([u64; MAX_PATH_LEN + 1]);

impl core::ops::Deref for InsertPaths {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        &self.0
    }
}

/// Mutable like the other fields of [`Stats`], a copy of the filter's counts.
impl core::ops::DerefMut for InsertPaths {
    fn deref_mut(&mut self) -> &mut [u64] {
        &mut self.0
    }
}

/// The stats of a filter that has done nothing: every count 0, one level.
impl Default for Stats {
    fn default() -> Self {
        Self {
            insert_paths: InsertPaths([0; MAX_PATH_LEN + 1]),
            relocations: 0,
            path_retries: 0,
            refused_inserts: 0,
            crowded_refusals: 0,
            conservative_lookups: 0,
            surplus_removals: 0,
            expired_entries: 0,
            levels: 1,
            discarded_levels: 0,
            retained_removals: 0,
            pending_removals: 0,
        }
    }
}

impl Stats {
    /// Adds the operation counts of `other` (another level's) to these.
    pub(crate) fn absorb(&mut self, other: &Stats) {
        for (sum, count) in self.insert_paths.0.iter_mut().zip(other.insert_paths.iter()) {
            *sum += count;
        }
        self.relocations += other.relocations;
        self.path_retries += other.path_retries;
        self.refused_inserts += other.refused_inserts;
        self.crowded_refusals += other.crowded_refusals;
        self.conservative_lookups += other.conservative_lookups;
        self.surplus_removals += other.surplus_removals;
        self.expired_entries += other.expired_entries;
    }
}
