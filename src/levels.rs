//! Levels: how a growable filter adds room while every thread keeps using it, moving nothing.
//!
//! A filter is a chain of tables, each running the protocol of [`table`](crate::table) on its
//! own: level 0, the table the filter was built with, and, in a growable filter, one more level
//! each time the newest refused an insert, with [`GROWTH_FACTOR`] times the buckets of the level
//! before it. An item stays in the level its insert put it in. Inserts go to the newest level;
//! lookups, counts and removes read the levels newest first (the newest holds most items).
//!
//! Why a chain rather than moving items into one larger table: an item's bucket in a table of
//! `4m` buckets depends on two hash bits that a table of `m` buckets does not store, so moving
//! items means taking bits from their fingerprints (InfiniFilter, Aleph) and a migration that
//! every operation must know about. `BENCHMARKS.md` ("Growth") has the measurements behind the
//! choice.
//!
//! # Orderings
//!
//! ## Invariants
//!
//! 1. **Levels are only added.** `newest` moves from the level a thread saw to a new level that
//!    links to it (`older`), by one CAS; a level's table and link are built before it is
//!    published and the link never changes. So every value `newest` takes chains to every
//!    earlier value. Levels are freed only through `&mut` (`clear`, drop).
//! 2. **A fingerprint stays in its level.** Every change to a level's words is that level's
//!    table protocol; a growth writes no table word, so nothing a level relies on changes.
//! 3. **Inserts store into the newest level they saw**, or, at the ceiling only, into an older
//!    one that has room.
//!
//! ## Publication
//!
//! A growth builds its level and CASes `newest` from the level it saw to the new one, AcqRel:
//! the Release half publishes the table and the `older` link, and every thread loads `newest`
//! with Acquire before it reads a level, so it never sees a level half built.
//!
//! ## No false negative across growths
//!
//! Let an item's insert happen-before a lookup. The insert put the item in a level `L` that it
//! found through an Acquire load of `newest` (or, at the ceiling, through the chain of such a
//! value). The lookup's Acquire load of `newest` happens after that load, so by read-read
//! coherence it reads the same value or a later one, and by invariant 1 the chain from it
//! reaches `L`. The lookup reads every level of the chain with the table's validated read,
//! which finds an item present in `L` throughout (the table's argument, unchanged by invariant
//! 2). A remove validates absence in every level the same way before it answers `false`; a
//! count adds up the levels.
//!
//! ## Snapshots and clones
//!
//! A scan loads `newest` once and scans each level of its chain with that table's scan. An item
//! present throughout the snapshot is in a level of the chain (as above), and that level's scan
//! keeps it. A level published after the load holds only items whose inserts did not
//! happen-before the snapshot began.
//!
//! ## Progress
//!
//! A lookup reads at most [`MAX_LEVELS`] levels, each wait-free: wait-free. An insert that the
//! newest level refuses finds a newer level (another thread grew the filter), publishes one, or
//! stops at the ceiling; its CAS fails only when another thread published a level, which
//! happens at most [`MAX_LEVELS`] times: lock-free. No thread waits for a growth: each thread
//! that finds the newest level full builds a level and races to publish it, and the losers free
//! theirs (counted as `discarded_levels` in the stats).

use core::marker::PhantomData;
use core::ptr;
use std::io;

use crate::error::InsertError;
use crate::hash::{self, Slots};
use crate::sizing::{buckets_for, capacity_of};
use crate::stats::Stats;
use crate::sync::{self, AtomicPtr, AtomicU64, Ordering, UnsafeCell};
use crate::table::Table;

/// The most levels a filter has: level 0 and 31 growths. At [`GROWTH_FACTOR`] 4 the 31st growth
/// of a one-bucket filter would need 2^62 buckets, more than any address space holds.
pub(crate) const MAX_LEVELS: usize = 32;

/// Buckets of a new level, in buckets of the level before it. Four keeps the levels of a 1,000×
/// growth to six, so lookups read few levels, and the false-positive rate (the sum of the
/// levels') under 0.1%; the cost is memory: the newest level is often mostly empty.
pub(crate) const GROWTH_FACTOR: usize = 4;

/// Buckets from which a level is worth prefetching in a batch: 1 MiB of words, a core's L2 on
/// the machines of `BENCHMARKS.md`. Smaller levels stay in the cache, and prefetching them only
/// adds instructions (measured: prefetching every level made batches slower than single
/// lookups at the cache-sized end).
const PREFETCH_MIN_BUCKETS: usize = 1 << 17;

/// Where a growable filter stops growing: no level is added that would take the filter past
/// either limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ceiling {
    /// The most items the filter's levels promise together ([`capacity_of`]).
    pub(crate) items: Option<usize>,
    /// The most bytes the filter's levels take together ([`Table::memory_for`]).
    pub(crate) bytes: Option<usize>,
}

/// A filter's levels. See the module documentation.
pub(crate) struct Levels {
    /// Level 0, inline: a filter that never grew reaches its table through no pointer.
    first: Table,
    /// The newest level, which links to the older ones and through them to `first`; null while
    /// `first` is the newest.
    newest: AtomicPtr<Level>,
    /// `None` for a fixed filter.
    growth: Option<Ceiling>,
    /// Levels built by a growth that lost the race to publish, and freed.
    discarded: AtomicU64,
    /// Removes that matched in more than one level and so kept every copy (`remove`).
    retained: AtomicU64,
    /// Bytes of the filter around its levels (its hasher), counted with them against the byte
    /// ceiling so that the filter's `memory_usage` stays within it.
    outside: usize,
}

/// A level added by a growth.
struct Level {
    table: Table,
    /// The level before this one; null for `first`. Written when the level is built, before it
    /// is published, and never again; a cell so that loom sees the publication.
    older: UnsafeCell<*const Level>,
}

impl Level {
    /// Builds a level on top of `older` and leaks it, for publication.
    fn publishable(table: Table, older: *const Level) -> *mut Level {
        Box::into_raw(Box::new(Level { table, older: UnsafeCell::new(older) }))
    }

    fn older(&self) -> *const Level {
        // SAFETY: `older` is written only when the level is built, and every thread that reaches
        // a level did so through an Acquire load of the Release CAS that published it (or owns
        // the filter through `&mut`), so the write happens-before this read.
        self.older.with(|older| unsafe { *older })
    }
}

impl Levels {
    /// A filter's levels: `first` alone, growable up to `growth` if that is `Some`.
    pub(crate) fn new(first: Table, growth: Option<Ceiling>) -> Self {
        Self::with_newer(first, Vec::new(), growth, 0)
    }

    /// Levels `first` and then `newer`, oldest first (a loaded snapshot or a copy), whose words
    /// hold `retained` fingerprints of removed items (`remove`).
    pub(crate) fn with_newer(
        first: Table,
        newer: Vec<Table>,
        growth: Option<Ceiling>,
        retained: u64,
    ) -> Self {
        let newest = newer
            .into_iter()
            .fold(ptr::null(), |older, table| Level::publishable(table, older).cast_const());
        Self {
            first,
            newest: AtomicPtr::new(newest.cast_mut()),
            growth,
            discarded: AtomicU64::new(0),
            retained: AtomicU64::new(retained),
            outside: 0,
        }
    }

    /// These levels in a filter that takes `bytes` more around them (its hasher).
    pub(crate) fn with_outside(mut self, bytes: usize) -> Self {
        self.outside = bytes;
        self
    }

    /// Level 0.
    pub(crate) fn first(&self) -> &Table {
        &self.first
    }

    /// The ceiling of a growable filter; `None` for a fixed one.
    pub(crate) fn growth(&self) -> Option<Ceiling> {
        self.growth
    }

    #[inline]
    fn newest(&self) -> *const Level {
        // Acquire: pairs with the AcqRel publication in `grow`, so the level and its chain are
        // seen as built.
        self.newest.load(Ordering::Acquire).cast_const()
    }

    /// The tables, newest first.
    pub(crate) fn tables(&self) -> Tables<'_> {
        self.tables_from(self.newest())
    }

    fn tables_from(&self, newest: *const Level) -> Tables<'_> {
        Tables { next: newest, first: Some(&self.first), levels: PhantomData }
    }

    /// The tables, oldest first.
    pub(crate) fn oldest_first(&self) -> Vec<&Table> {
        let mut tables: Vec<&Table> = self.tables().collect();
        tables.reverse();
        tables
    }

    /// Whether the item whose mixed hash is `mixed` may be present.
    #[inline]
    pub(crate) fn contains(&self, mixed: u64) -> bool {
        let newest = self.newest();
        if newest.is_null() {
            return self.first.contains(slots_in(&self.first, mixed));
        }
        let mut tables = self.tables_from(newest);
        // The newest level holds most items; on a miss there, start loading the item's buckets
        // in the other levels too large for the cache, so that their misses overlap.
        if tables.next().is_some_and(|table| table.contains(slots_in(table, mixed))) {
            return true;
        }
        for table in tables.clone().take_while(|t| t.bucket_count() >= PREFETCH_MIN_BUCKETS) {
            table.prefetch(slots_in(table, mixed));
        }
        tables.any(|table| table.contains(slots_in(table, mixed)))
    }

    /// Copies of the item in every level.
    pub(crate) fn count(&self, mixed: u64) -> usize {
        self.tables().map(|table| table.count(slots_in(table, mixed))).sum()
    }

    /// Removes one copy of the item, if one is present.
    ///
    /// In a table, every copy of the item's fingerprint in its two buckets is interchangeable
    /// with the item's own (the table's invariant 4). Across levels that is not so: a match in
    /// another level may be another item's only copy, one whose fingerprint collides with this
    /// one there (as likely as a false positive in that level). So a remove takes a copy only
    /// when exactly one level holds matches, and when several do it takes none: it answers
    /// `true`, counts the item as removed, and leaves it behind as a false positive, which loses
    /// nothing. Such removes are counted as `retained_removals` in the stats.
    pub(crate) fn remove(&self, mixed: u64) -> bool {
        let newest = self.newest();
        if newest.is_null() {
            return self.first.remove(slots_in(&self.first, mixed));
        }
        loop {
            // The validated count of each level: never fewer than the copies present throughout.
            let mut holders =
                self.tables_from(newest).filter(|table| table.count(slots_in(table, mixed)) > 0);
            let Some(holder) = holders.next() else {
                return false;
            };
            if holders.next().is_some() {
                // Relaxed: a count, exact once the removes are joined, as every counter.
                self.retained.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            if holder.remove(slots_in(holder, mixed)) {
                return true;
            }
            // Another thread took the copies since they were counted: count again.
        }
    }

    /// The levels as they are now, newest first, for a batch of lookups: read once, so that
    /// each lookup of the batch follows no pointer. A level added afterwards holds only items
    /// inserted after the batch began.
    pub(crate) fn chain(&self) -> Chain<'_> {
        let mut chain = Chain { tables: [&self.first; MAX_LEVELS], len: 0, prefetched: 1 };
        for table in self.tables() {
            chain.tables[chain.len] = table;
            chain.len += 1;
        }
        // Levels are larger the newer they are (at a ceiling, the newest may be smaller).
        chain.prefetched = chain.tables[..chain.len]
            .iter()
            .position(|table| table.bucket_count() < PREFETCH_MIN_BUCKETS)
            .unwrap_or(chain.len)
            .max(1);
        chain
    }

    /// Asks the CPU to start loading the item's buckets in the newest level (where an insert
    /// goes).
    #[inline]
    pub(crate) fn prefetch_newest(&self, mixed: u64) {
        let table = self.table_of(self.newest());
        table.prefetch(slots_in(table, mixed));
    }

    /// Level 0, if no level was added to it.
    #[inline]
    pub(crate) fn single(&self) -> Option<&Table> {
        self.newest().is_null().then_some(&self.first)
    }

    /// Stores the item in the newest level, adding a level when that one is full and the
    /// ceiling allows it.
    pub(crate) fn insert(&self, mixed: u64) -> Result<(), InsertError> {
        loop {
            let newest = self.newest();
            let table = self.table_of(newest);
            let slots = slots_in(table, mixed);
            if table.try_insert(slots).is_ok() {
                return Ok(());
            }
            // Its own copies fill the item's buckets: a new level would only take more of them
            // (a key whose removes were kept, inserted and removed over and over), so this is
            // the limit of eight copies a level, not a full level.
            if table.filled_with(slots) || !self.grow(newest) {
                return self.insert_at_ceiling(mixed, newest);
            }
        }
    }

    /// The last resort of an insert refused by level `newest` when no level can be added: an
    /// older level may have room again after removes.
    fn insert_at_ceiling(&self, mixed: u64, newest: *const Level) -> Result<(), InsertError> {
        if self
            .tables_from(newest)
            .skip(1)
            .any(|table| table.try_insert(slots_in(table, mixed)).is_ok())
        {
            return Ok(());
        }
        let table = self.table_of(newest);
        table.record_refused(slots_in(table, mixed).first);
        Err(InsertError::Full)
    }

    fn table_of(&self, level: *const Level) -> &Table {
        if level.is_null() {
            &self.first
        } else {
            // SAFETY: `level` came from `newest` or a chain link; published levels live until
            // `&mut self` frees them (invariant 1), and `self` is borrowed here.
            unsafe { &(*level).table }
        }
    }

    /// Makes sure that a level newer than `seen` exists: `true` if one does (built by this
    /// thread or another), `false` at the ceiling, when the filter is fixed, or when the new
    /// level cannot be allocated.
    fn grow(&self, seen: *const Level) -> bool {
        let Some(ceiling) = self.growth else {
            return false;
        };
        // Acquire: as in `newest`; this thread goes on to read a newer level if there is one.
        if sync::load_ptr_for_update(&self.newest, Ordering::Acquire).cast_const() != seen {
            return true;
        }
        let built = self.next_level(seen, ceiling).and_then(|buckets| {
            Table::try_new(buckets, self.first.lookup_retries(), self.first.huge_pages()).ok()
        });
        let Some(table) = built else {
            // At the ceiling, or out of memory: unless another thread added a level meanwhile.
            return self.newest() != seen;
        };
        let level = Level::publishable(table, seen);
        // AcqRel. Release: publishes the level's table and link to the Acquire loads in
        // `newest`. Acquire (and on failure): this thread goes on to read the winner's level.
        match self.newest.compare_exchange(
            seen.cast_mut(),
            level,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: `level` was leaked above and the CAS that would have published it
                // failed, so no other thread has seen it.
                drop(unsafe { Box::from_raw(level) });
                // Relaxed: a statistic.
                self.discarded.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
    }

    /// [`grow`](Self::grow) from the newest level (a test hook).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn grow_now(&self) -> bool {
        self.grow(self.newest())
    }

    /// The bucket count of the level to add on top of `newest`, if the ceiling allows one.
    fn next_level(&self, newest: *const Level, ceiling: Ceiling) -> Option<usize> {
        let tables = self.tables_from(newest);
        if tables.clone().count() >= MAX_LEVELS {
            return None;
        }
        let mut buckets = self.table_of(newest).bucket_count().checked_mul(GROWTH_FACTOR)?;
        if let Some(items) = ceiling.items {
            let promised: usize = tables.clone().map(|t| capacity_of(t.bucket_count())).sum();
            let room = items.checked_sub(promised).filter(|&room| room > 0)?;
            // A room too large to allocate leaves the growth factor's size.
            if let Some(fits) = buckets_for(room) {
                buckets = buckets.min(fits);
            }
        }
        if let Some(bytes) = ceiling.bytes {
            let room = bytes.checked_sub(self.memory_from(newest))?;
            buckets = buckets.min(room / core::mem::size_of::<u64>());
            while buckets > 0 && new_level_memory(buckets) > room {
                buckets -= (buckets / 64).max(1);
            }
        }
        (buckets > 0).then_some(buckets)
    }

    /// Counts `removes` more removed items whose fingerprints stay in the levels (a merge adds
    /// another filter's).
    pub(crate) fn add_retained(&self, removes: u64) {
        // Relaxed: a count, as every counter.
        self.retained.fetch_add(removes, Ordering::Relaxed);
    }

    /// Fingerprints of removed items that removes left in the levels (`remove`): a copy or a
    /// snapshot keeps the count, so that its `len` stays that of the filter.
    pub(crate) fn retained(&self) -> u64 {
        // Relaxed: a count, as every counter.
        self.retained.load(Ordering::Relaxed)
    }

    /// Accepted inserts minus successful removes, over every level.
    pub(crate) fn len(&self) -> usize {
        let retained = usize::try_from(self.retained()).unwrap_or(usize::MAX);
        self.tables().map(Table::len).sum::<usize>().saturating_sub(retained)
    }

    /// Items the levels promise to accept together.
    pub(crate) fn capacity(&self) -> usize {
        self.tables().map(|t| capacity_of(t.bucket_count())).sum()
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.tables().map(Table::bucket_count).sum()
    }

    /// Bytes of the filter: its levels and what is around them.
    pub(crate) fn memory_usage(&self) -> usize {
        self.memory_from(self.newest())
    }

    /// [`memory_usage`](Self::memory_usage) with the levels from `newest` down: each table,
    /// each added level's link, and the rest of the filter.
    fn memory_from(&self, newest: *const Level) -> usize {
        let links = self.tables_from(newest).count() - 1;
        core::mem::size_of::<Self>() - core::mem::size_of::<Table>()
            + self.outside
            + links * LINK_MEMORY
            + self.tables_from(newest).map(Table::memory_usage).sum::<usize>()
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut stats = Stats { levels: 0, ..Stats::default() };
        let mut levels = 0;
        for table in self.tables() {
            stats.absorb(&table.stats());
            levels += 1;
        }
        stats.levels = levels;
        // Relaxed: statistics.
        stats.discarded_levels = self.discarded.load(Ordering::Relaxed);
        stats.retained_removals = self.retained();
        stats
    }

    /// A copy made of one consistent scan of each level (see the module documentation).
    pub(crate) fn consistent_copy(&self) -> io::Result<Self> {
        let mut copies = self
            .oldest_first()
            .into_iter()
            .map(Table::consistent_copy)
            .collect::<io::Result<Vec<_>>>()?;
        let first = copies.remove(0);
        let copy = Self::with_newer(first, copies, self.growth, self.retained());
        Ok(copy.with_outside(self.outside))
    }

    /// Empties the filter back to level 0 alone, freeing the levels added since.
    pub(crate) fn clear(&mut self) {
        self.free_newer();
        self.first.clear();
        // Relaxed: statistics, and `&mut self` means no other thread reads them.
        self.discarded.store(0, Ordering::Relaxed);
        self.retained.store(0, Ordering::Relaxed);
    }

    fn free_newer(&mut self) {
        // Relaxed: `&mut self` means no other thread can reach the levels.
        let mut next = self.newest.swap(ptr::null_mut(), Ordering::Relaxed).cast_const();
        while !next.is_null() {
            // SAFETY: every level in the chain was leaked by `Level::publishable` and is owned
            // by this chain alone; `&mut self` means no other thread can reach it, and `next`
            // moves on before the box is dropped.
            let level = unsafe { Box::from_raw(next.cast_mut()) };
            next = level.older();
        }
    }
}

impl Drop for Levels {
    fn drop(&mut self) {
        // A loom model that fails drops its filter while unwinding, before it joined the
        // threads that built levels: loom would report the unordered read of their links as a
        // second panic and abort the whole suite. Leak them there instead.
        if sync::MODEL_CHECKING && std::thread::panicking() {
            return;
        }
        self.free_newer();
    }
}

impl core::fmt::Debug for Levels {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let buckets: Vec<usize> = self.oldest_first().iter().map(|t| t.bucket_count()).collect();
        f.debug_struct("Levels")
            .field("buckets", &buckets)
            .field("growth", &self.growth)
            .finish_non_exhaustive()
    }
}

/// The tables of a filter's levels at one moment, newest first ([`Levels::chain`]).
pub(crate) struct Chain<'a> {
    tables: [&'a Table; MAX_LEVELS],
    len: usize,
    /// How many of the newest levels a batch prefetches.
    prefetched: usize,
}

impl Chain<'_> {
    /// [`Levels::contains`] on these levels.
    #[inline]
    pub(crate) fn lookup(&self, mixed: u64) -> bool {
        self.tables[..self.len].iter().any(|table| table.contains(slots_in(table, mixed)))
    }

    /// Asks the CPU to start loading the item's buckets in the newest levels, down to the first
    /// one smaller than [`PREFETCH_MIN_BUCKETS`] (the newest always).
    #[inline]
    pub(crate) fn prefetch(&self, mixed: u64) {
        for table in &self.tables[..self.prefetched] {
            table.prefetch(slots_in(table, mixed));
        }
    }
}

/// The tables of a chain of levels, newest first, ending with level 0.
#[derive(Clone)]
pub(crate) struct Tables<'a> {
    next: *const Level,
    first: Option<&'a Table>,
    levels: PhantomData<&'a Levels>,
}

impl<'a> Iterator for Tables<'a> {
    type Item = &'a Table;

    #[inline]
    fn next(&mut self) -> Option<&'a Table> {
        if self.next.is_null() {
            return self.first.take();
        }
        // SAFETY: `next` came from `newest` or a chain link; published levels live as long as
        // the `Levels` borrowed for `'a` (invariant 1).
        let level = unsafe { &*self.next };
        self.next = level.older();
        Some(&level.table)
    }
}

/// The item's slots in `table`.
#[inline]
fn slots_in(table: &Table, mixed: u64) -> Slots {
    hash::mixed_slots(mixed, table.bucket_count())
}

/// What an added level takes beside its table.
const LINK_MEMORY: usize = core::mem::size_of::<Level>() - core::mem::size_of::<Table>();

fn new_level_memory(buckets: usize) -> usize {
    Table::memory_for(buckets) + LINK_MEMORY
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn levels(buckets: usize, growth: Option<Ceiling>) -> Levels {
        Levels::new(Table::try_new(buckets, 8, false).unwrap(), growth)
    }

    fn bucket_counts(levels: &Levels) -> Vec<usize> {
        levels.oldest_first().iter().map(|t| t.bucket_count()).collect()
    }

    #[test]
    fn each_level_has_four_times_the_buckets_of_the_one_before() {
        let levels = levels(10, Some(Ceiling::default()));
        for _ in 0..3 {
            assert!(levels.grow_now());
        }
        assert_eq!(bucket_counts(&levels), [10, 40, 160, 640]);
        assert_eq!(levels.capacity(), [10, 40, 160, 640].map(capacity_of).iter().sum::<usize>());
        assert_eq!(levels.bucket_count(), 850);
    }

    #[test]
    fn the_item_ceiling_sizes_the_last_level_to_reach_it_exactly() {
        let ceiling = Ceiling { items: Some(1_000), bytes: None };
        let levels = levels(10, Some(ceiling));
        while levels.grow_now() {}
        let capacity = levels.capacity();
        assert!((1_000..1_010).contains(&capacity), "{capacity}: {:?}", bucket_counts(&levels));
        assert!(!levels.grow_now());
    }

    #[test]
    fn the_memory_ceiling_is_never_passed_and_the_last_level_fills_it() {
        for bytes in [20_000, 123_456, 1 << 20, 10 << 20] {
            let levels = levels(100, Some(Ceiling { items: None, bytes: Some(bytes) }));
            while levels.grow_now() {}
            let used = levels.memory_usage();
            assert!(used <= bytes, "{used} > {bytes}");
            // What is left would not hold a useful level: less than a table's fixed overhead
            // and a few buckets more.
            assert!(bytes - used < Table::memory_for(0) * 2 + 1024, "{used} of {bytes}");
        }
    }

    #[test]
    fn growth_stops_at_the_level_limit_and_for_fixed_filters() {
        let fixed = levels(1, None);
        assert!(!fixed.grow_now());
        let unbounded = levels(1, Some(Ceiling::default()));
        let mut grown = 0;
        // Levels of 4^k buckets: the 13th is 64 MiB; stop there rather than allocate more.
        while grown < 12 && unbounded.grow_now() {
            grown += 1;
        }
        assert_eq!(grown, 12);
        assert_eq!(unbounded.stats().levels, 13);
    }

    #[test]
    fn a_chain_reads_every_level_once() {
        let levels = levels(4, Some(Ceiling::default()));
        assert!(levels.single().is_some());
        levels.grow_now();
        levels.grow_now();
        assert!(levels.single().is_none());
        let chain = levels.chain();
        assert_eq!(chain.len, 3);
        let mixed = hash::mix(42);
        assert!(!chain.lookup(mixed));
        levels.insert(mixed).unwrap();
        assert!(chain.lookup(mixed) && levels.contains(mixed));
    }
}
